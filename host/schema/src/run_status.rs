//! The status of a run, as `run_info.json`, `progress.json` and the `run_finished` event
//! record it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a run is in its life: `created` → `running` → `summarizing` → a terminal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Recorded, nothing started yet.
    #[default]
    Created,
    /// Tasks are running.
    Running,
    /// Every task ended; the report is being computed.
    Summarizing,
    /// Finished; every task was run and scored.
    Completed,
    /// Finished with a task that ended in a FATAL issue or a failed evaluation, or the run
    /// itself failed.
    Failed,
    /// Stopped by the user (Ctrl-C, SIGTERM).
    Cancelled,
    /// Stopped by the orchestration deadline.
    TimedOut,
    /// A budget was used up: the tasks not run are `skipped` (`--reuse` with a larger budget
    /// runs them).
    StoppedByBudget,
    /// Non-agent failures passed `--fail-on-error`: the tasks not run are `skipped`.
    StoppedOnErrors,
    /// A status this host does not write (read from another tool's `run_info.json`).
    #[serde(other)]
    Unknown,
}

impl RunStatus {
    /// The persisted name (`timed_out`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Created => "created",
            RunStatus::Running => "running",
            RunStatus::Summarizing => "summarizing",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
            RunStatus::StoppedByBudget => "stopped_by_budget",
            RunStatus::StoppedOnErrors => "stopped_on_errors",
            RunStatus::Unknown => "unknown",
        }
    }

    /// Whether the run has ended (anything but created, running or summarizing).
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            RunStatus::Created | RunStatus::Running | RunStatus::Summarizing
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_statuses_are_kept_readable() {
        for status in [
            RunStatus::Created,
            RunStatus::Running,
            RunStatus::Summarizing,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::TimedOut,
            RunStatus::StoppedByBudget,
            RunStatus::StoppedOnErrors,
        ] {
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, status.as_str());
            assert_eq!(serde_json::from_value::<RunStatus>(json).unwrap(), status);
        }
        let other: RunStatus = serde_json::from_str("\"paused\"").unwrap();
        assert_eq!(other, RunStatus::Unknown);
        assert!(!RunStatus::Running.is_terminal());
        assert!(RunStatus::TimedOut.is_terminal());
    }
}
