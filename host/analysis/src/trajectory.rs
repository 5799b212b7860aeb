//! Read-only views over the ACTF trajectory inside a persisted attempt result. Every accessor
//! tolerates odd JSON (wrong types, nulls, missing keys) by answering "absent".

use serde_json::{json, Map, Value};

/// Why an analyzer had nothing to look at: the result holds no trajectory object.
pub(crate) const NO_TRAJECTORY: &str = "no trajectory available";
/// Why an analyzer had nothing to look at: the trajectory has no steps.
pub(crate) const EMPTY_TRAJECTORY: &str = "empty trajectory";

/// The trajectory object of an attempt result, if it has one.
pub(crate) fn trajectory(result: &Value) -> Option<&Map<String, Value>> {
    result.get("trajectory")?.as_object()
}

/// Every step of a trajectory, in order (a `steps` that is not an array has none).
pub(crate) fn all_steps(trajectory: &Map<String, Value>) -> Vec<Step<'_>> {
    match trajectory.get("steps") {
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

/// One trajectory step (any JSON; a non-object step has nothing in it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step<'a>(pub &'a Value);

impl<'a> Step<'a> {
    /// The step's `step_id` as written (upstream's default `0` when missing).
    pub(crate) fn id(&self) -> Value {
        self.0.get("step_id").cloned().unwrap_or_else(|| json!(0))
    }

    /// The assistant turn of this step. Absent when `assistant_content` is not an object, is
    /// empty (upstream's `None`), or has none of `content`, `reasoning_content`, `tool_calls`
    /// set (how this host writes a step that had no model turn, such as a CLI agent's command
    /// step).
    pub(crate) fn assistant(&self) -> Option<Assistant<'a>> {
        let obj = self.0.get("assistant_content")?.as_object()?;
        let any = ["content", "reasoning_content", "tool_calls"]
            .iter()
            .any(|key| obj.get(*key).is_some_and(|v| !v.is_null()));
        any.then_some(Assistant(obj))
    }

    /// A field of the step's `metric` object.
    pub(crate) fn metric(&self, key: &str) -> Option<&'a Value> {
        self.0.get("metric")?.get(key)
    }

    /// A numeric field of the step's `metric` object.
    pub(crate) fn metric_f64(&self, key: &str) -> Option<f64> {
        self.metric(key)?.as_f64()
    }

    /// The step's observations (a non-array has none).
    pub(crate) fn observations(&self) -> &'a [Value] {
        match self.0.get("observation") {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
    }

    /// A string field of the step (`started_at`, `finished_at`).
    pub(crate) fn str_field(&self, key: &str) -> Option<&'a str> {
        self.0.get(key)?.as_str()
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

/// The assistant turn of a step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Assistant<'a>(&'a Map<String, Value>);

impl<'a> Assistant<'a> {
    /// The visible text (a string, or the text parts of a content array).
    pub(crate) fn content_text(&self) -> String {
        text_of(self.0.get("content"))
    }

    /// The reasoning text.
    pub(crate) fn reasoning_text(&self) -> String {
        text_of(self.0.get("reasoning_content"))
    }

    /// Whether the turn has tool calls (Python truthiness of `tool_calls`, as upstream).
    pub(crate) fn has_tool_calls(&self) -> bool {
        self.0.get("tool_calls").is_some_and(crate::py::truthy)
    }

    /// The raw tool-call entries (a non-array has none).
    pub(crate) fn raw_tool_calls(&self) -> &'a [Value] {
        match self.0.get("tool_calls") {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
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
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
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
        let obj = raw.as_object()?;
        let func = match obj.get("function") {
            Some(Value::Object(func)) => func,
            _ => obj,
        };
        let name = func.get("name")?.as_str().filter(|n| !n.is_empty())?;
        let arguments = match func.get("arguments") {
            Some(Value::String(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
            }
            Some(other) => other.clone(),
            None => json!({}),
        };
        Some(ToolCall {
            id: obj.get("id").and_then(Value::as_str),
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
