//! `progress.jsonl`: one [`EventLine`] per event of a request run, and the typed names it
//! carries (the event kind, the attempt's phase, a task's outcome, a severity). A cluster
//! job appends the same lines to its events file, which the coordinator reads back as
//! [`EventLine`]s, so the writer and the reader share one type.

use std::borrow::Cow;

use agentcompass_plugin_api::contracts::IssueSeverity;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an event reports (the `event` field of a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The run started.
    RunStarted,
    /// The benchmark's task stream opened.
    TasksLoaded,
    /// Finished tasks of an earlier run were imported.
    ReuseLoaded,
    /// A task started.
    TaskStarted,
    /// A semantic attempt started.
    AttemptStarted,
    /// An attempt entered a phase.
    PhaseChanged,
    /// The planner resolved an attempt's plan.
    ExecutionPlanResolved,
    /// A runtime retry is scheduled.
    AttemptRetry,
    /// A semantic attempt ended.
    AttemptFinished,
    /// A partial result of a task was saved.
    PartialSaved,
    /// A task was published.
    TaskFinished,
    /// A task was not run.
    TaskSkipped,
    /// Every task ended; the report is being computed.
    SummaryStarted,
    /// The run ended.
    RunFinished,
    /// The model endpoint's adaptive limit changed (a rate limit, growth, waiting calls).
    ModelLimit,
    /// The run was steered through its control socket (`ctl`: pause, concurrency, cancel).
    Control,
    /// The build phase built (or found) another of the tasks' own images (`built`, `failed`,
    /// `total`).
    ImagesProgress,
    /// An event this host does not write (a newer host's, another tool's).
    #[serde(other)]
    Unknown,
}

impl EventKind {
    /// The recorded name (`task_finished`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::RunStarted => "run_started",
            EventKind::TasksLoaded => "tasks_loaded",
            EventKind::ReuseLoaded => "reuse_loaded",
            EventKind::TaskStarted => "task_started",
            EventKind::AttemptStarted => "attempt_started",
            EventKind::PhaseChanged => "phase_changed",
            EventKind::ExecutionPlanResolved => "execution_plan_resolved",
            EventKind::AttemptRetry => "attempt_retry",
            EventKind::AttemptFinished => "attempt_finished",
            EventKind::PartialSaved => "partial_saved",
            EventKind::TaskFinished => "task_finished",
            EventKind::TaskSkipped => "task_skipped",
            EventKind::SummaryStarted => "summary_started",
            EventKind::RunFinished => "run_finished",
            EventKind::ModelLimit => "model_limit",
            EventKind::Control => "control",
            EventKind::ImagesProgress => "images_progress",
            EventKind::Unknown => "unknown",
        }
    }
}

/// The phase an attempt is in (the `phase` field of a task's events, and the keys of
/// `progress.json` `current_phase_counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// The payload of `task_started`, `task_finished` and `task_skipped`: the task's place in the
/// stream, and how a finished task's attempts went (`severity`) or why a task did not run
/// (`reason`). Fields in the line's order (alphabetical).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskPayload {
    /// Position in the stream.
    #[serde(default)]
    pub index: usize,
    /// Why the task did not run (`task_skipped`: an issue code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Highest issue severity of its attempts (`task_finished`: [`severity_name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// Tasks in the stream.
    #[serde(default)]
    pub total: usize,
}

/// What a reader of `progress.json` (the run's live snapshot, rewritten as events arrive)
/// needs: the run's status and its task counters. The writer is the host's progress recorder;
/// its round-trip test reads every snapshot it writes back through this record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SnapshotHead {
    /// The run's status.
    pub status: crate::RunStatus,
    /// Selected tasks (`None` before the stream opened).
    pub total_tasks: Option<u64>,
    /// Published or reused tasks.
    pub finished_tasks: Option<u64>,
    /// Finished tasks that ran to the end.
    pub completed_tasks: Option<u64>,
    /// Finished tasks with a FATAL issue.
    pub failed_tasks: Option<u64>,
    /// Finished tasks with an ERROR issue.
    pub error_tasks: Option<u64>,
    /// Tasks running now.
    pub running_tasks: Option<u64>,
}

/// The file name of the live snapshot.
pub const PROGRESS_FILE: &str = "progress.json";
/// The file name of the event log.
pub const PROGRESS_EVENTS_FILE: &str = "progress.jsonl";

/// One line of `progress.jsonl` (and of a cluster job's events file): the event, its task
/// and the request identity — every key of upstream's event on every line (`null` when it
/// does not apply), as its readers expect. Borrowed when written, owned when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine<'a> {
    /// The run id.
    #[serde(default, borrow)]
    pub run_id: Cow<'a, str>,
    /// What happened.
    pub event: EventKind,
    /// Unix time in seconds.
    #[serde(default)]
    pub timestamp: f64,
    /// The task, for a task's events.
    #[serde(default, borrow)]
    pub task_id: Option<Cow<'a, str>>,
    /// Its category.
    #[serde(default, borrow)]
    pub category: Option<Cow<'a, str>>,
    /// The semantic attempt.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// The phase the event puts its task in.
    #[serde(default)]
    pub phase: Option<TaskPhase>,
    /// How a task or attempt ended, or the run's status (`run_finished`).
    #[serde(default, borrow)]
    pub status: Option<Cow<'a, str>>,
    /// The event's details.
    #[serde(default)]
    pub payload: Cow<'a, Value>,
    /// The request's name in its orchestration.
    #[serde(default, borrow)]
    pub request_name: Cow<'a, str>,
    /// The orchestration id.
    #[serde(default, borrow)]
    pub orchestration_id: Cow<'a, str>,
    /// The request's key.
    #[serde(default, borrow)]
    pub request_key: Cow<'a, str>,
    /// The request's position in its orchestration.
    #[serde(default)]
    pub request_index: Option<usize>,
}

impl EventLine<'_> {
    /// The outcome a task's or attempt's event records.
    pub fn outcome(&self) -> Option<TaskOutcome> {
        self.status.as_deref().and_then(TaskOutcome::parse)
    }

    /// The payload of a task's start or end ([`TaskPayload`]); empty when it has another
    /// shape.
    pub fn task_payload(&self) -> TaskPayload {
        TaskPayload::deserialize(self.payload.as_ref()).unwrap_or_default()
    }

    /// The line as an owned record (to keep past its buffer).
    pub fn into_owned(self) -> EventLine<'static> {
        let owned = |s: Cow<'_, str>| Cow::Owned(s.into_owned());
        EventLine {
            run_id: owned(self.run_id),
            event: self.event,
            timestamp: self.timestamp,
            task_id: self.task_id.map(owned),
            category: self.category.map(owned),
            attempt: self.attempt,
            phase: self.phase,
            status: self.status.map(owned),
            payload: Cow::Owned(self.payload.into_owned()),
            request_name: owned(self.request_name),
            orchestration_id: owned(self.orchestration_id),
            request_key: owned(self.request_key),
            request_index: self.request_index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for phase in TaskPhase::ALL {
            let value = serde_json::to_value(phase).unwrap();
            assert_eq!(value, phase.as_str());
            assert_eq!(TaskPhase::parse(phase.as_str()), Some(phase));
            assert_eq!(serde_json::from_value::<TaskPhase>(value).unwrap(), phase);
        }
        for outcome in [
            TaskOutcome::Completed,
            TaskOutcome::Failed,
            TaskOutcome::Skipped,
        ] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str());
        }
        let kind: EventKind = serde_json::from_value(json!("task_finished")).unwrap();
        assert_eq!(kind, EventKind::TaskFinished);
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        let newer: EventKind = serde_json::from_value(json!("task_paused")).unwrap();
        assert_eq!(newer, EventKind::Unknown);
    }

    #[test]
    fn a_line_round_trips_and_reads_borrowed() {
        let payload = json!({"index": 0, "total": 2, "severity": "none"});
        let line = EventLine {
            run_id: "r".into(),
            event: EventKind::TaskFinished,
            timestamp: 1.5,
            task_id: Some("t-1".into()),
            category: Some("math".into()),
            attempt: None,
            phase: None,
            status: Some(TaskOutcome::Completed.as_str().into()),
            payload: Cow::Borrowed(&payload),
            request_name: "".into(),
            orchestration_id: "o".into(),
            request_key: "k".into(),
            request_index: Some(0),
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(
            text.starts_with(
                r#"{"run_id":"r","event":"task_finished","timestamp":1.5,"task_id":"t-1""#
            ),
            "{text}"
        );
        let back: EventLine<'_> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.outcome(), Some(TaskOutcome::Completed));
        assert_eq!(back.into_owned(), line);
    }

    #[test]
    fn a_line_of_an_older_or_other_writer_reads_with_defaults() {
        let line: EventLine<'_> = serde_json::from_str(
            r#"{"event":"phase_changed","task_id":"a","phase":"run_harness","extra":1}"#,
        )
        .unwrap();
        assert_eq!(line.phase, Some(TaskPhase::RunHarness));
        assert_eq!(line.payload.as_ref(), &Value::Null);
        assert_eq!(line.outcome(), None);
    }
}
