//! `run`, `launch` and `config show`: load the configuration, resolve the runtime options and
//! the registry, resolve requests, and print them (`--dry-run`) redacted.

use std::path::PathBuf;

use agentcompass_plugin_api::contracts::{ComponentKind, RunRequest};
use anyhow::Context;
use serde_json::{json, Value};

use crate::cli::{
    GlobalArgs, LaunchCmd, ProgressArg, RunCmd, RuntimeFlags, ShowFormat, StrategyArg,
};
use crate::config::{load_run_config, resolve_references, LoadedConfig};
use crate::registry::Registry;
use crate::request::{
    load_orchestration_file, resolve_orchestration, resolve_run, resolve_runtime, LaunchArgs,
    Orchestration, ProgressMode, ResolvedRuntimeOptions, RunArgs, RuntimeOptions,
};
use crate::setup::{build_registry, PluginSettings, Setup};
use agentcompass_redact::redact_value;

/// Loads the user, project and `--config` files.
pub fn load_config(global: &GlobalArgs) -> anyhow::Result<LoadedConfig> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(load_run_config(
        &global.configs,
        &cwd,
        &crate::config::process_env,
    )?)
}

fn absolute_strings(paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    paths
        .iter()
        .map(|p| {
            std::path::absolute(p)
                .map(|p| p.display().to_string())
                .with_context(|| format!("cannot resolve {}", p.display()))
        })
        .collect()
}

/// Runtime overrides from the global flags and a command's runtime flags.
pub fn runtime_overlay(
    global: &GlobalArgs,
    flags: Option<&RuntimeFlags>,
) -> anyhow::Result<RuntimeOptions> {
    let mut overlay = RuntimeOptions {
        plugin_dirs: (!global.plugin_dirs.is_empty())
            .then(|| absolute_strings(&global.plugin_dirs))
            .transpose()?,
        recipe_dirs: (!global.recipe_dirs.is_empty())
            .then(|| absolute_strings(&global.recipe_dirs))
            .transpose()?,
        plugin_lock: global.plugin_lock.as_ref().map(|p| p.display().to_string()),
        ..RuntimeOptions::default()
    };
    if let Some(flags) = flags {
        overlay.results_dir = flags.results_dir.clone();
        overlay.timeout_seconds = flags.timeout_seconds;
        overlay.cleanup_grace_seconds = flags.cleanup_grace_seconds;
        overlay.checkpoint_after_seconds = flags.checkpoint_after_seconds;
        overlay.progress = flags.progress.map(|p| match p {
            ProgressArg::Auto => ProgressMode::Auto,
            ProgressArg::Plain => ProgressMode::Plain,
            ProgressArg::None => ProgressMode::None,
        });
        overlay.log_level = flags.log_level.clone();
        if !flags.provider_limits.is_empty() {
            overlay.provider_limits = Some(flags.provider_limits.iter().cloned().collect());
        }
        if !flags.env_open_qps.is_empty() {
            overlay.env_open_qps = Some(flags.env_open_qps.iter().cloned().collect());
        }
    }
    Ok(overlay)
}

/// Plugin directories and lock file from the resolved runtime options.
pub fn plugin_settings(global: &GlobalArgs, runtime: &ResolvedRuntimeOptions) -> PluginSettings {
    PluginSettings {
        plugin_dirs: runtime.plugin_dirs.iter().map(PathBuf::from).collect(),
        recipe_dirs: runtime.recipe_dirs.iter().map(PathBuf::from).collect(),
        lock_file: runtime.plugin_lock.as_ref().map(PathBuf::from),
        load_bundled: !global.no_bundled_plugins,
    }
}

/// Configuration, runtime options and registry for a command without runtime flags.
pub fn load_registry(
    global: &GlobalArgs,
) -> anyhow::Result<(LoadedConfig, ResolvedRuntimeOptions, Setup)> {
    let config = load_config(global)?;
    let runtime = resolve_runtime(&config, None, &runtime_overlay(global, None)?)?;
    let setup = build_registry(&plugin_settings(global, &runtime))?;
    super::print_problems(&setup.problems, global.verbose);
    Ok((config, runtime, setup))
}

/// The explicit inputs of a `run` (also used by `plan`).
pub fn run_args(cmd: &RunCmd) -> anyhow::Result<RunArgs> {
    let protocol = match cmd.model_api_protocol.as_deref().map(str::trim) {
        None => None,
        Some(text) if text.starts_with('[') => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|e| anyhow::anyhow!("--model-api-protocol: invalid JSON list: {e}"))?,
        ),
        Some(text) => Some(Value::String(text.to_string())),
    };
    Ok(RunArgs {
        benchmark: cmd.benchmark.clone(),
        harness: cmd.harness.clone(),
        model: cmd.model.clone(),
        environment: cmd.env.clone(),
        benchmark_params: cmd.benchmark_params.clone(),
        harness_params: cmd.harness_params.clone(),
        env_params: cmd.env_params.clone(),
        model_params: cmd.model_params.clone(),
        execution_params: cmd.execution_params.clone(),
        model_base_url: cmd.model_base_url.clone(),
        model_api_key: cmd.model_api_key.clone(),
        model_api_protocol: protocol,
        task_concurrency: cmd.task_concurrency,
        k: cmd.k,
        attempt_strategy: cmd.attempt_strategy.map(|s| match s {
            StrategyArg::Avg => "avg".to_string(),
            StrategyArg::Pass => "pass".to_string(),
        }),
        max_retries: cmd.max_retries,
        retry_pattern_list: cmd.retry_pattern_list.clone(),
        recipes: cmd.recipes.clone(),
        keep_environment: cmd.keep_environment,
        run_name: cmd.run_name.clone(),
        run_id: cmd.run_id.clone(),
        reuse: cmd.reuse.clone(),
        no_checkpoint_resume: cmd.no_checkpoint_resume,
    })
}

/// The printable (redacted) form of a request.
pub fn request_payload(request: &RunRequest) -> Value {
    redact_value(&serde_json::to_value(request).unwrap_or(Value::Null))
}

/// Warns (one line each) about `${VAR}` references whose variable is not set; they must be
/// set by the time the request executes.
fn warn_unresolved(requests: &[&RunRequest]) {
    for request in requests {
        let value = serde_json::to_value(request).unwrap_or(Value::Null);
        if let Err(e) = resolve_references("", &value, &crate::config::process_env) {
            eprintln!("warning: {e}");
        }
    }
}

/// Warns (one line each) about provider limits and open rates set for environment providers
/// this registry does not have: likely a typo, and otherwise without effect here.
fn warn_unknown_providers(runtime: &ResolvedRuntimeOptions, registry: &Registry) {
    let defaults = ResolvedRuntimeOptions::default();
    let known: Vec<&str> = registry
        .list(ComponentKind::Environment)
        .map(|entry| entry.info.id.as_str())
        .collect();
    let named = |key: &str, ids: Vec<&String>| {
        for id in ids {
            if !known.contains(&id.as_str()) {
                eprintln!(
                    "warning: runtime.{key}: no environment provider `{id}` is installed (known: {})",
                    known.join(", ")
                );
            }
        }
    };
    named(
        "provider_limits",
        runtime
            .provider_limits
            .keys()
            .filter(|id| !defaults.provider_limits.contains_key(*id))
            .collect(),
    );
    named("env_open_qps", runtime.env_open_qps.keys().collect());
}

fn print_json(value: &Value) -> anyhow::Result<()> {
    crate::outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// `run`: resolves one request; `--dry-run` prints it.
pub fn run(global: &GlobalArgs, cmd: &RunCmd) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let runtime = resolve_runtime(&config, None, &runtime_overlay(global, Some(&cmd.runtime))?)?;
    let setup = build_registry(&plugin_settings(global, &runtime))?;
    super::print_problems(&setup.problems, global.verbose);
    warn_unknown_providers(&runtime, &setup.registry);
    let request = resolve_run(&config, &run_args(cmd)?, &runtime, &setup.registry)?;
    if cmd.dry_run {
        warn_unresolved(&[&request]);
        print_json(&json!({"request": request_payload(&request), "runtime": runtime}))?;
        return Ok(0);
    }
    let orchestration = Orchestration::from_requests(
        String::new(),
        request.execution.task_concurrency,
        runtime,
        vec![(String::new(), request)],
    );
    // Preflight names the key; when a flag set it, name the flag too.
    let mut flags: Vec<(String, &str)> = Vec::new();
    if cmd.retry_pattern_list.is_some() {
        flags.push((
            "execution.retry_pattern_list".into(),
            "--retry-pattern-list",
        ));
    }
    for key in cmd.model_params.iter().flat_map(|params| params.keys()) {
        flags.push((
            format!("model gateway: model.params.{key}: "),
            "--model-params",
        ));
    }
    execute(orchestration, &setup).map_err(|e| {
        let message = format!("{e:#}");
        match flags
            .iter()
            .find(|(key, _)| message.starts_with(key.as_str()))
        {
            Some((_, flag)) => anyhow::anyhow!("{flag}: {message}"),
            None => e,
        }
    })
}

fn orchestration_payload(orchestration: &Orchestration) -> Value {
    json!({
        "orchestration_id": orchestration.id,
        "name": orchestration.name,
        "task_concurrency": orchestration.task_concurrency,
        "runtime": orchestration.runtime,
        "requests": orchestration.requests.iter().map(|run| {
            let mut payload = request_payload(&run.request);
            if let Value::Object(map) = &mut payload {
                map.insert("key".into(), json!(run.key));
                map.insert("index".into(), json!(run.index));
                map.insert("name".into(), json!(run.name));
            }
            payload
        }).collect::<Vec<_>>(),
    })
}

/// `launch`: resolves an orchestration file; `--dry-run` prints it.
pub fn launch(global: &GlobalArgs, cmd: &LaunchCmd) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let file = load_orchestration_file(&cmd.file)?;
    let args = LaunchArgs {
        task_concurrency: cmd.task_concurrency,
        run_id: cmd.run_id.clone(),
        reuse: cmd.reuse,
        runtime: runtime_overlay(global, Some(&cmd.runtime))?,
    };
    // The registry depends on the plugin dirs the orchestration's runtime names.
    let source = cmd.file.display().to_string();
    let runtime = resolve_runtime(&config, Some((&source, &file.runtime)), &args.runtime)?;
    let setup = build_registry(&plugin_settings(global, &runtime))?;
    super::print_problems(&setup.problems, global.verbose);
    warn_unknown_providers(&runtime, &setup.registry);
    let orchestration = resolve_orchestration(&cmd.file, &file, &config, &args, &setup.registry)?;
    if cmd.dry_run {
        warn_unresolved(
            &orchestration
                .requests
                .iter()
                .map(|r| &r.request)
                .collect::<Vec<_>>(),
        );
        print_json(&orchestration_payload(&orchestration))?;
        return Ok(0);
    }
    // Preflight and task-loading errors name the request; name the file too.
    execute(orchestration, &setup).map_err(|e| anyhow::anyhow!("{source}: {e:#}"))
}

/// The most threads the runtime's blocking pool may start.
const BLOCKING_THREADS: usize = 16;

fn execute(orchestration: Orchestration, setup: &Setup) -> anyhow::Result<i32> {
    let mut prepared = crate::runtime::preflight_all(&setup.registry, &orchestration)
        .map_err(|e| anyhow::anyhow!(e))?;
    let executor = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // File work handed off by providers (temp dirs, copies) is short; a small pool keeps
        // the thread count, and with it the malloc arenas and RSS, flat however many tasks
        // run at once (tokio's default allows 512 threads).
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name("agentcompass")
        .build()
        .context("cannot start the async runtime")?;
    // Every request's tasks load before any results directory is created: a dataset or task
    // directory the benchmark rejects is bad input (exit 2, nothing written).
    let loaded = executor.block_on(async {
        for request in &mut prepared {
            request.load_tasks().await?;
        }
        Ok::<(), String>(())
    });
    if let Err(e) = loaded {
        executor.shutdown_timeout(std::time::Duration::from_millis(100));
        return Err(anyhow::anyhow!(e));
    }
    let outcome = executor.block_on(crate::runtime::execute(&orchestration, prepared));
    for request in &outcome.requests {
        let label = if request.name.is_empty() {
            String::new()
        } else {
            format!("{}: ", request.name)
        };
        let headline = request.headline.as_deref().unwrap_or("no metrics");
        eprintln!(
            "{label}{} — {headline} ({} tasks, {} reused)",
            request.status, request.published, request.reused
        );
        if let Some(error) = &request.error {
            eprintln!("{label}error: {error}");
        }
        if let Some(dir) = &request.run_dir {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            // The metric table of summary.md, then the results path.
            if let Ok(summary) = std::fs::read_to_string(dir.join("summary.md")) {
                for line in summary.lines().filter(|l| l.starts_with('|')).take(12) {
                    eprintln!("{label}{line}");
                }
            }
            crate::outln!("{}", dir.display());
        }
    }
    // Plugins keep threads of their own; do not wait for them at exit.
    executor.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(outcome.exit_code())
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `config show`: the merged configuration, redacted.
pub fn config_show(global: &GlobalArgs, format: ShowFormat) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let merged = redact_value(&Value::Object(config.payload.clone()));
    match format {
        ShowFormat::Json => print_json(&merged)?,
        ShowFormat::Toml => {
            for file in &config.files {
                crate::outln!("# {}", file.path.display());
            }
            crate::out!(
                "{}",
                toml::to_string_pretty(&without_nulls(&merged)).context("cannot render TOML")?
            );
        }
    }
    Ok(0)
}
