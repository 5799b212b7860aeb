//! The tool relay: an attempt's MCP servers on the host (an internal tool service on
//! loopback), served inside the environment the way the model endpoint is — on a Unix socket
//! in a private directory (0700) that a provider forwards from `127.0.0.1:PORT` in an
//! isolated environment, and on `127.0.0.1:PORT` of the host — with each server's HTTP
//! headers (its credentials) added by the host, so they never enter the environment.
//!
//! Server `i` is at `http://127.0.0.1:PORT/<token>/<i>`: a request whose path does not start
//! with the attempt's random token is `404` and never forwarded (the loopback port may be
//! reachable by other local processes). The rest of the path and the query follow the
//! server's URL; the method, body and headers pass through (minus hop-by-hop headers,
//! `host`, `content-length` and any header the server's own headers replace); the answer
//! streams back as it comes (server-sent events included). Dropping the relay closes both
//! listeners and every connection.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentcompass_egress::headers::is_hop_by_hop;
use agentcompass_egress::EgressToken;
use agentcompass_plugin_api::contracts::HostEndpoint;
use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

use super::{failed, RelayError};

/// The name of the tool relay among an environment's host endpoints.
pub const TOOLS_ENDPOINT_NAME: &str = "tools";

/// Largest request body forwarded.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// One server behind the relay: its URL and the headers the host adds (resolved values).
#[derive(Clone)]
pub struct ToolRoute {
    /// The server's URL on the host.
    pub url: String,
    /// Its headers, values resolved (secret).
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for ToolRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ToolRoute")
            .field("url", &self.url)
            .field("headers", &names)
            .finish()
    }
}

struct ToolState {
    routes: Vec<ToolRoute>,
    token: EgressToken,
    client: reqwest::Client,
}

/// One attempt's tool relay; serving until dropped.
pub struct ToolRelay {
    dir: tempfile::TempDir,
    port: u16,
    token: EgressToken,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ToolRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRelay")
            .field("socket", &self.socket())
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl ToolRelay {
    /// Starts a relay to `routes`. Must run inside a tokio runtime.
    pub async fn start(routes: Vec<ToolRoute>) -> Result<ToolRelay, RelayError> {
        let super::listen::Listeners {
            dir,
            unix,
            tcp,
            port,
        } = super::listen::bind("agentcompass-tools-").await?;
        let token = EgressToken::random().map_err(failed("cannot make its token"))?;
        // The token opens the servers with the host's credentials: a secret.
        agentcompass_redact::register_secret(token.expose());
        for route in &routes {
            for (_, value) in &route.headers {
                agentcompass_redact::register_secret(value);
            }
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| RelayError {
                what: "cannot make its HTTP client",
                source: std::io::Error::other(e),
            })?;
        let state = Arc::new(ToolState {
            routes,
            token: token.clone(),
            client,
        });
        let server = tokio::spawn(super::listen::serve(state, unix, tcp, handle));
        Ok(ToolRelay {
            dir,
            port,
            token,
            server,
        })
    }

    /// The Unix socket on the host.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join(super::SOCKET_NAME)
    }

    /// What a provider must make reachable inside the environment.
    pub fn host_endpoint(&self) -> HostEndpoint {
        HostEndpoint {
            name: TOOLS_ENDPOINT_NAME.to_string(),
            socket: self.socket().display().to_string(),
            port: self.port,
        }
    }

    /// The URL of route `index` inside the environment.
    pub fn url(&self, index: usize) -> String {
        format!(
            "http://127.0.0.1:{}/{}/{index}",
            self.port,
            self.token.expose()
        )
    }
}

impl Drop for ToolRelay {
    fn drop(&mut self) {
        self.server.abort();
    }
}

use super::listen::Body;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let body = Full::new(Bytes::from(text.to_string()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

/// The route and the upstream URL of a request path `/<token>/<index>[/rest]`.
fn target(state: &ToolState, uri: &hyper::Uri) -> Option<(usize, String)> {
    let path = uri.path().strip_prefix('/')?;
    let rest = path.strip_prefix(state.token.expose())?;
    let rest = rest.strip_prefix('/')?;
    let (index, tail) = rest.split_once('/').map_or((rest, ""), |(i, t)| (i, t));
    let index: usize = index.parse().ok()?;
    let route = state.routes.get(index)?;
    let mut url = route.url.clone();
    if !tail.is_empty() {
        url = format!("{}/{tail}", url.trim_end_matches('/'));
    }
    if let Some(query) = uri.query() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    Some((index, url))
}

async fn handle(state: Arc<ToolState>, request: Request<Incoming>) -> Response<Body> {
    let Some((index, url)) = target(&state, request.uri()) else {
        return plain(StatusCode::NOT_FOUND, "no such tool server\n");
    };
    let route = &state.routes[index];
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "request too large\n"),
    };
    let mut forwarded = state.client.request(parts.method.clone(), &url).body(body);
    for (name, value) in &parts.headers {
        let lower = name.as_str();
        let replaced = route
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(lower));
        if is_hop_by_hop(lower) || matches!(lower, "host" | "content-length") || replaced {
            continue;
        }
        forwarded = forwarded.header(name, value);
    }
    for (name, value) in &route.headers {
        forwarded = forwarded.header(name, value);
    }
    let answer = match forwarded.send().await {
        Ok(answer) => answer,
        Err(e) => {
            let message = agentcompass_redact::scrub_text(&format!(
                "the tool server did not answer: {}\n",
                crate::connection_error(&e)
            ));
            return plain(StatusCode::BAD_GATEWAY, &message);
        }
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !super::upstream::is_connection_level(name.as_str()) {
            response = response.header(name, value);
        }
    }
    let stream = answer
        .bytes_stream()
        .map_ok(Frame::data)
        .map_err(std::io::Error::other);
    let body = BodyExt::boxed_unsync(StreamBody::new(stream));
    response
        .body(body)
        .unwrap_or_else(|_| plain(StatusCode::BAD_GATEWAY, "bad answer\n"))
}

#[cfg(test)]
mod tests;
