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
}
