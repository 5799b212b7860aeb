//! `agentcompass-host cluster work RUN_DIR UNIT`: one run of one job on a compute node. It
//! rebuilds the request from `.cluster/request.json` (secrets from the job's environment),
//! checks it as a local run does, and runs the unit's tasks — `job_concurrency` at a time —
//! through the same task loop, publishing each with the fenced publish of its copy's token.
//! Its progress events go to `.cluster/events/<job>.<restart>.jsonl` for the coordinator.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentcompass_plugin_api::contracts::RunRequest;
use agentcompass_results::naming::task_dir_name;
use agentcompass_results::store::{RunStore, TaskState};

use super::cluster::handoff::{restore_secrets, Handoff, SECRETS_VAR};
use super::cluster::layout::ClusterDir;
use super::cluster::unit::{read_unit, UnitTask};
use super::cluster_copy::ClusterCopy;
use crate::host_services::CancelToken;
use crate::progress::{ProgressMeta, ProgressRecorder};
use crate::request::OrchestratedRun;
use crate::runtime::context::RequestContext;
use crate::runtime::error::RunError;
use crate::runtime::limits::Limits;
use crate::runtime::run::{preflight, request_context};
use crate::runtime::shared::Shared;
use crate::runtime::task::{run_task, TaskEnd};
use crate::runtime::PreparedRequest;
use crate::setup::{build_registry, PluginSettings, Setup};

/// What to run.
#[derive(Debug, Clone)]
pub struct WorkArgs {
    /// The run directory (on the shared file system).
    pub run_dir: PathBuf,
    /// The unit file.
    pub unit: PathBuf,
    /// The request's secret literals ([`SECRETS_VAR`]), taken out of the process
    /// environment before anything starts, so no environment (a `host_process` one inherits
    /// the host's) ever sees them.
    pub secrets: Option<String>,
}

impl WorkArgs {
    /// The arguments of `cluster work RUN_DIR UNIT`, the secrets moved out of this process's
    /// environment. Call it before any other thread runs.
    pub fn from_env(run_dir: PathBuf, unit: PathBuf) -> WorkArgs {
        let secrets = std::env::var(SECRETS_VAR).ok();
        std::env::remove_var(SECRETS_VAR);
        WorkArgs {
            run_dir,
            unit,
            secrets,
        }
    }
}

/// How a job's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkEnd {
    /// Every task of the unit is published (by this copy or another).
    Done,
    /// Cancelled (`scancel`, the job's time limit): what ran to the end is published.
    Cancelled,
    /// Some result could not be written.
    StoreFailed,
}

/// Runs the unit `args.unit` of the run `args.run_dir`.
pub async fn work(args: &WorkArgs) -> Result<WorkEnd, RunError> {
    let dir = ClusterDir::of_run(&args.run_dir);
    let handoff = Handoff::read(&dir.handoff())?;
    let unit = read_unit(&args.unit)?;
    let request = job_request(&handoff, &dir, args.secrets.as_deref())?;
    let mut runtime = handoff.runtime.clone();
    runtime.bundled_plugins = handoff.bundled_plugins;
    let setup = job_registry(&runtime)?;
    let run = OrchestratedRun {
        key: handoff.request_key.clone(),
        index: 0,
        name: handoff.request_name.clone(),
        request,
    };
    let results_dir = PathBuf::from(&runtime.results_dir);
    let datasets = crate::datasets::DatasetService::new(
        std::path::Path::new(&runtime.data_dir),
        crate::datasets::DownloadReporter::default(),
    );
    let prepared = preflight(&setup.registry, &results_dir, run, Some(Arc::new(datasets)))?;
    let copy = ClusterCopy::from_env(&crate::config::process_env);
    let job = copy
        .job_id
        .map_or_else(|| copy.token.clone(), |id| id.to_string());
    let store = RunStore::open_existing(&args.run_dir)?;
    let meta = job_progress_meta(&store, &prepared, &handoff);
    let progress = ProgressRecorder::create(
        &dir.events(&job, copy.restart),
        &dir.snapshot(&job, copy.restart),
        meta,
        None,
    )
    .map_err(|e| RunError::Refused(format!("cannot write the job's progress events: {e}")))?;
    let cancel = CancelToken::new();
    let stop_reason = Arc::new(Mutex::new(None));
    crate::runtime::watch_signals(cancel.clone(), stop_reason.clone(), second_interrupt);
    let limits = Arc::new(Limits::new(handoff.job_concurrency.max(1), &runtime));
    let shared = Shared {
        // A job is steered through its coordinator's control, not a socket of its own.
        control: super::control::RunControl::new(limits.clone(), false),
        limits,
        runtime,
        cancel: cancel.clone(),
        terminal: None,
        orchestration: handoff.orchestration.clone(),
        stop_reason,
        // Budgets are refused with the Slurm executor (see `preflight_all`).
        budget: None,
    };
    let run_log = dir.run_log(&job, copy.restart);
    let (mut rc, _) = request_context(&shared, prepared, store, progress, &run_log)?;
    rc.resumable = unit
        .tasks
        .iter()
        .filter_map(|t| Some((task_dir_name(&t.task.task_id), t.resume_from.clone()?)))
        .collect();
    rc.copy = Some(copy);
    let rc = Arc::new(rc);
    let end = run_unit(&rc, &shared, unit.tasks).await;
    // The coordinator takes this as its cue to ask Slurm about the job now.
    let status = match end {
        WorkEnd::Done => agentcompass_results::status::RunStatus::Completed,
        WorkEnd::Cancelled => agentcompass_results::status::RunStatus::Cancelled,
        WorkEnd::StoreFailed => agentcompass_results::status::RunStatus::Failed,
    };
    rc.emit(crate::progress::ProgressEvent::RunFinished {
        status,
        error: None,
    });
    rc.progress.finish();
    Ok(end)
}

/// The job's request: the handoff's with its secrets restored from the environment, without
/// what the coordinator already did (creating the run, importing what it reuses).
fn job_request(
    handoff: &Handoff,
    dir: &ClusterDir,
    secrets: Option<&str>,
) -> Result<RunRequest, RunError> {
    let request = restore_secrets(&handoff.request, secrets)?;
    let mut request: RunRequest = serde_json::from_value(request)
        .map_err(|e| RunError::Refused(format!("{}: {e}", dir.handoff().display())))?;
    request.output.run_id.clear();
    request.runtime.reuse = None;
    request.runtime.reuse_run_id.clear();
    Ok(request)
}

/// The job's registry, from the plugin directories the coordinator's runtime names.
fn job_registry(runtime: &crate::request::ResolvedRuntimeOptions) -> Result<Setup, RunError> {
    let settings = PluginSettings {
        plugin_dirs: runtime.plugin_dirs.iter().map(PathBuf::from).collect(),
        recipe_dirs: runtime.recipe_dirs.iter().map(PathBuf::from).collect(),
        lock_file: runtime.plugin_lock.as_ref().map(PathBuf::from),
        load_bundled: runtime.bundled_plugins,
    };
    let setup = build_registry(&settings).map_err(|e| RunError::Refused(e.to_string()))?;
    for problem in &setup.problems {
        tracing::warn!("{problem}");
    }
    Ok(setup)
}

/// The identity of the job's progress events (the coordinator's request's).
fn job_progress_meta(
    store: &RunStore,
    prepared: &PreparedRequest,
    handoff: &Handoff,
) -> ProgressMeta {
    ProgressMeta {
        run_id: store.run_id().to_string(),
        benchmark: prepared.run.request.benchmark.id.clone(),
        harness: prepared.run.request.harness.id.clone(),
        environment: prepared.run.request.environment.id.clone(),
        model: prepared.run.request.model.id.clone(),
        request_name: handoff.request_name.clone(),
        orchestration_id: handoff.orchestration.0.clone(),
        request_key: prepared.run.key.clone(),
        request_index: prepared
            .run
            .key
            .rsplit('/')
            .next()
            .and_then(|i| i.parse().ok()),
    }
}

/// Runs the unit's tasks not yet published, `job_concurrency` at a time, until they end or the
/// job is cancelled.
async fn run_unit(rc: &Arc<RequestContext>, shared: &Shared, tasks: Vec<UnitTask>) -> WorkEnd {
    let cancel = &shared.cancel;
    let details = rc.store.details_dir();
    let mut running = tokio::task::JoinSet::new();
    let mut end = WorkEnd::Done;
    for entry in tasks {
        if cancel.is_cancelled() {
            break;
        }
        let name = task_dir_name(&entry.task.task_id);
        let published = TaskState::ALL
            .iter()
            .any(|state| details.join(state.as_str()).join(&name).exists());
        if published {
            tracing::info!(task_id = %entry.task.task_id, "already published; skipped");
            continue;
        }
        let slot = tokio::select! {
            slot = shared.limits.attempt_slot() => slot,
            _ = cancel.cancelled() => break,
        };
        let rc = rc.clone();
        running.spawn(async move {
            let done = run_task(&rc, Box::new(entry.task), entry.index, entry.total).await;
            drop(slot);
            done
        });
    }
    while let Some(done) = running.join_next().await {
        match done {
            Ok(TaskEnd::Published | TaskEnd::Duplicate) => {}
            Ok(TaskEnd::Cancelled) => end = WorkEnd::Cancelled,
            Ok(TaskEnd::StoreFailed) | Err(_) => {
                if end == WorkEnd::Done {
                    end = WorkEnd::StoreFailed;
                }
            }
        }
    }
    if cancel.is_cancelled() {
        end = WorkEnd::Cancelled;
    }
    end
}

/// A second SIGTERM/SIGINT ends the job's process at once.
fn second_interrupt(notice: crate::runtime::Notice) {
    if notice == crate::runtime::Notice::SecondInterrupt {
        std::process::exit(crate::exit_code::CANCELLED);
    }
}
