//! The control socket's wire records (`ctl`, and the viewer's controls of a live run): what
//! a client sends over a running run's control socket (`progress.json` `control.socket`) and
//! what it gets back, one JSON line each way per connection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The socket's file name inside its private directory (a socket path has at most 107
/// bytes, so the directory is a short temp path, not the run directory).
pub const SOCKET_NAME: &str = "ctl.sock";

/// One control request. `run_dir` (absolute) names the request of the orchestration it is
/// about (`status`, `cancel`); `pause`, `resume` and `concurrency` steer the whole process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRequest {
    /// The run directory `ctl` was given, made absolute.
    pub run_dir: String,
    /// What to do.
    #[serde(flatten)]
    pub action: ControlAction,
}

/// What a control request asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ControlAction {
    /// Running tasks, counts, limits.
    Status,
    /// Sets the task concurrency from now on.
    Concurrency {
        /// Attempts at once (at least 1).
        n: u32,
    },
    /// No new task or model call starts.
    Pause,
    /// Undoes `pause`.
    Resume,
    /// Cancels tasks: running ones stop, pending ones are skipped (`cancelled_by_user`).
    Cancel {
        /// Task ids.
        tasks: Vec<String>,
    },
}

impl ControlAction {
    /// The action's name as recorded (`pause`, `concurrency`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            ControlAction::Status => "status",
            ControlAction::Concurrency { .. } => "concurrency",
            ControlAction::Pause => "pause",
            ControlAction::Resume => "resume",
            ControlAction::Cancel { .. } => "cancel",
        }
    }
}

/// The answer: `{"ok": true, ...}` with the action's fields, or `{"ok": false, "error"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlAnswer {
    /// Whether the action was done.
    pub ok: bool,
    /// Why not, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the action reports (`status`: the run's state; others: what changed).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

impl ControlAnswer {
    /// A done action reporting `detail`.
    pub fn done(detail: Value) -> Self {
        ControlAnswer {
            ok: true,
            error: None,
            detail,
        }
    }

    /// A refused action.
    pub fn refused(error: impl Into<String>) -> Self {
        ControlAnswer {
            ok: false,
            error: Some(error.into()),
            detail: Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_one_flat_json_object() {
        let request = ControlRequest {
            run_dir: "/r".into(),
            action: ControlAction::Cancel {
                tasks: vec!["q199".into()],
            },
        };
        let line = serde_json::to_value(&request).unwrap();
        assert_eq!(
            line,
            json!({"run_dir": "/r", "op": "cancel", "tasks": ["q199"]})
        );
        assert_eq!(
            serde_json::from_value::<ControlRequest>(line).unwrap(),
            request
        );
        let pause: ControlRequest =
            serde_json::from_value(json!({"run_dir": "/r", "op": "pause"})).unwrap();
        assert_eq!(pause.action, ControlAction::Pause);
    }
}
