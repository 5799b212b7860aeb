//! The per-session token and the `Proxy-Authorization` check.

use std::fmt;
use std::io;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hyper::header::{HeaderMap, PROXY_AUTHORIZATION};

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Too short, too long, or not made of URL-safe characters.
    #[error("an egress token is 16 to 256 characters of A-Z, a-z, 0-9, `-`, `.`, `_`, `~`")]
    Malformed,
}

/// The secret a session's clients present to the proxy. Its characters are URL-safe, so it
/// goes unescaped into `http://agent:TOKEN@host:port` proxy URLs. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct EgressToken(Arc<str>);

impl EgressToken {
    /// A token of the caller's choosing.
    pub fn new(token: impl Into<String>) -> Result<EgressToken, TokenError> {
        let token: String = token.into();
        let ok = (16..=256).contains(&token.len())
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if !ok {
            return Err(TokenError::Malformed);
        }
        Ok(EgressToken(token.into()))
    }

    /// A fresh random token: 32 bytes from the system's random source, hex-encoded.
    pub fn random() -> io::Result<EgressToken> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(io::Error::other)?;
        Ok(EgressToken(hex::encode(bytes).into()))
    }

    /// The token itself, for the proxy URL the session's commands get. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token (compared in constant time).
    pub fn matches(&self, presented: &[u8]) -> bool {
        constant_time_eq(presented, self.0.as_bytes())
    }
}

impl fmt::Debug for EgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EgressToken(********)")
    }
}

/// Why a request was not authenticated (the reason never contains what was sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    Missing,
    Wrong,
}

impl AuthFailure {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            AuthFailure::Missing => "no Proxy-Authorization header",
            AuthFailure::Wrong => "wrong proxy credentials",
        }
    }
}

/// Checks the request's `Proxy-Authorization`: `Basic base64(USER:TOKEN)` with any user name
/// (what clients send for a proxy URL `http://USER:TOKEN@host:port`) or `Bearer TOKEN`.
/// More than one header, any other scheme, or a wrong token is [`AuthFailure::Wrong`].
pub(crate) fn check(token: &EgressToken, headers: &HeaderMap) -> Result<(), AuthFailure> {
    let mut values = headers.get_all(PROXY_AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthFailure::Missing)?;
    if values.next().is_some() {
        return Err(AuthFailure::Wrong);
    }
    let value = value.to_str().map_err(|_| AuthFailure::Wrong)?.trim();
    let (scheme, credentials) = value.split_once(' ').ok_or(AuthFailure::Wrong)?;
    let credentials = credentials.trim();
    let presented: Vec<u8> = if scheme.eq_ignore_ascii_case("basic") {
        let decoded = STANDARD
            .decode(credentials)
            .map_err(|_| AuthFailure::Wrong)?;
        let colon = decoded
            .iter()
            .position(|b| *b == b':')
            .ok_or(AuthFailure::Wrong)?;
        decoded[colon + 1..].to_vec()
    } else if scheme.eq_ignore_ascii_case("bearer") {
        credentials.as_bytes().to_vec()
    } else {
        return Err(AuthFailure::Wrong);
    };
    if constant_time_eq(&presented, token.expose().as_bytes()) {
        Ok(())
    } else {
        Err(AuthFailure::Wrong)
    }
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    const TOKEN: &str = "tok-0123456789abcdef";

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(PROXY_AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn basic(userpass: &str) -> String {
        format!("Basic {}", STANDARD.encode(userpass))
    }

    #[test]
    fn accepted_forms() {
        let t = EgressToken::new(TOKEN).unwrap();
        for v in [
            basic(&format!("agent:{TOKEN}")),
            basic(&format!(":{TOKEN}")),
            format!("basic  {}", STANDARD.encode(format!("x:{TOKEN}"))),
            format!("Bearer {TOKEN}"),
            format!("bearer {TOKEN}"),
        ] {
            assert_eq!(check(&t, &headers(&[&v])), Ok(()), "{v}");
        }
    }

    #[test]
    fn refused_forms() {
        let t = EgressToken::new(TOKEN).unwrap();
        assert_eq!(check(&t, &headers(&[])), Err(AuthFailure::Missing));
        for v in [
            basic(TOKEN),
            basic(&format!("{TOKEN}:")),
            basic(&format!("agent:{TOKEN}x")),
            basic("agent:tok-0123456789abcdeF"),
            format!("Bearer {TOKEN}x"),
            format!("Digest {TOKEN}"),
            TOKEN.to_string(),
            "Basic !!!".to_string(),
        ] {
            assert_eq!(check(&t, &headers(&[&v])), Err(AuthFailure::Wrong), "{v}");
        }
        let good = format!("Bearer {TOKEN}");
        assert_eq!(
            check(&t, &headers(&[&good, &good])),
            Err(AuthFailure::Wrong)
        );
    }

    #[test]
    fn tokens() {
        assert!(EgressToken::new("short").is_err());
        assert!(EgressToken::new("has:a:colon-0123456789").is_err());
        assert!(EgressToken::new("has@at-0123456789").is_err());
        let r = EgressToken::random().unwrap();
        assert_eq!(r.expose().len(), 64);
        assert_ne!(r, EgressToken::random().unwrap());
        assert_eq!(format!("{r:?}"), "EgressToken(********)");
        assert!(!format!("{r:?}").contains(r.expose()));
    }
}
