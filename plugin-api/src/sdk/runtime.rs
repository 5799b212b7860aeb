//! A lazily created tokio runtime owned by the plugin.
//!
//! A plugin links its own copy of tokio whose thread-locals are separate from the host's, so
//! `tokio::spawn`, `tokio::time::sleep` or tokio I/O called directly from a plugin method panic
//! with "no reactor running" (the SDK turns that into an error). Work that needs tokio (timers,
//! sockets, HTTP clients) runs here instead: [`spawn`] moves a future onto this runtime and returns a future any executor
//! (the host's included) can await.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use crate::{Error, Result};

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("plugin-rt")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::msg(format!("cannot start the plugin runtime: {e}")))
}

/// Runs `future` on the plugin's own runtime; the returned future resolves with its output.
/// Dropping the returned future aborts the spawned work.
pub async fn spawn<F>(future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = runtime()?.spawn(future);
    let guard = Abort(handle);
    guard.wait().await
}

/// Sleeps for `duration` on the plugin's runtime (usable from any executor).
pub async fn sleep(duration: Duration) -> Result<()> {
    spawn(async move { tokio::time::sleep(duration).await }).await
}

struct Abort<T>(tokio::task::JoinHandle<T>);

impl<T> Abort<T> {
    async fn wait(mut self) -> Result<T> {
        (&mut self.0).await.map_err(|err| {
            if err.is_panic() {
                Error::from_panic(err.into_panic().as_ref())
            } else {
                Error::cancelled()
            }
        })
    }
}

impl<T> Drop for Abort<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::testing::block_on;

    #[test]
    fn spawn_and_sleep_work_from_a_foreign_executor() {
        // A bare executor with no tokio context, like a host polling a plugin future.
        let out = block_on(async {
            sleep(Duration::from_millis(5)).await?;
            spawn(async { 41 + 1 }).await
        });
        assert_eq!(out.ok(), Some(42));
    }
}
