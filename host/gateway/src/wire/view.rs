//! Typed views of the JSON the gateway reads: the providers' responses and usage objects,
//! and the agents' own messages. Read leniently (see [`super::lenient`]): `serde_json::Value`
//! is kept only for parts passed on as they are.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::lenient::{lenient, maybe_object, object, objects, present, present_object};
use crate::Protocol;

// ---- usage -------------------------------------------------------------------------------

/// A token count: whether its key is present (even as `null`) and its value when it is a
/// non-negative integer (else 0).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    /// The key is present.
    pub(crate) present: bool,
    /// The count, 0 unless a non-negative integer.
    pub(crate) value: u64,
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Count {
            present: true,
            value: value.as_u64().unwrap_or(0),
        })
    }
}

/// `*_tokens_details` of an OpenAI usage object.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TokenDetails {
    /// Input tokens read from the prompt cache.
    pub(crate) cached_tokens: Count,
}

/// A `usage` object of any of the three protocols (each reads its own fields).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct UsageView {
    /// OpenAI chat: input tokens, cached ones included.
    pub(crate) prompt_tokens: Count,
    /// OpenAI chat: output tokens.
    pub(crate) completion_tokens: Count,
    /// OpenAI chat: the cached part of the input.
    #[serde(deserialize_with = "object")]
    pub(crate) prompt_tokens_details: TokenDetails,
    /// Responses: input tokens, cached ones included; Anthropic: uncached input tokens.
    pub(crate) input_tokens: Count,
    /// Responses and Anthropic: output tokens.
    pub(crate) output_tokens: Count,
    /// Responses: the cached part of the input.
    #[serde(deserialize_with = "object")]
    pub(crate) input_tokens_details: TokenDetails,
    /// Anthropic: input tokens read from the cache.
    pub(crate) cache_read_input_tokens: Count,
    /// Anthropic: input tokens written to the cache.
    pub(crate) cache_creation_input_tokens: Count,
}

impl UsageView {
    /// `(input including cached, output, cached)` in the shape of `protocol` (an Anthropic
    /// input count excludes cache reads and writes, so they are added).
    pub(crate) fn counts(&self, protocol: Protocol) -> (u64, u64, u64) {
        match protocol {
            Protocol::OpenAiChat => (
                self.prompt_tokens.value,
                self.completion_tokens.value,
                self.prompt_tokens_details.cached_tokens.value,
            ),
            Protocol::OpenAiResponses => (
                self.input_tokens.value,
                self.output_tokens.value,
                self.input_tokens_details.cached_tokens.value,
            ),
            Protocol::Anthropic => {
                let cached = self.cache_read_input_tokens.value;
                (
                    self.input_tokens.value + cached + self.cache_creation_input_tokens.value,
                    self.output_tokens.value,
                    cached,
                )
            }
        }
    }
}

/// Anything whose `usage` is read: a response body, or the `response`/`message` of a
/// streamed event.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WithUsage {
    /// The usage object; `None` unless an object.
    #[serde(deserialize_with = "maybe_object")]
    pub(crate) usage: Option<UsageView>,
}

// ---- the agents' messages ----------------------------------------------------------------

/// A part of a message's content (when it is not a plain string).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TextPart {
    /// Its text, when a string.
    #[serde(deserialize_with = "lenient")]
    pub(crate) text: Option<String>,
}

/// The function of a tool call.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionView {
    /// The tool's name ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: String,
    /// The arguments: a JSON string, or (from agents) any JSON; `Some(Null)` when `null`.
    #[serde(deserialize_with = "present")]
    pub(crate) arguments: Option<Value>,
}

/// A tool call: OpenAI-shaped (`function` holds the name and arguments) or, from agents, flat.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolCallView {
    /// The call's id ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: String,
    /// `function`, when the key is present (whatever its value).
    #[serde(deserialize_with = "present_object")]
    pub(crate) function: Option<FunctionView>,
    /// The flat shape's name.
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: String,
    /// The flat shape's arguments (`Some(Null)` when `null`).
    #[serde(deserialize_with = "present")]
    pub(crate) arguments: Option<Value>,
}

impl ToolCallView {
    /// The call's function: `function` when present, else the call itself.
    pub(crate) fn function_or_flat(self) -> FunctionView {
        self.function.unwrap_or(FunctionView {
            name: self.name,
            arguments: self.arguments,
        })
    }
}

// ---- OpenAI chat completions -------------------------------------------------------------

/// A chat-completions response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatCompletion {
    /// `None` unless an array.
    #[serde(deserialize_with = "objects")]
    pub(crate) choices: Option<Vec<ChatChoice>>,
    /// The usage (all counts 0 unless an object).
    #[serde(deserialize_with = "object")]
    pub(crate) usage: UsageView,
    /// The model that answered ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) model: String,
}

/// One choice of a chat-completions response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatChoice {
    /// `None` unless an object.
    #[serde(deserialize_with = "maybe_object")]
    pub(crate) message: Option<ChatMessage>,
    /// Why generation stopped ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) finish_reason: String,
}

/// The message of a chat-completions choice.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatMessage {
    /// A string, an array of parts, or anything else (`Null` when absent).
    #[serde(default)]
    pub(crate) content: Value,
    /// The reasoning, when the key is present (it hides `reasoning` even when not a string).
    #[serde(default, deserialize_with = "present")]
    pub(crate) reasoning_content: Option<Value>,
    /// The reasoning under its other name.
    #[serde(default, deserialize_with = "present")]
    pub(crate) reasoning: Option<Value>,
    /// `None` unless an array.
    #[serde(default, deserialize_with = "objects")]
    pub(crate) tool_calls: Option<Vec<ToolCallView>>,
}

// ---- OpenAI Responses --------------------------------------------------------------------

/// A Responses API response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponsesResponse {
    /// `None` unless an array.
    #[serde(deserialize_with = "objects")]
    pub(crate) output: Option<Vec<OutputItem>>,
    /// `completed`, `incomplete`, ... (`None` unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) status: Option<String>,
    /// The usage (all counts 0 unless an object).
    #[serde(deserialize_with = "object")]
    pub(crate) usage: UsageView,
    /// The model that answered ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) model: String,
}

/// An item of a Responses `output`: a message, a function call or a reasoning summary.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct OutputItem {
    /// `message`, `function_call`, `reasoning`, ... (`None` unless a string).
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    /// A message's content (`Null` when absent).
    pub(crate) content: Value,
    /// A function call's id, when the key is present (it hides `id`).
    #[serde(deserialize_with = "present")]
    pub(crate) call_id: Option<Value>,
    /// The item's id.
    #[serde(deserialize_with = "present")]
    pub(crate) id: Option<Value>,
    /// A function call's name ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: String,
    /// A function call's arguments as a JSON string ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) arguments: String,
    /// A reasoning item's summary (`Null` when absent).
    pub(crate) summary: Value,
}

// ---- Anthropic Messages ------------------------------------------------------------------

/// An Anthropic Messages response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AnthropicMessage {
    /// `None` unless an array.
    #[serde(deserialize_with = "objects")]
    pub(crate) content: Option<Vec<ContentBlock>>,
    /// `end_turn`, `tool_use`, ... (`None` unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) stop_reason: Option<String>,
    /// The usage (all counts 0 unless an object).
    #[serde(deserialize_with = "object")]
    pub(crate) usage: UsageView,
    /// The model that answered ("" unless a string).
    #[serde(deserialize_with = "lenient")]
    pub(crate) model: String,
}

/// A content block of an Anthropic message: text, thinking or a tool use.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContentBlock {
    /// `text`, `thinking`, `tool_use`, ... (`None` unless a string).
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    /// A text block's text.
    #[serde(deserialize_with = "lenient")]
    pub(crate) text: String,
    /// A thinking block's text.
    #[serde(deserialize_with = "lenient")]
    pub(crate) thinking: String,
    /// A tool use's id.
    #[serde(deserialize_with = "lenient")]
    pub(crate) id: String,
    /// A tool use's tool name.
    #[serde(deserialize_with = "lenient")]
    pub(crate) name: String,
    /// A tool use's input, when the key is present (`Some(Null)` when `null`).
    #[serde(deserialize_with = "present")]
    pub(crate) input: Option<Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::lenient::read;

    #[test]
    fn a_count_knows_a_present_key_even_when_it_counts_nothing() {
        let usage: UsageView = read(&json!({"input_tokens": null, "output_tokens": "3",
            "prompt_tokens": 4, "prompt_tokens_details": [5]}))
        .unwrap();
        assert_eq!(
            usage.input_tokens,
            Count {
                present: true,
                value: 0
            }
        );
        assert_eq!(
            usage.output_tokens,
            Count {
                present: true,
                value: 0
            }
        );
        assert_eq!(
            usage.prompt_tokens,
            Count {
                present: true,
                value: 4
            }
        );
        assert_eq!(usage.completion_tokens, Count::default());
        assert_eq!(usage.prompt_tokens_details.cached_tokens, Count::default());
    }

    #[test]
    fn a_tool_call_without_a_function_is_its_own_function() {
        let flat: ToolCallView =
            read(&json!({"id": "c", "name": "ls", "arguments": null})).unwrap();
        let function = flat.function_or_flat();
        assert_eq!(
            (function.name.as_str(), function.arguments),
            ("ls", Some(Value::Null))
        );
        let nested: ToolCallView = read(&json!({"name": "flat", "function": null})).unwrap();
        let function = nested.function_or_flat();
        assert_eq!((function.name.as_str(), function.arguments), ("", None));
    }

    #[test]
    fn reasoning_content_hides_reasoning_whenever_its_key_is_present() {
        let message: ChatMessage =
            read(&json!({"reasoning_content": null, "reasoning": "r"})).unwrap();
        assert_eq!(message.reasoning_content, Some(Value::Null));
        assert_eq!(message.content, Value::Null);
    }
}
