//! The coordinator of a Slurm run: fills jobs from the task stream (`attempts_per_job` tasks
//! each, at most `max_jobs_in_flight` jobs, one orchestration attempt slot per job), follows
//! their events into the run's progress, counts what they publish into the metrics, and
//! settles the tasks of every job that ends: published → counted once; not published → its
//! claim fenced and released and the task resubmitted (a job lost with its node, killed, out
//! of time), `max_resubmits` times, then published FATAL `job_lost`. Memory is bounded by the
//! tasks in flight, whatever the run's size.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentcompass_cluster::{JobSpec, JobState, SlurmCli};
use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, RunResult, TaskSpec};
use agentcompass_results::naming::task_dir_name;
use agentcompass_results::records::{attempt_payload, task_payload};
use agentcompass_results::store::{claim, TaskState};
use agentcompass_schema::progress::{EventLine, TaskPayload};
use agentcompass_schema::read_json;
use agentcompass_schema::task::{TaskRecord, TASK_FILE};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::error::ClusterRunError;
use super::events::Tail;
use super::handoff::{split_secrets, Handoff, HANDOFF_SCHEMA, SECRETS_VAR};
use super::layout::ClusterDir;
use super::shares::{job_runtime, shares, Shares};
use super::unit::{write_unit, Unit, UnitTask, UNIT_SCHEMA};
use crate::issue_codes as codes;
use crate::metrics::{attempt_records, AttemptRecord};
use crate::progress::{parse_severity, EventKind, ProgressEvent, TaskOutcome, TaskRef};
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
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
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

    /// Submits jobs until `max_jobs` are in flight or no task is left.
    async fn fill(&mut self) -> Result<(), ClusterRunError> {
        while self.jobs.len() < self.max_jobs {
            let tasks = self.next_tasks();
            if tasks.is_empty() {
                return Ok(());
            }
            let slot = tokio::select! {
                slot = self.shared.limits.attempt_slot() => slot,
                _ = self.shared.cancel.cancelled() => {
                    // Not submitted: nothing to count.
                    return Ok(());
                }
            };
            self.submit(tasks, slot)?;
        }
        Ok(())
    }

    /// The tasks of the next job: lost tasks first, then the stream's.
    fn next_tasks(&mut self) -> Vec<Pending> {
        let per_job = self.options.attempts_per_job.max(1) as usize;
        let mut tasks = Vec::with_capacity(per_job);
        while tasks.len() < per_job {
            if let Some(task) = self.resubmit.pop_front() {
                tasks.push(task);
                continue;
            }
            if self.stream_done {
                break;
            }
            let index = self.next_index;
            let task = match self.tasks.next_task() {
                Ok(Some(task)) => task,
                Ok(None) => {
                    self.stream_done = true;
                    break;
                }
                Err(e) => {
                    self.stream_done = true;
                    self.scheduled.load_error = Some(e.to_string());
                    break;
                }
            };
            self.next_index += 1;
            if self.reused.contains(&task.task_id) {
                continue;
            }
            for warning in &task.load_warnings {
                tracing::warn!("task {}: {warning}", task.task_id);
            }
            let name = task_dir_name(&task.task_id);
            let resume_from = self
                .rc
                .resumable
                .get(&name)
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()));
            tasks.push(Pending {
                unit: UnitTask {
                    index,
                    total: self.tasks.total(),
                    task,
                    resume_from,
                },
                name,
                lost: 0,
                started: false,
                plans: Map::new(),
            });
        }
        tasks
    }

    /// Writes the unit and script of the next job and submits it.
    fn submit(
        &mut self,
        tasks: Vec<Pending>,
        slot: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Result<(), ClusterRunError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let unit = Unit {
            schema_version: UNIT_SCHEMA.to_string(),
            seq,
            tasks: tasks.iter().map(|t| t.unit.clone()).collect(),
        };
        let unit_path = self.dir.unit(seq);
        write_unit(&unit, &unit_path).map_err(|cause| ClusterRunError::Write {
            what: "a unit of work",
            cause,
        })?;
        let script = self.dir.script(seq);
        let args = [
            "cluster".to_string(),
            "work".to_string(),
            self.run_dir.display().to_string(),
            unit_path.display().to_string(),
        ];
        agentcompass_cluster::slurm::write_job_script(&script, &self.program, &args)?;
        let name = format!("{}{seq}", self.prefix);
        let spec = JobSpec {
            name: name.clone(),
            script,
            output: self.dir.output(seq),
            workdir: self.workdir.clone(),
            partition: self.options.partition.clone(),
            account: self.options.account.clone(),
            qos: self.options.qos.clone(),
            time_limit: self.options.time_limit.clone(),
            cpus: Some(self.options.cpus_per_job),
            memory: self.options.mem_per_job.clone(),
            requeue: true,
            extra_args: self.options.extra_sbatch_args.clone(),
            env: self.env.clone(),
        };
        let id = self.slurm.submit(&spec).map_err(ClusterRunError::Submit)?;
        self.log_submission(seq, id, &name, tasks.len());
        tracing::debug!(job_id = id, seq, tasks = tasks.len(), "job submitted");
        self.jobs.push(Job {
            id,
            seq,
            tasks,
            tails: vec![Tail::new(self.dir.events(&id.to_string(), 0))],
            _slot: slot,
            state: None,
            done_reported: false,
        });
        Ok(())
    }

    /// Appends the job to `jobs.jsonl` (what `--reuse` and `cluster list` read to find the
    /// jobs of a coordinator that died).
    fn log_submission(&self, seq: u64, id: u64, name: &str, tasks: usize) {
        let line = json!({"seq": seq, "job_id": id, "name": name, "tasks": tasks});
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.jobs_log())
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = appended {
            tracing::warn!(
                "cannot record job {id} in {}: {e}",
                self.dir.jobs_log().display()
            );
        }
    }

    /// Reads every job's new events and, when due, `squeue`'s view; settles the jobs that
    /// ended.
    fn poll(&mut self) {
        self.read_events();
        let due = self
            .last_squeue
            .is_none_or(|at| at.elapsed() >= SQUEUE_INTERVAL)
            || self.jobs.iter().any(|job| job.done_reported);
        if !due {
            return;
        }
        self.last_squeue = Some(Instant::now());
        let states = match self.slurm.jobs(&self.prefix) {
            Ok(jobs) => jobs
                .into_iter()
                .map(|j| (j.id, j.state))
                .collect::<HashMap<_, _>>(),
            Err(e) => {
                tracing::warn!("cannot read the jobs' states: {e}");
                return;
            }
        };
        let mut ended = Vec::new();
        for (i, job) in self.jobs.iter_mut().enumerate() {
            job.state = states.get(&job.id).cloned();
            match &job.state {
                Some(state) if !state.is_final() => {}
                _ => ended.push(i),
            }
        }
        for i in ended.into_iter().rev() {
            let job = self.jobs.swap_remove(i);
            self.settle(job, true);
        }
    }

    /// Forwards every job's new events.
    fn read_events(&mut self) {
        for j in 0..self.jobs.len() {
            let events = {
                let job = &mut self.jobs[j];
                // A requeued job's next run writes the next file.
                let next = job.tails.len() as u32;
                let path = self.dir.events(&job.id.to_string(), next);
                if path.exists() {
                    job.tails.push(Tail::new(path));
                    job.done_reported = false;
                }
                job.tails
                    .iter_mut()
                    .flat_map(Tail::read_new)
                    .collect::<Vec<_>>()
            };
            for event in events {
                self.forward(j, event);
            }
        }
    }

    /// Forwards one event of job `j` into the run's progress; a `task_finished` counts the
    /// published task.
    fn forward(&mut self, j: usize, event: EventLine<'static>) {
        let rc = self.rc;
        let Some(task_id) = event.task_id.clone() else {
            if event.event == EventKind::RunFinished {
                self.jobs[j].done_reported = true;
            }
            return;
        };
        let Some(pending) = self.jobs[j].task_mut(&task_id) else {
            return;
        };
        let task = TaskRef {
            task_id: &pending.unit.task.task_id,
            category: &pending.unit.task.category,
            attempt: event.attempt,
        };
        let status = event.outcome();
        let payload = event.payload.into_owned();
        match event.event {
            EventKind::TaskStarted if !pending.started => {
                pending.started = true;
                rc.emit(ProgressEvent::TaskStarted {
                    task,
                    index: pending.unit.index,
                    total: pending.unit.total,
                });
            }
            EventKind::AttemptStarted => rc.emit(ProgressEvent::AttemptStarted(task)),
            EventKind::PhaseChanged => {
                if let Some(phase) = event.phase {
                    rc.emit(ProgressEvent::PhaseChanged {
                        task,
                        phase,
                        detail: payload,
                    });
                }
            }
            EventKind::ExecutionPlanResolved => {
                if let Some(attempt) = event.attempt {
                    pending.plans.insert(attempt.to_string(), payload.clone());
                }
                rc.emit(ProgressEvent::ExecutionPlanResolved {
                    task,
                    plan: payload,
                });
            }
            EventKind::AttemptRetry => rc.emit(ProgressEvent::AttemptRetry {
                task,
                detail: payload,
            }),
            EventKind::AttemptFinished => {
                if let Some(status) = status {
                    rc.emit(ProgressEvent::AttemptFinished { task, status });
                }
            }
            EventKind::PartialSaved => rc.emit(ProgressEvent::PartialSaved(task)),
            EventKind::TaskFinished => {
                let job = &mut self.jobs[j];
                if let Some(at) = job
                    .tasks
                    .iter()
                    .position(|t| t.unit.task.task_id == *task_id)
                {
                    let pending = job.tasks.swap_remove(at);
                    let severity = TaskPayload::deserialize(&payload)
                        .ok()
                        .and_then(|p| p.severity)
                        .as_deref()
                        .and_then(parse_severity);
                    if let Err(pending) = self.count_published(pending, Some((status, severity))) {
                        // Not visible here yet (a shared file system's cache): the job's
                        // end settles it.
                        self.jobs[j].tasks.push(*pending);
                    }
                }
            }
            _ => {}
        }
    }

    /// Counts a task a copy published: metrics and issues from its published results, its
    /// plans into the run's plan log, `task_finished` into the progress. Gives the task back
    /// when its published directory is not found.
    fn count_published(
        &mut self,
        mut pending: Pending,
        reported: Option<(
            Option<TaskOutcome>,
            Option<agentcompass_plugin_api::contracts::IssueSeverity>,
        )>,
    ) -> Result<(), Box<Pending>> {
        let rc = self.rc;
        let details = rc.store.details_dir();
        let Some(dir) = TaskState::ALL
            .iter()
            .map(|s| details.join(s.as_str()).join(&pending.name))
            .find(|d| d.is_dir())
        else {
            return Err(Box::new(pending));
        };
        let task = &pending.unit.task;
        let records = read_json::<TaskRecord>(&dir.join(TASK_FILE), "task.json")
            .map(|record| attempt_records(&dir, &record))
            .unwrap_or_default();
        let outcomes: Vec<_> = records.iter().map(AttemptRecord::outcome).collect();
        let mut worst = None;
        for record in records {
            let mut result = RunResult::new(String::new());
            result.issues = record.issues;
            worst = worst.max(result.highest_severity());
            rc.issues.record(&result);
        }
        rc.record_metrics(&task.category, &outcomes);
        if !pending.plans.is_empty() {
            let plans = Value::Object(std::mem::take(&mut pending.plans));
            if let Err(e) = rc.store.append_resolved_plans(&task.task_id, &plans) {
                tracing::warn!("cannot record the plans of task {}: {e}", task.task_id);
            }
        }
        let (status, severity) = match reported {
            Some((Some(status), severity)) => (status, severity),
            _ => (TaskOutcome::from_severity(worst), worst),
        };
        if !pending.started {
            rc.emit(ProgressEvent::TaskStarted {
                task: TaskRef {
                    task_id: &task.task_id,
                    category: &task.category,
                    attempt: None,
                },
                index: pending.unit.index,
                total: pending.unit.total,
            });
        }
        rc.emit(ProgressEvent::TaskFinished {
            task: TaskRef {
                task_id: &task.task_id,
                category: &task.category,
                attempt: None,
            },
            status,
            severity,
            index: pending.unit.index,
            total: pending.unit.total,
        });
        self.scheduled.published += 1;
        Ok(())
    }

    /// Counts a task found published when its job ended (or published by the coordinator).
    fn count_settled(&mut self, pending: Pending) {
        if let Err(pending) = self.count_published(pending, None) {
            tracing::error!(
                "task {} is published but its directory cannot be read",
                pending.unit.task.task_id
            );
            self.scheduled.store_failed = true;
        }
    }

    /// Settles an ended job: its last events, then each task it did not publish — published
    /// after all (its event lost) → counted; else its claim settled and the task resubmitted
    /// (`resubmit`) or, past `max_resubmits`, published FATAL `job_lost`.
    fn settle(&mut self, mut job: Job, resubmit: bool) {
        let events: Vec<EventLine<'static>> =
            job.tails.iter_mut().flat_map(Tail::read_new).collect();
        self.jobs.push(job);
        let j = self.jobs.len() - 1;
        for event in events {
            self.forward(j, event);
        }
        let job = self.jobs.swap_remove(j);
        let state = job
            .state
            .as_ref()
            .map_or("gone from the queue".to_string(), |s| s.to_string());
        let details = self.rc.store.details_dir();
        let mut all_published = true;
        let runs = job.tails.len() as u32;
        for mut pending in job.tasks {
            match claim::settle_claim(&details, "running", &pending.name) {
                Ok(claim::Settled::Published) => {
                    self.count_settled(pending);
                    continue;
                }
                Ok(claim::Settled::Released { holder }) => {
                    tracing::warn!(task_id = %pending.unit.task.task_id, holder, "the job ended between claiming and publishing; claim released");
                }
                Ok(claim::Settled::Unclaimed) => {}
                Err(e) => {
                    tracing::error!("cannot settle task {}: {e}", pending.unit.task.task_id);
                    self.scheduled.store_failed = true;
                    continue;
                }
            }
            all_published = false;
            if !resubmit {
                continue;
            }
            pending.lost += 1;
            if pending.lost > self.options.max_resubmits {
                self.publish_lost(pending, job.id, &state);
            } else {
                tracing::warn!(task_id = %pending.unit.task.task_id, job_id = job.id, state, "the job ended without publishing the task; resubmitting it");
                self.resubmit.push_back(pending);
            }
        }
        if all_published {
            self.remove_job_files(job.id, job.seq, runs);
        }
    }

    /// Removes what a job that published all its tasks leaves that nothing reads again: its
    /// unit and its runs' events (already in the run's `progress.jsonl`) and snapshots. Its
    /// script, output and logs stay. A job that lost tasks keeps everything, for inspection.
    fn remove_job_files(&self, id: u64, seq: u64, runs: u32) {
        let job = id.to_string();
        let mut files = vec![self.dir.unit(seq)];
        for restart in 0..runs.max(1) {
            files.push(self.dir.events(&job, restart));
            files.push(self.dir.snapshot(&job, restart));
        }
        for file in files {
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::debug!("cannot remove {}: {e}", file.display()),
            }
        }
    }

    /// Publishes a task every job of which was lost: FATAL `job_lost` (from the coordinator,
    /// fenced like any copy).
    fn publish_lost(&mut self, pending: Pending, job_id: u64, state: &str) {
        let rc = self.rc;
        let task: &TaskSpec = &pending.unit.task;
        let issue: ExecutionIssue = codes::JOB_LOST.fatal(
            IssuePhase::Run,
            format!(
                "{} Slurm jobs took the task and ended without publishing it (the last, job {job_id}: {state}; its output: {})",
                pending.lost,
                self.dir.root().join("logs").display()
            ),
        );
        let mut result = RunResult::new(task.task_id.clone());
        result.category = task.category.clone();
        result.push_issue(issue);
        let attempts = rc.resolved.execution.attempts;
        let published = (|| {
            let writer = rc.store.begin_task_fenced(&task.task_id, "coordinator")?;
            writer.write_attempt_result(1, &attempt_payload(&result, 0))?;
            let mut retries = Map::new();
            retries.insert("1".into(), json!(0));
            let payload = task_payload(task, &[1], &attempts, &rc.reuse_key, &retries);
            writer.publish_fenced(&payload, TaskState::Fatal)
        })();
        match published {
            Ok(_) => self.count_settled(pending),
            Err(e) => {
                tracing::error!("cannot publish task {}: {e}", task.task_id);
                self.scheduled.store_failed = true;
            }
        }
    }

    /// Cancels every job in flight (`scancel`) and waits until Slurm shows none active,
    /// counting what they published meanwhile.
    async fn cancel_all(&mut self) {
        let ids: Vec<u64> = self.jobs.iter().map(|j| j.id).collect();
        if ids.is_empty() {
            return;
        }
        tracing::info!(jobs = ids.len(), "cancelling the run's Slurm jobs");
        if let Err(e) = self.slurm.cancel(&ids) {
            tracing::error!("cannot cancel the run's jobs: {e}");
        }
        let deadline = Instant::now() + self.rc.cleanup_grace + CANCEL_WAIT;
        while !self.jobs.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
            self.read_events();
            let Ok(listed) = self.slurm.jobs(&self.prefix) else {
                continue;
            };
            let active: HashSet<u64> = listed
                .into_iter()
                .filter(|j| j.state.is_active() || j.state == JobState::Completing)
                .map(|j| j.id)
                .collect();
            let mut i = 0;
            while i < self.jobs.len() {
                if active.contains(&self.jobs[i].id) {
                    i += 1;
                } else {
                    let job = self.jobs.swap_remove(i);
                    self.settle(job, false);
                }
            }
        }
        for job in std::mem::take(&mut self.jobs) {
            tracing::warn!(job_id = job.id, "still active after cancellation");
            self.settle(job, false);
        }
    }
}

/// The name prefix of a run's jobs: `ac-` and 12 hex digits of the run directory's path.
pub(super) fn job_prefix(run_dir: &Path) -> String {
    let digest = Sha256::digest(run_dir.as_os_str().as_encoded_bytes());
    format!("ac-{}-", &hex::encode(digest)[..12])
}
