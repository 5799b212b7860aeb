//! Panic containment and executor bridging for calls that cross the plugin boundary.
//!
//! Every ABI entry point runs its body through [`sync_call`] or [`async_call`], so a panic
//! becomes a [`PluginError`] instead of unwinding across `extern "C"` (which aborts). The host
//! side also polls every foreign future through [`CatchUnwind`], because async-ffi re-raises a
//! panic that escaped the plugin's `poll`.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use abi_stable::std_types::RResult;
use async_ffi::{FfiFuture, FutureExt as _};

use super::PluginError;
use crate::Error;

/// Runs a synchronous entry-point body, turning a panic into an error.
pub fn sync_call<T>(body: impl FnOnce() -> Result<T, Error>) -> RResult<T, PluginError> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(err)) => RResult::RErr(err.into()),
        Err(payload) => RResult::RErr(Error::from_panic(payload.as_ref()).into()),
    }
}

/// Wraps an asynchronous entry-point body: panics while polling become errors, and the future
/// runs on `handle` when one is given (host-side objects capture the host runtime so that their
/// tokio calls work even when a plugin polls them from its own threads).
pub fn async_call<T, F>(
    handle: Option<&tokio::runtime::Handle>,
    body: F,
) -> FfiFuture<RResult<T, PluginError>>
where
    T: Send + 'static,
    F: Future<Output = Result<T, Error>> + Send + 'static,
{
    let caught = CatchUnwind::new(body);
    match handle {
        None => async move { flatten(caught.await).into() }.into_ffi(),
        Some(handle) => {
            let task = AbortOnDrop(handle.spawn(caught));
            async move {
                let joined = task.join().await;
                match joined {
                    Ok(result) => flatten(result).into(),
                    Err(err) => RResult::RErr(Error::msg(format!("task failed: {err}")).into()),
                }
            }
            .into_ffi()
        }
    }
}

fn flatten<T>(result: Result<Result<T, Error>, Error>) -> Result<T, PluginError> {
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) | Err(err) => Err(err.into()),
    }
}

/// A future that turns a panic inside `poll` into `Err(Error { kind: Panicked, .. })`.
pub struct CatchUnwind<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> CatchUnwind<F> {
    /// Wraps `future`.
    pub fn new(future: F) -> Self {
        CatchUnwind {
            inner: Box::pin(future),
        }
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Error::from_panic(payload.as_ref()))),
        }
    }
}

/// A spawned task that is aborted when its handle is dropped (so dropping the FFI future,
/// which is how callers cancel, also cancels the work).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    async fn join(mut self) -> Result<T, tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_panics_become_errors() {
        let out: RResult<(), PluginError> = sync_call(|| panic!("kaboom"));
        let err = out.into_result().err().map(Error::from);
        assert_eq!(err.map(|e| e.message), Some("panicked: kaboom".to_string()));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn async_panics_become_errors_inline_and_spawned() {
        let inline = async_call::<(), _>(None, async { panic!("inline") }).await;
        assert!(inline
            .into_result()
            .is_err_and(|e| e.message.contains("inline")));
        let handle = tokio::runtime::Handle::current();
        let spawned = async_call::<u8, _>(Some(&handle), async { Ok(7) }).await;
        assert_eq!(spawned.into_result().ok(), Some(7));
        let spawned = async_call::<(), _>(Some(&handle), async { panic!("remote") }).await;
        assert!(spawned
            .into_result()
            .is_err_and(|e| e.message.contains("remote")));
    }
}
