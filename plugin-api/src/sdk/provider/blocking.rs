//! Blocking work of a provider on a tokio blocking pool.

use crate::{Error, Result};

/// Runs blocking `work` on a tokio blocking pool and awaits it from any executor; `provider`
/// names the environment in the error of a failed (panicked) task.
///
/// The pool is the current runtime's when there is one: a built-in provider runs on the host's
/// runtime, a plugin's code inside [`crate::sdk::runtime::spawn`] on the plugin-owned one. A
/// plugin method polled directly by the host (no runtime of the plugin's tokio is current
/// there) uses the plugin-owned runtime's pool.
pub async fn blocking<T, F>(provider: &str, work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let joined = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(work).await,
        Err(_) => {
            crate::sdk::runtime::spawn(async move { tokio::task::spawn_blocking(work).await })
                .await?
        }
    };
    joined
        .map_err(|e| Error::environment(format!("environment `{provider}`: file task failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn on_the_current_runtime() {
        let id = tokio::runtime::Handle::current().id();
        let seen = blocking("x", move || tokio::runtime::Handle::current().id() == id)
            .await
            .unwrap();
        assert!(seen);
    }

    /// Without a runtime (the host polling a plugin's future), on the plugin-owned runtime's
    /// pool; `contract_kit::block_on` is such an executor.
    #[cfg(feature = "contract-kit")]
    #[test]
    fn without_a_runtime_on_the_plugin_runtime() {
        use crate::contract_kit::block_on;
        let inside = block_on(blocking("x", || {
            tokio::runtime::Handle::try_current().is_ok()
        }));
        assert!(inside.unwrap(), "not on a runtime's blocking pool");
        let err = block_on(blocking("prov", || -> u8 { panic!("boom") })).unwrap_err();
        assert!(
            err.message.contains("environment `prov`: file task failed"),
            "{}",
            err.message
        );
    }
}
