//! Differential test: the scripted model server's streamed answers read by the official model
//! SDKs. `tests/scripted_sdk/clients.py` streams one request per case with the `openai` client
//! (chat completions by hand and with the SDK's `stream` helper, the Responses `stream`
//! helper) and the `anthropic` client (`messages.stream` → `get_final_message`) against a
//! server started here — answers with tool calls, truncated answers, scripted 429s — and
//! prints what the clients assembled; it must be what the script says.
//!
//! The SDKs' Python is `AGENTCOMPASS_MODEL_SDK_PYTHON` (a venv with the pinned `openai` and
//! `anthropic`), which `./dev.sh test` creates and exports; without it the test fails. Traffic
//! goes to the loopback server only.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::scripted::ScriptedServer;
use serde_json::{json, Value};

/// The SDK versions `dev.sh` pins (`ensure_model_sdks`).
const OPENAI_VERSION: &str = "3.57.0";
const ANTHROPIC_VERSION: &str = "2.15.0";

const KEY: &str = "sk-scripted-sdk-test";

/// The Python interpreter of the model-SDK venv.
fn sdk_python() -> PathBuf {
    match std::env::var_os("AGENTCOMPASS_MODEL_SDK_PYTHON") {
        Some(python) if !python.is_empty() => PathBuf::from(python),
        _ => panic!(
            "AGENTCOMPASS_MODEL_SDK_PYTHON is not set: run this test through `./dev.sh test` (it installs openai=={OPENAI_VERSION} and anthropic=={ANTHROPIC_VERSION} into a cached venv and exports it)"
        ),
    }
}

fn clients_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripted_sdk/clients.py")
}

/// One rule per case, chosen by the case marker in the user message.
fn case(marker: &str, response: Value) -> Value {
    json!({"match": {"last_user_contains": format!("case {marker}")}, "responses": [response]})
}

fn script() -> Value {
    json!({"require_key": KEY, "rules": [
        case("chat_text", json!({
            "text": "Hello from the scripted model — streamed in pieces.",
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "cached_tokens": 3},
        })),
        case("chat_tools", json!({
            "text": "Let me look.",
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "ls -la"}},
                {"name": "write_file", "arguments": {"path": "ü.txt", "content": "a\nb"}},
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 12, "cached_tokens": 10},
            "chunk_delay_ms": 5,
        })),
        case("chat_helper", json!({
            "tool_calls": [{"name": "bash", "arguments": {"command": "pwd"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        })),
        case("responses", json!({
            "text": "Running it now.",
            "tool_calls": [{"name": "bash", "arguments": {"command": "make test"}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "cached_tokens": 32},
        })),
        case("anthropic", json!({
            "text": "Checking the files.",
            "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 6, "cached_tokens": 45},
        })),
        case("truncated", json!({
            "text": "The answer is cut sh",
            "usage": {"prompt_tokens": 8, "completion_tokens": 16},
            "truncated": true,
        })),
        case("error", json!({"status": 429})),
    ]})
}

/// Runs the clients against `server`; their report.
fn run_clients(server: &ScriptedServer) -> Value {
    let output = Command::new(sdk_python())
        .arg(clients_script())
        .arg(server.url())
        .arg(KEY)
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .expect("start the SDK clients");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDK clients failed ({}):\n{}\n{stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("the clients' report: {e}: {stdout}"))
}

/// A tool call's arguments as the server serialises them.
fn args(value: Value) -> String {
    value.to_string()
}

fn expected_report() -> Value {
    json!({
        "versions": {"openai": OPENAI_VERSION, "anthropic": ANTHROPIC_VERSION},
        "chat_text": {
            "ids": ["chatcmpl-1"],
            "roles": ["assistant"],
            "content": "Hello from the scripted model — streamed in pieces.",
            "tool_calls": [],
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18, "cached_tokens": 3},
        },
        "chat_tools": {
            "ids": ["chatcmpl-2"],
            "roles": ["assistant"],
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_1", "name": "bash", "arguments": args(json!({"command": "ls -la"}))},
                {"id": "call_2", "name": "write_file",
                 "arguments": args(json!({"path": "ü.txt", "content": "a\nb"}))},
            ],
            "finish_reason": "tool_calls",
            "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42, "cached_tokens": 10},
        },
        "chat_helper": {
            "content": null,
            "tool_calls": [{"id": "call_3", "name": "bash", "arguments": args(json!({"command": "pwd"}))}],
            "finish_reason": "tool_calls",
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cached_tokens": 0},
        },
        "responses": {
            "event_types": [
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
            ],
            "delta_text": "Running it now.",
            "output_text": "Running it now.",
            "status": "completed",
            "output": [
                {"type": "message", "text": "Running it now."},
                {"type": "function_call", "call_id": "call_4", "name": "bash",
                 "arguments": args(json!({"command": "make test"}))},
            ],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49, "cached_tokens": 32},
        },
        "anthropic": {
            "text_stream": "Checking the files.",
            "content": [
                {"type": "text", "text": "Checking the files."},
                {"type": "tool_use", "id": "call_5", "name": "read", "input": {"path": "README.md"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 45},
        },
        "chat_truncated": {
            "ids": ["chatcmpl-6"],
            "roles": ["assistant"],
            "content": "The answer is cut sh",
            "tool_calls": [],
            "finish_reason": "length",
            "usage": {"prompt_tokens": 8, "completion_tokens": 16, "total_tokens": 24, "cached_tokens": 0},
        },
        "responses_truncated": {
            "last_event": "response.incomplete",
            "status": "incomplete",
            "incomplete_reason": "max_output_tokens",
            "output_text": "The answer is cut sh",
        },
        "anthropic_truncated": {
            "text_stream": "The answer is cut sh",
            "content": [{"type": "text", "text": "The answer is cut sh"}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 8, "output_tokens": 16, "cache_read_input_tokens": 0},
        },
        "chat_error": {"raised": "RateLimitError", "status": 429},
        "anthropic_error": {"raised": "RateLimitError", "status": 429},
    })
}

#[test]
fn official_sdks_assemble_the_scripted_streams() {
    let python = sdk_python();
    let server = ScriptedServer::start(&script(), None).expect("start the scripted server");
    let report = run_clients(&server);
    // What the clients assembled (shown with --nocapture).
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    let expected = expected_report();
    let Some(cases) = expected.as_object() else {
        unreachable!("the expected report is an object")
    };
    for (name, want) in cases {
        assert_eq!(
            &report[name],
            want,
            "case `{name}` ({}):\n{}",
            python.display(),
            serde_json::to_string_pretty(&report[name]).unwrap_or_default()
        );
    }
    assert_eq!(
        report.as_object().map(|r| r.len()),
        Some(cases.len()),
        "{report}"
    );
    // Every request streamed except the two scripted errors, which stayed JSON.
    let streamed: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r["stream"].as_bool().unwrap_or_default())
        .collect();
    assert_eq!(
        streamed,
        [true, true, true, true, true, true, true, true, false, false]
    );
    assert!(server
        .requests()
        .iter()
        .all(|r| r["authorized"] == true && r["body"]["stream"] == true));
}
