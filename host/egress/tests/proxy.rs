//! The proxy end to end on loopback: upstream servers on 127.0.0.2:P (the allowed one) and
//! 127.0.0.3:P (the other), reached through a proxy on 127.0.0.1 (or a Unix socket) with
//! hyper's client. Linux routes all of 127.0.0.0/8 to `lo`; nothing leaves it.

// The helpers below are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentcompass_egress::{
    EgressConfig, EgressEvent, EgressLog, EgressOutcome, EgressPolicy, EgressProxy, EgressToken,
    HostMap, Limits, ProxyHandle, ServeError,
};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderMap;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

const TOKEN: &str = "session-token-0123456789";
const ALLOWED: &str = "127.0.0.2";
const OTHER: &str = "127.0.0.3";

// ---------------------------------------------------------------------------------------
// Upstream servers

/// What an upstream server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

/// An HTTP/1.1 server on one loopback address: `GET` answers `hello from ADDR`, any request
/// with a body echoes it; every request is recorded.
struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn last(&self) -> Seen {
        self.seen.lock().unwrap().last().cloned().unwrap()
    }
}

async fn upstream_on(listener: TcpListener) -> Upstream {
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let recorded = recorded.clone();
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let recorded = recorded.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let body = body.collect().await?.to_bytes();
                    recorded.lock().unwrap().push(Seen {
                        method: parts.method.clone(),
                        uri: parts.uri.to_string(),
                        headers: parts.headers.clone(),
                        body: body.clone(),
                    });
                    let reply = if body.is_empty() {
                        Bytes::from(format!("hello from {}", addr.ip()))
                    } else {
                        body
                    };
                    let response = Response::builder()
                        .header("connection", "x-upstream-hop")
                        .header("x-upstream-hop", "1")
                        .header("proxy-authenticate", "Basic realm=upstream")
                        .header("x-upstream-kept", "1")
                        .body(Full::new(reply))
                        .unwrap();
                    Ok::<_, hyper::Error>(response)
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .half_close(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Upstream { addr, seen }
}

/// The allowed and the other server, on the same port P.
async fn upstreams() -> (Upstream, Upstream) {
    for _ in 0..50 {
        let a = TcpListener::bind((ALLOWED, 0)).await.unwrap();
        let port = a.local_addr().unwrap().port();
        if let Ok(b) = TcpListener::bind((OTHER, port)).await {
            return (upstream_on(a).await, upstream_on(b).await);
        }
    }
    panic!("no port free on both {ALLOWED} and {OTHER}");
}

// ---------------------------------------------------------------------------------------
// The proxy and its clients

#[derive(Clone)]
enum ProxyAt {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

struct Proxy {
    at: ProxyAt,
    handle: ProxyHandle,
    events: Arc<Mutex<Vec<EgressEvent>>>,
    _dir: Option<tempfile::TempDir>,
}

impl Proxy {
    fn events(&self) -> Vec<EgressEvent> {
        self.events.lock().unwrap().clone()
    }
}

fn config(
    policy: EgressPolicy,
    hosts: &[(&str, &str)],
) -> (EgressConfig, Arc<Mutex<Vec<EgressEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let config = EgressConfig::new(policy, EgressToken::new(TOKEN).unwrap())
        .with_host_map(HostMap::from_pairs(hosts.iter().copied()).unwrap())
        .with_log(EgressLog::new(move |e| {
            sink.lock().unwrap().push(e.clone())
        }));
    (config, events)
}

async fn proxy_with(config: EgressConfig, events: Arc<Mutex<Vec<EgressEvent>>>) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = ProxyAt::Tcp(listener.local_addr().unwrap());
    let handle = EgressProxy::serve(listener, config).unwrap();
    Proxy {
        at,
        handle,
        events,
        _dir: None,
    }
}

async fn proxy(policy: EgressPolicy, hosts: &[(&str, &str)]) -> Proxy {
    let (config, events) = config(policy, hosts);
    proxy_with(config, events).await
}

fn allow(entries: &[&str]) -> EgressPolicy {
    EgressPolicy::allowlist(entries).unwrap()
}

fn deny(entries: &[&str]) -> EgressPolicy {
    EgressPolicy::denylist(entries).unwrap()
}

fn basic(user_pass: &str) -> String {
    format!("Basic {}", STANDARD.encode(user_pass))
}

fn good_auth() -> Option<String> {
    Some(basic(&format!("agent:{TOKEN}")))
}

/// Sends one request over a fresh connection to the proxy.
async fn send(at: &ProxyAt, req: Request<Full<Bytes>>) -> Response<Incoming> {
    match at {
        ProxyAt::Tcp(addr) => send_over(TcpStream::connect(addr).await.unwrap(), req).await,
        ProxyAt::Unix(path) => send_over(UnixStream::connect(path).await.unwrap(), req).await,
    }
}

async fn send_over<I>(io: I, req: Request<Full<Bytes>>) -> Response<Incoming>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn.with_upgrades());
    sender.send_request(req).await.unwrap()
}

async fn text(response: Response<Incoming>) -> String {
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

/// `GET url` through the proxy (absolute-URI form): status and body.
async fn get(at: &ProxyAt, url: &str, auth: Option<String>) -> (StatusCode, String) {
    let mut req = Request::get(url);
    if let Some(auth) = auth {
        req = req.header("proxy-authorization", auth);
    }
    let response = send(at, req.body(Full::new(Bytes::new())).unwrap()).await;
    (response.status(), text(response).await)
}

/// `CONNECT target` through the proxy, then `POST body` to the server at the other end over
/// the tunnel: the CONNECT's status, and the echoed body when it was 200.
async fn tunnel_post(
    at: &ProxyAt,
    target: &str,
    auth: Option<String>,
    body: Bytes,
) -> (StatusCode, Option<Bytes>) {
    let mut req = Request::connect(target);
    if let Some(auth) = auth {
        req = req.header("proxy-authorization", auth);
    }
    let response = send(at, req.body(Full::new(Bytes::new())).unwrap()).await;
    let status = response.status();
    if status != StatusCode::OK {
        return (status, None);
    }
    let upgraded = hyper::upgrade::on(response).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(upgraded)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut echoed = Vec::new();
    // Two requests on the tunnel: it stays open between them (keep-alive through it).
    for _ in 0..2 {
        let req = Request::post("/echo")
            .header("host", target)
            .body(Full::new(body.clone()))
            .unwrap();
        let response = sender.send_request(req).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        echoed = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
    }
    (status, Some(Bytes::from(echoed)))
}

/// `CONNECT target` through the proxy: the status of the CONNECT.
async fn connect(at: &ProxyAt, target: &str) -> StatusCode {
    tunnel_post(at, target, good_auth(), Bytes::from_static(b"ping"))
        .await
        .0
}

fn url(ip: &str, port: u16) -> String {
    format!("http://{ip}:{port}/")
}

/// Asserts that `host` (a name or address, with the servers' port) reaches `server` by GET
/// and by CONNECT.
async fn assert_reaches(at: &ProxyAt, host: &str, server: &Upstream) {
    let port = server.addr.port();
    let before = server.count();
    let (status, body) = get(at, &format!("http://{host}:{port}/"), good_auth()).await;
    assert_eq!(status, StatusCode::OK, "GET {host}: {body}");
    assert_eq!(body, format!("hello from {}", server.addr.ip()));
    let (status, echoed) =
        tunnel_post(at, &format!("{host}:{port}"), good_auth(), "ping".into()).await;
    assert_eq!(status, StatusCode::OK, "CONNECT {host}");
    assert_eq!(echoed.unwrap(), "ping");
    assert_eq!(server.count(), before + 3);
}

/// Asserts that `host` is refused (403) by GET and by CONNECT and that `server` saw nothing.
async fn assert_refused(at: &ProxyAt, host: &str, port: u16, server: &Upstream) {
    let before = server.count();
    let (status, body) = get(at, &format!("http://{host}:{port}/"), good_auth()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "GET {host}: {body}");
    assert!(body.starts_with("egress proxy: "), "{body}");
    assert_eq!(
        connect(at, &format!("{host}:{port}")).await,
        StatusCode::FORBIDDEN,
        "CONNECT {host}"
    );
    assert_eq!(server.count(), before, "{host} reached {}", server.addr);
}

// ---------------------------------------------------------------------------------------
// Policies

#[tokio::test]
async fn allowlist_by_ip_reaches_the_allowed_server_only() {
    let (allowed, other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let port = allowed.addr.port();
    assert_reaches(&p.at, ALLOWED, &allowed).await;
    assert_refused(&p.at, OTHER, port, &other).await;
    // The same addresses written as IPv4-mapped IPv6 literals.
    assert_reaches(&p.at, "[::ffff:127.0.0.2]", &allowed).await;
    assert_refused(&p.at, "[::ffff:127.0.0.3]", port, &other).await;
    let (_, body) = get(&p.at, &url(OTHER, port), good_auth()).await;
    assert_eq!(
        body,
        format!("egress proxy: {OTHER}:{port} is not in the allowlist\n")
    );
}

#[tokio::test]
async fn allowlist_by_cidr() {
    let (allowed, other) = upstreams().await;
    let port = allowed.addr.port();
    // .2 and .3 differ in their last bit only: a /32 is the one CIDR between them.
    let p = proxy(allow(&["127.0.0.2/32", "10.0.0.0/8"]), &[]).await;
    assert_reaches(&p.at, ALLOWED, &allowed).await;
    assert_refused(&p.at, OTHER, port, &other).await;
    let wide = proxy(allow(&["127.0.0.0/30"]), &[]).await;
    assert_reaches(&wide.at, ALLOWED, &allowed).await;
    assert_reaches(&wide.at, OTHER, &other).await;
    let mapped = proxy(allow(&["::ffff:127.0.0.2/128"]), &[]).await;
    assert_reaches(&mapped.at, ALLOWED, &allowed).await;
    assert_refused(&mapped.at, OTHER, port, &other).await;
    let elsewhere = proxy(allow(&["127.0.0.4/30"]), &[]).await;
    assert_refused(&elsewhere.at, ALLOWED, port, &allowed).await;
}

#[tokio::test]
async fn allowlist_by_name_through_the_host_map() {
    let (allowed, other) = upstreams().await;
    let port = allowed.addr.port();
    let hosts = [("models.internal", ALLOWED), ("other.internal", OTHER)];
    let p = proxy(allow(&["models.internal"]), &hosts).await;
    assert_reaches(&p.at, "models.internal", &allowed).await;
    assert_reaches(&p.at, "Models.INTERNAL.", &allowed).await;
    assert_refused(&p.at, "other.internal", port, &other).await;
    // A name entry permits the name, not its address written as a literal.
    assert_refused(&p.at, ALLOWED, port, &allowed).await;
    assert_refused(&p.at, "sub.models.internal", port, &allowed).await;
    let (status, body) = get(
        &p.at,
        &format!("http://models.internal:{port}/x"),
        good_auth(),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, format!("hello from {ALLOWED}"))
    );
    assert_eq!(
        allowed.last().headers["host"],
        format!("models.internal:{port}")
    );
}

#[tokio::test]
async fn allowlist_by_wildcard() {
    let (allowed, other) = upstreams().await;
    let port = allowed.addr.port();
    let hosts = [
        ("api.models.internal", ALLOWED),
        ("a.b.models.internal", ALLOWED),
        ("models.internal", OTHER),
        ("evilmodels.internal", OTHER),
        ("models.internal.evil", OTHER),
    ];
    let p = proxy(allow(&["*.models.internal"]), &hosts).await;
    assert_reaches(&p.at, "api.models.internal", &allowed).await;
    assert_reaches(&p.at, "a.b.models.internal", &allowed).await;
    for refused in [
        "models.internal",
        "evilmodels.internal",
        "models.internal.evil",
        OTHER,
    ] {
        assert_refused(&p.at, refused, port, &other).await;
    }
}

#[tokio::test]
async fn entries_with_a_port_match_that_port_only() {
    let (allowed, _other) = upstreams().await;
    let port = allowed.addr.port();
    let hosts = [("models.internal", ALLOWED)];
    let by_address = proxy(allow(&[&format!("{ALLOWED}:{port}")]), &hosts).await;
    assert_reaches(&by_address.at, ALLOWED, &allowed).await;
    // The address entry permits the name's address on that port too.
    assert_reaches(&by_address.at, "models.internal", &allowed).await;
    let other_port = allow(&[&format!("{ALLOWED}:{}", port + 1)]);
    let elsewhere = proxy(other_port, &hosts).await;
    assert_refused(&elsewhere.at, ALLOWED, port, &allowed).await;
    assert_refused(&elsewhere.at, "models.internal", port, &allowed).await;
    let by_name = proxy(allow(&[&format!("models.internal:{}", port + 1)]), &hosts).await;
    assert_refused(&by_name.at, "models.internal", port, &allowed).await;
    let denied = proxy(deny(&[&format!("{ALLOWED}:{port}")]), &[]).await;
    assert_refused(&denied.at, ALLOWED, port, &allowed).await;
}

#[tokio::test]
async fn denylist_is_the_reverse() {
    let (allowed, other) = upstreams().await;
    let port = allowed.addr.port();
    let hosts = [
        ("models.internal", ALLOWED),
        ("other.internal", OTHER),
        ("x.bad.internal", ALLOWED),
    ];
    for entries in [&[OTHER][..], &["127.0.0.3/32"], &["::ffff:127.0.0.3"]] {
        let p = proxy(deny(entries), &hosts).await;
        assert_reaches(&p.at, ALLOWED, &allowed).await;
        assert_reaches(&p.at, "models.internal", &allowed).await;
        assert_refused(&p.at, OTHER, port, &other).await;
        assert_refused(&p.at, "other.internal", port, &other).await;
        assert_refused(&p.at, "[::ffff:127.0.0.3]", port, &other).await;
    }
    let by_name = proxy(deny(&["other.internal", "*.bad.internal"]), &hosts).await;
    assert_reaches(&by_name.at, "models.internal", &allowed).await;
    assert_reaches(&by_name.at, OTHER, &other).await;
    assert_refused(&by_name.at, "other.internal", port, &other).await;
    assert_refused(&by_name.at, "x.bad.internal", port, &allowed).await;
}

#[tokio::test]
async fn a_name_that_resolves_into_a_denied_range_is_refused() {
    let (allowed, other) = upstreams().await;
    let port = allowed.addr.port();
    // `rebind.internal` has an allowed address too: one denied address refuses the name.
    let hosts = [
        ("rebind.internal", ALLOWED),
        ("rebind.internal", OTHER),
        ("zero.internal", "0.0.0.0"),
    ];
    let p = proxy(deny(&["127.0.0.3/32"]), &hosts).await;
    assert_refused(&p.at, "rebind.internal", port, &allowed).await;
    assert_eq!(other.count(), 0);
    let (_, body) = get(
        &p.at,
        &format!("http://rebind.internal:{port}/"),
        good_auth(),
    )
    .await;
    assert_eq!(
        body,
        "egress proxy: rebind.internal resolves to 127.0.0.3, inside the denylist entry 127.0.0.3/32\n"
    );
    // 0.0.0.0 would reach the host's own loopback: never a destination.
    assert_refused(&p.at, "zero.internal", port, &allowed).await;
    assert_refused(&p.at, "0.0.0.0", port, &allowed).await;
    assert_refused(&p.at, "[::]", port, &allowed).await;
}

// ---------------------------------------------------------------------------------------
// Protocol

#[tokio::test]
async fn connect_tunnels_bytes_both_ways() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let big: Bytes = (0..(1 << 20))
        .map(|i: u32| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let target = allowed.addr.to_string();
    let (status, echoed) = tunnel_post(&p.at, &target, good_auth(), big.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed.unwrap(), big);
    assert_eq!(allowed.count(), 2);
    // Inside the tunnel the server sees the client's own request, untouched.
    assert_eq!(allowed.last().uri, "/echo");

    // Early data and half-closes over a raw tunnel.
    let ProxyAt::Tcp(proxy_addr) = p.at else {
        unreachable!()
    };
    let mut raw = TcpStream::connect(proxy_addr).await.unwrap();
    let request = format!(
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Bearer {TOKEN}\r\n\r\n\
         GET /raw HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    raw.write_all(request.as_bytes()).await.unwrap();
    raw.shutdown().await.unwrap();
    let mut all = String::new();
    raw.read_to_string(&mut all).await.unwrap();
    assert!(all.starts_with("HTTP/1.1 200 OK\r\n"), "{all}");
    assert!(all.ends_with(&format!("hello from {ALLOWED}")), "{all}");
    assert_eq!(allowed.last().uri, "/raw");
}

#[tokio::test]
async fn absolute_uri_requests_are_forwarded_in_origin_form() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let port = allowed.addr.port();
    let req = Request::post(format!("http://{ALLOWED}:{port}/path/x?q=1&r=%20"))
        .header("proxy-authorization", format!("Bearer {TOKEN}"))
        .header("connection", "keep-alive, x-client-hop")
        .header("x-client-hop", "1")
        .header("proxy-connection", "keep-alive")
        .header("keep-alive", "timeout=5")
        .header("host", "wrong.example")
        .header("x-kept", "yes")
        .body(Full::new(Bytes::from_static(b"posted body")))
        .unwrap();
    let response = send(&p.at, req).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(text(response).await, "posted body");
    for dropped in ["x-upstream-hop", "proxy-authenticate"] {
        assert!(!headers.contains_key(dropped), "response kept {dropped}");
    }
    assert_eq!(headers["x-upstream-kept"], "1");
    let seen = allowed.last();
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.uri, "/path/x?q=1&r=%20");
    assert_eq!(seen.body, "posted body");
    assert_eq!(seen.headers["host"], format!("{ALLOWED}:{port}"));
    assert_eq!(seen.headers["x-kept"], "yes");
    for dropped in [
        "proxy-authorization",
        "x-client-hop",
        "proxy-connection",
        "keep-alive",
    ] {
        assert!(!seen.headers.contains_key(dropped), "forwarded {dropped}");
    }
    // Without a port the URI means port 80 (nothing listens there: 502, and it is reported).
    let (status, body) = get(&p.at, &format!("http://{ALLOWED}/"), good_auth()).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(
        body.contains(&format!("could not connect to {ALLOWED}:80")),
        "{body}"
    );
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_407_and_nothing_is_forwarded() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let target = allowed.addr.to_string();
    let wrong = [
        None,
        Some(basic("agent:wrong-token-0123456789")),
        Some(basic(TOKEN)),
        Some(format!("Bearer {TOKEN}x")),
        Some(format!("Digest {TOKEN}")),
    ];
    for auth in wrong.clone() {
        let mut req = Request::get(format!("http://{target}/"));
        if let Some(auth) = auth.clone() {
            req = req.header("proxy-authorization", auth);
        }
        let response = send(&p.at, req.body(Full::new(Bytes::new())).unwrap()).await;
        assert_eq!(
            response.status(),
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "{auth:?}"
        );
        assert_eq!(
            response.headers()["proxy-authenticate"],
            "Basic realm=\"agentcompass-egress\""
        );
        let (status, _) = tunnel_post(&p.at, &target, auth.clone(), "x".into()).await;
        assert_eq!(
            status,
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "{auth:?}"
        );
    }
    assert_eq!(allowed.count(), 0);
    let events = p.events();
    assert_eq!(events.len(), 2 * wrong.len());
    for event in &events {
        let EgressOutcome::Refused {
            status: 407,
            reason,
        } = &event.outcome
        else {
            panic!("{event}");
        };
        assert!(reason == "no Proxy-Authorization header" || reason == "wrong proxy credentials");
        let line = format!("{event} {event:?}");
        assert!(
            !line.contains(TOKEN) && !line.contains("wrong-token"),
            "{line}"
        );
        assert_eq!(event.target, target);
    }
    // The same client then authenticates and gets through.
    assert_reaches(&p.at, ALLOWED, &allowed).await;
}

#[tokio::test]
async fn malformed_requests_are_400() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(deny(&[]), &[]).await;
    let port = allowed.addr.port();
    for url in [
        format!("https://{ALLOWED}:{port}/"),
        format!("http://user:pw@{ALLOWED}:{port}/"),
        format!("http://{ALLOWED}@{ALLOWED}:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://2130706433:{port}/"),
        "/origin-form".to_string(),
    ] {
        let (status, body) = get(&p.at, &url, good_auth()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{url}: {body}");
    }
    for target in [
        ALLOWED.to_string(),
        format!("x@{ALLOWED}:{port}"),
        format!("{ALLOWED}:0"),
    ] {
        let (status, _) = tunnel_post(&p.at, &target, good_auth(), "x".into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{target}");
    }
    assert_eq!(allowed.count(), 0);
    // The log never shows userinfo.
    assert!(p.events().iter().all(|e| !e.to_string().contains("pw")));
}

#[tokio::test]
async fn refusals_and_allowed_connections_are_reported() {
    let (allowed, _other) = upstreams().await;
    let port = allowed.addr.port();
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    assert_eq!(
        get(&p.at, &url(ALLOWED, port), good_auth()).await.0,
        StatusCode::OK
    );
    assert_eq!(
        connect(&p.at, &format!("{OTHER}:{port}")).await,
        StatusCode::FORBIDDEN
    );
    let events = p.events();
    assert_eq!(
        events,
        [
            EgressEvent {
                method: "GET".into(),
                target: format!("{ALLOWED}:{port}"),
                outcome: EgressOutcome::Allowed {
                    address: allowed.addr
                },
            },
            EgressEvent {
                method: "CONNECT".into(),
                target: format!("{OTHER}:{port}"),
                outcome: EgressOutcome::Refused {
                    status: 403,
                    reason: format!("{OTHER}:{port} is not in the allowlist"),
                },
            },
        ]
    );
    assert!(!events[0].is_refusal() && events[1].is_refusal());
}

#[tokio::test]
async fn a_unix_socket_listener_works_the_same() {
    let (allowed, other) = upstreams().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("egress.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let hosts = [("models.internal", ALLOWED)];
    let (config, events) = config(allow(&["models.internal", ALLOWED]), &hosts);
    let handle = EgressProxy::serve(listener, config).unwrap();
    let p = Proxy {
        at: ProxyAt::Unix(path),
        handle,
        events,
        _dir: Some(dir),
    };
    assert_reaches(&p.at, ALLOWED, &allowed).await;
    assert_reaches(&p.at, "models.internal", &allowed).await;
    assert_refused(&p.at, OTHER, allowed.addr.port(), &other).await;
    let (status, _) = get(&p.at, &url(ALLOWED, allowed.addr.port()), None).await;
    assert_eq!(status, StatusCode::PROXY_AUTHENTICATION_REQUIRED);
    assert_eq!(p.events().iter().filter(|e| e.is_refusal()).count(), 3);
}

// ---------------------------------------------------------------------------------------
// Lifetime and bounds

/// Opens a raw tunnel to `target` and checks it works (one HTTP exchange, kept alive).
async fn open_tunnel(proxy: SocketAddr, target: SocketAddr) -> TcpStream {
    let mut raw = TcpStream::connect(proxy).await.unwrap();
    let request =
        format!("CONNECT {target} HTTP/1.1\r\nProxy-Authorization: Bearer {TOKEN}\r\n\r\n");
    raw.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut raw).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let head = read_head(&mut raw).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut body = vec![0u8; format!("hello from {}", target.ip()).len()];
    raw.read_exact(&mut body).await.unwrap();
    raw
}

async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// Whether the stream is closed (EOF or reset) within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, stream.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// Waits (up to 3 s) until the proxy has `n` open connections.
async fn assert_connections(p: &Proxy, n: usize) {
    for _ in 0..300 {
        if p.handle.connections() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(p.handle.connections(), n);
}

fn tcp(p: &Proxy) -> SocketAddr {
    match p.at {
        ProxyAt::Tcp(addr) => addr,
        ProxyAt::Unix(_) => unreachable!(),
    }
}

#[tokio::test]
async fn dropping_the_handle_closes_open_tunnels_and_the_listener() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let addr = tcp(&p);
    let mut tunnels = Vec::new();
    for _ in 0..3 {
        tunnels.push(open_tunnel(addr, allowed.addr).await);
    }
    // An idle keep-alive client connection too.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_connections(&p, 4).await;
    drop(p);
    for tunnel in &mut tunnels {
        assert!(
            closed_within(tunnel, Duration::from_secs(2)).await,
            "tunnel still open"
        );
    }
    assert!(closed_within(&mut idle, Duration::from_secs(2)).await);
    assert!(TcpStream::connect(addr).await.is_err(), "still listening");
}

#[tokio::test]
async fn shutdown_waits_until_everything_is_closed() {
    let (allowed, _other) = upstreams().await;
    let p = proxy(allow(&[ALLOWED]), &[]).await;
    let addr = tcp(&p);
    let mut tunnel = open_tunnel(addr, allowed.addr).await;
    tokio::time::timeout(Duration::from_secs(2), p.handle.shutdown())
        .await
        .unwrap();
    assert!(closed_within(&mut tunnel, Duration::from_millis(100)).await);
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn idle_connections_and_tunnels_are_closed() {
    let (allowed, _other) = upstreams().await;
    let limits = Limits {
        idle_timeout: Duration::from_millis(600),
        ..Limits::default()
    };
    let (config, events) = config(allow(&[ALLOWED]), &[]);
    let p = proxy_with(config.with_limits(limits), events).await;
    let addr = tcp(&p);
    let mut tunnel = open_tunnel(addr, allowed.addr).await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    // A tunnel that keeps talking outlives the idle timeout.
    let mut busy = open_tunnel(addr, allowed.addr).await;
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        busy.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let head = read_head(&mut busy).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let mut body = vec![0u8; format!("hello from {ALLOWED}").len()];
        busy.read_exact(&mut body).await.unwrap();
    }
    assert!(
        closed_within(&mut tunnel, Duration::from_secs(3)).await,
        "idle tunnel open"
    );
    assert!(
        closed_within(&mut idle, Duration::from_secs(3)).await,
        "idle connection open"
    );
    assert_connections(&p, 1).await;
}

#[tokio::test]
async fn the_connection_limit_holds() {
    let (allowed, _other) = upstreams().await;
    let limits = Limits {
        max_connections: 2,
        ..Limits::default()
    };
    let (config, events) = config(allow(&[ALLOWED]), &[]);
    let p = proxy_with(config.with_limits(limits), events).await;
    let addr = tcp(&p);
    let first = open_tunnel(addr, allowed.addr).await;
    let _second = open_tunnel(addr, allowed.addr).await;
    let third = tokio::spawn(open_tunnel(addr, allowed.addr));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!third.is_finished(), "a third connection was served");
    assert_eq!(p.handle.connections(), 2);
    drop(first);
    let third = tokio::time::timeout(Duration::from_secs(2), third).await;
    assert!(third.is_ok(), "the freed slot was not reused");
}

#[test]
fn serve_needs_a_runtime_and_a_connection() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (config, _) = config(allow(&[ALLOWED]), &[]);
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let err = EgressProxy::serve(listener, config.clone()).unwrap_err();
    assert_eq!(err, ServeError::NoRuntime);
    let none = config.with_limits(Limits {
        max_connections: 0,
        ..Limits::default()
    });
    let _guard = rt.enter();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    assert_eq!(
        EgressProxy::serve(listener, none).unwrap_err(),
        ServeError::NoConnections
    );
}
