//! Tests of the transcript parsers against the recorded samples (`fixtures/`, copied from
//! `docs/research/samples/`) and hand-written edge cases.

use agentcompass_plugin_api::contracts::TrajectoryStep;
use serde_json::{json, Value};

use super::*;

/// Claude Code 2.1.332 `stream-json` stdout of a one-command run.
const CLAUDE: &str = include_str!("fixtures/claude-code.stdout.jsonl");
/// Qwen Code 0.24.4 `stream-json` stdout of a one-command run.
const QWEN: &str = include_str!("fixtures/qwen-code.stdout.jsonl");
/// Codex 0.171.0 `exec --json` stdout of a one-command run.
const CODEX: &str = include_str!("fixtures/codex.stdout.jsonl");
/// mini-swe-agent 2.4.6 trajectory (tool-calling mode) of a one-command run.
const MINI: &str = include_str!("fixtures/mini-swe-agent.traj.trimmed.json");

/// The command every sample ran.
const SAMPLE_COMMAND: &str = "mkdir -p /tmp/x && echo hi > /tmp/x/hello.txt";
/// The final answer of every sample.
const SAMPLE_ANSWER: &str = "DONE-MARK: wrote /tmp/x/hello.txt";

/// JSON values as JSONL text.
fn jsonl(lines: &[Value]) -> String {
    lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// (id, name) of each tool call of a step.
fn calls(step: &TrajectoryStep) -> Vec<(String, String)> {
    step.assistant_content
        .tool_calls
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|call| {
                    (
                        call["id"].as_str().unwrap_or("").to_string(),
                        call["name"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// (prompt, completion) tokens of a step.
fn tokens(step: &TrajectoryStep) -> (Option<u64>, Option<u64>) {
    (
        step.metric.prompt_tokens_len,
        step.metric.completion_tokens_len,
    )
}

/// The step ids, to check they count from 1.
fn step_ids(transcript: &Transcript) -> Vec<u64> {
    transcript.steps.iter().map(|step| step.step_id).collect()
}

// ---------------------------------------------------------------- stream-json: samples

#[test]
fn claude_sample() {
    let t = stream_json(CLAUDE);
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(t.commands, [SAMPLE_COMMAND]);
    assert_eq!(t.final_answer.as_deref(), Some(SAMPLE_ANSWER));
    assert_eq!(t.failure, None);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 220,
            output_tokens: 18,
            cost_usd: Some(0.00093)
        })
    );
    let first = &t.steps[0];
    assert_eq!(first.user_content, Value::Null);
    assert_eq!(
        first.assistant_content.tool_calls,
        json!([{"id": "call_1", "name": "Bash",
                "arguments": {"command": SAMPLE_COMMAND, "description": "write hello"}}])
    );
    assert_eq!(first.assistant_content.content, None);
    assert_eq!(
        first.observation,
        [
            json!({"tool_call_id": "call_1", "output": "(Bash completed with no output)",
                "is_error": false})
        ]
    );
    assert_eq!(tokens(first), (Some(100), Some(1)));
    let second = &t.steps[1];
    assert_eq!(
        second.assistant_content.content.as_deref(),
        Some(SAMPLE_ANSWER)
    );
    assert_eq!(second.assistant_content.tool_calls, Value::Null);
    assert!(second.observation.is_empty());
    assert_eq!(tokens(second), (Some(120), Some(1)));
}

#[test]
fn qwen_sample() {
    let t = stream_json(QWEN);
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(t.commands, [SAMPLE_COMMAND]);
    assert_eq!(t.final_answer.as_deref(), Some(SAMPLE_ANSWER));
    assert_eq!(t.failure, None);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 220,
            output_tokens: 18,
            cost_usd: None
        })
    );
    assert_eq!(
        calls(&t.steps[0]),
        [("call_1".into(), "run_shell_command".into())]
    );
    let obs = &t.steps[0].observation[0];
    assert_eq!(obs["tool_call_id"], "call_1");
    assert_eq!(obs["exit_code"], 0);
    assert_eq!(obs["is_error"], false);
    assert!(obs["output"]
        .as_str()
        .is_some_and(|out| out.starts_with("Command: mkdir")));
    assert_eq!(tokens(&t.steps[0]), (Some(100), Some(10)));
    assert_eq!(tokens(&t.steps[1]), (Some(120), Some(8)));
    assert_eq!(
        t.steps[1].assistant_content.content.as_deref(),
        Some(SAMPLE_ANSWER)
    );
}

// ---------------------------------------------------------------- stream-json: edge cases

/// A Claude `assistant` line with one content block.
fn claude_assistant(id: &str, block: Value, input_tokens: u64, output_tokens: u64) -> Value {
    json!({"type": "assistant", "message": {"id": id, "role": "assistant", "content": [block],
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 10, "cache_read_input_tokens": 5}},
        "parent_tool_use_id": null})
}

/// A Claude `tool_use` block running `command` in Bash.
fn bash(id: &str, command: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash",
           "input": {"command": command, "description": "run"}})
}

#[test]
fn claude_split_message_with_two_tool_calls_merges_into_one_step() {
    let text = jsonl(&[
        json!({"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"}),
        json!({"type": "user", "message": {"role": "user", "content": "TASK: list files"}}),
        claude_assistant(
            "msg_1",
            json!({"type": "thinking", "thinking": "Two commands."}),
            3,
            1,
        ),
        claude_assistant("msg_1", json!({"type": "text", "text": "Listing."}), 3, 1),
        claude_assistant("msg_1", bash("toolu_a", "ls"), 3, 1),
        // A result of the first call before the second call's line: still the same step.
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a",
             "content": [{"type": "text", "text": "a.txt"}, {"type": "text", "text": "b.txt"}],
             "is_error": false}]}}),
        claude_assistant("msg_1", bash("toolu_b", "ls missing"), 3, 40),
        // The same block again (a streaming duplicate): not a second call.
        claude_assistant("msg_1", bash("toolu_b", "ls missing"), 3, 40),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_b",
             "content": "Exit code 2\nls: cannot access 'missing': No such file or directory",
             "is_error": true}]}}),
        json!({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
               "retry_delay_ms": 600, "error_status": 529}),
        claude_assistant(
            "msg_2",
            json!({"type": "text", "text": "a.txt b.txt"}),
            50,
            7,
        ),
        json!({"type": "result", "subtype": "success", "is_error": false,
               "result": "a.txt b.txt", "total_cost_usd": 0.01,
               "usage": {"input_tokens": 56, "output_tokens": 47,
                         "cache_creation_input_tokens": 20, "cache_read_input_tokens": 10}}),
    ]);
    let t = stream_json(&text);
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(t.commands, ["ls", "ls missing"]);
    assert_eq!(t.final_answer.as_deref(), Some("a.txt b.txt"));
    assert_eq!(t.failure, None);
    assert_eq!(
        t.warnings,
        ["1 API retry notice (last: attempt 1/10, error status 529)"]
    );
    let first = &t.steps[0];
    assert_eq!(first.user_content, json!("TASK: list files"));
    assert_eq!(
        first.assistant_content.reasoning_content.as_deref(),
        Some("Two commands.")
    );
    assert_eq!(first.assistant_content.content.as_deref(), Some("Listing."));
    assert_eq!(
        calls(first),
        [
            ("toolu_a".into(), "Bash".into()),
            ("toolu_b".into(), "Bash".into())
        ]
    );
    assert_eq!(
        first.observation,
        [
            json!({"tool_call_id": "toolu_a", "output": "a.txt\nb.txt", "is_error": false}),
            json!({"tool_call_id": "toolu_b",
                   "output": "Exit code 2\nls: cannot access 'missing': No such file or directory",
                   "exit_code": 2, "is_error": true}),
        ]
    );
    // Anthropic usage: cached input counted in the prompt; the last line's usage wins.
    assert_eq!(tokens(first), (Some(18), Some(40)));
    assert_eq!(tokens(&t.steps[1]), (Some(65), Some(7)));
    assert_eq!(t.steps[1].user_content, Value::Null);
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 86,
            output_tokens: 47,
            cost_usd: Some(0.01)
        })
    );
}

#[test]
fn claude_api_error_500_is_the_failure() {
    let retry = |attempt: u64| {
        json!({"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
               "retry_delay_ms": 600, "error_status": 500, "error": "server_error"})
    };
    let text = jsonl(&[
        json!({"type": "system", "subtype": "init"}),
        retry(1),
        retry(2),
        json!({"type": "result", "subtype": "success", "is_error": true,
               "api_error_status": 500, "num_turns": 1,
               "result": "API Error: 500 {\"type\":\"error\",\n\"error\":{\"message\":\"scripted error 500\"}}",
               "total_cost_usd": 0,
               "usage": {"input_tokens": 0, "output_tokens": 0}}),
    ]);
    let t = stream_json(&text);
    assert!(t.steps.is_empty());
    assert!(t.commands.is_empty());
    assert_eq!(t.final_answer, None);
    assert_eq!(
        t.failure.as_deref(),
        Some(r#"API Error: 500 {"type":"error", "error":{"message":"scripted error 500"}}"#)
    );
    assert_eq!(
        t.warnings,
        ["2 API retry notices (last: attempt 2/10, error status 500)"]
    );
}

#[test]
fn qwen_error_result_uses_error_message() {
    let text = jsonl(&[
        json!({"type": "system", "subtype": "init", "qwen_code_version": "0.24.4"}),
        json!({"type": "stream_event", "event": {"type": "goal_state"}}),
        json!({"type": "assistant", "message": {"id": "m1", "role": "assistant",
               "content": [{"type": "text", "text": "[API Error: 500 scripted error 500]"}]}}),
        json!({"type": "result", "subtype": "error_during_execution", "is_error": true,
               "error": {"message": "500 scripted error 500"}}),
    ]);
    let t = stream_json(&text);
    assert_eq!(step_ids(&t), [1]);
    assert_eq!(t.failure.as_deref(), Some("500 scripted error 500"));
    assert_eq!(t.final_answer, None);
    assert_eq!(t.reported_usage, None);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // An error result with neither text nor message still names a failure.
    let bare = stream_json(r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#);
    assert_eq!(bare.failure.as_deref(), Some("error_max_turns"));
}

#[test]
fn stream_json_survives_garbage_and_a_truncated_last_line() {
    let mut text = String::from("Warning: no stdin data received in 3s\n\n");
    text.push_str(CLAUDE);
    text.push_str("\n[1, 2]\n");
    // Drop the result line: cut the text at its start, halfway through it.
    let cut = text.rfind("{\"duration_api_ms\"").unwrap_or(text.len());
    let truncated = format!("{}{{\"duration_api_ms\": 19", &text[..cut]);
    let t = stream_json(&truncated);
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(t.commands, [SAMPLE_COMMAND]);
    assert_eq!(t.final_answer, None);
    assert_eq!(t.failure, None);
    assert_eq!(
        t.warnings,
        [
            "no result line: the run did not finish",
            "2 lines were not JSON"
        ]
    );
    // With the result line intact, only the garbage is counted.
    let whole = stream_json(&text);
    assert_eq!(whole.warnings, ["2 lines were not JSON"]);
    assert_eq!(whole.final_answer.as_deref(), Some(SAMPLE_ANSWER));
}

#[test]
fn stream_json_odd_shapes_never_panic() {
    assert_eq!(stream_json(""), Transcript::default());
    assert_eq!(stream_json("\n  \n"), Transcript::default());
    let text = jsonl(&[
        // A tool result before any call: a step of its own.
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "nope", "content": "orphan"}]}}),
        json!({"type": "assistant"}),
        json!({"type": "assistant", "message": {"content": "plain string content"}}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use"}, 7, null]}}),
        // A result for an unknown call: the last step.
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "unknown", "content": {"weird": true}}]}}),
        json!({"type": "user", "message": "not an object"}),
        json!({"type": "something_new", "payload": [1, 2, 3]}),
        json!({"type": "result", "is_error": false, "result": 42, "usage": "n/a"}),
    ]);
    let t = stream_json(&text);
    assert_eq!(step_ids(&t), [1, 2, 3, 4]);
    assert_eq!(t.steps[0].observation[0]["output"], "orphan");
    assert_eq!(
        t.steps[2].assistant_content.content.as_deref(),
        Some("plain string content")
    );
    assert_eq!(calls(&t.steps[3]), [(String::new(), String::new())]);
    assert_eq!(t.steps[3].observation[0]["tool_call_id"], "unknown");
    assert_eq!(t.steps[3].observation[0]["output"], "");
    assert_eq!(t.final_answer, None);
    assert_eq!(t.failure, None);
    assert_eq!(t.reported_usage, None);
    assert!(t.commands.is_empty());
}

#[test]
fn long_tool_output_is_cut_in_the_middle() {
    let long = format!("HEAD{}TAIL", "x".repeat(30_000));
    let text = jsonl(&[
        claude_assistant("m", bash("t1", "cat big"), 1, 1),
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": long}]}}),
    ]);
    let t = stream_json(&text);
    let out = t.steps[0].observation[0]["output"].as_str().unwrap_or("");
    assert!(out.starts_with("HEAD") && out.ends_with("TAIL"));
    assert!(out.contains("characters truncated"), "{}", &out[..100]);
    assert!(out.chars().count() < MAX_OBSERVATION_CHARS + 100);
}

// ---------------------------------------------------------------- codex

#[test]
fn codex_sample() {
    let t = codex_events(CODEX);
    assert_eq!(step_ids(&t), [1, 2]);
    // The shell Codex wraps each command in is taken off (kept as `shell_line`).
    assert_eq!(
        t.commands,
        ["mkdir -p /tmp/x && echo hi > /tmp/x/hello.txt"]
    );
    assert_eq!(t.final_answer.as_deref(), Some(SAMPLE_ANSWER));
    assert_eq!(t.failure, None);
    assert_eq!(t.warnings.len(), 1);
    assert!(t.warnings[0].starts_with("Model metadata for `gpt-test` not found."));
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 220,
            output_tokens: 18,
            cost_usd: None
        })
    );
    let first = &t.steps[0];
    assert_eq!(
        first.assistant_content.tool_calls,
        json!([{"id": "item_1", "name": "command_execution",
                "arguments": {"command": t.commands[0],
                              "shell_line": "/bin/bash -lc 'mkdir -p /tmp/x && echo hi > /tmp/x/hello.txt'"}}])
    );
    assert_eq!(
        first.observation,
        [json!({"tool_call_id": "item_1", "output": "", "exit_code": 0, "is_error": false})]
    );
    assert_eq!(tokens(first), (None, None));
    assert_eq!(
        t.steps[1].assistant_content.content.as_deref(),
        Some(SAMPLE_ANSWER)
    );
}

/// A Codex item event.
fn codex_item(event: &str, item: Value) -> Value {
    json!({"type": event, "item": item})
}

/// A Codex `command_execution` item.
fn codex_command(id: &str, command: &str, output: &str, exit: Option<i64>, status: &str) -> Value {
    json!({"id": id, "type": "command_execution", "command": command,
           "aggregated_output": output, "exit_code": exit, "status": status})
}

#[test]
fn codex_groups_commands_and_keeps_failed_exit_codes() {
    let text = jsonl(&[
        json!({"type": "thread.started", "thread_id": "t"}),
        json!({"type": "turn.started"}),
        codex_item(
            "item.completed",
            json!({"id": "r1", "type": "reasoning", "text": "look around"}),
        ),
        codex_item(
            "item.started",
            codex_command("c1", "ls", "", None, "in_progress"),
        ),
        codex_item(
            "item.started",
            codex_command("c2", "cat nope", "", None, "in_progress"),
        ),
        codex_item(
            "item.completed",
            codex_command("c1", "ls", "a.txt\n", Some(0), "completed"),
        ),
        codex_item(
            "item.updated",
            codex_command("c2", "cat nope", "cat: nope", None, "in_progress"),
        ),
        codex_item(
            "item.completed",
            codex_command(
                "c2",
                "cat nope",
                "cat: nope: No such file or directory\n",
                Some(1),
                "failed",
            ),
        ),
        // A duplicate completion changes nothing.
        codex_item(
            "item.completed",
            codex_command("c2", "cat nope", "other", Some(9), "completed"),
        ),
        codex_item(
            "item.completed",
            json!({"id": "r2", "type": "reasoning", "text": "try again"}),
        ),
        // Started, never completed (the run was cut): no exit code.
        codex_item(
            "item.started",
            codex_command("c3", "sleep 100", "", None, "in_progress"),
        ),
        codex_item(
            "item.completed",
            json!({"id": "m1", "type": "agent_message", "text": "first answer"}),
        ),
        codex_item(
            "item.completed",
            json!({"id": "m2", "type": "agent_message", "text": "final answer"}),
        ),
        json!({"type": "turn.completed", "usage": {"input_tokens": 300, "cached_input_tokens": 100,
               "output_tokens": 30, "reasoning_output_tokens": 5}}),
        json!({"type": "turn.started"}),
        codex_item(
            "item.completed",
            json!({"id": "m3", "type": "agent_message", "text": "second turn"}),
        ),
        json!({"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": 5}}),
    ]);
    let t = codex_events(&text);
    assert_eq!(t.commands, ["ls", "cat nope", "sleep 100"]);
    assert_eq!(step_ids(&t), [1, 2, 3, 4, 5]);
    assert_eq!(
        calls(&t.steps[0]),
        [
            ("c1".into(), "command_execution".into()),
            ("c2".into(), "command_execution".into())
        ]
    );
    assert_eq!(
        t.steps[0].assistant_content.reasoning_content.as_deref(),
        Some("look around")
    );
    assert_eq!(
        t.steps[0].observation,
        [
            json!({"tool_call_id": "c1", "output": "a.txt\n", "exit_code": 0, "is_error": false}),
            json!({"tool_call_id": "c2", "output": "cat: nope: No such file or directory\n",
                   "exit_code": 1, "is_error": true}),
        ]
    );
    assert_eq!(
        t.steps[1].assistant_content.reasoning_content.as_deref(),
        Some("try again")
    );
    assert_eq!(
        t.steps[1].observation,
        [json!({"tool_call_id": "c3", "output": ""})]
    );
    assert_eq!(
        t.steps[2].assistant_content.content.as_deref(),
        Some("first answer")
    );
    assert_eq!(
        t.steps[3].assistant_content.content.as_deref(),
        Some("final answer")
    );
    assert_eq!(
        t.steps[4].assistant_content.content.as_deref(),
        Some("second turn")
    );
    assert_eq!(t.final_answer.as_deref(), Some("second turn"));
    assert_eq!(t.failure, None);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 350,
            output_tokens: 35,
            cost_usd: None
        })
    );
}

#[test]
fn codex_turn_failed_after_reconnects() {
    let text = jsonl(&[
        json!({"type": "thread.started", "thread_id": "t"}),
        codex_item(
            "item.completed",
            json!({"id": "item_0", "type": "error",
                   "message": "Model metadata for `gpt-test` not found. Defaulting to fallback metadata."}),
        ),
        json!({"type": "turn.started"}),
        json!({"type": "error", "message": "Reconnecting... 1/5 (unexpected status 500)"}),
        json!({"type": "error", "message": "Reconnecting... 2/5 (unexpected status 500)"}),
        json!({"type": "error", "message": "unexpected status 500 Internal Server Error: scripted"}),
        json!({"type": "turn.failed",
               "error": {"message": "unexpected status 500 Internal Server Error:\nscripted"}}),
    ]);
    let t = codex_events(&text);
    assert!(t.steps.is_empty());
    assert_eq!(t.final_answer, None);
    assert_eq!(
        t.failure.as_deref(),
        Some("unexpected status 500 Internal Server Error: scripted")
    );
    assert_eq!(
        t.warnings,
        [
            "Model metadata for `gpt-test` not found. Defaulting to fallback metadata.",
            "2 reconnect notices (last: Reconnecting... 2/5 (unexpected status 500))",
        ]
    );
    assert_eq!(t.reported_usage, None);
}

#[test]
fn codex_fatal_error_event_without_turn_failed() {
    let text = jsonl(&[
        json!({"type": "error", "message": "Reconnecting... 1/5"}),
        json!({"type": "error", "message": "stream disconnected before completion"}),
    ]);
    let t = codex_events(&text);
    assert_eq!(
        t.failure.as_deref(),
        Some("stream disconnected before completion")
    );
    assert_eq!(
        t.warnings,
        ["1 reconnect notice (last: Reconnecting... 1/5)"]
    );
    // Reconnect notices alone are no failure.
    let retried = codex_events(&jsonl(&[
        json!({"type": "error", "message": "Reconnecting... 1/5"}),
        codex_item(
            "item.completed",
            json!({"id": "m", "type": "agent_message", "text": "ok"}),
        ),
        json!({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    ]));
    assert_eq!(retried.failure, None);
    assert_eq!(retried.final_answer.as_deref(), Some("ok"));
}

#[test]
fn codex_function_call_items_and_garbage() {
    let text = [
        "WARNING: proceeding, even though we could not create PATH aliases".to_string(),
        codex_item(
            "item.completed",
            json!({"id": "f1", "type": "function_call", "name": "exec_command",
                   "arguments": "{\"cmd\":\"echo hi\"}", "output": "hi\n"}),
        )
        .to_string(),
        json!({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}})
            .to_string(),
        "{\"type\": \"item.completed\", \"item\": {\"id\": \"x\", \"ty".to_string(),
    ]
    .join("\n");
    let t = codex_events(&text);
    assert_eq!(t.commands, ["echo hi"]);
    assert_eq!(step_ids(&t), [1]);
    assert_eq!(
        t.steps[0].assistant_content.tool_calls,
        json!([{"id": "f1", "name": "exec_command", "arguments": {"cmd": "echo hi"}}])
    );
    assert_eq!(
        t.steps[0].observation,
        [json!({"tool_call_id": "f1", "output": "hi\n"})]
    );
    assert_eq!(t.final_answer, None);
    assert_eq!(t.warnings, ["2 lines were not JSON"]);
    assert_eq!(codex_events(""), Transcript::default());
    assert_eq!(
        codex_events("{\"type\":\"item.completed\",\"item\":null}\n{}"),
        Transcript::default()
    );
}

// ---------------------------------------------------------------- mini-swe-agent

#[test]
fn mini_sample() {
    let t = mini_trajectory(MINI).unwrap_or_default();
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(
        t.commands,
        [
            SAMPLE_COMMAND,
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo DONE-MARK"
        ]
    );
    assert_eq!(t.final_answer.as_deref(), Some("DONE-MARK"));
    assert_eq!(t.failure, None);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 220,
            output_tokens: 18,
            cost_usd: Some(0.0)
        })
    );
    let first = &t.steps[0];
    assert!(first
        .user_content
        .as_str()
        .is_some_and(|text| text.starts_with("Please solve this issue: TASK-MARK")));
    assert_eq!(
        first.system_prompt.as_deref(),
        Some("You are a helpful assistant that can interact with a computer.")
    );
    assert_eq!(first.assistant_content.content, None);
    assert_eq!(
        first.assistant_content.tool_calls,
        json!([{"id": "call_1", "name": "bash", "arguments": {"command": SAMPLE_COMMAND}}])
    );
    assert_eq!(
        first.observation,
        [json!({"tool_call_id": "call_1", "output": "", "exit_code": 0})]
    );
    assert_eq!(tokens(first), (Some(100), Some(10)));
    let second = &t.steps[1];
    assert_eq!(
        second.assistant_content.content.as_deref(),
        Some("Done, submitting.")
    );
    assert_eq!(second.user_content, Value::Null);
    assert_eq!(
        second.observation,
        [
            json!({"tool_call_id": "call_2", "output": "", "exit_code": -1,
                "exception_info": "action was not executed"})
        ]
    );
    assert_eq!(tokens(second), (Some(120), Some(8)));
}

/// A mini assistant message with the given actions (`(command, tool_call_id)`) and usage.
fn mini_assistant(content: &str, actions: &[(&str, Option<&str>)], usage: (u64, u64)) -> Value {
    let actions: Vec<Value> = actions
        .iter()
        .map(|(command, id)| match id {
            Some(id) => json!({"command": command, "tool_call_id": id}),
            None => json!({"command": command}),
        })
        .collect();
    json!({"role": "assistant", "content": content, "extra": {"actions": actions,
        "response": {"usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1}}}})
}

/// A mini observation message.
fn mini_observation(role: &str, id: Option<&str>, output: &str, returncode: i64) -> Value {
    let mut message = json!({"role": role,
        "content": format!("<returncode>{returncode}</returncode><output>{output}</output>"),
        "extra": {"raw_output": output, "returncode": returncode, "exception_info": ""}});
    if let (Some(id), Value::Object(fields)) = (id, &mut message) {
        fields.insert("tool_call_id".into(), id.into());
    }
    message
}

#[test]
fn mini_text_mode_limits_exceeded() {
    let doc = json!({
        "info": {"exit_status": "LimitsExceeded", "submission": "",
                 "model_stats": {"instance_cost": 0.25, "api_calls": 2}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "TASK: find x"},
            mini_assistant("Look.\n```mswea_bash_command\nls x\n```", &[("ls x", None)], (500, 20)),
            mini_observation("user", None,
                "ls: cannot access 'x': No such file or directory\n", 2),
            mini_assistant("Again.\n```mswea_bash_command\nls y\n```", &[("ls y", None)], (600, 25)),
            mini_observation("user", None, "y\n", 0),
            {"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded",
                                                      "submission": ""}},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    });
    let t = mini_trajectory(&doc.to_string()).unwrap_or_default();
    assert_eq!(step_ids(&t), [1, 2]);
    assert_eq!(t.commands, ["ls x", "ls y"]);
    assert_eq!(t.final_answer, None);
    assert_eq!(t.failure.as_deref(), Some("exit status LimitsExceeded: y"));
    assert_eq!(calls(&t.steps[0]), [("action-1-0".into(), "bash".into())]);
    assert_eq!(
        t.steps[0].observation,
        [json!({"tool_call_id": "action-1-0",
                "output": "ls: cannot access 'x': No such file or directory\n", "exit_code": 2})]
    );
    assert_eq!(t.steps[0].user_content, json!("TASK: find x"));
    assert_eq!(tokens(&t.steps[0]), (Some(500), Some(20)));
    assert_eq!(tokens(&t.steps[1]), (Some(600), Some(25)));
    assert_eq!(
        t.reported_usage,
        Some(ReportedUsage {
            input_tokens: 1100,
            output_tokens: 45,
            cost_usd: Some(0.25)
        })
    );
}

#[test]
fn mini_internal_server_error_names_the_exception() {
    let doc = json!({
        "info": {"exit_status": "InternalServerError", "submission": "",
                 "model_stats": {"instance_cost": 0.0, "api_calls": 0}},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "TASK"},
            {"role": "exit", "content": "litellm.InternalServerError: OpenAIException - scripted error 500",
             "extra": {"exit_status": "InternalServerError", "submission": "",
                       "exception_str": "litellm.InternalServerError: OpenAIException - scripted error 500"}},
        ],
    });
    let t = mini_trajectory(&doc.to_string()).unwrap_or_default();
    assert!(t.steps.is_empty());
    assert!(t.commands.is_empty());
    assert_eq!(
        t.failure.as_deref(),
        Some("exit status InternalServerError: litellm.InternalServerError: OpenAIException - scripted error 500")
    );
    assert_eq!(t.final_answer, None);
    assert_eq!(t.reported_usage, None);
    // Nothing to say about it: the status alone.
    let bare = json!({"info": {"exit_status": "RepeatedFormatError"}, "messages": []});
    let t = mini_trajectory(&bare.to_string()).unwrap_or_default();
    assert_eq!(
        t.failure.as_deref(),
        Some("exit status RepeatedFormatError")
    );
}

#[test]
fn mini_two_tool_calls_in_one_turn_and_an_unfinished_run() {
    let doc = json!({
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "TASK"}]},
            mini_assistant("", &[("ls", Some("c1")), ("false", Some("c2"))], (10, 3)),
            mini_observation("tool", Some("c1"), "a\n", 0),
            mini_observation("tool", Some("c2"), "", 1),
            "not a message",
        ],
    });
    let t = mini_trajectory(&doc.to_string()).unwrap_or_default();
    assert_eq!(step_ids(&t), [1]);
    assert_eq!(t.commands, ["ls", "false"]);
    assert_eq!(
        calls(&t.steps[0]),
        [("c1".into(), "bash".into()), ("c2".into(), "bash".into())]
    );
    assert_eq!(t.steps[0].assistant_content.content, None);
    assert_eq!(t.steps[0].user_content, json!("TASK"));
    assert_eq!(
        t.steps[0].observation,
        [
            json!({"tool_call_id": "c1", "output": "a\n", "exit_code": 0}),
            json!({"tool_call_id": "c2", "output": "", "exit_code": 1}),
        ]
    );
    assert_eq!(t.failure, None);
    assert_eq!(t.final_answer, None);
    assert_eq!(
        t.warnings,
        [
            "no exit status: the run did not finish",
            "1 message was not a JSON object"
        ]
    );
}

#[test]
fn mini_rejects_what_is_not_a_trajectory() {
    for text in [
        "",
        "not json",
        "[1, 2]",
        "{\"info\": {}}",
        "{\"messages\": {}}",
    ] {
        let err = mini_trajectory(text).err().unwrap_or_default();
        assert!(!err.is_empty() && !err.contains('\n'), "{text:?}: {err:?}");
    }
    let truncated = &MINI[..MINI.len() / 2];
    let err = mini_trajectory(truncated).err().unwrap_or_default();
    assert!(
        err.starts_with("the mini-swe-agent trajectory is not JSON"),
        "{err}"
    );
    assert!(mini_trajectory("{\"messages\": []}").is_ok());
}

#[test]
fn codex_shell_wrappers_are_taken_off_and_other_lines_kept() {
    let line = |command: &str| {
        let text = format!(
            "{}\n",
            json!({"type": "item.completed", "item": {"id": "i", "type": "command_execution",
                   "command": command, "aggregated_output": "", "exit_code": 0,
                   "status": "completed"}})
        );
        codex_events(&text).commands
    };
    assert_eq!(
        line(r#"/bin/bash -lc "printf 'Hello, world"'!'"\\n' > /app/hello.txt""#),
        [r"printf 'Hello, world!\n' > /app/hello.txt"]
    );
    assert_eq!(line("bash -c 'ls -la'"), ["ls -la"]);
    assert_eq!(line("/usr/bin/python3 -c 'x'"), ["/usr/bin/python3 -c 'x'"]);
    assert_eq!(line("echo 'unclosed"), ["echo 'unclosed"]);
}
