//! The host's side of the services every component call receives: log forwarding into the
//! host's `tracing` (tagged with the component's name), progress events, cancellation and
//! named services.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    HarborDatasetRequest, LogLevel, ModelEndpoint, ModelRequest, UrlDatasetRequest,
    HARBOR_DATASET_SERVICE, MODEL_ENDPOINT_SERVICE, MODEL_GENERATE_SERVICE,
    SECRET_REGISTER_SERVICE, TEXT_SCRUB_SERVICE, URL_DATASET_SERVICE,
};
use agentcompass_plugin_api::sdk::{BoxFuture, Ctx, HostApi};
use agentcompass_plugin_api::{Error, Result};
use serde::Deserialize;
use tokio::sync::Notify;

use agentcompass_gateway::{ModelGateway, UsageMeter};

use crate::datasets::DatasetService;

/// A cooperative cancellation flag shared by the scheduler and every call it makes.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A new, uncancelled token.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels; every waiter wakes up.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Receives progress payloads emitted by components.
pub trait ProgressSink: Send + Sync {
    /// Handles one payload emitted by `component`.
    fn emit(&self, component: &str, payload: &serde_json::Value);
}

/// Host services for one component (or one call of it).
#[derive(Clone)]
pub struct HostServices {
    component: Arc<str>,
    cancel: CancelToken,
    progress: Option<Arc<dyn ProgressSink>>,
    model: Option<Arc<ModelGateway>>,
    usage: Option<Arc<UsageMeter>>,
    /// What `model.endpoint` answers instead of the gateway's own endpoint: the attempt's
    /// model endpoint inside the environment (placeholder token, never the real key).
    endpoint: Option<ModelEndpoint>,
    /// The `dataset.*` services (a benchmark's `load_tasks`).
    datasets: Option<Arc<DatasetService>>,
}

impl HostServices {
    /// Services for a plugin as a whole (log forwarding installed at `init`).
    pub fn for_plugin(name: &str) -> Self {
        HostServices {
            component: Arc::from(name),
            cancel: CancelToken::new(),
            progress: None,
            model: None,
            usage: None,
            endpoint: None,
            datasets: None,
        }
    }

    /// Services for calls of one component, sharing a cancellation token and a progress sink.
    pub fn for_component(
        component: &str,
        cancel: CancelToken,
        progress: Option<Arc<dyn ProgressSink>>,
    ) -> Self {
        HostServices {
            component: Arc::from(component),
            cancel,
            progress,
            model: None,
            usage: None,
            endpoint: None,
            datasets: None,
        }
    }

    /// Offers the `model.generate` and `model.endpoint` services through `gateway`, summing
    /// the usage of every call into `usage`.
    pub fn with_model(mut self, gateway: Arc<ModelGateway>, usage: Arc<UsageMeter>) -> Self {
        self.model = Some(gateway);
        self.usage = Some(usage);
        self
    }

    /// Makes `model.endpoint` answer `endpoint` (the model endpoint served inside the
    /// attempt's environment) instead of the gateway's endpoint and real key.
    pub fn with_model_endpoint(mut self, endpoint: ModelEndpoint) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// Offers the `dataset.harbor` and `dataset.url` services through `datasets`.
    pub fn with_datasets(mut self, datasets: Arc<DatasetService>) -> Self {
        self.datasets = Some(datasets);
        self
    }

    /// Wraps these services in a call context.
    pub fn into_ctx(self) -> Ctx {
        Ctx::new(Arc::new(self))
    }
}

/// The request of the secret-registering service.
#[derive(serde::Deserialize)]
struct SecretValue {
    value: String,
}

/// The request and answer of the text-scrubbing service.
#[derive(serde::Deserialize, serde::Serialize)]
struct Text {
    text: String,
}

impl HostServices {
    /// The model-generation service: one call through the gateway, admitted by the attempt's
    /// usage limits, aborted when the attempt is cancelled.
    fn generate(
        &self,
        gateway: Arc<agentcompass_gateway::ModelGateway>,
        request: serde_json::Value,
    ) -> BoxFuture<Result<serde_json::Value>> {
        let usage = self.usage.clone();
        let cancel = self.cancel.clone();
        Box::pin(async move {
            let request: ModelRequest = serde_json::from_value(request).map_err(|e| {
                Error::invalid_input(format!("{MODEL_GENERATE_SERVICE}: bad request: {e}"))
            })?;
            let _wait = match &usage {
                Some(usage) => Some(usage.admit().map_err(|breach| {
                    Error::invalid_input(format!(
                        "{MODEL_GENERATE_SERVICE}: {}: {}",
                        agentcompass_gateway::LIMIT_REFUSAL,
                        breach.message
                    ))
                })?),
                None => None,
            };
            // A cancelled attempt (Ctrl-C, the deadline, a budget that cancels) stops waiting
            // at once: the call is aborted and its answer never counted.
            let answer = tokio::select! {
                answer = gateway.generate(request) => answer.map_err(|e| {
                    let message = agentcompass_redact::scrub_text(&e.to_string());
                    match e {
                        agentcompass_gateway::GatewayError::RateLimited { .. } => {
                            Error::rate_limited(message)
                        }
                        _ => Error::msg(message),
                    }
                })?,
                () = cancel.cancelled() => return Err(Error::cancelled()),
            };
            if let Some(usage) = &usage {
                usage.add(&answer.usage);
            }
            serde_json::to_value(&answer).map_err(|e| Error::msg(e.to_string()))
        })
    }
}

impl HostServices {
    /// A `dataset.*` service: the request parsed, answered by the data directory's
    /// [`DatasetService`]; its errors are bad input, one line each.
    fn dataset(
        &self,
        service: &str,
        request: serde_json::Value,
    ) -> BoxFuture<Result<serde_json::Value>> {
        let Some(datasets) = self.datasets.clone() else {
            let err = Error::unsupported(format!(
                "host service `{service}` is not available to `{}` here (no data directory)",
                self.component
            ));
            return Box::pin(async move { Err(err) });
        };
        let service = service.to_string();
        Box::pin(async move {
            let bad =
                |e: serde_json::Error| Error::invalid_input(format!("{service}: bad request: {e}"));
            let answer = if service == HARBOR_DATASET_SERVICE {
                let request = HarborDatasetRequest::deserialize(&request).map_err(bad)?;
                datasets.harbor(&request).await.map(serde_json::to_value)
            } else {
                let request = UrlDatasetRequest::deserialize(&request).map_err(bad)?;
                datasets.url(&request).await.map(serde_json::to_value)
            };
            match answer {
                Ok(value) => value.map_err(|e| Error::msg(e.to_string())),
                Err(e) => Err(Error::invalid_input(agentcompass_redact::scrub_text(
                    &e.to_string(),
                ))),
            }
        })
    }
}

impl HostApi for HostServices {
    fn log(&self, level: LogLevel, target: &str, message: &str) {
        let component = &*self.component;
        match level {
            LogLevel::Trace => tracing::trace!(plugin = component, target = target, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin = component, target = target, "{message}"),
            LogLevel::Info => tracing::info!(plugin = component, target = target, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin = component, target = target, "{message}"),
            LogLevel::Error => tracing::error!(plugin = component, target = target, "{message}"),
        }
    }

    fn emit_progress(&self, payload: &serde_json::Value) {
        if let Some(sink) = &self.progress {
            sink.emit(&self.component, payload);
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<()> {
        let cancel = self.cancel.clone();
        Box::pin(async move { cancel.cancelled().await })
    }

    fn call(
        &self,
        service: &str,
        request: serde_json::Value,
    ) -> BoxFuture<Result<serde_json::Value>> {
        let no_model = || {
            Error::unsupported(format!(
                "host service `{service}` is not available to `{}` here (no model gateway)",
                self.component
            ))
        };
        match service {
            MODEL_GENERATE_SERVICE => match self.model.clone() {
                Some(gateway) => self.generate(gateway, request),
                None => {
                    let err = no_model();
                    Box::pin(async move { Err(err) })
                }
            },
            MODEL_ENDPOINT_SERVICE => {
                let answer = match (&self.endpoint, &self.model) {
                    (Some(endpoint), _) => {
                        serde_json::to_value(endpoint).map_err(|e| Error::msg(e.to_string()))
                    }
                    (None, Some(gateway)) => serde_json::to_value(gateway.endpoint())
                        .map_err(|e| Error::msg(e.to_string())),
                    (None, None) => Err(no_model()),
                };
                Box::pin(async move { answer })
            }
            SECRET_REGISTER_SERVICE => {
                let answer = match SecretValue::deserialize(&request) {
                    Ok(SecretValue { value }) => {
                        agentcompass_redact::register_secret(&value);
                        Ok(serde_json::Value::Null)
                    }
                    Err(_) => Err(Error::invalid_input(format!(
                        "{SECRET_REGISTER_SERVICE}: expected {{\"value\": string}}"
                    ))),
                };
                Box::pin(async move { answer })
            }
            TEXT_SCRUB_SERVICE => {
                let answer = match Text::deserialize(&request) {
                    Ok(Text { text }) => serde_json::to_value(Text {
                        text: agentcompass_redact::scrub_text(&text),
                    })
                    .map_err(|e| Error::msg(e.to_string())),
                    Err(_) => Err(Error::invalid_input(format!(
                        "{TEXT_SCRUB_SERVICE}: expected {{\"text\": string}}"
                    ))),
                };
                Box::pin(async move { answer })
            }
            HARBOR_DATASET_SERVICE | URL_DATASET_SERVICE => self.dataset(service, request),
            _ => {
                let err = Error::unsupported(format!("host service `{service}` is not available"));
                Box::pin(async move { Err(err) })
            }
        }
    }
}

/// The services a plugin's `init` receives: logging with the plugin's name, nothing else.
pub fn plugin_init_services(name: &str) -> Ctx {
    HostServices::for_plugin(name).into_ctx()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancellation_wakes_waiters() {
        let token = CancelToken::new();
        let waiter = tokio::spawn({
            let token = token.clone();
            async move { token.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!token.is_cancelled());
        token.cancel();
        assert!(waiter.await.is_ok());
        assert!(token.is_cancelled());
    }

    #[tokio::test]
    async fn text_scrub_masks_registered_secrets() {
        agentcompass_redact::register_secret("tok-SCRUBSERVICE-5521");
        let ctx = HostServices::for_plugin("p").into_ctx();
        let text = "auth: Bearer tok-SCRUBSERVICE-5521 (end)";
        assert_eq!(ctx.scrub(text).await, "auth: Bearer ******** (end)");
        let bad = ctx
            .call(TEXT_SCRUB_SERVICE, serde_json::json!({"txt": 1}))
            .await;
        assert!(bad.is_err_and(|e| e.message.contains("expected {\"text\": string}")));
    }

    #[tokio::test]
    async fn registered_secrets_are_scrubbed_from_then_on() {
        let ctx = HostServices::for_plugin("p").into_ctx();
        assert_eq!(
            ctx.scrub("token tok-REGISTERED-3318").await,
            "token tok-REGISTERED-3318"
        );
        ctx.register_secret("tok-REGISTERED-3318").await;
        assert_eq!(
            ctx.scrub("token tok-REGISTERED-3318").await,
            "token ********"
        );
        let bad = ctx
            .call(SECRET_REGISTER_SERVICE, serde_json::json!({"v": 1}))
            .await;
        assert!(bad.is_err_and(|e| e.message.contains("expected {\"value\": string}")));
    }

    #[tokio::test]
    async fn unknown_services_are_errors() {
        let ctx = HostServices::for_plugin("p").into_ctx();
        let out = ctx.call("nope", serde_json::json!({})).await;
        assert!(out.is_err_and(|e| e.message.contains("nope")));
    }
}
