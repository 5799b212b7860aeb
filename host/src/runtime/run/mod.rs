//! One request of an orchestration, as a sequence of named steps: preflight (before anything
//! is written), create the run, share its context, open the task stream, import reused tasks,
//! schedule the rest under the shared limits, finish (metrics, summary, `run_info` status).

mod finish;
mod images;
mod limit_watch;
mod preflight;
mod schedule;
mod start;

use std::path::PathBuf;
use std::sync::Arc;

use agentcompass_results::status::RunStatus;
use serde_json::json;

pub(crate) use preflight::check_output;
pub(in crate::runtime) use preflight::check_prices;
pub use preflight::{preflight, EndpointToCheck, PreparedRequest, TaskPreview};
pub(in crate::runtime) use start::request_context;

use super::context::RequestContext;
use super::error::RunError;
use super::reuse;
use super::shared::{Scheduled, Shared};
use super::task_source::TaskSource;
use crate::progress::ProgressEvent;
use crate::request::output_namespace;
use agentcompass_results::store::{ReuseImport, RunInfo};

/// The terminal state of one request.
#[derive(Debug, Clone)]
pub struct RequestOutcome {
    /// Request name (empty for a direct run).
    pub name: String,
    /// `completed`, `failed`, `cancelled` or `timed_out`.
    pub status: RunStatus,
    /// The results directory, once created.
    pub run_dir: Option<PathBuf>,
    /// Why it failed.
    pub error: Option<String>,
    /// `correct (native@1): 80.00% ...`.
    pub headline: Option<String>,
    /// Tasks published in this run (new and reused).
    pub published: usize,
    /// Tasks the benchmark selected for the run (0 until they are known): more than
    /// `published` when the run stopped early.
    pub selected: usize,
    /// The request's environment provider (`sandbox`, ...).
    pub environment: String,
    /// Tasks reused from an earlier run.
    pub reused: usize,
    /// Tasks of the reuse source that ran again because their content changed since (their
    /// benchmark's content digest differs).
    pub changed: u64,
    /// The final attempts' FATAL and ERROR issues by code, most frequent first.
    pub issues: Vec<super::issue_tally::IssueCount>,
    /// `12 tasks not scored: 9 model (rate limited), 3 environment (...)`, when some were not.
    pub not_scored: Option<String>,
    /// `150 tasks skipped (not run, not scored): 150 budget_exhausted`, when some were.
    pub skipped: Option<String>,
    /// Harbor's metrics of the run, one line each (`adhoc mean: correctness 1.0000 ·
    /// performance 0.5000`, `pass@2 0.5500 · pass@4 0.9000`).
    pub harbor_metrics: Vec<String>,
    /// How the run was stopped early and what it spent (a budget, the error rate).
    pub stopped: Option<String>,
    /// The tasks not scored by failure class and reason (`("model", "rate limited", 3)`,
    /// `("environment", "unsupported", 1)`): what `--reuse RUN_ID --rerun CLASS_OR_CODE`
    /// could run again, or what must change first.
    pub not_scored_reasons: Vec<(String, String, u64)>,
}

impl RequestOutcome {
    /// A request that failed before its run started.
    fn failed(name: &str, error: String) -> Self {
        RequestOutcome {
            name: name.to_string(),
            status: RunStatus::Failed,
            run_dir: None,
            error: Some(error),
            headline: None,
            published: 0,
            selected: 0,
            environment: String::new(),
            reused: 0,
            changed: 0,
            issues: Vec::new(),
            not_scored: None,
            skipped: None,
            stopped: None,
            not_scored_reasons: Vec::new(),
            harbor_metrics: Vec::new(),
        }
    }
}

/// Runs one prepared request to its terminal state.
pub async fn run_request(shared: &Shared, prepared: PreparedRequest) -> RequestOutcome {
    let name = prepared.run.name.clone();
    // A copy: the request context names the run's ATIF agent from it too.
    let mut provenance = prepared.provenance.clone();
    provenance["environment_tools"] =
        super::provenance::provider_tools(&prepared.resolved.environment.id).await;
    let started = match start::create_run(shared, &prepared.run, provenance) {
        Ok(started) => started,
        Err(e) => return RequestOutcome::failed(&name, e.to_string()),
    };
    let mut outcome = RequestOutcome::failed(&name, String::new());
    outcome.error = None;
    outcome.environment = prepared.run.request.environment.id.clone();
    outcome.run_dir = Some(started.store.run_dir().to_path_buf());
    let mut info = started.info;
    started.progress.emit(ProgressEvent::RunStarted {
        benchmark: &prepared.run.request.benchmark.id,
        harness: &prepared.run.request.harness.id,
        environment: &prepared.run.request.environment.id,
        model: &prepared.run.request.model.id,
    });
    let run_log_path = started.store.run_log_path();
    let (mut rc, preloaded) = match start::request_context(
        shared,
        prepared,
        started.store,
        started.progress,
        &run_log_path,
    ) {
        Ok(context) => context,
        Err(e) => {
            outcome.error = Some(e.to_string());
            return outcome;
        }
    };
    tracing::info!(run_dir = %rc.store.run_dir().display(), "run started");
    // Tasks (normally opened before anything was written; see `PreparedRequest::load_tasks`).
    let tasks = match preloaded {
        Some(tasks) => Ok(tasks),
        None => TaskSource::open(&rc.planner, &rc.ctx, &rc.resolved).await,
    };
    let mut tasks = match tasks {
        Ok(tasks) => tasks,
        Err(e) => {
            let error = Some(e.to_string());
            return finish::finish(&rc, &mut info, outcome, RunStatus::Failed, error).await;
        }
    };
    outcome.selected = tasks.total();
    rc.emit(ProgressEvent::TasksLoaded {
        total: tasks.total() as u64,
    });
    let (reused, changed) = match import_reused(shared, &mut rc, &mut info, &mut tasks).await {
        Ok(imported) => imported,
        Err(e) => {
            let error = Some(e.to_string());
            return finish::finish(&rc, &mut info, outcome, RunStatus::Failed, error).await;
        }
    };
    outcome.reused = reused.len();
    outcome.changed = changed;
    // The tasks' own images, before the tasks take their slots (on the nodes for Slurm).
    if shared.runtime.executor == crate::request::Executor::Local {
        images::build_images(&rc, &tasks, &reused).await;
    }
    let rc = Arc::new(rc);
    shared.control.register(&rc);
    let watch = tokio::spawn(limit_watch::watch(rc.clone()));
    let scheduled = match shared.runtime.executor {
        crate::request::Executor::Local => schedule::run_all(shared, &rc, tasks, &reused).await,
        crate::request::Executor::Slurm => {
            crate::runtime::cluster::run_all(shared, &rc, tasks, &reused).await
        }
    };
    watch.abort();
    outcome.published = reused.len() + scheduled.published;
    let (status, error) = end_status(shared, &rc, &mut info, &mut outcome, scheduled);
    finish::finish(&rc, &mut info, outcome, status, error).await
}

/// How the run ended (and why it failed): stopped by the user or the deadline, by a budget or
/// the error rate (recorded in `run_info.json` `stopped`), by its task stream or its store,
/// else completed.
fn end_status(
    shared: &Shared,
    rc: &RequestContext,
    info: &mut RunInfo,
    outcome: &mut RequestOutcome,
    scheduled: Scheduled,
) -> (RunStatus, Option<String>) {
    let tripped = rc.breaker.tripped();
    if let Some(trip) = &tripped {
        outcome.stopped = Some(trip.describe());
        info.stopped = Some(json!({
            "reason": trip.reason(),
            "message": trip.describe(),
            "budgets": rc.breaker.budgets().iter().map(|b| b.summary()).collect::<Vec<_>>(),
        }));
    }
    match shared.stop_reason() {
        Some(reason) => (reason, None),
        None if tripped.is_some() => (
            tripped.as_ref().map_or(RunStatus::Failed, |t| t.status()),
            None,
        ),
        None if scheduled.load_error.is_some() => (RunStatus::Failed, scheduled.load_error),
        None if scheduled.store_failed => (
            RunStatus::Failed,
            Some("some results could not be written".to_string()),
        ),
        None => (RunStatus::Completed, None),
    }
}

/// With `--reuse`, imports the finished tasks of the source run (reading the task stream once)
/// and reopens the stream for the tasks to run. Returns the ids of the reused tasks.
async fn import_reused(
    shared: &Shared,
    rc: &mut RequestContext,
    info: &mut RunInfo,
    tasks: &mut TaskSource,
) -> Result<(std::collections::HashSet<String>, u64), RunError> {
    if rc.request.runtime.reuse != Some(true) {
        return Ok(Default::default());
    }
    let results_dir = PathBuf::from(&shared.runtime.results_dir);
    let namespace = output_namespace(&rc.request);
    let Some(source) = reuse::source_run(rc, &results_dir, &namespace)? else {
        tracing::info!("nothing to reuse under {}", results_dir.display());
        record_import(rc, info, ReuseImport::Complete);
        return Ok(Default::default());
    };
    // The source is on record before the first task is copied: a run killed while importing
    // leads a later lookup back to it.
    info.reused_from = Some(json!({
        "run_id": source.file_name().map(|n| n.to_string_lossy().into_owned()),
        "path": source,
    }));
    record_import(rc, info, ReuseImport::Pending);
    // Jobs a killed coordinator left running would go on publishing into the source after
    // the import: cancel them first.
    let slurm = agentcompass_cluster::SlurmCli::new();
    let wait = rc.cleanup_grace + std::time::Duration::from_secs(30);
    match crate::runtime::cluster::leftovers::cancel_jobs(&slurm, &source, wait).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            "cancelled {n} Slurm jobs the run {} left behind",
            source.display()
        ),
        Err(e) => {
            return Err(RunError::Refused(format!(
                "cannot cancel the Slurm jobs the run {} left behind: {e}",
                source.display()
            )))
        }
    }
    let imported = reuse::import(rc, tasks, source)?;
    *tasks = TaskSource::open(&rc.planner, &rc.ctx, &rc.resolved).await?;
    rc.resumable = imported.resumable;
    record_import(rc, info, ReuseImport::Complete);
    rc.emit(ProgressEvent::ReuseLoaded(imported.summary));
    Ok((imported.reused, imported.changed))
}

/// Records how far the reuse import is in `run_info.json`.
fn record_import(rc: &RequestContext, info: &mut RunInfo, state: ReuseImport) {
    info.reuse_import = Some(state);
    if let Err(e) = rc.store.write_run_info(info) {
        tracing::error!("cannot write run_info.json: {e}");
    }
}
