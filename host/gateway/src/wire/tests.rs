//! Tests of the conversions between the gateway's requests/responses and the three wire protocols.

use super::*;

fn conversation() -> ModelRequest {
    let call = ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
    };
    let assistant = ModelResponse {
        content: "listing".into(),
        tool_calls: vec![call.clone()],
        ..ModelResponse::default()
    }
    .assistant_message();
    ModelRequest {
        messages: vec![
            Message::new("system", "be brief"),
            Message::new("user", "list files"),
            assistant,
            agentcompass_plugin_api::contracts::tool_result_message(&call, "a.txt"),
        ],
        tools: vec![ToolDef {
            name: "bash".into(),
            description: "run".into(),
            parameters: Value::Null,
        }],
        ..ModelRequest::default()
    }
}

#[test]
fn openai_chat_body_keeps_messages_and_params() {
    let mut params = JsonMap::new();
    params.insert("temperature".into(), json!(0.2));
    let body = request_body(Protocol::OpenAiChat, "m", &conversation(), &params);
    assert_eq!(body["model"], "m");
    assert_eq!(body["messages"].as_array().unwrap().len(), 4);
    assert_eq!(body["messages"][3]["tool_call_id"], "c1");
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(body["temperature"], 0.2);
}

#[test]
fn responses_body_uses_instructions_and_function_items() {
    let mut params = JsonMap::new();
    params.insert("max_tokens".into(), json!(64));
    let body = request_body(Protocol::OpenAiResponses, "m", &conversation(), &params);
    assert_eq!(body["instructions"], "be brief");
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["arguments"], "{\"command\":\"ls\"}");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(body["max_output_tokens"], 64);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["tools"][0]["name"], "bash");
}

#[test]
fn anthropic_body_alternates_roles_with_tool_blocks() {
    let mut params = JsonMap::new();
    params.insert("stop".into(), json!("END"));
    let body = request_body(Protocol::Anthropic, "m", &conversation(), &params);
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["max_tokens"], ANTHROPIC_DEFAULT_MAX_TOKENS);
    assert_eq!(body["stop_sequences"], json!(["END"]));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[1]["content"][1]["input"]["command"], "ls");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

#[test]
fn parses_each_protocol() {
    let chat = json!({"model": "m", "choices": [{"message": {"content": null, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"pwd\"}"}}]},
        "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}});
    let parsed = parse_response(Protocol::OpenAiChat, &chat).unwrap();
    assert_eq!(parsed.tool_calls[0].arguments["command"], "pwd");
    assert_eq!(
        (
            parsed.usage.prompt_tokens,
            parsed.usage.cached_tokens,
            parsed.usage.requests
        ),
        (10, 4, 1)
    );
    assert_eq!(parsed.protocol, "openai-chat");

    let responses = json!({"model": "m", "status": "completed", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": {"input_tokens": 5, "output_tokens": 1}});
    let parsed = parse_response(Protocol::OpenAiResponses, &responses).unwrap();
    assert_eq!(
        (parsed.content.as_str(), parsed.stop_reason.as_str()),
        ("hi", "stop")
    );

    let anthropic = json!({"model": "m", "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "ls"}}],
        "usage": {"input_tokens": 7, "output_tokens": 2, "cache_read_input_tokens": 3}});
    let parsed = parse_response(Protocol::Anthropic, &anthropic).unwrap();
    assert_eq!(parsed.stop_reason, "tool_calls");
    assert_eq!(
        (parsed.usage.prompt_tokens, parsed.usage.cached_tokens),
        (10, 3)
    );
}

#[test]
fn rejects_bodies_of_the_wrong_shape() {
    assert!(parse_response(Protocol::OpenAiChat, &json!([])).is_err());
    let err = parse_response(Protocol::OpenAiChat, &json!({"choices": []})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field `choices` must be a non-empty array",
        "{err}"
    );
    assert!(parse_response(Protocol::Anthropic, &json!({"content": 1})).is_err());
    assert!(parse_response(Protocol::OpenAiResponses, &json!({})).is_err());
}
