//! A plan's resources as its provider can apply them, under Harbor's enforcement modes
//! (`ResourceMode`, set per resource by `--cpus-mode` / `--memory-mode` or
//! `environment.resources.cpu_mode` / `memory_mode`; default `auto`):
//!
//! - `auto`: `cpu` and `memory_mb` are hard limits where the provider sets limits, and are
//!   recorded as not enforced where it cannot (never a refusal, as Harbor's `auto` on an
//!   environment without limits); an engine that turns out unable to enforce one (rootless
//!   Podman on cgroup v1) leaves it unenforced too;
//! - `limit`: a hard limit, refused before the first task where it cannot be applied, and
//!   refused for a task that declares no value (Harbor: "requires a task value or numeric
//!   override");
//! - `ignore`: not applied at all;
//! - `request` / `guarantee`: reservations, which no provider here makes: refused.
//!
//! `storage_mb` is recorded as not enforced where the provider cannot limit disk (Harbor's
//! Docker ignores it); `gpu = 0` is no requirement. What is left — a GPU count, a GPU model —
//! the provider's check refuses when it cannot apply it, before the first task.

use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ProviderCapabilities, ResourceMode, ResourceRequirements,
};
use serde_json::{json, Value};

/// Why a field goes unenforced, by field.
const NOT_ENFORCED: [(&str, &str); 3] = [
    (
        "cpu",
        "not enforced here (no CPU limits in this environment)",
    ),
    (
        "memory_mb",
        "not enforced here (no memory limits in this environment)",
    ),
    (
        "storage_mb",
        "not enforced here (no disk limits in this environment; Harbor's Docker ignores it too)",
    ),
];

/// Why a resource mode cannot be honoured.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ResourceRefusal {
    /// `limit` without a value to limit to.
    #[error(
        "{flag} limit requires a value of resources.{field} (the task declares none; set one \
         with --override-{override_flag})"
    )]
    LimitWithoutValue {
        /// The mode's flag (`--cpus-mode`).
        flag: &'static str,
        /// The resource (`cpu`).
        field: &'static str,
        /// The override flag's suffix (`cpus`).
        override_flag: &'static str,
    },
    /// A reservation mode, which no provider makes.
    #[error(
        "{flag} {mode}: environment `{provider}` makes no resource reservations (use auto, \
         limit or ignore)"
    )]
    Reservation {
        /// The mode's flag.
        flag: &'static str,
        /// `request` or `guarantee`.
        mode: &'static str,
        /// The environment.
        provider: String,
    },
}

/// Fits `env`'s resources to `caps` under their modes; why not when a mode cannot be
/// honoured.
pub fn fit(env: &mut EnvironmentSpec, caps: &ProviderCapabilities) -> Result<(), ResourceRefusal> {
    let Some(resources) = env.resources.as_mut() else {
        return Ok(());
    };
    let applies = |field: &str| caps.resource_fields.iter().any(|f| f == field);
    if resources.gpu == Some(0) {
        resources.gpu = None;
    }
    let mode = resources.cpu_mode.unwrap_or_default();
    resources.cpu = fit_limit(
        &env.id,
        "cpu",
        "--cpus-mode",
        resources.cpu,
        mode,
        applies("cpu"),
    )?;
    resources.cpu_mode = Some(mode);
    let mode = resources.memory_mode.unwrap_or_default();
    resources.memory_mb = fit_limit(
        &env.id,
        "memory_mb",
        "--memory-mode",
        resources.memory_mb,
        mode,
        applies("memory_mb"),
    )?;
    resources.memory_mode = Some(mode);
    if !applies("storage_mb") {
        resources.storage_mb = None;
    }
    Ok(())
}

/// One limit under its mode: kept, dropped, or refused.
fn fit_limit<T>(
    provider: &str,
    field: &'static str,
    flag: &'static str,
    value: Option<T>,
    mode: ResourceMode,
    applies: bool,
) -> Result<Option<T>, ResourceRefusal> {
    match mode {
        ResourceMode::Ignore => Ok(None),
        ResourceMode::Auto if !applies => Ok(None),
        ResourceMode::Auto => Ok(value),
        ResourceMode::Limit if value.is_none() => Err(ResourceRefusal::LimitWithoutValue {
            flag,
            field,
            override_flag: if field == "cpu" { "cpus" } else { "memory-mb" },
        }),
        ResourceMode::Limit => Ok(value),
        ResourceMode::Request | ResourceMode::Guarantee => Err(ResourceRefusal::Reservation {
            flag,
            mode: mode.as_str(),
            provider: provider.to_string(),
        }),
    }
}

/// `provenance.resources`: the modes of the request's resources and the fields this
/// environment leaves unenforced, each with why.
pub fn provenance(caps: &ProviderCapabilities, requested: Option<&ResourceRequirements>) -> Value {
    let mode = |m: Option<ResourceMode>| m.unwrap_or_default().as_str();
    let requested = requested.cloned().unwrap_or_default();
    let skipped = |field: &str| match field {
        "cpu" => requested.cpu_mode.unwrap_or_default() == ResourceMode::Auto,
        "memory_mb" => requested.memory_mode.unwrap_or_default() == ResourceMode::Auto,
        _ => true,
    };
    let not_enforced: serde_json::Map<String, Value> = NOT_ENFORCED
        .iter()
        .filter(|(field, _)| !caps.resource_fields.iter().any(|f| f == field) && skipped(field))
        .map(|(field, why)| (field.to_string(), json!(why)))
        .collect();
    json!({
        "cpus_mode": mode(requested.cpu_mode),
        "memory_mode": mode(requested.memory_mode),
        "not_enforced": not_enforced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> EnvironmentSpec {
        let mut env = EnvironmentSpec::new("p");
        env.resources = Some(ResourceRequirements {
            cpu: Some(1.0),
            memory_mb: Some(2048),
            storage_mb: Some(10240),
            gpu: Some(0),
            ..Default::default()
        });
        env
    }

    fn containers() -> ProviderCapabilities {
        ProviderCapabilities {
            resource_fields: vec!["cpu".into(), "memory_mb".into()],
            ..Default::default()
        }
    }

    #[test]
    fn under_auto_what_the_provider_cannot_limit_is_recorded_not_refused() {
        let mut env = declared();
        fit(&mut env, &containers()).unwrap();
        let auto = Some(ResourceMode::Auto);
        assert_eq!(
            env.resources,
            Some(ResourceRequirements {
                cpu: Some(1.0),
                memory_mb: Some(2048),
                cpu_mode: auto,
                memory_mode: auto,
                ..Default::default()
            })
        );
        let recorded = provenance(&containers(), None);
        assert_eq!(recorded["cpus_mode"], "auto");
        let fields: Vec<&String> = recorded["not_enforced"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(fields, ["storage_mb"]);
        let mut env = declared();
        fit(&mut env, &ProviderCapabilities::default()).unwrap();
        let resources = env.resources.unwrap();
        assert_eq!(
            (resources.cpu, resources.memory_mb, resources.storage_mb),
            (None, None, None)
        );
        // A GPU count the provider cannot apply stays, for its check to refuse.
        let mut env = declared();
        env.resources.as_mut().unwrap().gpu = Some(1);
        fit(&mut env, &containers()).unwrap();
        assert_eq!(env.resources.unwrap().gpu, Some(1));
    }

    #[test]
    fn limit_ignore_and_reservations_follow_harbor() {
        let with = |cpu_mode: ResourceMode, cpu: Option<f64>| {
            let mut env = declared();
            let resources = env.resources.as_mut().unwrap();
            resources.cpu_mode = Some(cpu_mode);
            resources.cpu = cpu;
            env
        };
        // `limit` keeps the value for the provider's check (which refuses what it cannot
        // apply), and needs one.
        let mut env = with(ResourceMode::Limit, Some(2.0));
        fit(&mut env, &ProviderCapabilities::default()).unwrap();
        assert_eq!(env.resources.unwrap().cpu, Some(2.0));
        let mut env = with(ResourceMode::Limit, None);
        let err = fit(&mut env, &containers()).unwrap_err().to_string();
        assert_eq!(
            err,
            "--cpus-mode limit requires a value of resources.cpu (the task declares none; set \
             one with --override-cpus)"
        );
        let mut env = with(ResourceMode::Ignore, Some(2.0));
        fit(&mut env, &containers()).unwrap();
        assert_eq!(env.resources.unwrap().cpu, None);
        for reservation in [ResourceMode::Request, ResourceMode::Guarantee] {
            let mut env = with(reservation, Some(2.0));
            let err = fit(&mut env, &containers()).unwrap_err().to_string();
            assert!(err.contains("makes no resource reservations"), "{err}");
        }
    }
}
