//! What the proxy reports to its session: every refusal and every allowed connection.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

/// One decision of the proxy. It names the request's method and `host:port` only — never a
/// path, query, header, userinfo or the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressEvent {
    /// `CONNECT` or the forwarded request's method.
    pub method: String,
    /// The requested `host:port` (normalised when it parsed; cut and cleaned otherwise).
    pub target: String,
    /// What happened.
    pub outcome: EgressOutcome,
}

/// What happened to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressOutcome {
    /// Connected to `address` (a tunnel opened or a request forwarded).
    Allowed {
        /// The checked address connected to.
        address: SocketAddr,
    },
    /// Answered with `status` (400, 403, 407, 502, 504) and `reason`, nothing forwarded.
    Refused {
        /// The HTTP status sent.
        status: u16,
        /// Why (the text of the response body).
        reason: String,
    },
}

impl EgressEvent {
    /// Whether the request was refused (a session logs these as warnings, allowed ones at
    /// debug level).
    pub fn is_refusal(&self) -> bool {
        matches!(self.outcome, EgressOutcome::Refused { .. })
    }
}

impl fmt::Display for EgressEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            EgressOutcome::Allowed { address } => {
                write!(
                    f,
                    "egress allowed: {} {} via {address}",
                    self.method, self.target
                )
            }
            EgressOutcome::Refused { status, reason } => write!(
                f,
                "egress refused ({status}): {} {}: {reason}",
                self.method, self.target
            ),
        }
    }
}

/// Where events go: the session's log. Called on the proxy's tasks; keep it quick.
#[derive(Clone)]
pub struct EgressLog(Arc<dyn Fn(&EgressEvent) + Send + Sync>);

impl EgressLog {
    /// Reports each event to `sink`.
    pub fn new(sink: impl Fn(&EgressEvent) + Send + Sync + 'static) -> EgressLog {
        EgressLog(Arc::new(sink))
    }

    /// Drops every event.
    pub fn discard() -> EgressLog {
        EgressLog::new(|_| {})
    }

    pub(crate) fn report(&self, event: &EgressEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for EgressLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EgressLog")
    }
}

/// Text from the request line made safe for a log line: printable ASCII, at most 255 bytes,
/// anything before an `@` (userinfo) dropped.
pub(crate) fn clean(text: &str) -> String {
    let text = text.rsplit('@').next().unwrap_or_default();
    let mut out: String = text
        .chars()
        .take(255)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect();
    if text.len() > 255 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_cleaning() {
        let refused = EgressEvent {
            method: "CONNECT".into(),
            target: "evil.example:443".into(),
            outcome: EgressOutcome::Refused {
                status: 403,
                reason: "evil.example:443 is not in the allowlist".into(),
            },
        };
        assert!(refused.is_refusal());
        assert_eq!(
            refused.to_string(),
            "egress refused (403): CONNECT evil.example:443: evil.example:443 is not in the allowlist"
        );
        let allowed = EgressEvent {
            method: "GET".into(),
            target: "models.internal:80".into(),
            outcome: EgressOutcome::Allowed {
                address: "127.0.0.2:80".parse().unwrap(),
            },
        };
        assert_eq!(
            allowed.to_string(),
            "egress allowed: GET models.internal:80 via 127.0.0.2:80"
        );
        assert_eq!(clean("user:secret@host:1"), "host:1");
        assert_eq!(clean("a\nb\x1b"), "a?b?");
        assert_eq!(clean(&"x".repeat(300)).len(), 255 + '…'.len_utf8());
    }
}
