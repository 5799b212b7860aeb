//! The typed reading of usage against the old one (`Value` indexed with literal keys, kept
//! here verbatim): the same usage for every event and body, whatever the shape of its parts.

use serde_json::{json, Value};

use super::*;
use crate::wire::equivalence::{oddities, old, variants};

/// The old reading of one SSE line.
fn old_event_usage(
    endpoint: Endpoint,
    line: &[u8],
    before: Option<TokenUsage>,
) -> Option<TokenUsage> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(data) = line.strip_prefix(b"data:") else {
        return before;
    };
    let Ok(event) = serde_json::from_slice::<Value>(data.trim_ascii()) else {
        return before;
    };
    match endpoint {
        // The last chunk (with `stream_options.include_usage`) carries the request's usage.
        Endpoint::Chat => match event.get("usage").filter(|u| u.is_object()) {
            Some(usage) => Some(old::usage_of(Protocol::OpenAiChat, usage)),
            None => before,
        },
        // `response.completed` (or `.incomplete`/`.failed`) carries the final response.
        Endpoint::Responses => match event.pointer("/response/usage").filter(|u| u.is_object()) {
            Some(usage) => Some(old::usage_of(Protocol::OpenAiResponses, usage)),
            None => before,
        },
        // `message_start` has the input side, `message_delta` the cumulative output side
        // (and, in newer API versions, the input side again).
        Endpoint::Messages => {
            let kind = event.get("type").and_then(Value::as_str);
            let usage = match kind {
                Some("message_start") => event.pointer("/message/usage"),
                Some("message_delta") => event.get("usage"),
                _ => None,
            };
            let Some(usage) = usage.filter(|u| u.is_object()) else {
                return before;
            };
            let seen = old::usage_of(Protocol::Anthropic, usage);
            let mut merged = before.unwrap_or_default();
            if usage.get("input_tokens").is_some() {
                merged.prompt_tokens = seen.prompt_tokens;
                merged.cached_tokens = seen.cached_tokens;
            }
            if usage.get("output_tokens").is_some() {
                merged.completion_tokens = seen.completion_tokens;
            }
            Some(merged)
        }
        Endpoint::Other => before,
    }
}

/// The old reading of a whole JSON body.
fn old_body_usage(endpoint: Endpoint, body: &[u8]) -> Option<TokenUsage> {
    let protocol = endpoint.protocol()?;
    let json: Value = serde_json::from_slice(body).ok()?;
    let usage = json.get("usage").filter(|u| u.is_object())?;
    Some(old::usage_of(protocol, usage))
}

fn events() -> Vec<(Endpoint, Value)> {
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 3, "input_tokens": 6,
        "output_tokens": 2, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 4}, "input_tokens_details": {"cached_tokens": 1}});
    vec![
        (Endpoint::Chat, json!({"choices": [], "usage": usage})),
        (
            Endpoint::Responses,
            json!({"type": "response.completed", "response": {"usage": usage}}),
        ),
        (
            Endpoint::Messages,
            json!({"type": "message_start", "message": {"usage": usage}}),
        ),
        (
            Endpoint::Messages,
            json!({"type": "message_delta", "usage": {"output_tokens": 11}}),
        ),
    ]
}

#[test]
fn events_and_bodies_are_metered_as_before_whatever_their_shape() {
    let before = Some(TokenUsage {
        prompt_tokens: 100,
        completion_tokens: 50,
        cached_tokens: 20,
        ..TokenUsage::default()
    });
    let mut compared = 0;
    for (_, base) in events() {
        let odd = oddities().into_iter();
        for event in variants(&base).into_iter().chain(odd) {
            let line = format!("data: {event}");
            for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
                for known in [None, before] {
                    assert_eq!(
                        event_usage(endpoint, line.as_bytes(), known),
                        old_event_usage(endpoint, line.as_bytes(), known),
                        "{endpoint:?} {line}"
                    );
                }
                let mut tap = UsageTap::new(endpoint, "application/json");
                tap.feed(event.to_string().as_bytes());
                let old = old_body_usage(endpoint, event.to_string().as_bytes());
                assert_eq!(
                    tap.finish()
                        .map(|u| (u.prompt_tokens, u.completion_tokens, u.cached_tokens)),
                    old.map(|u| (u.prompt_tokens, u.completion_tokens, u.cached_tokens)),
                    "{event}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 300, "{compared}");
    for line in [
        "data: [DONE]",
        "data:",
        "event: x",
        "data: {\"usage\": {\"prompt_tokens\": 1}} x",
    ] {
        for endpoint in [Endpoint::Chat, Endpoint::Messages, Endpoint::Other] {
            assert_eq!(
                event_usage(endpoint, line.as_bytes(), before),
                old_event_usage(endpoint, line.as_bytes(), before)
            );
        }
    }
}
