//! One request of an orchestration: preflight, the results directory, task loading, reuse,
//! scheduling every task under the shared limits, and finalisation (metrics, summary,
//! run_info status).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agentcompass_plugin_api::contracts::RunRequest;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::context::RequestContext;
use super::limits::Limits;
use super::retry::compile_patterns;
use super::task::{run_task, TaskEnd};
use super::task_source::TaskSource;
use crate::config::resolve_references;
use crate::host_services::{CancelToken, HostServices};
use crate::metrics::outcomes_from_results;
use crate::metrics::{headline_line, render_summary, MetricAggregator, SummaryTitle};
use crate::planner::Planner;
use crate::progress::{ProgressMeta, ProgressRecorder, TerminalSink};
use crate::registry::Registry;
use crate::request::{output_namespace, OrchestratedRun, ResolvedRuntimeOptions};
use agentcompass_redact::redact_value;
use agentcompass_results::store::{
    attempts_complete, find_reuse_source, published_tasks, running_tasks, RunInfo, RunStore,
};
use agentcompass_results::time::rfc3339;

/// A request checked and ready to run (nothing written yet).
pub struct PreparedRequest {
    run: OrchestratedRun,
    resolved: RunRequest,
    planner: Planner,
    patterns: Vec<regex::Regex>,
    /// The selected tasks (first page read), once opened by [`PreparedRequest::load_tasks`].
    tasks: Option<TaskSource>,
}

impl PreparedRequest {
    /// Opens the request's task stream and reads its first page before anything is written,
    /// so a dataset or task directory the benchmark rejects is refused like any other bad
    /// input (no results directory). [`run_request`] goes on reading the same stream.
    pub async fn load_tasks(&mut self) -> Result<(), String> {
        let ctx =
            HostServices::for_component(&self.resolved.benchmark.id, CancelToken::new(), None)
                .into_ctx();
        let tasks = TaskSource::open(&self.planner, &ctx, &self.resolved).await;
        let label = if self.run.name.is_empty() {
            String::new()
        } else {
            format!("request {}: ", self.run.name)
        };
        self.tasks = Some(tasks.map_err(|e| format!("{label}{e}"))?);
        Ok(())
    }
}

/// The terminal state of one request.
#[derive(Debug, Clone)]
pub struct RequestOutcome {
    /// Request name (empty for a direct run).
    pub name: String,
    /// `completed`, `failed`, `cancelled` or `timed_out`.
    pub status: String,
    /// The results directory, once created.
    pub run_dir: Option<PathBuf>,
    /// Why it failed.
    pub error: Option<String>,
    /// `correct (native@1): 80.00% ...`.
    pub headline: Option<String>,
    /// Tasks published in this run (new and reused).
    pub published: usize,
    /// Tasks reused from an earlier run.
    pub reused: usize,
}

/// Checks a request before anything is written: components instantiate, references resolve,
/// retry patterns compile, the harness supports the environment and model.
pub fn preflight(
    registry: &Registry,
    results_dir: &std::path::Path,
    run: OrchestratedRun,
) -> Result<PreparedRequest, String> {
    let label = if run.name.is_empty() {
        String::new()
    } else {
        format!("request {}: ", run.name)
    };
    let namespace_dir = output_namespace(&run.request)
        .iter()
        .fold(results_dir.to_path_buf(), |dir, part| dir.join(part));
    let run_id = &run.request.output.run_id;
    if !run_id.is_empty() {
        let dir = namespace_dir.join(agentcompass_results::naming::sanitize_component(run_id));
        if dir.exists() {
            return Err(format!(
                "{label}output.run_id: run directory {} already exists; choose a different --run-id or use --reuse",
                dir.display()
            ));
        }
    }
    let reuse_id = &run.request.runtime.reuse_run_id;
    if !reuse_id.is_empty() && !namespace_dir.join(reuse_id).join("run_info.json").is_file() {
        let hint = if run.name.is_empty() {
            "--reuse takes the name of a run directory there"
        } else {
            "reuse_run_id names a run directory there"
        };
        return Err(format!(
            "{label}runtime.reuse_run_id: run `{reuse_id}` not found under {} ({hint})",
            namespace_dir.display()
        ));
    }
    let value = serde_json::to_value(&run.request).map_err(|e| e.to_string())?;
    let resolved_value = resolve_references("", &value, &crate::config::process_env)
        .map_err(|e| format!("{label}{e}"))?;
    agentcompass_redact::register_resolved_values(&value, &resolved_value);
    agentcompass_redact::register_secret(&run.request.model.api_key);
    let resolved: RunRequest =
        serde_json::from_value(resolved_value).map_err(|e| format!("{label}{e}"))?;
    let planner = Planner::new(registry, &resolved).map_err(|e| format!("{label}{e}"))?;
    if let Some(harness) = planner.harness() {
        let supported = harness
            .supports(&resolved.environment, &resolved.model)
            .map_err(|e| format!("{label}harness {}: {e}", resolved.harness.id))?;
        if !supported {
            return Err(format!(
                "{label}harness `{}` does not support environment `{}` with model protocol {:?}",
                resolved.harness.id,
                resolved.environment.id,
                resolved.model.api_protocol.protocols()
            ));
        }
    }
    let patterns = compile_patterns(resolved.execution.retry_pattern_list.as_ref())
        .map_err(|e| format!("{label}{e}"))?;
    crate::model::Protocol::choose(&resolved.model).map_err(|e| format!("{label}{e}"))?;
    crate::model::GatewaySettings::from_params(&resolved.model.params)
        .map_err(|e| format!("{label}{e}"))?;
    Ok(PreparedRequest {
        run,
        resolved,
        planner,
        patterns,
        tasks: None,
    })
}

/// The reuse key: benchmark id, benchmark params (except `sample_ids`, which selects tasks
/// but does not change them) and attempt plan, hashed. The task id is matched separately.
pub fn reuse_key(req: &RunRequest) -> String {
    let mut params = req.benchmark.params.clone();
    params.remove("sample_ids");
    let canonical = json!({
        "benchmark": req.benchmark.id,
        "params": params,
        "attempts": {"k": req.execution.attempts.k, "strategy": req.execution.attempts.strategy},
    });
    Sha256::digest(canonical.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Shared, orchestration-wide inputs of a request run.
pub struct Shared {
    /// Process-wide options.
    pub runtime: ResolvedRuntimeOptions,
    /// Limits.
    pub limits: Arc<Limits>,
    /// Cancellation.
    pub cancel: CancelToken,
    /// Terminal progress.
    pub terminal: Option<Arc<dyn TerminalSink>>,
    /// Orchestration id and name.
    pub orchestration: (String, String),
    /// Why the run was cancelled (`cancelled` or `timed_out`), once it is.
    pub stop_reason: Arc<Mutex<Option<String>>>,
}

/// Runs one prepared request to its terminal state.
pub async fn run_request(shared: &Shared, prepared: PreparedRequest) -> RequestOutcome {
    let PreparedRequest {
        run,
        resolved,
        planner,
        patterns,
        tasks: preloaded,
    } = prepared;
    let request = run.request.clone();
    let mut outcome = RequestOutcome {
        name: run.name.clone(),
        status: "failed".into(),
        run_dir: None,
        error: None,
        headline: None,
        published: 0,
        reused: 0,
    };
    let namespace = output_namespace(&request);
    let results_dir = PathBuf::from(&shared.runtime.results_dir);
    let explicit_run_id =
        (!request.output.run_id.is_empty()).then_some(request.output.run_id.as_str());
    let store = match RunStore::create(&results_dir, &namespace, explicit_run_id) {
        Ok(store) => store,
        Err(e) => {
            outcome.error = Some(e.to_string());
            return outcome;
        }
    };
    outcome.run_dir = Some(store.run_dir().to_path_buf());
    let started = SystemTime::now();
    let mut info = RunInfo::new(
        store.run_id(),
        rfc3339(started),
        redact_value(&serde_json::to_value(&request).unwrap_or(Value::Null)),
    );
    info.orchestration = Some(
        json!({"id": shared.orchestration.0, "name": shared.orchestration.1, "key": run.key, "request_name": run.name}),
    );
    let _ = store.write_run_info(&info);
    let params = json!({
        "benchmark": {"id": request.benchmark.id, "params": request.benchmark.params},
        "harness": {"id": request.harness.id, "params": request.harness.params},
        "model": {"id": request.model.id, "params": request.model.params, "base_url": request.model.base_url, "api_key": request.model.api_key, "api_protocol": request.model.api_protocol},
        "execution": request.execution,
        "output": request.output,
    });
    let _ = store.write_params(&redact_value(&params));
    let meta = ProgressMeta {
        run_id: store.run_id().to_string(),
        benchmark: request.benchmark.id.clone(),
        harness: request.harness.id.clone(),
        environment: request.environment.id.clone(),
        model: request.model.id.clone(),
        request_name: run.name.clone(),
        orchestration_id: shared.orchestration.0.clone(),
    };
    let progress = match ProgressRecorder::create(
        &store.progress_jsonl_path(),
        &store.progress_json_path(),
        meta,
        shared.terminal.clone(),
    ) {
        Ok(progress) => progress,
        Err(e) => {
            outcome.error = Some(format!(
                "cannot write progress files in {}: {e}",
                store.run_dir().display()
            ));
            return outcome;
        }
    };
    progress.emit(
        "run_started",
        None,
        None,
        None,
        json!({"benchmark": request.benchmark.id, "harness": request.harness.id, "environment": request.environment.id, "model": request.model.id}),
    );
    let contract = planner
        .benchmark()
        .benchmark
        .metric_contract()
        .unwrap_or_else(|_| agentcompass_plugin_api::contracts::MetricContract::correct());
    let primary_metric = contract.primary().map(|m| m.id.clone());
    let attempts = resolved.execution.attempts;
    let model = match crate::model::ModelGateway::new(&resolved.model) {
        Ok(gateway) => Arc::new(gateway),
        Err(e) => {
            outcome.error = Some(e.to_string());
            return outcome;
        }
    };
    let ctx =
        HostServices::for_component(&request.benchmark.id, shared.cancel.clone(), None).into_ctx();
    let store_run_log = store.run_log_path();
    let mut rc = Arc::new(RequestContext {
        reuse_key: reuse_key(&resolved),
        request: request.clone(),
        resolved,
        planner,
        store,
        progress,
        limits: shared.limits.clone(),
        cancel: shared.cancel.clone(),
        patterns,
        cleanup_grace: Duration::from_secs_f64(shared.runtime.cleanup_grace_seconds),
        checkpoint_after: Duration::from_secs_f64(shared.runtime.checkpoint_after_seconds.min(1e9)),
        ctx,
        model,
        metrics: Mutex::new(MetricAggregator::new(
            contract,
            attempts.k.max(1),
            attempts.strategy,
        )),
        primary_metric,
        run_log: crate::logging::open_run_log(
            &store_run_log,
            crate::logging::level_from_name(&shared.runtime.file_log_level),
        )
        .map_err(|e| tracing::warn!("cannot open run.log: {e}"))
        .ok(),
        resumable: HashMap::new(),
    });
    tracing::info!(run_dir = %rc.store.run_dir().display(), "run started");

    // Tasks (normally opened before anything was written; see `PreparedRequest::load_tasks`).
    let mut tasks = match preloaded {
        Some(tasks) => tasks,
        None => match TaskSource::open(&rc.planner, &rc.ctx, &rc.resolved).await {
            Ok(tasks) => tasks,
            Err(e) => return finish(&rc, &mut info, outcome, "failed", Some(e)).await,
        },
    };
    let total = tasks.total();
    rc.progress.emit(
        "tasks_loaded",
        None,
        None,
        None,
        json!({"total_tasks": total}),
    );

    // Reuse.
    let mut reused: HashSet<String> = HashSet::new();
    if rc.request.runtime.reuse == Some(true) {
        let source = find_reuse_source(
            &results_dir,
            &namespace,
            (!rc.request.runtime.reuse_run_id.is_empty())
                .then_some(rc.request.runtime.reuse_run_id.as_str()),
            Some(rc.store.run_dir()),
        );
        match source {
            Err(e) => return finish(&rc, &mut info, outcome, "failed", Some(e.to_string())).await,
            Ok(None) => tracing::info!("nothing to reuse under {}", results_dir.display()),
            Ok(Some(source)) => {
                // First pass over the selected tasks: import the finished ones; the tasks to
                // run are read again from a fresh stream below.
                let mut candidates: HashMap<String, _> = published_tasks(&source)
                    .map(|published| (published.task_id.clone(), published))
                    .collect();
                let mut not_reused: HashMap<&'static str, u64> = HashMap::new();
                loop {
                    let task = match tasks.next_task() {
                        Ok(Some(task)) => task,
                        Ok(None) => break,
                        Err(e) => return finish(&rc, &mut info, outcome, "failed", Some(e)).await,
                    };
                    let Some(published) = candidates.remove(&task.task_id) else {
                        continue;
                    };
                    let category = task.category.as_str();
                    if published.task_json["reuse_key"].as_str() != Some(rc.reuse_key.as_str()) {
                        *not_reused
                            .entry("different benchmark, params or attempt plan")
                            .or_default() += 1;
                        continue;
                    }
                    if !attempts_complete(&published) {
                        *not_reused.entry("incomplete attempts").or_default() += 1;
                        continue;
                    }
                    match rc.store.import_published(&published) {
                        Ok(dir) => {
                            rc.record_metrics(
                                category,
                                &outcomes_from_results(&dir, &published.task_json["attempts"]),
                            );
                            reused.insert(published.task_id.clone());
                        }
                        Err(e) => {
                            tracing::warn!("cannot reuse task {}: {e}", published.task_id);
                            *not_reused.entry("copy failed").or_default() += 1;
                        }
                    }
                }
                if !candidates.is_empty() {
                    not_reused.insert("not selected", candidates.len() as u64);
                }
                drop(candidates);
                tasks = match TaskSource::open(&rc.planner, &rc.ctx, &rc.resolved).await {
                    Ok(tasks) => tasks,
                    Err(e) => return finish(&rc, &mut info, outcome, "failed", Some(e)).await,
                };
                let resumable: HashMap<String, PathBuf> =
                    if rc.request.runtime.checkpoint_resume != Some(false) {
                        running_tasks(&source).into_iter().collect()
                    } else {
                        HashMap::new()
                    };
                let resumed_candidates = resumable.len();
                match Arc::get_mut(&mut rc) {
                    Some(context) => context.resumable = resumable,
                    None => tracing::warn!("evaluation checkpoints cannot be resumed in this run"),
                }
                if let Err(e) = rc
                    .store
                    .import_resolved_plans(&source, &|id| reused.contains(id))
                {
                    tracing::warn!("cannot copy the plans of reused tasks: {e}");
                }
                info.reused_from = Some(
                    json!({"run_id": source.file_name().map(|n| n.to_string_lossy().into_owned()), "path": source}),
                );
                let _ = rc.store.write_run_info(&info);
                rc.progress.emit(
                    "reuse_loaded",
                    None,
                    None,
                    None,
                    json!({
                        "reused_tasks": reused.len(),
                        "tasks_to_run": total - reused.len(),
                        "source": source,
                        "not_reused": not_reused,
                        "interrupted_tasks_with_checkpoints": resumed_candidates,
                    }),
                );
            }
        }
    }
    outcome.reused = reused.len();

    // Schedule: a global attempt slot is taken before a task is spawned, so at most
    // `task_concurrency` tasks (of every request) are in flight and pending tasks cost nothing.
    // Every plugin call of this run sends the same resolved request: serialise it once.
    let _pinned = agentcompass_plugin_api::abi::request_json::pin_request_json(&rc.resolved)
        .map_err(|e| tracing::debug!("request not pinned: {e}"))
        .ok();
    // Pending tasks stay in the benchmark's stream until a slot is free.
    let mut running = tokio::task::JoinSet::new();
    let mut published = reused.len();
    let mut store_failed = false;
    let mut load_error = None;
    for index in 0.. {
        if shared.cancel.is_cancelled() {
            break;
        }
        let task = match tasks.next_task() {
            Ok(Some(task)) => task,
            Ok(None) => break,
            Err(e) => {
                load_error = Some(e);
                break;
            }
        };
        if reused.contains(&task.task_id) {
            continue;
        }
        for warning in &task.load_warnings {
            tracing::warn!("task {}: {warning}", task.task_id);
        }
        let slot = tokio::select! {
            slot = shared.limits.attempt_slot() => slot,
            _ = shared.cancel.cancelled() => break,
        };
        while let Some(done) = running.try_join_next() {
            tally(done, &mut published, &mut store_failed);
        }
        let rc = rc.clone();
        running.spawn(async move {
            let end = run_task(&rc, task, index, total).await;
            drop(slot);
            end
        });
    }
    while let Some(done) = running.join_next().await {
        tally(done, &mut published, &mut store_failed);
    }
    outcome.published = published;
    let stop = shared.stop_reason.lock().map(|r| r.clone()).unwrap_or(None);
    let (status, error) = match stop {
        Some(reason) => (reason, None),
        None if load_error.is_some() => ("failed".to_string(), load_error),
        None if store_failed => (
            "failed".to_string(),
            Some("some results could not be written".to_string()),
        ),
        None => ("completed".to_string(), None),
    };
    finish(&rc, &mut info, outcome, &status, error).await
}

fn tally(
    done: Result<TaskEnd, tokio::task::JoinError>,
    published: &mut usize,
    store_failed: &mut bool,
) {
    match done {
        Ok(TaskEnd::Published) => *published += 1,
        Ok(TaskEnd::Cancelled) => {}
        Ok(TaskEnd::StoreFailed) => *store_failed = true,
        Err(e) => {
            tracing::error!("a task crashed: {e}");
            *store_failed = true;
        }
    }
}

async fn finish(
    rc: &RequestContext,
    info: &mut RunInfo,
    mut outcome: RequestOutcome,
    status: &str,
    error: Option<String>,
) -> RequestOutcome {
    rc.progress
        .emit("summary_started", None, None, None, Value::Null);
    let report = {
        let metrics = match rc.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.report()
    };
    let mut status = status.to_string();
    if status == "completed" && report.evaluation_failed {
        status = "failed".into();
        outcome.error = Some(format!(
            "final FATAL issues; results: {}",
            rc.store.run_dir().display()
        ));
    }
    let title = SummaryTitle {
        benchmark: rc.request.benchmark.id.clone(),
        model: rc.request.model.id.clone(),
        harness: rc.request.harness.id.clone(),
        run_id: rc.store.run_id().to_string(),
    };
    let report_json = serde_json::to_value(&report).unwrap_or(Value::Null);
    if let Err(e) = rc.store.write_metrics(&report_json) {
        tracing::error!("cannot write metrics.json: {e}");
    }
    if let Err(e) = rc.store.write_summary(&render_summary(&report, &title)) {
        tracing::error!("cannot write summary.md: {e}");
    }
    info.status = status.clone();
    info.finished_at = Some(rfc3339(SystemTime::now()));
    info.error = error.clone().or(outcome.error.clone());
    info.metric_artifacts = Some(
        json!({"generated_at": info.finished_at, "source": "evaluation", "report": {"k": report.k, "strategy": report.strategy, "aggregation": report.aggregation}}),
    );
    if let Err(e) = rc.store.finalize_run_info(info) {
        tracing::error!("cannot write run_info.json: {e}");
    }
    rc.progress.emit(
        "run_finished",
        None,
        None,
        Some(&status),
        json!({"error": info.error}),
    );
    rc.progress.finish();
    // Batched durability: everything this run wrote reaches the disk here (see fsutil).
    let run_dir = rc.store.run_dir().to_path_buf();
    let synced = tokio::task::spawn_blocking(move || {
        agentcompass_results::fsutil::sync_filesystem(&run_dir)
    })
    .await;
    if let Ok(Err(e)) = synced {
        tracing::warn!("cannot sync the results filesystem: {e}");
    }
    outcome.status = status;
    outcome.error = info.error.clone();
    outcome.headline = headline_line(&report);
    outcome
}
