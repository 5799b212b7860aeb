//! The in-memory progress snapshot: counters, phase counts and the active tasks.

use std::collections::{BTreeMap, HashMap};

use agentcompass_gateway::limit::LimitSnapshot;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use agentcompass_plugin_api::contracts::IssueSeverity;
use agentcompass_results::status::RunStatus;

use super::event::{ProgressEvent, TaskOutcome, TaskPhase};
use super::terminal::ProgressSnapshotView;
use super::{ProgressMeta, TaskRef};

/// One running task.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ActiveTask {
    category: String,
    phase: Option<TaskPhase>,
    attempt: Option<u32>,
    /// When the task started (epoch seconds).
    started_at: f64,
    updated_at: f64,
}

/// Task counts of reused results (set, not added, by `reuse_loaded`).
#[derive(Debug, Clone, Copy, Default)]
struct ReuseCounts {
    tasks: u64,
    completed: u64,
    failed: u64,
    error: u64,
    warning: u64,
}

/// Counters and active tasks of one request run.
#[derive(Debug)]
pub(super) struct SnapshotState {
    /// `created` → `running` → `summarizing` → terminal.
    pub(super) status: RunStatus,
    total: u64,
    /// Tasks that started, or finished without a `task_started`.
    started: u64,
    finished: u64,
    completed: u64,
    failed: u64,
    error: u64,
    warning: u64,
    skipped: u64,
    reuse: ReuseCounts,
    attempts_started: u64,
    attempts_finished: u64,
    partials_saved: u64,
    /// Active tasks per phase (zero entries are kept to avoid re-allocating names).
    phase_counts: HashMap<TaskPhase, u64>,
    active: HashMap<String, ActiveTask>,
    pub(super) updated_at: f64,
    /// Elapsed seconds frozen at `run_finished`.
    finished_elapsed: Option<f64>,
    /// Number of applied events (used to detect changes).
    pub(super) seq: u64,
    /// The headline so far (`correct 84.20%`), for the terminal.
    pub(super) score: Option<String>,
    /// The model endpoints' adaptive limits, by URL (from `model_limit` events).
    model_endpoints: BTreeMap<String, LimitSnapshot>,
    /// The live run's control: its socket, pause state and task concurrency.
    pub(super) control: Option<Value>,
    /// The build phase: images ready of the total, while it runs.
    images: Option<(u64, u64)>,
}

impl SnapshotState {
    /// Whether `run_finished` was applied: the document no longer changes with time.
    pub(super) fn is_frozen(&self) -> bool {
        self.finished_elapsed.is_some()
    }
}

fn payload_u64(payload: &Value, key: &str) -> Option<u64> {
    payload.get(key).and_then(Value::as_u64)
}

fn decrement(counts: &mut HashMap<TaskPhase, u64>, phase: TaskPhase) {
    if let Some(n) = counts.get_mut(&phase) {
        *n = n.saturating_sub(1);
    }
}

fn increment(counts: &mut HashMap<TaskPhase, u64>, phase: TaskPhase) {
    *counts.entry(phase).or_insert(0) += 1;
}

impl SnapshotState {
    /// A fresh state (`created`).
    pub(super) fn new(now: f64) -> Self {
        SnapshotState {
            status: RunStatus::Created,
            total: 0,
            started: 0,
            finished: 0,
            completed: 0,
            failed: 0,
            error: 0,
            warning: 0,
            skipped: 0,
            reuse: ReuseCounts::default(),
            attempts_started: 0,
            attempts_finished: 0,
            partials_saved: 0,
            phase_counts: HashMap::new(),
            active: HashMap::new(),
            updated_at: now,
            finished_elapsed: None,
            seq: 0,
            score: None,
            model_endpoints: BTreeMap::new(),
            control: None,
            images: None,
        }
    }

    /// Moves `created` to `running`.
    fn mark_running(&mut self) {
        if self.status == RunStatus::Created {
            self.status = RunStatus::Running;
        }
    }

    /// Applies one event.
    pub(super) fn apply(&mut self, event: &ProgressEvent<'_>, timestamp: f64, elapsed: f64) {
        self.seq += 1;
        self.updated_at = timestamp;
        match event {
            ProgressEvent::RunStarted { .. } => self.mark_running(),
            ProgressEvent::TasksLoaded { total } => {
                self.mark_running();
                self.total = *total;
            }
            ProgressEvent::ReuseLoaded(payload) => self.reuse_loaded(payload),
            ProgressEvent::TaskStarted { task, .. } => {
                self.mark_running();
                self.task_started(*task, timestamp);
            }
            ProgressEvent::TaskFinished {
                task,
                status,
                severity,
                ..
            } => self.task_finished(*task, *status, *severity),
            ProgressEvent::TaskSkipped { task, .. } => {
                self.task_finished(*task, TaskOutcome::Skipped, None)
            }
            ProgressEvent::AttemptStarted(_) => self.attempts_started += 1,
            ProgressEvent::AttemptFinished { .. } => self.attempts_finished += 1,
            ProgressEvent::PartialSaved(_) => self.partials_saved += 1,
            ProgressEvent::SummaryStarted if !self.status.is_terminal() => {
                self.status = RunStatus::Summarizing;
            }
            ProgressEvent::RunFinished { status, .. } => {
                self.status = *status;
                self.finished_elapsed = Some(elapsed);
                // A finished run has no control socket any more.
                self.control = None;
            }
            ProgressEvent::ModelLimit { endpoint, limit } => {
                self.model_endpoints.insert((*endpoint).to_string(), *limit);
            }
            ProgressEvent::ImagesProgress { built, total, .. } => {
                self.mark_running();
                self.images = (built < total).then_some((*built, *total));
            }
            _ => {}
        }
        // Any event about an active task refreshes it (phase, attempt, time).
        if !matches!(event, ProgressEvent::TaskFinished { .. }) {
            if let Some(task) = event.task() {
                self.touch(task, event.phase(), timestamp);
            }
        }
    }

    fn reuse_loaded(&mut self, payload: &Value) {
        let reused = payload_u64(payload, "reused_tasks").unwrap_or(0);
        let severity = payload.get("reused_severity_counts");
        let count = |key: &str| severity.map_or(0, |s| payload_u64(s, key).unwrap_or(0));
        let failed = count("fatal").min(reused);
        self.reuse = ReuseCounts {
            tasks: reused,
            completed: reused - failed,
            failed,
            error: count("error"),
            warning: count("warning"),
        };
        if self.total == 0 {
            if let Some(to_run) = payload_u64(payload, "tasks_to_run") {
                self.total = reused.saturating_add(to_run);
            }
        }
    }

    fn task_started(&mut self, task: TaskRef<'_>, timestamp: f64) {
        if self.active.contains_key(task.task_id) {
            return;
        }
        self.started += 1;
        self.active.insert(
            task.task_id.to_string(),
            ActiveTask {
                category: task.category.to_string(),
                phase: None,
                attempt: task.attempt,
                started_at: timestamp,
                updated_at: timestamp,
            },
        );
    }

    fn task_finished(
        &mut self,
        task: TaskRef<'_>,
        status: TaskOutcome,
        severity: Option<IssueSeverity>,
    ) {
        match self.active.remove(task.task_id) {
            Some(active) => {
                if let Some(phase) = active.phase {
                    decrement(&mut self.phase_counts, phase);
                }
            }
            // Finished without having started (e.g. skipped).
            None => self.started += 1,
        }
        self.finished += 1;
        match status {
            TaskOutcome::Completed => self.completed += 1,
            TaskOutcome::Failed => self.failed += 1,
            TaskOutcome::Skipped => self.skipped += 1,
        }
        match severity {
            Some(IssueSeverity::Error) => self.error += 1,
            Some(IssueSeverity::Warning) => self.warning += 1,
            _ => {}
        }
    }

    /// Updates an active task's phase, attempt and time.
    fn touch(&mut self, task: TaskRef<'_>, phase: Option<TaskPhase>, timestamp: f64) {
        let Some(active) = self.active.get_mut(task.task_id) else {
            return;
        };
        active.updated_at = timestamp;
        if task.attempt.is_some() {
            active.attempt = task.attempt;
        }
        let Some(phase) = phase else {
            return;
        };
        if active.phase == Some(phase) {
            return;
        }
        if let Some(current) = active.phase.replace(phase) {
            decrement(&mut self.phase_counts, current);
        }
        increment(&mut self.phase_counts, phase);
    }

    fn pending(&self) -> u64 {
        self.total
            .saturating_sub(self.reuse.tasks)
            .saturating_sub(self.started)
    }

    /// The number of running (active) tasks.
    pub(super) fn running(&self) -> u64 {
        self.active.len() as u64
    }

    /// The terminal view of this request.
    pub(super) fn view(&self, label: &str, elapsed_seconds: f64) -> ProgressSnapshotView {
        ProgressSnapshotView {
            label: label.to_string(),
            elapsed_seconds: self.finished_elapsed.unwrap_or(elapsed_seconds),
            retrying: self
                .phase_counts
                .get(&TaskPhase::RetryWait)
                .copied()
                .unwrap_or(0),
            score: self.score.clone(),
            total: self.total,
            finished: self.finished + self.reuse.tasks,
            completed: self.completed + self.reuse.completed,
            failed: self.failed + self.reuse.failed,
            error: self.error + self.reuse.error,
            running: self.running(),
            reused: self.reuse.tasks,
            status: self.status,
            model_limit: self
                .model_endpoints
                .values()
                .find(|l| l.limit < l.max || l.waiting > 0)
                .map(|l| (l.limit, l.max, l.waiting)),
            images: self.images,
        }
    }

    /// The serialisable snapshot (`progress.json`).
    pub(super) fn document<'a>(
        &'a self,
        meta: &'a ProgressMeta,
        started_at: f64,
        elapsed: f64,
    ) -> SnapshotDocument<'a> {
        SnapshotDocument {
            run_id: &meta.run_id,
            benchmark: &meta.benchmark,
            harness: &meta.harness,
            environment: &meta.environment,
            model: &meta.model,
            request_name: &meta.request_name,
            orchestration_id: &meta.orchestration_id,
            status: self.status,
            total_tasks: self.total,
            reused_tasks: self.reuse.tasks,
            pending_tasks: self.pending(),
            running_tasks: self.running(),
            finished_tasks: self.finished + self.reuse.tasks,
            completed_tasks: self.completed + self.reuse.completed,
            failed_tasks: self.failed + self.reuse.failed,
            error_tasks: self.error + self.reuse.error,
            warning_tasks: self.warning + self.reuse.warning,
            skipped_tasks: self.skipped,
            attempts_started: self.attempts_started,
            attempts_finished: self.attempts_finished,
            partials_saved: self.partials_saved,
            current_phase_counts: PhaseCounts(&self.phase_counts),
            active_tasks: &self.active,
            started_at,
            elapsed_seconds: self.finished_elapsed.unwrap_or(elapsed),
            updated_at: self.updated_at,
            model_endpoints: &self.model_endpoints,
            control: self.control.as_ref(),
        }
    }
}

/// Non-zero phase counts.
pub(super) struct PhaseCounts<'a>(&'a HashMap<TaskPhase, u64>);

impl Serialize for PhaseCounts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (phase, n) in self.0.iter().filter(|(_, n)| **n > 0) {
            map.serialize_entry(phase, n)?;
        }
        map.end()
    }
}

/// The `progress.json` document, borrowed from the state.
#[derive(Serialize)]
pub(super) struct SnapshotDocument<'a> {
    run_id: &'a str,
    benchmark: &'a str,
    harness: &'a str,
    environment: &'a str,
    model: &'a str,
    request_name: &'a str,
    orchestration_id: &'a str,
    status: RunStatus,
    total_tasks: u64,
    reused_tasks: u64,
    pending_tasks: u64,
    running_tasks: u64,
    finished_tasks: u64,
    completed_tasks: u64,
    failed_tasks: u64,
    error_tasks: u64,
    warning_tasks: u64,
    skipped_tasks: u64,
    attempts_started: u64,
    attempts_finished: u64,
    partials_saved: u64,
    current_phase_counts: PhaseCounts<'a>,
    active_tasks: &'a HashMap<String, ActiveTask>,
    started_at: f64,
    elapsed_seconds: f64,
    updated_at: f64,
    /// The model endpoints' adaptive limits, by URL: `limit`, `max`, `in_flight`, `waiting`
    /// (calls held by the limit or a rate limit now), `rate_limited` (answers so far) and
    /// `waited_seconds` (total).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    model_endpoints: &'a BTreeMap<String, LimitSnapshot>,
    /// While the run runs: `socket` (the `ctl` socket), `paused`, `task_concurrency`.
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<&'a Value>,
}
