//! An ATIF trajectory's training rows, built as Harbor 0.25's `traces_utils` builds them
//! (`extract_conversations_from_trajectory`, `_extract_single_episode_conversation`): one row
//! per agent step not copied from an earlier context, holding every step up to it — system
//! and user messages as `user` (the tool definitions embedded before the first system
//! message as `<tools>` JSON), agent steps as `assistant` (`<think>reasoning</think>`, the
//! message, one `<tool_call>` JSON block per call), and the observations of every agent step
//! but the episode's last as a `user` message. JSON is written as Python's `json.dumps`
//! writes it (`", "` and `": "` between items), so the rows are Harbor's byte for byte.

use agentcompass_schema::atif::{Source, Step, Trajectory};
use agentcompass_schema::traces::{TraceMessage, TraceRow};
use serde::Serialize;
use serde_json::Value;

/// What every row of an attempt shares.
pub(super) struct Meta<'a> {
    pub(super) run_id: &'a str,
    pub(super) task: &'a str,
    pub(super) trial_name: &'a str,
    pub(super) date: &'a str,
    pub(super) result: Option<String>,
    pub(super) reward: Option<f64>,
    /// The run's model, when the trajectory names none (Harbor falls back to the trial's).
    pub(super) model: Option<&'a str>,
}

/// Python's default `json.dumps` separators; with `indent`, `json.dumps(..., indent=2)`.
struct PythonFormatter {
    indent: Option<serde_json::ser::PrettyFormatter<'static>>,
}

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.begin_array(w),
            None => w.write_all(b"["),
        }
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.end_array(w),
            None => w.write_all(b"]"),
        }
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.begin_array_value(w, first),
            None if first => Ok(()),
            None => w.write_all(b", "),
        }
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.end_array_value(w),
            None => Ok(()),
        }
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.begin_object(w),
            None => w.write_all(b"{"),
        }
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.end_object(w),
            None => w.write_all(b"}"),
        }
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.begin_object_key(w, first),
            None if first => Ok(()),
            None => w.write_all(b", "),
        }
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.indent {
            Some(p) => p.end_object_value(w),
            None => Ok(()),
        }
    }
}

/// `value` as Python's `json.dumps(value, ensure_ascii=False[, indent=2])`.
fn python_json<T: Serialize>(value: &T, indented: bool) -> String {
    let formatter = PythonFormatter {
        indent: indented.then(|| serde_json::ser::PrettyFormatter::with_indent(b"  ")),
    };
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    if value.serialize(&mut serializer).is_err() {
        return String::new();
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// Harbor's `normalize_message_content`: a string as it is, a list's first part's text, any
/// other value as JSON.
fn message_text(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Array(parts) => match parts.first().and_then(|p| p.get("text")) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => python_json(other, false),
            None => python_json(content, false),
        },
        other => python_json(other, false),
    }
}

#[derive(Serialize)]
struct CallBlock<'a> {
    name: &'a str,
    arguments: &'a serde_json::Map<String, Value>,
}

/// An agent step as the assistant's message.
fn assistant_text(step: &Step) -> String {
    let mut parts = Vec::new();
    if let Some(reasoning) = step.reasoning_content.as_deref().filter(|r| !r.is_empty()) {
        parts.push(format!("<think>{reasoning}</think>"));
    }
    let mut message = message_text(&step.message);
    if !message.is_empty() {
        if message.contains("</think>") && !message.contains("<think>") {
            message.insert_str(0, "<think>");
        }
        parts.push(message);
    }
    for call in step.tool_calls.iter().flatten() {
        let block = CallBlock {
            name: &call.function_name,
            arguments: &call.arguments,
        };
        parts.push(format!(
            "<tool_call>\n{}\n</tool_call>",
            python_json(&block, false)
        ));
    }
    parts.join("\n")
}

fn message(role: &str, content: String) -> TraceMessage {
    TraceMessage {
        role: role.to_string(),
        content,
    }
}

/// The conversation of `steps` (an episode: its last agent step ends it).
fn conversation(steps: &[Step], tools: Option<&str>) -> Vec<TraceMessage> {
    let last_agent = steps.iter().rposition(|s| s.source == Source::Agent);
    let mut tools = tools;
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step.source {
            Source::System => {
                let text = message_text(&step.message);
                let content = match tools.take() {
                    Some(tools) => format!("<tools>\n{tools}\n</tools>\n\n{text}"),
                    None => text,
                };
                out.push(message("user", content));
            }
            Source::User => out.push(message("user", message_text(&step.message))),
            Source::Agent => {
                out.push(message("assistant", assistant_text(step)));
                if Some(i) == last_agent {
                    continue;
                }
                let observed: Vec<String> = step
                    .observation
                    .iter()
                    .flat_map(|o| &o.results)
                    .filter_map(|r| r.content.as_ref().map(message_text))
                    .collect();
                if !observed.is_empty() {
                    out.push(message("user", observed.join("\n")));
                }
            }
        }
    }
    out
}

/// Every episode's row of `doc`.
pub(super) fn rows(doc: &Trajectory, meta: &Meta<'_>) -> Vec<TraceRow> {
    let tools = doc
        .agent
        .tool_definitions
        .as_ref()
        .filter(|t| !t.is_empty())
        .map(|t| python_json(t, true));
    // The trajectory's model as it names it; the provider its prefix (what `export harbor`
    // records as the model's provider).
    let model = doc
        .agent
        .model_name
        .as_deref()
        .or(meta.model)
        .unwrap_or("unknown-model")
        .to_string();
    let provider = model
        .split_once('/')
        .map_or("unknown-provider", |(provider, _)| provider)
        .to_string();
    let ends = doc
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.source == Source::Agent && s.is_copied_context != Some(true))
        .map(|(i, _)| i);
    ends.enumerate()
        .map(|(episode, end)| TraceRow {
            conversations: conversation(&doc.steps[..=end], tools.as_deref()),
            agent: doc.agent.name.clone(),
            model: model.clone(),
            model_provider: provider.clone(),
            date: meta.date.to_string(),
            task: meta.task.to_string(),
            episode: format!("episode-{episode}"),
            run_id: meta.run_id.to_string(),
            trial_name: meta.trial_name.to_string(),
            result: meta.result.clone(),
            reward: meta.reward,
            tool_definitions: doc
                .agent
                .tool_definitions
                .as_ref()
                .map(|t| python_json(t, false)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_as_python_writes_it() {
        let block = json!({"name": "bash", "arguments": {"command": "ls é"}});
        assert_eq!(
            python_json(&block, false),
            r#"{"arguments": {"command": "ls é"}, "name": "bash"}"#
        );
        assert_eq!(
            python_json(&json!([{"a": 1}]), true),
            "[\n  {\n    \"a\": 1\n  }\n]"
        );
    }
}
