//! The default capability check every provider runs before allocating anything.

use crate::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, NetworkPolicy, ProviderCapabilities,
    ResourceRequirements, PORT_ENTRY_TYPE,
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
/// support (every phase; allowlist and denylist entries of unsupported types, and entries
/// with a port unless it lists [`PORT_ENTRY_TYPE`]), a phase policy that
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
        let entries = policy
            .entries()
            .map_err(|e| Error::invalid_input(format!("environment `{provider}`: {field}: {e}")))?;
        let accepts = |entry_type: &str| caps.allowlist_entry_types.iter().any(|t| t == entry_type);
        for entry in entries {
            // An empty list accepts every pattern type (as before entry types were listed);
            // a port is enforced only by a provider that says so.
            if !caps.allowlist_entry_types.is_empty() && !accepts(entry.entry_type()) {
                return Err(Error::unsupported(format!(
                    "environment `{provider}` cannot enforce {field} entry `{entry}` ({} entries are not supported)",
                    entry.entry_type()
                )));
            }
            if entry.port.is_some() && !accepts(PORT_ENTRY_TYPE) {
                return Err(Error::unsupported(format!(
                    "environment `{provider}` cannot enforce {field} entry `{entry}` (entries with a port are not supported)"
                )));
            }
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
        if let (false, Some(compose)) = (caps.compose, &env.setup.compose) {
            return Err(Error::unsupported(format!(
                "environment `{provider}` cannot run the services of `{}` (Docker Compose); \
                 run the task with `--env docker` or `--env podman`",
                compose.file
            )));
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
    let users = [
        ("run_user", plan.run_user.as_deref()),
        ("evaluation_user", plan.evaluation_user.as_deref()),
    ];
    if let (false, Some((field, user))) = (
        caps.exec_user,
        users.iter().find_map(|(f, u)| u.map(|u| (f, u))),
    ) {
        return Err(Error::unsupported(format!(
            "environment `{provider}` cannot run commands as another user ({field} `{user}`); \
             use an environment that can (`config docs env ID` lists `exec_user`)"
        )));
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
    fn services_need_a_provider_that_runs_them() {
        let mut p = plan();
        p.environment.setup.compose = Some(crate::contracts::ComposeSetup {
            file: "/t/environment/docker-compose.yaml".into(),
            root: "/t".into(),
        });
        let caps = ProviderCapabilities::public_only();
        let err = validate_against_capabilities(&caps, &p).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Unsupported);
        assert_eq!(
            err.message,
            "environment `p` cannot run the services of `/t/environment/docker-compose.yaml` \
             (Docker Compose); run the task with `--env docker` or `--env podman`"
        );
        let caps = ProviderCapabilities {
            compose: true,
            ..caps
        };
        assert!(validate_against_capabilities(&caps, &p).is_ok());
    }

    #[test]
    fn a_phase_user_needs_a_provider_that_switches_users() {
        let mut p = plan();
        p.evaluation_user = Some("grader".into());
        let caps = ProviderCapabilities::public_only();
        let err = validate_against_capabilities(&caps, &p).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Unsupported);
        assert!(
            err.message
                .contains("cannot run commands as another user (evaluation_user `grader`)"),
            "{err}"
        );
        let caps = ProviderCapabilities {
            exec_user: true,
            ..caps
        };
        assert!(validate_against_capabilities(&caps, &p).is_ok());
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

    #[test]
    fn denylists_and_ports_need_the_capability() {
        let old = ProviderCapabilities {
            network_modes: vec![
                NetworkMode::Public,
                NetworkMode::NoNetwork,
                NetworkMode::Allowlist,
            ],
            allowlist_entry_types: vec!["hostname".into(), "ipv4".into()],
            dynamic_network_policy: true,
            ..ProviderCapabilities::public_only()
        };
        let mut p = plan();
        p.run_network_policy = Some(NetworkPolicy::denylist(["evil.example"]));
        let err = validate_against_capabilities(&old, &p).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Unsupported);
        assert_eq!(
            err.message,
            "environment `p` cannot enforce run_network_policy mode `denylist` (it supports: \
             public, no-network, allowlist)"
        );
        p.run_network_policy = Some(NetworkPolicy::allowlist(["a.example:443"]));
        let err = validate_against_capabilities(&old, &p).unwrap_err();
        assert_eq!(
            err.message,
            "environment `p` cannot enforce run_network_policy entry `a.example:443` (entries \
             with a port are not supported)"
        );
        // An empty type list accepts every pattern, never a port.
        let any_type = ProviderCapabilities {
            allowlist_entry_types: Vec::new(),
            ..old.clone()
        };
        assert!(validate_against_capabilities(&any_type, &p).is_err());
        p.run_network_policy = Some(NetworkPolicy::allowlist(["10.0.0.0/8"]));
        assert!(validate_against_capabilities(&any_type, &p).is_ok());
        let err = validate_against_capabilities(&old, &p).unwrap_err();
        assert!(
            err.message
                .contains("(ipv4_cidr entries are not supported)"),
            "{err}"
        );
        let new = ProviderCapabilities {
            network_modes: NetworkMode::ALL.to_vec(),
            allowlist_entry_types: vec!["hostname".into(), "ipv4".into(), "port".into()],
            ..old
        };
        p.run_network_policy = Some(NetworkPolicy::denylist(["127.0.0.3:80", "evil.example"]));
        assert!(validate_against_capabilities(&new, &p).is_ok());
        p.evaluation_network_policy = Some(NetworkPolicy::denylist(["*.evil.example"]));
        let err = validate_against_capabilities(&new, &p).unwrap_err();
        assert!(
            err.message
                .contains("evaluation_network_policy entry `*.evil.example` (wildcard"),
            "{err}"
        );
    }
}
