//! Read-only views over the ACTF trajectory inside a persisted attempt result. Every accessor
//! tolerates odd JSON (wrong types, nulls, missing keys) by answering "absent".

use serde_json::{json, Map, Value};

use crate::view::{json_view, AttemptResult};

/// Why an analyzer had nothing to look at: the result holds no trajectory object.
pub(crate) const NO_TRAJECTORY: &str = "no trajectory available";
/// Why an analyzer had nothing to look at: the trajectory has no steps.
pub(crate) const EMPTY_TRAJECTORY: &str = "empty trajectory";

json_view! {
    /// The fields of a trajectory object.
    pub(crate) struct Trajectory {
        /// The steps, in order.
        steps,
        /// When the trajectory started (ISO 8601).
        started_at,
        /// When the trajectory finished (ISO 8601).
        finished_at,
    }
}

impl<'a> Trajectory<'a> {
    /// `started_at`, when it is a string.
    pub(crate) fn started_at_str(&self) -> Option<&'a str> {
        self.started_at()?.as_str()
    }

    /// `finished_at`, when it is a string.
    pub(crate) fn finished_at_str(&self) -> Option<&'a str> {
        self.finished_at()?.as_str()
    }
}

/// The trajectory object of an attempt result, if it has one.
pub(crate) fn trajectory(result: &Value) -> Option<&Map<String, Value>> {
    AttemptResult::from(result).trajectory()?.as_object()
}

/// Every step of a trajectory, in order (a `steps` that is not an array has none).
pub(crate) fn all_steps(trajectory: &Map<String, Value>) -> Vec<Step<'_>> {
    match Trajectory::from(trajectory).steps() {
        Some(Value::Array(steps)) => steps.iter().map(Step).collect(),
        _ => Vec::new(),
    }
}

/// The steps of the result's trajectory, or why there are none ([`NO_TRAJECTORY`],
/// [`EMPTY_TRAJECTORY`]).
pub(crate) fn steps(result: &Value) -> Result<Vec<Step<'_>>, &'static str> {
    let trajectory = trajectory(result).ok_or(NO_TRAJECTORY)?;
    let steps = all_steps(trajectory);
    if steps.is_empty() {
        Err(EMPTY_TRAJECTORY)
    } else {
        Ok(steps)
    }
}

json_view! {
    /// The fields of a step object.
    struct StepFields {
        /// The step id.
        step_id,
        /// The model turn.
        assistant_content,
        /// Per-step measurements.
        metric,
        /// The tool results.
        observation,
        /// When the step started.
        started_at,
        /// When the step finished.
        finished_at,
    }
}

/// One trajectory step (any JSON; a non-object step has nothing in it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step<'a>(pub &'a Value);

impl<'a> Step<'a> {
    /// The step's fields.
    fn fields(&self) -> StepFields<'a> {
        StepFields::from(self.0)
    }

    /// The step's `step_id` as written (upstream's default `0` when missing).
    pub(crate) fn id(&self) -> Value {
        self.fields().step_id().cloned().unwrap_or_else(|| json!(0))
    }

    /// The assistant turn of this step. Absent when `assistant_content` is not an object, is
    /// empty (upstream's `None`), or has none of `content`, `reasoning_content`, `tool_calls`
    /// set (how this host writes a step that had no model turn, such as a CLI agent's command
    /// step).
    pub(crate) fn assistant(&self) -> Option<Assistant<'a>> {
        let obj = self.fields().assistant_content()?.as_object()?;
        let turn = Assistant(AssistantFields::from(obj));
        let any = [
            turn.0.content(),
            turn.0.reasoning_content(),
            turn.0.tool_calls(),
        ]
        .iter()
        .any(|v| v.is_some_and(|v| !v.is_null()));
        any.then_some(turn)
    }

    /// A field of the step's `metric` object.
    pub(crate) fn metric(&self, key: &str) -> Option<&'a Value> {
        self.fields().metric()?.get(key)
    }

    /// A numeric field of the step's `metric` object.
    pub(crate) fn metric_f64(&self, key: &str) -> Option<f64> {
        self.metric(key)?.as_f64()
    }

    /// The step's observations (a non-array has none).
    pub(crate) fn observations(&self) -> &'a [Value] {
        match self.fields().observation() {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
    }

    /// The step's `started_at`, when it is a string.
    pub(crate) fn started_at(&self) -> Option<&'a str> {
        self.fields().started_at()?.as_str()
    }

    /// The step's `finished_at`, when it is a string.
    pub(crate) fn finished_at(&self) -> Option<&'a str> {
        self.fields().finished_at()?.as_str()
    }

    /// The tool calls of this step's assistant turn, parsed (unreadable ones skipped).
    pub(crate) fn tool_calls(&self) -> Vec<ToolCall<'a>> {
        self.assistant()
            .map(|ac| {
                ac.raw_tool_calls()
                    .iter()
                    .filter_map(ToolCall::parse)
                    .collect()
            })
            .unwrap_or_default()
    }
}

json_view! {
    /// The fields of an `assistant_content` object.
    struct AssistantFields {
        /// The visible text.
        content,
        /// The reasoning text.
        reasoning_content,
        /// The tool calls.
        tool_calls,
    }
}

/// The assistant turn of a step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Assistant<'a>(AssistantFields<'a>);

impl<'a> Assistant<'a> {
    /// The visible text (a string, or the text parts of a content array).
    pub(crate) fn content_text(&self) -> String {
        text_of(self.0.content())
    }

    /// The reasoning text.
    pub(crate) fn reasoning_text(&self) -> String {
        text_of(self.0.reasoning_content())
    }

    /// Whether the turn has tool calls (Python truthiness of `tool_calls`, as upstream).
    pub(crate) fn has_tool_calls(&self) -> bool {
        self.0.tool_calls().is_some_and(crate::py::truthy)
    }

    /// The raw tool-call entries (a non-array has none).
    pub(crate) fn raw_tool_calls(&self) -> &'a [Value] {
        match self.0.tool_calls() {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
    }
}

json_view! {
    /// The fields of one part of a content array.
    struct ContentPart {
        /// The part's text.
        text,
    }
}

/// Text of a content value: a string, or the concatenated text parts of an array of parts.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(s) => Some(s.as_str()),
                other => ContentPart::from(other).text().and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

json_view! {
    /// The fields of a tool-call entry (or of its `function` object).
    struct CallFields {
        /// The call id.
        id,
        /// The OpenAI-shaped function object.
        function,
        /// The tool name.
        name,
        /// The arguments.
        arguments,
    }
}

/// One tool call: OpenAI-shaped (`{"id","type","function":{"name","arguments"}}`) or flat as
/// this host's transcript harnesses write it (`{"id","name","arguments"}`).
#[derive(Debug, Clone)]
pub(crate) struct ToolCall<'a> {
    /// The call id, when it has one.
    pub id: Option<&'a str>,
    /// The tool name (never empty).
    pub name: &'a str,
    /// The arguments: a string holding JSON is parsed, a missing value is `{}`.
    pub arguments: Value,
}

impl<'a> ToolCall<'a> {
    /// Reads one entry; `None` when it is not an object or has no name (upstream's rule).
    pub(crate) fn parse(raw: &'a Value) -> Option<ToolCall<'a>> {
        let obj = CallFields::from(raw.as_object()?);
        let func = match obj.function() {
            Some(Value::Object(func)) => CallFields::from(func),
            _ => obj,
        };
        let name = func.name()?.as_str().filter(|n| !n.is_empty())?;
        let arguments = match func.arguments() {
            Some(Value::String(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
            }
            Some(other) => other.clone(),
            None => json!({}),
        };
        Some(ToolCall {
            id: obj.id().and_then(Value::as_str),
            name,
            arguments,
        })
    }

    /// The comparison key upstream uses: the name and the arguments as
    /// `json.dumps(sort_keys=True)`.
    pub(crate) fn key(&self) -> (String, String) {
        (
            self.name.to_string(),
            crate::py::json_dumps(&self.arguments),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_shapes_are_absent_not_panics() {
        for result in [
            json!(null),
            json!(5),
            json!({"trajectory": null}),
            json!({"trajectory": "x"}),
            json!({"trajectory": {"steps": {"a": 1}}}),
            json!({"trajectory": {"steps": []}}),
        ] {
            assert!(steps(&result).is_err(), "{result}");
        }
        let result = json!({"trajectory": {"steps": [
            5, null, {"assistant_content": 3, "metric": "x", "observation": {"a": 1}},
            {"assistant_content": {}}, {"assistant_content": {"content": null, "tool_calls": null}},
        ]}});
        let steps = steps(&result).unwrap();
        assert_eq!(steps.len(), 5);
        for step in &steps {
            assert!(step.assistant().is_none());
            assert!(step.metric_f64("llm_infer_ms").is_none());
            assert!(step.observations().is_empty());
            assert!(step.tool_calls().is_empty());
        }
        assert_eq!(steps[0].id(), json!(0));
    }

    #[test]
    fn tool_calls_in_both_shapes() {
        let raw = json!([
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
            {"id": "b", "name": "Bash", "arguments": {"command": "pwd"}},
            {"function": {"name": "x", "arguments": "not json"}},
            {"function": {"name": ""}},
            {"function": "weird"},
            "str",
        ]);
        let calls: Vec<_> = raw
            .as_array()
            .unwrap()
            .iter()
            .filter_map(ToolCall::parse)
            .collect();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].arguments, json!({"command": "ls"}));
        assert_eq!(calls[0].key().1, "{\"command\": \"ls\"}");
        assert_eq!(calls[1].name, "Bash");
        assert_eq!(calls[2].arguments, json!("not json"));
    }

    #[test]
    fn content_text_reads_parts() {
        let step =
            json!({"assistant_content": {"content": [{"type": "text", "text": "a"}, "b", 3]}});
        assert_eq!(Step(&step).assistant().unwrap().content_text(), "ab");
    }
}
