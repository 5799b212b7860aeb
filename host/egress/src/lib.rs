//! The host-owned egress proxy: what an `allowlist` or `denylist` session reaches the network
//! through. A session's namespace has no route anywhere; the proxy, served by the host on a
//! listener it is given (a Unix socket bound into a sandbox, a socket in a container's
//! namespace, or TCP), is its only way out.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agentcompass_egress::{EgressConfig, EgressLog, EgressPolicy, EgressProxy, EgressToken, HostMap};
//! let policy = EgressPolicy::allowlist(["models.internal", "*.pypi.org:443", "10.0.0.0/8"])?;
//! let token = EgressToken::random()?;
//! let config = EgressConfig::new(policy, token)
//!     .with_host_map(HostMap::from_pairs([("models.internal", "127.0.0.2")])?)
//!     .with_log(EgressLog::new(|event| eprintln!("{event}")));
//! let listener = tokio::net::UnixListener::bind("/tmp/egress.sock")?;
//! let proxy = EgressProxy::serve(listener, config)?;
//! // ... the session runs; HTTP(S)_PROXY=http://agent:TOKEN@<forwarded address> ...
//! drop(proxy); // stops accepting and closes every tunnel
//! # Ok(()) }
//! ```
//!
//! # Protocol
//!
//! HTTP/1.1 (keep-alive). `CONNECT host:port` opens a tunnel (HTTPS and anything else over
//! TCP); a request with an absolute `http://host[:port]/path` URI is forwarded in origin form
//! over a fresh upstream connection, with the hop-by-hop headers (`Connection` and the
//! headers it names, `Keep-Alive`, `Proxy-Connection`, `Proxy-Authenticate`,
//! `Proxy-Authorization`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`) dropped both ways
//! and `Host` set from the URI. Anything else is `400`.
//!
//! # Authentication
//!
//! Every request carries the session's [`EgressToken`] in `Proxy-Authorization`, either
//! `Basic base64(USER:TOKEN)` — any user name; this is what curl, pip, Python, Go and Node
//! send for a proxy URL `http://agent:TOKEN@host:port` — or `Bearer TOKEN`. A missing header
//! is `407` with `Proxy-Authenticate: Basic realm="agentcompass-egress"`, as is a wrong token,
//! another scheme or two headers. Nothing is resolved or connected before that check, and
//! neither the token nor any header value ever reaches a response, an error or the log.
//!
//! # Matching
//!
//! Entries ([`EgressRule`]) are the network contract's host patterns — hostname (exact),
//! `*.domain` (subdomains only, any depth; not `domain` itself), IPv4/IPv6 address, CIDR —
//! each with an optional port (`host:443`, `[::1]:8080`, `10.0.0.0/8:443`); an entry with a
//! port matches that port only. The requested host is normalised first: lowercase, one
//! trailing dot removed; `[v6]` literals are unbracketed; an IPv4-mapped IPv6 address
//! (`::ffff:a.b.c.d`) is the IPv4 address it maps (and an IPv4 address is inside an IPv6
//! network when its mapped form is). Userinfo in a target, zone ids, non-standard numeric
//! forms (`127.1`, `0x7f000001`) and malformed names are `400`.
//!
//! - **allowlist**: a hostname/wildcard entry matching the requested name permits it, and
//!   then every address it resolves to; otherwise an address/CIDR entry permits a resolved
//!   address inside it, and only those addresses are tried. A name matching no entry of an
//!   allowlist with no address entries is refused without being resolved (no DNS query
//!   leaves for it). An address literal is checked against the address entries only.
//! - **denylist**: refused when the name matches an entry, or when *any* address it resolves
//!   to is inside an address/CIDR entry (so a name that resolves into a denied range —
//!   DNS rebinding — is refused, not narrowed to its other addresses).
//! - Whatever the policy, `0.0.0.0/8`, `::`, broadcast and multicast addresses are never
//!   destinations (connecting to `0.0.0.0` reaches the host's own loopback).
//!
//! Names are resolved by the proxy: the caller's [`HostMap`] first (like Docker's
//! `--add-host`; a mapped name resolves to its entries only), then the system resolver. The
//! proxy connects to an address it checked and never resolves again. Refusals are `403` with
//! a one-line reason; resolution and connection failures `502` (`504` on a timeout).
//!
//! # Reporting and bounds
//!
//! Each refusal and each allowed connection is an [`EgressEvent`] given to the caller's
//! [`EgressLog`] (method and `host:port` only). [`Limits`] bound the connections served at
//! once and the idle, header, resolve and connect times. Dropping the [`ProxyHandle`] ends
//! everything the proxy runs.

mod auth;
mod client_env;
mod config;
mod conn;
mod event;
pub mod forward;
pub mod headers;
mod io;
mod listener;
mod policy;
mod resolve;
mod server;
mod service;
mod target;

pub use auth::{EgressToken, TokenError};
pub use client_env::{proxy_env, NO_PROXY};
pub use config::{EgressConfig, Limits};
pub use event::{EgressEvent, EgressLog, EgressOutcome};
pub use listener::Listener;
pub use policy::{EgressMode, EgressPolicy, EgressRule, PolicyError};
pub use resolve::{egress_hosts_param, HostMap, HostMapError};
pub use server::{EgressProxy, ProxyHandle, ServeError};
