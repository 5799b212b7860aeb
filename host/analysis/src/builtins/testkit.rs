//! Test helpers: attempt results with trajectories, and odd JSON every analyzer must survive.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use serde_json::{json, Value};

/// An attempt result holding these steps.
pub(crate) fn result(steps: Vec<Value>) -> Value {
    json!({
        "status": "completed",
        "final_answer": "done",
        "issues": [],
        "metrics": {},
        "trajectory": {"schema_version": "ACTF_v1.0", "steps": steps},
    })
}

/// A model step with this content and these (name, arguments) tool calls.
pub(crate) fn step(id: u64, content: &str, calls: &[(&str, Value)]) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("c{id}-{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    json!({
        "step_id": id,
        "assistant_content": {
            "content": content,
            "reasoning_content": null,
            "tool_calls": if tool_calls.is_empty() { Value::Null } else { json!(tool_calls) },
        },
        "observation": [],
        "metric": {"stop_reason": if calls.is_empty() { "stop" } else { "tool_calls" }},
    })
}

/// A model step calling `bash` with one command.
pub(crate) fn bash(id: u64, command: &str) -> Value {
    step(id, "", &[("bash", json!({"command": command}))])
}

/// Runs `analyzer` on `result` with its default options overridden by `options`.
pub(crate) fn run_with(
    analyzer: &dyn Analyzer,
    info: &ComponentInfo,
    result: Value,
    options: Value,
) -> AnalysisOutcome {
    let mut merged = info.analyzer.clone().unwrap_or_default().defaults;
    if let Value::Object(options) = options {
        merged.extend(options);
    }
    let input = AnalysisInput {
        benchmark: "demo".into(),
        task_id: "t1".into(),
        attempt: 1,
        result,
        options: merged,
        ..AnalysisInput::default()
    };
    analyzer.analyze(&input).expect("analyzer failed")
}

/// Runs `analyzer` on `result` with its default options.
pub(crate) fn run(analyzer: &dyn Analyzer, info: &ComponentInfo, result: Value) -> AnalysisOutcome {
    run_with(analyzer, info, result, json!({}))
}

/// Attempt results of every odd shape: no trajectory, wrong types, nulls, junk steps.
pub(crate) fn odd_results() -> Vec<Value> {
    vec![
        json!(null),
        json!(7),
        json!("x"),
        json!([]),
        json!({}),
        json!({"trajectory": null, "issues": null, "artifacts": null, "metrics": null}),
        json!({"trajectory": "x", "issues": "x", "artifacts": 3, "status": 5}),
        json!({"trajectory": {"steps": null, "started_at": 5, "finished_at": null}}),
        json!({"trajectory": {"steps": {"a": 1}}}),
        json!({"trajectory": {"steps": []}}),
        json!({"issues": [null, 1, "x", {"severity": 3, "message": null}, {"severity": "error"}]}),
        json!({"trajectory": {"started_at": "garbage", "finished_at": "2026-01-01T00:00:00Z",
               "steps": [null, 1, "s", [], {},
            {"step_id": null, "assistant_content": null, "metric": null, "observation": null},
            {"step_id": "x", "assistant_content": "text", "metric": [], "observation": "o"},
            {"assistant_content": {"content": 5, "reasoning_content": [1], "tool_calls": "ls"},
             "metric": {"stop_reason": 5, "llm_infer_ms": "12", "env_action_ms": null,
                        "completion_tokens_len": -3}},
            {"assistant_content": {"content": null, "tool_calls": [null, 1, "x", {}, {"function": 3},
                {"function": {"name": 7}}, {"function": {"name": "bash", "arguments": 5}},
                {"function": {"name": "bash", "arguments": {"command": ["rm", 3, null]}}},
                {"function": {"name": "bash", "arguments": "{\"command\": null}"}},
                {"name": "Write", "arguments": {"file_path": 3, "content": null}},
                {"function": {"name": "bash", "arguments": "{\"command\": \"echo 'unterminated > /tests/x\"}"}},
                {"function": {"name": "bash", "arguments": "{\"command\": \"cat <<EOF > /logs/verifier/reward.txt\"}"}}]},
             "observation": [null, 1, "exit_code: x", {"exit_code": "1"}, {"exit_code": 1.5},
                             {"timed_out": "yes"}, {"error": 3}, {"tool_call_id": 5, "exit_code": 2}],
             "metric": {"llm_infer_ms": 1e308, "env_action_ms": -5}},
        ]}}),
    ]
}

/// Runs `analyzer` over every odd result: none may fail or panic.
pub(crate) fn survives_odd_json(analyzer: &dyn Analyzer, info: &ComponentInfo) {
    for result in odd_results() {
        let outcome = run(analyzer, info, result.clone());
        assert!(
            outcome.is_badcase.is_none() || outcome.details.is_object(),
            "{}: {result}",
            info.id
        );
    }
}
