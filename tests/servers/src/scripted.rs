//! A scripted model endpoint on loopback: a fake OpenAI-compatible (chat completions and
//! Responses) and Anthropic-compatible (Messages) server for end-to-end tests and demos. The
//! auxiliary calls agent CLIs make on their own get sensible answers: `GET /v1/models` lists
//! `scripted-llm` and the models the rules name, `POST /v1/messages/count_tokens` counts about
//! four characters a token; title or summary requests are ordinary model calls (a rule answers
//! them, e.g. with `last_user_contains`).
//!
//! Real HTTP/1.1 over TCP on 127.0.0.1, served by hyper (`Content-Length` or chunked bodies,
//! keep-alive, `Connection: close`, `Expect: 100-continue`, malformed requests answered 400).
//!
//! A [`Script`] is a list of rules; each request goes to the first rule whose `match` holds, and
//! that rule's responses are served in order (after the last, the last repeats, or with
//! `"cycle": true` the list starts over; with the script's `"after_last": "error"` — the
//! `scripted-llm` command's default — a request past a rule's last response is answered 410
//! `scripted-llm: script exhausted after N replies (rule I); restart scripted-llm to replay it`
//! and the server says so on stderr, so a replayed demo never scores 0 in silence). Each response is rendered in the protocol of the
//! endpoint that was hit: as one JSON body, or — when the request has `"stream": true` and the
//! response is an answer — as the server-sent events the real API streams (see
//! `scripted/sse.rs`; `stream_options.include_usage` adds the chat usage chunk). Scripted error
//! statuses and `raw` bodies are never streamed. `delay_ms` delays the answer (the response
//! head); `chunk_delay_ms` spaces a streamed answer's events. `"truncated": true` makes an
//! answer one cut short by the output-token limit (`length`, `max_tokens`, `incomplete`). See the `scripted-llm` binary
//! (`src/bin/scripted-llm.rs`) for the command line, or use [`spawn_on_thread`] /
//! [`serve`] in-process.
//!
//! A tool call may name the Responses `namespace` its tool belongs to (Codex offers each MCP
//! server's tools as one `namespace` tool and expects calls naming it).
//!
//! Match keys (all given must hold): `path` (exact, no query string), `model` (exact),
//! `last_user_contains` (a substring of the latest user/tool turn), `any_user_contains` (of any
//! user/tool message), `any_message_contains` (of any message, system prompts included) and
//! `assistant_turns` (the number of assistant turns already in the conversation — runs of
//! consecutive assistant items, so one turn's parallel tool calls count once). With
//! `any_user_contains` + `assistant_turns` a script is stateless: it answers by the
//! conversation, not by how many requests came before, so several tasks can share a server.
//!
//! Every request is logged (the `--log` JSONL, [`ScriptedServer::requests`]) as
//! `{"method", "path", "authorized", "auth", "headers", "stream", "body", "status"}` plus
//! `"rule"`/`"response"` (indices) when a rule answered. `headers` are the header *names*,
//! lowercase, sorted, without repeats; `auth` is `"expected"` (a key was presented in
//! `x-api-key` or `Authorization: Bearer` and it is the script's `require_key`), `"other"` (some
//! other key, or any key when the script requires none) or `"none"`. No key value is ever logged.
//! A script's `"concurrency": {"limit", "status", "retry_after"}` makes the server a
//! rate-limited API: a model call beyond `limit` in flight is refused (logged with
//! `"limited": true`), an admitted one is logged with `"in_flight"` (see [`Concurrency`]).
//!
//! ```json
//! {
//!   "require_key": "sk-test",
//!   "rules": [
//!     {"match": {"last_user_contains": "flaky"},
//!      "responses": [{"status": 429}, {"text": "ok after retry"}]},
//!     {"match": {"any_user_contains": "/app/hello.txt", "assistant_turns": 1},
//!      "responses": [{"text": "wrote /app/hello.txt"}]},
//!     {"match": {"path": "/v1/chat/completions", "model": "gpt-test"},
//!      "responses": [
//!        {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
//!         "usage": {"prompt_tokens": 12, "completion_tokens": 3, "cached_tokens": 4}},
//!        {"text": "done", "delay_ms": 50, "chunk_delay_ms": 10},
//!        {"text": "cut sh", "truncated": true}
//!      ]},
//!     {"responses": [{"raw": "not json {"}], "cycle": true}
//!   ]
//! }
//! ```

use std::fmt;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::net::{TcpListener, TcpStream};

// The event-stream renderings.
mod sse;

// ---------------------------------------------------------------------------------------------
// The script
// ---------------------------------------------------------------------------------------------

/// A parsed script: an optional required key and the rules, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// When set, requests must carry `Authorization: Bearer KEY` (OpenAI endpoints) or
    /// `x-api-key: KEY` or `Authorization: Bearer KEY` (Anthropic, whose SDK 2.x sends its API
    /// key as a bearer token) or get a 401.
    pub require_key: Option<String>,
    /// The rules; the first whose conditions hold answers.
    pub rules: Vec<Rule>,
    /// A limit on model calls in flight at once (`"concurrency"`), as a rate-limited API
    /// enforces one.
    pub concurrency: Option<Concurrency>,
    /// What a request past a (non-`cycle`) rule's last response gets (`"after_last"`;
    /// `None`: the server's default — the last response again in-process, an error from the
    /// `scripted-llm` command).
    pub after_last: Option<AfterLast>,
    /// The file the script was loaded from (named by the 401 answer).
    pub source: Option<String>,
}

/// `"after_last"`: what a request past a rule's last response gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLast {
    /// `"repeat"`: the last response again.
    Repeat,
    /// `"error"`: 410 naming the used-up script, and a line on stderr.
    Error,
}

/// `"concurrency": {"limit": 4, "status": 429, "retry_after": 1}`: a model call that finds
/// `limit` others in flight (from its arrival until its answer's head, delay included) is
/// answered `status` (429 by default, or Anthropic's 529) with the protocol's rate-limit
/// error body (`rate_limit_error`, `overloaded_error`) and `Retry-After` (seconds, or any
/// text such as an HTTP date; none when absent), and is logged with `"limited": true`.
/// Admitted calls are logged with `"in_flight"`, the calls in flight counting themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct Concurrency {
    /// Model calls answered at once.
    pub limit: u64,
    /// The status of a refused call.
    pub status: u16,
    /// The `Retry-After` header of a refused call.
    pub retry_after: Option<String>,
}

fn parse_concurrency(value: &Value) -> Result<Concurrency, ScriptError> {
    let field = "concurrency";
    let map = as_object(value, field)?;
    check_keys(map, &["limit", "status", "retry_after"], field)?;
    let limit = match opt_u64(map, "limit", field)? {
        Some(limit) if limit > 0 => limit,
        _ => return err("concurrency.limit", "expected a positive integer"),
    };
    let status = match opt_u64(map, "status", field)? {
        None => 429,
        Some(status @ 400..=599) => status as u16,
        Some(_) => return err("concurrency.status", "expected an error status (400-599)"),
    };
    let retry_after = match map.get("retry_after") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return err("concurrency.retry_after", "expected seconds or a string"),
    };
    Ok(Concurrency {
        limit,
        status,
        retry_after,
    })
}

/// One rule: conditions and the responses served in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The conditions (all must hold; none means "always").
    pub conditions: Match,
    /// The responses, served in order (never empty).
    pub responses: Vec<Response>,
    /// Start over after the last response instead of repeating it.
    pub cycle: bool,
}

/// A rule's `match` conditions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Match {
    /// The request path, exactly (without a query string).
    pub path: Option<String>,
    /// A substring of the latest user/tool message text.
    pub last_user_contains: Option<String>,
    /// A substring of any message's text (system prompts and instructions included).
    pub any_message_contains: Option<String>,
    /// A substring of any user or tool message's text (not only the latest turn's; system
    /// prompts and assistant messages excluded).
    pub any_user_contains: Option<String>,
    /// The number of assistant turns already in the conversation, exactly: runs of consecutive
    /// assistant items (chat and Anthropic `assistant` messages; Responses `function_call`,
    /// assistant `message` and `reasoning` items), so parallel tool calls of one turn count
    /// once. 0 for the first request of a task.
    pub assistant_turns: Option<u64>,
    /// The request's `model`, exactly.
    pub model: Option<String>,
}

/// One scripted response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Sleep this long before answering.
    pub delay_ms: u64,
    /// Sleep this long between the events of a streamed answer (`"stream": true` requests).
    pub chunk_delay_ms: u64,
    /// What to answer.
    pub kind: ResponseKind,
}

/// What a scripted response answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseKind {
    /// A normal answer: text, tool calls, or both.
    Answer {
        /// The assistant text.
        text: Option<String>,
        /// Tool calls (ids `call_<n>` are generated).
        tool_calls: Vec<ToolCall>,
        /// Token usage to report.
        usage: Usage,
        /// Cut short by the output-token limit: finish reason `length` (chat), stop reason
        /// `max_tokens` (Anthropic), an `incomplete` response (Responses).
        truncated: bool,
    },
    /// An error status with an optional raw body (a protocol-shaped JSON error otherwise).
    Status {
        /// The HTTP status (200..=599).
        status: u16,
        /// The raw body.
        body: Option<String>,
    },
    /// A 200 with this body, verbatim (for malformed answers).
    Raw(String),
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool name.
    pub name: String,
    /// The arguments: a JSON value (serialised for OpenAI), or a string sent verbatim.
    pub arguments: Value,
    /// The Responses tool namespace the tool belongs to (Codex offers each MCP server's
    /// tools as a `namespace` tool, `mcp__<server>`, and expects calls naming it).
    pub namespace: Option<String>,
}

/// Token usage to report. `prompt_tokens` includes `cached_tokens` (OpenAI semantics); the
/// Anthropic rendering reports `input_tokens = prompt_tokens - cached_tokens` and
/// `cache_read_input_tokens = cached_tokens`, as the real API does.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Input tokens, cached ones included.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Input tokens served from cache.
    pub cached_tokens: u64,
}

/// A script error: the offending field (`rules[0].responses[1].status`) and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptError {
    /// The field path (empty for the top level).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScriptError {}

fn err<T>(field: &str, message: impl Into<String>) -> Result<T, ScriptError> {
    Err(ScriptError {
        field: field.to_string(),
        message: message.into(),
    })
}

fn sub(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_string()
    } else {
        format!("{field}.{key}")
    }
}

fn as_object<'a>(value: &'a Value, field: &str) -> Result<&'a Map<String, Value>, ScriptError> {
    match value.as_object() {
        Some(map) => Ok(map),
        None => err(field, "expected an object"),
    }
}

fn check_keys(map: &Map<String, Value>, allowed: &[&str], field: &str) -> Result<(), ScriptError> {
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            return err(
                &sub(field, key),
                format!("unknown field (expected one of: {})", allowed.join(", ")),
            );
        }
    }
    Ok(())
}

fn opt_string(
    map: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<String>, ScriptError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => err(&sub(field, key), "expected a string"),
    }
}

fn opt_u64(map: &Map<String, Value>, key: &str, field: &str) -> Result<Option<u64>, ScriptError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(n)),
            None => err(&sub(field, key), "expected a non-negative integer"),
        },
    }
}

impl Script {
    /// Parses a script from JSON text.
    pub fn parse(text: &str) -> Result<Script, ScriptError> {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Script::from_json(&value),
            Err(e) => err("", format!("invalid JSON: {e}")),
        }
    }

    /// Reads and parses a script file; the error names the file (and the field).
    pub fn load(path: &Path) -> Result<Script, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read script: {e}", path.display()))?;
        let mut script = Script::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        script.source = Some(path.display().to_string());
        Ok(script)
    }

    /// Builds a script from a JSON value: `{"require_key"?, "rules": [...]}` or a bare array of
    /// rules.
    pub fn from_json(value: &Value) -> Result<Script, ScriptError> {
        let mut concurrency = None;
        let mut after_last = None;
        let (require_key, rules_value) = match value {
            Value::Array(_) => (None, value),
            Value::Object(map) => {
                check_keys(
                    map,
                    &["require_key", "rules", "concurrency", "after_last"],
                    "",
                )?;
                after_last = match map.get("after_last") {
                    None | Some(Value::Null) => None,
                    Some(v) if v == "repeat" => Some(AfterLast::Repeat),
                    Some(v) if v == "error" => Some(AfterLast::Error),
                    Some(_) => return err("after_last", "expected \"repeat\" or \"error\""),
                };
                let require_key = opt_string(map, "require_key", "")?;
                if require_key.as_deref() == Some("") {
                    return err("require_key", "must not be empty");
                }
                if let Some(limit) = map.get("concurrency").filter(|v| !v.is_null()) {
                    concurrency = Some(parse_concurrency(limit)?);
                }
                match map.get("rules") {
                    Some(rules) => (require_key, rules),
                    None => return err("rules", "missing"),
                }
            }
            _ => return err("", "expected an object with `rules`, or an array of rules"),
        };
        let Some(items) = rules_value.as_array() else {
            return err("rules", "expected an array");
        };
        let mut rules = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            rules.push(parse_rule(item, &format!("rules[{i}]"))?);
        }
        Ok(Script {
            require_key,
            rules,
            concurrency,
            after_last,
            source: None,
        })
    }
}

fn parse_rule(value: &Value, field: &str) -> Result<Rule, ScriptError> {
    let map = as_object(value, field)?;
    check_keys(map, &["match", "responses", "response", "cycle"], field)?;
    let conditions = match map.get("match") {
        None | Some(Value::Null) => Match::default(),
        Some(m) => {
            let mf = sub(field, "match");
            let mm = as_object(m, &mf)?;
            check_keys(
                mm,
                &[
                    "path",
                    "last_user_contains",
                    "any_message_contains",
                    "any_user_contains",
                    "assistant_turns",
                    "model",
                ],
                &mf,
            )?;
            Match {
                path: opt_string(mm, "path", &mf)?,
                last_user_contains: opt_string(mm, "last_user_contains", &mf)?,
                any_message_contains: opt_string(mm, "any_message_contains", &mf)?,
                any_user_contains: opt_string(mm, "any_user_contains", &mf)?,
                assistant_turns: opt_u64(mm, "assistant_turns", &mf)?,
                model: opt_string(mm, "model", &mf)?,
            }
        }
    };
    let cycle = match map.get("cycle") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return err(&sub(field, "cycle"), "expected true or false"),
    };
    let mut responses = Vec::new();
    match (map.get("responses"), map.get("response")) {
        (Some(_), Some(_)) => {
            return err(
                &sub(field, "response"),
                "give either `responses` or `response`, not both",
            )
        }
        (Some(list), None) => {
            let rf = sub(field, "responses");
            let Some(items) = list.as_array() else {
                return err(&rf, "expected an array");
            };
            if items.is_empty() {
                return err(&rf, "must not be empty");
            }
            for (i, item) in items.iter().enumerate() {
                responses.push(parse_response(item, &format!("{rf}[{i}]"))?);
            }
        }
        (None, Some(one)) => responses.push(parse_response(one, &sub(field, "response"))?),
        (None, None) => return err(&sub(field, "responses"), "missing"),
    }
    Ok(Rule {
        conditions,
        responses,
        cycle,
    })
}

fn parse_response(value: &Value, field: &str) -> Result<Response, ScriptError> {
    let map = as_object(value, field)?;
    check_keys(
        map,
        &[
            "text",
            "tool_calls",
            "usage",
            "status",
            "body",
            "raw",
            "delay_ms",
            "chunk_delay_ms",
            "truncated",
        ],
        field,
    )?;
    let delay_ms = opt_u64(map, "delay_ms", field)?.unwrap_or(0);
    let chunk_delay_ms = opt_u64(map, "chunk_delay_ms", field)?.unwrap_or(0);
    let has = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    let answer = has("text") || has("tool_calls");
    let kinds = [answer, has("status"), has("raw")]
        .iter()
        .filter(|b| **b)
        .count();
    if kinds != 1 {
        return err(
            field,
            "give exactly one of `text`/`tool_calls`, `status` or `raw`",
        );
    }
    let kind = if let Some(raw) = map.get("raw").filter(|v| !v.is_null()) {
        for key in ["usage", "body", "chunk_delay_ms", "truncated"] {
            if map.contains_key(key) {
                return err(&sub(field, key), "not allowed with `raw`");
            }
        }
        match raw {
            Value::String(s) => ResponseKind::Raw(s.clone()),
            _ => return err(&sub(field, "raw"), "expected a string"),
        }
    } else if has("status") {
        for key in ["usage", "chunk_delay_ms", "truncated"] {
            if map.contains_key(key) {
                return err(&sub(field, key), "not allowed with `status`");
            }
        }
        let sf = sub(field, "status");
        let status = match opt_u64(map, "status", field)? {
            Some(n @ 200..=599) => n as u16,
            _ => return err(&sf, "expected an HTTP status between 200 and 599"),
        };
        ResponseKind::Status {
            status,
            body: opt_string(map, "body", field)?,
        }
    } else {
        if map.contains_key("body") {
            return err(&sub(field, "body"), "only allowed with `status`");
        }
        let text = opt_string(map, "text", field)?;
        let mut tool_calls = Vec::new();
        if let Some(calls) = map.get("tool_calls").filter(|v| !v.is_null()) {
            let tf = sub(field, "tool_calls");
            let Some(items) = calls.as_array() else {
                return err(&tf, "expected an array");
            };
            for (i, item) in items.iter().enumerate() {
                let cf = format!("{tf}[{i}]");
                let cm = as_object(item, &cf)?;
                check_keys(cm, &["name", "arguments", "namespace"], &cf)?;
                let Some(name) = opt_string(cm, "name", &cf)? else {
                    return err(&sub(&cf, "name"), "missing");
                };
                let arguments = cm.get("arguments").cloned().unwrap_or_else(|| json!({}));
                let namespace = opt_string(cm, "namespace", &cf)?;
                tool_calls.push(ToolCall {
                    name,
                    arguments,
                    namespace,
                });
            }
        }
        if text.is_none() && tool_calls.is_empty() {
            return err(
                &sub(field, "tool_calls"),
                "must not be empty without `text`",
            );
        }
        let usage = match map.get("usage") {
            None | Some(Value::Null) => Usage::default(),
            Some(u) => {
                let uf = sub(field, "usage");
                let um = as_object(u, &uf)?;
                check_keys(
                    um,
                    &["prompt_tokens", "completion_tokens", "cached_tokens"],
                    &uf,
                )?;
                Usage {
                    prompt_tokens: opt_u64(um, "prompt_tokens", &uf)?.unwrap_or(0),
                    completion_tokens: opt_u64(um, "completion_tokens", &uf)?.unwrap_or(0),
                    cached_tokens: opt_u64(um, "cached_tokens", &uf)?.unwrap_or(0),
                }
            }
        };
        let truncated = match map.get("truncated") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return err(&sub(field, "truncated"), "expected true or false"),
        };
        ResponseKind::Answer {
            text,
            tool_calls,
            usage,
            truncated,
        }
    };
    Ok(Response {
        delay_ms,
        chunk_delay_ms,
        kind,
    })
}

// ---------------------------------------------------------------------------------------------
// Request text extraction (all three protocols' shapes)
// ---------------------------------------------------------------------------------------------

/// Keys whose string values are identifiers, not message text.
const NON_TEXT_KEYS: &[&str] = &[
    "role",
    "type",
    "id",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "status",
    "cache_control",
];

fn collect_text(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        Value::Array(items) => items.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                if !NON_TEXT_KEYS.contains(&k.as_str()) {
                    collect_text(v, out);
                }
            }
        }
        _ => {}
    }
}

/// The conversation as (role, text) pairs; roles normalised to system/user/assistant/tool.
fn conversation(body: &Value) -> Vec<(&'static str, String)> {
    let text_of = |v: &Value| {
        let mut s = String::new();
        collect_text(v, &mut s);
        s
    };
    let mut out = Vec::new();
    // Anthropic `system`, Responses `instructions`.
    for key in ["system", "instructions"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            out.push(("system", text_of(v)));
        }
    }
    let mut items: Vec<&Value> = Vec::new();
    if let Some(Value::Array(messages)) = body.get("messages") {
        items.extend(messages);
    }
    match body.get("input") {
        Some(Value::String(s)) => out.push(("user", s.clone())),
        Some(Value::Array(input)) => items.extend(input),
        _ => {}
    }
    for item in items {
        let role = match item.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => "system",
            Some("user") => "user",
            Some("assistant") => "assistant",
            Some("tool" | "function") => "tool",
            Some(_) => "other",
            None => match item.get("type").and_then(Value::as_str) {
                Some("function_call_output" | "custom_tool_call_output") => "tool",
                Some("function_call" | "reasoning" | "custom_tool_call") => "assistant",
                _ => "other",
            },
        };
        out.push((role, text_of(item)));
    }
    out
}

/// The text of the latest user/tool turn: the user/tool messages after the last assistant
/// message (several, after parallel tool calls), or else the last user/tool message.
fn last_user_text(conv: &[(&'static str, String)]) -> String {
    let is_user = |r: &str| r == "user" || r == "tool";
    let start = conv
        .iter()
        .rposition(|(r, _)| *r == "assistant")
        .map_or(0, |i| i + 1);
    let tail: Vec<&str> = conv[start..]
        .iter()
        .filter(|(r, _)| is_user(r))
        .map(|(_, t)| t.as_str())
        .collect();
    if !tail.is_empty() {
        return tail.join("\n");
    }
    conv.iter()
        .rev()
        .find(|(r, _)| is_user(r))
        .map(|(_, t)| t.clone())
        .unwrap_or_default()
}

/// The assistant turns in the conversation: runs of consecutive assistant items.
fn assistant_turns(conv: &[(&'static str, String)]) -> u64 {
    let mut turns = 0;
    let mut previous = "";
    for (role, _) in conv {
        if *role == "assistant" && previous != "assistant" {
            turns += 1;
        }
        previous = role;
    }
    turns
}

impl Match {
    /// Whether a request (path and parsed body) meets every condition.
    pub fn matches(&self, path: &str, body: &Value) -> bool {
        if self.path.as_deref().is_some_and(|p| p != path) {
            return false;
        }
        if let Some(model) = &self.model {
            if body.get("model").and_then(Value::as_str) != Some(model.as_str()) {
                return false;
            }
        }
        if self.last_user_contains.is_none()
            && self.any_message_contains.is_none()
            && self.any_user_contains.is_none()
            && self.assistant_turns.is_none()
        {
            return true;
        }
        let conv = conversation(body);
        if let Some(turns) = self.assistant_turns {
            if assistant_turns(&conv) != turns {
                return false;
            }
        }
        if let Some(needle) = &self.last_user_contains {
            if !last_user_text(&conv).contains(needle.as_str()) {
                return false;
            }
        }
        if let Some(needle) = &self.any_message_contains {
            if !conv.iter().any(|(_, t)| t.contains(needle.as_str())) {
                return false;
            }
        }
        if let Some(needle) = &self.any_user_contains {
            if !conv
                .iter()
                .any(|(r, t)| (*r == "user" || *r == "tool") && t.contains(needle.as_str()))
            {
                return false;
            }
        }
        true
    }
}

// ---------------------------------------------------------------------------------------------
// Server state and request handling
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Chat,
    Responses,
    Anthropic,
    Models,
    /// Anthropic's token counting (`/v1/messages/count_tokens`), answered from the body.
    CountTokens,
}

impl Endpoint {
    fn of(path: &str) -> Option<Endpoint> {
        match path {
            "/v1/chat/completions" => Some(Endpoint::Chat),
            "/v1/responses" => Some(Endpoint::Responses),
            "/v1/messages" => Some(Endpoint::Anthropic),
            "/v1/models" => Some(Endpoint::Models),
            "/v1/messages/count_tokens" => Some(Endpoint::CountTokens),
            _ => None,
        }
    }
}

struct State {
    script: Script,
    cursors: Mutex<Vec<usize>>,
    counter: AtomicU64,
    call_counter: AtomicU64,
    log: Option<Mutex<File>>,
    record: Option<Arc<Mutex<Vec<Value>>>>,
    /// The host's endpoint checks served (answered, not logged).
    endpoint_checks: Arc<AtomicU64>,
    /// Model calls in flight now (for the script's `concurrency`).
    in_flight: Arc<AtomicU64>,
}

/// A model call's place among those in flight; given back when dropped.
struct InFlight(Arc<AtomicU64>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The `User-Agent` prefix of agentcompass-host's endpoint check before a run's first task
/// (`GET .../models`): it is answered as any listing is, but counted apart from the request
/// log, so that a test reads only the run's own model calls there.
pub const ENDPOINT_CHECK_USER_AGENT_PREFIX: &str = "agentcompass-host-endpoint-check/";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    fn new(
        script: Script,
        log: Option<&Path>,
        record: Option<Arc<Mutex<Vec<Value>>>>,
    ) -> std::io::Result<State> {
        let log = match log {
            Some(path) => Some(Mutex::new(open_log(path)?)),
            None => None,
        };
        Ok(State {
            cursors: Mutex::new(vec![0; script.rules.len()]),
            script,
            counter: AtomicU64::new(0),
            call_counter: AtomicU64::new(0),
            log,
            record,
            endpoint_checks: Arc::new(AtomicU64::new(0)),
            in_flight: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Takes a place among the model calls in flight: the place and how many are in flight
    /// with it, or `None` when the script's concurrency limit is reached.
    fn enter(&self) -> Option<(InFlight, u64)> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let place = InFlight(Arc::clone(&self.in_flight));
        match &self.script.concurrency {
            Some(limit) if now > limit.limit => None,
            _ => Some((place, now)),
        }
    }

    fn next_id(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Tool-call ids count on their own: `call_1`, `call_2`, ... per server.
    fn next_call_id(&self) -> String {
        format!(
            "call_{}",
            self.call_counter.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    /// The first matching rule's index and its next response (advancing its cursor); `Err`
    /// with the rule's index and reply count when it is used up and the script says
    /// `"after_last": "error"`.
    fn take(&self, path: &str, body: &Value) -> Option<Taken> {
        let (index, rule) = self
            .script
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.conditions.matches(path, body))?;
        let mut cursors = lock(&self.cursors);
        let cursor = cursors[index];
        let len = rule.responses.len();
        let used_up = !rule.cycle && cursor >= len;
        if used_up && self.script.after_last == Some(AfterLast::Error) {
            return Some(Err((index, len)));
        }
        let chosen = if rule.cycle {
            cursor % len
        } else {
            cursor.min(len - 1)
        };
        cursors[index] = cursor.saturating_add(1);
        Some(Ok((index, chosen, rule.responses[chosen].clone())))
    }

    fn record(&self, entry: Value) {
        if let Some(log) = &self.log {
            let mut file = lock(log);
            let line = format!("{entry}\n");
            if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
                eprintln!("scripted-llm: cannot write the request log: {e}");
            }
        }
        if let Some(record) = &self.record {
            lock(record).push(entry);
        }
    }
}

/// A rule's next response as (rule, response index, response), or, for a used-up rule of a
/// script that says `"after_last": "error"`, (rule, its reply count).
type Taken = Result<(usize, usize, Response), (usize, usize)>;

/// Opens (creating) a request log for appending.
pub fn open_log(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct HttpResponse {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Body,
}

/// A response body: bytes sent at once, or server-sent events.
enum Body {
    /// A JSON (or scripted raw) body.
    Bytes(Vec<u8>),
    /// `text/event-stream` frames, `gap` apart.
    Events { frames: Vec<String>, gap: Duration },
}

impl HttpResponse {
    fn bytes(status: u16, body: Vec<u8>) -> HttpResponse {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: Body::Bytes(body),
        }
    }

    fn json(status: u16, body: &Value) -> HttpResponse {
        HttpResponse::bytes(status, body.to_string().into_bytes())
    }

    fn events(frames: Vec<String>, gap: Duration) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: Body::Events { frames, gap },
        }
    }

    fn is_stream(&self) -> bool {
        matches!(self.body, Body::Events { .. })
    }
}

fn error_type(status: u16) -> &'static str {
    match status {
        400 | 405 | 413 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn error_body(endpoint: Option<Endpoint>, status: u16, message: &str) -> Value {
    let kind = error_type(status);
    if matches!(endpoint, Some(Endpoint::Anthropic | Endpoint::CountTokens)) {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else {
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
    }
}

fn error_response(endpoint: Option<Endpoint>, status: u16, message: &str) -> HttpResponse {
    let mut resp = HttpResponse::json(status, &error_body(endpoint, status, message));
    if status == 429 {
        resp.headers.push(("retry-after", "0".to_string()));
    }
    resp
}

fn authorized(state: &State, endpoint: Option<Endpoint>, req: &Request) -> bool {
    let Some(key) = &state.script.require_key else {
        return true;
    };
    let bearer = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|v| v.trim() == key);
    let api_key = req.header("x-api-key").is_some_and(|v| v == key);
    match endpoint {
        Some(Endpoint::Chat | Endpoint::Responses) => bearer,
        Some(Endpoint::Anthropic | Endpoint::CountTokens) => api_key || bearer,
        Some(Endpoint::Models) | None => bearer || api_key,
    }
}

/// Why a request's key was refused and where the expected one is set (the script's
/// `require_key`, in its file), never a key itself.
fn unauthorized_message(state: &State, req: &Request) -> String {
    let sent = match auth_outcome(state, req) {
        "none" => "no key",
        "expected" => "the key where this endpoint does not read it",
        _ => "another key",
    };
    let place = state.script.source.as_deref().unwrap_or("its script");
    format!(
        "missing or invalid API key: this request sent {sent}; scripted-llm expects the key set \
         as `require_key` in {place}, as `Authorization: Bearer KEY` (or `x-api-key: KEY` for \
         Anthropic)"
    )
}

/// Which key the request presented, for the log (never the key itself): `"expected"` when it
/// presented a key (`x-api-key` or `Authorization: Bearer`) and every key presented is the
/// script's `require_key`, `"other"` when it presented any other key (or the script requires
/// none), `"none"` when it presented no key.
fn auth_outcome(state: &State, req: &Request) -> &'static str {
    let presented: Vec<&str> = req
        .headers
        .iter()
        .filter_map(|(name, value)| match name.as_str() {
            "x-api-key" => Some(value.as_str()),
            "authorization" => Some(value.strip_prefix("Bearer ").unwrap_or(value).trim()),
            _ => None,
        })
        .collect();
    if presented.is_empty() {
        return "none";
    }
    match &state.script.require_key {
        Some(key) if presented.iter().all(|p| p == key) => "expected",
        _ => "other",
    }
}

/// The request's header names, lowercase, sorted and without repeats (never the values).
fn header_names(req: &Request) -> Vec<&str> {
    let mut names: Vec<&str> = req.headers.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn handle(state: &State, req: &Request) -> HttpResponse {
    let endpoint = Endpoint::of(&req.path);
    let parsed: Option<Value> = if req.body.is_empty() {
        None
    } else {
        serde_json::from_slice(&req.body).ok()
    };
    let log_body = match &parsed {
        Some(v) => v.clone(),
        None if req.body.is_empty() => Value::Null,
        None => Value::String(String::from_utf8_lossy(&req.body).into_owned()),
    };
    let is_authorized = authorized(state, endpoint, req);
    let endpoint_check = endpoint == Some(Endpoint::Models)
        && req
            .header("user-agent")
            .is_some_and(|agent| agent.starts_with(ENDPOINT_CHECK_USER_AGENT_PREFIX));
    let mut entry = json!({
        "method": req.method,
        "path": req.path,
        "authorized": is_authorized,
        "auth": auth_outcome(state, req),
        "headers": header_names(req),
        "stream": false,
        "body": log_body,
    });
    let finish = |entry: &mut Value, status: u16, resp: HttpResponse| {
        entry["status"] = json!(status);
        entry["stream"] = json!(resp.is_stream());
        if endpoint_check {
            state.endpoint_checks.fetch_add(1, Ordering::Relaxed);
        } else {
            state.record(entry.take());
        }
        resp
    };

    let Some(endpoint) = endpoint else {
        let r = error_response(None, 404, &format!("no such endpoint: {}", req.path));
        return finish(&mut entry, 404, r);
    };
    let expected_method = if endpoint == Endpoint::Models {
        "GET"
    } else {
        "POST"
    };
    if req.method != expected_method {
        let mut r = error_response(Some(endpoint), 405, &format!("use {expected_method} here"));
        r.headers.push(("allow", expected_method.to_string()));
        return finish(&mut entry, 405, r);
    }
    if !is_authorized {
        let r = error_response(Some(endpoint), 401, &unauthorized_message(state, req));
        return finish(&mut entry, 401, r);
    }
    if endpoint == Endpoint::Models {
        let mut ids: Vec<&str> = vec!["scripted-llm"];
        for rule in &state.script.rules {
            if let Some(m) = rule.conditions.model.as_deref() {
                if !ids.contains(&m) {
                    ids.push(m);
                }
            }
        }
        let data: Vec<Value> = ids
            .iter()
            .map(
                |id| json!({"id": id, "object": "model", "created": 0, "owned_by": "scripted-llm"}),
            )
            .collect();
        let r = HttpResponse::json(200, &json!({"object": "list", "data": data}));
        return finish(&mut entry, 200, r);
    }
    let Some(body) = parsed.filter(Value::is_object) else {
        let r = error_response(Some(endpoint), 400, "the request body is not a JSON object");
        return finish(&mut entry, 400, r);
    };
    if endpoint == Endpoint::CountTokens {
        // About four characters a token, over the system prompt, messages and tools.
        let mut text = String::new();
        for key in ["system", "messages", "tools"] {
            collect_text(&body[key], &mut text);
        }
        let tokens = text.chars().count().div_ceil(4).max(1);
        let r = HttpResponse::json(200, &json!({"input_tokens": tokens}));
        return finish(&mut entry, 200, r);
    }
    let Some((_place, in_flight)) = state.enter() else {
        let limit = state.script.concurrency.as_ref();
        let status = limit.map_or(429, |l| l.status);
        let mut r = error_response(
            Some(endpoint),
            status,
            "scripted-llm: too many requests at once",
        );
        r.headers.retain(|(name, _)| *name != "retry-after");
        if let Some(after) = limit.and_then(|l| l.retry_after.clone()) {
            r.headers.push(("retry-after", after));
        }
        entry["limited"] = json!(true);
        return finish(&mut entry, status, r);
    };
    entry["in_flight"] = json!(in_flight);
    let (rule, index, response) = match state.take(&req.path, &body) {
        Some(Ok(taken)) => taken,
        Some(Err((rule, replies))) => {
            let message = format!(
                "scripted-llm: script exhausted after {replies} replies (rule {rule}); restart \
                 scripted-llm to replay it"
            );
            eprintln!("{message}: {} {} answered 410", req.method, req.path);
            entry["rule"] = json!(rule);
            let r = error_response(Some(endpoint), 410, &message);
            return finish(&mut entry, 410, r);
        }
        None => {
            let r = error_response(
                Some(endpoint),
                400,
                "scripted-llm: no rule of the script matches this request",
            );
            return finish(&mut entry, 400, r);
        }
    };
    entry["rule"] = json!(rule);
    entry["response"] = json!(index);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-llm")
        .to_string();
    let stream = sse::Options::of(&body);
    let resp = render(state, endpoint, &model, &response, stream);
    let status = resp.status;
    let resp = finish(&mut entry, status, resp);
    if response.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(response.delay_ms)).await;
    }
    resp
}

fn arguments_string(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        other => other.clone(),
    }
}

/// A scripted answer with its ids drawn: what every rendering (JSON or event stream) shows.
struct Answer<'a> {
    /// The response number (`chatcmpl-N`, `resp_N`, `msg_N`).
    id: u64,
    created: u64,
    model: &'a str,
    text: Option<&'a str>,
    /// The tool calls with their ids (`call_N`).
    calls: Vec<(String, &'a ToolCall)>,
    usage: Usage,
    /// Cut short by the output-token limit.
    truncated: bool,
}

impl Answer<'_> {
    fn chat_finish_reason(&self) -> &'static str {
        if self.truncated {
            "length"
        } else if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn anthropic_stop_reason(&self) -> &'static str {
        if self.truncated {
            "max_tokens"
        } else if self.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }
}

/// The Responses item id of a function call: `fc_N` for `call_N`.
fn function_call_item_id(call_id: &str) -> String {
    format!("fc_{}", call_id.strip_prefix("call_").unwrap_or(call_id))
}

fn chat_usage(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    })
}

fn responses_usage(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens_details": {"reasoning_tokens": 0},
    })
}

fn anthropic_usage(usage: Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens.saturating_sub(usage.cached_tokens),
        "output_tokens": output_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": 0,
    })
}

fn chat_body(a: &Answer<'_>) -> Value {
    let mut message = json!({"role": "assistant", "content": a.text});
    if !a.calls.is_empty() {
        message["tool_calls"] = a
            .calls
            .iter()
            .map(|(cid, c)| {
                json!({"id": cid, "type": "function",
                       "function": {"name": c.name, "arguments": arguments_string(&c.arguments)}})
            })
            .collect();
    }
    json!({
        "id": format!("chatcmpl-{}", a.id),
        "object": "chat.completion",
        "created": a.created,
        "model": a.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": a.chat_finish_reason(),
        }],
        "usage": chat_usage(a.usage),
    })
}

/// The Responses message item holding `text`.
fn responses_message_item(id: u64, text: &str) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_{id}"),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

/// The Responses function-call item of a call.
fn responses_call_item(call_id: &str, call: &ToolCall) -> Value {
    let mut item = json!({
        "type": "function_call",
        "id": function_call_item_id(call_id),
        "call_id": call_id,
        "name": call.name,
        "arguments": arguments_string(&call.arguments),
        "status": "completed",
    });
    if let Some(namespace) = &call.namespace {
        item["namespace"] = json!(namespace);
    }
    item
}

fn responses_body(a: &Answer<'_>) -> Value {
    let mut output = Vec::new();
    if let Some(text) = a.text {
        output.push(responses_message_item(a.id, text));
    }
    for (cid, c) in &a.calls {
        output.push(responses_call_item(cid, c));
    }
    json!({
        "id": format!("resp_{}", a.id),
        "object": "response",
        "created_at": a.created,
        "model": a.model,
        "status": if a.truncated { "incomplete" } else { "completed" },
        "incomplete_details": if a.truncated {
            json!({"reason": "max_output_tokens"})
        } else {
            Value::Null
        },
        "output": output,
        "usage": responses_usage(a.usage),
    })
}

fn anthropic_body(a: &Answer<'_>) -> Value {
    let mut content = Vec::new();
    if let Some(text) = a.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (cid, c) in &a.calls {
        content.push(json!({
            "type": "tool_use",
            "id": cid,
            "name": c.name,
            "input": arguments_object(&c.arguments),
        }));
    }
    json!({
        "id": format!("msg_{}", a.id),
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": content,
        "stop_reason": a.anthropic_stop_reason(),
        "stop_sequence": null,
        "usage": anthropic_usage(a.usage, a.usage.completion_tokens),
    })
}

/// A scripted error status: the raw body, or a protocol-shaped JSON error.
fn render_status(endpoint: Endpoint, status: u16, body: Option<&str>) -> HttpResponse {
    let mut resp = match body {
        Some(raw) => HttpResponse::bytes(status, raw.as_bytes().to_vec()),
        None => HttpResponse::json(
            status,
            &error_body(Some(endpoint), status, &format!("scripted error {status}")),
        ),
    };
    if status == 429 {
        resp.headers.push(("retry-after", "0".to_string()));
    }
    resp
}

/// Renders a scripted response in the endpoint's protocol: JSON, or an event stream when the
/// request asked for one (`stream`) and the response is an answer (errors and raw bodies are
/// never streamed).
fn render(
    state: &State,
    endpoint: Endpoint,
    model: &str,
    response: &Response,
    stream: Option<sse::Options>,
) -> HttpResponse {
    let (text, tool_calls, usage, truncated) = match &response.kind {
        ResponseKind::Raw(raw) => return HttpResponse::bytes(200, raw.clone().into_bytes()),
        ResponseKind::Status { status, body } => {
            return render_status(endpoint, *status, body.as_deref())
        }
        ResponseKind::Answer {
            text,
            tool_calls,
            usage,
            truncated,
        } => (text, tool_calls, usage, *truncated),
    };
    let answer = Answer {
        id: state.next_id(),
        created: unix_now(),
        model,
        text: text.as_deref(),
        calls: tool_calls
            .iter()
            .map(|c| (state.next_call_id(), c))
            .collect(),
        usage: *usage,
        truncated,
    };
    if let Some(options) = stream {
        let frames = sse::render(endpoint, &answer, options);
        let gap = Duration::from_millis(response.chunk_delay_ms);
        return HttpResponse::events(frames, gap);
    }
    let body = match endpoint {
        Endpoint::Chat => chat_body(&answer),
        Endpoint::Responses => responses_body(&answer),
        Endpoint::Anthropic | Endpoint::Models | Endpoint::CountTokens => anthropic_body(&answer),
    };
    HttpResponse::json(200, &body)
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1
// ---------------------------------------------------------------------------------------------

/// The largest request body read (a larger one is answered 413).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Our request from hyper's: method, path without the query, lowercased headers, the body
/// (at most [`MAX_BODY`] bytes).
async fn read_request(
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<Request, (u16, &'static str)> {
    use http_body_util::BodyExt;
    let (parts, body) = req.into_parts();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).trim().to_string();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect();
    let body = http_body_util::Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                (413, "body too large")
            } else {
                (400, "truncated body")
            }
        })?
        .to_bytes()
        .to_vec();
    Ok(Request {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        headers,
        body,
    })
}

/// Whether the connection stays open after this request (RFC 9112 §9.3).
fn wants_keep_alive<B>(req: &hyper::Request<B>) -> bool {
    let connection = req
        .headers()
        .get(hyper::header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let has = |token: &str| connection.split(',').any(|c| c.trim() == token);
    if req.version() == hyper::Version::HTTP_10 {
        has("keep-alive")
    } else {
        !has("close")
    }
}

/// A hyper response body: ours, all at once or as events.
type HyperBody = http_body_util::Either<http_body_util::Full<hyper::body::Bytes>, sse::EventBody>;

/// Our response as hyper's (JSON, or `text/event-stream`).
fn to_hyper(resp: HttpResponse) -> hyper::Response<HyperBody> {
    let (content_type, body) = match resp.body {
        Body::Bytes(bytes) => (
            "application/json",
            HyperBody::Left(http_body_util::Full::new(bytes.into())),
        ),
        Body::Events { frames, gap } => (
            "text/event-stream; charset=utf-8",
            HyperBody::Right(sse::EventBody::new(frames, gap)),
        ),
    };
    let mut builder = hyper::Response::builder()
        .status(resp.status)
        .header("content-type", content_type);
    if matches!(body, HyperBody::Right(_)) {
        builder = builder.header("cache-control", "no-cache");
    }
    for (name, value) in &resp.headers {
        builder = builder.header(*name, value.as_str());
    }
    builder
        .body(body)
        .unwrap_or_else(|_| hyper::Response::new(HyperBody::Left(Default::default())))
}

/// Serves one connection with hyper's HTTP/1.1 server (keep-alive, chunked bodies,
/// `Expect: 100-continue` and malformed requests are hyper's).
async fn handle_connection(stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let state = Arc::clone(&state);
        async move {
            let keep_alive = wants_keep_alive(&req);
            let resp = match read_request(req).await {
                Ok(req) => handle(&state, &req).await,
                Err((status, message)) => error_response(None, status, message),
            };
            let mut resp = to_hyper(resp);
            if keep_alive {
                // Said explicitly, as HTTP/1.0 clients need (hyper adds `close` itself).
                resp.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("keep-alive"),
                );
            }
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await;
}

async fn run(listener: TcpListener, state: Arc<State>, shutdown: impl Future<Output = ()>) {
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(handle_connection(stream, Arc::clone(&state)));
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    eprintln!("scripted-llm: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        }
    }
    connections.abort_all();
}

/// Serves `script` on `listener` forever (drop the future to stop: open connections are
/// aborted with it). `log`: a file to append one JSON line per request to. Fails only when the
/// log cannot be opened.
pub async fn serve(
    listener: TcpListener,
    script: Script,
    log: Option<PathBuf>,
) -> std::io::Result<()> {
    serve_until(listener, script, log, std::future::pending()).await
}

/// Like [`serve`], returning once `shutdown` completes.
pub async fn serve_until(
    listener: TcpListener,
    script: Script,
    log: Option<PathBuf>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let state = Arc::new(State::new(script, log.as_deref(), None)?);
    run(listener, state, shutdown).await;
    Ok(())
}

/// A scripted server on its own thread and tokio runtime; stops when dropped.
pub struct ScriptedServer {
    /// The bound port on 127.0.0.1.
    pub port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
    endpoint_checks: Arc<AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts a server for `script_json` on an ephemeral port; `log` as for [`serve`].
    pub fn start(script_json: &Value, log: Option<PathBuf>) -> Result<ScriptedServer, String> {
        Self::start_at(script_json, log, 0)
    }

    /// Starts a server for `script_json` on `port` of 127.0.0.1 (an endpoint that comes up
    /// where a run expected it).
    pub fn start_on(port: u16, script_json: &Value) -> Result<ScriptedServer, String> {
        Self::start_at(script_json, None, port)
    }

    fn start_at(
        script_json: &Value,
        log: Option<PathBuf>,
        port: u16,
    ) -> Result<ScriptedServer, String> {
        let script = Script::from_json(script_json).map_err(|e| format!("script: {e}"))?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = State::new(script, log.as_deref(), Some(Arc::clone(&requests)))
            .map_err(|e| format!("request log: {e}"))?;
        let endpoint_checks = Arc::clone(&state.endpoint_checks);
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("bind 127.0.0.1:{port}: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("local address: {e}"))?
            .port();
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("set_nonblocking: {e}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("scripted-llm-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => {
                            run(listener, Arc::new(state), async {
                                let _ = rx.await;
                            })
                            .await;
                        }
                        Err(e) => eprintln!("scripted-llm: listener: {e}"),
                    }
                });
            })
            .map_err(|e| format!("spawn thread: {e}"))?;
        Ok(ScriptedServer {
            port,
            requests,
            endpoint_checks,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT/v1` (what OpenAI-style clients call the base URL).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The requests served so far, as the log lines (`method`, `path`, `authorized`, `status`,
    /// `stream` — whether the answer was an event stream —, `body`, and `rule`/`response`
    /// indexes when a rule answered).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.requests).clone()
    }

    /// How many endpoint checks of agentcompass-host were answered (they are not in
    /// [`ScriptedServer::requests`]).
    pub fn endpoint_checks(&self) -> u64 {
        self.endpoint_checks.load(Ordering::Relaxed)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts a server for `script_json` on an ephemeral port on its own thread (stops on drop).
/// Panics with the reason when the script is invalid.
pub fn spawn_on_thread(script_json: Value) -> ScriptedServer {
    match ScriptedServer::start(&script_json, None) {
        Ok(server) => server,
        Err(e) => panic!("scripted-llm: {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream as StdStream;

    struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    }

    impl Reply {
        fn json(&self) -> Value {
            serde_json::from_str(&self.body).expect("JSON body")
        }
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    fn read_reply(reader: &mut BufReader<StdStream>) -> Reply {
        let mut line = String::new();
        reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).expect("header");
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').expect("header colon");
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map(|(_, v)| v.parse().expect("length"))
            .expect("content-length");
        let mut body = vec![0; len];
        reader.read_exact(&mut body).expect("body");
        Reply {
            status,
            headers,
            body: String::from_utf8(body).expect("utf-8"),
        }
    }

    fn connect(port: u16) -> (StdStream, BufReader<StdStream>) {
        let stream = StdStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let reader = BufReader::new(stream.try_clone().expect("clone"));
        (stream, reader)
    }

    fn request_bytes(
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        close: bool,
    ) -> Vec<u8> {
        let mut out = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        if close {
            out.push_str("connection: close\r\n");
        }
        if !body.is_empty() {
            out.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            ));
        }
        out.push_str("\r\n");
        out.push_str(body);
        out.into_bytes()
    }

    fn send(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let (mut stream, mut reader) = connect(port);
        stream
            .write_all(&request_bytes(method, path, headers, body, true))
            .expect("write");
        let reply = read_reply(&mut reader);
        let mut rest = Vec::new();
        reader
            .read_to_end(&mut rest)
            .expect("closed after connection: close");
        assert!(rest.is_empty());
        reply
    }

    fn post(port: u16, path: &str, body: &Value) -> Reply {
        send(port, "POST", path, &[], &body.to_string())
    }

    fn chat(text: &str) -> Value {
        json!({"model": "gpt-test", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": text},
        ]})
    }

    #[test]
    fn chat_text() {
        let server = spawn_on_thread(json!({"rules": [{"responses": [
            {"text": "hello there", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 3}}
        ]}]}));
        let reply = post(server.port, "/v1/chat/completions", &chat("hi"));
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let v = reply.json();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "gpt-test");
        assert_eq!(v["choices"][0]["message"]["role"], "assistant");
        assert_eq!(v["choices"][0]["message"]["content"], "hello there");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert!(v["choices"][0]["message"].get("tool_calls").is_none());
        assert_eq!(v["usage"]["prompt_tokens"], 10);
        assert_eq!(v["usage"]["completion_tokens"], 5);
        assert_eq!(v["usage"]["total_tokens"], 15);
        assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0]["body"]["messages"][1]["content"], "hi");
        assert_eq!(requests[0]["rule"], 0);
    }

    #[test]
    fn chat_tool_call() {
        let server = spawn_on_thread(json!([{"responses": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}},
                            {"name": "raw", "arguments": "{not json"}]}
        ]}]));
        let v = post(server.port, "/v1/chat/completions", &chat("list")).json();
        let message = &v["choices"][0]["message"];
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert!(message["content"].is_null());
        let calls = message["tool_calls"].as_array().expect("tool_calls");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0]["type"], "function");
        assert_eq!(calls[0]["id"], "call_1");
        assert_eq!(calls[1]["id"], "call_2");
        assert_eq!(calls[0]["function"]["name"], "bash");
        let args: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().expect("string"))
                .expect("arguments are a JSON string");
        assert_eq!(args, json!({"command": "ls"}));
        assert_eq!(calls[1]["function"]["arguments"], "{not json");
    }

    #[test]
    fn responses_rendering() {
        let server = spawn_on_thread(json!([{"responses": [{
            "text": "running it",
            "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "cached_tokens": 1}
        }]}]));
        let v = post(
            server.port,
            "/v1/responses",
            &json!({"model": "o-test", "input": "do it"}),
        )
        .json();
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "completed");
        assert_eq!(v["model"], "o-test");
        let output = v["output"].as_array().expect("output");
        assert_eq!(output.len(), 2);
        assert_eq!(output[0]["type"], "message");
        assert_eq!(output[0]["role"], "assistant");
        assert_eq!(output[0]["content"][0]["type"], "output_text");
        assert_eq!(output[0]["content"][0]["text"], "running it");
        assert_eq!(output[1]["type"], "function_call");
        assert!(output[1]["call_id"]
            .as_str()
            .expect("call_id")
            .starts_with("call_"));
        assert_eq!(output[1]["name"], "bash");
        assert_eq!(output[1]["arguments"], r#"{"command":"ls"}"#);
        assert_eq!(v["usage"]["input_tokens"], 7);
        assert_eq!(v["usage"]["output_tokens"], 2);
        assert_eq!(v["usage"]["input_tokens_details"]["cached_tokens"], 1);
    }

    #[test]
    fn anthropic_rendering() {
        let server = spawn_on_thread(json!([
            {"match": {"last_user_contains": "plain"}, "responses": [{"text": "just text"}]},
            {"responses": [{
                "text": "let me look",
                "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 4, "cached_tokens": 15}
            }]}
        ]));
        let body = json!({"model": "claude-test", "max_tokens": 100, "system": "sys",
                          "messages": [{"role": "user", "content": [{"type": "text", "text": "look"}]}]});
        let v = post(server.port, "/v1/messages", &body).json();
        assert_eq!(v["type"], "message");
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["model"], "claude-test");
        assert_eq!(v["stop_reason"], "tool_use");
        assert_eq!(
            v["content"][0],
            json!({"type": "text", "text": "let me look"})
        );
        assert_eq!(v["content"][1]["type"], "tool_use");
        assert!(v["content"][1]["id"]
            .as_str()
            .expect("id")
            .starts_with("call_"));
        assert_eq!(v["content"][1]["name"], "bash");
        assert_eq!(v["content"][1]["input"], json!({"command": "ls"}));
        assert_eq!(v["usage"]["input_tokens"], 5);
        assert_eq!(v["usage"]["output_tokens"], 4);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 15);

        let body = json!({"model": "claude-test", "messages": [{"role": "user", "content": "plain please"}]});
        let v = post(server.port, "/v1/messages", &body).json();
        assert_eq!(v["stop_reason"], "end_turn");
        assert_eq!(v["content"], json!([{"type": "text", "text": "just text"}]));
    }

    #[test]
    fn rate_limit_then_success_in_order() {
        let server = spawn_on_thread(json!([{"responses": [
            {"status": 429}, {"status": 500, "body": "boom"}, {"text": "finally"}
        ]}]));
        let first = post(server.port, "/v1/chat/completions", &chat("x"));
        assert_eq!(first.status, 429);
        assert_eq!(first.header("retry-after"), Some("0"));
        assert_eq!(first.json()["error"]["type"], "rate_limit_error");
        let second = post(server.port, "/v1/chat/completions", &chat("x"));
        assert_eq!(second.status, 500);
        assert_eq!(second.body, "boom");
        for _ in 0..2 {
            // After the last response, the last repeats.
            let ok = post(server.port, "/v1/chat/completions", &chat("x"));
            assert_eq!(ok.status, 200);
            assert_eq!(ok.json()["choices"][0]["message"]["content"], "finally");
        }
        // Anthropic-shaped error body on /v1/messages.
        let server = spawn_on_thread(json!([{"responses": [{"status": 429}]}]));
        let reply = post(server.port, "/v1/messages", &json!({"messages": []}));
        assert_eq!(reply.status, 429);
        assert_eq!(reply.json()["type"], "error");
        assert_eq!(reply.json()["error"]["type"], "rate_limit_error");
    }

    #[test]
    fn cycle_starts_over() {
        let server =
            spawn_on_thread(json!([{"cycle": true, "responses": [{"text": "a"}, {"text": "b"}]}]));
        let texts: Vec<Value> = (0..3)
            .map(|_| {
                post(server.port, "/v1/chat/completions", &chat("x")).json()["choices"][0]
                    ["message"]["content"]
                    .clone()
            })
            .collect();
        assert_eq!(texts, vec![json!("a"), json!("b"), json!("a")]);
    }

    #[test]
    fn malformed_raw_body() {
        let server = spawn_on_thread(json!([{"responses": [{"raw": "not json {"}]}]));
        let reply = post(server.port, "/v1/responses", &json!({"input": "x"}));
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, "not json {");
    }

    #[test]
    fn auth_rejection_and_log_never_holds_the_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("requests.jsonl");
        let key = "sk-secret-4242";
        let server = ScriptedServer::start(
            &json!({"require_key": key, "rules": [{"responses": [{"text": "ok"}]}]}),
            Some(log.clone()),
        )
        .expect("start");
        let body = chat("hi").to_string();
        let bearer = format!("Bearer {key}");
        let p = server.port;
        let chat_path = "/v1/chat/completions";
        assert_eq!(send(p, "POST", chat_path, &[], &body).status, 401);
        let wrong = send(
            p,
            "POST",
            chat_path,
            &[("Authorization", "Bearer nope")],
            &body,
        );
        assert_eq!(wrong.status, 401);
        assert_eq!(wrong.json()["error"]["type"], "authentication_error");
        assert_eq!(
            send(p, "POST", chat_path, &[("Authorization", &bearer)], &body).status,
            200
        );
        assert_eq!(
            send(
                p,
                "POST",
                "/v1/responses",
                &[("authorization", &bearer)],
                r#"{"input":"x"}"#
            )
            .status,
            200
        );
        // Anthropic takes x-api-key or a bearer token (the anthropic SDK 2.x sends its API key
        // so); OpenAI endpoints want the bearer token.
        assert_eq!(
            send(
                p,
                "POST",
                "/v1/messages",
                &[("Authorization", &bearer)],
                &body
            )
            .status,
            200
        );
        assert_eq!(
            send(p, "POST", "/v1/messages", &[("X-Api-Key", key)], &body).status,
            200
        );
        assert_eq!(
            send(p, "POST", chat_path, &[("X-Api-Key", key)], &body).status,
            401
        );

        let text = std::fs::read_to_string(&log).expect("log");
        assert!(!text.contains(key), "the log holds the key: {text}");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        let authorized: Vec<bool> = lines
            .iter()
            .map(|l| l["authorized"].as_bool().expect("bool"))
            .collect();
        assert_eq!(
            authorized,
            vec![false, false, true, true, true, true, false]
        );
        assert_eq!(lines[0]["path"], chat_path);
        assert_eq!(lines[0]["body"]["messages"][1]["content"], "hi");
        assert_eq!(lines[0]["status"], 401);
        assert_eq!(server.requests().len(), 7);
    }

    /// With `"after_last": "error"` (the `scripted-llm` command's default), a request past a
    /// rule's last reply is refused in words, not answered with the last reply again (which an
    /// agent reads as a normal answer); a `cycle` rule never runs out.
    #[test]
    fn a_used_up_script_says_so() {
        let server = spawn_on_thread(json!({"after_last": "error", "rules": [
            {"match": {"path": "/v1/responses"}, "responses": [{"text": "again"}], "cycle": true},
            {"responses": [{"text": "one"}, {"text": "two"}]}
        ]}));
        let path = "/v1/chat/completions";
        for text in ["one", "two"] {
            let reply = post(server.port, path, &chat("x"));
            assert_eq!(reply.json()["choices"][0]["message"]["content"], text);
        }
        for _ in 0..2 {
            let used_up = post(server.port, path, &chat("x"));
            assert_eq!(used_up.status, 410, "{}", used_up.body);
            let message = used_up.json()["error"]["message"].clone();
            assert_eq!(
                message,
                "scripted-llm: script exhausted after 2 replies (rule 1); restart scripted-llm \
                 to replay it"
            );
        }
        for _ in 0..3 {
            let reply = post(server.port, "/v1/responses", &json!({"input": "x"}));
            assert_eq!(reply.status, 200);
        }
        let statuses: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| r["status"].clone())
            .collect();
        assert_eq!(statuses, [200, 200, 410, 410, 200, 200, 200]);
    }

    /// A refused key is answered with where the expected key is set (the script's
    /// `require_key`, in its file when the script was loaded from one), never the key itself.
    #[test]
    fn a_refused_key_names_where_the_expected_one_is_set() {
        let key = "sk-secret-4242";
        let server = spawn_on_thread(
            json!({"require_key": key, "rules": [{"responses": [{"text": "ok"}]}]}),
        );
        let body = chat("hi").to_string();
        let path = "/v1/chat/completions";
        let none = send(server.port, "POST", path, &[], &body);
        let wrong = send(
            server.port,
            "POST",
            path,
            &[("Authorization", "Bearer no")],
            &body,
        );
        for (reply, sent) in [(none, "no key"), (wrong, "another key")] {
            assert_eq!(reply.status, 401);
            let message = reply.json()["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_string();
            assert_eq!(
                message,
                format!(
                    "missing or invalid API key: this request sent {sent}; scripted-llm expects \
                     the key set as `require_key` in its script, as `Authorization: Bearer KEY` \
                     (or `x-api-key: KEY` for Anthropic)"
                )
            );
            assert!(!message.contains(key));
        }
    }

    #[test]
    fn keep_alive_two_requests_on_one_connection() {
        let server = spawn_on_thread(
            json!([{"responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}]),
        );
        let (mut stream, mut reader) = connect(server.port);
        let body = chat("x").to_string();
        stream
            .write_all(&request_bytes(
                "POST",
                "/v1/chat/completions",
                &[],
                &body,
                false,
            ))
            .expect("write");
        let first = read_reply(&mut reader);
        assert_eq!(first.header("connection"), Some("keep-alive"));
        assert_eq!(first.json()["choices"][0]["message"]["content"], "one");
        // Pipelined: the second and third requests in one write, the third closing.
        let mut both = request_bytes("POST", "/v1/chat/completions", &[], &body, false);
        both.extend(request_bytes(
            "POST",
            "/v1/chat/completions",
            &[],
            &body,
            true,
        ));
        stream.write_all(&both).expect("write");
        let second = read_reply(&mut reader);
        assert_eq!(second.json()["choices"][0]["message"]["content"], "two");
        let third = read_reply(&mut reader);
        assert_eq!(third.header("connection"), Some("close"));
        assert_eq!(third.json()["choices"][0]["message"]["content"], "three");
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).expect("server closes");
        assert!(rest.is_empty());
    }

    #[test]
    fn chunked_body_and_expect_continue() {
        let server = spawn_on_thread(json!([{"responses": [{"text": "ok"}]}]));
        let (mut stream, mut reader) = connect(server.port);
        let body = chat("chunky").to_string();
        let (a, b) = body.split_at(10);
        let head = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes()).expect("write");
        let mut line = String::new();
        reader.read_line(&mut line).expect("100");
        assert!(line.starts_with("HTTP/1.1 100"), "{line}");
        reader.read_line(&mut line).expect("blank");
        let chunks = format!(
            "{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        );
        stream.write_all(chunks.as_bytes()).expect("write");
        let reply = read_reply(&mut reader);
        assert_eq!(reply.status, 200);
        assert_eq!(
            server.requests()[0]["body"]["messages"][1]["content"],
            "chunky"
        );
    }

    #[test]
    fn matching_across_protocols() {
        let server = spawn_on_thread(json!({"rules": [
            {"match": {"path": "/v1/messages", "last_user_contains": "TOOL-OUT"}, "responses": [{"text": "anthropic tool"}]},
            {"match": {"last_user_contains": "TOOL-OUT"}, "responses": [{"text": "openai tool"}]},
            {"match": {"model": "special"}, "responses": [{"text": "special model"}]},
            {"match": {"any_message_contains": "SYSTEM-MARK"}, "responses": [{"text": "system seen"}]},
            {"match": {"last_user_contains": "hello"}, "responses": [{"text": "greeting"}]},
        ]}));
        let content = |reply: Reply| reply.json()["choices"][0]["message"]["content"].clone();
        let p = server.port;
        // Chat: the tool message after the assistant's call is the latest user/tool turn; the
        // earlier user "hello" is not.
        let chat_tool = json!({"messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "TOOL-OUT: a b"},
        ]});
        assert_eq!(
            content(post(p, "/v1/chat/completions", &chat_tool)),
            "openai tool"
        );
        let chat_parts = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "well hello"}]}]});
        assert_eq!(
            content(post(p, "/v1/chat/completions", &chat_parts)),
            "greeting"
        );
        let chat_old = json!({"messages": [
            {"role": "user", "content": "TOOL-OUT long ago"},
            {"role": "assistant", "content": "sure"},
            {"role": "user", "content": "hello again"},
        ]});
        assert_eq!(
            content(post(p, "/v1/chat/completions", &chat_old)),
            "greeting"
        );
        // Responses: function_call_output items.
        let responses = json!({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "TOOL-OUT"},
        ]});
        let v = post(p, "/v1/responses", &responses).json();
        assert_eq!(v["output"][0]["content"][0]["text"], "openai tool");
        let v = post(
            p,
            "/v1/responses",
            &json!({"instructions": "SYSTEM-MARK", "input": "x"}),
        )
        .json();
        assert_eq!(v["output"][0]["content"][0]["text"], "system seen");
        // Anthropic: tool_result blocks in a user message.
        let anthropic = json!({"messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "TOOL-OUT"}]}]},
        ]});
        let v = post(p, "/v1/messages", &anthropic).json();
        assert_eq!(v["content"][0]["text"], "anthropic tool");
        let v = post(p, "/v1/messages", &json!({"system": [{"type": "text", "text": "SYSTEM-MARK"}], "messages": [{"role": "user", "content": "x"}]})).json();
        assert_eq!(v["content"][0]["text"], "system seen");
        // Model.
        let special =
            json!({"model": "special", "messages": [{"role": "user", "content": "hello"}]});
        assert_eq!(
            content(post(p, "/v1/chat/completions", &special)),
            "special model"
        );
        // Nothing matches: a 400 naming the server.
        let none = post(p, "/v1/chat/completions", &chat("nothing"));
        assert_eq!(none.status, 400);
        assert!(none.body.contains("no rule"));
    }

    #[test]
    fn stateless_matching_by_turns_and_any_user_text() {
        let server = spawn_on_thread(json!({"rules": [
            {"match": {"any_user_contains": "TASK-A", "assistant_turns": 0}, "responses": [{"text": "a0"}]},
            {"match": {"any_user_contains": "TASK-A", "assistant_turns": 1}, "responses": [{"text": "a1"}]},
            {"match": {"any_user_contains": "TASK-B", "assistant_turns": 2}, "responses": [{"text": "b2"}]},
            {"match": {"any_user_contains": "SYSTEM-ONLY"}, "responses": [{"text": "wrong"}]},
            {"responses": [{"text": "fallback"}]},
        ]}));
        let p = server.port;
        let chat_text = |body: &Value| {
            post(p, "/v1/chat/completions", body).json()["choices"][0]["message"]["content"].clone()
        };
        let first = json!({"messages": [
            {"role": "system", "content": "SYSTEM-ONLY"},
            {"role": "user", "content": "do TASK-A"},
        ]});
        // The same request twice gets the same answer: no per-rule counter decides.
        assert_eq!(chat_text(&first), "a0");
        assert_eq!(chat_text(&first), "a0");
        let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]});
        let second = json!({"messages": [
            {"role": "user", "content": "do TASK-A"},
            call("call_1"),
            {"role": "tool", "tool_call_id": "call_1", "content": "out"},
        ]});
        assert_eq!(chat_text(&second), "a1");
        // The system prompt is not a user message.
        let system_only = json!({"messages": [{"role": "system", "content": "SYSTEM-ONLY"}, {"role": "user", "content": "x"}]});
        assert_eq!(chat_text(&system_only), "fallback");
        // Responses: one turn's parallel function calls (and its reasoning) count once.
        let responses = json!({"input": [
            {"role": "developer", "content": "SYSTEM-ONLY"},
            {"role": "user", "content": [{"type": "input_text", "text": "TASK-B"}]},
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call_output", "call_id": "c2", "output": "y"},
            {"type": "function_call", "call_id": "c3", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c3", "output": "z"},
        ]});
        let v = post(p, "/v1/responses", &responses).json();
        assert_eq!(v["output"][0]["content"][0]["text"], "b2");
        // Anthropic: assistant messages, the task text in an earlier user message.
        let anthropic = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"}, {"type": "text", "text": "TASK-B"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "o"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "o"}]},
        ]});
        let v = post(p, "/v1/messages", &anthropic).json();
        assert_eq!(v["content"][0]["text"], "b2");
        // TASK-B at turn 1 matches nothing specific.
        let b1 = json!({"messages": [{"role": "user", "content": "TASK-B"}, call("call_9"), {"role": "tool", "tool_call_id": "call_9", "content": "o"}]});
        assert_eq!(chat_text(&b1), "fallback");
    }

    #[test]
    fn log_has_header_names_and_auth_outcome() {
        let key = "sk-expected-77";
        let server = ScriptedServer::start(
            &json!({"require_key": key, "rules": [{"responses": [{"text": "ok"}]}]}),
            None,
        )
        .expect("start");
        let p = server.port;
        let body = chat("hi").to_string();
        let bearer = format!("Bearer {key}");
        let chat_path = "/v1/chat/completions";
        send(
            p,
            "POST",
            chat_path,
            &[("Authorization", &bearer), ("X-Trace", "1")],
            &body,
        );
        send(
            p,
            "POST",
            chat_path,
            &[("Authorization", "Bearer sk-other")],
            &body,
        );
        send(p, "POST", chat_path, &[], &body);
        send(p, "POST", "/v1/messages", &[("x-api-key", key)], &body);
        send(
            p,
            "POST",
            "/v1/messages",
            &[
                ("x-api-key", key),
                ("authorization", "Bearer sk-placeholder"),
            ],
            &body,
        );
        let requests = server.requests();
        let auth: Vec<&str> = requests
            .iter()
            .map(|r| r["auth"].as_str().expect("auth"))
            .collect();
        assert_eq!(auth, ["expected", "other", "none", "expected", "other"]);
        let names: Vec<String> = requests[0]["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .map(|n| n.as_str().expect("name").to_string())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for name in ["authorization", "content-length", "x-trace"] {
            assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
        }
        assert!(!serde_json::to_string(&requests)
            .expect("json")
            .contains("sk-"));
        // Without `require_key`, any key presented is "other".
        let open = spawn_on_thread(json!({"rules": [{"responses": [{"text": "ok"}]}]}));
        send(
            open.port,
            "POST",
            chat_path,
            &[("Authorization", "Bearer x")],
            &body,
        );
        send(open.port, "POST", chat_path, &[], &body);
        let auth: Vec<Value> = open.requests().iter().map(|r| r["auth"].clone()).collect();
        assert_eq!(auth, [json!("other"), json!("none")]);
    }

    /// The agent-harness scripts in `tests/fixtures/agents/` parse, and each task's three steps
    /// are told apart by the conversation alone.
    #[test]
    fn agent_fixture_scripts_parse_and_are_stateless() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/agents");
        for id in ["claude_code", "codex", "mini_swe_agent", "qwen_code"] {
            for name in [format!("{id}.json"), format!("{id}-looping.json")] {
                Script::load(&dir.join(&name)).unwrap_or_else(|e| panic!("{e}"));
            }
            let script = Script::load(&dir.join(format!("{id}.json"))).expect("script");
            let mut seen = Vec::new();
            for marker in ["/app/hello.txt", "/app/fizzbuzz.txt", "/app/primes.txt"] {
                let mut messages =
                    vec![json!({"role": "user", "content": format!("Write `{marker}`.")})];
                for turn in 0..3 {
                    let body = json!({"messages": messages});
                    let path = script.rules[0].conditions.path.clone().expect("path");
                    let rule = script
                        .rules
                        .iter()
                        .position(|r| r.conditions.matches(&path, &body))
                        .expect("a rule");
                    assert!(
                        !seen.contains(&rule),
                        "{id} {marker} turn {turn}: rule {rule} again"
                    );
                    seen.push(rule);
                    messages.push(json!({"role": "assistant", "content": "x"}));
                    messages.push(json!({"role": "user", "content": "output"}));
                }
            }
        }
    }

    #[test]
    fn other_endpoints_and_bad_requests() {
        let server =
            spawn_on_thread(json!([{"match": {"model": "m1"}, "responses": [{"text": "x"}]}]));
        let p = server.port;
        let missing = send(p, "POST", "/v2/nothing", &[], "{}");
        assert_eq!(missing.status, 404);
        assert_eq!(missing.json()["error"]["type"], "not_found_error");
        let models = send(p, "GET", "/v1/models", &[], "");
        assert_eq!(models.status, 200);
        let ids: Vec<Value> = models.json()["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|m| m["id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("scripted-llm"), json!("m1")]);
        // Anthropic's token counting is answered from the body (about 4 characters a token).
        let counted = send(
            p,
            "POST",
            "/v1/messages/count_tokens",
            &[],
            r#"{"model":"m1","system":"abcd","messages":[{"role":"user","content":"efghijkl"}]}"#,
        );
        assert_eq!(counted.status, 200);
        assert_eq!(counted.json()["input_tokens"], 4);
        assert_eq!(send(p, "GET", "/v1/chat/completions", &[], "").status, 405);
        assert_eq!(
            send(p, "POST", "/v1/chat/completions", &[], "not json").status,
            400
        );
        let requests = server.requests();
        assert_eq!(requests[4]["body"], "not json");
        // A garbage request line gets a 400 and a closed connection.
        let (mut stream, mut reader) = connect(p);
        stream.write_all(b"garbage\r\n\r\n").expect("write");
        assert_eq!(read_reply(&mut reader).status, 400);
    }

    #[test]
    fn delay_before_answering() {
        let server = spawn_on_thread(json!([{"responses": [{"delay_ms": 200, "text": "slow"}]}]));
        let start = std::time::Instant::now();
        let reply = post(server.port, "/v1/chat/completions", &chat("x"));
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(reply.json()["choices"][0]["message"]["content"], "slow");
    }

    /// A chunked reply: its body's chunks with the time each arrived.
    struct Chunked {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<(std::time::Instant, String)>,
    }

    /// Reads a chunked reply's head and then its body one chunk at a time.
    fn read_chunked(reader: &mut BufReader<StdStream>) -> Chunked {
        let mut line = String::new();
        reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status");
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).expect("header");
            let Some((n, v)) = h.trim_end().split_once(':') else {
                break;
            };
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let mut chunks = Vec::new();
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).expect("chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("hex size");
            let mut data = vec![0; size + 2];
            reader.read_exact(&mut data).expect("chunk");
            if size == 0 {
                break;
            }
            data.truncate(size);
            chunks.push((
                std::time::Instant::now(),
                String::from_utf8(data).expect("utf-8"),
            ));
        }
        Chunked {
            status,
            headers,
            chunks,
        }
    }

    fn stream_post(port: u16, path: &str, body: &Value) -> (u16, Vec<(String, String)>, String) {
        let (mut stream, mut reader) = connect(port);
        let bytes = request_bytes("POST", path, &[], &body.to_string(), true);
        stream.write_all(&bytes).expect("write");
        let reply = read_chunked(&mut reader);
        let text = reply.chunks.into_iter().map(|(_, c)| c).collect();
        (reply.status, reply.headers, text)
    }

    /// The `data:` payloads of an event stream, with their `event:` names.
    fn sse_data(text: &str) -> Vec<(Option<String>, String)> {
        text.split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|frame| {
                let event = frame
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .map(str::to_string);
                let data = frame
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("data line");
                (event, data.to_string())
            })
            .collect()
    }

    #[test]
    fn streams_in_every_protocol_with_the_same_ids() {
        let server = spawn_on_thread(json!([{"responses": [{
            "text": "hello", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2}
        }]}]));
        let p = server.port;
        let chat_body = json!({"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
                               "messages": [{"role": "user", "content": "x"}]});
        let (status, headers, text) = stream_post(p, "/v1/chat/completions", &chat_body);
        assert_eq!(status, 200);
        let content_type = headers
            .iter()
            .find(|(n, _)| n == "content-type")
            .map(|(_, v)| v.as_str());
        assert_eq!(content_type, Some("text/event-stream; charset=utf-8"));
        let events = sse_data(&text);
        assert_eq!(events.last().map(|(_, d)| d.as_str()), Some("[DONE]"));
        let first: Value = serde_json::from_str(&events[0].1).expect("chunk");
        assert_eq!(first["id"], "chatcmpl-1");
        assert_eq!(first["model"], "gpt-test");
        let with_call = events.iter().find(|(_, d)| d.contains("\"id\":\"call_1\""));
        assert!(with_call.is_some(), "{text}");

        let (_, _, text) = stream_post(p, "/v1/responses", &json!({"stream": true, "input": "x"}));
        let events = sse_data(&text);
        let (kind, data) = events.last().expect("events");
        assert_eq!(kind.as_deref(), Some("response.completed"));
        let done: Value = serde_json::from_str(data).expect("completed");
        assert_eq!(done["response"]["id"], "resp_2");
        assert_eq!(done["response"]["output"][1]["call_id"], "call_2");
        assert_eq!(done["response"]["usage"]["input_tokens"], 9);

        let (_, _, text) = stream_post(
            p,
            "/v1/messages",
            &json!({"stream": true, "max_tokens": 5, "messages": []}),
        );
        let events = sse_data(&text);
        assert_eq!(events[0].0.as_deref(), Some("message_start"));
        assert_eq!(
            events.last().and_then(|(k, _)| k.as_deref()),
            Some("message_stop")
        );
        assert!(text.contains("\"id\":\"call_3\""), "{text}");

        let streamed: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| r["stream"].clone())
            .collect();
        assert_eq!(streamed, vec![json!(true); 3]);
        // Non-streaming requests are logged so.
        post(p, "/v1/chat/completions", &chat("x"));
        assert_eq!(server.requests()[3]["stream"], false);
    }

    #[test]
    fn errors_and_raw_bodies_are_never_streamed() {
        let server = spawn_on_thread(
            json!([{"responses": [{"status": 429}, {"raw": "nope"}, {"text": "ok"}]}]),
        );
        let body = json!({"stream": true, "messages": [{"role": "user", "content": "x"}]});
        let limited = post(server.port, "/v1/messages", &body);
        assert_eq!(limited.status, 429);
        assert_eq!(limited.header("content-type"), Some("application/json"));
        assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
        let raw = post(server.port, "/v1/chat/completions", &body);
        assert_eq!(raw.body, "nope");
        let requests = server.requests();
        assert_eq!(requests[0]["stream"], false);
        assert_eq!(requests[1]["stream"], false);
        let (status, _, text) = stream_post(server.port, "/v1/chat/completions", &body);
        assert_eq!(status, 200);
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        assert_eq!(server.requests()[2]["stream"], true);
    }

    #[test]
    fn chunk_delay_spaces_the_events() {
        let server =
            spawn_on_thread(json!([{"responses": [{"text": "abc", "chunk_delay_ms": 100}]}]));
        let (mut stream, mut reader) = connect(server.port);
        let body = json!({"stream": true, "messages": [{"role": "user", "content": "x"}]});
        let bytes = request_bytes("POST", "/v1/chat/completions", &[], &body.to_string(), true);
        stream.write_all(&bytes).expect("write");
        let chunks = read_chunked(&mut reader).chunks;
        // role, three pieces, finish, [DONE]: each frame its own chunk, 100 ms apart.
        assert_eq!(chunks.len(), 6, "{chunks:?}");
        let (first, _) = chunks[0];
        let (last, _) = chunks[chunks.len() - 1];
        assert!(
            last - first >= Duration::from_millis(500),
            "{:?}",
            last - first
        );
    }

    #[test]
    fn truncated_answers_in_every_protocol() {
        let server =
            spawn_on_thread(json!([{"responses": [{"text": "cut sh", "truncated": true}]}]));
        let p = server.port;
        let v = post(p, "/v1/chat/completions", &chat("x")).json();
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        let v = post(p, "/v1/messages", &json!({"messages": []})).json();
        assert_eq!(v["stop_reason"], "max_tokens");
        let v = post(p, "/v1/responses", &json!({"input": "x"})).json();
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
        let (_, _, text) = stream_post(p, "/v1/responses", &json!({"stream": true, "input": "x"}));
        let events = sse_data(&text);
        assert_eq!(
            events.last().and_then(|(k, _)| k.as_deref()),
            Some("response.incomplete")
        );
        // Not truncated: no incomplete details.
        let server = spawn_on_thread(json!([{"responses": [{"text": "whole"}]}]));
        let v = post(server.port, "/v1/responses", &json!({"input": "x"})).json();
        assert!(v["incomplete_details"].is_null());
    }

    #[test]
    fn drop_stops_the_server() {
        let server = spawn_on_thread(json!([{"responses": [{"text": "x"}]}]));
        let port = server.port;
        // An idle keep-alive connection must not keep the server alive.
        let (_idle, _reader) = connect(port);
        drop(server);
        assert!(StdStream::connect(("127.0.0.1", port)).is_err());
    }

    #[test]
    fn script_errors_name_the_field() {
        let cases = [
            (
                json!({"rules": [{"responses": [{"status": 42}]}]}),
                "rules[0].responses[0].status",
            ),
            (
                json!({"rules": [{"responses": [{"text": "a"}, {"txt": "b"}]}]}),
                "rules[0].responses[1].txt",
            ),
            (
                json!({"rules": [{"match": {"paht": "/"}, "responses": [{"text": "a"}]}]}),
                "rules[0].match.paht",
            ),
            (json!({"rules": [{"responses": []}]}), "rules[0].responses"),
            (json!({"rules": [{"match": {}}]}), "rules[0].responses"),
            (
                json!({"rules": [{"responses": [{"text": "a", "raw": "b"}]}]}),
                "rules[0].responses[0]",
            ),
            (
                json!({"rules": [{"responses": [{"tool_calls": [{"arguments": {}}]}]}]}),
                "rules[0].responses[0].tool_calls[0].name",
            ),
            (
                json!({"rules": [{"responses": [{"text": "a", "usage": {"prompt_tokens": -1}}]}]}),
                "rules[0].responses[0].usage.prompt_tokens",
            ),
            (
                json!({"rules": [{"cycle": "yes", "responses": [{"text": "a"}]}]}),
                "rules[0].cycle",
            ),
            (
                json!({"rules": [{"responses": [{"status": 500, "chunk_delay_ms": 5}]}]}),
                "rules[0].responses[0].chunk_delay_ms",
            ),
            (
                json!({"rules": [{"responses": [{"raw": "x", "truncated": true}]}]}),
                "rules[0].responses[0].truncated",
            ),
            (
                json!({"rules": [{"responses": [{"text": "x", "truncated": 1}]}]}),
                "rules[0].responses[0].truncated",
            ),
            (
                json!({"rules": [{"match": {"assistant_turns": -1}, "responses": [{"text": "a"}]}]}),
                "rules[0].match.assistant_turns",
            ),
            (
                json!({"rules": [{"match": {"any_user_contains": 3}, "responses": [{"text": "a"}]}]}),
                "rules[0].match.any_user_contains",
            ),
            (json!({"require_key": 5, "rules": []}), "require_key"),
            (json!({}), "rules"),
            (json!({"rules": {}}), "rules"),
        ];
        for (script, field) in cases {
            let e = Script::from_json(&script).expect_err(&script.to_string());
            assert_eq!(e.field, field, "{script}: {e}");
            assert!(e.to_string().contains(&format!("`{field}`")), "{e}");
        }
        let e = Script::parse("{nope").expect_err("bad JSON");
        assert!(e.to_string().starts_with("invalid JSON"), "{e}");
        let ok = Script::parse(r#"{"rules": [{"response": {"text": "a", "delay_ms": 5}}]}"#)
            .expect("valid");
        assert_eq!(ok.rules[0].responses[0].delay_ms, 5);
    }
}
