//! Gateway behaviour against a canned HTTP responder on loopback.

use std::sync::atomic::{AtomicUsize, Ordering};

use agentcompass_plugin_api::contracts::{ApiProtocolSpec, Message};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// Serves `replies` (status, body) in order, one per connection, repeating the last; returns
/// the base URL and a counter of requests seen. Each request's head is checked for the key.
async fn responder(replies: Vec<(u16, String)>, key: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let (status, body) = replies[n.min(replies.len() - 1)].clone();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            assert!(head.contains(&format!("bearer {key}")), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let mut request_body = vec![0u8; length];
            let _ = stream.read_exact(&mut request_body).await;
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nretry-after: 0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), seen)
}

fn spec(base_url: &str, params: serde_json::Value) -> ModelSpec {
    ModelSpec {
        id: "m".into(),
        base_url: base_url.into(),
        api_key: "sk-test-KEY".into(),
        api_protocol: ApiProtocolSpec::One("openai-chat".into()),
        params: params.as_object().cloned().unwrap_or_default(),
        wrap_api_key: false,
    }
}

fn ok_body() -> String {
    json!({"model": "m", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 12, "completion_tokens": 1}})
    .to_string()
}

fn ask() -> ModelRequest {
    ModelRequest::new(vec![Message::new("user", "2+2?")])
}

#[tokio::test]
async fn a_429_is_retried_then_succeeds_with_priced_usage() {
    let (base, seen) = responder(vec![(429, "{}".into()), (200, ok_body())], "sk-test-key").await;
    let gateway = Arc::new(
        ModelGateway::new(&spec(
            &base,
            json!({"pricing": {"input": 1.0, "output": 2.0}}),
        ))
        .unwrap(),
    );
    let answer = gateway.generate(ask()).await.unwrap();
    assert_eq!(answer.content, "4");
    assert_eq!(answer.retries, 1);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert_eq!(answer.usage.prompt_tokens, 12);
    assert!((answer.usage.cost_usd.unwrap() - 14e-6).abs() < 1e-12);
}

#[tokio::test]
async fn a_persistent_500_gives_up_after_the_retries_without_the_key() {
    let (base, seen) = responder(vec![(500, "{\"error\": \"boom\"}".into())], "sk-test-key").await;
    let gateway = Arc::new(
        ModelGateway::new(&spec(
            &base,
            json!({"max_retries": 2, "retry_backoff_seconds": 0}),
        ))
        .unwrap(),
    );
    let err = gateway.generate(ask()).await.unwrap_err();
    assert!(err.is_transient());
    let text = err.to_string();
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert!(text.contains(&format!("{base}/chat/completions")), "{text}");
    assert!(
        text.contains("500") && text.contains("3 attempts"),
        "{text}"
    );
    assert!(!text.contains("sk-test-KEY"), "{text}");
}

#[tokio::test]
async fn malformed_json_and_client_errors_are_not_retried() {
    let (base, seen) = responder(vec![(200, "not json {".into())], "sk-test-key").await;
    let gateway = Arc::new(ModelGateway::new(&spec(&base, json!({}))).unwrap());
    let err = gateway.generate(ask()).await.unwrap_err().to_string();
    assert!(err.contains("malformed openai-chat response"), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);

    let (base, seen) = responder(vec![(400, "{\"error\": \"bad\"}".into())], "sk-test-key").await;
    let gateway = Arc::new(ModelGateway::new(&spec(&base, json!({}))).unwrap());
    let err = gateway.generate(ask()).await.unwrap_err().to_string();
    assert!(err.contains("answered 400"), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let gateway = Arc::new(
        ModelGateway::new(&spec(
            &format!("http://127.0.0.1:{port}/v1"),
            json!({"max_retries": 1, "retry_backoff_seconds": 0}),
        ))
        .unwrap(),
    );
    let err = gateway.generate(ask()).await.unwrap_err().to_string();
    assert!(
        err.contains("cannot connect") && err.contains("2 attempts"),
        "{err}"
    );
}

#[test]
fn protocol_choice_and_urls() {
    let mut model = ModelSpec::new("m");
    assert_eq!(Protocol::choose(&model).unwrap(), Protocol::OpenAiChat);
    model.base_url = "https://api.anthropic.com".into();
    assert_eq!(Protocol::choose(&model).unwrap(), Protocol::Anthropic);
    model.api_protocol = ApiProtocolSpec::One("openai-responses".into());
    assert_eq!(Protocol::choose(&model).unwrap(), Protocol::OpenAiResponses);
    model.api_protocol = ApiProtocolSpec::One("grpc".into());
    assert!(Protocol::choose(&model)
        .unwrap_err()
        .to_string()
        .contains("grpc"));
    assert_eq!(
        Protocol::Anthropic.url("http://h/v1/"),
        "http://h/v1/messages"
    );
    assert_eq!(Protocol::Anthropic.url("http://h"), "http://h/v1/messages");
    assert_eq!(
        Protocol::OpenAiChat.url(""),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(
        Protocol::OpenAiResponses.url("http://h/v1"),
        "http://h/v1/responses"
    );
}
