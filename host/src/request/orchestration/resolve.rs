//! Resolving an orchestration file's requests, following the seed's orchestration table (see
//! the parent module).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use agentcompass_plugin_api::contracts::{
    BenchmarkSpec, ConfigType, EnvironmentSpec, ExecutionSpec, HarnessSpec, ModelSpec, OutputSpec,
    RunMetadata, RunRequest, RunRuntimeSpec,
};
use serde_json::{json, Value};

use super::{LaunchArgs, Object, Orchestration, OrchestrationFile, RequestEntry, RequestSections};
use crate::config::{process_env, resolve_as, whole_field_reference, ConfigError, LoadedConfig};
use crate::registry::Registry;
use crate::request::layers::Layer;
use crate::request::runtime_options::ResolvedRuntimeOptions;
use crate::request::sections::{
    benchmark_spec, config_component_layers, config_environment_layers, config_execution_layers,
    config_runtime_layer, environment_spec, execution_spec, harness_spec, model_spec, output_spec,
    run_runtime_spec, IdSource,
};
use crate::request::single::check_recipes;
use crate::request::{output_namespace, resolve_runtime};

/// The default `task_concurrency` when nothing sets it.
const DEFAULT_TASK_CONCURRENCY: u32 = 32;

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
    let task_concurrency = task_concurrency(&source, file, config, args)?;
    no_task_concurrency(&source, "defaults.execution", &file.defaults.execution)?;
    let resolver = Resolver {
        source: &source,
        config,
        args,
        registry,
        runtime: &runtime,
        defaults: Defaults::split(&source, &file.defaults)?,
        task_concurrency,
    };
    let mut names = HashSet::new();
    let mut namespaces: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut resolved = Vec::new();
    for (index, entry) in file.requests.iter().enumerate() {
        let at = |section: &str| format!("requests[{index}].{section}");
        let name = request_name(&source, entry, &at("name"), &mut names)?;
        let request = resolver.request(entry, &name, &at)?;
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

/// The global limit: `--task-concurrency` → the file's `task_concurrency` → the last config
/// file's `execution.task_concurrency` → 32.
fn task_concurrency(
    source: &str,
    file: &OrchestrationFile,
    config: &LoadedConfig,
    args: &LaunchArgs,
) -> Result<u32, ConfigError> {
    // The per-request execution layers drop the config's value, so it is checked here.
    let from_config = config.files.iter().rev().find_map(|f| {
        let value = f.payload.get("execution")?.get("task_concurrency")?;
        Some((f.path.display().to_string(), value))
    });
    let from_config = match from_config {
        None => None,
        Some((file_source, value)) => {
            // A typed host field: a `${VAR}` converts now (see `Layer::resolve_typed_fields`).
            let resolved;
            let value = match value.as_str().and_then(whole_field_reference) {
                Some(name) => {
                    resolved = resolve_as(
                        &file_source,
                        "execution.task_concurrency",
                        name,
                        ConfigType::Integer,
                        &process_env,
                    )?;
                    &resolved
                }
                None => value,
            };
            let n = value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    ConfigError::invalid(
                        &file_source,
                        "execution.task_concurrency",
                        format!("expected a whole number ≥ 1, found {value}"),
                    )
                })?;
            Some((n, file_source, "execution.task_concurrency"))
        }
    };
    let (n, at_source, at_path) = match (args.task_concurrency, file.task_concurrency, from_config)
    {
        (Some(n), _, _) => (n, "--task-concurrency".to_string(), "task_concurrency"),
        (None, Some(n), _) => (n, source.to_string(), "task_concurrency"),
        (None, None, Some(from_config)) => from_config,
        (None, None, None) => (DEFAULT_TASK_CONCURRENCY, String::new(), ""),
    };
    if n < 1 {
        return Err(ConfigError::invalid(
            at_source,
            at_path,
            "must be at least 1",
        ));
    }
    Ok(n)
}

/// A request's trimmed name, refused when empty or taken.
fn request_name(
    source: &str,
    entry: &RequestEntry,
    at: &str,
    names: &mut HashSet<String>,
) -> Result<String, ConfigError> {
    let name = entry.name.trim().to_string();
    if name.is_empty() {
        return Err(ConfigError::invalid(
            source,
            at,
            "a request name must not be empty",
        ));
    }
    if !names.insert(name.clone()) {
        return Err(ConfigError::invalid(
            source,
            at,
            format!("duplicate request name `{name}`"),
        ));
    }
    Ok(name)
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

/// The component defaults, split into id and params once.
struct Defaults<'a> {
    sections: &'a RequestSections,
    benchmark: (Option<String>, Object),
    harness: (Option<String>, Object),
    environment: (Option<String>, Object),
}

impl<'a> Defaults<'a> {
    fn split(source: &str, sections: &'a RequestSections) -> Result<Self, ConfigError> {
        Ok(Defaults {
            sections,
            benchmark: split_component(source, "defaults.benchmark", &sections.benchmark)?,
            harness: split_component(source, "defaults.harness", &sections.harness)?,
            environment: split_component(source, "defaults.environment", &sections.environment)?,
        })
    }
}

/// Everything one request's resolution reads.
struct Resolver<'a> {
    source: &'a str,
    config: &'a LoadedConfig,
    args: &'a LaunchArgs,
    registry: &'a Registry,
    runtime: &'a ResolvedRuntimeOptions,
    defaults: Defaults<'a>,
    task_concurrency: u32,
}

impl Resolver<'_> {
    /// The layer of `defaults.<section>` then the request's own, when present.
    fn section_layers(
        &self,
        section: &str,
        defaults: &Option<Object>,
        own: &Option<Object>,
        at: &dyn Fn(&str) -> String,
    ) -> Vec<Layer> {
        let default_layer = defaults
            .clone()
            .map(|m| Layer::new(self.source, format!("defaults.{section}"), m));
        let own_layer = own.clone().map(|m| Layer::new(self.source, at(section), m));
        default_layer.into_iter().chain(own_layer).collect()
    }

    /// A complete request from its entry over the defaults and the configuration.
    fn request(
        &self,
        entry: &RequestEntry,
        name: &str,
        at: &dyn Fn(&str) -> String,
    ) -> Result<RunRequest, ConfigError> {
        let own = &entry.sections;
        no_task_concurrency(self.source, &at("execution"), &own.execution)?;
        let benchmark = self.benchmark(own, at)?;
        Ok(RunRequest {
            harness: self.harness(own, &benchmark.id, at)?,
            benchmark,
            environment: self.environment(own, at)?,
            model: self.model(own, at)?,
            execution: self.execution(own, at)?,
            runtime: self.run_runtime(own, at)?,
            output: self.output(own, at)?,
            metadata: RunMetadata {
                config_path: self.config.config_path(),
                recipe_dirs: Some(self.runtime.recipe_dirs.clone()),
                request_name: name.to_string(),
            },
        })
    }

    fn benchmark(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<BenchmarkSpec, ConfigError> {
        let (id, params) = split_component(self.source, &at("benchmark"), &own.benchmark)?;
        let (default_id, default_params) = &self.defaults.benchmark;
        let id = id.or(default_id.clone()).ok_or_else(|| {
            ConfigError::invalid(
                self.source,
                at("benchmark.id"),
                "no benchmark id (set it in the request or in defaults.benchmark)",
            )
        })?;
        let mut layers = config_component_layers(self.config, "benchmarks", &id);
        layers.push(Layer::new(
            self.source,
            "defaults.benchmark",
            default_params.clone(),
        ));
        layers.push(Layer::new(self.source, at("benchmark"), params));
        let id_at = IdSource {
            source: self.source,
            path: &at("benchmark.id"),
        };
        benchmark_spec(self.registry, &id, &id_at, &layers)
    }

    fn harness(
        &self,
        own: &RequestSections,
        benchmark_id: &str,
        at: &dyn Fn(&str) -> String,
    ) -> Result<HarnessSpec, ConfigError> {
        let (id, params) = split_component(self.source, &at("harness"), &own.harness)?;
        let (default_id, default_params) = &self.defaults.harness;
        let id = id.or(default_id.clone()).ok_or_else(|| {
            ConfigError::invalid(self.source, at("harness.id"), "no harness id (set it in the request or in defaults.harness; `none` for harness-free benchmarks)")
        })?;
        let mut layers = config_component_layers(self.config, "harnesses", &id);
        layers.push(Layer::new(
            self.source,
            "defaults.harness",
            default_params.clone(),
        ));
        layers.push(Layer::new(self.source, at("harness"), params));
        layers.retain(|l| !l.map.is_empty() || id != "none");
        let id_at = IdSource {
            source: self.source,
            path: &at("harness.id"),
        };
        harness_spec(self.registry, &id, benchmark_id, &id_at, &layers)
    }

    fn environment(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<EnvironmentSpec, ConfigError> {
        let (id, params) = split_component(self.source, &at("environment"), &own.environment)?;
        let (default_id, default_params) = &self.defaults.environment;
        let id = id
            .or(default_id.clone())
            .unwrap_or_else(|| "host_process".to_string());
        let mut layers = config_environment_layers(self.config, &id);
        let defaults_layer =
            Layer::new(self.source, "defaults.environment", default_params.clone());
        layers.push((defaults_layer, false));
        layers.push((Layer::new(self.source, at("environment"), params), false));
        let id_at = IdSource {
            source: self.source,
            path: &at("environment.id"),
        };
        environment_spec(self.registry, &id, &id_at, &layers)
    }

    fn model(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<ModelSpec, ConfigError> {
        let layers = self.section_layers("model", &self.defaults.sections.model, &own.model, at);
        if layers.is_empty() {
            return Err(ConfigError::invalid(
                self.source,
                at("model"),
                "no model (set it in the request or in defaults.model)",
            ));
        }
        model_spec(&layers)
    }

    fn execution(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<ExecutionSpec, ConfigError> {
        let mut layers = config_execution_layers(self.config, true);
        layers.extend(self.section_layers(
            "execution",
            &self.defaults.sections.execution,
            &None,
            at,
        ));
        if !self.args.execution.is_empty() {
            let flags = Value::Object(self.args.execution.clone());
            layers.push(flag_layer("launch flags", flags));
        }
        layers.extend(self.section_layers("execution", &None, &own.execution, at));
        let mut execution = execution_spec(&layers)?;
        execution.task_concurrency = self.task_concurrency;
        check_recipes(
            self.registry,
            &execution.enabled_recipes,
            self.source,
            &at("execution.enabled_recipes"),
        )?;
        Ok(execution)
    }

    fn run_runtime(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<RunRuntimeSpec, ConfigError> {
        let defaults = &self.defaults.sections.runtime;
        let mut layers = config_runtime_layer(self.config);
        layers.extend(self.section_layers("runtime", defaults, &None, at));
        if self.args.reuse {
            layers.push(flag_layer("--reuse", json!({"reuse": true})));
        }
        if !self.args.rerun.is_empty() {
            layers.push(flag_layer("--rerun", json!({"rerun": self.args.rerun})));
        }
        if self.args.rerun_invalid {
            layers.push(flag_layer(
                "--rerun-invalid",
                json!({"rerun_invalid": true}),
            ));
        }
        layers.extend(self.section_layers("runtime", &None, &own.runtime, at));
        run_runtime_spec(&layers)
    }

    fn output(
        &self,
        own: &RequestSections,
        at: &dyn Fn(&str) -> String,
    ) -> Result<OutputSpec, ConfigError> {
        let mut layers =
            self.section_layers("output", &self.defaults.sections.output, &own.output, at);
        if let Some(run_id) = &self.args.run_id {
            layers.push(flag_layer("--run-id", json!({ "run_id": run_id })));
        }
        output_spec(&layers)
    }
}

/// The layer a command-line flag adds.
fn flag_layer(flag: &str, values: Value) -> Layer {
    let map = values.as_object().cloned().unwrap_or_default();
    Layer::new(flag, "", map)
}
