//! The coordinator of a Slurm run: fills jobs from the task stream (`attempts_per_job` tasks
//! each, at most `max_jobs_in_flight` jobs, one orchestration attempt slot per job), follows
//! their events into the run's progress, counts what they publish into the metrics, and
//! settles the tasks of every job that ends: published → counted once; not published → its
//! claim fenced and released and the task resubmitted (a job lost with its node, killed, out
//! of time), `max_resubmits` times, then published FATAL `job_lost`. Memory is bounded by the
//! tasks in flight, whatever the run's size.

mod follow;
mod settle;
mod submit;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentcompass_cluster::{JobState, SlurmCli};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::events::Tail;
use super::handoff::{split_secrets, Handoff, HANDOFF_SCHEMA, SECRETS_VAR};
use super::layout::ClusterDir;
use super::shares::{job_runtime, shares, Shares};
use super::unit::UnitTask;
use crate::runtime::cluster_error::ClusterRunError;
use crate::runtime::context::RequestContext;
use crate::runtime::shared::{Scheduled, Shared};
use crate::runtime::task_source::TaskSource;

/// How often the jobs' events are read (and, while a job says it is done but Slurm still
/// lists it, the jobs' states).
const POLL: Duration = Duration::from_millis(500);

/// How often `squeue` is asked otherwise: what finds a job that ended without saying so
/// (killed, its node lost). One call covers every job of the run.
const SQUEUE_INTERVAL: Duration = Duration::from_secs(2);

/// How long a cancelled run waits for its jobs to leave the queue, beyond the cleanup grace.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// A task of the run, from its submission until it is counted.
struct Pending {
    unit: UnitTask,
    /// `details/<state>/<name>`.
    name: String,
    /// Jobs that ended without publishing it.
    lost: u32,
    /// `task_started` was forwarded.
    started: bool,
    /// The resolved plans its copies reported, by attempt.
    plans: Map<String, Value>,
}

/// A submitted job.
struct Job {
    id: u64,
    /// Its sequence number (its unit and script).
    seq: u64,
    tasks: Vec<Pending>,
    /// One events file per run of the job (restart 0, 1, ...).
    tails: Vec<Tail>,
    _slot: Option<crate::runtime::limits::AttemptSlot>,
    /// The state `squeue` last showed.
    state: Option<JobState>,
    /// Its latest run reported the end of its work (`run_finished`): Slurm is asked about it
    /// at the next look, not the next `SQUEUE_INTERVAL`.
    done_reported: bool,
}

impl Job {
    fn task_mut(&mut self, task_id: &str) -> Option<&mut Pending> {
        self.tasks
            .iter_mut()
            .find(|t| t.unit.task.task_id == task_id)
    }
}

/// Runs every task of `tasks` not in `reused` as Slurm jobs.
pub(in crate::runtime) async fn run_all(
    shared: &Shared,
    rc: &Arc<RequestContext>,
    tasks: TaskSource,
    reused: &HashSet<String>,
) -> Scheduled {
    let mut scheduled = Scheduled::default();
    let mut coordinator = match Coordinator::new(shared, rc, tasks, reused) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("{e}");
            scheduled.load_error = Some(e.to_string());
            return scheduled;
        }
    };
    coordinator.run().await;
    coordinator.scheduled
}

struct Coordinator<'a> {
    shared: &'a Shared,
    rc: &'a RequestContext,
    tasks: TaskSource,
    reused: &'a HashSet<String>,
    stream_done: bool,
    next_index: usize,
    slurm: SlurmCli,
    dir: ClusterDir,
    program: PathBuf,
    run_dir: PathBuf,
    /// The jobs' working directory: the coordinator's, so relative paths in the request
    /// (a benchmark's task directory, say) mean on the nodes what they mean here.
    workdir: PathBuf,
    prefix: String,
    env: Vec<(String, String)>,
    options: crate::request::SlurmOptions,
    max_jobs: usize,
    next_seq: u64,
    jobs: Vec<Job>,
    /// Tasks whose job ended without publishing them, to submit again.
    resubmit: VecDeque<Pending>,
    /// When `squeue` was last asked.
    last_squeue: Option<Instant>,
    scheduled: Scheduled,
}

impl<'a> Coordinator<'a> {
    fn new(
        shared: &'a Shared,
        rc: &'a RequestContext,
        tasks: TaskSource,
        reused: &'a HashSet<String>,
    ) -> Result<Self, ClusterRunError> {
        let options = shared.runtime.slurm.clone();
        let run_dir =
            std::path::absolute(rc.store.run_dir()).map_err(|cause| ClusterRunError::Local {
                what: rc.store.run_dir().display().to_string(),
                cause,
            })?;
        let dir = ClusterDir::of_run(&run_dir);
        dir.create().map_err(|cause| ClusterRunError::Local {
            what: format!("cannot create {}", dir.root().display()),
            cause,
        })?;
        let program = std::env::current_exe().map_err(|cause| ClusterRunError::Local {
            what: "cannot find this program to run on the nodes".to_string(),
            cause,
        })?;
        let to_run = tasks.total().saturating_sub(reused.len());
        let provider = rc.request.environment.id.as_str();
        let provider_limit = shared.runtime.provider_limits.get(provider).copied();
        let Shares {
            max_jobs,
            job_concurrency,
        } = shares(
            &options,
            to_run,
            shared.limits.task_concurrency(),
            provider_limit,
        );
        let env = write_handoff(shared, rc, &dir, max_jobs, job_concurrency)?;
        tracing::info!(
            max_jobs,
            job_concurrency,
            attempts_per_job = options.attempts_per_job,
            "submitting the run's tasks to Slurm"
        );
        Ok(Coordinator {
            shared,
            rc,
            tasks,
            reused,
            stream_done: false,
            next_index: 0,
            slurm: SlurmCli::new(),
            prefix: job_prefix(&run_dir),
            dir,
            program,
            workdir: std::env::current_dir().unwrap_or_else(|_| run_dir.clone()),
            run_dir,
            env,
            options,
            max_jobs,
            next_seq: 1,
            jobs: Vec::new(),
            resubmit: VecDeque::new(),
            last_squeue: None,
            scheduled: Scheduled::default(),
        })
    }

    async fn run(&mut self) {
        loop {
            if self.shared.cancel.is_cancelled() {
                self.cancel_all().await;
                return;
            }
            if let Err(e) = self.fill().await {
                tracing::error!("{e}");
                self.scheduled.load_error = Some(e.to_string());
                self.cancel_all().await;
                return;
            }
            if self.jobs.is_empty() && self.resubmit.is_empty() && self.stream_done {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = self.shared.cancel.cancelled() => continue,
            }
            self.poll();
        }
    }
}

/// Writes the run's request for the jobs (secrets masked) and returns the environment that
/// carries the secrets to them.
fn write_handoff(
    shared: &Shared,
    rc: &RequestContext,
    dir: &ClusterDir,
    max_jobs: usize,
    job_concurrency: u32,
) -> Result<Vec<(String, String)>, ClusterRunError> {
    let mut runtime = job_runtime(&shared.runtime, max_jobs);
    runtime.results_dir = std::path::absolute(&runtime.results_dir)
        .map(|p| p.display().to_string())
        .unwrap_or(runtime.results_dir);
    let (masked, secrets) = split_secrets(&rc.request);
    let handoff = Handoff {
        schema_version: HANDOFF_SCHEMA.to_string(),
        request: masked,
        request_name: rc.progress.meta().request_name.clone(),
        request_key: String::new(),
        orchestration: shared.orchestration.clone(),
        runtime,
        job_concurrency,
        bundled_plugins: shared.runtime.bundled_plugins,
    };
    handoff
        .write(&dir.handoff())
        .map_err(|cause| ClusterRunError::Write {
            what: "the cluster request",
            cause,
        })?;
    let mut env = Vec::new();
    if !secrets.is_empty() {
        env.push((
            SECRETS_VAR.to_string(),
            serde_json::to_string(&secrets).unwrap_or_default(),
        ));
    }
    Ok(env)
}

/// The name prefix of a run's jobs: `ac-` and 12 hex digits of the run directory's path.
pub(super) fn job_prefix(run_dir: &Path) -> String {
    let digest = Sha256::digest(run_dir.as_os_str().as_encoded_bytes());
    format!("ac-{}-", &hex::encode(digest)[..12])
}
