//! `run BENCHMARK HARNESS MODEL ...`: one request from flags and configuration; `--dry-run`
//! prints it redacted.

use serde_json::{json, Value};

use super::execute::execute;
use super::invocation::{
    load_config, print_json, request_payload, runtime_overlay, warn_unknown_providers,
    warn_unresolved,
};
use crate::cli::{GlobalArgs, ResourceFlags, ResourceModeArg, RunCmd, StrategyArg};
use agentcompass_host::request::{resolve_run, resolve_runtime, Orchestration, RunArgs};

/// `--env-params` with Harbor's resource flags folded into its `resources` (the flags win).
fn with_resource_flags(
    env_params: Option<serde_json::Map<String, Value>>,
    flags: &ResourceFlags,
) -> Option<serde_json::Map<String, Value>> {
    let mode = |m: Option<ResourceModeArg>| {
        m.map(|m| match m {
            ResourceModeArg::Auto => "auto",
            ResourceModeArg::Limit => "limit",
            ResourceModeArg::Request => "request",
            ResourceModeArg::Guarantee => "guarantee",
            ResourceModeArg::Ignore => "ignore",
        })
    };
    let given = [
        ("cpu_mode", mode(flags.cpus_mode).map(Value::from)),
        ("memory_mode", mode(flags.memory_mode).map(Value::from)),
        ("cpu", flags.override_cpus.map(Value::from)),
        ("memory_mb", flags.override_memory_mb.map(Value::from)),
        ("storage_mb", flags.override_storage_mb.map(Value::from)),
        ("gpu", flags.override_gpus.map(Value::from)),
    ];
    if given.iter().all(|(_, value)| value.is_none()) {
        return env_params;
    }
    let mut params = env_params.unwrap_or_default();
    let resources = params.entry("resources").or_insert_with(|| json!({}));
    if let Value::Object(resources) = resources {
        for (key, value) in given {
            if let Some(value) = value {
                resources.insert(key.to_string(), value);
            }
        }
    }
    Some(params)
}

/// `--execution-params` with the task-selection and timeout flags folded in (the flags win).
fn with_execution_flags(
    params: Option<serde_json::Map<String, Value>>,
    cmd: &RunCmd,
) -> Option<serde_json::Map<String, Value>> {
    let fields: Vec<_> = (cmd.selection.fields().into_iter())
        .chain(cmd.timeouts.fields())
        .collect();
    if fields.is_empty() {
        return params;
    }
    let mut params = params.unwrap_or_default();
    for (key, value) in fields {
        params.insert(key.to_string(), value);
    }
    Some(params)
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
        agent: cmd.agent.to_args(),
        env_params: with_resource_flags(cmd.env_params.clone(), &cmd.resources),
        model_params: cmd.model_params.clone(),
        execution_params: with_execution_flags(cmd.execution_params.clone(), cmd),
        model_base_url: cmd.model_base_url.clone(),
        model_api_key: cmd.model_api_key.clone(),
        model_api_protocol: protocol,
        wrap_api_key: cmd.wrap_api_key,
        no_adaptive_concurrency: cmd.no_adaptive_concurrency,
        task_concurrency: cmd.task_concurrency,
        k: cmd.k,
        attempt_strategy: cmd.attempt_strategy.map(|s| match s {
            StrategyArg::Avg => "avg".to_string(),
            StrategyArg::Pass => "pass".to_string(),
        }),
        max_retries: cmd.max_retries,
        retry_pattern_list: cmd.retry_pattern_list.clone(),
        recipes: cmd.recipes.clone(),
        metric_scripts: cmd.metric_scripts.clone(),
        keep_environment: cmd.keep_environment,
        enable_analysis: match (cmd.enable_analysis, cmd.no_enable_analysis) {
            (_, true) => Some(false),
            (true, false) => Some(true),
            (false, false) => None,
        },
        analysis_params: cmd.analysis_params.clone(),
        run_name: cmd.run_name.clone(),
        run_id: cmd.run_id.clone(),
        reuse: cmd.reuse.clone(),
        no_checkpoint_resume: cmd.no_checkpoint_resume,
        rerun: cmd.rerun.clone(),
        rerun_invalid: cmd.rerun_invalid,
    })
}

/// `run`: resolves one request; `--dry-run` prints it.
pub fn run(global: &GlobalArgs, cmd: &RunCmd) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let runtime = resolve_runtime(&config, None, &runtime_overlay(global, Some(&cmd.runtime))?)?;
    let setup = super::invocation::setup_registry(global, &runtime)?;
    warn_unknown_providers(&runtime, &setup.registry);
    let request = resolve_run(&config, &run_args(cmd)?, &runtime, &setup.registry)?;
    let checks = super::execute::Checks {
        endpoint: !cmd.no_endpoint_check,
        launch: false,
    };
    let payload = cmd
        .dry_run
        .then(|| json!({"request": request_payload(&request), "runtime": runtime}));
    let resolved = !cmd.dry_run || warn_unresolved(&setup.registry, &[&request]);
    let orchestration = Orchestration::from_requests(
        String::new(),
        request.execution.task_concurrency,
        runtime,
        vec![(String::new(), request)],
    );
    if let Some(mut payload) = payload {
        // What a real run checks before its first task, its tasks opened and counted
        // (`selected_tasks`); not with unresolved references (warned about above: null).
        let (selected, images, ids) = if resolved {
            let counts =
                super::execute::dry_run_tasks(&orchestration, &setup, &cmd.gates.gates(), checks)?;
            let first = counts.into_iter().next();
            (
                json!(first.as_ref().map(|r| r.count)),
                first.as_ref().map(|r| r.images.clone()).unwrap_or_default(),
                json!(first.map(|r| r.task_ids)),
            )
        } else {
            (Value::Null, Value::Null, Value::Null)
        };
        payload["selected_tasks"] = selected;
        payload["task_ids"] = ids;
        payload["image_builds"] = images;
        print_json(&payload)?;
        return Ok(0);
    }
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
    execute(orchestration, &setup, &cmd.gates.gates(), checks).map_err(|e| {
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
