//! Name resolution: the caller's static host map (like Docker's `--add-host`) first, then
//! the system resolver.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::time::Duration;

use crate::target::{normalize_name, Host};

/// Why a host map entry is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostMapError {
    /// The name is not a valid hostname.
    #[error("invalid host map name `{name}`: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The address is not an IPv4 or IPv6 address.
    #[error("invalid host map address `{address}` for `{name}`: not an IP address")]
    InvalidAddress {
        /// The name it was given for.
        name: String,
        /// The address as given.
        address: String,
    },
}

/// Static name → address entries, consulted before the system resolver. A mapped name
/// resolves to its addresses only (never also through DNS).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostMap {
    entries: HashMap<String, Vec<IpAddr>>,
}

impl HostMap {
    /// An empty map.
    pub fn new() -> HostMap {
        HostMap::default()
    }

    /// Maps `name` (normalised: lowercase, no trailing dot) to `address` as well as to the
    /// addresses it already has.
    pub fn insert(&mut self, name: &str, address: IpAddr) -> Result<(), HostMapError> {
        let key = normalize_name(name).map_err(|reason| HostMapError::InvalidName {
            name: name.to_string(),
            reason,
        })?;
        let addresses = self.entries.entry(key).or_default();
        let address = address.to_canonical();
        if !addresses.contains(&address) {
            addresses.push(address);
        }
        Ok(())
    }

    /// A map of textual `(name, address)` pairs, as the runtime option
    /// `runtime.egress.hosts` gives them (`"models.internal" = "127.0.0.2"`).
    pub fn from_pairs<I, N, A>(pairs: I) -> Result<HostMap, HostMapError>
    where
        I: IntoIterator<Item = (N, A)>,
        N: AsRef<str>,
        A: AsRef<str>,
    {
        let mut map = HostMap::new();
        for (name, address) in pairs {
            let (name, address) = (name.as_ref(), address.as_ref());
            let ip =
                address
                    .trim()
                    .parse::<IpAddr>()
                    .map_err(|_| HostMapError::InvalidAddress {
                        name: name.to_string(),
                        address: address.to_string(),
                    })?;
            map.insert(name, ip)?;
        }
        Ok(map)
    }

    /// This map with every name `over` maps replaced by `over`'s addresses (names compared
    /// normalised): a provider's own table overridden by the runtime option.
    pub fn overridden_by(mut self, over: HostMap) -> HostMap {
        self.entries.extend(over.entries);
        self
    }

    /// The addresses of a normalised name, if it is mapped.
    pub fn get(&self, name: &str) -> Option<&[IpAddr]> {
        self.entries.get(name).map(Vec::as_slice)
    }

    /// Whether no name is mapped.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The `egress_hosts` parameter every provider that serves the egress proxy declares (a
/// table of name = address, read with `sdk::provider::string_table`).
pub fn egress_hosts_param() -> agentcompass_plugin_api::contracts::ConfigField {
    agentcompass_plugin_api::contracts::ConfigField::new(
        "egress_hosts",
        agentcompass_plugin_api::contracts::ConfigType::Object,
        serde_json::json!({}),
        "allowlist and denylist: static names the egress proxy resolves before DNS, \
         like Docker's --add-host (`{\"models.internal\": \"127.0.0.2\"}`); a mapped \
         name resolves to its address only; for a name also in the runtime option \
         `runtime.egress.hosts`, the runtime option's address is used",
    )
}

/// Why a name could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    #[error("could not resolve {0}")]
    NotFound(String),
    #[error("resolving {0} timed out")]
    TimedOut(String),
}

/// The addresses of `host`: an address literal is itself; a name is looked up in `map`,
/// then by the system resolver (within `timeout`).
pub(crate) async fn resolve(
    map: &HostMap,
    host: &Host,
    port: u16,
    timeout: Duration,
) -> Result<Vec<IpAddr>, ResolveError> {
    let name = match host {
        Host::Ip(ip) => return Ok(vec![*ip]),
        Host::Name(name) => name,
    };
    if let Some(addresses) = map.get(name) {
        return Ok(addresses.to_vec());
    }
    let lookup = tokio::net::lookup_host((name.as_str(), port));
    let found: io::Result<Vec<IpAddr>> = match tokio::time::timeout(timeout, lookup).await {
        Err(_) => return Err(ResolveError::TimedOut(name.clone())),
        Ok(found) => found.map(|addrs| addrs.map(|a| a.ip()).collect()),
    };
    match found {
        Ok(addresses) if !addresses.is_empty() => Ok(addresses),
        _ => Err(ResolveError::NotFound(name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overriding_map_replaces_a_name_whole() {
        let base = HostMap::from_pairs([
            ("Models.Internal.", "127.0.0.2"),
            ("a.internal", "127.0.0.4"),
        ])
        .unwrap();
        let over = HostMap::from_pairs([("models.internal", "127.0.0.3")]).unwrap();
        let merged = base.overridden_by(over);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(merged.get("models.internal"), Some(&[ip("127.0.0.3")][..]));
        assert_eq!(merged.get("a.internal"), Some(&[ip("127.0.0.4")][..]));
    }

    #[test]
    fn host_map_normalises_and_validates() {
        let map = HostMap::from_pairs([
            ("Models.Internal.", "127.0.0.2"),
            ("models.internal", "::ffff:127.0.0.2"),
            ("models.internal", "::1"),
        ])
        .unwrap();
        let expected: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap(), "::1".parse().unwrap()];
        assert_eq!(map.get("models.internal"), Some(expected.as_slice()));
        assert!(HostMap::from_pairs([("bad name", "127.0.0.2")]).is_err());
        assert!(HostMap::from_pairs([("127.0.0.9", "127.0.0.2")]).is_err());
        let err = HostMap::from_pairs([("x.internal", "localhost")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid host map address `localhost` for `x.internal`: not an IP address"
        );
    }

    #[tokio::test]
    async fn literals_and_mapped_names_never_reach_the_resolver() {
        let map = HostMap::from_pairs([("models.internal", "127.0.0.2")]).unwrap();
        let t = Duration::from_secs(1);
        let mapped = resolve(&map, &Host::Name("models.internal".into()), 80, t)
            .await
            .unwrap();
        assert_eq!(mapped, vec!["127.0.0.2".parse::<IpAddr>().unwrap()]);
        let literal = resolve(&map, &Host::Ip("::1".parse().unwrap()), 80, t)
            .await
            .unwrap();
        assert_eq!(literal, vec!["::1".parse::<IpAddr>().unwrap()]);
    }
}
