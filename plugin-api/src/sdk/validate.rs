//! The default capability check every provider runs before allocating anything.

use crate::contracts::{ExecutionPlan, NetworkPolicy, ProviderCapabilities};
use crate::{Error, Result};

/// Refuses network modes the provider cannot enforce and phase policies that differ from the
/// baseline when the provider cannot switch policies at run time. Fails closed.
pub fn validate_against_capabilities(
    caps: &ProviderCapabilities,
    plan: &ExecutionPlan,
) -> Result<()> {
    let provider = &plan.environment.id;
    let public = NetworkPolicy::default();
    let baseline = plan.baseline_network_policy.as_ref().unwrap_or(&public);
    let phases = [
        ("baseline_network_policy", Some(baseline)),
        ("run_network_policy", plan.run_network_policy.as_ref()),
        (
            "evaluation_network_policy",
            plan.evaluation_network_policy.as_ref(),
        ),
        (
            "evaluation_baseline_network_policy",
            plan.evaluation_baseline_network_policy.as_ref(),
        ),
    ];
    for (field, policy) in phases {
        let Some(policy) = policy else { continue };
        if !caps.network_modes.contains(&policy.network_mode) {
            return Err(Error::unsupported(format!(
                "environment `{provider}` cannot enforce {field} mode `{}` (supported: {})",
                policy.network_mode,
                caps.network_modes
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let is_phase = field == "run_network_policy" || field == "evaluation_network_policy";
        if is_phase && policy != baseline && !caps.dynamic_network_policy {
            return Err(Error::unsupported(format!(
                "environment `{provider}` cannot switch from its baseline network policy to the \
                 {field} at run time"
            )));
        }
    }
    Ok(())
}
