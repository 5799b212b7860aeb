//! A plan's resources as its provider can apply them — Harbor's `auto` enforcement: `cpu` and
//! `memory_mb` are hard limits where the provider sets limits and are recorded as not
//! enforced where it cannot (never a refusal, as Harbor's `auto` on a provider without
//! limits); `storage_mb` likewise (Harbor's Docker ignores it); `gpu = 0` is no requirement.
//! What is left — a GPU count, a GPU model — the provider's check refuses when it cannot
//! apply it, before the first task.

use agentcompass_plugin_api::contracts::{EnvironmentSpec, ProviderCapabilities};
use serde_json::{json, Value};

/// The fields a provider may leave unenforced under `auto`, with why a user reads it.
const BEST_EFFORT: [(&str, &str); 3] = [
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

/// Drops from `env`'s resources what `caps` cannot enforce under `auto`, and a GPU count of 0.
pub fn fit(env: &mut EnvironmentSpec, caps: &ProviderCapabilities) {
    let Some(resources) = env.resources.as_mut() else {
        return;
    };
    let applies = |field: &str| caps.resource_fields.iter().any(|f| f == field);
    if resources.gpu == Some(0) {
        resources.gpu = None;
    }
    if !applies("cpu") {
        resources.cpu = None;
    }
    if !applies("memory_mb") {
        resources.memory_mb = None;
    }
    if !applies("storage_mb") {
        resources.storage_mb = None;
    }
}

/// `provenance.resources`: the enforcement mode and the fields this environment leaves
/// unenforced, each with why.
pub fn provenance(caps: &ProviderCapabilities) -> Value {
    let not_enforced: serde_json::Map<String, Value> = BEST_EFFORT
        .iter()
        .filter(|(field, _)| !caps.resource_fields.iter().any(|f| f == field))
        .map(|(field, why)| (field.to_string(), json!(why)))
        .collect();
    json!({"mode": "auto", "not_enforced": not_enforced})
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::ResourceRequirements;

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

    #[test]
    fn what_the_provider_cannot_limit_is_recorded_not_refused() {
        let containers = ProviderCapabilities {
            resource_fields: vec!["cpu".into(), "memory_mb".into()],
            ..Default::default()
        };
        let mut env = declared();
        fit(&mut env, &containers);
        assert_eq!(
            env.resources,
            Some(ResourceRequirements {
                cpu: Some(1.0),
                memory_mb: Some(2048),
                ..Default::default()
            })
        );
        assert_eq!(
            provenance(&containers)["not_enforced"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["storage_mb"]
        );
        let mut env = declared();
        fit(&mut env, &ProviderCapabilities::default());
        assert_eq!(env.resources, Some(ResourceRequirements::default()));
        // A GPU count the provider cannot apply stays, for its check to refuse.
        let mut env = declared();
        env.resources.as_mut().unwrap().gpu = Some(1);
        fit(&mut env, &containers);
        assert_eq!(env.resources.unwrap().gpu, Some(1));
    }
}
