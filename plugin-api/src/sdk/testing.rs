//! Helpers for a plugin's own unit tests.
//!
//! The SDK's futures need no particular executor: the host polls a plugin's futures with no
//! tokio runtime current, and [`block_on`] does the same on a plain test thread, so a test
//! sees what the host will.
//!
//! ```
//! use agentcompass_plugin_api::sdk::testing::block_on;
//!
//! assert_eq!(block_on(async { 40 + 2 }), 42);
//! ```

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Drives `future` to completion on this thread, with no async runtime current: the way the
/// host polls a plugin's futures (`#[test] fn ... { block_on(Bench.load_tasks(..)) }`).
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
