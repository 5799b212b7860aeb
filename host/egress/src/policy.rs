//! The egress policy: allowlist or denylist entries — host patterns of the network contract,
//! each with an optional port — checked on the requested name and on every resolved address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use agentcompass_plugin_api::contracts::{
    HostEntry, HostPattern, NetworkMode, NetworkPolicy, NetworkPolicyError,
};

/// Why a policy or one of its entries is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// An entry, or the network policy the egress policy was built from, is invalid.
    #[error(transparent)]
    Contract(#[from] NetworkPolicyError),
}

/// One policy entry: the network contract's [`HostEntry`] — a host pattern (hostname, `*.`
/// wildcard, IPv4/IPv6 address or CIDR) and an optional port, written `entry` or
/// `entry:port` (`[::1]:8080`, `[fd00::/8]:443` for IPv6), parsed by [`HostEntry::parse`].
pub type EgressRule = HostEntry;

/// Whether `rule` is a hostname or wildcard matching `name` (normalised: lowercase, no
/// trailing dot).
fn matches_name(rule: &EgressRule, name: &str) -> bool {
    match &rule.host {
        HostPattern::Hostname(h) => h == name,
        HostPattern::Wildcard(domain) => name
            .strip_suffix(domain.as_str())
            .and_then(|head| head.strip_suffix('.'))
            .is_some_and(|head| !head.is_empty()),
        HostPattern::Ip(_) | HostPattern::Cidr(..) => false,
    }
}

/// Whether `rule` is an address or CIDR containing `ip`.
fn matches_address(rule: &EgressRule, ip: IpAddr) -> bool {
    match rule.host {
        HostPattern::Ip(a) => contains(a, full_prefix(a), ip),
        HostPattern::Cidr(net, prefix) => contains(net, prefix, ip),
        HostPattern::Hostname(_) | HostPattern::Wildcard(_) => false,
    }
}

fn is_name(rule: &EgressRule) -> bool {
    matches!(
        rule.host,
        HostPattern::Hostname(_) | HostPattern::Wildcard(_)
    )
}

fn full_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

/// Whether `ip` lies in `net/prefix`. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the
/// IPv4 address it maps, and an IPv4 address lies in an IPv6 network when its mapped form
/// does: `::ffff:127.0.0.3` is inside `127.0.0.0/8`, and `127.0.0.3` inside `::/0`.
fn contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (net, ip.to_canonical()) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
        (IpAddr::V6(n), IpAddr::V4(a)) => v6_in(n, prefix, a.to_ipv6_mapped()),
        (IpAddr::V6(n), IpAddr::V6(a)) => v6_in(n, prefix, a),
    }
}

fn v6_in(net: Ipv6Addr, prefix: u8, a: Ipv6Addr) -> bool {
    let mask = u128::MAX
        .checked_shl(128 - u32::from(prefix.min(128)))
        .unwrap_or(0);
    u128::from(net) & mask == u128::from(a) & mask
}

/// Why an address is never a destination, whatever the policy: connecting to `0.0.0.0` or
/// `::` reaches the host's own loopback on Linux, and broadcast/multicast are not unicast.
pub(crate) fn never_a_destination(ip: IpAddr) -> Option<&'static str> {
    match ip.to_canonical() {
        IpAddr::V4(a) if a.octets()[0] == 0 => Some("an unspecified (0.0.0.0/8) address"),
        IpAddr::V4(a) if a == Ipv4Addr::BROADCAST => Some("the broadcast address"),
        IpAddr::V4(a) if a.is_multicast() => Some("a multicast address"),
        IpAddr::V6(a) if a.is_unspecified() => Some("the unspecified address"),
        IpAddr::V6(a) if a.is_multicast() => Some("a multicast address"),
        _ => None,
    }
}

/// Whether the entries list what is permitted or what is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EgressMode {
    /// Only what an entry matches is permitted.
    Allowlist,
    /// Everything is permitted except what an entry matches.
    Denylist,
}

impl EgressMode {
    /// `allowlist` or `denylist`.
    pub fn as_str(self) -> &'static str {
        match self {
            EgressMode::Allowlist => "allowlist",
            EgressMode::Denylist => "denylist",
        }
    }
}

/// What the proxy lets through: a mode and its entries. See the crate documentation for the
/// matching rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    mode: EgressMode,
    rules: Vec<EgressRule>,
}

/// The verdict on a requested name before anything is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NameVerdict {
    /// An allowlist name entry matches: every address the name resolves to is permitted.
    Allowed,
    /// Resolve the name and decide on its addresses.
    CheckAddresses,
    /// Refused without resolving.
    Refused(String),
}

impl EgressPolicy {
    /// A policy of parsed entries.
    pub fn new(mode: EgressMode, rules: Vec<EgressRule>) -> EgressPolicy {
        EgressPolicy { mode, rules }
    }

    /// An allowlist of `entries` (an empty one refuses everything).
    pub fn allowlist<I, S>(entries: I) -> Result<EgressPolicy, PolicyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(EgressPolicy::new(
            EgressMode::Allowlist,
            parse_all(entries)?,
        ))
    }

    /// A denylist of `entries` (an empty one permits everything).
    pub fn denylist<I, S>(entries: I) -> Result<EgressPolicy, PolicyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(EgressPolicy::new(EgressMode::Denylist, parse_all(entries)?))
    }

    /// The proxy's policy for a network policy of the contract: `allowlist` and `denylist`
    /// keep their entries, `no-network` is an empty allowlist and `public` an empty denylist.
    pub fn from_network_policy(policy: &NetworkPolicy) -> Result<EgressPolicy, PolicyError> {
        let policy = policy.normalized()?;
        match policy.network_mode {
            NetworkMode::Allowlist => EgressPolicy::allowlist(&policy.allowed_hosts),
            NetworkMode::Denylist => EgressPolicy::denylist(&policy.denied_hosts),
            NetworkMode::NoNetwork => Ok(EgressPolicy::new(EgressMode::Allowlist, Vec::new())),
            NetworkMode::Public => Ok(EgressPolicy::new(EgressMode::Denylist, Vec::new())),
        }
    }

    /// The mode.
    pub fn mode(&self) -> EgressMode {
        self.mode
    }

    /// The entries.
    pub fn rules(&self) -> &[EgressRule] {
        &self.rules
    }

    /// The verdict on a requested hostname (normalised) and port, before resolving it.
    pub(crate) fn check_name(&self, name: &str, port: u16) -> NameVerdict {
        let hit = self
            .rules
            .iter()
            .find(|r| r.port_matches(port) && matches_name(r, name));
        match (self.mode, hit) {
            (EgressMode::Allowlist, Some(_)) => NameVerdict::Allowed,
            // Resolving a name no entry names would only leak it to the resolver (a DNS
            // exfiltration channel), unless an address entry could still permit it.
            (EgressMode::Allowlist, None) if self.rules.iter().all(is_name) => {
                NameVerdict::Refused(format!("{name}:{port} is not in the allowlist"))
            }
            (EgressMode::Allowlist, None) => NameVerdict::CheckAddresses,
            (EgressMode::Denylist, Some(rule)) => {
                NameVerdict::Refused(format!("{name}:{port} matches the denylist entry {rule}"))
            }
            (EgressMode::Denylist, None) => NameVerdict::CheckAddresses,
        }
    }

    /// The addresses of `shown` (the requested host) that may be connected to on `port`, in
    /// resolver order; `name_allowed` when [`EgressPolicy::check_name`] said so. Refused when
    /// none is left — or, for a denylist, when any one is denied.
    pub(crate) fn permitted_addresses(
        &self,
        shown: &str,
        name_allowed: bool,
        addresses: &[IpAddr],
        port: u16,
    ) -> Result<Vec<IpAddr>, String> {
        let denied_by = |ip: IpAddr| {
            self.rules
                .iter()
                .find(|r| r.port_matches(port) && matches_address(r, ip))
        };
        let literal = shown.parse::<IpAddr>().is_ok();
        // "127.0.0.3 is ..." for an address literal, "name resolves to 127.0.0.3, ..." else.
        let subject = |ip: IpAddr, verb: &str| match literal {
            true => format!("{ip} {verb}"),
            false => format!("{shown} resolves to {ip},"),
        };
        if self.mode == EgressMode::Denylist {
            if let Some((ip, rule)) = addresses
                .iter()
                .find_map(|ip| denied_by(*ip).map(|r| (*ip, r)))
            {
                return Err(format!(
                    "{} inside the denylist entry {rule}",
                    subject(ip, "is")
                ));
            }
        }
        let permitted: Vec<IpAddr> = addresses
            .iter()
            .map(|ip| ip.to_canonical())
            .filter(|ip| never_a_destination(*ip).is_none())
            .filter(|ip| {
                self.mode == EgressMode::Denylist || name_allowed || denied_by(*ip).is_some()
            })
            .fold(Vec::new(), |mut out, ip| {
                if !out.contains(&ip) {
                    out.push(ip);
                }
                out
            });
        if !permitted.is_empty() {
            return Ok(permitted);
        }
        let first_never = addresses.first().and_then(|ip| never_a_destination(*ip));
        Err(match (addresses, first_never) {
            ([], _) => format!("{shown} has no address"),
            ([ip], Some(what)) => format!("{} {what}", subject(*ip, "is")),
            ([ip], None) if literal => {
                format!("{} is not in the allowlist", with_port(*ip, port))
            }
            ([ip], None) => format!("{shown}:{port} resolves to {ip}, not in the allowlist"),
            _ => format!(
                "{shown}:{port} resolves to {}, none of them permitted",
                list(addresses)
            ),
        })
    }
}

fn with_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

fn list(addresses: &[IpAddr]) -> String {
    let mut shown: Vec<String> = addresses.iter().take(4).map(IpAddr::to_string).collect();
    if addresses.len() > 4 {
        shown.push(format!("and {} more", addresses.len() - 4));
    }
    shown.join(", ")
}

fn parse_all<I, S>(entries: I) -> Result<Vec<EgressRule>, PolicyError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    entries
        .into_iter()
        .map(|e| Ok(HostEntry::parse(e.as_ref())?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn allow(entries: &[&str]) -> EgressPolicy {
        EgressPolicy::allowlist(entries).unwrap()
    }

    fn deny(entries: &[&str]) -> EgressPolicy {
        EgressPolicy::denylist(entries).unwrap()
    }

    #[test]
    fn entries_with_and_without_ports() {
        let cases: &[(&str, &str, Option<u16>)] = &[
            ("example.com", "example.com", None),
            ("Example.COM.:443", "example.com", Some(443)),
            ("*.pypi.org:443", "*.pypi.org", Some(443)),
            ("127.0.0.2", "127.0.0.2", None),
            ("127.0.0.2:8080", "127.0.0.2", Some(8080)),
            ("10.1.2.3/8", "10.0.0.0/8", None),
            ("10.0.0.0/8:443", "10.0.0.0/8", Some(443)),
            ("::1", "::1", None),
            ("2001:db8::1:443", "2001:db8::1:443", None),
            ("[::1]:8080", "::1", Some(8080)),
            ("[::1]", "::1", None),
            ("[fd00::/8]:443", "fd00::/8", Some(443)),
        ];
        for (entry, host, port) in cases {
            let rule = EgressRule::parse(entry).unwrap();
            assert_eq!(rule.host.to_string(), *host, "{entry}");
            assert_eq!(rule.port, *port, "{entry}");
            let again = EgressRule::parse(&rule.to_string()).unwrap();
            assert_eq!(again, rule, "{entry} round trip");
        }
    }

    #[test]
    fn malformed_entries_name_the_entry() {
        for entry in [
            "",
            "*",
            "example.com:0",
            "example.com:65536",
            "example.com:",
            "example.com:https",
            "[::1]:",
            "[::1",
            "[127.0.0.1]:80",
            "http://example.com",
            "a.*.example.com",
            "10.0.0.0/33:80",
            "1.2.3:80",
        ] {
            let err = EgressRule::parse(entry).unwrap_err();
            assert!(
                err.to_string().contains(&format!("`{entry}`")),
                "{entry}: {err}"
            );
        }
    }

    #[test]
    fn from_network_policy() {
        let p =
            EgressPolicy::from_network_policy(&NetworkPolicy::allowlist(["PyPI.org."])).unwrap();
        assert_eq!(p.mode(), EgressMode::Allowlist);
        assert_eq!(p.rules()[0].to_string(), "pypi.org");
        let none = EgressPolicy::from_network_policy(&NetworkPolicy::no_network()).unwrap();
        assert_eq!(
            (none.mode(), none.rules().len()),
            (EgressMode::Allowlist, 0)
        );
        let public = EgressPolicy::from_network_policy(&NetworkPolicy::public()).unwrap();
        assert_eq!(
            (public.mode(), public.rules().len()),
            (EgressMode::Denylist, 0)
        );
        assert!(
            EgressPolicy::from_network_policy(&NetworkPolicy::allowlist(Vec::<String>::new()))
                .is_err()
        );
        let deny = EgressPolicy::from_network_policy(&NetworkPolicy::denylist([
            "127.0.0.3:8080",
            "Evil.example",
        ]))
        .unwrap();
        assert_eq!(deny.mode(), EgressMode::Denylist);
        let rules: Vec<String> = deny.rules().iter().map(|r| r.to_string()).collect();
        assert_eq!(rules, ["127.0.0.3:8080", "evil.example"]);
        assert!(
            EgressPolicy::from_network_policy(&NetworkPolicy::denylist(Vec::<String>::new()))
                .is_err()
        );
    }

    #[test]
    fn allowlist_names_and_wildcards() {
        let p = allow(&["models.internal", "*.pypi.org:443"]);
        assert_eq!(p.check_name("models.internal", 80), NameVerdict::Allowed);
        assert_eq!(p.check_name("files.pypi.org", 443), NameVerdict::Allowed);
        assert_eq!(p.check_name("a.b.pypi.org", 443), NameVerdict::Allowed);
        // A wildcard is subdomains only; its port is enforced; names only, so no resolving.
        for (name, port) in [
            ("pypi.org", 443),
            ("files.pypi.org", 80),
            ("evilpypi.org", 443),
            ("pypi.org.evil.com", 443),
            ("sub.models.internal", 80),
        ] {
            assert!(
                matches!(p.check_name(name, port), NameVerdict::Refused(_)),
                "{name}:{port}"
            );
        }
        let mixed = allow(&["models.internal", "127.0.0.0/24"]);
        assert_eq!(
            mixed.check_name("other.internal", 80),
            NameVerdict::CheckAddresses
        );
        // A name entry permits every address of the name.
        assert_eq!(
            p.permitted_addresses("models.internal", true, &[ip("127.0.0.3"), ip("::1")], 80),
            Ok(vec![ip("127.0.0.3"), ip("::1")])
        );
    }

    #[test]
    fn allowlist_addresses_and_cidrs() {
        let p = allow(&["127.0.0.2", "10.0.0.0/8:443", "[::1]:8080"]);
        let ok = |addrs: &[&str], port| {
            let addrs: Vec<IpAddr> = addrs.iter().map(|a| ip(a)).collect();
            p.permitted_addresses("x", false, &addrs, port)
        };
        assert_eq!(ok(&["127.0.0.2"], 80), Ok(vec![ip("127.0.0.2")]));
        assert!(ok(&["127.0.0.3"], 80).is_err());
        assert_eq!(ok(&["10.9.8.7"], 443), Ok(vec![ip("10.9.8.7")]));
        assert!(ok(&["10.9.8.7"], 80).is_err());
        assert_eq!(ok(&["::1"], 8080), Ok(vec![ip("::1")]));
        assert!(ok(&["::1"], 80).is_err());
        // Only the permitted addresses of a name are kept.
        assert_eq!(
            ok(&["127.0.0.3", "127.0.0.2"], 80),
            Ok(vec![ip("127.0.0.2")])
        );
        // IPv4-mapped IPv6 is the IPv4 address, both ways.
        assert_eq!(ok(&["::ffff:127.0.0.2"], 80), Ok(vec![ip("127.0.0.2")]));
        assert!(ok(&["::ffff:127.0.0.3"], 80).is_err());
        let mapped = allow(&["::ffff:127.0.0.2", "::ffff:10.0.0.0/104"]);
        assert!(mapped
            .permitted_addresses("x", false, &[ip("127.0.0.2")], 1)
            .is_ok());
        assert!(mapped
            .permitted_addresses("x", false, &[ip("10.1.1.1")], 1)
            .is_ok());
        assert!(mapped
            .permitted_addresses("x", false, &[ip("11.1.1.1")], 1)
            .is_err());
    }

    #[test]
    fn denylist_refuses_names_and_any_denied_address() {
        let p = deny(&[
            "evil.example",
            "*.bad.example",
            "127.0.0.3",
            "10.0.0.0/8:22",
        ]);
        assert!(matches!(
            p.check_name("evil.example", 80),
            NameVerdict::Refused(_)
        ));
        assert!(matches!(
            p.check_name("x.bad.example", 80),
            NameVerdict::Refused(_)
        ));
        assert_eq!(
            p.check_name("good.example", 80),
            NameVerdict::CheckAddresses
        );
        assert_eq!(p.check_name("bad.example", 80), NameVerdict::CheckAddresses);
        // One denied address refuses the name: no choosing another one.
        let err = p
            .permitted_addresses(
                "rebind.example",
                false,
                &[ip("127.0.0.2"), ip("127.0.0.3")],
                80,
            )
            .unwrap_err();
        assert_eq!(
            err,
            "rebind.example resolves to 127.0.0.3, inside the denylist entry 127.0.0.3"
        );
        assert!(p
            .permitted_addresses("x", false, &[ip("::ffff:127.0.0.3")], 80)
            .is_err());
        assert!(p
            .permitted_addresses("x", false, &[ip("10.1.1.1")], 22)
            .is_err());
        assert_eq!(
            p.permitted_addresses("x", false, &[ip("10.1.1.1")], 80),
            Ok(vec![ip("10.1.1.1")])
        );
        // An IPv6 network contains the mapped IPv4 addresses.
        let all_v6 = deny(&["::/0"]);
        assert!(all_v6
            .permitted_addresses("x", false, &[ip("127.0.0.2")], 80)
            .is_err());
        assert_eq!(
            p.permitted_addresses("127.0.0.3", false, &[ip("127.0.0.3")], 80),
            Err("127.0.0.3 is inside the denylist entry 127.0.0.3".into())
        );
    }

    #[test]
    fn unspecified_broadcast_and_multicast_are_never_destinations() {
        let everything = deny(&[]);
        let open = allow(&["0.0.0.0/0", "::/0", "any.example"]);
        for a in [
            "0.0.0.0",
            "0.1.2.3",
            "::",
            "::ffff:0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "ff02::1",
        ] {
            assert!(
                everything
                    .permitted_addresses(a, false, &[ip(a)], 80)
                    .is_err(),
                "{a}"
            );
            assert!(
                open.permitted_addresses(a, false, &[ip(a)], 80).is_err(),
                "{a}"
            );
            assert!(
                open.permitted_addresses("any.example", true, &[ip(a)], 80)
                    .is_err(),
                "{a}"
            );
        }
        assert_eq!(
            everything.permitted_addresses("0.0.0.0", false, &[ip("0.0.0.0")], 80),
            Err("0.0.0.0 is an unspecified (0.0.0.0/8) address".into())
        );
        // Duplicates (an address and its mapped form) are connected to once.
        assert_eq!(
            everything.permitted_addresses(
                "x",
                false,
                &[ip("127.0.0.2"), ip("::ffff:127.0.0.2")],
                80
            ),
            Ok(vec![ip("127.0.0.2")])
        );
    }

    #[test]
    fn refusal_messages() {
        let p = allow(&["127.0.0.2"]);
        assert_eq!(
            p.permitted_addresses("127.0.0.3", false, &[ip("127.0.0.3")], 80),
            Err("127.0.0.3:80 is not in the allowlist".into())
        );
        assert_eq!(
            p.permitted_addresses("::1", false, &[ip("::1")], 80),
            Err("[::1]:80 is not in the allowlist".into())
        );
        assert_eq!(
            p.permitted_addresses("other.internal", false, &[ip("127.0.0.3")], 80),
            Err("other.internal:80 resolves to 127.0.0.3, not in the allowlist".into())
        );
        assert_eq!(
            p.permitted_addresses("n.internal", false, &[ip("127.0.0.3"), ip("0.0.0.0")], 80),
            Err("n.internal:80 resolves to 127.0.0.3, 0.0.0.0, none of them permitted".into())
        );
        assert_eq!(
            p.permitted_addresses("zero.internal", true, &[ip("0.0.0.0")], 80),
            Err("zero.internal resolves to 0.0.0.0, an unspecified (0.0.0.0/8) address".into())
        );
        assert_eq!(
            p.permitted_addresses("other.internal", false, &[], 80),
            Err("other.internal has no address".into())
        );
    }
}
