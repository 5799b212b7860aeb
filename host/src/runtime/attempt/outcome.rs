//! How a phase's ending becomes the attempt's issue: one rule per phase instead of a copy of
//! the same `match` at every call.

use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    ExecutionIssue, IssuePhase, IssueSeverity, RunResult, TaskSpec,
};

use agentcompass_plugin_api::Error;

use crate::issue_codes::{self as codes, IssueCode};
use crate::runtime::phase::PhaseOutcome;

/// Why a phase stops the attempt.
#[derive(Debug)]
pub(super) enum Halt {
    /// The run was cancelled during the phase.
    Cancelled(IssuePhase),
    /// The phase failed or timed out: this issue says how.
    Issue(ExecutionIssue),
}

impl Halt {
    /// The issue recorded for this halt (a cancelled phase records `cancelled`).
    pub(super) fn issue(self) -> ExecutionIssue {
        match self {
            Halt::Cancelled(phase) => cancelled_issue(phase),
            Halt::Issue(issue) => issue,
        }
    }

    /// Whether the run was cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        matches!(self, Halt::Cancelled(_))
    }
}

/// What a failed or timed-out phase records.
pub(super) struct IssueRule {
    /// The issue's phase.
    pub(super) phase: IssuePhase,
    /// FATAL stops the attempt (retries apply); ERROR still scores it.
    pub(super) severity: IssueSeverity,
    /// The code of a failure (its message is the error's).
    pub(super) failed: IssueCode,
    /// The code of a watchdog timeout.
    pub(super) timed_out: IssueCode,
    /// The message of a watchdog timeout, given the watchdog.
    pub(super) timeout_message: fn(Duration) -> String,
}

impl IssueRule {
    /// The halt of a phase that failed with `error`.
    pub(super) fn failure(&self, error: Error) -> Halt {
        Halt::Issue(self.issue(self.failed, error.message))
    }

    fn issue(&self, code: IssueCode, message: String) -> ExecutionIssue {
        match self.severity {
            IssueSeverity::Fatal => code.fatal(self.phase, message),
            IssueSeverity::Error => code.error(self.phase, message),
            IssueSeverity::Warning => code.warning(self.phase, message),
        }
    }
}

impl<T> PhaseOutcome<T> {
    /// The phase's value, or why the attempt stops here under `rule`.
    pub(super) fn or_halt(self, rule: &IssueRule) -> Result<T, Halt> {
        match self {
            PhaseOutcome::Done(value) => Ok(value),
            PhaseOutcome::Cancelled => Err(Halt::Cancelled(rule.phase)),
            PhaseOutcome::Failed(e) => Err(rule.failure(e)),
            PhaseOutcome::TimedOut(limit) => Err(Halt::Issue(
                rule.issue(rule.timed_out, (rule.timeout_message)(limit)),
            )),
        }
    }
}

/// `seconds` of a watchdog, for messages (`30`).
pub(super) fn whole_seconds(limit: Duration) -> String {
    format!("{:.0}", limit.as_secs_f64())
}

/// The ERROR issue recorded when the run is cancelled during `phase`.
pub(super) fn cancelled_issue(phase: IssuePhase) -> ExecutionIssue {
    codes::CANCELLED.error(phase, "the run was cancelled")
}

/// A result carrying one issue (the attempt could not proceed).
pub(crate) fn failed(task: &TaskSpec, issue: ExecutionIssue) -> RunResult {
    let mut result = RunResult::new(task.task_id.clone());
    result.category = task.category.clone();
    result.push_issue(issue);
    result
}

/// Whether `result` carries a FATAL issue.
pub(super) fn has_fatal(result: &RunResult) -> bool {
    result
        .issues
        .iter()
        .any(|i| i.severity == IssueSeverity::Fatal)
}
