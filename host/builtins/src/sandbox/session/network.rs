//! The network a session's commands get: the current policy and the egress proxies the
//! session started.

use std::sync::{Arc, PoisonError};

use agentcompass_egress::EgressPolicy;
use agentcompass_plugin_api::contracts::{NetworkMode, NetworkPolicy};
use agentcompass_plugin_api::{Error, Result};

use super::super::egress::Egress;
use super::super::ID;
use super::SandboxSession;

/// The network a command gets when it starts: the session's policy at that moment.
#[derive(Clone)]
pub(in crate::sandbox) struct Network {
    /// Normalized (the key of the session's proxies).
    pub(in crate::sandbox) policy: NetworkPolicy,
    /// `allowlist`, `denylist`: the proxy of this policy.
    pub(in crate::sandbox) egress: Option<Arc<Egress>>,
}

impl Network {
    /// Whether the command gets its own empty network namespace (`no-network`, `allowlist`,
    /// `denylist`).
    pub(in crate::sandbox) fn isolated(&self) -> bool {
        self.policy.network_mode != NetworkMode::Public
    }
}

impl SandboxSession {
    /// The network a command started now gets.
    pub(in crate::sandbox) fn current_network(&self) -> Network {
        self.network
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The proxy of the normalized allowlist or denylist `policy`: the session's own if it has one, else
    /// started now (on `<dir>/egress-N/s`), and whether it was.
    pub(super) fn proxy_for(&self, policy: &NetworkPolicy) -> Result<(Arc<Egress>, bool)> {
        let mut proxies = self.proxies.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, egress)) = proxies.iter().find(|(p, _)| p == policy) {
            return Ok((egress.clone(), false));
        }
        let egress_policy = EgressPolicy::from_network_policy(policy)
            .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?;
        let name = match proxies.len() {
            0 => "egress".to_string(),
            n => format!("egress-{n}"),
        };
        let egress = Arc::new(Egress::start(
            &self.dir,
            &name,
            egress_policy,
            self.egress_hosts.clone(),
            &self.id,
        )?);
        proxies.push((policy.clone(), egress.clone()));
        Ok((egress, true))
    }

    /// Stops every proxy the session started.
    pub(super) async fn stop_proxies(&self) {
        let proxies: Vec<Arc<Egress>> = self
            .proxies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, e)| e.clone())
            .collect();
        for egress in proxies {
            egress.stop().await;
        }
    }
}
