//! The reading of the wire protocols as it was before the typed views (`Value` indexed with
//! literal keys), kept verbatim as the oracle the typed reading is compared against.

#![allow(dead_code)]

use agentcompass_plugin_api::contracts::{
    JsonMap, Message, ModelRequest, ModelResponse, TokenUsage, ToolCall, ToolDef,
};
use serde_json::{json, Map, Value};

use crate::Protocol;

/// `max_tokens` sent to Anthropic when the caller sets none (the API requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u64 = 4096;

/// The request body for `protocol`: the conversation, the tools, then `params` (the request's
/// `model.params` overlaid with the call's own, gateway settings already removed).
pub fn request_body(
    protocol: Protocol,
    model: &str,
    request: &ModelRequest,
    params: &JsonMap,
) -> Value {
    match protocol {
        Protocol::OpenAiChat => openai_chat_body(model, request, params),
        Protocol::OpenAiResponses => responses_body(model, request, params),
        Protocol::Anthropic => anthropic_body(model, request, params),
    }
}

/// Why a successful response body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The body is not a JSON object.
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// A required field is missing or of the wrong type.
    #[error("field `{field}` must be {expected}")]
    Field {
        /// The field's path (`choices[0].message`).
        field: &'static str,
        /// What it must be (`a non-empty array`).
        expected: &'static str,
    },
}

const fn field(field: &'static str, expected: &'static str) -> WireError {
    WireError::Field { field, expected }
}

/// Parses a successful response body of `protocol`.
pub fn parse_response(protocol: Protocol, body: &Value) -> Result<ModelResponse, WireError> {
    if !body.is_object() {
        return Err(WireError::NotAnObject(type_name(body)));
    }
    let mut response = match protocol {
        Protocol::OpenAiChat => parse_openai_chat(body)?,
        Protocol::OpenAiResponses => parse_responses(body)?,
        Protocol::Anthropic => parse_anthropic(body)?,
    };
    response.protocol = protocol.name().to_string();
    response.usage.requests = 1;
    Ok(response)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The text of a message's content: a string, or the `text` of each text part joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn tool_parameters(tool: &ToolDef) -> Value {
    if tool.parameters.is_object() {
        tool.parameters.clone()
    } else {
        json!({"type": "object", "properties": {}})
    }
}

/// The `(id, name, arguments as a JSON string)` of each OpenAI-shaped tool call of `message`.
fn message_tool_calls(message: &Message) -> Vec<(String, String, String)> {
    let Some(Value::Array(calls)) = &message.tool_calls else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let function = call.get("function").unwrap_or(call);
            let arguments = match function.get("arguments") {
                Some(Value::String(raw)) => raw.clone(),
                Some(Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            };
            (
                call.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                function
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments,
            )
        })
        .collect()
}

/// Tool arguments as JSON when they parse, else the raw text.
fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn merge_params(body: &mut Value, params: &JsonMap) {
    if let Value::Object(map) = body {
        for (key, value) in params {
            map.insert(key.clone(), value.clone());
        }
    }
}

fn u64_at(value: &Value, path: &[&str]) -> u64 {
    let mut at = value;
    for key in path {
        match at.get(key) {
            Some(next) => at = next,
            None => return 0,
        }
    }
    at.as_u64().unwrap_or(0)
}

// ---- OpenAI chat completions -------------------------------------------------------------

/// A `usage` object of `protocol` as token counts (input including cached tokens; an
/// Anthropic input count excludes cache reads and writes, so they are added).
pub fn usage_of(protocol: Protocol, usage: &Value) -> TokenUsage {
    let (prompt, completion, cached) = match protocol {
        Protocol::OpenAiChat => (
            u64_at(usage, &["prompt_tokens"]),
            u64_at(usage, &["completion_tokens"]),
            u64_at(usage, &["prompt_tokens_details", "cached_tokens"]),
        ),
        Protocol::OpenAiResponses => (
            u64_at(usage, &["input_tokens"]),
            u64_at(usage, &["output_tokens"]),
            u64_at(usage, &["input_tokens_details", "cached_tokens"]),
        ),
        Protocol::Anthropic => {
            let cached = u64_at(usage, &["cache_read_input_tokens"]);
            (
                u64_at(usage, &["input_tokens"])
                    + cached
                    + u64_at(usage, &["cache_creation_input_tokens"]),
                u64_at(usage, &["output_tokens"]),
                cached,
            )
        }
    };
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        ..TokenUsage::default()
    }
}

fn openai_chat_body(model: &str, request: &ModelRequest, params: &JsonMap) -> Value {
    let mut body = json!({"model": model, "messages": request.messages});
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool_parameters(tool),
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    merge_params(&mut body, params);
    body
}

fn parse_openai_chat(body: &Value) -> Result<ModelResponse, WireError> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or(field("choices", "a non-empty array"))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or(field("choices[0].message", "an object"))?;
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|call| {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    ToolCall {
                        id: call
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        name: function
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        arguments: parse_arguments(
                            function
                                .get("arguments")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        ),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = usage_of(
        Protocol::OpenAiChat,
        body.get("usage").unwrap_or(&Value::Null),
    );
    Ok(ModelResponse {
        content: content_text(message.get("content").unwrap_or(&Value::Null)),
        reasoning: message
            .get("reasoning_content")
            .or_else(|| message.get("reasoning"))
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_calls,
        stop_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        usage,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        ..ModelResponse::default()
    })
}

// ---- OpenAI Responses --------------------------------------------------------------------

fn responses_body(model: &str, request: &ModelRequest, params: &JsonMap) -> Value {
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    for message in &request.messages {
        match message.role.as_str() {
            "system" | "developer" => instructions.push(content_text(&message.content)),
            "tool" => input.push(json!({
                "type": "function_call_output",
                "call_id": message.tool_call_id.clone().unwrap_or_default(),
                "output": content_text(&message.content),
            })),
            role => {
                let text = content_text(&message.content);
                if !text.is_empty() || message.tool_calls.is_none() {
                    input.push(json!({"role": role, "content": text}));
                }
                for (id, name, arguments) in message_tool_calls(message) {
                    input.push(json!({
                        "type": "function_call", "call_id": id, "name": name, "arguments": arguments,
                    }));
                }
            }
        }
    }
    let mut body = json!({"model": model, "input": input});
    if !instructions.is_empty() {
        body["instructions"] = Value::String(instructions.join("\n\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "name": tool.name, "description": tool.description,
                       "parameters": tool_parameters(tool)})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    let mut params = params.clone();
    if let Some(max) = params.remove("max_tokens") {
        params.entry("max_output_tokens").or_insert(max);
    }
    merge_params(&mut body, &params);
    body
}

fn parse_responses(body: &Value) -> Result<ModelResponse, WireError> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or(field("output", "an array"))?;
    let mut texts = Vec::new();
    let mut reasoning = Vec::new();
    let mut tool_calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                texts.push(content_text(item.get("content").unwrap_or(&Value::Null)))
            }
            Some("function_call") => tool_calls.push(ToolCall {
                id: item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                name: item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                arguments: parse_arguments(
                    item.get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
            }),
            Some("reasoning") => {
                reasoning.push(content_text(item.get("summary").unwrap_or(&Value::Null)))
            }
            _ => {}
        }
    }
    let incomplete = body.get("status").and_then(Value::as_str) == Some("incomplete");
    let stop_reason = if !tool_calls.is_empty() {
        "tool_calls"
    } else if incomplete {
        "length"
    } else {
        "stop"
    };
    let usage = usage_of(
        Protocol::OpenAiResponses,
        body.get("usage").unwrap_or(&Value::Null),
    );
    Ok(ModelResponse {
        content: texts.join("\n"),
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        tool_calls,
        stop_reason: stop_reason.into(),
        usage,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        ..ModelResponse::default()
    })
}

// ---- Anthropic Messages ------------------------------------------------------------------

/// Appends `blocks` as a turn of `role`, merging into the previous turn of the same role
/// (Anthropic requires alternating roles).
fn push_turn(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut() {
        if last["role"] == role {
            if let Some(content) = last["content"].as_array_mut() {
                content.extend(blocks);
                return;
            }
        }
    }
    messages.push(json!({"role": role, "content": blocks}));
}

fn anthropic_body(model: &str, request: &ModelRequest, params: &JsonMap) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message.role.as_str() {
            "system" | "developer" => system.push(content_text(&message.content)),
            "tool" => push_turn(
                &mut messages,
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": content_text(&message.content),
                })],
            ),
            role => {
                let role = if role == "assistant" {
                    "assistant"
                } else {
                    "user"
                };
                let mut blocks = Vec::new();
                let text = content_text(&message.content);
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for (id, name, arguments) in message_tool_calls(message) {
                    let input = match parse_arguments(&arguments) {
                        Value::Object(map) => Value::Object(map),
                        _ => json!({}),
                    };
                    blocks
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                }
                push_turn(&mut messages, role, blocks);
            }
        }
    }
    let mut body =
        json!({"model": model, "messages": messages, "max_tokens": ANTHROPIC_DEFAULT_MAX_TOKENS});
    if !system.is_empty() {
        body["system"] = Value::String(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "input_schema": tool_parameters(tool)})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    let mut params: Map<String, Value> = params.clone();
    if let Some(stop) = params.remove("stop") {
        let stop = match stop {
            Value::String(one) => json!([one]),
            other => other,
        };
        params.entry("stop_sequences").or_insert(stop);
    }
    merge_params(&mut body, &params);
    body
}

fn parse_anthropic(body: &Value) -> Result<ModelResponse, WireError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or(field("content", "an array"))?;
    let mut texts = Vec::new();
    let mut reasoning = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("thinking") => reasoning.push(
                block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    let stop_reason = match body.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") => "stop".to_string(),
        Some("tool_use") => "tool_calls".to_string(),
        Some("max_tokens") => "length".to_string(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let usage = usage_of(
        Protocol::Anthropic,
        body.get("usage").unwrap_or(&Value::Null),
    );
    Ok(ModelResponse {
        content: texts.join("\n"),
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        tool_calls,
        stop_reason,
        usage,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        ..ModelResponse::default()
    })
}
