//! `agentcompass-host plan BENCHMARK HARNESS MODEL --task ID [run flags]`: the audit view of
//! one task's resolved plan, without opening any environment (for debugging recipes).

use agentcompass_host::host_services::{CancelToken, HostServices};
use anyhow::{anyhow, Context};
use serde_json::json;

use super::invocation::{load_config, runtime_overlay};
use crate::cli::{GlobalArgs, PlanCmd};
use agentcompass_host::planner::Planner;
use agentcompass_host::request::{resolve_run, resolve_runtime};
use agentcompass_redact::redact_value;

/// Prints the redacted audit view of one task's plan; exit 1 when the plan would be refused
/// before allocation (provider capabilities, unset bindings).
pub fn plan(global: &GlobalArgs, cmd: &PlanCmd) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let runtime = resolve_runtime(
        &config,
        None,
        &runtime_overlay(global, Some(&cmd.run.runtime))?,
    )?;
    let setup = super::invocation::setup_registry(global, &runtime)?;
    let request = resolve_run(
        &config,
        &super::run::run_args(&cmd.run)?,
        &runtime,
        &setup.registry,
    )?;
    let planner = Planner::new(&setup.registry, &request)?;
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A dataset the benchmark names is fetched into the cache (or found there), as a run
    // would; its progress is printed on stderr.
    let datasets = agentcompass_host::datasets::DatasetService::new(
        std::path::Path::new(&runtime.data_dir),
        super::datasets::DownloadPrinter::reporter(),
    );
    let ctx = HostServices::for_component(&request.benchmark.id, CancelToken::new(), None)
        .with_datasets(std::sync::Arc::new(datasets))
        .into_ctx();
    let tasks = executor
        .block_on(planner.benchmark().benchmark.load_tasks(&ctx, &request))
        .map_err(|e| anyhow!("benchmark {}: load_tasks: {e}", request.benchmark.id))?;
    let task = tasks
        .iter()
        .find(|t| t.task_id == cmd.task)
        .ok_or_else(|| {
            let known: Vec<&str> = tasks.iter().take(5).map(|t| t.task_id.as_str()).collect();
            anyhow!(
                "--task: benchmark {} has no task `{}` ({} tasks; first: {})",
                request.benchmark.id,
                cmd.task,
                tasks.len(),
                known.join(", ")
            )
        })?;
    // The warnings a run prints when it starts the task.
    for warning in &task.load_warnings {
        eprintln!("warning: task {}: {warning}", task.task_id);
    }
    let plan = planner.plan(task, &request, cmd.attempt)?;
    let view = json!({
        "task_id": plan.task_id,
        "attempt": plan.attempt,
        "candidate_recipes": planner.recipe_ids(),
        "resolved_execution_plan": plan.summary(),
    });
    crate::outln!("{}", serde_json::to_string_pretty(&redact_value(&view))?);
    match planner.check(&plan, &agentcompass_host::config::process_env) {
        Ok(()) => Ok(0),
        Err(refused) => {
            eprintln!("error: {refused}");
            Ok(1)
        }
    }
}
