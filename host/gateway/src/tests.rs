//! Gateway behaviour against a canned HTTP responder on loopback.

use std::sync::atomic::{AtomicUsize, Ordering};

use agentcompass_plugin_api::contracts::{ApiProtocolSpec, Message};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// Reads one request from `stream` (its body too) and returns its head, lowercased.
async fn read_request(stream: &mut tokio::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body).await;
    head
}

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
            let head = read_request(&mut stream).await;
            assert!(head.contains(&format!("bearer {key}")), "{head}");
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

/// Serves every connection at once, but answers 429 (`Retry-After: 0`) to a request that
/// finds `max` others in flight; successful answers take `hold_ms`. Returns the base URL,
/// the number of 429s sent and the most requests it saw in flight at once.
pub(crate) async fn limited_server(
    max: usize,
    hold_ms: u64,
) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (refused, peak, in_flight) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (refused2, peak2) = (refused.clone(), peak.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (refused, peak, in_flight) = (refused2.clone(), peak2.clone(), in_flight.clone());
            tokio::spawn(async move {
                read_request(&mut stream).await;
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                let (status, body) = if now > max {
                    refused.fetch_add(1, Ordering::SeqCst);
                    (
                        429,
                        json!({"error": {"type": "rate_limit_exceeded"}}).to_string(),
                    )
                } else {
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(hold_ms)).await;
                    (200, ok_body())
                };
                in_flight.fetch_sub(1, Ordering::SeqCst);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nretry-after: 0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), refused, peak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_shrink_the_endpoint_limit_and_lose_no_call() {
    // 64 calls at once against an endpoint that takes 4: the limit starts at 32, halves on
    // the 429s (once per burst) and the calls wait their turn instead of failing, whatever
    // `max_retries` says.
    let (base, refused, peak) = limited_server(4, 20).await;
    let gateway = Arc::new(
        ModelGateway::new(&spec(&base, json!({"max_retries": 0})))
            .unwrap()
            .with_task_concurrency(32),
    );
    let calls: Vec<_> = (0..64)
        .map(|_| {
            let gateway = gateway.clone();
            tokio::spawn(async move { gateway.generate(ask()).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().content, "4");
    }
    let refused = refused.load(Ordering::SeqCst);
    let snapshot = gateway.limit();
    eprintln!(
        "64 calls: {refused} answers 429, limit {} of {}, peak {} in flight at the server",
        snapshot.limit,
        snapshot.max,
        peak.load(Ordering::SeqCst)
    );
    assert_eq!(snapshot.rate_limited, refused as u64);
    assert!(snapshot.limit < 32, "{snapshot:?}");
    assert!(refused < 64, "fewer 429s than calls: {refused}");
    assert_eq!((snapshot.in_flight, snapshot.waiting), (0, 0));
}

#[test]
fn the_run_sizes_the_limit_unless_max_connections_does() {
    let spec = |params| spec("http://127.0.0.1:9/v1", params);
    let sized = ModelGateway::new(&spec(json!({})))
        .unwrap()
        .with_task_concurrency(3);
    assert_eq!(sized.limit().max, 3);
    let fixed = ModelGateway::new(&spec(json!({"max_connections": 7})))
        .unwrap()
        .with_task_concurrency(3);
    assert_eq!(fixed.limit().max, 7);
}

#[test]
fn rate_limits_are_told_apart_and_retry_after_is_read_in_both_forms() {
    assert!(is_rate_limit(StatusCode::TOO_MANY_REQUESTS, b""));
    assert!(is_rate_limit(StatusCode::from_u16(529).unwrap(), b""));
    let anthropic = br#"{"type": "error", "error": {"type": "rate_limit_error"}}"#;
    assert!(is_rate_limit(StatusCode::BAD_REQUEST, anthropic));
    assert!(!is_rate_limit(
        StatusCode::INTERNAL_SERVER_ERROR,
        b"{\"error\": {}}"
    ));
    let mut headers = HeaderMap::new();
    headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
    headers.insert(
        RETRY_AFTER,
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after(&headers), Some(Duration::ZERO));
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(120);
    let text = jiff::fmt::rfc2822::to_string(&later.to_zoned(jiff::tz::TimeZone::UTC)).unwrap();
    headers.insert(RETRY_AFTER, HeaderValue::from_str(&text).unwrap());
    let left = retry_after(&headers).unwrap().as_secs();
    assert!((100..=120).contains(&left), "{left} from {text}");
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
async fn a_known_model_is_priced_from_the_table_without_pricing_params() {
    let (base, _) = responder(vec![(200, ok_body())], "sk-test-key").await;
    let mut known = spec(&base, json!({}));
    known.id = "gpt-4o".into();
    let gateway = Arc::new(ModelGateway::new(&known).unwrap());
    let answer = gateway.generate(ask()).await.unwrap();
    let price = gateway.price().unwrap();
    let table = PriceTable::pinned().unwrap();
    assert_eq!(price.source, table.source());
    assert_eq!(price.entry.as_deref(), Some("gpt-4o"));
    let found = table.lookup("gpt-4o", &base).unwrap().pricing;
    let expected = (12.0 * found.input + 1.0 * found.output) / 1e6;
    assert!((answer.usage.cost_usd.unwrap() - expected).abs() < 1e-15);
    // An unknown model has no price, hence no cost (not $0).
    let gateway = Arc::new(ModelGateway::new(&spec(&base, json!({}))).unwrap());
    assert!(gateway.price().is_none());
    assert_eq!(gateway.priced(answer.usage).cost_usd, answer.usage.cost_usd);
    let mut unpriced = answer.usage;
    unpriced.cost_usd = None;
    assert_eq!(gateway.priced(unpriced).cost_usd, None);
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
