//! Single-run resolution (`agentcompass-host run`), following the seed's single-run table:
//! component params config entry → explicit params; ExecutionSpec defaults → config
//! `execution` → explicit values; the model from explicit arguments only; output and reuse from
//! explicit arguments, with the configured `runtime.reuse` when reuse is unspecified.

use agentcompass_plugin_api::contracts::{
    BenchmarkSpec, ComponentKind, EnvironmentSpec, ExecutionSpec, HarnessSpec, OutputSpec,
    RunMetadata, RunRequest,
};
use serde_json::{json, Map, Value};

use super::layers::Layer;
use super::runtime_options::ResolvedRuntimeOptions;
use super::sections::{
    benchmark_spec, config_component_layers, config_environment_layers, config_execution_layers,
    config_runtime_layer, environment_spec, execution_spec, harness_spec, model_spec, output_spec,
    run_runtime_spec, IdSource,
};
use crate::config::{ConfigError, LoadedConfig};
use crate::registry::Registry;

/// The explicit inputs of one run (command-line flags or SDK arguments). `None` means "not
/// given" (lower layers apply).
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    /// Benchmark id.
    pub benchmark: String,
    /// Harness id (`none` for harness-free benchmarks).
    pub harness: String,
    /// Model id.
    pub model: String,
    /// Environment provider id.
    pub environment: String,
    /// `--benchmark-params`.
    pub benchmark_params: Option<Map<String, Value>>,
    /// `--harness-params`.
    pub harness_params: Option<Map<String, Value>>,
    /// `--metric-script` (Harbor `uv-script` metrics of the run).
    pub metric_scripts: Vec<String>,
    /// The agent flags (`--mcp-config`, `--skill`, `--agent-env`, `--agent-kwarg`,
    /// `--extra-instruction-path`).
    pub agent: super::agent_args::AgentArgs,
    /// `--env-params`.
    pub env_params: Option<Map<String, Value>>,
    /// `--model-params`.
    pub model_params: Option<Map<String, Value>>,
    /// `--execution-params`.
    pub execution_params: Option<Map<String, Value>>,
    /// `--model-base-url`.
    pub model_base_url: Option<String>,
    /// `--model-api-key` (a literal or a `${VAR}` reference, kept as written).
    pub model_api_key: Option<String>,
    /// `--model-api-protocol` (a name, `auto`, or a list).
    pub model_api_protocol: Option<Value>,
    /// `--wrap-api-key`.
    pub wrap_api_key: bool,
    /// `--no-adaptive-concurrency`.
    pub no_adaptive_concurrency: bool,
    /// `--task-concurrency`.
    pub task_concurrency: Option<u32>,
    /// `--k`.
    pub k: Option<u32>,
    /// `--attempt-strategy`.
    pub attempt_strategy: Option<String>,
    /// `--max-retries`.
    pub max_retries: Option<u32>,
    /// `--retry-pattern-list`.
    pub retry_pattern_list: Option<Vec<String>>,
    /// `--recipe` (repeatable; empty = every recipe is a candidate).
    pub recipes: Vec<String>,
    /// `--keep-environment`.
    pub keep_environment: bool,
    /// `--enable-analysis` (`Some(true)`) / `--no-enable-analysis` (`Some(false)`).
    pub enable_analysis: Option<bool>,
    /// `--analysis-params`.
    pub analysis_params: Option<Map<String, Value>>,
    /// `--run-name`.
    pub run_name: Option<String>,
    /// `--run-id`.
    pub run_id: Option<String>,
    /// `--reuse [RUN_ID]`: `Some("")` for a bare `--reuse`.
    pub reuse: Option<String>,
    /// `--no-checkpoint-resume`.
    pub no_checkpoint_resume: bool,
    /// `--rerun CLASS_OR_CODE...`.
    pub rerun: Vec<String>,
    /// `--rerun-invalid`.
    pub rerun_invalid: bool,
}

fn flag(name: &str, value: Value) -> Layer {
    Layer::new(name, "", value.as_object().cloned().unwrap_or_default())
}

/// Checks that every recipe named in `enabled_recipes` is registered.
pub fn check_recipes(
    registry: &Registry,
    recipes: &[String],
    source: &str,
    path: &str,
) -> Result<(), ConfigError> {
    for id in recipes {
        registry
            .get(ComponentKind::Recipe, id)
            .map_err(|e| ConfigError::invalid(source, path, e.to_string()))?;
    }
    Ok(())
}

/// An optional `--X-params` map as a flag layer.
fn params_layer(name: &str, map: &Option<Map<String, Value>>) -> Option<Layer> {
    map.clone().map(|m| Layer::new(name, "", m))
}

/// Resolves one run into a complete, validated `RunRequest`.
pub fn resolve_run(
    config: &LoadedConfig,
    args: &RunArgs,
    runtime: &ResolvedRuntimeOptions,
    registry: &Registry,
) -> Result<RunRequest, ConfigError> {
    let (benchmark, harness, environment) = components(config, args, registry)?;
    Ok(RunRequest {
        model: model_spec(&model_layers(args))?,
        benchmark,
        harness,
        environment,
        execution: execution(config, args, registry)?,
        runtime: run_runtime_spec(&runtime_layers(config, args))?,
        output: output(args)?,
        metadata: RunMetadata {
            config_path: config.config_path(),
            recipe_dirs: Some(runtime.recipe_dirs.clone()),
            request_name: String::new(),
        },
    })
}

/// The benchmark, harness and environment: the selected config entry, then the flags.
fn components(
    config: &LoadedConfig,
    args: &RunArgs,
    registry: &Registry,
) -> Result<(BenchmarkSpec, HarnessSpec, EnvironmentSpec), ConfigError> {
    let mut layers = config_component_layers(config, "benchmarks", &args.benchmark);
    layers.extend(params_layer("--benchmark-params", &args.benchmark_params));
    let at = IdSource {
        source: "command line",
        path: "BENCHMARK",
    };
    let benchmark = benchmark_spec(registry, &args.benchmark, &at, &layers)?;

    let mut layers = config_component_layers(config, "harnesses", &args.harness);
    layers.extend(params_layer("--harness-params", &args.harness_params));
    layers.extend(args.agent.kwargs_layer()?);
    let at = IdSource {
        source: "command line",
        path: "HARNESS",
    };
    let mut harness = harness_spec(registry, &args.harness, &args.benchmark, &at, &layers)?;
    args.agent.apply(&mut harness)?;

    let mut env_layers = config_environment_layers(config, &args.environment);
    env_layers.extend(params_layer("--env-params", &args.env_params).map(|l| (l, false)));
    let at = IdSource {
        source: "--env",
        path: "environment",
    };
    let environment = environment_spec(registry, &args.environment, &at, &env_layers)?;
    Ok((benchmark, harness, environment))
}

/// The harness and environment of `agents install`: each from its config entry, then its
/// flag (`--harness-params`, `--env-params`), as `run` resolves them.
pub fn resolve_install_target(
    config: &LoadedConfig,
    registry: &Registry,
    (harness, harness_params): (&str, &Option<Map<String, Value>>),
    (environment, env_params): (&str, &Option<Map<String, Value>>),
) -> Result<(HarnessSpec, EnvironmentSpec), ConfigError> {
    let mut layers = config_component_layers(config, "harnesses", harness);
    layers.extend(params_layer("--harness-params", harness_params));
    let at = IdSource {
        source: "command line",
        path: "HARNESS",
    };
    let harness = harness_spec(registry, harness, "", &at, &layers)?;
    let mut env_layers = config_environment_layers(config, environment);
    env_layers.extend(params_layer("--env-params", env_params).map(|l| (l, false)));
    let at = IdSource {
        source: "--env",
        path: "environment",
    };
    let environment = environment_spec(registry, environment, &at, &env_layers)?;
    Ok((harness, environment))
}

/// The model from explicit arguments only, one layer per flag, so an error names the flag
/// that set the bad value.
fn model_layers(args: &RunArgs) -> Vec<Layer> {
    let mut layers = vec![flag("command line", json!({"id": args.model}))];
    if let Some(url) = &args.model_base_url {
        layers.push(flag("--model-base-url", json!({"base_url": url})));
    }
    if let Some(key) = &args.model_api_key {
        layers.push(flag("--model-api-key", json!({"api_key": key})));
    }
    if let Some(protocol) = &args.model_api_protocol {
        layers.push(flag(
            "--model-api-protocol",
            json!({"api_protocol": protocol}),
        ));
    }
    if args.wrap_api_key {
        layers.push(flag("--wrap-api-key", json!({"wrap_api_key": true})));
    }
    layers.extend(params_layer("--model-params", &args.model_params).map(|l| {
        Layer::new(
            l.source,
            "params",
            Map::from_iter([("params".to_string(), Value::Object(l.map))]),
        )
    }));
    if args.no_adaptive_concurrency {
        layers.push(flag(
            "--no-adaptive-concurrency",
            json!({"params": {"adaptive_concurrency": false}}),
        ));
    }
    layers
}

/// ExecutionSpec defaults → config `execution` → `--execution-params` → the single flags;
/// every enabled recipe must be registered.
fn execution(
    config: &LoadedConfig,
    args: &RunArgs,
    registry: &Registry,
) -> Result<ExecutionSpec, ConfigError> {
    let mut layers = config_execution_layers(config, false);
    layers.extend(params_layer("--execution-params", &args.execution_params));
    let flags = [
        (
            "--task-concurrency",
            args.task_concurrency
                .map(|n| json!({"task_concurrency": n})),
        ),
        (
            "--attempt-strategy",
            args.attempt_strategy
                .as_ref()
                .map(|strategy| json!({"attempts": {"strategy": strategy}})),
        ),
        ("--k", args.k.map(|k| json!({"attempts": {"k": k}}))),
        (
            "--max-retries",
            args.max_retries.map(|n| json!({"max_retries": n})),
        ),
        (
            "--retry-pattern-list",
            args.retry_pattern_list
                .as_ref()
                .map(|patterns| json!({"retry_pattern_list": patterns})),
        ),
        (
            "--recipe",
            (!args.recipes.is_empty()).then(|| json!({"enabled_recipes": args.recipes})),
        ),
        (
            "--metric-script",
            (!args.metric_scripts.is_empty())
                .then(|| json!({"metric_scripts": absolute(&args.metric_scripts)})),
        ),
        (
            "--keep-environment",
            args.keep_environment
                .then(|| json!({"keep_environment": true})),
        ),
        (
            "--enable-analysis",
            args.enable_analysis
                .map(|on| json!({"enable_analysis": on})),
        ),
        (
            "--analysis-params",
            args.analysis_params
                .as_ref()
                .map(|params| json!({"analysis_params": params})),
        ),
    ];
    layers.extend(
        flags
            .into_iter()
            .filter_map(|(name, value)| value.map(|value| flag(name, value))),
    );
    let execution = execution_spec(&layers)?;
    let recipe_source = super::layers::owner(&layers, "enabled_recipes");
    check_recipes(
        registry,
        &execution.enabled_recipes,
        recipe_source.map_or("--recipe", |l| l.source.as_str()),
        "enabled_recipes",
    )?;
    Ok(execution)
}

/// The configured `runtime.reuse`, then `--reuse` and `--no-checkpoint-resume`.
fn runtime_layers(config: &LoadedConfig, args: &RunArgs) -> Vec<Layer> {
    let mut layers = config_runtime_layer(config);
    match args.reuse.as_deref() {
        Some("") => layers.push(flag("--reuse", json!({"reuse": true}))),
        Some(id) => layers.push(flag("--reuse", json!({"reuse": true, "reuse_run_id": id}))),
        None => {}
    }
    if args.no_checkpoint_resume {
        layers.push(flag(
            "--no-checkpoint-resume",
            json!({"checkpoint_resume": false}),
        ));
    }
    if !args.rerun.is_empty() {
        layers.push(flag("--rerun", json!({"rerun": args.rerun})));
    }
    if args.rerun_invalid {
        layers.push(flag("--rerun-invalid", json!({"rerun_invalid": true})));
    }
    layers
}

/// `--run-name` and `--run-id`.
fn output(args: &RunArgs) -> Result<OutputSpec, ConfigError> {
    let mut output = Map::new();
    if let Some(name) = &args.run_name {
        output.insert("run_name".into(), json!(name));
    }
    if let Some(id) = &args.run_id {
        output.insert("run_id".into(), json!(id));
    }
    output_spec(&[Layer::new("command line", "", output)])
}

/// `paths` made absolute against the working directory (a script is run from a temp dir).
fn absolute(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|p| std::path::absolute(p).map_or_else(|_| p.clone(), |a| a.display().to_string()))
        .collect()
}
