//! A mini-swe-agent 2.x trajectory file (`-o traj.json`): `{"info": {"exit_status",
//! "submission", "model_stats"}, "messages": [...]}` where the messages are the chat
//! (`system`, `user`, `assistant`, `tool`, a final `exit`), each with `extra`: an assistant's
//! `actions` (`[{"command", "tool_call_id"}]`) and provider `response` (with `usage`), an
//! observation's `raw_output`, `returncode` and `exception_info`.

use serde_json::{json, Value};

use super::{
    finish_steps, observation, one_line, str_at, tool_call, u64_at, ReportedUsage, StepDraft,
    Transcript,
};

/// The exit status of a run that ended by submitting.
const SUBMITTED: &str = "Submitted";

/// The name given to mini's shell actions.
const SHELL_TOOL: &str = "bash";

/// Parses a mini-swe-agent trajectory file; `Err` (one line) when it is not JSON of that shape.
pub(crate) fn mini_trajectory(text: &str) -> Result<Transcript, String> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|err| format!("the mini-swe-agent trajectory is not JSON: {err}"))?;
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            "the file is not a mini-swe-agent trajectory: no `messages` array".to_string()
        })?;
    let mut reader = Reader::default();
    for message in messages {
        reader.message(message);
    }
    Ok(reader.finish(doc.get("info").unwrap_or(&Value::Null)))
}

/// The state while reading the messages.
#[derive(Debug, Default)]
struct Reader {
    /// The steps so far (one per assistant message).
    drafts: Vec<StepDraft>,
    /// Shell commands, in order.
    commands: Vec<String>,
    /// The system prompt.
    system_prompt: Option<String>,
    /// The task prompt (user text before the first assistant message).
    prompt: Option<String>,
    /// Summed per-response usage.
    usage: Option<ReportedUsage>,
    /// The last observation's exception, or else its last output line.
    last_detail: Option<String>,
    /// The `exit` message.
    exit: Option<Value>,
    /// Messages that were not objects.
    skipped: usize,
}

impl Reader {
    /// Handles one message.
    fn message(&mut self, message: &Value) {
        if !message.is_object() {
            self.skipped += 1;
            return;
        }
        match str_at(message, "role") {
            Some("system") if self.system_prompt.is_none() => {
                self.system_prompt = content_text(message.get("content"));
            }
            Some("user") if self.drafts.is_empty() => {
                if let Some(text) = content_text(message.get("content")) {
                    self.prompt = Some(match self.prompt.take() {
                        Some(before) => format!("{before}\n{text}"),
                        None => text,
                    });
                }
            }
            Some("assistant") => self.assistant(message),
            Some("user" | "tool") => self.observation(message),
            Some("exit") => self.exit = Some(message.clone()),
            _ => {}
        }
    }

    /// An assistant message: a step, its actions the tool calls and commands.
    fn assistant(&mut self, message: &Value) {
        let step = self.drafts.len() + 1;
        let mut draft = StepDraft {
            content: content_text(message.get("content")).into_iter().collect(),
            reasoning: str_at(message, "reasoning_content")
                .filter(|text| !text.is_empty())
                .map(str::to_string)
                .into_iter()
                .collect(),
            ..StepDraft::default()
        };
        if step == 1 {
            draft.system_prompt = self.system_prompt.clone();
            if let Some(prompt) = self.prompt.take() {
                draft.user_content = Value::String(prompt);
            }
        }
        let extra = message.get("extra").unwrap_or(&Value::Null);
        let actions = extra.get("actions").and_then(Value::as_array);
        for (index, action) in actions.into_iter().flatten().enumerate() {
            let command = str_at(action, "command").unwrap_or("");
            let id = action_id(action, step, index);
            self.commands.push(command.to_string());
            draft
                .tool_calls
                .push(tool_call(&id, SHELL_TOOL, json!({"command": command})));
        }
        if let Some(usage) = extra
            .get("response")
            .and_then(|response| response.get("usage"))
        {
            let prompt = u64_at(usage, "prompt_tokens");
            let completion = u64_at(usage, "completion_tokens");
            draft.prompt_tokens = prompt;
            draft.completion_tokens = completion;
            if prompt.is_some() || completion.is_some() {
                self.usage
                    .get_or_insert_with(ReportedUsage::default)
                    .add(prompt.unwrap_or(0), completion.unwrap_or(0));
            }
        }
        self.drafts.push(draft);
    }

    /// A `tool` message, or a `user` message after the first step: an observation of the
    /// last step.
    fn observation(&mut self, message: &Value) {
        if self.drafts.is_empty() {
            self.drafts.push(StepDraft::default());
        }
        let step = self.drafts.len();
        let Some(draft) = self.drafts.last_mut() else {
            return;
        };
        let extra = message.get("extra").unwrap_or(&Value::Null);
        let output = str_at(extra, "raw_output")
            .map(str::to_string)
            .or_else(|| content_text(message.get("content")))
            .unwrap_or_default();
        let id = str_at(message, "tool_call_id")
            .map(str::to_string)
            .or_else(|| {
                let nth = draft.tool_calls.get(draft.observations.len())?;
                str_at(nth, "id").map(str::to_string)
            })
            .unwrap_or_else(|| format!("action-{step}-{}", draft.observations.len()));
        let exit_code = extra.get("returncode").and_then(Value::as_i64);
        let mut obs = observation(&id, &output, exit_code, None);
        let exception = str_at(extra, "exception_info").filter(|text| !text.trim().is_empty());
        if let (Some(text), Value::Object(fields)) = (exception, &mut obs) {
            fields.insert("exception_info".into(), text.into());
        }
        draft.observations.push(obs);
        self.last_detail = exception
            .map(str::to_string)
            .or_else(|| last_line(&output).map(str::to_string))
            .or(self.last_detail.take());
    }

    /// The transcript, once every message is read.
    fn finish(self, info: &Value) -> Transcript {
        let exit_extra = self
            .exit
            .as_ref()
            .and_then(|exit| exit.get("extra"))
            .unwrap_or(&Value::Null);
        let exit_status = str_at(info, "exit_status").or_else(|| str_at(exit_extra, "exit_status"));
        let submission = str_at(info, "submission").or_else(|| str_at(exit_extra, "submission"));
        let mut warnings = Vec::new();
        if exit_status.is_none() {
            warnings.push("no exit status: the run did not finish".to_string());
        }
        match self.skipped {
            0 => {}
            1 => warnings.push("1 message was not a JSON object".to_string()),
            n => warnings.push(format!("{n} messages were not JSON objects")),
        }
        let failure = exit_status
            .filter(|status| *status != SUBMITTED)
            .map(|status| self.failure_line(status, exit_extra));
        let cost = info
            .get("model_stats")
            .and_then(|stats| stats.get("instance_cost"))
            .and_then(Value::as_f64);
        Transcript {
            steps: finish_steps(self.drafts),
            commands: self.commands,
            final_answer: submission
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_string),
            failure,
            warnings,
            reported_usage: self.usage.map(|usage| ReportedUsage {
                cost_usd: cost,
                ..usage
            }),
        }
    }

    /// "exit status X: <detail>", the detail being the exit's exception, the exit message's
    /// text, or the last observation's exception or last line.
    fn failure_line(&self, status: &str, exit_extra: &Value) -> String {
        let exit_text = self
            .exit
            .as_ref()
            .and_then(|exit| content_text(exit.get("content")));
        let detail = str_at(exit_extra, "exception_str")
            .filter(|text| !text.trim().is_empty())
            .map(str::to_string)
            .or(exit_text)
            .or_else(|| self.last_detail.clone());
        match detail.as_deref().and_then(last_line) {
            Some(line) => one_line(&format!("exit status {status}: {line}")),
            None => format!("exit status {status}"),
        }
    }
}

/// The id of the `index`th action of step `step`: its `tool_call_id`, else a made-up one
/// (text mode has no ids).
fn action_id(action: &Value, step: usize, index: usize) -> String {
    str_at(action, "tool_call_id")
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("action-{step}-{index}"), str::to_string)
}

/// A message's text: a non-empty string, or the text parts of an array.
fn content_text(content: Option<&Value>) -> Option<String> {
    let text = match content? {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| str_at(part, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// The last non-blank line of `text`.
fn last_line(text: &str) -> Option<&str> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
}
