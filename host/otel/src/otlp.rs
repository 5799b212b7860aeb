//! Sending spans over OTLP/HTTP (protobuf) with `opentelemetry-otlp`, through the
//! workspace's `reqwest` (rustls) on a private current-thread tokio runtime, so callers stay
//! synchronous and every failure comes back to them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
use opentelemetry_sdk::Resource;

use crate::spans::SCOPE_NAME;
use crate::OtelError;

/// Spans per request.
const BATCH: usize = 512;

/// The traces endpoint: `flag` (a full URL), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it
/// is, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; `None` when none is set.
pub fn resolve_endpoint(flag: Option<&str>) -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if let Some(flag) = flag.filter(|f| !f.trim().is_empty()) {
        return Some(flag.trim().to_string());
    }
    if let Some(traces) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(traces.trim().to_string());
    }
    var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .map(|base| format!("{}/v1/traces", base.trim().trim_end_matches('/')))
}

/// An OTLP/HTTP traces exporter to one endpoint (headers from `OTEL_EXPORTER_OTLP_HEADERS`
/// or `OTEL_EXPORTER_OTLP_TRACES_HEADERS`).
#[derive(Debug)]
pub struct Sender {
    endpoint: String,
    runtime: tokio::runtime::Runtime,
    exporter: opentelemetry_otlp::SpanExporter,
    /// The HTTP client's last failure (the exporter reports only "network error").
    last_error: Arc<Mutex<Option<String>>>,
}

impl Sender {
    /// An exporter to `endpoint`, each request given up after `timeout`.
    pub fn new(endpoint: &str, timeout: Duration) -> Result<Sender, OtelError> {
        let fail = |e: String| OtelError::Setup(format!("{endpoint}: {e}"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let last_error = Arc::new(Mutex::new(None));
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(Client {
                client,
                last_error: last_error.clone(),
            })
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(timeout)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(SCOPE_NAME)
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        exporter.set_resource(&resource);
        Ok(Sender {
            endpoint: endpoint.to_string(),
            runtime,
            exporter,
            last_error,
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends `spans` (in requests of at most 512); the first failure ends it.
    pub fn send(&self, mut spans: Vec<SpanData>) -> Result<(), OtelError> {
        while !spans.is_empty() {
            let rest = spans.split_off(spans.len().min(BATCH));
            let batch = std::mem::replace(&mut spans, rest);
            if let Ok(mut last) = self.last_error.lock() {
                last.take();
            }
            if let Err(e) = self.runtime.block_on(self.exporter.export(batch)) {
                let cause = self.last_error.lock().ok().and_then(|mut l| l.take());
                let reason = match cause {
                    Some(cause) => format!("{e} ({cause})"),
                    None => e.to_string(),
                };
                return Err(OtelError::Export {
                    endpoint: self.endpoint.clone(),
                    reason: one_line(&reason),
                });
            }
        }
        Ok(())
    }
}

/// An error with its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `reqwest` (0.12, the workspace's, rustls) as the exporter's HTTP client.
#[derive(Debug)]
struct Client {
    client: reqwest::Client,
    last_error: Arc<Mutex<Option<String>>>,
}

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let sent = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await;
        let answer = match sent {
            Ok(answer) => answer,
            Err(e) => {
                let text = chain(&e.without_url());
                if let Ok(mut last) = self.last_error.lock() {
                    *last = Some(text.clone());
                }
                return Err(HttpError::from(text));
            }
        };
        let status = answer.status();
        let headers = answer.headers().clone();
        let body = answer.bytes().await?;
        let mut out = http::Response::builder().status(status).body(body)?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}
