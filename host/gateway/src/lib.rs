//! The model gateway: the host service (`model.generate`) through which harnesses and
//! evaluators call the run's model. It owns the wire protocol (`openai-chat`,
//! `openai-responses`, `anthropic`), the request timeout, bounded retries with backoff on
//! 429/5xx/connection errors, token usage and cost accounting, and the API key, which travels
//! only in the request's auth header and never appears in an error, log line or result.

pub mod limit;
mod meter;
pub mod pause;
mod prices;
mod probe;
mod protocol;
mod rate_wait;
mod relay;
mod settings;
pub mod socket_dirs;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentcompass_plugin_api::contracts::{
    ModelEndpoint, ModelRequest, ModelResponse, ModelSpec, TokenUsage,
};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

pub use meter::{BudgetTracker, Limit, LimitBreach, ModelWait, Spent, UsageMeter, LIMIT_REFUSAL};
pub use prices::{
    model_price, spec_price, ModelPrice, PriceTable, TablePrice, PARAMS_SOURCE, TABLE_PATH,
};
pub use probe::{EndpointCheckError, ENDPOINT_CHECK_USER_AGENT};
pub use protocol::Protocol;
pub use relay::tools::{ToolRelay, ToolRoute, TOOLS_ENDPOINT_NAME};
pub use relay::{ModelRelay, RelayError, RelayFailure, MODEL_ENDPOINT_NAME};
pub use settings::{gateway_param_type, GatewaySettings, Pricing};

/// Why a model call failed. Messages name the endpoint URL, never the key.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The model settings are unusable.
    #[error("model gateway: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// The endpoint kept failing with retryable errors.
    #[error("model endpoint {url}: {last} (gave up after {})", attempts_text(*.attempts))]
    Exhausted {
        /// The endpoint URL.
        url: String,
        /// The last failure.
        last: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The endpoint kept rate-limiting the call for longer than `max_rate_limit_wait_seconds`.
    #[error(
        "model endpoint {url}: {last}; still rate-limited after {waited_seconds:.1} s and {answers} rate-limit answers (model.params.max_rate_limit_wait_seconds caps the wait)"
    )]
    RateLimited {
        /// The endpoint URL.
        url: String,
        /// The last rate-limit answer.
        last: String,
        /// How long the call waited.
        waited_seconds: f64,
        /// Rate-limit answers the call got.
        answers: u32,
    },
    /// The endpoint answered with a non-retryable error status.
    #[error("model endpoint {url} answered {status}: {body}")]
    Status {
        /// The endpoint URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The endpoint answered 200 with a body that is not the protocol's JSON.
    #[error("model endpoint {url} returned a malformed {protocol} response: {detail}")]
    Malformed {
        /// The endpoint URL.
        url: String,
        /// The protocol expected.
        protocol: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl GatewayError {
    /// Whether the failure is the endpoint's (429, 5xx, unreachable) rather than the request's.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            GatewayError::Exhausted { .. } | GatewayError::RateLimited { .. }
        )
    }
}

/// The gateway of one request's model: one HTTP client (connection pool) shared by every task.
pub struct ModelGateway {
    client: reqwest::Client,
    model: String,
    api_key: String,
    protocol: Protocol,
    url: String,
    base_url: String,
    settings: GatewaySettings,
    /// The endpoint's identity for its shared limit (URL and the key as configured).
    endpoint: limit::EndpointId,
    /// The limit's largest value: `max_connections`, else the run's task concurrency.
    max_connections: u32,
    /// How many requests go to the endpoint at once (shared by every gateway of the endpoint),
    /// taken on the first call, once the run sized it.
    limit: std::sync::OnceLock<Arc<limit::EndpointLimit>>,
    /// The model's price (`model.params.pricing`, else the price table's), looked up on the
    /// first answer: the table is parsed only once a cost is needed.
    price: std::sync::OnceLock<Option<ModelPrice>>,
    /// The run's pause: no call starts while it is paused.
    pause: Option<Arc<pause::PauseGate>>,
    runtime: Option<tokio::runtime::Handle>,
}

/// The endpoint limit when neither the run nor `max_connections` sets one.
const DEFAULT_MAX_CONNECTIONS: u32 = 32;

impl std::fmt::Debug for ModelGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelGateway")
            .field("model", &self.model)
            .field("url", &self.url)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl ModelGateway {
    /// A gateway for the resolved model spec (`api_key` already resolved from `${VAR}`).
    /// Captures the current tokio runtime: calls made from a plugin's threads run on it.
    pub fn new(model: &ModelSpec) -> Result<Self, GatewayError> {
        let protocol = Protocol::choose(model)?;
        let settings = GatewaySettings::from_params(&model.params)?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(256)
            .build()
            .map_err(|e| GatewayError::Config {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        let url = protocol.url(&model.base_url);
        let endpoint = limit::EndpointId::of(&url, &model.api_key);
        Ok(ModelGateway {
            client,
            model: model.id.clone(),
            api_key: model.api_key.clone(),
            protocol,
            url,
            base_url: model.base_url.clone(),
            endpoint,
            max_connections: settings.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            settings,
            limit: std::sync::OnceLock::new(),
            price: std::sync::OnceLock::new(),
            pause: None,
            runtime: tokio::runtime::Handle::try_current().ok(),
        })
    }

    /// Sizes the endpoint's limit for a run of `task_concurrency` attempts at once, unless
    /// `max_connections` set it.
    pub fn with_task_concurrency(mut self, task_concurrency: u32) -> Self {
        if self.settings.max_connections.is_none() {
            self.max_connections = task_concurrency;
        }
        self
    }

    /// Holds every call (and every re-send) while `gate` is paused (`ctl pause`).
    pub fn with_pause_gate(mut self, gate: Arc<pause::PauseGate>) -> Self {
        self.pause = Some(gate);
        self
    }

    /// Waits while the run is paused, then for a slot of the endpoint's limit. The pause is
    /// checked again once the slot is held: a call is either in flight before a pause began
    /// or starts after it ended.
    pub(crate) async fn admit(&self) -> limit::Permit {
        loop {
            if let Some(gate) = &self.pause {
                gate.wait_open().await;
            }
            let permit = self.endpoint_limit().acquire().await;
            if !self.pause.as_ref().is_some_and(|gate| gate.is_paused()) {
                return permit;
            }
        }
    }

    /// The endpoint's shared limit (joined on first use).
    pub(crate) fn endpoint_limit(&self) -> &Arc<limit::EndpointLimit> {
        self.limit.get_or_init(|| {
            let adaptive = self.settings.adaptive_concurrency;
            limit::EndpointLimit::shared(self.endpoint, self.max_connections, adaptive)
        })
    }

    /// The model's price and where it came from (`model.params.pricing`, else the pinned
    /// price table's entry for the model id; `None`: no price). Parses the table on first use.
    pub fn price(&self) -> Option<&ModelPrice> {
        self.price
            .get_or_init(|| {
                let base_url = self.protocol.base_url(&self.base_url);
                prices::model_price(self.settings.pricing, &self.model, base_url)
            })
            .as_ref()
    }

    /// `usage` with its cost, when the model has a price.
    pub fn priced(&self, mut usage: TokenUsage) -> TokenUsage {
        if let Some(price) = self.price() {
            usage.cost_usd = Some(price.pricing.cost(&usage));
        }
        usage
    }

    /// The endpoint's adaptive limit now.
    pub fn limit(&self) -> limit::LimitSnapshot {
        self.endpoint_limit().snapshot()
    }

    /// Upstream's key wrapping (`model.wrap_api_key`): the key sent becomes base64 of
    /// `<api_secret>KEY</api_secret><session_id>RUN_DIR</session_id>` (the run directory made
    /// absolute), so a gateway in front of the model can attribute calls to the run. The wrapped
    /// key is a secret too: it is registered for scrubbing.
    pub fn wrap_key(&mut self, run_dir: &std::path::Path) {
        use base64::Engine as _;
        if self.api_key.is_empty() {
            return;
        }
        let session = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
        let raw = format!(
            "<api_secret>{}</api_secret><session_id>{}</session_id>",
            self.api_key,
            session.display()
        );
        self.api_key = base64::engine::general_purpose::STANDARD.encode(raw);
        agentcompass_redact::register_secret(&self.api_key);
    }

    /// Whether an endpoint was configured: a base URL, or a key (which selects the protocol's
    /// public default URL, as the official SDKs do). With neither, no call is sent anywhere.
    pub fn is_configured(&self) -> bool {
        !self.base_url.trim().is_empty() || !self.api_key.trim().is_empty()
    }

    /// The protocol in use.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the endpoint is, for agents with their own client.
    pub fn endpoint(&self) -> ModelEndpoint {
        let base_url = if self.base_url.trim().is_empty() {
            self.protocol.default_base_url().to_string()
        } else {
            self.base_url.clone()
        };
        ModelEndpoint {
            model: self.model.clone(),
            base_url,
            api_key: self.api_key.clone(),
            protocol: self.protocol.name().to_string(),
        }
    }

    /// Sends `request`, retrying transient failures, and returns the answer with its usage
    /// (and cost, when the model has a price). Runs on the host's runtime whatever thread polls.
    pub async fn generate(
        self: &Arc<Self>,
        request: ModelRequest,
    ) -> Result<ModelResponse, GatewayError> {
        match &self.runtime {
            Some(handle) => {
                let gateway = Arc::clone(self);
                let mut task =
                    AbortOnDrop(handle.spawn(async move { gateway.generate_here(request).await }));
                match task.await_join().await {
                    Ok(answer) => answer,
                    Err(e) => Err(GatewayError::Config {
                        message: format!("model call task failed: {e}"),
                    }),
                }
            }
            None => self.generate_here(request).await,
        }
    }

    async fn generate_here(&self, request: ModelRequest) -> Result<ModelResponse, GatewayError> {
        if !self.is_configured() {
            return Err(GatewayError::Config {
                message: format!(
                    "no endpoint is configured for model `{}` (--model-base-url and \
                     --model-api-key, model.base_url, or OPENAI_BASE_URL/OPENAI_API_KEY): \
                     the public default is used only with a key",
                    self.model
                ),
            });
        }
        let started = Instant::now();
        let mut params = self.settings.generation_params.clone();
        for (key, value) in &request.params {
            params.insert(key.clone(), value.clone());
        }
        let body = wire::request_body(self.protocol, &self.model, &request, &params);
        let timeout = request
            .timeout_seconds
            .filter(|s| *s > 0.0)
            .map(agentcompass_plugin_api::wait::duration_from_seconds)
            .unwrap_or(self.settings.timeout);
        let max_retries = request.max_retries.unwrap_or(self.settings.max_retries);
        let mut attempt = 0u32;
        let mut limited = rate_wait::RateLimitWait::default();
        loop {
            let permit = self.admit().await;
            attempt += 1;
            let failure = match self.send_once(&body, timeout).await {
                Ok(mut response) => {
                    permit.succeeded();
                    response.latency_ms = started.elapsed().as_millis() as u64;
                    // Every re-send counts, rate-limited ones included.
                    response.retries = attempt - 1 + limited.answers();
                    response.usage = self.priced(response.usage);
                    return Ok(response);
                }
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::RateLimited {
                    reason,
                    retry_after,
                }) => {
                    // Not a retry: the limit holds every request until the endpoint is ready.
                    attempt -= 1;
                    tracing::debug!(
                        target: "agentcompass::model",
                        "model endpoint {}: {reason}; waiting (limit now {})",
                        self.url,
                        self.endpoint_limit().snapshot().limit
                    );
                    match limited.answered(&permit, &self.settings, reason, retry_after) {
                        rate_wait::Verdict::SendAgain => continue,
                        rate_wait::Verdict::GiveUp => return Err(limited.give_up(&self.url)),
                    }
                }
                Err(Attempt::Retryable {
                    reason,
                    retry_after,
                }) => (reason, retry_after),
            };
            drop(permit);
            if attempt > max_retries {
                return Err(GatewayError::Exhausted {
                    url: self.url.clone(),
                    last: failure.0,
                    attempts: attempt,
                });
            }
            let delay = failure
                .1
                .unwrap_or_else(|| self.settings.backoff(attempt))
                .min(settings::MAX_BACKOFF);
            tracing::warn!(
                target: "agentcompass::model",
                "model endpoint {}: {}; retry {} of {} in {:.1} s",
                self.url,
                failure.0,
                attempt,
                max_retries,
                delay.as_secs_f64()
            );
            tokio::time::sleep(delay).await;
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if !self.api_key.is_empty() {
            let (name, value) = match self.protocol {
                Protocol::Anthropic => ("x-api-key", self.api_key.clone()),
                _ => (AUTHORIZATION.as_str(), format!("Bearer {}", self.api_key)),
            };
            if let Ok(mut value) = HeaderValue::from_str(&value) {
                value.set_sensitive(true);
                if let Ok(name) = reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
                    headers.insert(name, value);
                }
            }
        }
        if self.protocol == Protocol::Anthropic {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        headers
    }

    async fn send_once(&self, body: &Value, timeout: Duration) -> Result<ModelResponse, Attempt> {
        let sent = self
            .client
            .post(&self.url)
            .headers(self.headers())
            .timeout(timeout)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) if e.is_timeout() => {
                return Err(Attempt::retry(format!(
                    "no answer within {:.0} s",
                    timeout.as_secs_f64()
                )))
            }
            Err(e) => return Err(Attempt::retry(connection_error(&e))),
        };
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) if e.is_timeout() => {
                return Err(Attempt::retry(format!(
                    "no answer within {:.0} s",
                    timeout.as_secs_f64()
                )))
            }
            Err(e) => return Err(Attempt::retry(connection_error(&e))),
        };
        if !status.is_success() {
            let snippet = body_snippet(&bytes);
            if is_rate_limit(status, &bytes) {
                return Err(Attempt::RateLimited {
                    reason: format!("answered {} {}", status.as_u16(), snippet),
                    retry_after,
                });
            }
            if is_retryable(status) {
                return Err(Attempt::Retryable {
                    reason: format!("answered {} {}", status.as_u16(), snippet),
                    retry_after,
                });
            }
            return Err(Attempt::Fatal(GatewayError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: snippet,
            }));
        }
        let malformed = |detail: String| {
            Attempt::Fatal(GatewayError::Malformed {
                url: self.url.clone(),
                protocol: self.protocol.name(),
                detail: agentcompass_redact::scrub_text(&detail),
            })
        };
        let json: Value =
            serde_json::from_slice(&bytes).map_err(|e| malformed(format!("not JSON ({e})")))?;
        wire::parse_response(self.protocol, &json).map_err(|e| malformed(e.to_string()))
    }
}

/// One try's failure.
enum Attempt {
    /// The endpoint said "too many requests" (429, 529, a rate-limit error body).
    RateLimited {
        reason: String,
        retry_after: Option<Duration>,
    },
    Retryable {
        reason: String,
        retry_after: Option<Duration>,
    },
    Fatal(GatewayError),
}

impl Attempt {
    fn retry(reason: String) -> Self {
        Attempt::Retryable {
            reason,
            retry_after: None,
        }
    }
}

/// A `Retry-After` given in seconds or as an HTTP date (RFC 9110; a date in the past is 0).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds >= 0.0)
            .then(|| agentcompass_plugin_api::wait::duration_from_seconds(seconds));
    }
    let date = jiff::fmt::rfc2822::parse(value).ok()?;
    let left = date.timestamp().as_second() - jiff::Timestamp::now().as_second();
    Some(Duration::from_secs(left.max(0) as u64))
}

/// Whether an error answer is the endpoint's rate limit: 429, Anthropic's 529 (overloaded),
/// or a body whose error type says so (`rate_limit_error`, `rate_limit_exceeded`).
fn is_rate_limit(status: StatusCode, body: &[u8]) -> bool {
    if status == StatusCode::TOO_MANY_REQUESTS || status.as_u16() == 529 {
        return true;
    }
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let error = json.get("error").unwrap_or(&json);
    ["type", "code"].iter().any(|field| {
        error
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.starts_with("rate_limit") || kind == "overloaded_error")
    })
}

fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
        || status.as_u16() == 529
}

/// A connection error without the request's URL query or headers.
/// "1 attempt", "4 attempts".
pub(crate) fn attempts_text(attempts: u32) -> String {
    if attempts == 1 {
        "1 attempt".to_string()
    } else {
        format!("{attempts} attempts")
    }
}

fn connection_error(error: &reqwest::Error) -> String {
    let kind = if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    agentcompass_redact::scrub_text(&if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} ({detail})")
    })
}

/// The first 200 characters of an error body, on one line, scrubbed of secrets.
fn body_snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Scrubbed before it is cut: a key the cut falls into is masked whole.
    agentcompass_redact::scrub_and_truncate(&one_line, BODY_SNIPPET_CHARS)
}

/// How much of an error body an issue message quotes.
const BODY_SNIPPET_CHARS: usize = 200;

/// Aborts the spawned call when the caller stops waiting (a cancelled harness).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    async fn await_join(&mut self) -> Result<T, tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
