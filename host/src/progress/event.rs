//! The progress events of a request run: what `progress.jsonl` records, one line each.

use agentcompass_plugin_api::contracts::IssueSeverity;
use agentcompass_results::status::RunStatus;
use std::borrow::Cow;

use serde_json::{json, Value};

use super::TaskRef;

use agentcompass_schema::progress::TaskPayload;
pub use agentcompass_schema::progress::{
    parse_severity, severity_name, EventKind, TaskOutcome, TaskPhase,
};

/// One progress event.
#[derive(Debug, Clone)]
pub enum ProgressEvent<'a> {
    /// The run started.
    RunStarted {
        /// Benchmark id.
        benchmark: &'a str,
        /// Harness id.
        harness: &'a str,
        /// Environment provider id.
        environment: &'a str,
        /// Model id.
        model: &'a str,
    },
    /// The benchmark's task stream opened with this many tasks.
    TasksLoaded {
        /// Selected tasks.
        total: u64,
    },
    /// Finished tasks of an earlier run were imported (`reused_tasks`, `tasks_to_run`,
    /// `reused_severity_counts`, `source`).
    ReuseLoaded(Value),
    /// A task started (its `index` of `total` in the stream).
    TaskStarted {
        /// The task.
        task: TaskRef<'a>,
        /// Position in the stream.
        index: usize,
        /// Tasks in the stream.
        total: usize,
    },
    /// A semantic attempt started.
    AttemptStarted(TaskRef<'a>),
    /// An attempt entered a phase (`detail`: the phase's budgets, or null).
    PhaseChanged {
        /// The task and attempt.
        task: TaskRef<'a>,
        /// The new phase.
        phase: TaskPhase,
        /// Budgets and counts of the phase, or null.
        detail: Value,
    },
    /// The planner resolved an attempt's plan (its redacted audit view).
    ExecutionPlanResolved {
        /// The task and attempt.
        task: TaskRef<'a>,
        /// The plan summary.
        plan: Value,
    },
    /// A runtime retry is scheduled (`retry`, `max_retries`, `retry_delay_seconds`, `stage`,
    /// `scope`, `matched_pattern`).
    AttemptRetry {
        /// The task and attempt.
        task: TaskRef<'a>,
        /// The retry's details.
        detail: Value,
    },
    /// A semantic attempt ended.
    AttemptFinished {
        /// The task and attempt.
        task: TaskRef<'a>,
        /// How it ended.
        status: TaskOutcome,
    },
    /// A partial result of a task was saved.
    PartialSaved(TaskRef<'a>),
    /// A task was published.
    TaskFinished {
        /// The task.
        task: TaskRef<'a>,
        /// How it ended.
        status: TaskOutcome,
        /// Highest issue severity of its attempts.
        severity: Option<IssueSeverity>,
        /// Position in the stream.
        index: usize,
        /// Tasks in the stream.
        total: usize,
    },
    /// A task was not run (`reason`: `budget_exhausted`, `error_rate_exceeded`); it is not
    /// published and not scored, and a `--reuse` of the run runs it.
    TaskSkipped {
        /// The task.
        task: TaskRef<'a>,
        /// Why (an issue code of class `budget` or `cancelled`).
        reason: &'static str,
        /// Position in the stream.
        index: usize,
        /// Tasks in the stream.
        total: usize,
    },
    /// Every task ended; the report is being computed.
    SummaryStarted,
    /// The model endpoint's adaptive limit changed.
    ModelLimit {
        /// The endpoint's URL.
        endpoint: &'a str,
        /// The limit now.
        limit: agentcompass_gateway::limit::LimitSnapshot,
    },
    /// The run was steered through its control socket (`{action, uid, ...}`).
    Control(Value),
    /// The build phase: `built` of the `total` distinct images the tasks build from their own
    /// definitions are ready (`failed` of them could not be built).
    ImagesProgress {
        /// Images ready or failed so far.
        built: u64,
        /// Of which failed.
        failed: u64,
        /// Distinct images to build.
        total: u64,
    },
    /// The run ended.
    RunFinished {
        /// Its terminal status.
        status: RunStatus,
        /// Why it failed, if it did.
        error: Option<&'a str>,
    },
}

/// The fields of one `progress.jsonl` line that depend on the event.
pub(super) struct EventFields<'a> {
    pub(super) kind: EventKind,
    pub(super) task: Option<TaskRef<'a>>,
    pub(super) phase: Option<TaskPhase>,
    pub(super) status: Option<&'static str>,
    pub(super) payload: Cow<'a, Value>,
}

impl<'a> ProgressEvent<'a> {
    /// What the event reports.
    pub fn kind(&self) -> EventKind {
        match self {
            ProgressEvent::RunStarted { .. } => EventKind::RunStarted,
            ProgressEvent::TasksLoaded { .. } => EventKind::TasksLoaded,
            ProgressEvent::ReuseLoaded(_) => EventKind::ReuseLoaded,
            ProgressEvent::TaskStarted { .. } => EventKind::TaskStarted,
            ProgressEvent::AttemptStarted(_) => EventKind::AttemptStarted,
            ProgressEvent::PhaseChanged { .. } => EventKind::PhaseChanged,
            ProgressEvent::ExecutionPlanResolved { .. } => EventKind::ExecutionPlanResolved,
            ProgressEvent::AttemptRetry { .. } => EventKind::AttemptRetry,
            ProgressEvent::AttemptFinished { .. } => EventKind::AttemptFinished,
            ProgressEvent::PartialSaved(_) => EventKind::PartialSaved,
            ProgressEvent::TaskFinished { .. } => EventKind::TaskFinished,
            ProgressEvent::TaskSkipped { .. } => EventKind::TaskSkipped,
            ProgressEvent::SummaryStarted => EventKind::SummaryStarted,
            ProgressEvent::RunFinished { .. } => EventKind::RunFinished,
            ProgressEvent::ModelLimit { .. } => EventKind::ModelLimit,
            ProgressEvent::Control(_) => EventKind::Control,
            ProgressEvent::ImagesProgress { .. } => EventKind::ImagesProgress,
        }
    }

    /// The recorded event name (`task_finished`, ...).
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The task the event is about.
    pub fn task(&self) -> Option<TaskRef<'a>> {
        match self {
            ProgressEvent::TaskStarted { task, .. }
            | ProgressEvent::AttemptStarted(task)
            | ProgressEvent::PhaseChanged { task, .. }
            | ProgressEvent::ExecutionPlanResolved { task, .. }
            | ProgressEvent::AttemptRetry { task, .. }
            | ProgressEvent::AttemptFinished { task, .. }
            | ProgressEvent::PartialSaved(task)
            | ProgressEvent::TaskFinished { task, .. }
            | ProgressEvent::TaskSkipped { task, .. } => Some(*task),
            _ => None,
        }
    }

    /// The phase the event puts its task in.
    pub fn phase(&self) -> Option<TaskPhase> {
        match self {
            ProgressEvent::PhaseChanged { phase, .. } => Some(*phase),
            ProgressEvent::ExecutionPlanResolved { .. } => Some(TaskPhase::Plan),
            ProgressEvent::AttemptRetry { .. } => Some(TaskPhase::RetryWait),
            _ => None,
        }
    }

    /// The fields of the event's line.
    pub(super) fn fields(&self) -> EventFields<'_> {
        let (status, payload) = match self.positioned() {
            Some((status, task)) => (
                status,
                Cow::Owned(serde_json::to_value(task).unwrap_or(Value::Null)),
            ),
            None => self.status_and_payload(),
        };
        EventFields {
            kind: self.kind(),
            task: self.task(),
            phase: self.phase(),
            status,
            payload,
        }
    }

    /// The status and payload of an event about a task's place in the stream (started,
    /// finished, skipped).
    fn positioned(&self) -> Option<(Option<&'static str>, TaskPayload)> {
        match self {
            ProgressEvent::TaskStarted { index, total, .. } => Some((
                None,
                TaskPayload {
                    index: *index,
                    total: *total,
                    ..TaskPayload::default()
                },
            )),
            ProgressEvent::TaskFinished {
                status,
                severity,
                index,
                total,
                ..
            } => Some((
                Some(status.as_str()),
                TaskPayload {
                    index: *index,
                    total: *total,
                    severity: Some(severity_name(*severity).to_string()),
                    reason: None,
                },
            )),
            ProgressEvent::TaskSkipped {
                reason,
                index,
                total,
                ..
            } => Some((
                Some(TaskOutcome::Skipped.as_str()),
                TaskPayload {
                    index: *index,
                    total: *total,
                    severity: None,
                    reason: Some(reason.to_string()),
                },
            )),
            _ => None,
        }
    }

    /// The status and payload of every other event.
    fn status_and_payload(&self) -> (Option<&'static str>, Cow<'_, Value>) {
        let owned = |value: Value| Cow::Owned(value);
        match self {
            ProgressEvent::RunStarted {
                benchmark,
                harness,
                environment,
                model,
            } => (
                None,
                owned(
                    json!({"benchmark": benchmark, "harness": harness, "environment": environment, "model": model}),
                ),
            ),
            ProgressEvent::TasksLoaded { total } => (None, owned(json!({ "total_tasks": total }))),
            ProgressEvent::ReuseLoaded(payload) => (None, Cow::Borrowed(payload)),
            ProgressEvent::PhaseChanged { detail, .. } => (None, Cow::Borrowed(detail)),
            ProgressEvent::ExecutionPlanResolved { plan, .. } => (None, Cow::Borrowed(plan)),
            ProgressEvent::AttemptRetry { detail, .. } => (None, Cow::Borrowed(detail)),
            ProgressEvent::AttemptFinished { status, .. } => {
                (Some(status.as_str()), owned(Value::Null))
            }
            ProgressEvent::ModelLimit { endpoint, limit } => {
                let mut payload = serde_json::to_value(limit).unwrap_or(Value::Null);
                payload["endpoint"] = json!(endpoint);
                (None, owned(payload))
            }
            ProgressEvent::Control(action) => (None, Cow::Borrowed(action)),
            ProgressEvent::ImagesProgress {
                built,
                failed,
                total,
            } => (
                None,
                owned(json!({"built": built, "failed": failed, "total": total})),
            ),
            ProgressEvent::RunFinished { status, error } => {
                (Some(status.as_str()), owned(json!({ "error": error })))
            }
            // `positioned`'s.
            ProgressEvent::TaskStarted { .. }
            | ProgressEvent::TaskFinished { .. }
            | ProgressEvent::TaskSkipped { .. }
            | ProgressEvent::AttemptStarted(_)
            | ProgressEvent::PartialSaved(_)
            | ProgressEvent::SummaryStarted => (None, owned(Value::Null)),
        }
    }
}
