//! The `environment` section: the environment spec from its layers, with the shared fields,
//! the object-union fields and the network policies merged and checked.

use agentcompass_plugin_api::contracts::{
    ComponentKind, EnvironmentSpec, NetworkPolicy, ENVIRONMENT_SHARED_FIELDS,
};
use serde_json::{Map, Value};

use crate::config::{deep_merge, is_env_map_key, process_env, ConfigError};
use crate::registry::Registry;
use crate::request::field_types::environment_field_type;
use crate::request::layers::{attribute, component_params, Layer};

use super::{unknown, IdSource};

const OBJECT_UNION_FIELDS: [&str; 5] = [
    "setup",
    "evaluation_setup",
    "resources",
    "run_resources",
    "evaluation_resources",
];
const POLICY_FIELDS: [&str; 4] = [
    "baseline_network_policy",
    "evaluation_baseline_network_policy",
    "run_network_policy",
    "evaluation_network_policy",
];

/// Key-wise union of two mappings keeping `over`'s non-null values.
fn non_null_union(base: Option<&Value>, over: &Value) -> Value {
    let mut out = base.and_then(Value::as_object).cloned().unwrap_or_default();
    if let Value::Object(map) = over {
        for (k, v) in map {
            if !v.is_null() {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    } else {
        over.clone()
    }
}

/// `EnvironmentSpec` from provider layers (a `None` layer — an explicit `null` — clears what
/// came before). Shared fields merge by field rule (setup and resources key-wise, policies
/// replace, env-var maps union); everything else is a provider parameter checked against the
/// provider's schema. Network policies are normalised.
pub fn environment_spec(
    registry: &Registry,
    id: &str,
    at: &IdSource<'_>,
    layers: &[(Layer, bool)],
) -> Result<EnvironmentSpec, ConfigError> {
    unknown(registry, ComponentKind::Environment, id, at)?;
    let schema = registry
        .get(ComponentKind::Environment, id)
        .map_err(|e| ConfigError::invalid(at.source, at.path, e.to_string()))?
        .info
        .config_schema
        .clone();
    let mut shared = Map::new();
    let mut param_layers: Vec<Layer> = Vec::new();
    let mut shared_layers: Vec<Layer> = Vec::new();
    for (layer, cleared) in layers {
        if *cleared {
            shared.clear();
            param_layers.clear();
            shared_layers.clear();
            continue;
        }
        let params = merge_shared_fields(layer, &mut shared)?;
        shared_layers.push(Layer::new(
            layer.source.clone(),
            layer.path.clone(),
            layer.map.clone(),
        ));
        param_layers.push(Layer::new(layer.source.clone(), layer.path.clone(), params));
    }
    let params = component_params(&format!("environment {id}"), &schema, &param_layers)?;
    super::validated(registry, ComponentKind::Environment, id, at, &params)?;
    check_policy_keys(&shared, &shared_layers)?;
    shared.insert("id".into(), Value::String(id.to_string()));
    shared.insert("params".into(), Value::Object(params));
    let mut spec: EnvironmentSpec = serde_path_to_error::deserialize(Value::Object(shared))
        .map_err(|e| {
            attribute(
                &shared_layers,
                &e.path().to_string(),
                agentcompass_plugin_api::one_line(&e.inner().to_string()),
            )
        })?;
    normalize_policies(&mut spec, &shared_layers)?;
    if let Some(workdir) = spec
        .setup
        .workdir
        .as_deref()
        .filter(|w| !w.starts_with('/'))
    {
        return Err(attribute(
            &shared_layers,
            "setup",
            format!("setup.workdir must be an absolute POSIX path, found `{workdir}`"),
        ));
    }
    Ok(spec)
}

/// Merges the shared fields of one layer into `shared` (each checked on its own, so an error
/// names this layer) and returns the rest: the provider's parameters.
fn merge_shared_fields(
    layer: &Layer,
    shared: &mut Map<String, Value>,
) -> Result<Map<String, Value>, ConfigError> {
    layer.check_references()?;
    let layer = &layer.resolve_typed_fields(environment_field_type, &process_env)?;
    let mut params = Map::new();
    for (key, value) in &layer.map {
        if key == "image" || key == "evaluation_image" {
            let field = if key == "image" {
                "setup"
            } else {
                "evaluation_setup"
            };
            return Err(layer.error(
                key,
                format!("`{key}` is not a parameter: set {field}.image"),
            ));
        }
        if !ENVIRONMENT_SHARED_FIELDS.contains(&key.as_str()) {
            params.insert(key.clone(), value.clone());
            continue;
        }
        let single = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
        serde_path_to_error::deserialize::<_, EnvironmentSpec>(single).map_err(|e| {
            layer.error(
                &e.path().to_string(),
                agentcompass_plugin_api::one_line(&e.inner().to_string()),
            )
        })?;
        let merged = if OBJECT_UNION_FIELDS.contains(&key.as_str()) {
            non_null_union(shared.get(key), value)
        } else if is_env_map_key(key) && value.is_object() {
            deep_merge(shared.get(key).unwrap_or(&Value::Null), value)
        } else {
            value.clone()
        };
        shared.insert(key.clone(), merged);
    }
    Ok(params)
}

/// The keys a network policy table may have. The contract type ignores unknown keys (for
/// compatibility between versions); user input must not: `{"mode": "no-network"}` would
/// otherwise silently mean the public network.
const POLICY_KEYS: [&str; 3] = ["network_mode", "allowed_hosts", "denied_hosts"];

/// Refuses a policy table with a key other than [`POLICY_KEYS`], naming the layer.
fn check_policy_keys(shared: &Map<String, Value>, layers: &[Layer]) -> Result<(), ConfigError> {
    for field in POLICY_FIELDS {
        let Some(Value::Object(policy)) = shared.get(field) else {
            continue;
        };
        if let Some(key) = policy.keys().find(|k| !POLICY_KEYS.contains(&k.as_str())) {
            return Err(attribute(
                layers,
                &format!("{field}.{key}"),
                format!(
                    "unknown key (expected {} or {})",
                    POLICY_KEYS[..POLICY_KEYS.len() - 1].join(", "),
                    POLICY_KEYS[POLICY_KEYS.len() - 1]
                ),
            ));
        }
    }
    Ok(())
}

/// Normalises every network policy of `spec`, naming the layer that set a bad one.
fn normalize_policies(spec: &mut EnvironmentSpec, layers: &[Layer]) -> Result<(), ConfigError> {
    for field in POLICY_FIELDS {
        let slot = match field {
            "baseline_network_policy" => &mut spec.baseline_network_policy,
            "evaluation_baseline_network_policy" => &mut spec.evaluation_baseline_network_policy,
            "run_network_policy" => &mut spec.run_network_policy,
            _ => &mut spec.evaluation_network_policy,
        };
        if let Some(policy) = slot.as_ref() {
            let normalized: NetworkPolicy = policy
                .normalized()
                .map_err(|e| attribute(layers, field, e.to_string()))?;
            *slot = Some(normalized);
        }
    }
    Ok(())
}
