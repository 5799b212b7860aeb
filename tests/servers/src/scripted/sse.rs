//! Streamed answers: a scripted answer as the server-sent events each real API sends for a
//! `"stream": true` request, and the hyper body that sends them (optionally spaced by the
//! response's `chunk_delay_ms`).
//!
//! - chat completions: `data: {chat.completion.chunk}` lines (role, content pieces, tool-call
//!   pieces, the finish reason, the usage chunk when `stream_options.include_usage`), then
//!   `data: [DONE]`;
//! - Responses: `event: response.*` with a `sequence_number`, ending in `response.completed`
//!   carrying the whole response (usage included; `response.incomplete` when truncated);
//! - Anthropic Messages: `message_start`, a `content_block_start`/`_delta`/`_stop` run per
//!   block (`ping` after the first start), `message_delta` (stop reason, output tokens),
//!   `message_stop`.
//!
//! Text and arguments are split into a few pieces, so a client really has to accumulate.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Bytes, Frame};
use serde_json::{json, Value};

use super::{
    anthropic_body, anthropic_usage, arguments_object, arguments_string, chat_usage,
    function_call_item_id, responses_body, responses_call_item, responses_message_item, Answer,
    Endpoint, ToolCall,
};

/// How a request asked to be streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Options {
    /// `stream_options.include_usage` (chat completions): end with a usage chunk.
    pub(super) include_usage: bool,
}

impl Options {
    /// `Some` when the request body has `"stream": true`.
    pub(super) fn of(body: &Value) -> Option<Options> {
        if body.get("stream").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(Options { include_usage })
    }
}

/// The event-stream frames of `answer` in `endpoint`'s protocol.
pub(super) fn render(endpoint: Endpoint, answer: &Answer<'_>, options: Options) -> Vec<String> {
    match endpoint {
        Endpoint::Chat => chat(answer, options.include_usage),
        Endpoint::Responses => responses(answer),
        Endpoint::Anthropic | Endpoint::Models | Endpoint::CountTokens => anthropic(answer),
    }
}

/// How many pieces a text or an arguments string is split into (at most).
const PIECES: usize = 3;

/// `s` in up to [`PIECES`] pieces of about equal length, cut at char boundaries (none for "").
fn pieces(s: &str) -> Vec<&str> {
    let per = s.chars().count().div_ceil(PIECES);
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let cut = rest.char_indices().nth(per).map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(cut);
        out.push(head);
        rest = tail;
    }
    out
}

/// One `data:`-only frame.
fn data_frame(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// One frame with an `event:` line.
fn event_frame(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

// ---------------------------------------------------------------------------------------------
// Chat completions
// ---------------------------------------------------------------------------------------------

/// A `chat.completion.chunk` with one choice (`usage: null` on each when usage comes last, as
/// the real API sends).
fn chat_chunk(a: &Answer<'_>, include_usage: bool, delta: Value, finish: Option<&str>) -> Value {
    let mut chunk = json!({
        "id": format!("chatcmpl-{}", a.id),
        "object": "chat.completion.chunk",
        "created": a.created,
        "model": a.model,
        "system_fingerprint": null,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    });
    if include_usage {
        chunk["usage"] = Value::Null;
    }
    chunk
}

/// The deltas of one tool call: id, type and name first, then the argument pieces.
fn chat_call_deltas(index: usize, call_id: &str, call: &ToolCall) -> Vec<Value> {
    let mut deltas = vec![json!({"tool_calls": [{
        "index": index, "id": call_id, "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }]})];
    let arguments = arguments_string(&call.arguments);
    for piece in pieces(&arguments) {
        deltas.push(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}));
    }
    deltas
}

fn chat(a: &Answer<'_>, include_usage: bool) -> Vec<String> {
    let first_content = if a.text.is_some() {
        json!("")
    } else {
        Value::Null
    };
    let mut deltas = vec![json!({"role": "assistant", "content": first_content})];
    for piece in pieces(a.text.unwrap_or_default()) {
        deltas.push(json!({"content": piece}));
    }
    for (index, (call_id, call)) in a.calls.iter().enumerate() {
        deltas.extend(chat_call_deltas(index, call_id, call));
    }
    let mut frames: Vec<String> = deltas
        .into_iter()
        .map(|delta| data_frame(&chat_chunk(a, include_usage, delta, None)))
        .collect();
    let finish = chat_chunk(a, include_usage, json!({}), Some(a.chat_finish_reason()));
    frames.push(data_frame(&finish));
    if include_usage {
        let mut usage = chat_chunk(a, true, json!({}), None);
        usage["choices"] = json!([]);
        usage["usage"] = chat_usage(a.usage);
        frames.push(data_frame(&usage));
    }
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

/// Responses events being written: each gets its `type` and the next `sequence_number`.
#[derive(Default)]
struct Sequence {
    frames: Vec<String>,
}

impl Sequence {
    fn push(&mut self, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.frames.len());
        self.frames.push(event_frame(kind, &fields));
    }
}

/// An `output_text` content part.
fn output_text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// The events of the message item at `output_index`.
fn responses_message_events(seq: &mut Sequence, output_index: usize, id: u64, text: &str) {
    let item_id = format!("msg_{id}");
    let mut added = responses_message_item(id, text);
    added["status"] = json!("in_progress");
    added["content"] = json!([]);
    seq.push(
        "response.output_item.added",
        json!({"output_index": output_index, "item": added}),
    );
    let at = json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
    let with = |extra: Value| {
        let mut fields = at.clone();
        if let (Some(fields), Value::Object(extra)) = (fields.as_object_mut(), extra) {
            fields.extend(extra);
        }
        fields
    };
    seq.push(
        "response.content_part.added",
        with(json!({"part": output_text_part("")})),
    );
    for piece in pieces(text) {
        seq.push(
            "response.output_text.delta",
            with(json!({"delta": piece, "logprobs": []})),
        );
    }
    seq.push(
        "response.output_text.done",
        with(json!({"text": text, "logprobs": []})),
    );
    seq.push(
        "response.content_part.done",
        with(json!({"part": output_text_part(text)})),
    );
    seq.push(
        "response.output_item.done",
        json!({"output_index": output_index, "item": responses_message_item(id, text)}),
    );
}

/// The events of the function-call item at `output_index`.
fn responses_call_events(seq: &mut Sequence, output_index: usize, call_id: &str, call: &ToolCall) {
    let item_id = function_call_item_id(call_id);
    let arguments = arguments_string(&call.arguments);
    let mut added = responses_call_item(call_id, call);
    added["status"] = json!("in_progress");
    added["arguments"] = json!("");
    seq.push(
        "response.output_item.added",
        json!({"output_index": output_index, "item": added}),
    );
    for piece in pieces(&arguments) {
        seq.push(
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": output_index, "delta": piece}),
        );
    }
    seq.push(
        "response.function_call_arguments.done",
        json!({"item_id": item_id, "output_index": output_index, "name": call.name,
               "arguments": arguments}),
    );
    seq.push(
        "response.output_item.done",
        json!({"output_index": output_index, "item": responses_call_item(call_id, call)}),
    );
}

fn responses(a: &Answer<'_>) -> Vec<String> {
    let mut seq = Sequence::default();
    let mut pending = responses_body(a);
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    pending["usage"] = Value::Null;
    seq.push("response.created", json!({"response": pending}));
    seq.push("response.in_progress", json!({"response": pending}));
    let mut output_index = 0;
    if let Some(text) = a.text {
        responses_message_events(&mut seq, output_index, a.id, text);
        output_index += 1;
    }
    for (call_id, call) in &a.calls {
        responses_call_events(&mut seq, output_index, call_id, call);
        output_index += 1;
    }
    let last = if a.truncated {
        "response.incomplete"
    } else {
        "response.completed"
    };
    seq.push(last, json!({"response": responses_body(a)}));
    seq.frames
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

/// A content block as started (empty) and its deltas.
fn anthropic_blocks(a: &Answer<'_>) -> Vec<(Value, Vec<Value>)> {
    let mut blocks = Vec::new();
    if let Some(text) = a.text {
        let deltas = pieces(text)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        blocks.push((json!({"type": "text", "text": ""}), deltas));
    }
    for (call_id, call) in &a.calls {
        let input = arguments_object(&call.arguments).to_string();
        let deltas = pieces(&input)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        let start = json!({"type": "tool_use", "id": call_id, "name": call.name, "input": {}});
        blocks.push((start, deltas));
    }
    blocks
}

fn anthropic(a: &Answer<'_>) -> Vec<String> {
    let mut frames = Vec::new();
    let mut push = |kind: &str, mut fields: Value| {
        fields["type"] = json!(kind);
        frames.push(event_frame(kind, &fields));
    };
    let mut message = anthropic_body(a);
    message["content"] = json!([]);
    message["stop_reason"] = Value::Null;
    message["usage"] = anthropic_usage(a.usage, 1);
    push("message_start", json!({"message": message}));
    let blocks = anthropic_blocks(a);
    if blocks.is_empty() {
        push("ping", json!({}));
    }
    for (index, (start, deltas)) in blocks.into_iter().enumerate() {
        push(
            "content_block_start",
            json!({"index": index, "content_block": start}),
        );
        if index == 0 {
            push("ping", json!({}));
        }
        for delta in deltas {
            push(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            );
        }
        push("content_block_stop", json!({"index": index}));
    }
    push(
        "message_delta",
        json!({
            "delta": {"stop_reason": a.anthropic_stop_reason(), "stop_sequence": null},
            "usage": anthropic_usage(a.usage, a.usage.completion_tokens),
        }),
    );
    push("message_stop", json!({}));
    frames
}

// ---------------------------------------------------------------------------------------------
// The body
// ---------------------------------------------------------------------------------------------

/// A response body sending one frame at a time, `gap` apart (all at once when zero).
pub(super) struct EventBody {
    frames: VecDeque<Bytes>,
    gap: Duration,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl EventBody {
    pub(super) fn new(frames: Vec<String>, gap: Duration) -> EventBody {
        EventBody {
            frames: frames.into_iter().map(Bytes::from).collect(),
            gap,
            pause: None,
        }
    }
}

impl hyper::body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(pause) = this.pause.as_mut() {
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.pause = None;
        }
        let Some(frame) = this.frames.pop_front() else {
            return Poll::Ready(None);
        };
        if !this.gap.is_zero() && !this.frames.is_empty() {
            this.pause = Some(Box::pin(tokio::time::sleep(this.gap)));
        }
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::super::Usage;
    use super::*;

    /// A parsed frame: the `event:` name (if any) and the `data:` text.
    #[derive(Debug)]
    struct Event {
        event: Option<String>,
        data: String,
    }

    impl Event {
        fn json(&self) -> Value {
            serde_json::from_str(&self.data).expect("JSON data")
        }
    }

    /// Parses an event stream: frames end at a blank line, each with `event:`/`data:` lines.
    fn parse(stream: &str) -> Vec<Event> {
        assert!(stream.ends_with("\n\n"), "unterminated stream: {stream:?}");
        stream
            .split("\n\n")
            .filter(|frame| !frame.is_empty())
            .map(|frame| {
                let mut event = None;
                let mut data = Vec::new();
                for line in frame.lines() {
                    match line.split_once(": ") {
                        Some(("event", name)) => event = Some(name.to_string()),
                        Some(("data", text)) => data.push(text),
                        _ => panic!("unexpected line {line:?} in {frame:?}"),
                    }
                }
                Event {
                    event,
                    data: data.join("\n"),
                }
            })
            .collect()
    }

    fn parsed(frames: &[String]) -> Vec<Event> {
        parse(&frames.concat())
    }

    const USAGE: Usage = Usage {
        prompt_tokens: 20,
        completion_tokens: 4,
        cached_tokens: 15,
    };

    fn answer<'a>(text: Option<&'a str>, calls: &'a [ToolCall]) -> Answer<'a> {
        Answer {
            id: 7,
            created: 1_700_000_000,
            model: "m",
            text,
            calls: calls
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("call_{}", i + 1), c))
                .collect(),
            usage: USAGE,
            truncated: false,
        }
    }

    fn bash_calls() -> Vec<ToolCall> {
        vec![
            ToolCall {
                name: "bash".to_string(),
                arguments: json!({"command": "ls -la /tmp"}),
                namespace: None,
            },
            ToolCall {
                name: "raw".to_string(),
                arguments: json!("{not json"),
                namespace: None,
            },
        ]
    }

    #[test]
    fn pieces_cut_at_char_boundaries() {
        assert!(pieces("").is_empty());
        assert_eq!(pieces("a"), vec!["a"]);
        assert_eq!(pieces("abcdefg"), vec!["abc", "def", "g"]);
        assert_eq!(pieces("héllo wörld").concat(), "héllo wörld");
        assert_eq!(pieces("ééé"), vec!["é", "é", "é"]);
    }

    #[test]
    fn options_from_the_request() {
        assert_eq!(Options::of(&json!({"stream": false})), None);
        assert_eq!(Options::of(&json!({})), None);
        let plain = Options::of(&json!({"stream": true})).expect("streams");
        assert!(!plain.include_usage);
        let usage = json!({"stream": true, "stream_options": {"include_usage": true}});
        assert!(Options::of(&usage).expect("streams").include_usage);
    }

    #[test]
    fn chat_chunks_in_order() {
        let calls = bash_calls();
        let a = answer(Some("let me look around"), &calls);
        let events = parsed(&chat(&a, true));
        assert!(events.iter().all(|e| e.event.is_none()));
        let (done, chunks) = events.split_last().expect("events");
        assert_eq!(done.data, "[DONE]");
        let chunks: Vec<Value> = chunks.iter().map(Event::json).collect();
        for c in &chunks {
            assert_eq!(c["object"], "chat.completion.chunk");
            assert_eq!(c["id"], "chatcmpl-7");
            assert_eq!(c["model"], "m");
        }
        let delta = |i: usize| &chunks[i]["choices"][0]["delta"];
        assert_eq!(*delta(0), json!({"role": "assistant", "content": ""}));
        // Content pieces, then per call: the head (id, type, name), then argument pieces.
        let text: String = (1..4)
            .map(|i| delta(i)["content"].as_str().expect("content"))
            .collect();
        assert_eq!(text, "let me look around");
        let head = &delta(4)["tool_calls"][0];
        assert_eq!(head["index"], 0);
        assert_eq!(head["id"], "call_1");
        assert_eq!(head["type"], "function");
        assert_eq!(head["function"]["name"], "bash");
        let mut arguments = [String::new(), String::new()];
        let mut heads = 0;
        for c in &chunks[4..chunks.len() - 2] {
            let call = &c["choices"][0]["delta"]["tool_calls"][0];
            let index = call["index"].as_u64().expect("index") as usize;
            if call.get("id").is_some() {
                heads += 1;
            } else {
                assert_eq!(call.as_object().expect("call").len(), 2, "{call}");
            }
            arguments[index].push_str(call["function"]["arguments"].as_str().expect("pieces"));
        }
        assert_eq!(heads, 2);
        assert_eq!(arguments[0], r#"{"command":"ls -la /tmp"}"#);
        assert_eq!(arguments[1], "{not json");
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        assert!(finish["usage"].is_null());
        let usage = &chunks[chunks.len() - 1];
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["prompt_tokens"], 20);
        assert_eq!(usage["usage"]["completion_tokens"], 4);
        assert_eq!(usage["usage"]["total_tokens"], 24);
        assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 15);
    }

    #[test]
    fn chat_without_usage_or_calls() {
        let a = answer(Some("hi"), &[]);
        let events = parsed(&chat(&a, false));
        let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Event::json).collect();
        assert_eq!(chunks.len(), 4, "role, two pieces, finish");
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
        assert_eq!(chunks[3]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[3]["choices"][0]["delta"], json!({}));
        // Tool calls only: the first delta's content is null.
        let calls = bash_calls();
        let a = answer(None, &calls[..1]);
        let first = parsed(&chat(&a, false))[0].json();
        assert!(first["choices"][0]["delta"]["content"].is_null());
    }

    #[test]
    fn responses_events_in_order() {
        let calls = bash_calls();
        let a = answer(Some("running it"), &calls[..1]);
        let events = parsed(&responses(&a));
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| e.event.as_deref().expect("event name"))
            .collect();
        assert_eq!(
            kinds,
            vec![
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let data: Vec<Value> = events.iter().map(Event::json).collect();
        for (n, (d, kind)) in data.iter().zip(&kinds).enumerate() {
            assert_eq!(d["type"], *kind);
            assert_eq!(d["sequence_number"], n);
        }
        assert_eq!(data[0]["response"]["status"], "in_progress");
        assert_eq!(data[0]["response"]["output"], json!([]));
        assert_eq!(data[2]["item"]["type"], "message");
        assert_eq!(data[2]["item"]["id"], "msg_7");
        let text: String = data[4..7]
            .iter()
            .map(|d| d["delta"].as_str().expect("delta"))
            .collect();
        assert_eq!(text, "running it");
        assert_eq!(data[7]["text"], "running it");
        assert_eq!(data[9]["item"]["content"][0]["text"], "running it");
        let call = &data[10]["item"];
        assert_eq!(data[10]["output_index"], 1);
        assert_eq!(call["type"], "function_call");
        assert_eq!(call["call_id"], "call_1");
        assert_eq!(call["id"], "fc_1");
        assert_eq!(call["name"], "bash");
        assert_eq!(call["arguments"], "");
        let arguments: String = data[11..14]
            .iter()
            .map(|d| d["delta"].as_str().expect("delta"))
            .collect();
        assert_eq!(arguments, r#"{"command":"ls -la /tmp"}"#);
        assert_eq!(data[14]["arguments"], arguments);
        assert_eq!(data[15]["item"]["status"], "completed");
        let done = &data[16]["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["output"].as_array().expect("output").len(), 2);
        assert_eq!(done["usage"]["input_tokens"], 20);
        assert_eq!(done["usage"]["output_tokens"], 4);
        assert_eq!(done["usage"]["total_tokens"], 24);
        assert_eq!(done["usage"]["input_tokens_details"]["cached_tokens"], 15);
    }

    #[test]
    fn anthropic_events_in_order() {
        let calls = bash_calls();
        let a = answer(Some("let me look"), &calls[..1]);
        let events = parsed(&anthropic(&a));
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| e.event.as_deref().expect("event name"))
            .collect();
        assert_eq!(
            kinds,
            vec![
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        let data: Vec<Value> = events.iter().map(Event::json).collect();
        for (d, kind) in data.iter().zip(&kinds) {
            assert_eq!(d["type"], *kind);
        }
        let message = &data[0]["message"];
        assert_eq!(message["id"], "msg_7");
        assert_eq!(message["content"], json!([]));
        assert!(message["stop_reason"].is_null());
        assert_eq!(message["usage"]["input_tokens"], 5);
        assert_eq!(message["usage"]["cache_read_input_tokens"], 15);
        assert_eq!(message["usage"]["output_tokens"], 1);
        assert_eq!(
            data[1]["content_block"],
            json!({"type": "text", "text": ""})
        );
        let text: String = data[3..6]
            .iter()
            .map(|d| {
                assert_eq!(d["index"], 0);
                assert_eq!(d["delta"]["type"], "text_delta");
                d["delta"]["text"].as_str().expect("text")
            })
            .collect();
        assert_eq!(text, "let me look");
        assert_eq!(data[6]["index"], 0);
        let tool = &data[7]["content_block"];
        assert_eq!(data[7]["index"], 1);
        assert_eq!(
            *tool,
            json!({"type": "tool_use", "id": "call_1", "name": "bash", "input": {}})
        );
        let json_text: String = data[8..11]
            .iter()
            .map(|d| {
                assert_eq!(d["delta"]["type"], "input_json_delta");
                d["delta"]["partial_json"].as_str().expect("partial_json")
            })
            .collect();
        let input: Value = serde_json::from_str(&json_text).expect("input JSON");
        assert_eq!(input, json!({"command": "ls -la /tmp"}));
        assert_eq!(data[12]["delta"]["stop_reason"], "tool_use");
        assert_eq!(data[12]["usage"]["output_tokens"], 4);
    }
}
