//! The accept loop and the handle that owns a running proxy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinHandle;

use crate::config::EgressConfig;
use crate::conn::ConnCtx;
use crate::io::Tracked;
use crate::listener::Listener;
use crate::service;

/// Why a proxy could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeError {
    /// `serve` was called outside a tokio runtime.
    #[error("the egress proxy must be started inside a tokio runtime")]
    NoRuntime,
    /// `max_connections` is 0: nothing could ever be served.
    #[error("the egress proxy needs max_connections of at least 1")]
    NoConnections,
}

/// The egress proxy (see the crate documentation).
#[derive(Debug)]
pub struct EgressProxy;

impl EgressProxy {
    /// Serves `listener` on the current tokio runtime (its I/O and time drivers enabled)
    /// until the returned handle is dropped (or [`ProxyHandle::shutdown`]).
    pub fn serve<L: Listener>(
        listener: L,
        config: EgressConfig,
    ) -> Result<ProxyHandle, ServeError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ServeError::NoRuntime)?;
        let max = config.limits.max_connections;
        if max == 0 {
            return Err(ServeError::NoConnections);
        }
        let (close, closed) = watch::channel(());
        let (alive_tx, alive) = mpsc::channel(1);
        let open = Arc::new(AtomicUsize::new(0));
        let accept = runtime.spawn(accept_loop(
            listener,
            Arc::new(config),
            Arc::new(Semaphore::new(max)),
            open.clone(),
            closed,
            alive_tx,
        ));
        Ok(ProxyHandle {
            close,
            alive,
            accept,
            open,
        })
    }
}

/// A running proxy. Dropping it stops accepting and closes every open connection and
/// tunnel (their tasks end at their next poll).
#[derive(Debug)]
pub struct ProxyHandle {
    close: watch::Sender<()>,
    alive: mpsc::Receiver<()>,
    accept: JoinHandle<()>,
    open: Arc<AtomicUsize>,
}

impl ProxyHandle {
    /// Client connections open now (tunnels included).
    pub fn connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Stops the proxy and waits until its listener and every connection are closed.
    pub async fn shutdown(mut self) {
        self.accept.abort();
        // Dropping the sender is the close signal; keep a fresh one for `Drop`.
        drop(std::mem::replace(&mut self.close, watch::channel(()).0));
        while self.alive.recv().await.is_some() {}
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Accepts while a connection slot is free; each connection runs on its own task.
async fn accept_loop<L: Listener>(
    mut listener: L,
    cfg: Arc<EgressConfig>,
    slots: Arc<Semaphore>,
    open: Arc<AtomicUsize>,
    closed: watch::Receiver<()>,
    alive: mpsc::Sender<()>,
) {
    let mut closing = closed.clone();
    let run = async {
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let io = match listener.accept_client().await {
                Ok(io) => io,
                Err(_) => {
                    // Out of descriptors or an aborted handshake: wait instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let ctx = ConnCtx::new(
                cfg.limits.idle_timeout,
                closed.clone(),
                slot,
                open.clone(),
                alive.clone(),
            );
            tokio::spawn(serve_connection(io, cfg.clone(), ctx));
        }
    };
    tokio::select! {
        () = run => {}
        _ = closing.changed() => {}
    }
}

/// HTTP/1.1 on one client connection (keep-alive, `CONNECT` upgrades).
async fn serve_connection<I>(io: I, cfg: Arc<EgressConfig>, ctx: ConnCtx)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(Tracked::new(io, ctx.activity.clone()));
    let (service_cfg, service_ctx) = (cfg.clone(), ctx.clone());
    let service =
        service_fn(move |req| service::handle(service_cfg.clone(), service_ctx.clone(), req));
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(cfg.limits.header_timeout)
        .max_buf_size(64 * 1024)
        .serve_connection(io, service)
        .with_upgrades();
    ctx.guard(async move {
        let _ = connection.await;
    })
    .await;
}
