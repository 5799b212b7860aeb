//! Which network a container gets and which per-phase policies it can enforce.
//!
//! A container's network is fixed when it starts, and the daemons this provider targets
//! offer `host` (or another network, the `network` parameter) and `none`. So:
//!
//! - a `public` baseline runs on the `network` parameter and every phase of that container
//!   must be `public` too;
//! - any other baseline (`no-network`, `allowlist`, `denylist`) runs on `none`, and every
//!   phase of that container must be non-public: switching among those is changing (or
//!   stopping) the session's egress proxy, the only thing the container reaches.
//!
//! A plan mixing both in one container is refused when it is validated, before anything
//! opens, with one line naming the policy and the provider; `set_network_policy` refuses the
//! same switch at run time.

use agentcompass_egress::EgressPolicy;
use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, NetworkMode, NetworkPolicy,
};
use agentcompass_plugin_api::{Error, Result};

use crate::engine::Engine;

/// A container's network, fixed when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attachment {
    /// The `network` parameter (`host` by default): `public` phases only.
    Shared,
    /// `none`: every phase non-public, egress only through the session's proxy.
    Isolated,
}

impl Attachment {
    /// The attachment a baseline policy needs.
    pub(crate) fn of(policy: &NetworkPolicy) -> Attachment {
        if policy.network_mode == NetworkMode::Public {
            Attachment::Shared
        } else {
            Attachment::Isolated
        }
    }

    /// Whether `policy` can be enforced on this attachment.
    pub(crate) fn admits(self, policy: &NetworkPolicy) -> bool {
        Attachment::of(policy) == self
    }

    /// The refusal of `policy` (the plan field or phase `what`) on a container started with
    /// the baseline `baseline`.
    pub(crate) fn refusal(
        engine: Engine,
        baseline: &NetworkPolicy,
        what: &str,
        policy: &NetworkPolicy,
    ) -> Error {
        let network = match Attachment::of(baseline) {
            Attachment::Shared => "its own network",
            Attachment::Isolated => "network `none`",
        };
        Error::unsupported(format!(
            "environment `{engine}` cannot switch from its baseline network policy (`{}`) to the \
             {what} (`{}`): a container runs on {network} from its start, so its phases must \
             be all public or all non-public",
            baseline.network_mode, policy.network_mode
        ))
    }
}

/// The egress proxy's policy of a non-public phase: `None` for `no-network` (no proxy),
/// else the policy's entries (`allowlist`, and `denylist` where the contract has it).
pub(crate) fn egress_of(engine: Engine, policy: &NetworkPolicy) -> Result<Option<EgressPolicy>> {
    match policy.network_mode {
        NetworkMode::Public | NetworkMode::NoNetwork => Ok(None),
        _ => EgressPolicy::from_network_policy(policy)
            .map(Some)
            .map_err(|e| Error::invalid_input(format!("environment `{engine}`: {e}"))),
    }
}

/// Refuses a plan whose container would need both attachments: the task container's
/// baseline with its run policy (and the evaluation policy when the evaluation reuses it),
/// a fresh evaluation container's baseline with its evaluation policy.
pub(crate) fn check_phases(engine: Engine, plan: &ExecutionPlan) -> Result<()> {
    let public = NetworkPolicy::public();
    let baseline = plan.baseline_network_policy.as_ref().unwrap_or(&public);
    let mut checks = vec![(
        baseline,
        "run_network_policy",
        plan.run_network_policy.as_ref(),
    )];
    match plan.evaluation_environment_mode {
        EvaluationEnvironmentMode::Reuse => checks.push((
            baseline,
            "evaluation_network_policy",
            plan.evaluation_network_policy.as_ref(),
        )),
        EvaluationEnvironmentMode::Fresh => checks.push((
            plan.evaluation_baseline_network_policy
                .as_ref()
                .unwrap_or(baseline),
            "evaluation_network_policy",
            plan.evaluation_network_policy.as_ref(),
        )),
        EvaluationEnvironmentMode::NoEnvironment => {}
    }
    for (base, what, policy) in checks {
        if let Some(policy) = policy {
            if !Attachment::of(base).admits(policy) {
                return Err(Attachment::refusal(engine, base, what, policy));
            }
        }
    }
    Ok(())
}
