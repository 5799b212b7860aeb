//! The model gateway's contract: what a component sends to the host's `model.generate`
//! service and what comes back, independent of the wire protocol (`openai-chat`,
//! `openai-responses`, `anthropic`) the host speaks to the endpoint.
//!
//! Conversations use the OpenAI chat shape ([`Message`]): an assistant turn that calls tools
//! carries `tool_calls` as `[{"id", "type": "function", "function": {"name", "arguments"}}]`
//! (arguments a JSON string), and each result is a `tool` message with `tool_call_id`. The host
//! converts this to each protocol's own form.

use serde::{Deserialize, Serialize};

use super::{JsonMap, Message, ToolDef};

/// The host service that sends one generation request to the run's model endpoint.
pub const MODEL_GENERATE_SERVICE: &str = "model.generate";

/// The host service that tells a harness where the run's model endpoint is (for agents that
/// bring their own HTTP client, such as a CLI agent run inside the environment).
pub const MODEL_ENDPOINT_SERVICE: &str = "model.endpoint";

/// One generation request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// Generation parameters for this call (over the request's `model.params`, key by key).
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub params: JsonMap,
    /// A per-call request timeout in seconds (else the gateway's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Retries of a transient failure for this call (else the gateway's `max_retries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
}

impl ModelRequest {
    /// A request with the given conversation and nothing else.
    pub fn new(messages: Vec<Message>) -> Self {
        ModelRequest {
            messages,
            ..ModelRequest::default()
        }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (echoed in the `tool` message answering it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model sent them: a JSON object when they parse, else the raw text.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// Token usage of one or more calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens (including cached ones).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Input tokens served from the provider's cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Cost in US dollars, when a price table covers the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Number of successful model calls.
    #[serde(default)]
    pub requests: u64,
}

impl TokenUsage {
    /// Adds `other` into `self` (a cost is kept when either side has one).
    pub fn add(&mut self, other: &TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.requests += other.requests;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.prompt_tokens == 0 && self.completion_tokens == 0
    }
}

/// The model's answer to one [`ModelRequest`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The text answer (text blocks joined with newlines).
    #[serde(default)]
    pub content: String,
    /// Reasoning text, when the endpoint returns it separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why generation stopped: `stop`, `tool_calls`, `length`, or the endpoint's own word.
    #[serde(default)]
    pub stop_reason: String,
    /// Usage of this call.
    #[serde(default)]
    pub usage: TokenUsage,
    /// The model id the endpoint reported.
    #[serde(default)]
    pub model: String,
    /// The protocol used (`openai-chat`, `openai-responses`, `anthropic`).
    #[serde(default)]
    pub protocol: String,
    /// Wall time of the call including retries, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// How many times the call was retried.
    #[serde(default)]
    pub retries: u32,
}

impl ModelResponse {
    /// This answer as the assistant turn to append to the conversation.
    pub fn assistant_message(&self) -> Message {
        let mut message = Message::new("assistant", self.content.clone());
        if !self.tool_calls.is_empty() {
            let calls: Vec<serde_json::Value> = self
                .tool_calls
                .iter()
                .map(|call| {
                    let arguments = match &call.arguments {
                        serde_json::Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    };
                    serde_json::json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    })
                })
                .collect();
            message.tool_calls = Some(serde_json::Value::Array(calls));
        }
        message
    }
}

/// Where the run's model endpoint is, for agents with their own client.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelEndpoint {
    /// Model id.
    pub model: String,
    /// Base URL (for example `https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key (resolved). The host scrubs it from everything it persists or logs.
    pub api_key: String,
    /// The protocol the gateway would use.
    pub protocol: String,
}

impl std::fmt::Debug for ModelEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEndpoint")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &super::REDACTED)
            .field("protocol", &self.protocol)
            .finish()
    }
}

/// A `tool` message answering `call`.
pub fn tool_result_message(call: &ToolCall, content: impl Into<String>) -> Message {
    let mut message = Message::new("tool", content);
    message.tool_call_id = Some(call.id.clone());
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_adds_and_keeps_cost() {
        let mut total = TokenUsage::default();
        assert!(total.is_empty());
        total.add(&TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 4,
            cost_usd: None,
            requests: 1,
        });
        assert_eq!(total.cost_usd, None);
        total.add(&TokenUsage {
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            cost_usd: Some(0.5),
            requests: 1,
        });
        assert_eq!(
            (total.prompt_tokens, total.completion_tokens, total.requests),
            (11, 3, 2)
        );
        assert_eq!(total.cost_usd, Some(0.5));
    }

    #[test]
    fn assistant_message_carries_tool_calls_in_chat_shape() {
        let response = ModelResponse {
            content: "running".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
            }],
            ..ModelResponse::default()
        };
        let message = response.assistant_message();
        let calls = message.tool_calls.unwrap();
        assert_eq!(calls[0]["function"]["name"], "bash");
        assert_eq!(calls[0]["function"]["arguments"], "{\"command\":\"ls\"}");
        let answer = tool_result_message(&response.tool_calls[0], "out");
        assert_eq!(answer.tool_call_id.as_deref(), Some("c1"));
    }

    #[test]
    fn endpoint_debug_hides_the_key() {
        let endpoint = ModelEndpoint {
            api_key: "sk-secret".into(),
            ..ModelEndpoint::default()
        };
        assert!(!format!("{endpoint:?}").contains("sk-secret"));
    }
}
