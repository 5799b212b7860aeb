//! Network policies: the outbound-network rules an environment enforces per phase.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The outbound network mode of a policy.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum NetworkMode {
    /// Unrestricted outbound access.
    #[default]
    #[serde(rename = "public")]
    Public,
    /// No outbound access at all.
    #[serde(rename = "no-network")]
    NoNetwork,
    /// Outbound access only to `allowed_hosts`.
    #[serde(rename = "allowlist")]
    Allowlist,
}

impl NetworkMode {
    /// All modes.
    pub const ALL: [NetworkMode; 3] = [
        NetworkMode::Public,
        NetworkMode::NoNetwork,
        NetworkMode::Allowlist,
    ];

    /// The serialised name (`public`, `no-network`, `allowlist`).
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Public => "public",
            NetworkMode::NoNetwork => "no-network",
            NetworkMode::Allowlist => "allowlist",
        }
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NetworkMode {
    type Err = NetworkPolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NetworkMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| NetworkPolicyError::UnknownMode(s.to_string()))
    }
}

/// Why a network policy or one of its entries is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkPolicyError {
    /// The mode name is not one of `public`, `no-network`, `allowlist`.
    #[error("unknown network mode `{0}` (expected public, no-network or allowlist)")]
    UnknownMode(String),
    /// An `allowlist` policy without hosts.
    #[error("network mode `allowlist` requires at least one entry in allowed_hosts")]
    EmptyAllowlist,
    /// Hosts given for a mode that takes none.
    #[error("network mode `{0}` does not accept allowed_hosts")]
    UnexpectedHosts(NetworkMode),
    /// One allowlist entry is malformed.
    #[error("invalid allowed_hosts entry `{entry}`: {reason}")]
    InvalidEntry {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// An outbound network policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PolicyRepr")]
pub struct NetworkPolicy {
    /// The mode.
    pub network_mode: NetworkMode,
    /// Allowlist entries (hostnames, `*.` wildcards, IP addresses, CIDRs); only for `allowlist`.
    pub allowed_hosts: Vec<String>,
}

/// Accepted input forms of a policy: a bare mode string or a mapping.
#[derive(Deserialize)]
#[serde(untagged)]
enum PolicyRepr {
    Mode(String),
    Full {
        #[serde(default)]
        network_mode: Option<String>,
        #[serde(default)]
        allowed_hosts: Vec<String>,
    },
}

impl TryFrom<PolicyRepr> for NetworkPolicy {
    type Error = NetworkPolicyError;

    fn try_from(repr: PolicyRepr) -> Result<Self, Self::Error> {
        let (mode, allowed_hosts) = match repr {
            PolicyRepr::Mode(mode) => (Some(mode), Vec::new()),
            PolicyRepr::Full {
                network_mode,
                allowed_hosts,
            } => (network_mode, allowed_hosts),
        };
        Ok(NetworkPolicy {
            network_mode: mode
                .as_deref()
                .map(str::parse)
                .transpose()?
                .unwrap_or_default(),
            allowed_hosts,
        })
    }
}

impl NetworkPolicy {
    /// Unrestricted access (the default).
    pub fn public() -> Self {
        NetworkPolicy::default()
    }

    /// No outbound access.
    pub fn no_network() -> Self {
        NetworkPolicy {
            network_mode: NetworkMode::NoNetwork,
            allowed_hosts: Vec::new(),
        }
    }

    /// Access only to `hosts` (not normalised; see [`NetworkPolicy::normalized`]).
    pub fn allowlist<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        NetworkPolicy {
            network_mode: NetworkMode::Allowlist,
            allowed_hosts: hosts.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the policy is unrestricted.
    pub fn is_public(&self) -> bool {
        self.network_mode == NetworkMode::Public
    }

    /// Parses every allowlist entry.
    pub fn host_patterns(&self) -> Result<Vec<HostPattern>, NetworkPolicyError> {
        self.allowed_hosts
            .iter()
            .map(|h| HostPattern::parse(h))
            .collect()
    }

    /// Validates the policy and returns it with canonical, de-duplicated, sorted entries.
    pub fn normalized(&self) -> Result<NetworkPolicy, NetworkPolicyError> {
        match (self.network_mode, self.allowed_hosts.is_empty()) {
            (NetworkMode::Allowlist, true) => return Err(NetworkPolicyError::EmptyAllowlist),
            (NetworkMode::Public | NetworkMode::NoNetwork, false) => {
                return Err(NetworkPolicyError::UnexpectedHosts(self.network_mode))
            }
            _ => {}
        }
        let hosts: BTreeSet<String> = self
            .host_patterns()?
            .iter()
            .map(HostPattern::to_string)
            .collect();
        Ok(NetworkPolicy {
            network_mode: self.network_mode,
            allowed_hosts: hosts.into_iter().collect(),
        })
    }
}

impl From<NetworkMode> for NetworkPolicy {
    fn from(network_mode: NetworkMode) -> Self {
        NetworkPolicy {
            network_mode,
            allowed_hosts: Vec::new(),
        }
    }
}

/// One parsed allowlist entry. `Display` gives its canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// An exact hostname (lowercase, no trailing dot).
    Hostname(String),
    /// `*.<domain>`: any subdomain of the stored domain.
    Wildcard(String),
    /// A single IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A network: address with host bits cleared, and prefix length.
    Cidr(IpAddr, u8),
}

impl HostPattern {
    /// Parses one entry (trimmed and lowercased first).
    pub fn parse(entry: &str) -> Result<HostPattern, NetworkPolicyError> {
        let invalid = |reason| NetworkPolicyError::InvalidEntry {
            entry: entry.to_string(),
            reason,
        };
        let s = entry.trim().to_ascii_lowercase();
        if s.is_empty() {
            return Err(invalid("empty entry"));
        }
        if s.contains("://") {
            return Err(invalid("URLs are not allowed; give a bare host"));
        }
        if s == "*" {
            return Err(invalid(
                "a bare `*` is not allowed; use public mode instead",
            ));
        }
        if s.starts_with('[') {
            return Err(invalid("bracketed addresses and ports are not allowed"));
        }
        if let Some((addr, prefix)) = s.split_once('/') {
            let (Ok(addr), true) = (
                addr.parse::<IpAddr>(),
                !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()),
            ) else {
                return Err(invalid(
                    "paths are not allowed (only CIDR `address/prefix`)",
                ));
            };
            return match prefix.parse::<u8>() {
                Ok(p) if p <= max_prefix(addr) => Ok(HostPattern::Cidr(mask(addr, p), p)),
                _ => Err(invalid("CIDR prefix out of range")),
            };
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(HostPattern::Ip(ip));
        }
        if s.contains(':') {
            return Err(invalid("ports are not allowed"));
        }
        if let Some(domain) = s.strip_prefix("*.") {
            return valid_hostname(domain)
                .map(HostPattern::Wildcard)
                .ok_or_else(|| invalid("invalid wildcard domain"));
        }
        if s.contains('*') {
            return Err(invalid("wildcards are only allowed as a leading `*.`"));
        }
        valid_hostname(&s)
            .map(HostPattern::Hostname)
            .ok_or_else(|| invalid("not a valid hostname, IP address or CIDR"))
    }

    /// The entry type name used in provider capabilities:
    /// `hostname`, `wildcard`, `ipv4`, `ipv6`, `ipv4_cidr`, `ipv6_cidr`.
    pub fn entry_type(&self) -> &'static str {
        match self {
            HostPattern::Hostname(_) => "hostname",
            HostPattern::Wildcard(_) => "wildcard",
            HostPattern::Ip(IpAddr::V4(_)) => "ipv4",
            HostPattern::Ip(IpAddr::V6(_)) => "ipv6",
            HostPattern::Cidr(IpAddr::V4(_), _) => "ipv4_cidr",
            HostPattern::Cidr(IpAddr::V6(_), _) => "ipv6_cidr",
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Hostname(h) => f.write_str(h),
            HostPattern::Wildcard(d) => write!(f, "*.{d}"),
            HostPattern::Ip(ip) => write!(f, "{ip}"),
            HostPattern::Cidr(ip, p) => write!(f, "{ip}/{p}"),
        }
    }
}

impl FromStr for HostPattern {
    type Err = NetworkPolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostPattern::parse(s)
    }
}

fn max_prefix(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

/// Clears the host bits of `addr` beyond `prefix`.
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

/// Returns the hostname without its trailing dot if it is a valid RFC 1123 name.
fn valid_hostname(s: &str) -> Option<String> {
    let name = s.strip_suffix('.').unwrap_or(s);
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let last = name.rsplit('.').next()?;
    let ok = name.len() <= 253
        && name.split('.').all(label_ok)
        // An all-numeric last label is a malformed IPv4 address, not a hostname.
        && !last.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(hosts: &[&str]) -> Result<Vec<String>, NetworkPolicyError> {
        NetworkPolicy::allowlist(hosts.iter().copied())
            .normalized()
            .map(|p| p.allowed_hosts)
    }

    #[test]
    fn accepted_entries_are_canonicalised() {
        let cases: &[(&str, &str)] = &[
            ("example.com", "example.com"),
            ("  PyPI.org  ", "pypi.org"),
            ("example.com.", "example.com"),
            ("a-b.c1.example", "a-b.c1.example"),
            ("localhost", "localhost"),
            ("*.Example.com", "*.example.com"),
            ("10.1.2.3", "10.1.2.3"),
            ("2001:DB8:0:0::1", "2001:db8::1"),
            ("::1", "::1"),
            ("10.1.2.3/8", "10.0.0.0/8"),
            ("192.168.1.7/32", "192.168.1.7/32"),
            ("0.0.0.0/0", "0.0.0.0/0"),
            ("fd12:3456::1/8", "fd00::/8"),
            ("2001:db8::/128", "2001:db8::/128"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                norm(&[input]).unwrap(),
                vec![expected.to_string()],
                "{input}"
            );
        }
    }

    #[test]
    fn rejected_entries_name_the_entry() {
        let cases = [
            "",
            "   ",
            "*",
            "https://example.com",
            "example.com:443",
            "[::1]:443",
            "10.0.0.1:80",
            "example.com/path",
            "10.0.0.0/33",
            "fd00::/129",
            "10.0.0.0/",
            "a.*.example.com",
            "exa_mple.com",
            "-bad.example",
            "1.2.3",
            "999.1.1.1",
            "*.",
        ];
        for input in cases {
            let err = norm(&[input]).unwrap_err();
            assert!(
                matches!(&err, NetworkPolicyError::InvalidEntry { entry, .. } if entry == input),
                "{input}: {err}"
            );
            assert!(err.to_string().contains(&format!("`{input}`")));
        }
    }

    #[test]
    fn normalisation_dedupes_and_sorts() {
        let hosts = norm(&[
            "b.example",
            "A.example",
            "a.example.",
            "10.0.0.0/8",
            "10.9.9.9/8",
        ]);
        assert_eq!(hosts.unwrap(), ["10.0.0.0/8", "a.example", "b.example"]);
    }

    #[test]
    fn mode_and_host_list_consistency() {
        assert_eq!(
            NetworkPolicy::allowlist(Vec::<String>::new()).normalized(),
            Err(NetworkPolicyError::EmptyAllowlist)
        );
        let bad = NetworkPolicy {
            network_mode: NetworkMode::NoNetwork,
            allowed_hosts: vec!["x.com".into()],
        };
        assert_eq!(
            bad.normalized(),
            Err(NetworkPolicyError::UnexpectedHosts(NetworkMode::NoNetwork))
        );
        assert_eq!(
            NetworkPolicy::public().normalized().unwrap(),
            NetworkPolicy::public()
        );
    }

    #[test]
    fn serde_forms() {
        let p: NetworkPolicy = serde_json::from_str(r#""no-network""#).unwrap();
        assert_eq!(p, NetworkPolicy::no_network());
        let p: NetworkPolicy = serde_json::from_str("{}").unwrap();
        assert_eq!(p, NetworkPolicy::public());
        let p: NetworkPolicy = serde_json::from_str(
            r#"{"network_mode":"allowlist","allowed_hosts":["pypi.org"],"denied_hosts":[]}"#,
        )
        .unwrap();
        assert_eq!(p, NetworkPolicy::allowlist(["pypi.org"]));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"network_mode": "allowlist", "allowed_hosts": ["pypi.org"]})
        );
        let back: NetworkPolicy =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let err = serde_json::from_str::<NetworkPolicy>(r#""denylist""#).unwrap_err();
        assert!(err.to_string().contains("denylist"), "{err}");
        assert!(serde_json::from_str::<NetworkPolicy>(r#"{"network_mode":"denylist"}"#).is_err());
        assert!(serde_json::from_str::<NetworkMode>(r#""denylist""#).is_err());
    }

    #[test]
    fn entry_types() {
        let t = |s: &str| HostPattern::parse(s).unwrap().entry_type();
        assert_eq!(t("a.com"), "hostname");
        assert_eq!(t("*.a.com"), "wildcard");
        assert_eq!(t("1.1.1.1"), "ipv4");
        assert_eq!(t("::1"), "ipv6");
        assert_eq!(t("1.0.0.0/8"), "ipv4_cidr");
        assert_eq!(t("fd00::/8"), "ipv6_cidr");
    }
}
