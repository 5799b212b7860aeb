//! The two tools offered to the model (`bash`, `done`), reading their arguments, and what
//! the model sees of a finished command.

use agentcompass_plugin_api::contracts::{ExecResult, ToolCall, ToolDef};
use serde_json::{json, Value};

use crate::text::truncate_middle;

/// The two tools offered to the model.
pub(crate) fn tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "bash".into(),
            description: "Run one bash command (`bash -c`) in the task environment and get its \
                          exit code and output. Each call starts a fresh shell."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to run"}
                },
                "required": ["command"]
            }),
        },
        ToolDef {
            name: "done".into(),
            description: "Declare the task complete. Call it once, after verifying your work."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {
                        "type": "string",
                        "description": "What you did, or the answer when the task asks for one"
                    }
                }
            }),
        },
    ]
}

/// The `command` argument of a `bash` call (arguments may arrive as raw JSON text).
pub(super) fn bash_command(call: &ToolCall) -> Option<String> {
    let parsed;
    let args = match &call.arguments {
        Value::String(raw) => {
            parsed = serde_json::from_str::<Value>(raw).ok()?;
            &parsed
        }
        other => other,
    };
    args.get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
}

/// The optional `summary` argument of a `done` call.
pub(super) fn done_summary(call: &ToolCall) -> Option<String> {
    let summary = match &call.arguments {
        Value::String(raw) => serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|v| v.get("summary").and_then(Value::as_str).map(str::to_string))
            .or_else(|| Some(raw.clone())),
        other => other
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    summary.filter(|s| !s.trim().is_empty())
}

/// What the model sees of a finished command.
pub(super) fn render_observation(
    outcome: &ExecResult,
    timeout: f64,
    max_chars: usize,
) -> (String, String) {
    let mut output = outcome.stdout.clone();
    if !outcome.stderr.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str("[stderr]\n");
        output.push_str(&outcome.stderr);
    }
    let output = truncate_middle(&output, max_chars);
    let status = if outcome.timed_out {
        format!(
            "exit_code: {} (timed out after {timeout}s)",
            outcome.returncode
        )
    } else {
        format!("exit_code: {}", outcome.returncode)
    };
    let text = if output.is_empty() {
        format!("{status}\n(no output)")
    } else {
        format!("{status}\n{output}")
    };
    (text, output)
}
