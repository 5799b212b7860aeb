//! The controls of a live run (`POST /api/control`): the same actions as `ctl`, sent to the
//! run's control socket (`progress.json` `control.socket`) by the viewer, which runs as the
//! user who can use it. Loopback HTTP is open to every local user, so each request must
//! carry the viewer's secret (`x-agentcompass-token`; `view` prints it only to its owner, in
//! the URL it prints); a `--read-only` viewer has none and refuses every control request.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use agentcompass_schema::control::{ControlAction, ControlAnswer, ControlRequest};
use serde_json::Value;

use crate::error::ViewerError;

/// The header a control request carries the viewer's secret in.
pub const TOKEN_HEADER: &str = "x-agentcompass-token";

/// How long the viewer waits for the run's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `presented` is `secret`, compared in constant time.
pub fn token_matches(secret: &str, presented: Option<&str>) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let (a, b) = (secret.as_bytes(), presented.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The action of a control request's query: `op` = `status`, `pause`, `resume`,
/// `concurrency` (with `n`) or `cancel` (with `tasks`, comma-separated).
pub fn action(
    op: &str,
    n: Option<&str>,
    tasks: Option<&str>,
) -> Result<ControlAction, ViewerError> {
    let bad = |message: String| ViewerError::BadRequest(message);
    Ok(match op {
        "status" => ControlAction::Status,
        "pause" => ControlAction::Pause,
        "resume" => ControlAction::Resume,
        "concurrency" => {
            let text = n.ok_or_else(|| bad("concurrency needs `n`".into()))?;
            let n: u32 = text.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                bad(format!(
                    "n must be a whole number of at least 1, not {text:?}"
                ))
            })?;
            ControlAction::Concurrency { n }
        }
        "cancel" => {
            let tasks: Vec<String> = tasks
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect();
            if tasks.is_empty() {
                return Err(bad("cancel needs `tasks` (comma-separated task ids)".into()));
            }
            ControlAction::Cancel { tasks }
        }
        other => {
            return Err(bad(format!(
                "op must be status, pause, resume, concurrency or cancel, not {other:?}"
            )))
        }
    })
}

/// Sends `action` to the running run in `run_dir` (blocking) and returns its answer's
/// detail; a run that is not running is a conflict.
pub fn send(run_dir: &Path, action: ControlAction) -> Result<Value, ViewerError> {
    let not_running = || ViewerError::Conflict("the run is not running".to_string());
    let progress: Value = std::fs::read(run_dir.join("progress.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(not_running)?;
    let socket = progress["control"]["socket"]
        .as_str()
        .ok_or_else(not_running)?;
    let mut stream = UnixStream::connect(socket).map_err(|_| not_running())?;
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(|e| ViewerError::Internal(e.to_string()))?;
    let request = ControlRequest {
        run_dir: run_dir.display().to_string(),
        action,
    };
    let mut line =
        serde_json::to_vec(&request).map_err(|e| ViewerError::Internal(e.to_string()))?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|_| not_running())?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(|_| not_running())?;
    let answer: ControlAnswer = serde_json::from_str(&answer).map_err(|e| {
        ViewerError::Internal(format!("the run answered something else than JSON: {e}"))
    })?;
    match answer.ok {
        true => Ok(answer.detail),
        false => Err(ViewerError::Conflict(answer.error.unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_actions() {
        assert!(token_matches("abc", Some("abc")));
        assert!(!token_matches("abc", Some("abd")) && !token_matches("abc", Some("ab")));
        assert!(!token_matches("abc", None));
        assert_eq!(
            action("concurrency", Some("2"), None).unwrap(),
            ControlAction::Concurrency { n: 2 }
        );
        assert!(action("concurrency", Some("0"), None).is_err());
        assert_eq!(
            action("cancel", None, Some("q1, q2")).unwrap(),
            ControlAction::Cancel {
                tasks: vec!["q1".into(), "q2".into()]
            }
        );
        assert!(action("cancel", None, Some(" ")).is_err());
        assert!(action("stop", None, None).is_err());
    }
}
