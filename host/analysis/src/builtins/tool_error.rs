//! `ToolErrorAnalyzer` (this host's; upstream has no equivalent): tool results that report a
//! failure, read from the observations the harnesses write: terminus's
//! `{"tool","command","exit_code","timed_out","output"}` and `{"tool","error"}`, the
//! transcript harnesses' `{"tool_call_id","output","exit_code"?,"is_error"?}` (mini-swe-agent
//! adds `exception_info`), and chat-shaped `{"role":"tool","content":"exit_code: N\n..."}`.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo, JsonMap};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{skipped, Options};
use crate::py::{prefix, round};
use crate::trajectory::{steps, Step, ToolCall};
use crate::view::json_view;

json_view! {
    /// The fields read from a tool result (and `command` from a call's arguments).
    struct ToolFields {
        /// A call the harness skipped (`true`).
        skipped,
        /// The process exit code.
        exit_code,
        /// The process exit code, as some harnesses name it.
        returncode,
        /// Whether the command timed out.
        timed_out,
        /// Whether the tool reported an error.
        is_error,
        /// The tool's error message.
        error,
        /// An exception the harness caught.
        exception_info,
        /// The call this result answers.
        tool_call_id,
        /// The tool name.
        tool,
        /// The command run (a string or an argv list).
        command,
        /// The result text.
        output,
        /// The result text (chat-shaped).
        content,
        /// Standard output.
        stdout,
        /// Standard error.
        stderr,
    }
}

/// Flags an attempt where more than `threshold` (default `0.5`) of the tool results that
/// carry a status failed. A failure is a timeout (`timed_out`, or exit code 124 without a
/// `timed_out` field), a missing command (exit code 127 or `command not found`), a tool
/// error (`error`, `is_error: true`), an exception (`exception_info`) or another non-zero
/// exit code. Score: the failed share. `is_badcase: null` when no tool result carries a
/// status. Option `max_reported` (default `20`) caps `details.errors`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolErrorAnalyzer;

impl ToolErrorAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "ToolErrorAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect failed tool calls (non-zero exit codes, command not found, timeouts, tool \
             errors and exceptions) from the tool results in the trajectory.",
            category::BEHAVIOR,
            json!({"only_incorrect": false, "threshold": 0.5, "max_reported": 20}),
            &[
                ("error_types", "value_counts"),
                ("error_ratio", "numeric_stats"),
            ],
        )
    }
}

/// What one tool result says.
struct Status {
    exit_code: Option<i64>,
    failure: Option<&'static str>,
    message: String,
}

/// The text of an observation (its `output`, `content`, `stdout`+`stderr`, or itself).
fn text_of(obs: &Value) -> String {
    if let Value::String(s) = obs {
        return s.clone();
    }
    let fields = ToolFields::from(obs);
    for text in [fields.output(), fields.content()] {
        if let Some(s) = text.and_then(Value::as_str) {
            return s.to_string();
        }
    }
    [fields.stdout(), fields.stderr()]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The exit code in a rendered `exit_code: N ...` first line.
fn rendered_exit_code(text: &str) -> Option<i64> {
    let rest = text.trim_start().strip_prefix("exit_code:")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The first non-empty line of `text`, cut to 200 characters.
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("exit_code:") && *l != "[stderr]")
        .unwrap_or_default();
    prefix(line, 200)
}

/// Reads one observation; `None` when it carries no status (a plain note, a skipped call).
fn status(obs: &Value) -> Option<Status> {
    let fields = ToolFields::from(obs);
    if fields.skipped().and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let text = text_of(obs);
    let exit_code = fields
        .exit_code()
        .or_else(|| fields.returncode())
        .and_then(Value::as_i64)
        .or_else(|| rendered_exit_code(&text));
    let timed_out = fields.timed_out().and_then(Value::as_bool);
    let is_error = fields.is_error().and_then(Value::as_bool);
    let error = fields
        .error()
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty());
    let exception = fields
        .exception_info()
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty());
    if exit_code.is_none()
        && timed_out.is_none()
        && is_error.is_none()
        && error.is_none()
        && exception.is_none()
    {
        return None;
    }
    let nonzero = exit_code.is_some_and(|c| c != 0);
    let failure = if timed_out == Some(true)
        || (exit_code == Some(124) && timed_out.is_none())
        || text
            .lines()
            .next()
            .is_some_and(|l| l.contains("(timed out after"))
    {
        Some("timeout")
    } else if exit_code == Some(127) || (nonzero && text.contains("command not found")) {
        Some("command_not_found")
    } else if error.is_some() || is_error == Some(true) {
        Some("tool_error")
    } else if exception.is_some() {
        Some("exception")
    } else if nonzero {
        Some("nonzero_exit")
    } else {
        None
    };
    let message = error
        .or(exception)
        .map(|m| prefix(m.trim(), 200))
        .unwrap_or_else(|| first_line(&text));
    Some(Status {
        exit_code,
        failure,
        message,
    })
}

/// The call an observation answers: by `tool_call_id`, else the one at the same position.
fn answered<'a>(
    calls: &'a [ToolCall<'a>],
    obs: &Value,
    position: usize,
) -> Option<&'a ToolCall<'a>> {
    match ToolFields::from(obs).tool_call_id().and_then(Value::as_str) {
        Some(id) => calls.iter().find(|c| c.id == Some(id)),
        None => calls.get(position),
    }
}

/// The command a call or its observation names.
fn command_of(obs: &Value, call: Option<&ToolCall<'_>>) -> Option<String> {
    let from = |v: &Value| match ToolFields::from(v).command() {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    };
    from(obs).or_else(|| call.and_then(|c| from(&c.arguments)))
}

/// One failure for `details.errors`.
fn error_entry(
    step: &Step<'_>,
    obs: &Value,
    call: Option<&ToolCall<'_>>,
    st: &Status,
    kind: &str,
) -> Value {
    let mut entry = JsonMap::new();
    entry.insert("step_id".into(), step.id());
    let fields = ToolFields::from(obs);
    if let Some(id) = fields.tool_call_id().filter(|v| v.is_string()) {
        entry.insert("tool_call_id".into(), id.clone());
    }
    let tool = fields
        .tool()
        .and_then(Value::as_str)
        .or(call.map(|c| c.name));
    if let Some(tool) = tool {
        entry.insert("tool".into(), json!(tool));
    }
    if let Some(command) = command_of(obs, call) {
        entry.insert("command".into(), json!(prefix(&command, 300)));
    }
    entry.insert("type".into(), json!(kind));
    if let Some(code) = st.exit_code {
        entry.insert("exit_code".into(), json!(code));
    }
    entry.insert("message".into(), json!(st.message));
    Value::Object(entry)
}

impl Analyzer for ToolErrorAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let options = Options(&input.options);
        let threshold = options.f64_or("threshold", 0.5)?;
        let max_reported = options.usize_or("max_reported", 20)?;
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let mut total = 0usize;
        let mut errors = Vec::new();
        let mut kinds = Vec::new();
        let mut counts = JsonMap::new();
        for step in &steps {
            let calls = step.tool_calls();
            for (position, obs) in step.observations().iter().enumerate() {
                let Some(st) = status(obs) else {
                    continue;
                };
                total += 1;
                let Some(kind) = st.failure else {
                    continue;
                };
                let call = answered(&calls, obs, position);
                kinds.push(json!(kind));
                let n = counts.get(kind).and_then(Value::as_u64).unwrap_or(0);
                counts.insert(kind.into(), json!(n + 1));
                if errors.len() < max_reported {
                    errors.push(error_entry(step, obs, call, &st, kind));
                }
            }
        }
        if total == 0 {
            return Ok(skipped("no tool result with an exit status or error"));
        }
        let ratio = kinds.len() as f64 / total as f64;
        Ok(AnalysisOutcome {
            is_badcase: Some(ratio > threshold),
            details: json!({
                "total_tool_results": total,
                "error_count": kinds.len(),
                "error_ratio": round(ratio, 4),
                "error_counts": counts,
                "error_types": kinds,
                "errors": errors,
            }),
            score: Some(round(ratio, 4)),
            extra: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{bash, result, run, run_with, survives_odd_json};

    /// A terminus bash step with its observation.
    fn ran(id: u64, command: &str, exit_code: i64, timed_out: bool, output: &str) -> Value {
        let mut s = bash(id, command);
        s["observation"] = json!([{"tool_call_id": format!("c{id}-0"), "tool": "bash",
            "command": command, "exit_code": exit_code, "timed_out": timed_out,
            "output": output, "duration_ms": 5}]);
        s
    }

    #[test]
    fn failing_commands_trip_it() {
        let steps = vec![
            ran(
                1,
                "frobnicate",
                127,
                false,
                "[stderr]\nbash: frobnicate: command not found",
            ),
            ran(2, "sleep 100", 124, true, ""),
            ran(3, "ls", 0, false, "a\n"),
            ran(4, "false", 1, false, ""),
        ];
        let out = run(
            &ToolErrorAnalyzer,
            &ToolErrorAnalyzer::info(),
            result(steps),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.75));
        assert_eq!(
            out.details["error_types"],
            json!(["command_not_found", "timeout", "nonzero_exit"])
        );
        assert_eq!(
            out.details["error_counts"],
            json!({"command_not_found": 1, "timeout": 1, "nonzero_exit": 1})
        );
        assert_eq!(
            out.details["errors"][0],
            json!({"step_id": 1, "tool_call_id": "c1-0", "tool": "bash", "command": "frobnicate",
                   "type": "command_not_found", "exit_code": 127,
                   "message": "bash: frobnicate: command not found"})
        );
    }

    #[test]
    fn mostly_working_commands_do_not() {
        let steps = vec![
            ran(1, "ls", 0, false, ""),
            ran(2, "grep x f", 1, false, ""),
            ran(3, "pwd", 0, false, "/"),
        ];
        let info = ToolErrorAnalyzer::info();
        let out = run(&ToolErrorAnalyzer, &info, result(steps.clone()));
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(out.score, Some(0.3333));
        let out = run_with(
            &ToolErrorAnalyzer,
            &info,
            result(steps),
            json!({"threshold": 0.2, "max_reported": 0}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.details["errors"], json!([]));
    }

    #[test]
    fn other_observation_shapes() {
        let mut s = bash(1, "x");
        s["observation"] = json!([
            {"tool_call_id": "c1-0", "output": "boom", "is_error": true},
            {"role": "tool", "tool_call_id": "zz", "content": "exit_code: 2\n[stderr]\nno such file"},
            {"tool_call_id": "c1-0", "tool": "bash", "error": "error: `bash` needs a non-empty string argument `command`"},
            {"tool_call_id": "a", "output": "", "exit_code": 1, "exception_info": "Traceback ..."},
            {"tool_call_id": "c9", "tool": "done", "summary": "ok"},
            {"tool_call_id": "c9", "tool": "bash", "skipped": true},
            "plain text",
        ]);
        let out = run(
            &ToolErrorAnalyzer,
            &ToolErrorAnalyzer::info(),
            result(vec![s]),
        );
        assert_eq!(out.details["total_tool_results"], 4);
        assert_eq!(
            out.details["error_types"],
            json!(["tool_error", "nonzero_exit", "tool_error", "exception"])
        );
        assert_eq!(out.details["errors"][1]["message"], "no such file");
        assert_eq!(out.details["errors"][0]["command"], "x");
        let out = run(
            &ToolErrorAnalyzer,
            &ToolErrorAnalyzer::info(),
            result(vec![bash(1, "ls")]),
        );
        assert_eq!(out.is_badcase, None);
        survives_odd_json(&ToolErrorAnalyzer, &ToolErrorAnalyzer::info());
    }
}
