//! What every task of one client connection shares: its activity clock, the proxy's close
//! signal, its slot of the connection limit (and the count of open connections), and the
//! proxy's count of live tasks.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};

use crate::io::Activity;

/// One client connection's share of the proxy; each task of the connection holds a clone.
#[derive(Debug, Clone)]
pub(crate) struct ConnCtx {
    pub(crate) activity: Arc<Activity>,
    idle: Duration,
    closed: watch::Receiver<()>,
    _slot: Arc<Slot>,
    _alive: mpsc::Sender<()>,
}

/// A client connection's place in the limit, held until its last task ends.
#[derive(Debug)]
struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Arc<AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnCtx {
    pub(crate) fn new(
        idle: Duration,
        closed: watch::Receiver<()>,
        permit: OwnedSemaphorePermit,
        open: Arc<AtomicUsize>,
        alive: mpsc::Sender<()>,
    ) -> ConnCtx {
        open.fetch_add(1, Ordering::Relaxed);
        ConnCtx {
            activity: Arc::new(Activity::new()),
            idle,
            closed,
            _slot: Arc::new(Slot {
                _permit: permit,
                open,
            }),
            _alive: alive,
        }
    }

    /// Runs `work` until it ends, the proxy closes (its handle dropped), or nothing moved on
    /// the connection for the idle timeout; `work` is dropped then, closing its streams.
    pub(crate) async fn guard<F: Future<Output = ()>>(self, work: F) {
        let mut closed = self.closed.clone();
        tokio::select! {
            () = work => {}
            _ = closed.changed() => {}
            () = self.activity.idle_for(self.idle) => {}
        }
    }

    /// [`ConnCtx::guard`] on a task of its own.
    pub(crate) fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(self.clone().guard(work));
    }
}
