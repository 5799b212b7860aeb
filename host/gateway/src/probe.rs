//! The endpoint check before a run's first task: the host name resolves, something listens,
//! and — one request that costs nothing — the model listing (`GET {api root}/models`) does not
//! refuse the key. Any other answer (200, 404 from a gateway without a listing, even 5xx)
//! counts as reachable: the run's retries handle a passing failure.

use std::time::Duration;

use reqwest::StatusCode;

use crate::relay::api_root;
use crate::{connection_error, ModelGateway};

/// The `User-Agent` of the check's request, so that an endpoint's operator (and the tests'
/// scripted model server, which leaves it out of its request log) can tell it from the run's
/// model calls.
pub const ENDPOINT_CHECK_USER_AGENT: &str = concat!(
    "agentcompass-host-endpoint-check/",
    env!("CARGO_PKG_VERSION")
);

/// How long the whole check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the endpoint a run would use cannot serve it. Messages name the endpoint by `label`
/// (the URL as written, a `${VAR}` reference rather than its value) and never the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointCheckError {
    /// No connection: nothing listens, the name does not resolve, no answer in time.
    #[error("model endpoint {endpoint}: {reason}")]
    Unreachable {
        /// The endpoint as written.
        endpoint: String,
        /// What failed (scrubbed).
        reason: String,
    },
    /// The endpoint refused the API key.
    #[error("model endpoint {endpoint} refused the API key: {status} on GET {path}")]
    Unauthorized {
        /// The endpoint as written.
        endpoint: String,
        /// 401 or 403.
        status: u16,
        /// The listing's path under the endpoint (`/models`).
        path: String,
    },
}

impl ModelGateway {
    /// Checks the endpoint once (see the module). `label` names it in errors; `check_key`
    /// false skips the key's verdict (a key wrapped per run cannot be shown before the run).
    pub async fn check_endpoint(
        &self,
        label: &str,
        check_key: bool,
    ) -> Result<(), EndpointCheckError> {
        let url = format!("{}/models", api_root(self));
        let mut headers = self.headers();
        headers.remove(reqwest::header::CONTENT_TYPE);
        let sent = self
            .client
            .get(&url)
            .headers(headers)
            .header(reqwest::header::USER_AGENT, ENDPOINT_CHECK_USER_AGENT)
            .timeout(CHECK_TIMEOUT)
            .send()
            .await;
        let response = sent.map_err(|e| EndpointCheckError::Unreachable {
            endpoint: label.to_string(),
            reason: if e.is_timeout() {
                format!("no answer within {} s", CHECK_TIMEOUT.as_secs())
            } else {
                connection_error(&e)
            },
        })?;
        let status = response.status();
        if check_key && matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return Err(EndpointCheckError::Unauthorized {
                endpoint: label.to_string(),
                status: status.as_u16(),
                path: "/models".to_string(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::ModelSpec;
    use std::io::{Read, Write};

    /// A one-shot HTTP server answering `status`; returns its base URL and the request it got.
    fn answer_once(status: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let thread = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap();
            let reply =
                format!("HTTP/1.1 {status}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}");
            stream.write_all(reply.as_bytes()).unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        (url, thread)
    }

    fn gateway(base_url: &str, key: &str) -> ModelGateway {
        let model = ModelSpec {
            id: "m".into(),
            base_url: base_url.to_string(),
            api_key: key.to_string(),
            ..ModelSpec::default()
        };
        ModelGateway::new(&model).unwrap()
    }

    fn check(gateway: &ModelGateway, check_key: bool) -> Result<(), EndpointCheckError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(gateway.check_endpoint("E", check_key))
    }

    #[test]
    fn a_listing_that_answers_passes_and_a_refused_key_does_not() {
        let (url, request) = answer_once("404 Not Found");
        assert_eq!(check(&gateway(&url, "k-secret"), true), Ok(()));
        let request = request.join().unwrap();
        assert!(
            request.starts_with("GET /v1/models HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request
            .to_lowercase()
            .contains("authorization: bearer k-secret"));
        assert!(request.contains(ENDPOINT_CHECK_USER_AGENT), "{request}");

        let (url, _) = answer_once("401 Unauthorized");
        let err = check(&gateway(&url, "k-secret"), true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "model endpoint E refused the API key: 401 on GET /models"
        );
        // A key wrapped per run is not judged before the run.
        let (url, _) = answer_once("401 Unauthorized");
        assert_eq!(check(&gateway(&url, "k-secret"), false), Ok(()));
    }

    #[test]
    fn nothing_listening_is_unreachable() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let err = check(&gateway(&format!("http://127.0.0.1:{port}/v1"), ""), true).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("model endpoint E: cannot connect (") && text.contains("refused"),
            "{text}"
        );
    }
}
