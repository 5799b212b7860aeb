//! Claude Code and Qwen Code `stream-json` stdout: one JSON object a line — `system` (`init`,
//! Claude's `api_retry`), `assistant` (a message, possibly split over several lines with the
//! same `message.id`), `user` (tool results), `result` (the final text, error flag and usage);
//! Qwen also prints `stream_event` lines, which are ignored.
//!
//! A line with a `parent_tool_use_id` belongs to a subagent, started by that tool call (Claude
//! Code's `Agent`/`Task` tool; a subagent's own subagents name a call of theirs): its lines
//! make a transcript of their own, kept as `subagent.steps` on the observation answering the
//! call that started it (one is added when the call has no result yet).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{
    json_lines, observation, one_line, skipped_warning, str_at, tool_call, u64_at, ReportedUsage,
    StepDraft, Transcript,
};

/// Tool names whose `command` argument is a shell command (Claude Code, Qwen Code).
const SHELL_TOOLS: [&str; 2] = ["Bash", "run_shell_command"];

/// Parses `stream-json` stdout of Claude Code or Qwen Code. Never fails.
pub(crate) fn stream_json(text: &str) -> Transcript {
    let (lines, skipped) = json_lines(text);
    let mut parser = Parser::default();
    for line in &lines {
        parser.line(line);
    }
    parser.finish(skipped)
}

/// The state while reading the lines.
#[derive(Debug, Default)]
struct Parser {
    /// The steps so far.
    drafts: Vec<StepDraft>,
    /// Shell commands, in order.
    commands: Vec<String>,
    /// Tool call id -> (step index, tool name).
    calls: HashMap<String, (usize, String)>,
    /// The task prompt, when a user text came before the first step.
    prompt: Option<String>,
    /// The last `result` line.
    result: Option<Value>,
    /// `system/api_retry` lines seen, and the last one.
    retries: (usize, Option<Value>),
    /// Subagents by the tool call that started them, in the order they first spoke.
    subagents: Vec<(String, Parser)>,
}

impl Parser {
    /// Handles one line: a subagent's goes to its transcript.
    fn line(&mut self, line: &Map<String, Value>) {
        match line.get("parent_tool_use_id").and_then(Value::as_str) {
            Some(parent) if !parent.is_empty() => self.subagent_line(parent, line),
            _ => self.own_line(line),
        }
    }

    /// A line of the subagent started by call `parent`: of a subagent of this agent's when
    /// one of them made that call, else of this agent's own.
    fn subagent_line(&mut self, parent: &str, line: &Map<String, Value>) {
        if !self.calls.contains_key(parent) {
            if let Some((_, child)) = self
                .subagents
                .iter_mut()
                .find(|(_, child)| child.owns_call(parent))
            {
                child.subagent_line(parent, line);
                return;
            }
        }
        let index = match self.subagents.iter().position(|(id, _)| id == parent) {
            Some(index) => index,
            None => {
                self.subagents.push((parent.to_string(), Parser::default()));
                self.subagents.len() - 1
            }
        };
        self.subagents[index].1.own_line(line);
    }

    /// Whether this agent or one of its subagents made call `id`.
    fn owns_call(&self, id: &str) -> bool {
        self.calls.contains_key(id) || self.subagents.iter().any(|(_, child)| child.owns_call(id))
    }

    /// Handles one line of this agent's own.
    fn own_line(&mut self, line: &Map<String, Value>) {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        let message = line.get("message").unwrap_or(&Value::Null);
        match kind {
            "assistant" => self.assistant(message),
            "user" => self.user(message),
            "result" => self.result = Some(Value::Object(line.clone())),
            "system" if line.get("subtype").and_then(Value::as_str) == Some("api_retry") => {
                self.retries.0 += 1;
                self.retries.1 = Some(Value::Object(line.clone()));
            }
            _ => {}
        }
    }

    /// An `assistant` line: its blocks join the step of the same message id (or a new step).
    fn assistant(&mut self, message: &Value) {
        let index = self.step_for_message(str_at(message, "id"));
        if let Some(usage) = message.get("usage") {
            if let Some((prompt, completion)) = usage_tokens(usage) {
                let draft = &mut self.drafts[index];
                draft.prompt_tokens = Some(prompt);
                draft.completion_tokens = Some(completion);
            }
        }
        match message.get("content") {
            Some(Value::String(text)) => self.drafts[index].content.push(text.clone()),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    self.assistant_block(index, block);
                }
            }
            _ => {}
        }
    }

    /// The index of the step for message `id`: the one already holding it, else a new one.
    fn step_for_message(&mut self, id: Option<&str>) -> usize {
        if let Some(id) = id {
            if let Some(index) = self
                .drafts
                .iter()
                .rposition(|draft| draft.message_id.as_deref() == Some(id))
            {
                return index;
            }
        }
        self.new_step(id.map(str::to_string))
    }

    /// Starts a step; the first one gets the task prompt.
    fn new_step(&mut self, message_id: Option<String>) -> usize {
        let mut draft = StepDraft {
            message_id,
            ..StepDraft::default()
        };
        if self.drafts.is_empty() {
            if let Some(prompt) = self.prompt.take() {
                draft.user_content = Value::String(prompt);
            }
        }
        self.drafts.push(draft);
        self.drafts.len() - 1
    }

    /// One content block of an assistant message.
    fn assistant_block(&mut self, index: usize, block: &Value) {
        match str_at(block, "type") {
            Some("text") => {
                if let Some(text) = str_at(block, "text") {
                    self.drafts[index].content.push(text.to_string());
                }
            }
            Some("thinking") => {
                if let Some(text) = str_at(block, "thinking") {
                    self.drafts[index].reasoning.push(text.to_string());
                }
            }
            Some("tool_use") => self.tool_use(index, block),
            _ => {}
        }
    }

    /// A `tool_use` block: a tool call (once per id), and a command for a shell tool.
    fn tool_use(&mut self, index: usize, block: &Value) {
        let id = str_at(block, "id").unwrap_or("");
        if !id.is_empty() && self.calls.contains_key(id) {
            return;
        }
        let name = str_at(block, "name").unwrap_or("");
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        if SHELL_TOOLS.contains(&name) {
            if let Some(command) = str_at(&input, "command") {
                self.commands.push(command.to_string());
            }
        }
        self.drafts[index]
            .tool_calls
            .push(tool_call(id, name, input));
        if !id.is_empty() {
            self.calls.insert(id.to_string(), (index, name.to_string()));
        }
    }

    /// A `user` line: tool results go to their calls' steps; text before any step is the
    /// task prompt.
    fn user(&mut self, message: &Value) {
        match message.get("content") {
            Some(Value::String(text)) => self.user_text(text),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match str_at(block, "type") {
                        Some("tool_result") => self.tool_result(block),
                        Some("text") => self.user_text(str_at(block, "text").unwrap_or("")),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// User text: kept as the task prompt when no step has started yet.
    fn user_text(&mut self, text: &str) {
        if self.drafts.is_empty() && !text.is_empty() {
            match &mut self.prompt {
                Some(prompt) => {
                    prompt.push('\n');
                    prompt.push_str(text);
                }
                None => self.prompt = Some(text.to_string()),
            }
        }
    }

    /// A `tool_result` block: an observation on the step of its call (else the last step).
    fn tool_result(&mut self, block: &Value) {
        let id = str_at(block, "tool_use_id").unwrap_or("");
        let output = result_text(block.get("content"));
        let is_error = block.get("is_error").and_then(Value::as_bool);
        let (index, name) = match self.calls.get(id) {
            Some((index, name)) => (*index, name.as_str()),
            None if !self.drafts.is_empty() => (self.drafts.len() - 1, ""),
            None => (self.new_step(None), ""),
        };
        let exit_code = exit_code(name, &output, is_error);
        let obs = observation(id, &output, exit_code, is_error);
        self.drafts[index].observations.push(obs);
    }

    /// Each subagent's steps on the observation answering the call that started it.
    fn attach_subagents(&mut self) {
        for (call, child) in std::mem::take(&mut self.subagents) {
            let steps = child.finish(0).steps;
            if steps.is_empty() {
                continue;
            }
            let steps = serde_json::to_value(&steps).unwrap_or(Value::Null);
            let index = match self.calls.get(&call) {
                Some((index, _)) => *index,
                None if !self.drafts.is_empty() => self.drafts.len() - 1,
                None => continue,
            };
            let observations = &mut self.drafts[index].observations;
            let answer = observations
                .iter_mut()
                .find(|obs| str_at(obs, "tool_call_id") == Some(call.as_str()));
            let subagent = Value::Object(Map::from_iter([("steps".to_string(), steps)]));
            match answer.and_then(Value::as_object_mut) {
                Some(obs) => {
                    obs.insert("subagent".to_string(), subagent);
                }
                None => observations.push(Value::Object(Map::from_iter([
                    ("tool_call_id".to_string(), Value::from(call)),
                    ("subagent".to_string(), subagent),
                ]))),
            }
        }
    }

    /// The transcript, once every line is read.
    fn finish(mut self, skipped: usize) -> Transcript {
        self.attach_subagents();
        let mut warnings = Vec::new();
        if let Some(summary) = retry_summary(self.retries.0, self.retries.1.as_ref()) {
            warnings.push(summary);
        }
        if self.result.is_none() && (!self.drafts.is_empty() || skipped > 0) {
            warnings.push("no result line: the run did not finish".to_string());
        }
        warnings.extend(skipped_warning(skipped));
        let result = self.result.unwrap_or(Value::Null);
        let failed = result.get("is_error").and_then(Value::as_bool) == Some(true);
        Transcript {
            steps: super::finish_steps(self.drafts),
            commands: self.commands,
            final_answer: (!failed)
                .then(|| str_at(&result, "result").filter(|text| !text.trim().is_empty()))
                .flatten()
                .map(str::to_string),
            failure: failed.then(|| failure_line(&result)),
            warnings,
            reported_usage: reported_usage(&result),
        }
    }
}

/// (prompt, completion) tokens of a usage object. Anthropic-shaped usage (no
/// `total_tokens`) counts cached input apart from `input_tokens`, so the cache counts are
/// added; Qwen's usage (with `total_tokens`) already includes them in `input_tokens`.
fn usage_tokens(usage: &Value) -> Option<(u64, u64)> {
    let input = u64_at(usage, "input_tokens")?;
    let output = u64_at(usage, "output_tokens").unwrap_or(0);
    let cached = if usage.get("total_tokens").is_some() {
        0
    } else {
        u64_at(usage, "cache_creation_input_tokens")
            .unwrap_or(0)
            .saturating_add(u64_at(usage, "cache_read_input_tokens").unwrap_or(0))
    };
    Some((input.saturating_add(cached), output))
}

/// The text of a tool result's content: a string, or the text blocks of an array.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| str_at(block, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The exit code a shell tool's result states: Qwen's `Exit Code: N` line, or the
/// `Exit code N` that starts a failed Claude `Bash` result.
fn exit_code(tool: &str, output: &str, is_error: Option<bool>) -> Option<i64> {
    match tool {
        "run_shell_command" => output
            .lines()
            .find_map(|line| line.strip_prefix("Exit Code: "))
            .and_then(|code| code.trim().parse().ok()),
        "Bash" if is_error == Some(true) => output
            .strip_prefix("Exit code ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|code| code.parse().ok()),
        _ => None,
    }
}

/// The one-line failure of an `is_error` result: its `result` text, else `error.message`,
/// else its subtype.
fn failure_line(result: &Value) -> String {
    let text = str_at(result, "result")
        .filter(|text| !text.trim().is_empty())
        .or_else(|| {
            result
                .get("error")
                .and_then(|error| str_at(error, "message"))
        })
        .or_else(|| str_at(result, "subtype"))
        .unwrap_or("the agent reported an error");
    one_line(text)
}

/// The agent's usage totals from the `result` line.
fn reported_usage(result: &Value) -> Option<ReportedUsage> {
    let (input, output) = result.get("usage").and_then(usage_tokens)?;
    Some(ReportedUsage {
        input_tokens: input,
        output_tokens: output,
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
    })
}

/// One warning for `count` API retries, naming the last one.
fn retry_summary(count: usize, last: Option<&Value>) -> Option<String> {
    let last = last?;
    let attempt = u64_at(last, "attempt").map_or("?".to_string(), |n| n.to_string());
    let max = u64_at(last, "max_retries").map_or("?".to_string(), |n| n.to_string());
    let status = last
        .get("error_status")
        .filter(|status| !status.is_null())
        .map_or("unknown".to_string(), |status| match status.as_str() {
            Some(text) => text.to_string(),
            None => status.to_string(),
        });
    let plural = if count == 1 { "" } else { "s" };
    Some(format!(
        "{count} API retry notice{plural} (last: attempt {attempt}/{max}, error status {status})"
    ))
}

#[cfg(test)]
mod subagent_tests {
    use serde_json::json;

    use super::stream_json;

    #[test]
    fn a_subagents_lines_are_its_own_steps_on_the_call_that_started_it() {
        let lines = [
            json!({"type": "user", "message": {"content": "Count the files."}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [
                {"type": "tool_use", "id": "t1", "name": "Agent",
                 "input": {"description": "count", "prompt": "SUB: count files"}}]}}),
            json!({"type": "assistant", "parent_tool_use_id": "t1", "message": {"id": "s1",
                "content": [{"type": "tool_use", "id": "b1", "name": "Bash",
                             "input": {"command": "ls | wc -l"}}],
                "usage": {"input_tokens": 50, "output_tokens": 5}}}),
            json!({"type": "user", "parent_tool_use_id": "t1", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "b1", "content": "3"}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "There are 3 files."}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [
                {"type": "text", "text": "3 files."}]}}),
            json!({"type": "result", "result": "3 files.", "is_error": false}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let transcript = stream_json(&text);
        assert_eq!(transcript.steps.len(), 2, "{:#?}", transcript.steps);
        // The subagent's command is not the main agent's.
        assert!(transcript.commands.is_empty(), "{:?}", transcript.commands);
        let answer = &transcript.steps[0].observation[0];
        assert_eq!(answer["tool_call_id"], json!("t1"));
        assert_eq!(answer["output"], json!("There are 3 files."));
        let sub = answer["subagent"]["steps"].as_array().unwrap();
        assert_eq!(sub.len(), 1);
        assert_eq!(
            sub[0]["assistant_content"]["tool_calls"][0]["name"],
            json!("Bash")
        );
        assert_eq!(sub[0]["observation"][0]["output"], json!("3"));
        assert_eq!(sub[0]["metric"]["prompt_tokens_len"], json!(50));
    }
}
