//! `codex exec --json` stdout: `thread.started`, `turn.started` / `turn.completed` (usage) /
//! `turn.failed`, `item.started` / `item.updated` / `item.completed` (items `command_execution`,
//! `agent_message`, `reasoning`, `error`, `function_call`) and top-level `error` events.
//!
//! The model calls are not visible one by one, so steps are rebuilt from the items: consecutive
//! tool items (with the reasoning before them) share one step; an `agent_message` is the
//! content that closes a step (a new one when the current step already has tool calls, since
//! the message then answers their results); a turn end closes the step too.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{
    arguments_value, finish_steps, json_lines, observation, one_line, skipped_warning, str_at,
    tool_call, u64_at, ReportedUsage, StepDraft, Transcript,
};

/// The prefix of a top-level `error` event that only announces a stream retry.
const RECONNECT_PREFIX: &str = "Reconnecting";

/// Parses `codex exec --json` stdout. Never fails.
pub(crate) fn codex_events(text: &str) -> Transcript {
    let (lines, skipped) = json_lines(text);
    let mut log = EventLog::default();
    for line in &lines {
        log.event(line);
    }
    log.finish(skipped)
}

/// One entry of the run, in order.
#[derive(Debug, Clone, Copy)]
enum Entry {
    /// The item in this slot of [`EventLog::items`].
    Item(usize),
    /// A turn ended (completed or failed).
    TurnEnd,
}

/// An item as last seen.
#[derive(Debug, Clone)]
struct ItemSlot {
    /// The latest version of the item.
    item: Value,
    /// Whether an `item.completed` event carried it.
    completed: bool,
}

/// The events, gathered before the steps are built.
#[derive(Debug, Default)]
struct EventLog {
    /// Items and turn ends, in order of first appearance.
    entries: Vec<Entry>,
    /// The items, one slot per id.
    items: Vec<ItemSlot>,
    /// Item id -> slot.
    by_id: HashMap<String, usize>,
    /// Summed `turn.completed` usage.
    usage: Option<ReportedUsage>,
    /// The last `turn.failed` message.
    turn_failure: Option<String>,
    /// The last fatal top-level `error` message.
    fatal_error: Option<String>,
    /// Reconnect notices seen, and the last one.
    reconnects: (usize, Option<String>),
}

impl EventLog {
    /// Handles one event.
    fn event(&mut self, line: &Map<String, Value>) {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "item.started" | "item.updated" | "item.completed" => {
                if let Some(item) = line.get("item").filter(|item| item.is_object()) {
                    self.item(item, kind == "item.completed");
                }
            }
            "turn.completed" => {
                if let Some(usage) = line.get("usage") {
                    self.usage.get_or_insert_with(ReportedUsage::default).add(
                        u64_at(usage, "input_tokens").unwrap_or(0),
                        u64_at(usage, "output_tokens").unwrap_or(0),
                    );
                }
                self.entries.push(Entry::TurnEnd);
            }
            "turn.failed" => {
                let message = line.get("error").and_then(|error| str_at(error, "message"));
                self.turn_failure = Some(message.unwrap_or("turn failed").to_string());
                self.entries.push(Entry::TurnEnd);
            }
            "error" => self.error_event(line.get("message").and_then(Value::as_str)),
            _ => {}
        }
    }

    /// An item event: the first sighting takes a slot; later ones update it until completed.
    fn item(&mut self, item: &Value, completed: bool) {
        let id = str_at(item, "id").filter(|id| !id.is_empty());
        if let Some(slot) = id.and_then(|id| self.by_id.get(id).copied()) {
            let known = &mut self.items[slot];
            if !known.completed {
                known.item = item.clone();
                known.completed = completed;
            }
            return;
        }
        let slot = self.items.len();
        self.items.push(ItemSlot {
            item: item.clone(),
            completed,
        });
        if let Some(id) = id {
            self.by_id.insert(id.to_string(), slot);
        }
        self.entries.push(Entry::Item(slot));
    }

    /// A top-level `error` event: a reconnect notice, or a fatal error.
    fn error_event(&mut self, message: Option<&str>) {
        let message = message.unwrap_or("error").to_string();
        if message.starts_with(RECONNECT_PREFIX) {
            self.reconnects.0 += 1;
            self.reconnects.1 = Some(message);
        } else {
            self.fatal_error = Some(message);
        }
    }

    /// The transcript, once every event is read.
    fn finish(self, skipped: usize) -> Transcript {
        let mut build = Builder::default();
        for entry in &self.entries {
            match entry {
                Entry::TurnEnd => build.close(),
                Entry::Item(slot) => build.item(&self.items[*slot]),
            }
        }
        build.close();
        let mut warnings = build.warnings;
        if let (count, Some(last)) = &self.reconnects {
            let plural = if *count == 1 { "" } else { "s" };
            warnings.push(format!(
                "{count} reconnect notice{plural} (last: {})",
                one_line(last)
            ));
        }
        warnings.extend(skipped_warning(skipped));
        Transcript {
            steps: finish_steps(build.drafts),
            commands: build.commands,
            final_answer: build.final_answer,
            failure: self
                .turn_failure
                .or(self.fatal_error)
                .map(|message| one_line(&message)),
            warnings,
            reported_usage: self.usage,
        }
    }
}

/// Steps rebuilt from the items.
#[derive(Debug, Default)]
struct Builder {
    /// Finished steps.
    drafts: Vec<StepDraft>,
    /// The step being filled.
    current: StepDraft,
    /// Shell commands, in order.
    commands: Vec<String>,
    /// The last agent message.
    final_answer: Option<String>,
    /// Error items, in order.
    warnings: Vec<String>,
}

impl Builder {
    /// Ends the current step (if it has anything).
    fn close(&mut self) {
        let draft = std::mem::take(&mut self.current);
        if !draft.is_empty() {
            self.drafts.push(draft);
        }
    }

    /// Adds one item.
    fn item(&mut self, slot: &ItemSlot) {
        let item = &slot.item;
        match str_at(item, "type") {
            Some("reasoning") => {
                if !self.current.tool_calls.is_empty() || !self.current.content.is_empty() {
                    self.close();
                }
                if let Some(text) = str_at(item, "text") {
                    self.current.reasoning.push(text.to_string());
                }
            }
            Some("agent_message") => {
                if !self.current.tool_calls.is_empty() {
                    self.close();
                }
                let text = str_at(item, "text").unwrap_or("").to_string();
                self.current.content.push(text.clone());
                self.final_answer = Some(text);
                self.close();
            }
            Some("command_execution") => self.command(slot),
            Some("mcp_tool_call") => self.mcp_call(slot),
            Some("function_call") => self.function_call(item),
            Some("error") => {
                let message = str_at(item, "message").unwrap_or("error item");
                self.warnings.push(one_line(message));
            }
            _ => {}
        }
    }

    /// A `command_execution` item: a tool call and its result (exit code only once completed).
    fn command(&mut self, slot: &ItemSlot) {
        let item = &slot.item;
        let id = str_at(item, "id").unwrap_or("");
        let shell_line = str_at(item, "command").unwrap_or("");
        let command = unwrap_shell(shell_line);
        self.commands.push(command.clone());
        self.current.tool_calls.push(tool_call(
            id,
            "command_execution",
            json!({"command": command, "shell_line": shell_line}),
        ));
        let output = str_at(item, "aggregated_output").unwrap_or("");
        let (exit_code, is_error) = if slot.completed {
            let is_error = match str_at(item, "status") {
                Some("completed") => Some(false),
                Some("failed" | "declined") => Some(true),
                _ => None,
            };
            (item.get("exit_code").and_then(Value::as_i64), is_error)
        } else {
            (None, None)
        };
        self.current
            .observations
            .push(observation(id, output, exit_code, is_error));
    }

    /// An `mcp_tool_call` item: a call of an MCP server's tool, named `mcp__<server>__<tool>`
    /// as Claude Code names it, with the text of its result (or its error) once completed.
    fn mcp_call(&mut self, slot: &ItemSlot) {
        let item = &slot.item;
        let id = str_at(item, "id").unwrap_or("");
        let name = format!(
            "mcp__{}__{}",
            str_at(item, "server").unwrap_or(""),
            str_at(item, "tool").unwrap_or("")
        );
        let arguments = item.get("arguments").cloned().unwrap_or(Value::Null);
        self.current
            .tool_calls
            .push(tool_call(id, &name, arguments));
        if !slot.completed {
            return;
        }
        let texts: Vec<&str> = item
            .pointer("/result/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| str_at(block, "text"))
            .collect();
        let error = item
            .get("error")
            .filter(|e| !e.is_null())
            .map(|e| str_at(e, "message").map_or_else(|| e.to_string(), str::to_string));
        let failed = error.is_some() || str_at(item, "status") == Some("failed");
        let output = error.unwrap_or_else(|| texts.join("\n"));
        self.current
            .observations
            .push(observation(id, &output, None, Some(failed)));
    }

    /// A `function_call` item: a tool call (an `exec_command` one's `cmd` is a command), with
    /// its `output` as the observation when the item has one.
    fn function_call(&mut self, item: &Value) {
        let id = str_at(item, "call_id")
            .or_else(|| str_at(item, "id"))
            .unwrap_or("");
        let name = str_at(item, "name").unwrap_or("");
        let arguments = arguments_value(item.get("arguments"));
        if name == "exec_command" {
            if let Some(cmd) = str_at(&arguments, "cmd") {
                self.commands.push(cmd.to_string());
            }
        }
        self.current.tool_calls.push(tool_call(id, name, arguments));
        if let Some(output) = str_at(item, "output") {
            self.current
                .observations
                .push(observation(id, output, None, None));
        }
    }
}

/// The command the agent gave, without the shell Codex wraps it in: `/bin/bash -lc '<cmd>'`
/// (any `sh`/`bash`/`zsh` with `-c` or `-lc`) becomes `<cmd>`; anything else stays as it is.
fn unwrap_shell(line: &str) -> String {
    match shlex::split(line).as_deref() {
        Some([shell, flag, command])
            if ["sh", "bash", "zsh"]
                .iter()
                .any(|name| shell == name || shell.ends_with(&format!("/{name}")))
                && (flag == "-c" || flag == "-lc") =>
        {
            command.clone()
        }
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod mcp_tests {
    use serde_json::json;

    #[test]
    fn an_mcp_tool_call_is_a_step_with_its_server_tool_arguments_and_result() {
        let item = |event: &str, status: &str, result: serde_json::Value| {
            json!({"type": event, "item": {"id": "item_1", "type": "mcp_tool_call",
                   "server": "tools", "tool": "lookup", "arguments": {"key": "alpha"},
                   "result": result, "error": null, "status": status}})
        };
        let text = [
            json!({"type": "thread.started", "thread_id": "t"}),
            json!({"type": "turn.started"}),
            item("item.started", "in_progress", json!(null)),
            item(
                "item.completed",
                "completed",
                json!({"content": [{"type": "text", "text": "value-of-alpha"}]}),
            ),
            json!({"type": "item.completed", "item": {"id": "m", "type": "agent_message",
                   "text": "done"}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
        ]
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\n");
        let transcript = super::codex_events(&text);
        let step = &transcript.steps[0];
        assert_eq!(
            step.assistant_content.tool_calls,
            json!([{"id": "item_1", "name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}])
        );
        assert_eq!(step.observation[0]["output"], json!("value-of-alpha"));
        assert_eq!(step.observation[0]["is_error"], json!(false));
    }
}
