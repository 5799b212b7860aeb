use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use super::*;
use tokio::net::TcpListener;

/// An upstream on loopback that answers each request with what it got: the method, path,
/// query, the `authorization` and `x-team` headers and the body.
async fn echo_upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|request: Request<Incoming>| async move {
                    let header = |name: &str| {
                        request
                            .headers()
                            .get(name)
                            .map(|v| v.to_str().unwrap().to_string())
                    };
                    let seen = serde_json::json!({
                        "method": request.method().as_str(),
                        "path": request.uri().path(),
                        "query": request.uri().query(),
                        "authorization": header("authorization"),
                        "x_team": header("x-team"),
                    });
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let text = format!("{seen}\n{}", String::from_utf8_lossy(&body));
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(text))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    port
}

#[tokio::test]
async fn requests_reach_the_server_with_the_hosts_headers_and_nothing_else_gets_through() {
    let port = echo_upstream().await;
    let relay = ToolRelay::start(vec![ToolRoute {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: vec![("Authorization".into(), "Bearer tok-HOST-7731".into())],
    }])
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let answer = client
        .post(format!("{}?x=1", relay.url(0)))
        .header("Authorization", "Bearer from-the-agent")
        .header("X-Team", "blue")
        .body("{\"jsonrpc\":\"2.0\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    let (seen, body) = text.split_once('\n').unwrap();
    let seen: serde_json::Value = serde_json::from_str(seen).unwrap();
    assert_eq!(
        seen,
        serde_json::json!({"method": "POST", "path": "/mcp", "query": "x=1",
                           "authorization": "Bearer tok-HOST-7731", "x_team": "blue"})
    );
    assert_eq!(body, "{\"jsonrpc\":\"2.0\"}");
    // Without the token, or past the last route: never forwarded.
    let base = format!("http://127.0.0.1:{}", relay.port);
    for path in ["/0", "/wrong/0", &format!("/{}/1", relay.token.expose())] {
        let status = client
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{path}");
    }
    // The Unix socket answers too.
    assert!(relay.socket().exists());
    assert_eq!(relay.host_endpoint().name, TOOLS_ENDPOINT_NAME);
}
