//! The default capability check every provider runs before allocating anything.

use crate::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, NetworkPolicy, ProviderCapabilities,
    ResourceRequirements,
};
use crate::{Error, Result};

fn modes(caps: &ProviderCapabilities) -> String {
    caps.network_modes
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn resource_fields(resources: &ResourceRequirements) -> Vec<&'static str> {
    [
        ("cpu", resources.cpu.is_some()),
        ("memory_mb", resources.memory_mb.is_some()),
        ("storage_mb", resources.storage_mb.is_some()),
        ("gpu", resources.gpu.is_some()),
        (
            "gpu_type",
            resources.gpu_type.is_some() && !resources.ignore_gpu_type,
        ),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| name)
    .collect()
}

/// Refuses what the provider cannot enforce, failing closed: network modes it does not
/// support (every phase, and allowlist entries of unsupported types), a phase policy that
/// differs from its environment's baseline when the provider cannot switch policies at run
/// time, resource fields it cannot apply, and an operating system it does not offer.
pub fn validate_against_capabilities(
    caps: &ProviderCapabilities,
    plan: &ExecutionPlan,
) -> Result<()> {
    let provider = &plan.environment.id;
    let public = NetworkPolicy::default();
    let baseline = plan.baseline_network_policy.as_ref().unwrap_or(&public);
    let fresh = plan.evaluation_environment_mode == EvaluationEnvironmentMode::Fresh;
    let evaluation_baseline = if fresh {
        plan.evaluation_baseline_network_policy
            .as_ref()
            .unwrap_or(baseline)
    } else {
        baseline
    };
    let checks = [
        ("baseline_network_policy", Some(baseline), None),
        (
            "run_network_policy",
            plan.run_network_policy.as_ref(),
            Some(baseline),
        ),
        (
            "evaluation_baseline_network_policy",
            fresh.then_some(evaluation_baseline),
            None,
        ),
        (
            "evaluation_network_policy",
            plan.evaluation_network_policy.as_ref(),
            Some(evaluation_baseline),
        ),
    ];
    for (field, policy, phase_of) in checks {
        let Some(policy) = policy else { continue };
        if !caps.network_modes.contains(&policy.network_mode) {
            return Err(Error::unsupported(format!(
                "environment `{provider}` cannot enforce {field} mode `{}` (it supports: {})",
                policy.network_mode,
                modes(caps)
            )));
        }
        if let Some(entry) = policy
            .host_patterns()
            .unwrap_or_default()
            .into_iter()
            .find(|p| {
                !caps.allowlist_entry_types.is_empty()
                    && !caps
                        .allowlist_entry_types
                        .iter()
                        .any(|t| t == p.entry_type())
            })
        {
            return Err(Error::unsupported(format!(
                "environment `{provider}` cannot enforce {field} entry `{entry}` ({} entries are not supported)",
                entry.entry_type()
            )));
        }
        if let Some(base) = phase_of {
            if policy != base && !caps.dynamic_network_policy {
                return Err(Error::unsupported(format!(
                    "environment `{provider}` cannot switch from its baseline network policy (`{}`) to the \
                     {field} (`{}`) at run time",
                    base.network_mode, policy.network_mode
                )));
            }
        }
    }
    let environments =
        std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
    for env in environments {
        if let Some(resources) = &env.resources {
            if let Some(field) = resource_fields(resources)
                .into_iter()
                .find(|f| !caps.resource_fields.iter().any(|c| c == f))
            {
                return Err(Error::unsupported(format!(
                    "environment `{provider}` cannot apply resource `{field}` (it supports: {})",
                    if caps.resource_fields.is_empty() {
                        "none".to_string()
                    } else {
                        caps.resource_fields.join(", ")
                    }
                )));
            }
        }
        if let Some(os) = &env.setup.os {
            if !caps.operating_systems.is_empty() && !caps.operating_systems.iter().any(|o| o == os)
            {
                return Err(Error::unsupported(format!(
                    "environment `{provider}` cannot provide OS `{os}` (it provides: {})",
                    caps.operating_systems.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::{EnvironmentSpec, NetworkMode};

    fn plan() -> ExecutionPlan {
        ExecutionPlan {
            environment: EnvironmentSpec::new("p"),
            ..ExecutionPlan::default()
        }
    }

    #[test]
    fn public_only_providers_refuse_other_modes() {
        let caps = ProviderCapabilities::public_only();
        assert!(validate_against_capabilities(&caps, &plan()).is_ok());
        let mut p = plan();
        p.run_network_policy = Some(NetworkPolicy::no_network());
        let err = validate_against_capabilities(&caps, &p).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Unsupported);
        assert!(
            err.message.contains("run_network_policy mode `no-network`"),
            "{err}"
        );
    }

    #[test]
    fn static_providers_refuse_phase_switches_and_unknown_resources() {
        let caps = ProviderCapabilities {
            network_modes: vec![NetworkMode::Public, NetworkMode::NoNetwork],
            ..ProviderCapabilities::public_only()
        };
        let mut p = plan();
        p.baseline_network_policy = Some(NetworkPolicy::no_network());
        p.run_network_policy = Some(NetworkPolicy::no_network());
        assert!(validate_against_capabilities(&caps, &p).is_ok());
        p.evaluation_network_policy = Some(NetworkPolicy::public());
        let err = validate_against_capabilities(&caps, &p).unwrap_err();
        assert!(err.message.contains("cannot switch"), "{err}");
        // In a fresh evaluation environment the comparison is with its own baseline.
        p.evaluation_environment_mode = EvaluationEnvironmentMode::Fresh;
        p.evaluation_baseline_network_policy = Some(NetworkPolicy::public());
        assert!(validate_against_capabilities(&caps, &p).is_ok());
        p.environment.resources = Some(ResourceRequirements {
            cpu: Some(2.0),
            ..Default::default()
        });
        let err = validate_against_capabilities(&caps, &p).unwrap_err();
        assert!(err.message.contains("resource `cpu`"), "{err}");
    }
}
