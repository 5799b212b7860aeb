//! The typed reading against the old reading ([`old`]): every request body serialises to the
//! same bytes and every response parses to the same result, for well-formed bodies and for
//! each of their variants with one value replaced by a value of another shape, or removed.

use serde_json::{json, Value};

use super::*;

pub(crate) mod old;

/// Values of every JSON shape (and strings that look like JSON).
pub(crate) fn oddities() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(7),
        json!(-1),
        json!(1.5),
        json!(9_223_372_036_854_775_809u64),
        json!(""),
        json!("s"),
        json!("{\"a\":1}"),
        json!([]),
        json!([1, "t"]),
        json!([{"text": "x"}, "y", 3]),
        json!({}),
        json!({"text": "t", "name": "n", "arguments": "{}", "cached_tokens": 2}),
    ]
}

/// The paths of every value inside `value` (`value` itself included).
fn paths(value: &Value) -> Vec<Vec<String>> {
    let mut all = vec![Vec::new()];
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        for mut path in paths(child) {
            path.insert(0, key.clone());
            all.push(path);
        }
    }
    all
}

fn at<'a>(value: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(value, |at, key| match at {
        Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
        other => &mut other[key.as_str()],
    })
}

/// `base`, and each variant of it with one value replaced by an oddity or (in an object)
/// removed.
pub(crate) fn variants(base: &Value) -> Vec<Value> {
    let mut all = vec![base.clone()];
    for path in paths(base) {
        for odd in oddities() {
            let mut variant = base.clone();
            *at(&mut variant, &path) = odd;
            all.push(variant);
        }
        if let Some((last, parent)) = path.split_last() {
            let mut variant = base.clone();
            if let Value::Object(map) = at(&mut variant, parent) {
                map.remove(last);
                all.push(variant);
            }
        }
    }
    all
}

/// Rich responses of each protocol: every field the reading looks at, some twice over.
fn responses() -> Vec<(Protocol, Value)> {
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 4}, "input_tokens": 5, "output_tokens": 1,
        "input_tokens_details": {"cached_tokens": 2}, "cache_read_input_tokens": 3,
        "cache_creation_input_tokens": 1});
    vec![
        (
            Protocol::OpenAiChat,
            json!({"model": "m", "usage": usage, "choices": [{"finish_reason": "tool_calls",
                "message": {"content": [{"type": "text", "text": "a"}, "b"],
                    "reasoning_content": "r", "reasoning": "q",
                    "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{\"x\":1}"}},
                        {"id": "d", "function": {"name": "ls", "arguments": "not json"}}]}}]}),
        ),
        (
            Protocol::OpenAiResponses,
            json!({"model": "m", "status": "incomplete", "usage": usage, "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}]},
                {"type": "message", "content": [{"type": "output_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c", "id": "i", "name": "bash",
                 "arguments": "{\"x\":1}"},
                {"type": "other"}]}),
        ),
        (
            Protocol::Anthropic,
            json!({"model": "m", "stop_reason": "max_tokens", "usage": usage, "content": [
                {"type": "thinking", "thinking": "t"}, {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "ls"}},
                {"type": "other", "text": "no"}]}),
        ),
    ]
}

#[test]
fn responses_parse_as_before_whatever_their_shape() {
    let mut compared = 0;
    for (_, base) in responses() {
        for body in variants(&base) {
            for protocol in [
                Protocol::OpenAiChat,
                Protocol::OpenAiResponses,
                Protocol::Anthropic,
            ] {
                assert_eq!(
                    format!("{:?}", parse_response(protocol, &body)),
                    format!("{:?}", old::parse_response(protocol, &body)),
                    "{protocol:?} {body}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 1000, "{compared}");
}

#[test]
fn usage_objects_count_as_before_whatever_their_shape() {
    let (_, body) = &responses()[0];
    for usage in variants(&body["usage"]).iter().chain(&oddities()) {
        for protocol in [
            Protocol::OpenAiChat,
            Protocol::OpenAiResponses,
            Protocol::Anthropic,
        ] {
            let typed = lenient::read(usage).unwrap_or_default();
            assert_eq!(
                usage_of(protocol, &typed),
                old::usage_of(protocol, usage),
                "{usage}"
            );
        }
    }
}

/// A conversation whose assistant turn has `content` and `tool_calls`.
fn conversation(content: Value, tool_calls: Option<Value>) -> ModelRequest {
    let mut assistant = Message::new("assistant", "");
    assistant.content = content.clone();
    assistant.tool_calls = tool_calls;
    let mut tool = Message::new("tool", "");
    tool.content = content.clone();
    tool.tool_call_id = Some("c".into());
    let mut user = Message::new("user", "");
    user.content = content;
    ModelRequest {
        messages: vec![
            Message::new("system", "be brief"),
            Message::new("developer", "and kind"),
            user.clone(),
            assistant.clone(),
            tool.clone(),
            tool,
            assistant,
            user,
        ],
        tools: vec![
            ToolDef {
                name: "bash".into(),
                description: "run".into(),
                parameters: Value::Null,
            },
            ToolDef {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object", "properties": {"x": {}}}),
            },
        ],
        ..ModelRequest::default()
    }
}

#[test]
fn request_bodies_are_the_same_bytes_whatever_the_messages_hold() {
    let calls = json!([{"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{\"x\":1}"}},
        {"id": "d", "name": "flat", "arguments": {"y": 2}},
        {"id": "e", "function": {"name": "raw", "arguments": "not json"}}]);
    let content = json!([{"type": "text", "text": "a"}, "b", {"type": "image"}]);
    let mut requests = vec![conversation(json!("hi"), None), ModelRequest::default()];
    for calls in variants(&calls) {
        requests.push(conversation(content.clone(), Some(calls)));
    }
    for content in variants(&content) {
        requests.push(conversation(content, Some(calls.clone())));
    }
    let mut params = JsonMap::new();
    for (key, value) in [
        ("temperature", json!(0.2)),
        ("max_tokens", json!(64)),
        ("stop", json!("END")),
        ("tools", json!("overridden")),
    ] {
        params.insert(key.into(), value);
    }
    for request in &requests {
        for params in [&JsonMap::new(), &params] {
            for protocol in [
                Protocol::OpenAiChat,
                Protocol::OpenAiResponses,
                Protocol::Anthropic,
            ] {
                let typed = request_body(protocol, "m", request, params);
                let before = old::request_body(protocol, "m", request, params);
                assert_eq!(typed.to_string(), before.to_string());
            }
        }
    }
}
