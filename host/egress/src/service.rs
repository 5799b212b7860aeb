//! One proxied request: authenticate, parse the target, check the policy on the name and
//! the resolved addresses, connect to a checked address, then tunnel or forward.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::headers::strip_hop_by_hop;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::auth;
use crate::config::EgressConfig;
use crate::conn::ConnCtx;
use crate::event::{clean, EgressEvent, EgressOutcome};
use crate::policy::NameVerdict;
use crate::resolve::{resolve, ResolveError};
use crate::target::{parse_authority, Host, Target};

/// The body of every response the proxy sends.
pub(crate) type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// The realm clients are asked to authenticate for.
const CHALLENGE: &str = "Basic realm=\"agentcompass-egress\"";

type Refusal = (StatusCode, String);

/// Serves one request of a client connection.
pub(crate) async fn handle(
    cfg: Arc<EgressConfig>,
    ctx: ConnCtx,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let method = clean(req.method().as_str());
    let requested = req
        .uri()
        .authority()
        .map(|a| clean(a.as_str()))
        .unwrap_or_else(|| "(no host)".to_string());
    let refuse = |target: &str, (status, reason): Refusal| {
        cfg.log.report(&EgressEvent {
            method: method.clone(),
            target: target.to_string(),
            outcome: EgressOutcome::Refused {
                status: status.as_u16(),
                reason: reason.clone(),
            },
        });
        refusal(status, &reason)
    };
    if let Err(failure) = auth::check(&cfg.token, req.headers()) {
        let reason = failure.reason().to_string();
        return Ok(refuse(
            &requested,
            (StatusCode::PROXY_AUTHENTICATION_REQUIRED, reason),
        ));
    }
    let target = match request_target(&req) {
        Ok(target) => target,
        Err(reason) => return Ok(refuse(&requested, (StatusCode::BAD_REQUEST, reason.into()))),
    };
    let shown = target.to_string();
    let (upstream, address) = match open(&cfg, &target).await {
        Ok(opened) => opened,
        Err(refused) => return Ok(refuse(&shown, refused)),
    };
    cfg.log.report(&EgressEvent {
        method: method.clone(),
        target: shown.clone(),
        outcome: EgressOutcome::Allowed { address },
    });
    if req.method() == Method::CONNECT {
        return Ok(tunnel(&ctx, req, upstream));
    }
    match forward(&ctx, req, upstream).await {
        Ok(response) => Ok(response),
        Err(refused) => Ok(refuse(&shown, refused)),
    }
}

/// The `host:port` a proxy request names: `CONNECT host:port`, or an absolute `http://` URI
/// (port 80 unless given).
fn request_target(req: &Request<Incoming>) -> Result<Target, &'static str> {
    let uri = req.uri();
    if req.method() == Method::CONNECT {
        let authority = uri.authority().ok_or("CONNECT needs host:port")?;
        return parse_authority(authority.as_str(), None);
    }
    match uri.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("http") => {}
        Some(_) => return Err("only http:// URIs are forwarded; use CONNECT for https"),
        None => return Err("not a proxy request: send an absolute http:// URI or CONNECT"),
    }
    let authority = uri.authority().ok_or("the URI has no host")?;
    parse_authority(authority.as_str(), Some(80))
}

/// Checks the target against the policy and connects to the first checked address that
/// answers. The stream returned is connected to exactly an address that was checked.
async fn open(cfg: &EgressConfig, target: &Target) -> Result<(TcpStream, SocketAddr), Refusal> {
    let name_allowed = match &target.host {
        Host::Name(name) => match cfg.policy.check_name(name, target.port) {
            NameVerdict::Refused(reason) => return Err((StatusCode::FORBIDDEN, reason)),
            NameVerdict::Allowed => true,
            NameVerdict::CheckAddresses => false,
        },
        Host::Ip(_) => false,
    };
    let limits = &cfg.limits;
    let addresses = resolve(
        &cfg.host_map,
        &target.host,
        target.port,
        limits.resolve_timeout,
    )
    .await
    .map_err(|e| match e {
        ResolveError::NotFound(_) => (StatusCode::BAD_GATEWAY, e.to_string()),
        ResolveError::TimedOut(_) => (StatusCode::GATEWAY_TIMEOUT, e.to_string()),
    })?;
    let permitted = cfg
        .policy
        .permitted_addresses(&target.host_text(), name_allowed, &addresses, target.port)
        .map_err(|reason| (StatusCode::FORBIDDEN, reason))?;
    let mut failure = (StatusCode::BAD_GATEWAY, format!("no address for {target}"));
    for ip in permitted {
        let address = SocketAddr::new(ip, target.port);
        match tokio::time::timeout(limits.connect_timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                // Small writes both ways: no Nagle delay.
                let _ = stream.set_nodelay(true);
                return Ok((stream, address));
            }
            Ok(Err(e)) => {
                failure = (
                    StatusCode::BAD_GATEWAY,
                    format!("could not connect to {address}: {e}"),
                );
            }
            Err(_) => {
                failure = (
                    StatusCode::GATEWAY_TIMEOUT,
                    format!("connecting to {address} timed out"),
                );
            }
        }
    }
    Err(failure)
}

/// Answers `200` and, once hyper hands the connection over, copies bytes both ways until
/// either side closes (half-closes are passed on), the connection idles or the proxy closes.
fn tunnel(ctx: &ConnCtx, req: Request<Incoming>, mut upstream: TcpStream) -> Response<ProxyBody> {
    let upgrade = hyper::upgrade::on(req);
    ctx.spawn(async move {
        let Ok(upgraded) = upgrade.await else {
            return;
        };
        let mut client = TokioIo::new(upgraded);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    });
    Response::new(Empty::new().map_err(|never| match never {}).boxed())
}

/// Sends the request in origin form over `upstream` (one connection per request) and streams
/// the response back; hop-by-hop headers are dropped both ways and `Host` is the URI's.
async fn forward(
    ctx: &ConnCtx,
    req: Request<Incoming>,
    upstream: TcpStream,
) -> Result<Response<ProxyBody>, Refusal> {
    let bad = |reason: &str| (StatusCode::BAD_REQUEST, reason.to_string());
    let (mut parts, body) = req.into_parts();
    let host = parts
        .uri
        .authority()
        .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
        .ok_or_else(|| bad("the URI has no host"))?;
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = path
        .parse::<Uri>()
        .map_err(|_| bad("the URI's path is invalid"))?;
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.insert(header::HOST, host);
    parts.version = Version::HTTP_11;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(upstream))
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, format!("upstream: {e}")))?;
    ctx.spawn(async move {
        let _ = connection.await;
    });
    let response = sender
        .send_request(Request::from_parts(parts, body))
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, format!("upstream: {e}")))?;
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Ok(Response::from_parts(parts, body.boxed()))
}

/// A short plain-text answer; `407` carries the `Proxy-Authenticate` challenge.
fn refusal(status: StatusCode, reason: &str) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("egress proxy: {reason}\n")));
    let mut response = Response::new(body.map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == StatusCode::PROXY_AUTHENTICATION_REQUIRED {
        headers.insert(
            header::PROXY_AUTHENTICATE,
            HeaderValue::from_static(CHALLENGE),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_short_text_and_407_challenges() {
        let r = refusal(
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "no Proxy-Authorization header",
        );
        assert_eq!(r.status(), 407);
        assert_eq!(r.headers()[header::PROXY_AUTHENTICATE], CHALLENGE);
        let r = refusal(StatusCode::FORBIDDEN, "x is not in the allowlist");
        assert!(!r.headers().contains_key(header::PROXY_AUTHENTICATE));
    }
}
