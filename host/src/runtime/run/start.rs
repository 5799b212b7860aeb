//! Starting a request's run: its results directory with `run_info.json` and `params.json`,
//! its progress recorder, and the context its tasks share.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use agentcompass_plugin_api::contracts::{MetricContract, RunRequest};
use agentcompass_redact::{redact_value, scrub_value};
use agentcompass_results::store::{ReuseImport, RunInfo, RunStore};
use agentcompass_results::time::rfc3339;
use serde_json::{json, Value};

use super::preflight::PreparedRequest;
use crate::host_services::HostServices;
use crate::metrics::MetricAggregator;
use crate::progress::{ProgressMeta, ProgressRecorder};
use crate::request::{output_namespace, OrchestratedRun};
use crate::runtime::context::RequestContext;
use crate::runtime::error::RunError;
use crate::runtime::reuse::reuse_key;
use crate::runtime::shared::Shared;
use crate::runtime::task_source::TaskSource;

/// A run whose results directory exists, with its first files written.
pub(super) struct Started {
    pub(super) store: RunStore,
    pub(super) info: RunInfo,
    pub(super) progress: ProgressRecorder,
}

/// Creates the run directory, writes `run_info.json` (status `running`) and `params.json`
/// (both redacted) and opens the progress files. A failure is the request's error.
pub(super) fn create_run(
    shared: &Shared,
    run: &OrchestratedRun,
    provenance: Value,
) -> Result<Started, RunError> {
    let request = &run.request;
    let results_dir = PathBuf::from(&shared.runtime.results_dir);
    let explicit_run_id =
        (!request.output.run_id.is_empty()).then_some(request.output.run_id.as_str());
    let store = RunStore::create(&results_dir, &output_namespace(request), explicit_run_id)?;
    let mut info = RunInfo::new(
        store.run_id(),
        rfc3339(SystemTime::now()),
        scrub_value(&redact_value(
            &serde_json::to_value(request).unwrap_or(Value::Null),
        )),
    );
    if request.runtime.reuse == Some(true) {
        // Until the import completes, this run is no reuse source (see `ReuseImport`).
        info.reuse_import = Some(ReuseImport::Pending);
    }
    info.provenance = Some(provenance);
    info.orchestration = Some(
        json!({"id": shared.orchestration.0, "name": shared.orchestration.1, "key": run.key, "request_name": run.name}),
    );
    store.write_run_info(&info)?;
    store.write_params(&scrub_value(&redact_value(&params_json(request))))?;
    let progress = ProgressRecorder::create(
        &store.progress_jsonl_path(),
        &store.progress_json_path(),
        progress_meta(&store, run, &shared.orchestration.0),
        shared.terminal.clone(),
    )
    .map_err(|e| {
        RunError::Refused(format!(
            "cannot write progress files in {}: {e}",
            store.run_dir().display()
        ))
    })?;
    Ok(Started {
        store,
        info,
        progress,
    })
}

/// `params.json`: the request's components, model and execution, as written.
fn params_json(request: &RunRequest) -> Value {
    json!({
        "benchmark": {"id": request.benchmark.id, "params": request.benchmark.params},
        "harness": {"id": request.harness.id, "params": request.harness.params},
        "model": {"id": request.model.id, "params": request.model.params, "base_url": request.model.base_url, "api_key": request.model.api_key, "api_protocol": request.model.api_protocol},
        "execution": request.execution,
        "output": request.output,
    })
}

fn progress_meta(store: &RunStore, run: &OrchestratedRun, orchestration_id: &str) -> ProgressMeta {
    let request = &run.request;
    ProgressMeta {
        run_id: store.run_id().to_string(),
        benchmark: request.benchmark.id.clone(),
        harness: request.harness.id.clone(),
        environment: request.environment.id.clone(),
        model: request.model.id.clone(),
        request_name: run.name.clone(),
        orchestration_id: orchestration_id.to_string(),
        request_key: run.key.clone(),
        request_index: run.key.rsplit('/').next().and_then(|i| i.parse().ok()),
    }
}

/// The request's breaker (its budgets and the orchestration's, the error-rate stop) and its
/// own cancellation token: the orchestration's cancellation reaches it, and a budget with
/// `on_exhausted = "cancel"` cancels only the requests spending from it.
fn breaker_and_cancel(
    shared: &Shared,
    resolved: &RunRequest,
) -> (
    crate::runtime::breaker::Breaker,
    crate::host_services::CancelToken,
) {
    let mut budgets = Vec::new();
    if let Some(budget) = &resolved.execution.budget {
        budgets.push(Arc::new(agentcompass_gateway::BudgetTracker::new(
            budget.clone(),
            "execution.budget",
        )));
    }
    budgets.extend(shared.budget.clone());
    let breaker = crate::runtime::breaker::Breaker::new(budgets, shared.runtime.fail_on_error);
    let cancel = crate::host_services::CancelToken::new();
    let orchestration = shared.cancel.clone();
    let forwarded = cancel.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = orchestration.cancelled() => forwarded.cancel(),
            () = forwarded.cancelled() => {}
        }
    });
    breaker.cancel_on_exhaustion(&cancel);
    (breaker, cancel)
}

/// The context every task of the run shares: components, store, progress, limits, the model
/// gateway, streaming metrics and the run's `run.log`.
/// The run's model gateway. The endpoint's adaptive limit starts at the run's task
/// concurrency (unless `model.params.max_connections` sets it): every attempt may call the
/// model at once.
fn model_gateway(
    shared: &Shared,
    resolved: &RunRequest,
    store: &RunStore,
) -> Result<agentcompass_gateway::ModelGateway, RunError> {
    let mut model = agentcompass_gateway::ModelGateway::new(&resolved.model)
        .map_err(|e| RunError::Refused(e.to_string()))?
        .with_task_concurrency(shared.limits.task_concurrency())
        .with_pause_gate(shared.limits.pause_gate().clone());
    if resolved.model.wrap_api_key {
        model.wrap_key(store.run_dir());
    }
    Ok(model)
}

/// The run's `run.log` at `path` (a warning when it cannot be opened: the run goes on).
fn open_run_log(shared: &Shared, path: &std::path::Path) -> Option<crate::logging::RunLogGuard> {
    crate::logging::open_run_log(
        path,
        crate::logging::level_from_name(&shared.runtime.file_log_level),
    )
    .map_err(|e| tracing::warn!("cannot open run.log: {e}"))
    .ok()
}

pub(in crate::runtime) fn request_context(
    shared: &Shared,
    prepared: PreparedRequest,
    store: RunStore,
    progress: ProgressRecorder,
    run_log_path: &std::path::Path,
) -> Result<(RequestContext, Option<TaskSource>), RunError> {
    let PreparedRequest {
        run,
        resolved,
        planner,
        patterns,
        tasks,
        provenance,
        analysis,
        datasets,
        dataset_metrics,
        calls_model: _,
        agent_inputs,
    } = prepared;
    let contract = planner
        .benchmark()
        .benchmark
        .metric_contract()
        .unwrap_or_else(|_| MetricContract::correct());
    let primary_metric = contract.primary().map(|m| m.id.clone());
    let attempts = resolved.execution.attempts;
    let metrics = MetricAggregator::new(contract, attempts.k.max(1), attempts.strategy);
    let model = model_gateway(shared, &resolved, &store)?;
    let mut services =
        HostServices::for_component(&run.request.benchmark.id, shared.cancel.clone(), None);
    if let Some(datasets) = datasets {
        services = services.with_datasets(datasets);
    }
    let ctx = services.into_ctx();
    let runtime = &shared.runtime;
    let (breaker, cancel) = breaker_and_cancel(shared, &resolved);
    let otel = crate::runtime::otel::LiveOtel::start(runtime, &store, &resolved);
    let rc = RequestContext {
        otel,
        reuse_key: reuse_key(&resolved),
        atif_agent: agentcompass_results::atif::AtifAgent::from_provenance(
            &provenance,
            &resolved.harness.params,
        ),
        analysis,
        request: run.request,
        resolved,
        planner,
        store,
        progress,
        limits: shared.limits.clone(),
        cancel,
        breaker,
        patterns,
        cleanup_grace: agentcompass_plugin_api::wait::duration_from_seconds(
            runtime.cleanup_grace_seconds,
        ),
        checkpoint_after: agentcompass_plugin_api::wait::duration_from_seconds(
            runtime.checkpoint_after_seconds,
        ),
        ctx,
        model: Arc::new(model),
        metrics: Mutex::new(metrics),
        primary_metric,
        run_log: open_run_log(shared, run_log_path),
        resumable: HashMap::new(),
        issues: Default::default(),
        egress_hosts: runtime.egress.hosts.clone(),
        copy: None,
        live: Default::default(),
        datasets: Default::default(),
        dataset_metrics,
        agent_inputs,
        install_cache: crate::install::InstallCache::configured(
            runtime.install_cache_dir.as_deref(),
        ),
    };
    Ok((rc, tasks))
}
