//! The per-call context: host services seen from a component.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::contracts::{
    LogLevel, ModelEndpoint, ModelRequest, ModelResponse, MODEL_ENDPOINT_SERVICE,
    MODEL_GENERATE_SERVICE,
};
use crate::Result;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the host offers a component during a call. The host implements it; plugins reach it
/// through the ABI (see [`crate::bridge::import`]).
pub trait HostApi: Send + Sync {
    /// Forwards a log record into the host's `tracing`.
    fn log(&self, level: LogLevel, target: &str, message: &str);
    /// Emits a progress event payload for the current task.
    fn emit_progress(&self, payload: &serde_json::Value);
    /// Whether the current operation has been cancelled.
    fn is_cancelled(&self) -> bool;
    /// Resolves when the current operation is cancelled.
    fn cancelled(&self) -> BoxFuture<()>;
    /// Calls a named host service with a JSON request.
    fn call(
        &self,
        service: &str,
        request: serde_json::Value,
    ) -> BoxFuture<Result<serde_json::Value>>;
}

/// The context every asynchronous component method receives.
#[derive(Clone)]
pub struct Ctx {
    host: Arc<dyn HostApi>,
}

impl Ctx {
    /// A context over the given host services.
    pub fn new(host: Arc<dyn HostApi>) -> Self {
        Ctx { host }
    }

    /// A context that logs nowhere, is never cancelled and offers no services (for unit tests
    /// of components).
    pub fn detached() -> Self {
        Ctx::new(Arc::new(DetachedHost))
    }

    /// The underlying host services.
    pub fn host(&self) -> &Arc<dyn HostApi> {
        &self.host
    }

    /// Logs at info level (target `plugin`).
    pub fn info(&self, message: &str) {
        self.host.log(LogLevel::Info, "plugin", message);
    }

    /// Logs at warn level (target `plugin`).
    pub fn warn(&self, message: &str) {
        self.host.log(LogLevel::Warn, "plugin", message);
    }

    /// Emits a progress payload for the current task.
    pub fn progress(&self, payload: serde_json::Value) {
        self.host.emit_progress(&payload);
    }

    /// Whether the current operation has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.host.is_cancelled()
    }

    /// Resolves when the current operation is cancelled.
    pub fn cancelled(&self) -> BoxFuture<()> {
        self.host.cancelled()
    }

    /// Calls a named host service.
    pub async fn call(
        &self,
        service: &str,
        request: serde_json::Value,
    ) -> Result<serde_json::Value> {
        self.host.call(service, request).await
    }

    /// Sends one generation request to the run's model through the host's model gateway
    /// (protocol, retries, timeout, usage accounting and the API key are the host's).
    pub async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse> {
        let payload = serde_json::to_value(request).map_err(|e| {
            crate::Error::invalid_input(format!("model request does not serialise: {e}"))
        })?;
        let answer = self.call(MODEL_GENERATE_SERVICE, payload).await?;
        serde_json::from_value(answer).map_err(|e| {
            crate::Error::msg(format!(
                "host answered model.generate with a bad response: {e}"
            ))
        })
    }

    /// `text` scrubbed of every secret the host knows. Call it before cutting text short
    /// (scrub first, then truncate). A host without the service (an older host) answers an
    /// error; the text then comes back unchanged, and the host still scrubs whole secrets from
    /// everything it persists.
    pub async fn scrub(&self, text: &str) -> String {
        let request = serde_json::json!({ "text": text });
        match self
            .call(crate::contracts::TEXT_SCRUB_SERVICE, request)
            .await
        {
            Ok(answer) => match answer.get("text").and_then(|t| t.as_str()) {
                Some(scrubbed) => scrubbed.to_string(),
                None => text.to_string(),
            },
            Err(_) => text.to_string(),
        }
    }

    /// Adds `value` to the host's secrets, so the host scrubs it from everything it prints or
    /// persists. Best effort: a host without the service (an older host) ignores it.
    pub async fn register_secret(&self, value: &str) {
        let request = serde_json::json!({ "value": value });
        let _ = self
            .call(crate::contracts::SECRET_REGISTER_SERVICE, request)
            .await;
    }

    /// Resolves a Harbor registry dataset: the host reads the registry, fetches each task
    /// once into its cache (printing the download's progress), verifies every task's digest
    /// and answers local directories. Errors are the host's one-line messages.
    pub async fn harbor_dataset(
        &self,
        request: &crate::contracts::HarborDatasetRequest,
    ) -> Result<crate::contracts::HarborDataset> {
        self.call_typed(crate::contracts::HARBOR_DATASET_SERVICE, request)
            .await
    }

    /// Fetches one file or archive by URL through the host, verified against its SHA-256,
    /// cached under the host's data directory (a later run needs no network).
    pub async fn url_dataset(
        &self,
        request: &crate::contracts::UrlDatasetRequest,
    ) -> Result<crate::contracts::UrlDataset> {
        self.call_typed(crate::contracts::URL_DATASET_SERVICE, request)
            .await
    }

    /// Calls `service` with `request` serialised and its answer deserialised.
    async fn call_typed<Q: serde::Serialize, A: serde::de::DeserializeOwned>(
        &self,
        service: &str,
        request: &Q,
    ) -> Result<A> {
        let payload = serde_json::to_value(request).map_err(|e| {
            crate::Error::invalid_input(format!("{service}: request does not serialise: {e}"))
        })?;
        let answer = self.call(service, payload).await?;
        serde_json::from_value(answer)
            .map_err(|e| crate::Error::msg(format!("host answered {service} badly: {e}")))
    }

    /// The run's model endpoint (base URL, resolved key, model id, protocol), for agents that
    /// bring their own client. Calls made that way bypass the gateway's usage accounting.
    pub async fn model_endpoint(&self) -> Result<ModelEndpoint> {
        let answer = self
            .call(MODEL_ENDPOINT_SERVICE, serde_json::Value::Null)
            .await?;
        serde_json::from_value(answer).map_err(|e| {
            crate::Error::msg(format!(
                "host answered model.endpoint with a bad response: {e}"
            ))
        })
    }
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ctx")
    }
}

struct DetachedHost;

impl HostApi for DetachedHost {
    fn log(&self, _: LogLevel, _: &str, _: &str) {}

    fn emit_progress(&self, _: &serde_json::Value) {}

    fn is_cancelled(&self) -> bool {
        false
    }

    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(std::future::pending())
    }

    fn call(&self, service: &str, _: serde_json::Value) -> BoxFuture<Result<serde_json::Value>> {
        let err = crate::Error::unsupported(format!("host service `{service}` is not available"));
        Box::pin(async move { Err(err) })
    }
}
