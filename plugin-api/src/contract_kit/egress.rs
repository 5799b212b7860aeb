//! The cases a provider's egress tests run: one allowlist or denylist entry of each kind, the
//! host it lets through and the host it stops, against two loopback servers on one port
//! (127.0.0.2 and 127.0.0.3, each answering its own body) reached by address or by the names
//! of [`EGRESS_HOSTS`].

/// Names the tests map to the two servers (a provider's `egress_hosts`).
pub const EGRESS_HOSTS: [(&str, &str); 5] = [
    ("models.internal", "127.0.0.2"),
    ("a.b.models.internal", "127.0.0.2"),
    ("other.internal", "127.0.0.3"),
    ("a.b.other.internal", "127.0.0.3"),
    ("x.other.internal", "127.0.0.3"),
];

/// One policy entry and what it decides.
#[derive(Debug, Clone, Copy)]
pub struct PolicyCase {
    /// What kind of entry (`by address`, `by CIDR`, `by name`, `by wildcard`).
    pub name: &'static str,
    /// The entry.
    pub entry: &'static str,
    /// A host the policy lets through (it reaches 127.0.0.2).
    pub allowed: &'static str,
    /// A host the policy stops (the proxy answers 403).
    pub refused: &'static str,
}

/// Allowlists naming 127.0.0.2 in each way: it is reached, 127.0.0.3 is not.
pub const ALLOWLIST_CASES: [PolicyCase; 4] = [
    case("by address", "127.0.0.2", "127.0.0.2", "127.0.0.3"),
    case("by CIDR", "127.0.0.2/32", "127.0.0.2", "127.0.0.3"),
    case(
        "by name",
        "models.internal",
        "models.internal",
        "other.internal",
    ),
    case(
        "by wildcard",
        "*.models.internal",
        "a.b.models.internal",
        "other.internal",
    ),
];

/// Denylists naming 127.0.0.3 in each way: it is refused, 127.0.0.2 is reached.
pub const DENYLIST_CASES: [PolicyCase; 4] = [
    case("by address", "127.0.0.3", "127.0.0.2", "127.0.0.3"),
    case("by CIDR", "127.0.0.3/32", "127.0.0.2", "127.0.0.3"),
    case(
        "by name",
        "other.internal",
        "models.internal",
        "other.internal",
    ),
    case(
        "by wildcard",
        "*.other.internal",
        "a.b.models.internal",
        "x.other.internal",
    ),
];

const fn case(
    name: &'static str,
    entry: &'static str,
    allowed: &'static str,
    refused: &'static str,
) -> PolicyCase {
    PolicyCase {
        name,
        entry,
        allowed,
        refused,
    }
}
