//! Reading token usage out of a response as it passes through, without changing a byte:
//! a JSON body (buffered up to a bound) or a server-sent event stream (parsed line by line
//! as the chunks go by), in each protocol's own shape.

use agentcompass_plugin_api::contracts::TokenUsage;
use serde::Deserialize;
use serde_json::Value;

use crate::wire;
use crate::wire::lenient::{self, lenient, maybe_object, object};
use crate::wire::view::{UsageView, WithUsage};
use crate::Protocol;

/// How much of a JSON body is kept to read its usage (larger bodies are not metered).
const MAX_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Longest SSE line kept (a longer one is skipped: no usage event is that large).
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The endpoint a request went to, which decides the shape of its usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// `/chat/completions`.
    Chat,
    /// `/responses`.
    Responses,
    /// `/messages`.
    Messages,
    /// Anything else (model lists, token counting): passed through, not metered.
    Other,
}

impl Endpoint {
    /// The endpoint of a request path relative to the API root (`/chat/completions`).
    pub(super) fn of(rest: &str) -> Endpoint {
        match rest.trim_end_matches('/') {
            "/chat/completions" => Endpoint::Chat,
            "/responses" => Endpoint::Responses,
            "/messages" => Endpoint::Messages,
            _ => Endpoint::Other,
        }
    }

    fn protocol(self) -> Option<Protocol> {
        match self {
            Endpoint::Chat => Some(Protocol::OpenAiChat),
            Endpoint::Responses => Some(Protocol::OpenAiResponses),
            Endpoint::Messages => Some(Protocol::Anthropic),
            Endpoint::Other => None,
        }
    }
}

/// One server-sent event of a streamed response, as far as its usage goes.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StreamEvent {
    /// The event's type (`message_start`, ...; `None` unless a string).
    #[serde(rename = "type", deserialize_with = "lenient")]
    kind: Option<String>,
    /// Chat's last chunk and Anthropic's `message_delta`: the usage (`None` unless an object).
    #[serde(deserialize_with = "maybe_object")]
    usage: Option<UsageView>,
    /// Responses' `response.completed` (and others): the response so far.
    #[serde(deserialize_with = "object")]
    response: WithUsage,
    /// Anthropic's `message_start`: the message so far.
    #[serde(deserialize_with = "object")]
    message: WithUsage,
}

/// Watches one response body go by and knows its usage at the end.
pub(super) struct UsageTap {
    endpoint: Endpoint,
    body: Body,
    usage: Option<TokenUsage>,
}

enum Body {
    /// A JSON body, kept until it ends (`None` once it outgrew the bound).
    Json(Option<Vec<u8>>),
    /// An event stream: the unfinished last line.
    Events(Vec<u8>),
}

impl UsageTap {
    /// A tap for a response of `endpoint` whose `Content-Type` is `content_type`.
    pub(super) fn new(endpoint: Endpoint, content_type: &str) -> UsageTap {
        let streaming = content_type
            .trim()
            .to_ascii_lowercase()
            .starts_with("text/event-stream");
        UsageTap {
            endpoint,
            body: if streaming {
                Body::Events(Vec::new())
            } else {
                Body::Json(Some(Vec::new()))
            },
            usage: None,
        }
    }

    /// Sees the next chunk of the body.
    pub(super) fn feed(&mut self, chunk: &[u8]) {
        if self.endpoint == Endpoint::Other {
            return;
        }
        match &mut self.body {
            Body::Json(kept) => {
                if let Some(buffer) = kept {
                    if buffer.len() + chunk.len() > MAX_JSON_BYTES {
                        *kept = None;
                    } else {
                        buffer.extend_from_slice(chunk);
                    }
                }
            }
            Body::Events(pending) => {
                let mut rest = chunk;
                while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
                    let (line, after) = rest.split_at(newline);
                    if pending.len() + line.len() <= MAX_LINE_BYTES {
                        pending.extend_from_slice(line);
                        let line = std::mem::take(pending);
                        self.usage = event_usage(self.endpoint, &line, self.usage);
                    } else {
                        pending.clear();
                    }
                    rest = &after[1..];
                }
                if pending.len() + rest.len() <= MAX_LINE_BYTES {
                    pending.extend_from_slice(rest);
                } else {
                    pending.clear();
                }
            }
        }
    }

    /// The usage of the whole response (one request), once the body ended; `None` when it
    /// carried none (or was not a generation).
    pub(super) fn finish(mut self) -> Option<TokenUsage> {
        let protocol = self.endpoint.protocol()?;
        match &mut self.body {
            Body::Json(Some(buffer)) => {
                let json: Value = serde_json::from_slice(buffer).ok()?;
                let usage = lenient::read::<WithUsage>(&json)?.usage?;
                Some(wire::usage_of(protocol, &usage))
            }
            Body::Json(None) => None,
            Body::Events(pending) => {
                let line = std::mem::take(pending);
                event_usage(self.endpoint, &line, self.usage)
            }
        }
        .map(|mut usage| {
            usage.requests = 1;
            usage
        })
    }
}

/// The usage known after one SSE line (`data: {...}`), given what was known before.
fn event_usage(endpoint: Endpoint, line: &[u8], before: Option<TokenUsage>) -> Option<TokenUsage> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(data) = line.strip_prefix(b"data:") else {
        return before;
    };
    let Ok(event) = serde_json::from_slice::<Value>(data.trim_ascii()) else {
        return before;
    };
    let Some(event) = lenient::read::<StreamEvent>(&event) else {
        return before;
    };
    match endpoint {
        // The last chunk (with `stream_options.include_usage`) carries the request's usage.
        Endpoint::Chat => match event.usage {
            Some(usage) => Some(wire::usage_of(Protocol::OpenAiChat, &usage)),
            None => before,
        },
        // `response.completed` (or `.incomplete`/`.failed`) carries the final response.
        Endpoint::Responses => match event.response.usage {
            Some(usage) => Some(wire::usage_of(Protocol::OpenAiResponses, &usage)),
            None => before,
        },
        // `message_start` has the input side, `message_delta` the cumulative output side
        // (and, in newer API versions, the input side again).
        Endpoint::Messages => {
            let usage = match event.kind.as_deref() {
                Some("message_start") => event.message.usage,
                Some("message_delta") => event.usage,
                _ => None,
            };
            let Some(usage) = usage else {
                return before;
            };
            let seen = wire::usage_of(Protocol::Anthropic, &usage);
            let mut merged = before.unwrap_or_default();
            if usage.input_tokens.present {
                merged.prompt_tokens = seen.prompt_tokens;
                merged.cached_tokens = seen.cached_tokens;
            }
            if usage.output_tokens.present {
                merged.completion_tokens = seen.completion_tokens;
            }
            Some(merged)
        }
        Endpoint::Other => before,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(endpoint: Endpoint, content_type: &str, body: &str, piece: usize) -> Option<TokenUsage> {
        let mut tap = UsageTap::new(endpoint, content_type);
        for chunk in body.as_bytes().chunks(piece) {
            tap.feed(chunk);
        }
        tap.finish()
    }

    fn counts(usage: Option<TokenUsage>) -> Option<(u64, u64, u64, u64)> {
        usage.map(|u| {
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.cached_tokens,
                u.requests,
            )
        })
    }

    #[test]
    fn json_bodies_are_metered_in_each_protocol() {
        let chat = r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#;
        let responses = r#"{"output":[],"usage":{"input_tokens":9,"output_tokens":2,"input_tokens_details":{"cached_tokens":1}}}"#;
        let messages = r#"{"content":[],"usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":2}}"#;
        for piece in [1, 7, 4096] {
            let json = "application/json";
            assert_eq!(
                counts(fed(Endpoint::Chat, json, chat, piece)),
                Some((12, 3, 4, 1))
            );
            assert_eq!(
                counts(fed(Endpoint::Responses, json, responses, piece)),
                Some((9, 2, 1, 1))
            );
            assert_eq!(
                counts(fed(Endpoint::Messages, json, messages, piece)),
                Some((7, 7, 2, 1))
            );
        }
        assert_eq!(
            counts(fed(Endpoint::Chat, "application/json", "{}", 4)),
            None
        );
        assert_eq!(
            counts(fed(Endpoint::Other, "application/json", chat, 4)),
            None
        );
        assert_eq!(
            counts(fed(Endpoint::Chat, "application/json", "not json", 4)),
            None
        );
    }

    #[test]
    fn event_streams_are_metered_in_each_protocol() {
        let chat = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
                    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\n\
                    data: [DONE]\n\n";
        let responses = "event: response.created\r\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\r\n\r\n\
                         event: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":8,\"output_tokens\":5}}}\r\n\r\n";
        let messages = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":6,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n\
                        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n\
                        event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":11}}\n\n\
                        event: message_stop\ndata: {\"type\":\"message_stop\"}";
        let sse = "text/event-stream; charset=utf-8";
        for piece in [1, 5, 64, 4096] {
            assert_eq!(
                counts(fed(Endpoint::Chat, sse, chat, piece)),
                Some((10, 2, 0, 1))
            );
            assert_eq!(
                counts(fed(Endpoint::Responses, sse, responses, piece)),
                Some((8, 5, 0, 1))
            );
            assert_eq!(
                counts(fed(Endpoint::Messages, sse, messages, piece)),
                Some((9, 11, 3, 1))
            );
        }
        let no_usage = "data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
        assert_eq!(counts(fed(Endpoint::Chat, sse, no_usage, 3)), None);
    }

    #[test]
    fn paths_name_their_endpoints() {
        assert_eq!(Endpoint::of("/chat/completions"), Endpoint::Chat);
        assert_eq!(Endpoint::of("/responses/"), Endpoint::Responses);
        assert_eq!(Endpoint::of("/messages"), Endpoint::Messages);
        assert_eq!(Endpoint::of("/messages/count_tokens"), Endpoint::Other);
        assert_eq!(Endpoint::of("/models"), Endpoint::Other);
    }
}

#[cfg(test)]
mod equivalence;
