//! The progress events of a request run: what `progress.jsonl` records, one line each.

use agentcompass_plugin_api::contracts::IssueSeverity;
use agentcompass_results::status::RunStatus;
use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Value};

use super::TaskRef;

/// The phase an attempt is in (the `phase` field of a task's events, and the keys of
/// `progress.json` `current_phase_counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskPhase {
    /// The planner resolves the attempt's execution plan.
    Plan,
    /// The harness's tools are installed into the install cache (only when missing).
    InstallTools,
    /// The task environment opens.
    OpenEnvironment,
    /// The benchmark prepares the task in the environment.
    PrepareTask,
    /// A harness-free benchmark runs the task.
    RunTask,
    /// The harness opens its session.
    StartHarness,
    /// The harness runs the agent.
    RunHarness,
    /// The harness recovers its saved result.
    CollectHarnessResult,
    /// The artifact collection commands run.
    CollectArtifacts,
    /// The declared artifacts are downloaded.
    DownloadArtifacts,
    /// The evaluation checkpoint is written.
    SaveEvaluationCheckpoint,
    /// A fresh evaluation environment opens.
    EvaluateEnvironment,
    /// Collected artifacts are restored into the fresh evaluation environment.
    RestoreArtifacts,
    /// The benchmark scores the attempt.
    Evaluate,
    /// An interrupted earlier run's checkpoint is restored for evaluation only.
    RecoverEvaluation,
    /// The attempt waits before a runtime retry.
    RetryWait,
    /// A step of a multi-step task starts (detail: its name, number and the step count).
    RunStep,
    /// The finished steps of an interrupted run are restored (multi-step resume).
    RestoreSteps,
}

impl TaskPhase {
    /// Every phase.
    pub const ALL: [TaskPhase; 18] = [
        TaskPhase::Plan,
        TaskPhase::InstallTools,
        TaskPhase::OpenEnvironment,
        TaskPhase::PrepareTask,
        TaskPhase::RunTask,
        TaskPhase::StartHarness,
        TaskPhase::RunHarness,
        TaskPhase::CollectHarnessResult,
        TaskPhase::CollectArtifacts,
        TaskPhase::DownloadArtifacts,
        TaskPhase::SaveEvaluationCheckpoint,
        TaskPhase::EvaluateEnvironment,
        TaskPhase::RestoreArtifacts,
        TaskPhase::Evaluate,
        TaskPhase::RecoverEvaluation,
        TaskPhase::RetryWait,
        TaskPhase::RunStep,
        TaskPhase::RestoreSteps,
    ];

    /// The phase recorded as `name`.
    pub fn parse(name: &str) -> Option<TaskPhase> {
        TaskPhase::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The recorded name (`run_harness`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskPhase::Plan => "plan",
            TaskPhase::InstallTools => "install_tools",
            TaskPhase::OpenEnvironment => "open_environment",
            TaskPhase::PrepareTask => "prepare_task",
            TaskPhase::RunTask => "run_task",
            TaskPhase::StartHarness => "start_harness",
            TaskPhase::RunHarness => "run_harness",
            TaskPhase::CollectHarnessResult => "collect_harness_result",
            TaskPhase::CollectArtifacts => "collect_artifacts",
            TaskPhase::DownloadArtifacts => "download_artifacts",
            TaskPhase::SaveEvaluationCheckpoint => "save_evaluation_checkpoint",
            TaskPhase::EvaluateEnvironment => "evaluate_environment",
            TaskPhase::RestoreArtifacts => "restore_artifacts",
            TaskPhase::Evaluate => "evaluate",
            TaskPhase::RecoverEvaluation => "recover_evaluation",
            TaskPhase::RetryWait => "retry_wait",
            TaskPhase::RunStep => "run_step",
            TaskPhase::RestoreSteps => "restore_steps",
        }
    }
}

/// How a task or one of its attempts ended, as progress counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskOutcome {
    /// Ran to the end (its score may be anything).
    Completed,
    /// Ended with a FATAL issue.
    Failed,
    /// Not run.
    Skipped,
}

impl TaskOutcome {
    /// The recorded name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Completed => "completed",
            TaskOutcome::Failed => "failed",
            TaskOutcome::Skipped => "skipped",
        }
    }

    /// The outcome recorded as `name`.
    pub fn parse(name: &str) -> Option<TaskOutcome> {
        [
            TaskOutcome::Completed,
            TaskOutcome::Failed,
            TaskOutcome::Skipped,
        ]
        .into_iter()
        .find(|o| o.as_str() == name)
    }

    /// `failed` when the highest severity is FATAL, else `completed`.
    pub fn from_severity(worst: Option<IssueSeverity>) -> Self {
        if worst == Some(IssueSeverity::Fatal) {
            TaskOutcome::Failed
        } else {
            TaskOutcome::Completed
        }
    }
}

/// The highest severity recorded as `name` ([`severity_name`]'s inverse).
pub fn parse_severity(name: &str) -> Option<IssueSeverity> {
    match name {
        "fatal" => Some(IssueSeverity::Fatal),
        "error" => Some(IssueSeverity::Error),
        "warning" => Some(IssueSeverity::Warning),
        _ => None,
    }
}

/// The recorded name of a highest severity (`none` without issues).
pub fn severity_name(worst: Option<IssueSeverity>) -> &'static str {
    match worst {
        Some(IssueSeverity::Fatal) => "fatal",
        Some(IssueSeverity::Error) => "error",
        Some(IssueSeverity::Warning) => "warning",
        None => "none",
    }
}

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
    pub(super) name: &'static str,
    pub(super) task: Option<TaskRef<'a>>,
    pub(super) phase: Option<&'static str>,
    pub(super) status: Option<&'static str>,
    pub(super) payload: Cow<'a, Value>,
}

impl<'a> ProgressEvent<'a> {
    /// The recorded event name (`task_finished`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            ProgressEvent::RunStarted { .. } => "run_started",
            ProgressEvent::TasksLoaded { .. } => "tasks_loaded",
            ProgressEvent::ReuseLoaded(_) => "reuse_loaded",
            ProgressEvent::TaskStarted { .. } => "task_started",
            ProgressEvent::AttemptStarted(_) => "attempt_started",
            ProgressEvent::PhaseChanged { .. } => "phase_changed",
            ProgressEvent::ExecutionPlanResolved { .. } => "execution_plan_resolved",
            ProgressEvent::AttemptRetry { .. } => "attempt_retry",
            ProgressEvent::AttemptFinished { .. } => "attempt_finished",
            ProgressEvent::PartialSaved(_) => "partial_saved",
            ProgressEvent::TaskFinished { .. } => "task_finished",
            ProgressEvent::TaskSkipped { .. } => "task_skipped",
            ProgressEvent::SummaryStarted => "summary_started",
            ProgressEvent::RunFinished { .. } => "run_finished",
        }
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
        let name = self.name();
        let task = self.task();
        let phase = self.phase().map(TaskPhase::as_str);
        let owned = |value: Value| Cow::Owned(value);
        let (status, payload) = match self {
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
            ProgressEvent::TaskStarted { index, total, .. } => {
                (None, owned(json!({"index": index, "total": total})))
            }
            ProgressEvent::PhaseChanged { detail, .. } => (None, Cow::Borrowed(detail)),
            ProgressEvent::ExecutionPlanResolved { plan, .. } => (None, Cow::Borrowed(plan)),
            ProgressEvent::AttemptRetry { detail, .. } => (None, Cow::Borrowed(detail)),
            ProgressEvent::AttemptFinished { status, .. } => {
                (Some(status.as_str()), owned(Value::Null))
            }
            ProgressEvent::TaskFinished {
                status,
                severity,
                index,
                total,
                ..
            } => (
                Some(status.as_str()),
                owned(
                    json!({"index": index, "total": total, "severity": severity_name(*severity)}),
                ),
            ),
            ProgressEvent::TaskSkipped {
                reason,
                index,
                total,
                ..
            } => (
                Some(TaskOutcome::Skipped.as_str()),
                owned(json!({"index": index, "total": total, "reason": reason})),
            ),
            ProgressEvent::RunFinished { status, error } => {
                (Some(status.as_str()), owned(json!({ "error": error })))
            }
            ProgressEvent::AttemptStarted(_)
            | ProgressEvent::PartialSaved(_)
            | ProgressEvent::SummaryStarted => (None, owned(Value::Null)),
        };
        EventFields {
            name,
            task,
            phase,
            status,
            payload,
        }
    }
}
