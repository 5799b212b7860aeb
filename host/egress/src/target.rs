//! Request targets: the `host:port` of a `CONNECT` or of an absolute `http://` URI, parsed
//! strictly, and hostnames normalised as the policy compares them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A hostname: lowercase, without its trailing dot.
    Name(String),
    /// An address literal (`127.0.0.2`, `[::1]`), checked as an address.
    Ip(IpAddr),
}

/// Where a request wants to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) host: Host,
    pub(crate) port: u16,
}

impl Target {
    /// The host as text (no brackets, no port).
    pub(crate) fn host_text(&self) -> String {
        match &self.host {
            Host::Name(n) => n.clone(),
            Host::Ip(ip) => ip.to_string(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Name(n) => write!(f, "{n}:{}", self.port),
            Host::Ip(IpAddr::V4(a)) => write!(f, "{a}:{}", self.port),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]:{}", self.port),
        }
    }
}

/// Parses an authority `host[:port]`; the port is required unless `default_port` is given.
/// Userinfo (`user:password@host`) is refused: it is a credential, and `allowed@evil` is the
/// classic way to make a checker and a connector disagree about the host.
pub(crate) fn parse_authority(
    authority: &str,
    default_port: Option<u16>,
) -> Result<Target, &'static str> {
    if authority.contains('@') {
        return Err("userinfo (user@host) in the request target is not allowed");
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inner, after) = rest.split_once(']').ok_or("an unclosed `[` in the host")?;
        let addr: Ipv6Addr = inner
            .parse()
            .map_err(|_| "not an IPv6 address inside `[...]` (zone ids are not allowed)")?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or("junk after `]`")?),
        };
        (Host::Ip(IpAddr::V6(addr)), port)
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.contains(':') {
            return Err("an IPv6 address must be bracketed: [addr]:port");
        }
        let host = match host.parse::<Ipv4Addr>() {
            Ok(a) => Host::Ip(IpAddr::V4(a)),
            Err(_) => Host::Name(normalize_name(host)?),
        };
        (host, port)
    };
    let port = match port {
        Some(p) => parse_port(p).ok_or("the port must be a number from 1 to 65535")?,
        None => default_port.ok_or("a port is required (host:port)")?,
    };
    Ok(Target { host, port })
}

fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p != 0)
}

/// A hostname as the policy and the host map compare it: lowercase, one trailing dot
/// removed, labels of letters, digits, `-` and `_` (1-63 bytes each, 253 in all). Names the
/// system resolver would read as a number (`127.1`, `0x7f000001`, `017700000001`) are
/// refused: an address is written as a standard literal or not at all.
pub(crate) fn normalize_name(name: &str) -> Result<String, &'static str> {
    let lower = name.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() || name.len() > 253 {
        return Err("not a valid hostname");
    }
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !name.split('.').all(label_ok) {
        return Err("not a valid hostname");
    }
    let numeric = |l: &str| {
        l.bytes().all(|b| b.is_ascii_digit())
            || l.strip_prefix("0x")
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    if name.split('.').all(numeric)
        || name
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("not a valid hostname (an address must be a standard IPv4 or [IPv6] literal)");
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Host {
        Host::Name(s.to_string())
    }

    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn authorities() {
        let cases: &[(&str, Option<u16>, Host, u16)] = &[
            ("example.com:443", None, name("example.com"), 443),
            ("Example.COM.:443", None, name("example.com"), 443),
            ("models.internal", Some(80), name("models.internal"), 80),
            ("a_b.internal:8080", Some(80), name("a_b.internal"), 8080),
            ("127.0.0.2:8080", None, ip("127.0.0.2"), 8080),
            ("[::1]:443", None, ip("::1"), 443),
            ("[::1]", Some(80), ip("::1"), 80),
            ("[::FFFF:127.0.0.3]:80", None, ip("::ffff:127.0.0.3"), 80),
        ];
        for (text, default, host, port) in cases {
            let t = parse_authority(text, *default).unwrap();
            assert_eq!((&t.host, t.port), (host, *port), "{text}");
        }
        assert_eq!(
            parse_authority("[::1]:443", None).unwrap().to_string(),
            "[::1]:443"
        );
        assert_eq!(
            parse_authority("EXAMPLE.com.:443", None)
                .unwrap()
                .to_string(),
            "example.com:443"
        );
    }

    #[test]
    fn malformed_authorities() {
        for (text, default) in [
            ("example.com", None),
            ("example.com:", None),
            ("example.com:0", None),
            ("example.com:65536", None),
            ("example.com:+80", None),
            ("example.com:080080", None),
            ("user:pw@example.com:443", None),
            ("allowed.example@evil.example", Some(80)),
            ("::1:443", None),
            ("[::1", None),
            ("[::1]x", Some(80)),
            ("[fe80::1%25eth0]:80", None),
            ("[127.0.0.1]:80", None),
            ("127.1:80", None),
            ("2130706433:80", None),
            ("0x7f000001:80", None),
            ("0x7f.0.0.1:80", None),
            ("127.000.000.001:80", None),
            ("a..b:80", None),
            ("a.b..:80", None),
            (".:80", None),
            (":80", None),
            ("exa%6dple.com:80", None),
            ("exa mple.com:80", None),
        ] {
            assert!(parse_authority(text, default).is_err(), "{text}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            normalize_name("Models.Internal.").unwrap(),
            "models.internal"
        );
        assert_eq!(normalize_name("localhost").unwrap(), "localhost");
        assert_eq!(normalize_name("0x1.example").unwrap(), "0x1.example");
        assert!(normalize_name("example.com..").is_err());
        assert!(normalize_name(&"a".repeat(64)).is_err());
        assert!(normalize_name("1.2.3.4").is_err());
    }
}
