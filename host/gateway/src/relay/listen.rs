//! What every relay of an attempt shares: its two listeners — a Unix socket in a private
//! directory (0700), which a provider binds into an isolated environment, and `127.0.0.1:PORT`
//! of the host — and the accept loop that serves each HTTP/1.1 connection (keep-alive) with the
//! relay's one request handler until the loop is aborted (which drops, and so aborts, every
//! connection).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::task::JoinSet;

use super::{failed, RelayError, SOCKET_NAME};

/// A relay's answer body.
pub(super) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A relay's bound listeners.
pub(super) struct Listeners {
    /// The socket's private directory (removed on drop).
    pub(super) dir: tempfile::TempDir,
    pub(super) unix: UnixListener,
    pub(super) tcp: TcpListener,
    /// The loopback port.
    pub(super) port: u16,
}

/// Binds a relay's listeners, its socket in a new private directory named after `prefix`.
/// The first bind of a process sweeps the directories of relays whose process was killed
/// (`socket_dirs`).
pub(super) async fn bind(prefix: &str) -> Result<Listeners, RelayError> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .and_then(|dir| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
            Ok(dir)
        })
        .map_err(failed("cannot create its socket directory"))?;
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        use std::os::unix::fs::MetadataExt;
        // This process's own directory says who it is (its fresh directory has no socket yet
        // and is kept).
        if let (Ok(meta), Some(temp)) = (std::fs::metadata(dir.path()), dir.path().parent()) {
            crate::socket_dirs::sweep_stale(temp, prefix, SOCKET_NAME, meta.uid());
        }
    });
    let unix = UnixListener::bind(dir.path().join(SOCKET_NAME))
        .map_err(failed("cannot bind its Unix socket"))?;
    let tcp = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(failed("cannot listen on the host's loopback"))?;
    let port = tcp
        .local_addr()
        .map_err(failed("cannot read its loopback port"))?
        .port();
    Ok(Listeners {
        dir,
        unix,
        tcp,
        port,
    })
}

/// Serves both listeners with `handle` (given the relay's `state`) until aborted.
pub(super) async fn serve<S, H, F>(state: Arc<S>, unix: UnixListener, tcp: TcpListener, handle: H)
where
    S: Send + Sync + 'static,
    H: Fn(Arc<S>, Request<Incoming>) -> F + Copy + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            accepted = unix.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(state.clone(), stream, handle));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            accepted = tcp.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(state.clone(), stream, handle));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
        }
    }
}

/// One HTTP/1.1 connection (keep-alive).
async fn connection<S, H, F, T>(state: Arc<S>, stream: T, handle: H)
where
    S: Send + Sync + 'static,
    H: Fn(Arc<S>, Request<Incoming>) -> F + Copy + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let answer = handle(state.clone(), request);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
