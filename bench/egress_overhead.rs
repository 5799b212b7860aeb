//! What the egress proxy costs, on loopback (run with `bench/egress_overhead.sh`, release):
//!
//! 1. Latency: N sequential `GET`s to a hyper server on 127.0.0.2 — direct, through the
//!    proxy as absolute-URI requests, and through a `CONNECT` tunnel — each on a new client
//!    connection (as a `curl` per request does), and the same with `curl` itself when it is
//!    installed (its `time_total`, so process start-up is left out).
//! 2. Footprint: P proxies on Unix sockets (as the sandbox will serve them), each with one
//!    open tunnel; the clients and the upstream server run in a child process, so the RSS and
//!    descriptor counts are the proxies' own.

// A measuring program: any failure is a crash with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_egress::{EgressConfig, EgressPolicy, EgressProxy, EgressToken};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

const TOKEN: &str = "bench-token-0123456789";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--clients") {
        return clients(Path::new(&args[2]), args[3].parse().unwrap());
    }
    if args.get(1).map(String::as_str) == Some("--serve") {
        return serve();
    }
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let proxies: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(latency(n));
    runtime.block_on(footprint(proxies, &args[0]));
}

/// `--serve`: an upstream on 127.0.0.2 and a proxy for it on 127.0.0.1, for trying clients
/// by hand; prints `PROXY_URL TARGET_URL` and serves until stdin closes.
fn serve() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let server = upstream().await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let log = agentcompass_egress::EgressLog::new(|e| eprintln!("{e}"));
        let _handle = EgressProxy::serve(listener, config().with_log(log)).unwrap();
        println!("http://agent:{TOKEN}@{proxy} http://{server}/");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
    });
}

fn config() -> EgressConfig {
    EgressConfig::new(
        EgressPolicy::allowlist(["127.0.0.2"]).unwrap(),
        EgressToken::new(TOKEN).unwrap(),
    )
}

async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let service = hyper::service::service_fn(|_req: Request<Incoming>| async {
                Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from_static(b"hello"))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// One `GET` on a new connection to `connect_to`; `uri` absolute when proxied.
async fn one_get(connect_to: SocketAddr, uri: &str, tunnel_to: Option<SocketAddr>) {
    let stream = TcpStream::connect(connect_to).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn.with_upgrades());
    let auth = format!("Bearer {TOKEN}");
    if let Some(target) = tunnel_to {
        let req = Request::connect(target.to_string())
            .header("proxy-authorization", &auth)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(req).await.unwrap();
        assert_eq!(response.status(), 200);
        let upgraded = hyper::upgrade::on(response).await.unwrap();
        let (mut inner, conn) = hyper::client::conn::http1::handshake(upgraded)
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = Request::get("/")
            .header("host", "x")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let body = inner
            .send_request(req)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await;
        assert_eq!(body.unwrap().to_bytes(), "hello");
        return;
    }
    let req = Request::get(uri)
        .header("host", "x")
        .header("proxy-authorization", &auth)
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        "hello"
    );
}

fn median_and_p99(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (
        us(samples[samples.len() / 2]),
        us(samples[samples.len() * 99 / 100]),
    )
}

async fn latency(n: usize) {
    let server = upstream().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    let _handle = EgressProxy::serve(listener, config()).unwrap();
    let absolute = format!("http://{server}/");
    let cases: [(&str, SocketAddr, &str, Option<SocketAddr>); 3] = [
        ("direct", server, "/", None),
        ("proxy, absolute URI", proxy, &absolute, None),
        ("proxy, CONNECT tunnel", proxy, "", Some(server)),
    ];
    println!("latency: {n} sequential GETs, each on a new connection (median / p99)");
    for (name, connect_to, uri, tunnel) in cases {
        for _ in 0..50 {
            one_get(connect_to, uri, tunnel).await;
        }
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            one_get(connect_to, uri, tunnel).await;
            samples.push(started.elapsed());
        }
        let (median, p99) = median_and_p99(samples);
        println!("  {name:<24} {median:8.1} µs / {p99:8.1} µs");
    }
    if Command::new("curl").arg("--version").output().is_ok() {
        let proxy_url = format!("http://agent:{TOKEN}@{proxy}");
        let runs = (n / 5).max(20);
        let curl_cases: [(&str, Vec<&str>); 3] = [
            ("curl direct", vec!["--noproxy", "*"]),
            ("curl --proxy", vec!["--proxy", &proxy_url]),
            (
                "curl --proxytunnel",
                vec!["--proxy", &proxy_url, "--proxytunnel"],
            ),
        ];
        println!("curl: {runs} runs each, time_total (median / p99)");
        for (name, flags) in curl_cases {
            let samples: Vec<Duration> = (0..runs)
                .map(|_| {
                    let out = Command::new("curl")
                        .args(["-s", "-o", "/dev/null", "-w", "%{time_total} %{http_code}"])
                        .args(&flags)
                        .arg(&absolute)
                        .output()
                        .unwrap();
                    let text = String::from_utf8(out.stdout).unwrap();
                    let (secs, code) = text.split_once(' ').unwrap();
                    assert_eq!(code, "200", "{name}");
                    Duration::from_secs_f64(secs.parse().unwrap())
                })
                .collect();
            let (median, p99) = median_and_p99(samples);
            println!("  {name:<24} {median:8.1} µs / {p99:8.1} µs");
        }
    }
}

fn rss_kib_and_fds() -> (u64, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
    (rss, fds)
}

async fn footprint(proxies: usize, me: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (rss0, fds0) = rss_kib_and_fds();
    let mut handles = Vec::new();
    for i in 0..proxies {
        let listener = UnixListener::bind(dir.path().join(format!("p{i}.sock"))).unwrap();
        handles.push(EgressProxy::serve(listener, config()).unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss1, fds1) = rss_kib_and_fds();
    let mut child = Command::new(me)
        .args([
            "--clients",
            &dir.path().display().to_string(),
            &proxies.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    let stdout = child.stdout.take().unwrap();
    tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).read_line(&mut ready).map(|_| ready)
    })
    .await
    .unwrap()
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss2, fds2) = rss_kib_and_fds();
    let open: usize = handles.iter().map(|h| h.connections()).sum();
    println!("footprint: {proxies} proxies on Unix sockets (the clients and upstream in a child)");
    println!("  before:                    RSS {rss0:6} KiB, {fds0:4} fds");
    println!(
        "  {proxies} proxies, idle:        RSS {rss1:6} KiB, {fds1:4} fds (+{} KiB, +{})",
        rss1 - rss0,
        fds1 - fds0
    );
    println!(
        "  one open tunnel each:      RSS {rss2:6} KiB, {fds2:4} fds (+{} KiB, +{}; {open} connections)",
        rss2 - rss0,
        fds2 - fds0
    );
    child.stdin.take().unwrap().write_all(b"done\n").unwrap();
    child.wait().unwrap();
    drop(handles);
}

/// The child: an upstream server on 127.0.0.2, one tunnel through every proxy socket of
/// `dir` (a request through each), then "ready" and wait for stdin.
fn clients(dir: &Path, proxies: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = upstream().await;
        let mut tunnels = Vec::new();
        for i in 0..proxies {
            let path: PathBuf = dir.join(format!("p{i}.sock"));
            let mut stream = UnixStream::connect(&path).await.unwrap();
            let request = format!(
                "CONNECT {server} HTTP/1.1\r\nProxy-Authorization: Bearer {TOKEN}\r\n\r\n\
                 GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut seen = Vec::new();
            while !seen.ends_with(b"hello") {
                let mut buf = [0u8; 512];
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "tunnel {i} closed");
                seen.extend_from_slice(&buf[..n]);
            }
            tunnels.push(stream);
        }
        println!("ready");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        drop(tunnels);
    });
}
