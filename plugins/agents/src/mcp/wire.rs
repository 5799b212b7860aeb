//! The MCP messages a client sends (JSON-RPC 2.0: `initialize`, `notifications/initialized`,
//! `tools/list`, `tools/call`), an HTTP/1.0 request carrying one, and the messages of an
//! answer — a JSON body, or server-sent events (`data:` lines) of a streamable-HTTP POST.

use serde_json::{json, Value};

/// The protocol version the client asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

/// The `initialize` request (id 1).
pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "agentcompass-terminus", "version": env!("CARGO_PKG_VERSION")},
    }})
}

/// The `notifications/initialized` notification.
pub(crate) fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// `tools/list` (id 2).
pub(crate) fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
}

/// `tools/call` of `tool` with `arguments` (id 2).
pub(crate) fn call_tool(tool: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// An HTTP/1.0 POST of `body` to `path` on `authority` (so the answer is delimited by the
/// connection's end, never chunked), with the MCP headers, the session (if any) and `extra`
/// headers.
pub(crate) fn http_post(
    authority: &str,
    path: &str,
    body: &Value,
    session: Option<&str>,
    extra: &[(String, String)],
) -> String {
    let body = body.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    request.push_str(&body);
    request
}

/// One HTTP answer: its status, session header and the JSON-RPC messages of its body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpAnswer {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    pub(crate) messages: Vec<Value>,
}

/// Reads a raw HTTP/1.x answer (the whole of it).
pub(crate) fn parse_http(raw: &str) -> Result<HttpAnswer, String> {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("not an HTTP answer: {}", excerpt(raw)))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP status line: {}", excerpt(status_line)))?;
    let mut session = None;
    let mut event_stream = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "mcp-session-id" => session = Some(value.to_string()),
            "content-type" => event_stream = value.starts_with("text/event-stream"),
            _ => {}
        }
    }
    let messages = if event_stream {
        sse_messages(body)
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(body.trim()).map_err(|e| format!("not JSON: {e}"))?]
    };
    Ok(HttpAnswer {
        status,
        session,
        messages,
    })
}

/// The JSON messages of an event stream's `data:` lines (an event's lines joined).
fn sse_messages(body: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for event in body.replace("\r\n", "\n").split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n")) {
            messages.push(message);
        }
    }
    messages
}

/// The JSON messages of a stdio server's output lines.
pub(crate) fn line_messages(output: &str) -> Vec<Value> {
    output
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(Value::is_object)
        .collect()
}

/// The result of the response with `id` among `messages`, or its error.
pub(crate) fn response(messages: &[Value], id: u64) -> Result<Value, String> {
    let found = messages
        .iter()
        .find(|m| m["id"].as_u64() == Some(id))
        .ok_or_else(|| format!("no answer to request {id}"))?;
    if let Some(error) = found.get("error") {
        return Err(format!(
            "error {}: {}",
            error["code"],
            error["message"].as_str().unwrap_or("(no message)")
        ));
    }
    Ok(found["result"].clone())
}

/// A `tools/call` result as text (its text blocks; other blocks as JSON) and whether the
/// tool reported an error.
pub(crate) fn call_text(result: &Value) -> (String, bool) {
    let parts: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|block| match block["text"].as_str() {
            Some(text) => text.to_string(),
            None => block.to_string(),
        })
        .collect();
    (parts.join("\n"), result["isError"] == Value::Bool(true))
}

fn excerpt(text: &str) -> String {
    text.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_answer_is_read() {
        let raw =
            "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: abc\r\n\r\n\
                   data: \nid: 0\nretry: 3000\n\n\
                   data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}\n\n";
        let answer = parse_http(raw).unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(answer.session.as_deref(), Some("abc"));
        assert_eq!(response(&answer.messages, 1).unwrap(), json!({"ok": true}));
    }

    #[test]
    fn a_json_answer_and_errors_are_read() {
        let raw = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n\
                   {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"nope\"}}";
        let answer = parse_http(raw).unwrap();
        assert_eq!(
            response(&answer.messages, 2).unwrap_err(),
            "error -32601: nope"
        );
        assert!(parse_http("garbage").is_err());
        let result = json!({"content": [{"type": "text", "text": "v"}], "isError": false});
        assert_eq!(call_text(&result), ("v".to_string(), false));
    }

    #[test]
    fn a_request_is_http_1_0_with_the_session() {
        let request = http_post("tools:8000", "/mcp", &list_tools(), Some("s1"), &[]);
        assert!(request.starts_with("POST /mcp HTTP/1.0\r\nHost: tools:8000\r\n"));
        assert!(request.contains("Mcp-Session-Id: s1\r\n"));
        assert!(request.ends_with("\"params\":{}}"), "{request}");
    }
}
