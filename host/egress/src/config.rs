//! What a proxy is given: its policy, host map, token, log and limits.

use std::time::Duration;

use crate::auth::EgressToken;
use crate::event::EgressLog;
use crate::policy::EgressPolicy;
use crate::resolve::HostMap;

/// Everything one session's proxy needs.
#[derive(Debug, Clone)]
pub struct EgressConfig {
    /// What may be reached.
    pub policy: EgressPolicy,
    /// Static names, consulted before the system resolver.
    pub host_map: HostMap,
    /// The secret every request must present.
    pub token: EgressToken,
    /// Where refusals and allowed connections are reported.
    pub log: EgressLog,
    /// Resource bounds.
    pub limits: Limits,
}

impl EgressConfig {
    /// A configuration with an empty host map, a discarding log and default limits.
    pub fn new(policy: EgressPolicy, token: EgressToken) -> EgressConfig {
        EgressConfig {
            policy,
            host_map: HostMap::new(),
            token,
            log: EgressLog::discard(),
            limits: Limits::default(),
        }
    }

    /// With `host_map`.
    pub fn with_host_map(mut self, host_map: HostMap) -> EgressConfig {
        self.host_map = host_map;
        self
    }

    /// With `log`.
    pub fn with_log(mut self, log: EgressLog) -> EgressConfig {
        self.log = log;
        self
    }

    /// With `limits`.
    pub fn with_limits(mut self, limits: Limits) -> EgressConfig {
        self.limits = limits;
        self
    }
}

/// Resource bounds of one proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Client connections served at once (tunnels included); more wait in the listen backlog.
    pub max_connections: usize,
    /// A client connection (with its tunnel or upstream) on which no byte moved this long,
    /// in either direction, is closed.
    pub idle_timeout: Duration,
    /// Time a client has to send a request's headers.
    pub header_timeout: Duration,
    /// Time allowed to resolve a name.
    pub resolve_timeout: Duration,
    /// Time allowed to connect to one address.
    pub connect_timeout: Duration,
}

impl Default for Limits {
    /// 64 connections, 5 minutes idle, 30 s for headers, 10 s to resolve, 10 s to connect.
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            idle_timeout: Duration::from_secs(300),
            header_timeout: Duration::from_secs(30),
            resolve_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
        }
    }
}
