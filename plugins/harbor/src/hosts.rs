//! Harbor's `allowed_hosts` rules (`_validate_allowed_host_names` in Harbor's
//! `models/task/config.py`): entries are trimmed, lower-cased and stripped of trailing dots;
//! an entry with `/` is a CIDR range whose host bits are clear (an IPv4 mask may also be
//! written as a netmask or host mask), one with `:` an IPv6 address, one starting `*.` a
//! wildcard over a hostname, anything else a hostname of `[a-z0-9-]` labels (so text that
//! is not a valid IP address, such as `999.1.1.1`, is a hostname).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One entry as Harbor normalises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostEntry {
    /// An entry the host's network contract can hold, in canonical text.
    Kept(String),
    /// A hostname Harbor accepts but no DNS name can match (an all-numeric last label, or
    /// over 253 characters); the shared network contract cannot hold it.
    Unmatchable(String),
}

/// Why an entry is refused (Harbor's messages, shortened).
pub(crate) type HostError = &'static str;

/// Validates and normalises one `allowed_hosts` entry as Harbor does.
pub(crate) fn harbor_host(entry: &str) -> Result<HostEntry, HostError> {
    let host = entry.trim().to_lowercase();
    let host = host.trim_end_matches('.');
    if host.is_empty() {
        return Err("an empty entry");
    }
    let invalid = "a hostname, an IP address or an IP CIDR range (not a URL, port or path)";
    if host.contains('/') {
        return cidr(host).map(HostEntry::Kept).ok_or(invalid);
    }
    if host.contains(':') {
        if host.contains('%') {
            return Err(invalid);
        }
        return host
            .parse::<Ipv6Addr>()
            .map(|ip| HostEntry::Kept(ip.to_string()))
            .map_err(|_| invalid);
    }
    if host.contains('[') || host.contains(']') {
        return Err(invalid);
    }
    let name = if let Some(domain) = host.strip_prefix("*.") {
        if domain.is_empty() {
            return Err("a wildcard entry with a hostname suffix");
        }
        if domain.parse::<IpAddr>().is_ok() {
            return Err("a wildcard over a hostname, not over an IP address");
        }
        domain
    } else if host.contains('*') {
        return Err("a wildcard only as a leading `*.`");
    } else {
        host
    };
    if !name.split('.').all(label_ok) {
        return Err("letters, digits, hyphens and dots (a valid hostname or `*.` pattern)");
    }
    if host.parse::<IpAddr>().is_ok() {
        return Ok(HostEntry::Kept(host.to_string()));
    }
    let last_numeric = name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    if last_numeric || name.len() > 253 {
        return Ok(HostEntry::Unmatchable(host.to_string()));
    }
    Ok(HostEntry::Kept(host.to_string()))
}

/// `^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`.
fn label_ok(label: &str) -> bool {
    let bytes = label.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
        && bytes.iter().all(|b| inner(b) || *b == b'-')
}

/// Python's `ip_network(text, strict=True)`, in canonical `address/prefix` text.
fn cidr(text: &str) -> Option<String> {
    if text.contains('%') {
        return None;
    }
    let (address, mask) = text.split_once('/')?;
    let address: IpAddr = address.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix = if !mask.is_empty() && mask.bytes().all(|b| b.is_ascii_digit()) {
        mask.parse::<u32>().ok().filter(|p| *p <= max)?
    } else if address.is_ipv4() {
        ipv4_mask_prefix(mask.parse().ok()?)?
    } else {
        return None;
    };
    let bits: u128 = match address {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    };
    let host_bits = if prefix == max {
        0
    } else {
        bits & ((1u128 << (max - prefix)) - 1)
    };
    (host_bits == 0).then(|| format!("{address}/{prefix}"))
}

/// The prefix length of an IPv4 netmask (`255.0.0.0`) or, failing that, host mask
/// (`0.255.255.255`).
fn ipv4_mask_prefix(mask: Ipv4Addr) -> Option<u32> {
    let bits = u32::from(mask);
    let as_netmask =
        |m: u32| (m.leading_ones() + m.trailing_zeros() == 32).then(|| m.leading_ones());
    as_netmask(bits).or_else(|| as_netmask(!bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_follow_harbor() {
        let kept = |s: &str| Ok(HostEntry::Kept(s.to_string()));
        let odd = |s: &str| Ok(HostEntry::Unmatchable(s.to_string()));
        for (entry, expected) in [
            (" PyPI.org. ", kept("pypi.org")),
            ("a.com..", kept("a.com")),
            ("*.Example.com", kept("*.example.com")),
            ("10.1.2.3", kept("10.1.2.3")),
            ("10.0.0.0/8", kept("10.0.0.0/8")),
            ("10.0.0.0/08", kept("10.0.0.0/8")),
            ("10.0.0.0/255.0.0.0", kept("10.0.0.0/8")),
            ("10.0.0.0/0.255.255.255", kept("10.0.0.0/8")),
            ("2001:DB8::1", kept("2001:db8::1")),
            ("2001:db8::/32", kept("2001:db8::/32")),
            ("999.1.1.1", odd("999.1.1.1")),
            ("01.2.3.4", odd("01.2.3.4")),
            ("*.999.1.1.1", odd("*.999.1.1.1")),
        ] {
            assert_eq!(harbor_host(entry), expected, "{entry:?}");
        }
        for entry in [
            "",
            " . ",
            "10.0.0.1/8",
            "10.0.0.0/33",
            "10.0.0.0/ 8",
            "https://a.com",
            "a.com:80",
            "a.com/path",
            "[::1]",
            "fe80::1%eth0",
            "*.",
            "*.1.2.3.4",
            "a*.com",
            "under_score.com",
            "-a.com",
        ] {
            assert!(harbor_host(entry).is_err(), "{entry:?}");
        }
    }
}
