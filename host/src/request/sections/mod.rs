//! Building each section of a RunRequest from ordered layers, with validation against the
//! registry (ids, schemas) and the contract rules.

mod environment;
mod execution;
mod model;

pub use environment::environment_spec;
pub use execution::{check_budget, execution_spec, run_runtime_spec, BUDGET_KEYS, LIMIT_KEYS};
pub use model::{check_base_url, check_resolved_base_url, model_spec};

use agentcompass_plugin_api::contracts::{
    BenchmarkSpec, ComponentKind, ConfigType, HarnessSpec, OutputSpec, HARNESS_NONE,
};
use serde_json::{Map, Value};

use super::layers::{attribute, component_params, deserialize_merged, owner, Layer};
use crate::config::{process_env, ConfigError};
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

/// Runs the typed-parameter validator of component `id` (plugins declared with
/// `PluginBuilder::with_params`) on its params, so a request whose parameter *content* the
/// plugin refuses is refused at resolution (`--dry-run` and `plan` included), naming where
/// the component was chosen.
pub(super) fn validated(
    registry: &Registry,
    kind: ComponentKind,
    id: &str,
    at: &IdSource<'_>,
    params: &Map<String, Value>,
) -> Result<(), ConfigError> {
    registry
        .validate_params(kind, id, params)
        .map(|_| ())
        .map_err(|e| ConfigError::invalid(at.source, at.path, e.message))
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
    let params = component_params(&format!("benchmark {id}"), schema, layers)?;
    validated(registry, ComponentKind::Benchmark, id, at, &params)?;
    Ok(BenchmarkSpec {
        id: id.to_string(),
        params,
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
        return Ok(HarnessSpec::new(id));
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
    let params = component_params(&format!("harness {id}"), schema, layers)?;
    validated(registry, ComponentKind::Harness, id, at, &params)?;
    Ok(HarnessSpec {
        params,
        ..HarnessSpec::new(id)
    })
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
