//! The relay's listeners and its one request handler: check the token, forward, stream the
//! answer back while metering it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use agentcompass_egress::EgressToken;
use bytes::Bytes;
use futures_util::Stream;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};

use super::upstream::{self, Route};
use super::usage_tap::{Endpoint, UsageTap};
use crate::{ModelGateway, ModelWait, UsageMeter, LIMIT_REFUSAL};

/// Largest request body accepted (a long conversation with images fits).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// What every request of one relay shares.
pub(super) struct RelayState {
    pub(super) gateway: Arc<ModelGateway>,
    usage: Arc<UsageMeter>,
    token: EgressToken,
    label: String,
    /// How the last model call ended when it failed after the gateway's retries (`None`
    /// after a success): what an agent that stopped on it stopped on.
    last_failure: std::sync::Mutex<Option<super::RelayFailure>>,
}

impl RelayState {
    pub(super) fn new(
        gateway: Arc<ModelGateway>,
        usage: Arc<UsageMeter>,
        token: EgressToken,
        label: &str,
    ) -> RelayState {
        RelayState {
            gateway,
            usage,
            token,
            label: label.to_string(),
            last_failure: std::sync::Mutex::new(None),
        }
    }

    /// Remembers how the last model call ended (`None`: it succeeded).
    fn set_last_failure(&self, failure: Option<super::RelayFailure>) {
        *self
            .last_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = failure;
    }

    /// How the last model call ended when it failed after the gateway's retries.
    pub(super) fn last_failure(&self) -> Option<super::RelayFailure> {
        self.last_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Adds one call's usage (priced when the gateway has prices) to the attempt's meter.
    fn record(&self, usage: agentcompass_plugin_api::contracts::TokenUsage) {
        self.usage.add(&self.gateway.priced(usage));
    }
}

use super::listen::Body;

/// Answers one request.
pub(super) async fn handle(state: Arc<RelayState>, request: Request<Incoming>) -> Response<Body> {
    let Admitted {
        route,
        parts,
        body,
        wait,
    } = match admit(&state, request).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let started = Instant::now();
    let forwarded = upstream::send(&state.gateway, &parts, &route, body).await;
    let forwarded = match forwarded {
        Ok(forwarded) => forwarded,
        Err(reason) => return upstream_failed(&state, &parts, &route, &reason),
    };
    note_answer(&state, &parts, &route, &forwarded, started);
    relay_response(state, route.endpoint, forwarded, wait)
}

/// A request the relay forwards: its route, head and body, and (for a model call) the
/// model-wait clock that runs until its answer's body is done.
struct Admitted {
    route: Route,
    parts: Parts,
    body: Bytes,
    wait: Option<ModelWait>,
}

/// `request` admitted (token, route, body size, the attempt's limits), or the answer that
/// refuses it.
async fn admit(state: &RelayState, request: Request<Incoming>) -> Result<Admitted, Response<Body>> {
    let route = Route::of(request.uri());
    let endpoint = route.as_ref().map_or(Endpoint::Other, |r| r.endpoint);
    if !authorized(&state.token, request.headers()) {
        tracing::warn!(
            target: "agentcompass::model",
            task = %state.label,
            "model endpoint: refused {} {} (wrong or missing token)",
            request.method(),
            request.uri().path()
        );
        return Err(error(
            endpoint,
            StatusCode::UNAUTHORIZED,
            "invalid token for the model endpoint of this environment",
        ));
    }
    let Some(route) = route else {
        return Err(error(endpoint, StatusCode::NOT_FOUND, "no such endpoint"));
    };
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(error(
                endpoint,
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large or interrupted",
            ))
        }
    };
    // Model calls count against the attempt's limits; other calls (model lists) do not.
    let wait = if route.endpoint == Endpoint::Other {
        None
    } else {
        match state.usage.admit() {
            Ok(wait) => Some(wait),
            Err(breach) => {
                tracing::info!(
                    target: "agentcompass::model",
                    task = %state.label,
                    "model endpoint: {LIMIT_REFUSAL}: {}",
                    breach.message
                );
                return Err(error(
                    endpoint,
                    StatusCode::BAD_REQUEST,
                    &format!("{LIMIT_REFUSAL}: {}", breach.message),
                ));
            }
        }
    };
    Ok(Admitted {
        route,
        parts,
        body,
        wait,
    })
}

/// The answer to a request the gateway could not forward (logged, and kept as the last
/// failure).
fn upstream_failed(
    state: &RelayState,
    parts: &Parts,
    route: &Route,
    reason: &str,
) -> Response<Body> {
    tracing::warn!(
        target: "agentcompass::model",
        task = %state.label,
        "model endpoint: {} {}: {reason}",
        parts.method,
        route.rest
    );
    state.set_last_failure(Some(super::RelayFailure {
        message: format!("{} {}: {reason}", parts.method, route.rest),
        rate_limited: false,
    }));
    error(route.endpoint, StatusCode::BAD_GATEWAY, reason)
}

/// Records the upstream's answer `status` to a forwarded request: the last failure of a
/// model call (cleared by a success), and a debug line with the time it took.
fn note_answer(
    state: &RelayState,
    parts: &Parts,
    route: &Route,
    forwarded: &upstream::Forwarded,
    started: Instant,
) {
    let status = forwarded.response.status();
    if route.endpoint != Endpoint::Other {
        let failure = match &forwarded.gave_up {
            Some(reason) => Some(super::RelayFailure {
                message: format!("{} {}: {reason}", parts.method, route.rest),
                rate_limited: true,
            }),
            None => (!status.is_success()).then(|| super::RelayFailure {
                message: format!(
                    "{} {}: answered {} (after the gateway's {} retries)",
                    parts.method,
                    route.rest,
                    status.as_u16(),
                    state.gateway.settings.max_retries
                ),
                rate_limited: false,
            }),
        };
        state.set_last_failure(failure);
    }
    tracing::debug!(
        target: "agentcompass::model",
        task = %state.label,
        "model endpoint: {} {} -> {} in {} ms",
        parts.method,
        route.rest,
        status.as_u16(),
        started.elapsed().as_millis()
    );
}

/// The upstream's `response` streamed back (connection-level headers left out), its usage
/// metered when it succeeded; `wait` runs, and the limit's slot is held, until the body is
/// done.
fn relay_response(
    state: Arc<RelayState>,
    endpoint: Endpoint,
    forwarded: upstream::Forwarded,
    wait: Option<ModelWait>,
) -> Response<Body> {
    let upstream::Forwarded {
        response, permit, ..
    } = forwarded;
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut builder = Response::builder().status(status.as_u16());
    for (name, value) in response.headers() {
        if !upstream::is_connection_level(name.as_str()) {
            builder = builder.header(name.as_str(), value.as_bytes());
        }
    }
    let tap = status
        .is_success()
        .then(|| UsageTap::new(endpoint, &content_type));
    let stream = Metered {
        inner: Box::pin(response.bytes_stream()),
        tap,
        state,
        _wait: wait,
        _permit: permit,
    };
    let body = StreamBody::new(stream).boxed_unsync();
    builder
        .body(body)
        .unwrap_or_else(|_| error(endpoint, StatusCode::BAD_GATEWAY, "bad upstream headers"))
}

/// Whether the request carries the relay's token.
fn authorized(token: &EgressToken, headers: &hyper::HeaderMap) -> bool {
    let presented: Vec<&[u8]> = headers
        .get_all(AUTHORIZATION)
        .iter()
        .filter_map(|v| {
            let v = v.as_bytes();
            let scheme = v.get(..7)?;
            scheme
                .eq_ignore_ascii_case(b"bearer ")
                .then(|| v[7..].trim_ascii())
        })
        .chain(
            ["x-api-key", "api-key"]
                .into_iter()
                .flat_map(|name| headers.get_all(name).iter().map(HeaderValue::as_bytes)),
        )
        .collect();
    !presented.is_empty() && presented.iter().all(|p| token.matches(p))
}

/// An error answer in the shape of the endpoint's protocol.
fn error(endpoint: Endpoint, status: StatusCode, message: &str) -> Response<Body> {
    let message = format!("agentcompass model endpoint: {message}");
    let body = match endpoint {
        Endpoint::Messages => serde_json::json!({
            "type": "error",
            "error": {"type": anthropic_error_type(status), "message": message},
        }),
        _ => serde_json::json!({
            "error": {"message": message, "type": openai_error_type(status), "code": null},
        }),
    };
    let body = Full::new(Bytes::from(body.to_string()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn anthropic_error_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::NOT_FOUND => "not_found_error",
        StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
        _ => "api_error",
    }
}

fn openai_error_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "invalid_request_error",
        StatusCode::NOT_FOUND | StatusCode::PAYLOAD_TOO_LARGE => "invalid_request_error",
        _ => "api_error",
    }
}

/// The upstream body as response frames, metered as it passes; the usage is recorded when
/// the body ends, fails or is dropped (a client that hung up mid-stream).
struct Metered {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    tap: Option<UsageTap>,
    state: Arc<RelayState>,
    /// The model-wait clock of this call runs until the body is done.
    _wait: Option<ModelWait>,
    /// The call's slot of the endpoint's limit, freed when the body is done.
    _permit: Option<crate::limit::Permit>,
}

impl Metered {
    fn finish(&mut self) {
        if let Some(usage) = self.tap.take().and_then(UsageTap::finish) {
            self.state.record(usage);
        }
    }
}

impl Stream for Metered {
    type Item = Result<Frame<Bytes>, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(tap) = &mut self.tap {
                    tap.feed(&chunk);
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            Poll::Ready(Some(Err(e))) => {
                self.finish();
                Poll::Ready(Some(Err(std::io::Error::other(
                    agentcompass_redact::scrub_text(&e.to_string()),
                ))))
            }
            Poll::Ready(None) => {
                self.finish();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.finish();
    }
}
