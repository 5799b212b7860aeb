//! Orchestration files (`launch FILE`) and their resolution, following the seed's
//! orchestration table: component params config entry → `defaults` → named request; model
//! `defaults.model` → request; execution defaults → config → `defaults.execution` → request;
//! per-request runtime config reuse → `defaults.runtime` → request; output `defaults.output` →
//! request; orchestration runtime defaults → config → file → command line; the global
//! `task_concurrency` command line → file → config → 32, written into every request.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use agentcompass_plugin_api::contracts::{RunMetadata, RunRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::layers::Layer;
use super::runtime::{ResolvedRuntimeOptions, RuntimeOptions};
use super::sections::{
    benchmark_spec, config_component_layers, config_environment_layers, config_execution_layers,
    config_runtime_layer, environment_spec, execution_spec, harness_spec, model_spec, output_spec,
    run_runtime_spec, IdSource,
};
use super::single::check_recipes;
use super::{output_namespace, resolve_runtime};
use crate::config::{check_references, parse_file, parse_text, ConfigError, LoadedConfig};
use crate::registry::Registry;

type Object = Map<String, Value>;

/// `defaults:` of an orchestration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationDefaults {
    /// Benchmark `{id, ...params}`.
    #[serde(default)]
    pub benchmark: Option<Object>,
    /// Harness `{id, ...params}`.
    #[serde(default)]
    pub harness: Option<Object>,
    /// Environment `{id, ...fields and params}`.
    #[serde(default)]
    pub environment: Option<Object>,
    /// Model fields.
    #[serde(default)]
    pub model: Option<Object>,
    /// ExecutionSpec fields (no `task_concurrency`).
    #[serde(default)]
    pub execution: Option<Object>,
    /// Per-request runtime (`reuse`, `reuse_run_id`, `checkpoint_resume`).
    #[serde(default)]
    pub runtime: Option<Object>,
    /// Output (`run_name`, `run_id`).
    #[serde(default)]
    pub output: Option<Object>,
}

/// One entry of `requests:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestEntry {
    /// Unique, non-empty request name.
    pub name: String,
    /// Benchmark `{id, ...params}`.
    #[serde(default)]
    pub benchmark: Option<Object>,
    /// Harness `{id, ...params}`.
    #[serde(default)]
    pub harness: Option<Object>,
    /// Environment `{id, ...}`.
    #[serde(default)]
    pub environment: Option<Object>,
    /// Model fields.
    #[serde(default)]
    pub model: Option<Object>,
    /// ExecutionSpec fields (no `task_concurrency`).
    #[serde(default)]
    pub execution: Option<Object>,
    /// Per-request runtime.
    #[serde(default)]
    pub runtime: Option<Object>,
    /// Output.
    #[serde(default)]
    pub output: Option<Object>,
}

fn version_one() -> u32 {
    1
}

/// A parsed orchestration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationFile {
    /// Format version (must be 1).
    #[serde(default = "version_one")]
    pub version: u32,
    /// Orchestration name.
    #[serde(default)]
    pub name: String,
    /// Global concurrency limit.
    #[serde(default)]
    pub task_concurrency: Option<u32>,
    /// Runtime options for the whole orchestration.
    #[serde(default)]
    pub runtime: Object,
    /// Values shared by every request.
    #[serde(default)]
    pub defaults: OrchestrationDefaults,
    /// The requests, in order.
    pub requests: Vec<RequestEntry>,
}

/// Reads and structurally validates an orchestration file (TOML, YAML or JSON).
pub fn load_orchestration_file(path: &Path) -> Result<OrchestrationFile, ConfigError> {
    orchestration_from_value(path, parse_file(path)?)
}

/// [`load_orchestration_file`] on text already read (`path` picks the format and names the
/// file in errors; it is not read).
pub fn parse_orchestration_text(path: &Path, text: &str) -> Result<OrchestrationFile, ConfigError> {
    orchestration_from_value(path, parse_text(path, text)?)
}

fn orchestration_from_value(path: &Path, value: Value) -> Result<OrchestrationFile, ConfigError> {
    let source = path.display().to_string();
    let Some(top) = value.as_object() else {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            message: format!(
                "expected a mapping with `requests` at the top level, found {}",
                agentcompass_plugin_api::contracts::json_type_name(&value)
            ),
        });
    };
    if !top.contains_key("requests") {
        return Err(ConfigError::invalid(
            source,
            "requests",
            "missing: at least one request is needed",
        ));
    }
    check_references(&source, "", &value)?;
    let file: OrchestrationFile = serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let message = agentcompass_plugin_api::one_line(&e.inner().to_string());
        if key == "." {
            ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            }
        } else {
            ConfigError::invalid(source.clone(), key, message)
        }
    })?;
    if file.version != 1 {
        return Err(ConfigError::invalid(
            source,
            "version",
            format!("only version 1 is supported, found {}", file.version),
        ));
    }
    if file.requests.is_empty() {
        return Err(ConfigError::invalid(
            source,
            "requests",
            "at least one request is needed",
        ));
    }
    Ok(file)
}

/// Explicit (command-line) inputs of `launch`.
#[derive(Debug, Clone, Default)]
pub struct LaunchArgs {
    /// `--task-concurrency`.
    pub task_concurrency: Option<u32>,
    /// `--run-id`: applied to every request's `output.run_id`.
    pub run_id: Option<String>,
    /// `--reuse`: sets `defaults.runtime.reuse = true`.
    pub reuse: bool,
    /// Runtime overrides (`--results-dir`, `--timeout-seconds`, ...).
    pub runtime: RuntimeOptions,
}

/// One request of an orchestration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrchestratedRun {
    /// Stable key `<orchestration id>/<index>`.
    pub key: String,
    /// Declaration index.
    pub index: usize,
    /// Request name (empty for a direct run).
    pub name: String,
    /// The complete request.
    pub request: RunRequest,
}

/// A resolved orchestration: ordered requests sharing one concurrency limit and runtime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Orchestration {
    /// Random id of this orchestration.
    pub id: String,
    /// Name (from the file).
    pub name: String,
    /// Global limit on running attempts.
    pub task_concurrency: u32,
    /// Process-wide runtime options.
    pub runtime: ResolvedRuntimeOptions,
    /// Requests in declaration order.
    pub requests: Vec<OrchestratedRun>,
}

/// A random 128-bit hex id.
pub fn new_orchestration_id() -> String {
    let state = std::collections::hash_map::RandomState::new();
    let mut a = state.build_hasher();
    a.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let mut b = state.build_hasher();
    b.write_u32(std::process::id());
    format!("{:016x}{:016x}", a.finish(), b.finish())
}

impl Orchestration {
    /// Wraps resolved requests (a direct run is a one-request orchestration).
    pub fn from_requests(
        name: String,
        task_concurrency: u32,
        runtime: ResolvedRuntimeOptions,
        requests: Vec<(String, RunRequest)>,
    ) -> Self {
        let id = new_orchestration_id();
        let requests = requests
            .into_iter()
            .enumerate()
            .map(|(index, (name, mut request))| {
                request.execution.task_concurrency = task_concurrency;
                OrchestratedRun {
                    key: format!("{id}/{index}"),
                    index,
                    name,
                    request,
                }
            })
            .collect();
        Orchestration {
            id,
            name,
            task_concurrency,
            runtime,
            requests,
        }
    }
}

/// Splits a flat component mapping `{id, ...params}` into its id and params.
fn split_component(
    source: &str,
    path: &str,
    map: &Option<Object>,
) -> Result<(Option<String>, Object), ConfigError> {
    let mut map = map.clone().unwrap_or_default();
    if map.contains_key("params") {
        return Err(ConfigError::invalid(
            source,
            format!("{path}.params"),
            format!("remove the params layer: put the parameters directly under {path}"),
        ));
    }
    let id = match map.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if !id.trim().is_empty() => Some(id.trim().to_string()),
        Some(other) => {
            return Err(ConfigError::invalid(
                source,
                format!("{path}.id"),
                format!("expected a non-empty string, found {other}"),
            ))
        }
    };
    Ok((id, map))
}

fn no_task_concurrency(source: &str, path: &str, map: &Option<Object>) -> Result<(), ConfigError> {
    if map
        .as_ref()
        .is_some_and(|m| m.contains_key("task_concurrency"))
    {
        return Err(ConfigError::invalid(
            source,
            format!("{path}.task_concurrency"),
            "task_concurrency is global: set it at the top of the orchestration file or with --task-concurrency",
        ));
    }
    Ok(())
}

/// Resolves every request of an orchestration file.
pub fn resolve_orchestration(
    path: &Path,
    file: &OrchestrationFile,
    config: &LoadedConfig,
    args: &LaunchArgs,
    registry: &Registry,
) -> Result<Orchestration, ConfigError> {
    let source = path.display().to_string();
    let runtime = resolve_runtime(config, Some((&source, &file.runtime)), &args.runtime)?;
    // The last config file setting `execution.task_concurrency` (its value is checked here
    // because the per-request execution layers drop it).
    let config_concurrency = match config.files.iter().rev().find_map(|f| {
        let value = f.payload.get("execution")?.get("task_concurrency")?;
        Some((f.path.display().to_string(), value))
    }) {
        None => None,
        Some((file_source, value)) => Some((
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    ConfigError::invalid(
                        &file_source,
                        "execution.task_concurrency",
                        format!("expected a whole number ≥ 1, found {value}"),
                    )
                })?,
            file_source,
            "execution.task_concurrency",
        )),
    };
    let (task_concurrency, concurrency_source, concurrency_path) = match (
        args.task_concurrency,
        file.task_concurrency,
        config_concurrency,
    ) {
        (Some(n), _, _) => (n, "--task-concurrency".to_string(), "task_concurrency"),
        (None, Some(n), _) => (n, source.clone(), "task_concurrency"),
        (None, None, Some(from_config)) => from_config,
        (None, None, None) => (32, String::new(), ""),
    };
    if task_concurrency < 1 {
        return Err(ConfigError::invalid(
            concurrency_source,
            concurrency_path,
            "must be at least 1",
        ));
    }
    no_task_concurrency(&source, "defaults.execution", &file.defaults.execution)?;

    let defaults = &file.defaults;
    let (default_benchmark, default_benchmark_params) =
        split_component(&source, "defaults.benchmark", &defaults.benchmark)?;
    let (default_harness, default_harness_params) =
        split_component(&source, "defaults.harness", &defaults.harness)?;
    let (default_env, default_env_params) =
        split_component(&source, "defaults.environment", &defaults.environment)?;

    let mut names = HashSet::new();
    let mut namespaces: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut resolved = Vec::new();
    for (index, entry) in file.requests.iter().enumerate() {
        let at = |section: &str| format!("requests[{index}].{section}");
        let name = entry.name.trim().to_string();
        if name.is_empty() {
            return Err(ConfigError::invalid(
                &source,
                at("name"),
                "a request name must not be empty",
            ));
        }
        if !names.insert(name.clone()) {
            return Err(ConfigError::invalid(
                &source,
                at("name"),
                format!("duplicate request name `{name}`"),
            ));
        }
        no_task_concurrency(&source, &at("execution"), &entry.execution)?;

        let (bench_id, bench_params) =
            split_component(&source, &at("benchmark"), &entry.benchmark)?;
        let bench_id = bench_id.or(default_benchmark.clone()).ok_or_else(|| {
            ConfigError::invalid(
                &source,
                at("benchmark.id"),
                "no benchmark id (set it in the request or in defaults.benchmark)",
            )
        })?;
        let mut layers = config_component_layers(config, "benchmarks", &bench_id);
        layers.push(Layer::new(
            &source,
            "defaults.benchmark",
            default_benchmark_params.clone(),
        ));
        layers.push(Layer::new(&source, at("benchmark"), bench_params));
        let id_at = IdSource {
            source: &source,
            path: &at("benchmark.id"),
        };
        let benchmark = benchmark_spec(registry, &bench_id, &id_at, &layers)?;

        let (harness_id, harness_params) =
            split_component(&source, &at("harness"), &entry.harness)?;
        let harness_id = harness_id.or(default_harness.clone()).ok_or_else(|| {
            ConfigError::invalid(&source, at("harness.id"), "no harness id (set it in the request or in defaults.harness; `none` for harness-free benchmarks)")
        })?;
        let mut layers = config_component_layers(config, "harnesses", &harness_id);
        layers.push(Layer::new(
            &source,
            "defaults.harness",
            default_harness_params.clone(),
        ));
        layers.push(Layer::new(&source, at("harness"), harness_params));
        layers.retain(|l| !l.map.is_empty() || harness_id != "none");
        let id_at = IdSource {
            source: &source,
            path: &at("harness.id"),
        };
        let harness = harness_spec(registry, &harness_id, &bench_id, &id_at, &layers)?;

        let (env_id, env_params) =
            split_component(&source, &at("environment"), &entry.environment)?;
        let env_id = env_id
            .or(default_env.clone())
            .unwrap_or_else(|| "host_process".to_string());
        let mut env_layers = config_environment_layers(config, &env_id);
        env_layers.push((
            Layer::new(&source, "defaults.environment", default_env_params.clone()),
            false,
        ));
        env_layers.push((Layer::new(&source, at("environment"), env_params), false));
        let id_at = IdSource {
            source: &source,
            path: &at("environment.id"),
        };
        let environment = environment_spec(registry, &env_id, &id_at, &env_layers)?;

        let mut layers: Vec<Layer> = Vec::new();
        layers.extend(
            defaults
                .model
                .clone()
                .map(|m| Layer::new(&source, "defaults.model", m)),
        );
        layers.extend(
            entry
                .model
                .clone()
                .map(|m| Layer::new(&source, at("model"), m)),
        );
        if layers.is_empty() {
            return Err(ConfigError::invalid(
                &source,
                at("model"),
                "no model (set it in the request or in defaults.model)",
            ));
        }
        let model = model_spec(&layers)?;

        let mut layers = config_execution_layers(config, true);
        layers.extend(
            defaults
                .execution
                .clone()
                .map(|m| Layer::new(&source, "defaults.execution", m)),
        );
        layers.extend(
            entry
                .execution
                .clone()
                .map(|m| Layer::new(&source, at("execution"), m)),
        );
        let mut execution = execution_spec(&layers)?;
        execution.task_concurrency = task_concurrency;
        check_recipes(
            registry,
            &execution.enabled_recipes,
            &source,
            &at("execution.enabled_recipes"),
        )?;

        let mut layers = config_runtime_layer(config);
        layers.extend(
            defaults
                .runtime
                .clone()
                .map(|m| Layer::new(&source, "defaults.runtime", m)),
        );
        if args.reuse {
            layers.push(Layer::new(
                "--reuse",
                "",
                json!({"reuse": true})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ));
        }
        layers.extend(
            entry
                .runtime
                .clone()
                .map(|m| Layer::new(&source, at("runtime"), m)),
        );
        let run_runtime = run_runtime_spec(&layers)?;

        let mut layers: Vec<Layer> = Vec::new();
        layers.extend(
            defaults
                .output
                .clone()
                .map(|m| Layer::new(&source, "defaults.output", m)),
        );
        layers.extend(
            entry
                .output
                .clone()
                .map(|m| Layer::new(&source, at("output"), m)),
        );
        if let Some(run_id) = &args.run_id {
            layers.push(Layer::new(
                "--run-id",
                "",
                json!({"run_id": run_id})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ));
        }
        let output = output_spec(&layers)?;

        let request = RunRequest {
            model,
            benchmark,
            harness,
            environment,
            execution,
            runtime: run_runtime,
            output,
            metadata: RunMetadata {
                config_path: config.config_path(),
                recipe_dirs: Some(runtime.recipe_dirs.clone()),
                request_name: name.clone(),
            },
        };
        let namespace = output_namespace(&request);
        if let Some(other) = namespaces.insert(namespace.clone(), name.clone()) {
            return Err(ConfigError::invalid(
                &source,
                at("name"),
                format!("requests `{other}` and `{name}` write to the same output namespace {}; give them different names or output.run_name", namespace.join("/")),
            ));
        }
        resolved.push((name, request));
    }
    Ok(Orchestration::from_requests(
        file.name.clone(),
        task_concurrency,
        runtime,
        resolved,
    ))
}
