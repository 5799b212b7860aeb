//! Conversions between the gateway's protocol-neutral request/response
//! ([`ModelRequest`]/[`ModelResponse`]) and the three wire protocols. Pure functions: no I/O.

use agentcompass_plugin_api::contracts::{
    JsonMap, Message, ModelRequest, ModelResponse, TokenUsage, ToolCall, ToolDef,
};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::Protocol;
use body::{
    non_empty, AnthropicBody, AnthropicTool, ChatBody, ChatTool, FunctionDef, ResponsesBody,
    ResponsesTool, Turn,
};
use view::{
    AnthropicMessage, ChatCompletion, FunctionView, ResponsesResponse, TextPart, ToolCallView,
    UsageView,
};

mod body;
pub(crate) mod lenient;
pub(crate) mod view;

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
                Value::String(text) => Some(text.clone()),
                other => lenient::read::<TextPart>(other).and_then(|part| part.text),
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

/// The `(id, name, arguments as a JSON string)` of each tool call of `message` (OpenAI-shaped,
/// or flat).
fn message_tool_calls(message: &Message) -> Vec<(String, String, String)> {
    let Some(Value::Array(calls)) = &message.tool_calls else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let mut call: ToolCallView = lenient::read(call).unwrap_or_default();
            let id = std::mem::take(&mut call.id);
            let FunctionView { name, arguments } = call.function_or_flat();
            let arguments = match arguments {
                Some(Value::String(raw)) => raw,
                Some(Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            };
            (id, name, arguments)
        })
        .collect()
}

/// A typed request body as JSON, converted the way `json!` converts its values.
fn to_json(body: impl Serialize) -> Value {
    json!(body)
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

// ---- OpenAI chat completions -------------------------------------------------------------

/// A `usage` object of `protocol` as token counts (input including cached tokens; an
/// Anthropic input count excludes cache reads and writes, so they are added).
pub(crate) fn usage_of(protocol: Protocol, usage: &UsageView) -> TokenUsage {
    let (prompt, completion, cached) = usage.counts(protocol);
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        ..TokenUsage::default()
    }
}

fn openai_chat_body(model: &str, request: &ModelRequest, params: &JsonMap) -> Value {
    let tools = request
        .tools
        .iter()
        .map(|tool| ChatTool {
            function: FunctionDef {
                description: &tool.description,
                name: &tool.name,
                parameters: tool_parameters(tool),
            },
            kind: "function",
        })
        .collect();
    let mut body = to_json(ChatBody {
        messages: &request.messages,
        model,
        tools: non_empty(tools),
    });
    merge_params(&mut body, params);
    body
}

fn parse_openai_chat(body: &Value) -> Result<ModelResponse, WireError> {
    let body: ChatCompletion = lenient::read(body).unwrap_or_default();
    let choice = body
        .choices
        .and_then(|choices| choices.into_iter().next())
        .ok_or(field("choices", "a non-empty array"))?;
    let message = choice
        .message
        .ok_or(field("choices[0].message", "an object"))?;
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|call| {
            let function = call.function.unwrap_or_default();
            let arguments = function.arguments.as_ref().and_then(Value::as_str);
            ToolCall {
                id: call.id,
                name: function.name,
                arguments: parse_arguments(arguments.unwrap_or_default()),
            }
        })
        .collect();
    Ok(ModelResponse {
        content: content_text(&message.content),
        reasoning: message
            .reasoning_content
            .or(message.reasoning)
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_calls,
        stop_reason: choice.finish_reason,
        usage: usage_of(Protocol::OpenAiChat, &body.usage),
        model: body.model,
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
    let tools = request
        .tools
        .iter()
        .map(|tool| ResponsesTool {
            description: &tool.description,
            name: &tool.name,
            parameters: tool_parameters(tool),
            kind: "function",
        })
        .collect();
    let mut body = to_json(ResponsesBody {
        input,
        instructions: non_empty(instructions).map(|parts| parts.join("\n\n")),
        model,
        tools: non_empty(tools),
    });
    let mut params = params.clone();
    if let Some(max) = params.remove("max_tokens") {
        params.entry("max_output_tokens").or_insert(max);
    }
    merge_params(&mut body, &params);
    body
}

fn parse_responses(body: &Value) -> Result<ModelResponse, WireError> {
    let body: ResponsesResponse = lenient::read(body).unwrap_or_default();
    let output = body.output.ok_or(field("output", "an array"))?;
    let mut texts = Vec::new();
    let mut reasoning = Vec::new();
    let mut tool_calls = Vec::new();
    for item in output {
        match item.kind.as_deref() {
            Some("message") => texts.push(content_text(&item.content)),
            Some("function_call") => tool_calls.push(ToolCall {
                id: item
                    .call_id
                    .or(item.id)
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                name: item.name,
                arguments: parse_arguments(&item.arguments),
            }),
            Some("reasoning") => reasoning.push(content_text(&item.summary)),
            _ => {}
        }
    }
    let incomplete = body.status.as_deref() == Some("incomplete");
    let stop_reason = if !tool_calls.is_empty() {
        "tool_calls"
    } else if incomplete {
        "length"
    } else {
        "stop"
    };
    Ok(ModelResponse {
        content: texts.join("\n"),
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        tool_calls,
        stop_reason: stop_reason.into(),
        usage: usage_of(Protocol::OpenAiResponses, &body.usage),
        model: body.model,
        ..ModelResponse::default()
    })
}

// ---- Anthropic Messages ------------------------------------------------------------------

/// Appends `blocks` as a turn of `role`, merging into the previous turn of the same role
/// (Anthropic requires alternating roles).
fn push_turn(messages: &mut Vec<Turn>, role: &'static str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut() {
        if last.role == role {
            last.content.extend(blocks);
            return;
        }
    }
    messages.push(Turn {
        content: blocks,
        role,
    });
}

fn anthropic_body(model: &str, request: &ModelRequest, params: &JsonMap) -> Value {
    let mut system = Vec::new();
    let mut messages = Vec::new();
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
    let tools = request
        .tools
        .iter()
        .map(|tool| AnthropicTool {
            description: &tool.description,
            input_schema: tool_parameters(tool),
            name: &tool.name,
        })
        .collect();
    let mut body = to_json(AnthropicBody {
        max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
        messages,
        model,
        system: non_empty(system).map(|parts| parts.join("\n\n")),
        tools: non_empty(tools),
    });
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
    let body: AnthropicMessage = lenient::read(body).unwrap_or_default();
    let content = body.content.ok_or(field("content", "an array"))?;
    let mut texts = Vec::new();
    let mut reasoning = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block.kind.as_deref() {
            Some("text") => texts.push(block.text),
            Some("thinking") => reasoning.push(block.thinking),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block.id,
                name: block.name,
                arguments: block.input.unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    let stop_reason = match body.stop_reason.as_deref() {
        Some("end_turn") | Some("stop_sequence") => "stop".to_string(),
        Some("tool_use") => "tool_calls".to_string(),
        Some("max_tokens") => "length".to_string(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Ok(ModelResponse {
        content: texts.join("\n"),
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        tool_calls,
        stop_reason,
        usage: usage_of(Protocol::Anthropic, &body.usage),
        model: body.model,
        ..ModelResponse::default()
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod equivalence;
