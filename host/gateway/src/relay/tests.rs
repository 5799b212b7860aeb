//! The relay against a real HTTP upstream on loopback: tokens, the real key, pass-through of
//! JSON and event streams, metering, retries, and its end.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use agentcompass_plugin_api::contracts::ModelSpec;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::json;

use super::*;

/// What the upstream received.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    api_key: Option<String>,
    body: String,
}

/// One canned answer: status, content type, body.
type Answer = (u16, &'static str, String);

/// A loopback HTTP server answering from a queue (the last answer repeats).
struct Upstream {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn upstream(answers: Vec<Answer>) -> Upstream {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let queue = Arc::new(Mutex::new(VecDeque::from(answers)));
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (seen, queue) = (recorded.clone(), queue.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let (seen, queue) = (seen.clone(), queue.clone());
                    async move {
                        let header = |name: &str| {
                            req.headers()
                                .get(name)
                                .map(|v| v.to_str().unwrap().to_string())
                        };
                        let (authorization, api_key) =
                            (header("authorization"), header("x-api-key"));
                        let path = req.uri().to_string();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        seen.lock().unwrap().push(Seen {
                            path,
                            authorization,
                            api_key,
                            body: String::from_utf8_lossy(&body).into_owned(),
                        });
                        let (status, content_type, body) = {
                            let mut queue = queue.lock().unwrap();
                            if queue.len() > 1 {
                                queue.pop_front().unwrap()
                            } else {
                                queue.front().unwrap().clone()
                            }
                        };
                        let mut response = Response::new(Full::new(Bytes::from(body)));
                        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        response
                            .headers_mut()
                            .insert("content-type", content_type.parse().unwrap());
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Upstream { base, seen }
}

fn gateway(base_url: &str, protocol: &str, params: serde_json::Value) -> Arc<ModelGateway> {
    let spec: ModelSpec = serde_json::from_value(json!({
        "id": "gpt-test",
        "base_url": base_url,
        "api_key": "sk-real-key-0123456789",
        "api_protocol": protocol,
        "params": params,
    }))
    .unwrap();
    Arc::new(ModelGateway::new(&spec).unwrap())
}

async fn relay(gateway: Arc<ModelGateway>) -> (ModelRelay, Arc<UsageMeter>) {
    let usage = Arc::new(UsageMeter::new());
    let relay = ModelRelay::start(gateway, usage.clone(), "task-1")
        .await
        .unwrap();
    (relay, usage)
}

const CHAT_JSON: &str = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#;

#[tokio::test]
async fn a_json_call_reaches_the_upstream_with_the_real_key_and_is_metered() {
    let up = upstream(vec![(200, "application/json", CHAT_JSON.into())]).await;
    let (relay, usage) = relay(gateway(
        &format!("{}/v1", up.base),
        "openai-chat",
        json!({}),
    ))
    .await;
    let endpoint = relay.endpoint();
    assert_eq!(
        endpoint.base_url,
        format!("http://127.0.0.1:{}/v1", relay.host_endpoint().port)
    );
    assert_ne!(endpoint.api_key, "sk-real-key-0123456789");
    let body = r#"{"model":"gpt-test","messages":[{"role":"user","content":"hello"}]}"#;
    let answer = reqwest::Client::new()
        .post(format!("{}/chat/completions?x=1", endpoint.base_url))
        .bearer_auth(&endpoint.api_key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.text().await.unwrap(),
        CHAT_JSON,
        "passed through unchanged"
    );
    let seen = up.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions?x=1");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-real-key-0123456789")
    );
    assert_eq!(seen[0].body, body);
    let total = usage.total();
    assert_eq!(
        (
            total.prompt_tokens,
            total.completion_tokens,
            total.cached_tokens,
            total.requests
        ),
        (12, 3, 4, 1)
    );
    assert!(total.cost_usd.is_none());
}

#[tokio::test]
async fn a_stream_passes_byte_for_byte_over_the_unix_socket_and_is_priced() {
    let events = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":6,\"output_tokens\":1}}}\n\n\
                  event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n\
                  event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n\
                  event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let up = upstream(vec![(200, "text/event-stream", events.into())]).await;
    let pricing = json!({"pricing": {"input": 1.0, "output": 2.0}});
    let (relay, usage) = relay(gateway(&up.base, "anthropic", pricing)).await;
    let token = relay.endpoint().api_key;
    let mut stream = tokio::net::UnixStream::connect(relay.socket())
        .await
        .unwrap();
    let body = r#"{"model":"gpt-test","stream":true,"max_tokens":10,"messages":[]}"#;
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: {token}\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("content-type: text/event-stream"), "{raw}");
    assert!(raw.ends_with(events) || raw.contains(events), "{raw}");
    let seen = up.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].api_key.as_deref(), Some("sk-real-key-0123456789"));
    assert_eq!(seen[0].authorization, None);
    let total = usage.total();
    assert_eq!(
        (total.prompt_tokens, total.completion_tokens, total.requests),
        (6, 9, 1)
    );
    let cost = total.cost_usd.unwrap();
    assert!((cost - (6.0 + 18.0) / 1e6).abs() < 1e-12, "{cost}");
}

#[tokio::test]
async fn the_real_key_goes_in_the_style_of_the_api_called() {
    let up = upstream(vec![(200, "application/json", "{}".into())]).await;
    let (relay, _usage) = relay(gateway(
        &format!("{}/v1", up.base),
        "openai-chat",
        json!({}),
    ))
    .await;
    let endpoint = relay.endpoint();
    let client = reqwest::Client::new();
    // The Anthropic SDK sends its key as a bearer token; Anthropic wants `x-api-key`.
    let messages = client
        .post(format!("{}/messages", endpoint.base_url))
        .bearer_auth(&endpoint.api_key)
        .body("{}");
    // A client that sends `x-api-key` to an OpenAI endpoint: OpenAI wants a bearer token.
    let chat = client
        .post(format!("{}/chat/completions", endpoint.base_url))
        .header("x-api-key", &endpoint.api_key)
        .body("{}");
    for request in [messages, chat] {
        assert_eq!(request.send().await.unwrap().status(), 200);
    }
    let seen = up.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].api_key.as_deref(), Some("sk-real-key-0123456789"));
    assert_eq!(seen[0].authorization, None);
    assert_eq!(seen[1].path, "/v1/chat/completions");
    assert_eq!(
        seen[1].authorization.as_deref(),
        Some("Bearer sk-real-key-0123456789")
    );
    assert_eq!(seen[1].api_key, None);
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_401_and_never_forwarded() {
    let up = upstream(vec![(200, "application/json", CHAT_JSON.into())]).await;
    let (relay, usage) = relay(gateway(
        &format!("{}/v1", up.base),
        "openai-chat",
        json!({}),
    ))
    .await;
    let url = format!("{}/chat/completions", relay.endpoint().base_url);
    let client = reqwest::Client::new();
    let wrong = client
        .post(&url)
        .bearer_auth("sk-real-key-0123456789")
        .body("{}");
    let missing = client.post(&url).body("{}");
    let two = client
        .post(&url)
        .bearer_auth(relay.endpoint().api_key)
        .header("x-api-key", "other")
        .body("{}");
    for request in [wrong, missing, two] {
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        let text = answer.text().await.unwrap();
        assert!(text.contains("invalid token"), "{text}");
    }
    let messages = client
        .post(format!("{}/messages", relay.endpoint().base_url))
        .header("x-api-key", "nope")
        .send()
        .await
        .unwrap();
    let error: serde_json::Value = messages.json().await.unwrap();
    assert_eq!(error["error"]["type"], "authentication_error");
    assert!(up.seen.lock().unwrap().is_empty());
    assert!(usage.total().is_empty());
}

#[tokio::test]
async fn retryable_answers_are_retried_before_the_client_sees_them() {
    let up = upstream(vec![
        (503, "application/json", r#"{"error":"busy"}"#.into()),
        (429, "application/json", r#"{"error":"slow down"}"#.into()),
        (200, "application/json", CHAT_JSON.into()),
    ])
    .await;
    let params = json!({"max_retries": 2, "retry_backoff_seconds": 0.01});
    let (relay, usage) = relay(gateway(&format!("{}/v1", up.base), "openai-chat", params)).await;
    let answer = reqwest::Client::new()
        .post(format!("{}/chat/completions", relay.endpoint().base_url))
        .bearer_auth(relay.endpoint().api_key)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(up.seen.lock().unwrap().len(), 3);
    assert_eq!(usage.total().requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_calls_share_the_endpoint_limit_and_wait_out_rate_limits() {
    // 40 agents' calls at once through the relay to an endpoint that takes 4 (429 beyond):
    // the limit (sized 16 by the run) shrinks, every call is answered 200, none is retried
    // as an error (`max_retries` 0).
    let (base, refused, peak) = crate::tests::limited_server(4, 20).await;
    let spec: ModelSpec = serde_json::from_value(json!({
        "id": "gpt-test", "base_url": base, "api_key": "sk-relay-limit-key",
        "params": {"max_retries": 0},
    }))
    .unwrap();
    let gateway = Arc::new(ModelGateway::new(&spec).unwrap().with_task_concurrency(16));
    let (relay, usage) = relay(gateway.clone()).await;
    let endpoint = relay.endpoint();
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..40)
        .map(|_| {
            let request = client
                .post(format!("{}/chat/completions", endpoint.base_url))
                .bearer_auth(&endpoint.api_key)
                .body(r#"{"model":"gpt-test","messages":[]}"#);
            tokio::spawn(async move { request.send().await.unwrap().status() })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), 200);
    }
    let snapshot = gateway.limit();
    let refused = refused.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "40 relayed calls: {refused} answers 429, limit {} of {}, peak {} at the server",
        snapshot.limit,
        snapshot.max,
        peak.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(snapshot.rate_limited, refused as u64);
    assert!(snapshot.limit < 16, "{snapshot:?}");
    assert_eq!((snapshot.in_flight, snapshot.waiting), (0, 0));
    assert_eq!(usage.total().requests, 40);
    assert_eq!(relay.last_failure(), None);
}

#[tokio::test]
async fn a_call_rate_limited_past_the_wait_is_passed_on_and_named_rate_limited() {
    let up = upstream(vec![(
        429,
        "application/json",
        r#"{"error":{"type":"rate_limit_error"}}"#.into(),
    )])
    .await;
    let params = json!({"max_rate_limit_wait_seconds": 0.2, "retry_backoff_seconds": 0.05});
    let (relay, _usage) = relay(gateway(&format!("{}/v1", up.base), "anthropic", params)).await;
    let answer = reqwest::Client::new()
        .post(format!("{}/messages", relay.endpoint().base_url))
        .bearer_auth(relay.endpoint().api_key)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 429);
    let sent = up.seen.lock().unwrap().len();
    assert!(sent >= 2, "the call waited and was sent again: {sent}");
    let failure = relay.last_failure().unwrap();
    assert!(failure.rate_limited, "{failure:?}");
    assert!(
        failure
            .message
            .starts_with("POST /messages: model endpoint")
            && failure.message.contains("still rate-limited"),
        "{failure:?}"
    );
}

#[tokio::test]
async fn the_endpoint_ends_with_the_relay() {
    let up = upstream(vec![(200, "application/json", CHAT_JSON.into())]).await;
    let (relay, _usage) = relay(gateway(&up.base, "openai-chat", json!({}))).await;
    let (socket, port) = (relay.socket(), relay.host_endpoint().port);
    let dir = relay.socket_dir().to_path_buf();
    assert!(socket.exists());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&dir).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    drop(relay);
    tokio::task::yield_now().await;
    assert!(!dir.exists(), "the socket directory is removed");
    let refused = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
    assert!(refused.is_err(), "the loopback listener is closed");
}
