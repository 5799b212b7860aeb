//! What the in-environment model endpoint costs, on loopback (run with
//! `bench/relay_overhead.sh`, release):
//!
//! 1. Latency: N sequential chat-completion `POST`s to a hyper upstream on 127.0.0.1 — direct,
//!    and through a `ModelRelay` (token check, the real key added, the response streamed back
//!    and metered) — each on a new connection, as an agent CLI's first call is.
//! 2. Footprint: P relays (one per concurrent attempt), idle and then with one call each
//!    finished: host RSS and descriptors.

// A measuring program: any failure is a crash with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentcompass_gateway::{ModelGateway, ModelRelay, UsageMeter};
use agentcompass_plugin_api::contracts::ModelSpec;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

const ANSWER: &str = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#;
const BODY: &str = r#"{"model":"m","messages":[{"role":"user","content":"hello"}]}"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let relays: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let upstream = upstream().await;
        let gateway = gateway(upstream);
        latency(n, upstream, &gateway).await;
        footprint(relays, &gateway).await;
    });
}

async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_req: Request<Incoming>| async {
                    let mut response =
                        Response::new(Full::new(Bytes::from_static(ANSWER.as_bytes())));
                    response
                        .headers_mut()
                        .insert("content-type", "application/json".parse().unwrap());
                    Ok::<_, std::convert::Infallible>(response)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn gateway(upstream: SocketAddr) -> Arc<ModelGateway> {
    let spec: ModelSpec = serde_json::from_value(serde_json::json!({
        "id": "m",
        "base_url": format!("http://{upstream}/v1"),
        "api_key": "sk-bench-real-key",
        "api_protocol": "openai-chat",
    }))
    .unwrap();
    Arc::new(ModelGateway::new(&spec).unwrap())
}

/// One call on a fresh connection; returns its duration.
async fn call(url: &str, token: &str) -> Duration {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let started = Instant::now();
    let answer = client
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let _ = answer.bytes().await.unwrap();
    started.elapsed()
}

fn us(d: Duration) -> String {
    format!("{:7.1} µs", d.as_secs_f64() * 1e6)
}

async fn series(n: usize, url: &str, token: &str) -> (Duration, Duration) {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(call(url, token).await);
    }
    samples.sort();
    (samples[n / 2], samples[n * 99 / 100])
}

async fn latency(n: usize, upstream: SocketAddr, gateway: &Arc<ModelGateway>) {
    let usage = Arc::new(UsageMeter::new());
    let relay = ModelRelay::start(gateway.clone(), usage.clone(), "bench")
        .await
        .unwrap();
    let endpoint = relay.endpoint();
    let direct = format!("http://{upstream}/v1/chat/completions");
    let relayed = format!("{}/chat/completions", endpoint.base_url);
    // Warm both paths.
    series(20, &direct, "sk-bench-real-key").await;
    series(20, &relayed, &endpoint.api_key).await;
    let (d50, d99) = series(n, &direct, "sk-bench-real-key").await;
    let (r50, r99) = series(n, &relayed, &endpoint.api_key).await;
    println!("latency of one chat call on a new connection ({n} sequential):");
    println!("  direct:        p50 {} p99 {}", us(d50), us(d99));
    println!(
        "  via the relay: p50 {} p99 {}  (+{} at p50)",
        us(r50),
        us(r99),
        us(r50.saturating_sub(d50))
    );
    println!(
        "  metered: {} requests, {} prompt tokens",
        usage.total().requests,
        usage.total().prompt_tokens
    );
}

fn rss_kib_and_fds() -> (u64, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
    (rss, fds)
}

async fn footprint(count: usize, gateway: &Arc<ModelGateway>) {
    let (rss0, fds0) = rss_kib_and_fds();
    let mut relays = Vec::with_capacity(count);
    for n in 0..count {
        let usage = Arc::new(UsageMeter::new());
        relays.push(
            ModelRelay::start(gateway.clone(), usage, &format!("t{n}"))
                .await
                .unwrap(),
        );
    }
    let (rss1, fds1) = rss_kib_and_fds();
    for relay in &relays {
        let endpoint = relay.endpoint();
        call(
            &format!("{}/chat/completions", endpoint.base_url),
            &endpoint.api_key,
        )
        .await;
    }
    let (rss2, fds2) = rss_kib_and_fds();
    println!("footprint of {count} relays (one per concurrent attempt):");
    println!("  before:              RSS {rss0:6} KiB, {fds0:4} fds");
    println!(
        "  {count} relays, idle:   RSS {rss1:6} KiB, {fds1:4} fds (+{} KiB, +{})",
        rss1 - rss0,
        fds1 - fds0
    );
    println!(
        "  after one call each: RSS {rss2:6} KiB, {fds2:4} fds (+{} KiB, +{})",
        rss2 - rss0,
        fds2 - fds0
    );
    drop(relays);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (rss3, fds3) = rss_kib_and_fds();
    println!("  all dropped:         RSS {rss3:6} KiB, {fds3:4} fds");
}
