//! The model gateway end to end: the `qa` benchmark answered by the `openai_chat` harness
//! (both real plugins) against scripted OpenAI- and Anthropic-compatible servers on loopback.
//! Retries, bounded failures, malformed answers, tool calls, usage accounting, and the key
//! never reaching a results file, the run log or the console.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{published_results, run_dir, Outcome, QaSetup, THREE_QUESTIONS};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-gateway-SECRET-4242";

/// The three questions (`add`, `mul`, `cap`) in a workspace with the qa packs.
fn setup() -> QaSetup {
    QaSetup::new(THREE_QUESTIONS)
}

/// `run qa openai_chat scripted-model` against `server` with the gateway test's key, then
/// `extra`.
fn run(setup: &QaSetup, server: &ScriptedServer, extra: &[&str]) -> Outcome {
    setup.run(&server.base_url(), KEY, extra)
}

/// The last attempt's `result.json` of every published task, by task id.
fn results(run: &Path) -> HashMap<String, Value> {
    published_results(run)
        .into_iter()
        .map(|(id, (_, result))| (id, result))
        .collect()
}

fn usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached})
}

#[test]
fn openai_chat_answers_retries_a_429_records_tool_calls_and_sums_usage() {
    let setup = setup();
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "2+2"},
             "responses": [{"status": 429}, {"text": "4", "usage": usage(20, 1, 8)}]},
            {"match": {"last_user_contains": "6*7"},
             "responses": [{"text": "42", "usage": usage(30, 2, 0)}]},
            {"match": {"last_user_contains": "France"},
             "responses": [{"tool_calls": [{"name": "lookup", "arguments": {"q": "capital of France"}}],
                            "text": "Paris", "usage": usage(10, 5, 0)}]}
        ]}),
        None,
    )
    .unwrap();
    let out = run(
        &setup,
        &server,
        &[
            "--model-params",
            r#"{"retry_backoff_seconds": 0, "temperature": 0}"#,
        ],
    )
    .expect_code(0);
    let run = run_dir(&out);
    let results = results(&run);
    assert_eq!(results.len(), 3);
    for (id, answer) in [("add", "4"), ("mul", "42"), ("cap", "Paris")] {
        assert_eq!(results[id]["final_answer"], answer, "{id}: {}", results[id]);
        assert_eq!(results[id]["metrics"]["correct"], true, "{id}");
    }
    // The 429 was retried inside the gateway: two requests for `add`, one attempt.
    let requests = server.requests();
    let add_requests = requests
        .iter()
        .filter(|r| r["body"].to_string().contains("2+2"))
        .count();
    assert_eq!(add_requests, 2, "{requests:?}");
    assert!(requests.iter().all(|r| r["authorized"] == true));
    assert!(requests.iter().all(|r| r["body"]["temperature"] == 0));
    // Usage per attempt in telemetry, summed per run in metrics.
    assert_eq!(
        results["add"]["meta"]["harness"]["telemetry"]["model_usage"]["prompt_tokens"],
        20
    );
    assert_eq!(
        results["add"]["meta"]["harness"]["telemetry"]["model_usage"]["cached_tokens"],
        8
    );
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    let total = &metrics["extra"]["model_usage"];
    assert_eq!(total["prompt_tokens"], 60, "{metrics}");
    assert_eq!(total["completion_tokens"], 8);
    assert_eq!(total["requests"], 3);
    let summary = fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("Model usage: 3 calls"), "{summary}");
    // `summary` recomputes the same totals from the details.
    fs::remove_file(run.join("metrics.json")).unwrap();
    setup.ws.run_ok(&["summary", run.to_str().unwrap()], &[]);
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(
        metrics["extra"]["model_usage"]["prompt_tokens"], 60,
        "{metrics}"
    );
    // The tool call is in the trajectory.
    let trajectory = results["cap"]["trajectory"].to_string();
    assert!(
        trajectory.contains("lookup") && trajectory.contains("capital of France"),
        "{trajectory}"
    );
    setup.assert_secret_nowhere(&out, KEY);
}

#[test]
fn anthropic_and_responses_protocols_answer_with_their_own_shapes() {
    for protocol in ["anthropic", "openai-responses"] {
        let setup = setup();
        let server = ScriptedServer::start(
            &json!({"require_key": KEY, "rules": [
                {"match": {"last_user_contains": "2+2"}, "responses": [{"text": "4", "usage": usage(9, 1, 3)}]},
                {"match": {"last_user_contains": "6*7"}, "responses": [{"text": "41", "usage": usage(9, 1, 0)}]},
                {"match": {"last_user_contains": "France"}, "responses": [{"text": "Paris", "usage": usage(9, 1, 0)}]}
            ]}),
            None,
        )
        .unwrap();
        let out = run(&setup, &server, &["--model-api-protocol", protocol]);
        assert_eq!(out.code, 0, "{protocol}: {out:?}");
        let results = results(&run_dir(&out));
        assert_eq!(results["add"]["metrics"]["correct"], true, "{protocol}");
        assert_eq!(results["mul"]["metrics"]["correct"], false, "{protocol}");
        assert_eq!(
            results["add"]["meta"]["harness"]["telemetry"]["model_usage"]["prompt_tokens"], 9,
            "{protocol}: prompt tokens include cached ones"
        );
        let path = if protocol == "anthropic" {
            "/v1/messages"
        } else {
            "/v1/responses"
        };
        assert!(server.requests().iter().all(|r| r["path"] == path));
        setup.assert_secret_nowhere(&out, KEY);
    }
}

#[test]
fn a_persistent_500_is_a_bounded_task_error_naming_the_endpoint_but_not_the_key() {
    let setup = setup();
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "2+2"}, "responses": [{"status": 500, "body": "upstream down"}]},
            {"match": {"last_user_contains": "6*7"}, "responses": [{"raw": "{\"choices\": [oops"}]},
            {"responses": [{"text": "Paris"}]}
        ]}),
        None,
    )
    .unwrap();
    let out = run(
        &setup,
        &server,
        &[
            "--model-params",
            r#"{"max_retries": 2, "retry_backoff_seconds": 0}"#,
            "--max-retries",
            "0",
        ],
    );
    let run = run_dir(&out);
    let results = results(&run);
    assert_eq!(results["cap"]["metrics"]["correct"], true);
    let issues = |id: &str| results[id]["issues"].to_string();
    let failed = issues("add");
    assert!(
        failed.contains(&format!("{}/chat/completions", server.base_url())),
        "{failed}"
    );
    assert!(
        failed.contains("500") && failed.contains("3 attempts"),
        "{failed}"
    );
    let add_requests = server
        .requests()
        .iter()
        .filter(|r| r["body"].to_string().contains("2+2"))
        .count();
    assert_eq!(add_requests, 3, "first try + max_retries 2");
    let malformed = issues("mul");
    assert!(
        malformed.contains("malformed openai-chat response"),
        "{malformed}"
    );
    let mul_requests = server
        .requests()
        .iter()
        .filter(|r| r["body"].to_string().contains("6*7"))
        .count();
    assert_eq!(mul_requests, 1, "a malformed answer is not retried");
    let log = fs::read_to_string(run.join("run.log")).unwrap();
    assert!(log.contains("retry 1 of 2"), "{log}");
    setup.assert_secret_nowhere(&out, KEY);
}
