//! The HTTP server: an accept loop on a listener, one hyper HTTP/1 connection task each.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::TryStreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::io::ReaderStream;

use crate::api::{handle, App, Body, Reply};
use crate::paths::Root;

/// A running viewer; dropping it (or [`ViewerHandle::shutdown`]) stops accepting.
pub struct ViewerHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ViewerHandle {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ViewerHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Chunk size of a streamed file.
const FILE_CHUNK: usize = 64 * 1024;

type ReplyBody = BoxBody<Bytes, std::io::Error>;

fn full(bytes: Vec<u8>) -> ReplyBody {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed()
}

fn response(reply: Reply, head: bool) -> Response<ReplyBody> {
    let mut builder = Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type)
        .header("cache-control", "no-store")
        .header("x-content-type-options", "nosniff");
    for (name, value) in reply.headers {
        builder = builder.header(name, value);
    }
    let body = match reply.body {
        _ if head => full(Vec::new()),
        Body::Bytes(bytes) => full(bytes),
        Body::File(file, len) => {
            builder = builder.header("content-length", len.to_string());
            let chunks = ReaderStream::with_capacity(tokio::fs::File::from_std(file), FILE_CHUNK);
            StreamBody::new(chunks.map_ok(Frame::data)).boxed()
        }
    };
    builder
        .body(body)
        .unwrap_or_else(|_| Response::new(full(Vec::new())))
}

/// Serves the viewer over `root` on `listener` until the handle is shut down or dropped.
/// Must be called inside a tokio runtime.
pub fn serve(root: Root, listener: TcpListener) -> std::io::Result<ViewerHandle> {
    serve_app(App::new(root), listener)
}

/// [`serve`], the compare page's paired statistics computed by `paired` (the host's own
/// comparison, so that the page shows what `compare` prints).
pub fn serve_with_paired(
    root: Root,
    listener: TcpListener,
    paired: crate::paired::PairedStats,
) -> std::io::Result<ViewerHandle> {
    serve_app(App::new(root).with_paired(paired), listener)
}

/// Serves `app` on `listener` until the handle is shut down or dropped (inside a tokio
/// runtime).
pub fn serve_app(app: App, listener: TcpListener) -> std::io::Result<ViewerHandle> {
    let addr = listener.local_addr()?;
    let app = Arc::new(app);
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stopped.changed() => break,
            };
            let Ok((stream, _)) = accepted else {
                continue;
            };
            let app = app.clone();
            let mut conn_stopped = stopped.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let app = app.clone();
                    async move {
                        let method = req.method().as_str().to_string();
                        let path = req.uri().path().to_string();
                        let query = req.uri().query().unwrap_or_default().to_string();
                        let token = req
                            .headers()
                            .get(crate::control::TOKEN_HEADER)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string);
                        let reply = handle(app, &method, &path, &query, token.as_deref()).await;
                        Ok::<_, Infallible>(response(reply, method == "HEAD"))
                    }
                });
                let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    _ = conn => {}
                    _ = conn_stopped.changed() => {}
                }
            });
        }
    });
    Ok(ViewerHandle {
        addr,
        stop,
        task: Some(task),
    })
}
