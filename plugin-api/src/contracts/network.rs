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
    /// Outbound access to everything but `denied_hosts`.
    #[serde(rename = "denylist")]
    Denylist,
}

impl NetworkMode {
    /// All modes.
    pub const ALL: [NetworkMode; 4] = [
        NetworkMode::Public,
        NetworkMode::NoNetwork,
        NetworkMode::Allowlist,
        NetworkMode::Denylist,
    ];

    /// The serialised name (`public`, `no-network`, `allowlist`, `denylist`).
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Public => "public",
            NetworkMode::NoNetwork => "no-network",
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::Denylist => "denylist",
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

/// The entry type a provider lists in [`super::ProviderCapabilities::allowlist_entry_types`]
/// when it enforces entries with a port (`host:port`); without it, such entries are refused.
pub const PORT_ENTRY_TYPE: &str = "port";

/// Why a network policy or one of its entries is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkPolicyError {
    /// The mode name is not one of `public`, `no-network`, `allowlist`, `denylist`.
    #[error("unknown network mode `{0}` (expected public, no-network, allowlist or denylist)")]
    UnknownMode(String),
    /// An `allowlist` policy without hosts.
    #[error("network mode `allowlist` requires at least one entry in allowed_hosts")]
    EmptyAllowlist,
    /// A `denylist` policy without hosts.
    #[error("network mode `denylist` requires at least one entry in denied_hosts")]
    EmptyDenylist,
    /// `allowed_hosts` given for a mode other than `allowlist`.
    #[error("network mode `{0}` does not accept allowed_hosts")]
    UnexpectedHosts(NetworkMode),
    /// `denied_hosts` given for a mode other than `denylist`.
    #[error("network mode `{0}` does not accept denied_hosts")]
    UnexpectedDeniedHosts(NetworkMode),
    /// One entry is malformed.
    #[error("invalid {list} entry `{entry}`: {reason}")]
    InvalidEntry {
        /// The list it is in (`allowed_hosts`, `denied_hosts`), or `host` for an entry
        /// parsed on its own.
        list: &'static str,
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl NetworkPolicyError {
    /// The same error, an invalid entry naming `list` as the list it is in.
    fn in_list(self, list: &'static str) -> NetworkPolicyError {
        match self {
            NetworkPolicyError::InvalidEntry { entry, reason, .. } => {
                NetworkPolicyError::InvalidEntry {
                    list,
                    entry,
                    reason,
                }
            }
            other => other,
        }
    }
}

/// An outbound network policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PolicyRepr")]
pub struct NetworkPolicy {
    /// The mode.
    pub network_mode: NetworkMode,
    /// Allowlist entries ([`HostEntry`]: hostnames, `*.` wildcards, IP addresses, CIDRs,
    /// each with an optional port); only for `allowlist`.
    pub allowed_hosts: Vec<String>,
    /// Denylist entries (as `allowed_hosts`); only for `denylist`. Not serialised when
    /// empty, so the policies of the other modes are written as before it existed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied_hosts: Vec<String>,
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
        allowed_hosts: Vec<EntryRepr>,
        #[serde(default)]
        denied_hosts: Vec<EntryRepr>,
    },
}

/// Accepted input forms of one entry: its text, or a mapping `{host, port}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum EntryRepr {
    Text(String),
    Mapping(EntryMapping),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryMapping {
    host: String,
    #[serde(default)]
    port: Option<u16>,
}

impl EntryRepr {
    /// The entry as text: `{host, port}` is written `host:port` (`[host]:port` when the host
    /// holds a `:`, an IPv6 address or network).
    fn into_text(self) -> String {
        match self {
            EntryRepr::Text(text) => text,
            EntryRepr::Mapping(EntryMapping { host, port: None }) => host,
            EntryRepr::Mapping(EntryMapping {
                host,
                port: Some(port),
            }) if host.contains(':') => format!("[{}]:{port}", host.trim()),
            EntryRepr::Mapping(EntryMapping {
                host,
                port: Some(port),
            }) => format!("{}:{port}", host.trim()),
        }
    }
}

impl TryFrom<PolicyRepr> for NetworkPolicy {
    type Error = NetworkPolicyError;

    fn try_from(repr: PolicyRepr) -> Result<Self, Self::Error> {
        let (mode, allowed_hosts, denied_hosts) = match repr {
            PolicyRepr::Mode(mode) => (Some(mode), Vec::new(), Vec::new()),
            PolicyRepr::Full {
                network_mode,
                allowed_hosts,
                denied_hosts,
            } => (network_mode, allowed_hosts, denied_hosts),
        };
        let texts = |list: Vec<EntryRepr>| list.into_iter().map(EntryRepr::into_text).collect();
        Ok(NetworkPolicy {
            network_mode: mode
                .as_deref()
                .map(str::parse)
                .transpose()?
                .unwrap_or_default(),
            allowed_hosts: texts(allowed_hosts),
            denied_hosts: texts(denied_hosts),
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
        NetworkPolicy::from(NetworkMode::NoNetwork)
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
            denied_hosts: Vec::new(),
        }
    }

    /// Access to everything but `hosts` (not normalised; see [`NetworkPolicy::normalized`]).
    pub fn denylist<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        NetworkPolicy {
            network_mode: NetworkMode::Denylist,
            allowed_hosts: Vec::new(),
            denied_hosts: hosts.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the policy is unrestricted.
    pub fn is_public(&self) -> bool {
        self.network_mode == NetworkMode::Public
    }

    /// Parses every allowlist entry as a bare host pattern: an entry with a port is an error
    /// (see [`NetworkPolicy::entries`] for entries with ports and denylists).
    pub fn host_patterns(&self) -> Result<Vec<HostPattern>, NetworkPolicyError> {
        self.allowed_hosts
            .iter()
            .map(|h| HostPattern::parse(h).map_err(|e| e.in_list("allowed_hosts")))
            .collect()
    }

    /// Parses every entry of both lists (`allowed_hosts`, then `denied_hosts`; a normalised
    /// policy has entries only in the list of its mode).
    pub fn entries(&self) -> Result<Vec<HostEntry>, NetworkPolicyError> {
        let parse =
            |list: &'static str| move |h: &String| HostEntry::parse(h).map_err(|e| e.in_list(list));
        self.allowed_hosts
            .iter()
            .map(parse("allowed_hosts"))
            .chain(self.denied_hosts.iter().map(parse("denied_hosts")))
            .collect()
    }

    /// Validates the policy and returns it with canonical, de-duplicated, sorted entries.
    pub fn normalized(&self) -> Result<NetworkPolicy, NetworkPolicyError> {
        let mode = self.network_mode;
        if mode != NetworkMode::Allowlist && !self.allowed_hosts.is_empty() {
            return Err(NetworkPolicyError::UnexpectedHosts(mode));
        }
        if mode != NetworkMode::Denylist && !self.denied_hosts.is_empty() {
            return Err(NetworkPolicyError::UnexpectedDeniedHosts(mode));
        }
        match mode {
            NetworkMode::Allowlist if self.allowed_hosts.is_empty() => {
                return Err(NetworkPolicyError::EmptyAllowlist)
            }
            NetworkMode::Denylist if self.denied_hosts.is_empty() => {
                return Err(NetworkPolicyError::EmptyDenylist)
            }
            _ => {}
        }
        let canonical = |list: &[String], name: &'static str| {
            list.iter()
                .map(|h| {
                    HostEntry::parse(h)
                        .map(|e| e.to_string())
                        .map_err(|e| e.in_list(name))
                })
                .collect::<Result<BTreeSet<String>, _>>()
                .map(|set| set.into_iter().collect::<Vec<_>>())
        };
        Ok(NetworkPolicy {
            network_mode: mode,
            allowed_hosts: canonical(&self.allowed_hosts, "allowed_hosts")?,
            denied_hosts: canonical(&self.denied_hosts, "denied_hosts")?,
        })
    }
}

impl From<NetworkMode> for NetworkPolicy {
    fn from(network_mode: NetworkMode) -> Self {
        NetworkPolicy {
            network_mode,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
        }
    }
}

/// One parsed host pattern (an entry without its port). `Display` gives its canonical form.
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
    /// Parses one pattern (trimmed and lowercased first); a port is an error here (see
    /// [`HostEntry::parse`]).
    pub fn parse(entry: &str) -> Result<HostPattern, NetworkPolicyError> {
        let invalid = |reason| NetworkPolicyError::InvalidEntry {
            list: "host",
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

    /// Whether it is an IPv6 address or network (written in brackets before a port).
    fn is_ipv6(&self) -> bool {
        matches!(
            self,
            HostPattern::Ip(IpAddr::V6(_)) | HostPattern::Cidr(IpAddr::V6(_), _)
        )
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

/// One allowlist or denylist entry: a host pattern and an optional port. Written `pattern`
/// or `pattern:port`; an IPv6 address or network with a port is bracketed (`[::1]:8080`,
/// `[fd00::/8]:443`), since `2001:db8::1:443` is itself an address. `Display` gives its
/// canonical form (the pattern's, then `:port`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostEntry {
    /// What the entry matches.
    pub host: HostPattern,
    /// The only port it matches; `None` matches every port.
    pub port: Option<u16>,
}

impl HostEntry {
    /// Parses one entry (trimmed and lowercased, as [`HostPattern::parse`]).
    pub fn parse(entry: &str) -> Result<HostEntry, NetworkPolicyError> {
        let invalid = |reason| NetworkPolicyError::InvalidEntry {
            list: "host",
            entry: entry.to_string(),
            reason,
        };
        // The pattern's own error, naming the whole entry.
        let pattern = |text: &str| {
            HostPattern::parse(text).map_err(|e| match e {
                NetworkPolicyError::InvalidEntry { reason, .. } => invalid(reason),
                other => other,
            })
        };
        let s = entry.trim();
        if let Some(inner) = s.strip_prefix('[') {
            let (inner, rest) = inner
                .split_once(']')
                .ok_or_else(|| invalid("an unclosed `[`"))?;
            if !inner.contains(':') {
                return Err(invalid("brackets are only for IPv6 addresses"));
            }
            let host = pattern(inner)?;
            let port = match rest {
                "" => None,
                _ => Some(
                    rest.strip_prefix(':')
                        .and_then(parse_port)
                        .ok_or_else(|| invalid("expected `:port` (1-65535) after `]`"))?,
                ),
            };
            return Ok(HostEntry { host, port });
        }
        let whole = match pattern(s) {
            Ok(host) => return Ok(HostEntry { host, port: None }),
            Err(whole) => whole,
        };
        // `host:port`: one `:` (an IPv6 address with a port is bracketed); never a URL.
        let Some((host, port)) = s
            .rsplit_once(':')
            .filter(|(h, _)| !h.contains(':') && !s.contains("://"))
        else {
            return Err(whole);
        };
        let port = parse_port(port).ok_or_else(|| invalid("port must be 1-65535"))?;
        Ok(HostEntry {
            host: pattern(host)?,
            port: Some(port),
        })
    }

    /// The entry type of its pattern (see [`HostPattern::entry_type`]); an entry with a port
    /// needs [`PORT_ENTRY_TYPE`] as well.
    pub fn entry_type(&self) -> &'static str {
        self.host.entry_type()
    }

    /// Whether the entry matches connections to `port`.
    pub fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

impl fmt::Display for HostEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            None => write!(f, "{}", self.host),
            Some(port) if self.host.is_ipv6() => write!(f, "[{}]:{port}", self.host),
            Some(port) => write!(f, "{}:{port}", self.host),
        }
    }
}

impl FromStr for HostEntry {
    type Err = NetworkPolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostEntry::parse(s)
    }
}

/// A decimal port, 1-65535.
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p != 0)
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
            "https://example.com:443",
            "example.com:0",
            "example.com:65536",
            "example.com:",
            "example.com:https",
            "[::1]:",
            "[::1",
            "[127.0.0.1]:80",
            "10.0.0.0/33:80",
            "1.2.3:80",
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
            denied_hosts: Vec::new(),
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
        // Without denied hosts a policy is written as before `denied_hosts` existed.
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"network_mode": "allowlist", "allowed_hosts": ["pypi.org"]})
        );
        assert_eq!(
            serde_json::to_value(NetworkPolicy::public()).unwrap(),
            serde_json::json!({"network_mode": "public", "allowed_hosts": []})
        );
        let back: NetworkPolicy =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let p: NetworkPolicy = serde_json::from_str(r#""denylist""#).unwrap();
        assert_eq!(p.network_mode, NetworkMode::Denylist);
        assert_eq!(p.normalized(), Err(NetworkPolicyError::EmptyDenylist));
        let deny = NetworkPolicy::denylist(["evil.example"]);
        let value = serde_json::to_value(&deny).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"network_mode": "denylist", "allowed_hosts": [], "denied_hosts": ["evil.example"]})
        );
        assert_eq!(
            serde_json::from_value::<NetworkPolicy>(value).unwrap(),
            deny
        );
        let err = serde_json::from_str::<NetworkPolicy>(r#""greylist""#).unwrap_err();
        assert!(err.to_string().contains("greylist"), "{err}");
    }

    #[test]
    fn entries_as_host_port_mappings() {
        let p: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "network_mode": "allowlist",
            "allowed_hosts": [
                "a.example",
                {"host": "b.example", "port": 443},
                {"host": "::1", "port": 8080},
                {"host": "fd00::/8", "port": 22},
                {"host": "c.example"},
            ],
        }))
        .unwrap();
        assert_eq!(
            p.normalized().unwrap().allowed_hosts,
            [
                "[::1]:8080",
                "[fd00::/8]:22",
                "a.example",
                "b.example:443",
                "c.example"
            ]
        );
        for bad in [
            serde_json::json!({"host": "a.example", "ports": 443}),
            serde_json::json!({"host": "a.example", "port": 70000}),
            serde_json::json!({"port": 443}),
        ] {
            let policy = serde_json::json!({"network_mode": "denylist", "denied_hosts": [bad]});
            assert!(
                serde_json::from_value::<NetworkPolicy>(policy).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn entries_with_ports() {
        let cases: &[(&str, &str, Option<u16>, &str)] = &[
            ("example.com", "example.com", None, "example.com"),
            (
                "Example.COM.:443",
                "example.com",
                Some(443),
                "example.com:443",
            ),
            ("*.pypi.org:443", "*.pypi.org", Some(443), "*.pypi.org:443"),
            ("127.0.0.2:8080", "127.0.0.2", Some(8080), "127.0.0.2:8080"),
            ("10.1.2.3/8:443", "10.0.0.0/8", Some(443), "10.0.0.0/8:443"),
            (
                "2001:db8::1:443",
                "2001:db8::1:443",
                None,
                "2001:db8::1:443",
            ),
            ("[::1]:8080", "::1", Some(8080), "[::1]:8080"),
            ("[::1]", "::1", None, "::1"),
            ("[FD00::1/8]:443", "fd00::/8", Some(443), "[fd00::/8]:443"),
        ];
        for (input, host, port, canonical) in cases {
            let entry = HostEntry::parse(input).unwrap();
            assert_eq!(
                (entry.host.to_string().as_str(), entry.port),
                (*host, *port),
                "{input}"
            );
            assert_eq!(entry.to_string(), *canonical, "{input}");
            assert_eq!(HostEntry::parse(canonical).unwrap(), entry, "{input}");
        }
        let entry = HostEntry::parse("a.example:80").unwrap();
        assert!(entry.port_matches(80) && !entry.port_matches(81));
        assert!(HostEntry::parse("a.example").unwrap().port_matches(81));
        // A bare host pattern has no port.
        let err = NetworkPolicy::allowlist(["a.example:80"])
            .host_patterns()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid allowed_hosts entry `a.example:80`"),
            "{err}"
        );
        assert_eq!(
            NetworkPolicy::allowlist(["a.example:80"])
                .entries()
                .unwrap(),
            [entry]
        );
    }

    #[test]
    fn denylist_policies() {
        let p = NetworkPolicy::denylist(["B.example", "127.0.0.3:80", "b.example."]);
        assert_eq!(
            p.normalized().unwrap(),
            NetworkPolicy::denylist(["127.0.0.3:80", "b.example"])
        );
        assert_eq!(
            NetworkPolicy::denylist(Vec::<String>::new()).normalized(),
            Err(NetworkPolicyError::EmptyDenylist)
        );
        let mut both = NetworkPolicy::denylist(["a.example"]);
        both.allowed_hosts.push("b.example".into());
        assert_eq!(
            both.normalized(),
            Err(NetworkPolicyError::UnexpectedHosts(NetworkMode::Denylist))
        );
        let mut allow = NetworkPolicy::allowlist(["a.example"]);
        allow.denied_hosts.push("b.example".into());
        let err = allow.normalized().unwrap_err();
        assert_eq!(
            err.to_string(),
            "network mode `allowlist` does not accept denied_hosts"
        );
        let mut public = NetworkPolicy::public();
        public.denied_hosts.push("b.example".into());
        assert_eq!(
            public.normalized(),
            Err(NetworkPolicyError::UnexpectedDeniedHosts(
                NetworkMode::Public
            ))
        );
        let err = NetworkPolicy::denylist(["https://x"])
            .normalized()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid denied_hosts entry `https://x`:"),
            "{err}"
        );
        assert_eq!(
            NetworkPolicyError::EmptyDenylist.to_string(),
            "network mode `denylist` requires at least one entry in denied_hosts"
        );
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
