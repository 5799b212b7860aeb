//! Building each section of a RunRequest from ordered layers, with validation against the
//! registry (ids, schemas) and the contract rules.

use agentcompass_plugin_api::contracts::{
    AttemptLimits, BenchmarkSpec, Budget, ComponentKind, ConfigType, EnvironmentSpec,
    ExecutionSpec, HarnessSpec, ModelSpec, NetworkPolicy, OutputSpec, RunRuntimeSpec,
    ENVIRONMENT_SHARED_FIELDS, EXECUTION_FIELDS, HARNESS_NONE,
};
use serde_json::{Map, Value};

use super::field_types::{environment_field_type, execution_field_type, model_field_type};
use super::layers::{attribute, component_params, deserialize_merged, owner, Layer};
use crate::config::{deep_merge, is_env_map_key, process_env, ConfigError};
use crate::registry::Registry;

/// Where a component id was chosen (for unknown-id errors).
pub struct IdSource<'a> {
    /// File or flag.
    pub source: &'a str,
    /// Key path (or argument name).
    pub path: &'a str,
}

fn unknown(
    registry: &Registry,
    kind: ComponentKind,
    id: &str,
    at: &IdSource<'_>,
) -> Result<(), ConfigError> {
    registry
        .get(kind, id)
        .map(|_| ())
        .map_err(|e| ConfigError::invalid(at.source, at.path, e.to_string()))
}

/// `layers` with the references of their typed host fields resolved and converted (see
/// [`Layer::resolve_typed_fields`]).
fn with_typed_fields(
    layers: &[Layer],
    types: fn(&[&str]) -> ConfigType,
) -> Result<Vec<Layer>, ConfigError> {
    layers
        .iter()
        .map(|layer| layer.resolve_typed_fields(types, &process_env))
        .collect()
}

/// `BenchmarkSpec`: the id must be registered; params are checked against its schema.
pub fn benchmark_spec(
    registry: &Registry,
    id: &str,
    at: &IdSource<'_>,
    layers: &[Layer],
) -> Result<BenchmarkSpec, ConfigError> {
    unknown(registry, ComponentKind::Benchmark, id, at)?;
    let schema = &registry
        .get(ComponentKind::Benchmark, id)
        .map_err(|e| ConfigError::invalid(at.source, at.path, e.to_string()))?
        .info
        .config_schema;
    Ok(BenchmarkSpec {
        id: id.to_string(),
        params: component_params(&format!("benchmark {id}"), schema, layers)?,
    })
}

/// `HarnessSpec`: `none` selects a harness-free benchmark (and takes no params); any other id
/// must be registered and its params match its schema.
pub fn harness_spec(
    registry: &Registry,
    id: &str,
    benchmark: &str,
    at: &IdSource<'_>,
    layers: &[Layer],
) -> Result<HarnessSpec, ConfigError> {
    let harness_free = registry
        .find(ComponentKind::Benchmark, benchmark)
        .is_some_and(|e| e.info.harness_free);
    if id == HARNESS_NONE {
        if !harness_free {
            return Err(ConfigError::invalid(
                at.source,
                at.path,
                format!("harness `none` needs a harness-free benchmark, but `{benchmark}` needs a harness"),
            ));
        }
        if let Some(layer) = layers.iter().find(|l| !l.map.is_empty()) {
            let key = layer.map.keys().next().cloned().unwrap_or_default();
            return Err(layer.error(&key, "harness `none` takes no parameters"));
        }
        return Ok(HarnessSpec {
            id: id.to_string(),
            params: Map::new(),
        });
    }
    if harness_free {
        return Err(ConfigError::invalid(
            at.source,
            at.path,
            format!("benchmark `{benchmark}` is harness-free: select it with harness `none`"),
        ));
    }
    unknown(registry, ComponentKind::Harness, id, at)?;
    let schema = &registry
        .get(ComponentKind::Harness, id)
        .map_err(|e| ConfigError::invalid(at.source, at.path, e.to_string()))?
        .info
        .config_schema;
    Ok(HarnessSpec {
        id: id.to_string(),
        params: component_params(&format!("harness {id}"), schema, layers)?,
    })
}

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

const PROTOCOLS: [&str; 3] = ["openai-chat", "openai-responses", "anthropic"];
const MODEL_KEYS: [&str; 6] = [
    "id",
    "base_url",
    "api_key",
    "api_protocol",
    "params",
    "wrap_api_key",
];

/// `ModelSpec` from layers (`id` required; protocols validated; `auto` alone).
pub fn model_spec(layers: &[Layer]) -> Result<ModelSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(&MODEL_KEYS)?;
        layer.check_references()?;
    }
    let layers = &with_typed_fields(layers, model_field_type)?;
    if owner(layers, "id").is_none() {
        // Name the most specific layer rather than serde's "missing field" at the root.
        return Err(match layers.last() {
            Some(layer) => layer.error("id", "a model id is required"),
            None => ConfigError::invalid("defaults", "id", "a model id is required"),
        });
    }
    let model: ModelSpec = deserialize_merged(Value::Object(Map::new()), layers)?;
    if model.id.trim().is_empty() {
        return Err(attribute(layers, "id", "a model id is required"));
    }
    let protocols = match &model.api_protocol {
        agentcompass_plugin_api::contracts::ApiProtocolSpec::One(p) => vec![p.clone()],
        agentcompass_plugin_api::contracts::ApiProtocolSpec::Many(list) => list.clone(),
    };
    for protocol in &protocols {
        let ok = PROTOCOLS.contains(&protocol.as_str())
            || protocol.is_empty()
            || (protocol == "auto" && protocols.len() == 1);
        if protocol == "auto" && !ok {
            return Err(attribute(
                layers,
                "api_protocol",
                "`auto` cannot be combined with other protocols",
            ));
        }
        if !ok {
            return Err(attribute(
                layers,
                "api_protocol",
                format!(
                    "unknown protocol `{protocol}` (expected auto or one or more of: {})",
                    PROTOCOLS.join(", ")
                ),
            ));
        }
    }
    let mut model = model;
    sdk_env_defaults(&mut model, &|name| {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    });
    Ok(model)
}

/// The official SDKs' environment defaults, used when neither a flag nor a configuration sets
/// the endpoint or the key (as upstream's OpenAI and Anthropic clients read them): an
/// OpenAI protocol reads `OPENAI_BASE_URL` / `OPENAI_API_KEY`, `anthropic` reads
/// `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY`; with `auto` (or none) the OpenAI variables win
/// and the Anthropic ones select the `anthropic` protocol. They are set as `${VAR}`
/// references, so printed and persisted requests name the variable, never its value, and a
/// locally configured endpoint is never passed over for a public default.
fn sdk_env_defaults(model: &mut ModelSpec, env: &dyn Fn(&str) -> Option<String>) {
    use agentcompass_plugin_api::contracts::ApiProtocolSpec;
    let first = match &model.api_protocol {
        ApiProtocolSpec::One(p) => p.clone(),
        ApiProtocolSpec::Many(list) => list.first().cloned().unwrap_or_default(),
    };
    let family = match first.as_str() {
        "anthropic" => "ANTHROPIC",
        "openai-chat" | "openai-responses" => "OPENAI",
        _ if model.base_url.trim().is_empty()
            && env("OPENAI_BASE_URL").is_none()
            && env("ANTHROPIC_BASE_URL").is_some() =>
        {
            model.api_protocol = ApiProtocolSpec::One("anthropic".to_string());
            "ANTHROPIC"
        }
        _ => "OPENAI",
    };
    let url = format!("{family}_BASE_URL");
    if model.base_url.trim().is_empty() && env(&url).is_some() {
        model.base_url = format!("${{{url}}}");
    }
    let key = format!("{family}_API_KEY");
    if model.api_key.trim().is_empty() && env(&key).is_some() {
        model.api_key = format!("${{{key}}}");
    }
}

/// `ExecutionSpec` from layers over the defaults; keys must be ExecutionSpec fields and values
/// within range.
pub fn execution_spec(layers: &[Layer]) -> Result<ExecutionSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(EXECUTION_FIELDS)?;
        layer.check_references()?;
        if let Some(Value::Object(attempts)) = layer.map.get("attempts") {
            Layer::new(
                layer.source.clone(),
                layer.key_path("attempts"),
                attempts.clone(),
            )
            .check_keys(&["k", "strategy"])?;
        }
        for (key, allowed) in [("limits", LIMIT_KEYS), ("budget", BUDGET_KEYS)] {
            if let Some(Value::Object(map)) = layer.map.get(key) {
                Layer::new(layer.source.clone(), layer.key_path(key), map.clone())
                    .check_keys(allowed)?;
            }
        }
    }
    let layers = &with_typed_fields(layers, execution_field_type)?;
    let base = serde_json::to_value(ExecutionSpec::default()).unwrap_or(Value::Null);
    let spec: ExecutionSpec = deserialize_merged(base, layers)?;
    let bad = |key: &str, message: String| Err(attribute(layers, key, message));
    if spec.task_concurrency < 1 {
        return bad("task_concurrency", "must be at least 1".into());
    }
    if spec.attempts.k < 1 {
        return bad("attempts", "attempts.k must be at least 1".into());
    }
    for (key, value) in [
        (
            "retry_min_delay_seconds",
            Some(spec.retry_min_delay_seconds),
        ),
        (
            "retry_max_delay_seconds",
            Some(spec.retry_max_delay_seconds),
        ),
        (
            "run_timer_compensation_seconds",
            Some(spec.run_timer_compensation_seconds),
        ),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v < 0.0) {
            return bad(key, format!("expected seconds ≥ 0, found {v}"));
        }
    }
    if spec.retry_max_delay_seconds < spec.retry_min_delay_seconds {
        return bad(
            "retry_max_delay_seconds",
            "must not be below retry_min_delay_seconds".into(),
        );
    }
    for (key, value) in [
        ("run_timeout_seconds", spec.run_timeout_seconds),
        (
            "evaluation_timeout_seconds",
            spec.evaluation_timeout_seconds,
        ),
        (
            "artifact_collect_timeout_seconds",
            spec.artifact_collect_timeout_seconds,
        ),
        (
            "runresult_collect_timeout_seconds",
            Some(spec.runresult_collect_timeout_seconds),
        ),
        ("timeout_multiplier", Some(spec.timeout_multiplier)),
        ("run_timeout_multiplier", spec.run_timeout_multiplier),
        (
            "evaluation_timeout_multiplier",
            spec.evaluation_timeout_multiplier,
        ),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return bad(
                key,
                format!("expected a positive finite number or null, found {v}"),
            );
        }
    }
    if let Err((field, message)) = check_limits(&spec.limits) {
        return bad("limits", format!("limits.{field}: {message}"));
    }
    if let Some(budget) = &spec.budget {
        if let Err((field, message)) = check_budget(budget) {
            return bad("budget", format!("budget.{field}: {message}"));
        }
    }
    Ok(spec)
}

/// The keys of `execution.limits`.
pub const LIMIT_KEYS: &[&str] = &[
    "max_tokens",
    "max_cost_usd",
    "max_model_calls",
    "max_turns",
    "working_seconds",
];

/// The keys of `execution.budget` and `runtime.budget`.
pub const BUDGET_KEYS: &[&str] = &["max_cost_usd", "max_tokens", "on_exhausted"];

/// Every set limit is positive: counts at least 1, amounts positive and finite.
fn check_limits(limits: &AttemptLimits) -> Result<(), (&'static str, String)> {
    for (field, value) in [
        ("max_tokens", limits.max_tokens),
        ("max_model_calls", limits.max_model_calls),
        ("max_turns", limits.max_turns),
    ] {
        if value == Some(0) {
            return Err((field, "expected at least 1, found 0".into()));
        }
    }
    for (field, value) in [
        ("max_cost_usd", limits.max_cost_usd),
        ("working_seconds", limits.working_seconds),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return Err((field, format!("expected a positive number, found {v}")));
        }
    }
    Ok(())
}

/// A budget limits something (cost or tokens), each positive.
pub fn check_budget(budget: &Budget) -> Result<(), (&'static str, String)> {
    if budget.max_cost_usd.is_none() && budget.max_tokens.is_none() {
        return Err((
            "max_cost_usd",
            "a budget needs max_cost_usd or max_tokens, found neither".into(),
        ));
    }
    if budget.max_tokens == Some(0) {
        return Err(("max_tokens", "expected at least 1, found 0".into()));
    }
    if let Some(v) = budget.max_cost_usd.filter(|v| !v.is_finite() || *v <= 0.0) {
        return Err((
            "max_cost_usd",
            format!("expected a positive number, found {v}"),
        ));
    }
    Ok(())
}

/// `RunRuntimeSpec` from layers (`reuse`, `reuse_run_id`, `checkpoint_resume`); a non-empty
/// `reuse_run_id` implies reuse.
pub fn run_runtime_spec(layers: &[Layer]) -> Result<RunRuntimeSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(&[
            "reuse",
            "reuse_run_id",
            "checkpoint_resume",
            "rerun",
            "rerun_invalid",
        ])?;
    }
    let mut spec: RunRuntimeSpec = deserialize_merged(Value::Object(Map::new()), layers)?;
    for entry in &spec.rerun {
        let well_formed = !entry.is_empty()
            && entry
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(attribute(
                layers,
                "rerun",
                format!(
                    "expected failure classes ({}) or issue codes (snake_case), found `{entry}`",
                    crate::issue_codes::FailureClass::ALL
                        .map(|c| c.as_str())
                        .join(", ")
                ),
            ));
        }
    }
    if (!spec.rerun.is_empty() || spec.rerun_invalid) && spec.reuse != Some(true) {
        let key = if spec.rerun.is_empty() {
            "rerun_invalid"
        } else {
            "rerun"
        };
        return Err(attribute(
            layers,
            key,
            format!("{key} picks tasks of a reused run, but reuse is off (add --reuse)"),
        ));
    }
    if !spec.reuse_run_id.is_empty() {
        if spec.reuse == Some(false) {
            return Err(attribute(
                layers,
                "reuse_run_id",
                "reuse_run_id needs reuse, but reuse is false",
            ));
        }
        spec.reuse = Some(true);
    }
    Ok(spec)
}

/// `OutputSpec` from layers (`run_name`, `run_id`).
pub fn output_spec(layers: &[Layer]) -> Result<OutputSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(&["run_name", "run_id"])?;
    }
    let spec: OutputSpec = deserialize_merged(Value::Object(Map::new()), layers)?;
    if spec.run_name.split(['/', '\\']).any(|part| part == "..") {
        return Err(attribute(layers, "run_name", "must not contain `..`"));
    }
    Ok(spec)
}

/// The per-request runtime defaults of the merged config `runtime` section.
pub fn config_runtime_layer(config: &crate::config::LoadedConfig) -> Vec<Layer> {
    config
        .files
        .iter()
        .filter_map(|file| {
            let runtime = file.payload.get("runtime")?.as_object()?;
            let map: Map<String, Value> = runtime
                .iter()
                .filter(|(k, _)| k.as_str() == "reuse" || k.as_str() == "checkpoint_resume")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (!map.is_empty()).then(|| Layer::new(file.path.display().to_string(), "runtime", map))
        })
        .collect()
}

/// Per-file `execution` layers of the config (optionally without `task_concurrency`).
pub fn config_execution_layers(
    config: &crate::config::LoadedConfig,
    drop_task_concurrency: bool,
) -> Vec<Layer> {
    config
        .files
        .iter()
        .filter_map(|file| {
            let mut map = file.payload.get("execution")?.as_object()?.clone();
            if drop_task_concurrency {
                map.remove("task_concurrency");
            }
            Some(Layer::new(
                file.path.display().to_string(),
                "execution",
                map,
            ))
        })
        .collect()
}

/// Per-file component layers (`benchmarks.<id>` ...).
pub fn config_component_layers(
    config: &crate::config::LoadedConfig,
    section: &str,
    id: &str,
) -> Vec<Layer> {
    config
        .files
        .iter()
        .filter_map(|file| {
            let entry = file.payload.get(section)?.as_object()?.get(id)?;
            Some(Layer::new(
                file.path.display().to_string(),
                format!("{section}.{id}"),
                entry.as_object().cloned().unwrap_or_default(),
            ))
        })
        .collect()
}

/// Per-file environment layers, `null` entries marked as clearing.
pub fn config_environment_layers(
    config: &crate::config::LoadedConfig,
    id: &str,
) -> Vec<(Layer, bool)> {
    config
        .environment_layers(id)
        .into_iter()
        .map(|(source, map)| {
            let cleared = map.is_none();
            (
                Layer::new(
                    source,
                    format!("environments.{id}"),
                    map.unwrap_or_default(),
                ),
                cleared,
            )
        })
        .collect()
}

/// The last layer that sets `key`, for callers that report on merged values.
pub fn layer_setting<'a>(layers: &'a [Layer], key: &str) -> Option<&'a Layer> {
    owner(layers, key)
}
