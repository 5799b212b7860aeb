//! Forwarding one relayed request to the gateway's endpoint: where it goes, which headers
//! travel, the real key, and the gateway's retries.

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::Uri;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

use super::usage_tap::Endpoint;
use agentcompass_egress::headers::is_hop_by_hop;

use crate::limit::Permit;
use crate::rate_wait::{RateLimitWait, Verdict};
use crate::{
    connection_error, is_rate_limit, is_retryable, retry_after, settings, ModelGateway, Protocol,
};

/// Headers of a request that never travel on besides the hop-by-hop ones: the target's own
/// host and framing, and credentials (the relay sets the real key itself).
const REPLACED: [&str; 5] = [
    "host",
    "content-length",
    "authorization",
    "x-api-key",
    "api-key",
];

/// Whether a request header stays behind (connection-level, framing or a credential).
fn is_dropped(name: &str) -> bool {
    is_hop_by_hop(name) || REPLACED.contains(&name)
}

/// Whether a response header is connection-level (the relay's own connection decides them).
pub(super) fn is_connection_level(name: &str) -> bool {
    is_hop_by_hop(name) || matches!(name, "host" | "content-length")
}

/// Where a request goes, relative to the API root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Route {
    /// The path under the API root (`/chat/completions`), the `/v1` prefix removed.
    pub(super) rest: String,
    /// The query string, if any.
    query: Option<String>,
    /// The endpoint it names.
    pub(super) endpoint: Endpoint,
}

impl Route {
    /// The route of a request URI: `/v1/REST` or `/REST` (for a client whose base URL has no
    /// `/v1`); `None` for the bare root.
    pub(super) fn of(uri: &Uri) -> Option<Route> {
        let path = uri.path();
        let rest = match path.strip_prefix("/v1") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => path,
        };
        if rest.trim_matches('/').is_empty() {
            return None;
        }
        Some(Route {
            rest: rest.to_string(),
            query: uri.query().map(str::to_string),
            endpoint: Endpoint::of(rest),
        })
    }
}

/// The API root of the gateway's endpoint, to which a route's `rest` is appended: the base
/// URL an OpenAI client is given (it ends in `/v1` for OpenAI itself), and for an Anthropic
/// base URL the `/v1` below it (as `Protocol::url` builds `/v1/messages`).
pub(crate) fn api_root(gateway: &ModelGateway) -> String {
    let base = if gateway.base_url.trim().is_empty() {
        gateway.protocol.default_base_url()
    } else {
        gateway.base_url.trim()
    }
    .trim_end_matches('/');
    match gateway.protocol {
        Protocol::Anthropic if !base.ends_with("/v1") => format!("{base}/v1"),
        _ => base.to_string(),
    }
}

/// The upstream URL of `route`.
fn url(gateway: &ModelGateway, route: &Route) -> String {
    let mut url = api_root(gateway) + &route.rest;
    if let Some(query) = &route.query {
        url.push('?');
        url.push_str(query);
    }
    url
}

/// The client's headers without hop-by-hop and credential headers, with the real key in the
/// style of the API called — `x-api-key` for Anthropic's Messages API (`/messages`, and
/// `/messages/count_tokens`), `Authorization: Bearer` for everything else, as the gateway
/// sends it — whatever the client used for the placeholder (the Anthropic SDK sends its key
/// as a bearer token), and an `anthropic-version` for a Messages call that has none.
fn headers(gateway: &ModelGateway, incoming: &hyper::HeaderMap, route: &Route) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in incoming {
        if !is_dropped(name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    let anthropic_style = route.rest.starts_with("/messages");
    if !gateway.api_key.is_empty() {
        let (name, value) = if anthropic_style {
            (
                HeaderName::from_static("x-api-key"),
                gateway.api_key.clone(),
            )
        } else {
            (AUTHORIZATION, format!("Bearer {}", gateway.api_key))
        };
        if let Ok(mut value) = HeaderValue::from_str(&value) {
            value.set_sensitive(true);
            headers.insert(name, value);
        }
    }
    if route.endpoint == Endpoint::Messages && !headers.contains_key("anthropic-version") {
        headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    }
    headers
}

/// A forwarded request's answer, its body still to be read.
pub(super) struct Forwarded {
    /// The upstream's response.
    pub(super) response: reqwest::Response,
    /// The model call's slot of the endpoint's limit, held until the body is done.
    pub(super) permit: Option<Permit>,
    /// Set when the response is a rate-limit answer the call stopped waiting on.
    pub(super) gave_up: Option<String>,
}

/// Sends the request and returns the response whose body is still to be read. A model call
/// takes a slot of the endpoint's adaptive limit (`model.generate` shares it) and waits out
/// rate-limit answers (429, 529) as `model.generate` does, without using up `max_retries`,
/// until `max_rate_limit_wait_seconds`; then the last one is returned as it is. Connection
/// failures and other retryable statuses are retried up to `max_retries` with the gateway's
/// backoff and `Retry-After`; after the last retry a retryable status is returned as it is.
/// The error is one line without the key.
pub(super) async fn send(
    gateway: &ModelGateway,
    parts: &Parts,
    route: &Route,
    body: Bytes,
) -> Result<Forwarded, String> {
    let url = url(gateway, route);
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .map_err(|_| format!("unsupported method {}", parts.method))?;
    let headers = headers(gateway, &parts.headers, route);
    let limited_call = route.endpoint != Endpoint::Other;
    let mut limited = RateLimitWait::default();
    let mut attempt = 0u32;
    loop {
        let permit = match limited_call {
            true => Some(gateway.admit().await),
            false => None,
        };
        attempt += 1;
        let sent = gateway
            .client
            .request(method.clone(), &url)
            .headers(headers.clone())
            .body(body.clone())
            .send();
        let answer = tokio::time::timeout(gateway.settings.timeout, sent).await;
        let (reason, retry_after) = match answer {
            Ok(Ok(response)) => {
                let status = response.status();
                // By status only: the body streams on to the client unread.
                if let (Some(permit), true) = (&permit, is_rate_limit(status, b"")) {
                    attempt -= 1;
                    let reason = format!("answered {}", status.as_u16());
                    let wait = retry_after(response.headers());
                    match limited.answered(permit, &gateway.settings, reason, wait) {
                        Verdict::SendAgain => continue,
                        Verdict::GiveUp => {
                            let gave_up = limited.give_up(&url).to_string();
                            return Ok(Forwarded {
                                response,
                                permit: None,
                                gave_up: Some(gave_up),
                            });
                        }
                    }
                }
                if !is_retryable(status) || attempt > gateway.settings.max_retries {
                    if let Some(permit) = &permit {
                        if status.is_success() {
                            permit.succeeded();
                        }
                    }
                    return Ok(Forwarded {
                        response,
                        permit,
                        gave_up: None,
                    });
                }
                (
                    format!("answered {}", status.as_u16()),
                    retry_after(response.headers()),
                )
            }
            Ok(Err(e)) => (connection_error(&e), None),
            Err(_) => (
                format!(
                    "no answer within {:.0} s",
                    gateway.settings.timeout.as_secs_f64()
                ),
                None,
            ),
        };
        drop(permit);
        if attempt > gateway.settings.max_retries {
            return Err(format!(
                "{url}: {reason} (gave up after {})",
                crate::attempts_text(attempt)
            ));
        }
        let delay = retry_after
            .unwrap_or_else(|| gateway.settings.backoff(attempt))
            .min(settings::MAX_BACKOFF);
        tracing::warn!(
            target: "agentcompass::model",
            "model endpoint {url}: {reason}; retry {attempt} of {} in {:.1} s",
            gateway.settings.max_retries,
            delay.as_secs_f64()
        );
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(uri: &str) -> Option<Route> {
        Route::of(&uri.parse::<Uri>().unwrap())
    }

    #[test]
    fn routes_drop_the_v1_prefix_and_keep_the_query() {
        let chat = route("/v1/chat/completions").unwrap();
        assert_eq!(
            (chat.rest.as_str(), chat.endpoint),
            ("/chat/completions", Endpoint::Chat)
        );
        let messages = route("/messages?beta=true").unwrap();
        assert_eq!(messages.rest, "/messages");
        assert_eq!(messages.query.as_deref(), Some("beta=true"));
        assert_eq!(messages.endpoint, Endpoint::Messages);
        assert_eq!(route("/v1models").unwrap().rest, "/v1models");
        assert_eq!(route("/v1"), None);
        assert_eq!(route("/"), None);
    }
}
