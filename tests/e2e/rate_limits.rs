//! Rate limits end to end: the `qa` benchmark answered by `openai_chat` against a scripted
//! endpoint that serves a few calls at once and rate-limits the rest (429 with `Retry-After`,
//! or Anthropic's 529), through the real binary. No task is lost to the endpoint's limit; a
//! call rate-limited past `max_rate_limit_wait_seconds` is `model_rate_limited`; the limit is
//! traced in `progress.jsonl`, shown in `progress.json` and reported in the summary.

use std::fs;
use std::path::Path;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{ok_questions, published_results, run_dir, QaSetup};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-rate-limits-7311";

/// The `model_limit` events of a run's `progress.jsonl`.
fn limit_trace(run: &Path) -> Vec<Value> {
    fs::read_to_string(run.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "model_limit")
        .map(|e| e["payload"].clone())
        .collect()
}

#[test]
fn two_hundred_tasks_at_32_against_a_4_at_once_endpoint_lose_none() {
    let setup = QaSetup::new(&ok_questions(200));
    let server = ScriptedServer::start(
        &json!({
            "require_key": KEY,
            "concurrency": {"limit": 4, "retry_after": 1},
            "rules": [{"responses": [{"text": "ok", "delay_ms": 20}]}],
        }),
        None,
    )
    .unwrap();
    let out = setup
        .run(
            &server.base_url(),
            KEY,
            &[
                "--task-concurrency",
                "32",
                "--model-params",
                r#"{"max_retries": 0}"#,
            ],
        )
        .expect_code(0);
    let run = run_dir(&out);
    let results = published_results(&run);
    assert_eq!(results.len(), 200);
    for (id, (_, result)) in &results {
        assert_eq!(result["final_answer"], "ok", "{id}: {result}");
        assert_eq!(result["metrics"]["correct"], true, "{id}");
    }
    let requests = server.requests();
    let refused = requests.iter().filter(|r| r["limited"] == true).count();
    let answered = requests.iter().filter(|r| r["status"] == 200).count();
    let peak = requests
        .iter()
        .filter_map(|r| r["in_flight"].as_u64())
        .max()
        .unwrap();
    let trace = limit_trace(&run);
    let limits: Vec<u64> = trace.iter().map(|l| l["limit"].as_u64().unwrap()).collect();
    eprintln!(
        "200 tasks at 32: {answered} answered, {refused} answers 429, peak {peak} at the server; limit trace {limits:?}"
    );
    assert_eq!(answered, 200);
    assert!(refused <= 100, "{refused} rate-limit answers");
    assert!(peak <= 4);
    // The trace starts at the run's concurrency, halved; the last event counts every 429.
    assert!(limits[0] < 32 && trace[0]["max"] == 32, "{trace:?}");
    assert_eq!(trace.last().unwrap()["rate_limited"], refused as u64);
    assert!(trace.iter().all(|l| l["endpoint"]
        .as_str()
        .unwrap()
        .ends_with("/v1/chat/completions")));
    // The summary and metrics report the waits; progress.json the limit.
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    let limits = &metrics["extra"]["rate_limits"];
    assert_eq!(limits["answers"], refused as u64, "{metrics}");
    assert!(limits["waited_seconds"].as_f64().unwrap() > 0.0);
    let summary = fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!("Rate limits: {refused} answers")),
        "{summary}"
    );
    assert!(out.stderr.contains("Rate limits: "), "{}", out.stderr);
    let progress: Value =
        serde_json::from_str(&fs::read_to_string(run.join("progress.json")).unwrap()).unwrap();
    let endpoints = progress["model_endpoints"].as_object().unwrap();
    assert_eq!(endpoints.len(), 1, "{progress}");
    assert!(
        progress.get("control").is_none(),
        "a finished run has no control"
    );
    setup.assert_secret_nowhere(&out, KEY);
}

#[test]
fn a_call_rate_limited_past_the_wait_is_model_rate_limited_and_rerun_model_runs_it_again() {
    let setup = QaSetup::new(&ok_questions(2));
    // Anthropic style: 529 `overloaded_error` for `q1` always.
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "Question 1?"}, "responses": [{"status": 529}]},
            {"responses": [{"text": "ok"}]},
        ]}),
        None,
    )
    .unwrap();
    let params = r#"{"max_rate_limit_wait_seconds": 0.3, "retry_backoff_seconds": 0.05}"#;
    let out = setup.run(&server.base_url(), KEY, &["--model-params", params]);
    let run = run_dir(&out);
    let results = published_results(&run);
    let issues = results["q1"].1["issues"].as_array().unwrap().clone();
    assert_eq!(issues[0]["code"], "model_rate_limited", "{issues:?}");
    assert!(
        issues[0]["message"]
            .as_str()
            .unwrap()
            .contains("still rate-limited after"),
        "{issues:?}"
    );
    let calls = server
        .requests()
        .iter()
        .filter(|r| r["status"] == 529)
        .count();
    assert!(calls >= 2, "waited and sent again: {calls}");
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(
        metrics["extra"]["not_scored"]["classes"]["model"]["reasons"]["rate limited"], 1,
        "{metrics}"
    );
    assert!(out.stderr.contains("--rerun model"), "{}", out.stderr);
    // Once the endpoint answers, `--rerun model` runs only that task again.
    let healed = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [{"responses": [{"text": "ok"}]}]}),
        None,
    )
    .unwrap();
    let run_id = run.file_name().unwrap().to_str().unwrap().to_string();
    let again = setup
        .run(
            &healed.base_url(),
            KEY,
            &["--reuse", &run_id, "--rerun", "model"],
        )
        .expect_code(0);
    let rerun = published_results(&run_dir(&again));
    assert_eq!(rerun["q1"].1["metrics"]["correct"], true);
    assert_eq!(healed.requests().len(), 1, "only q1 ran again");
}

#[test]
fn two_requests_of_a_launch_on_one_endpoint_share_one_limit() {
    let setup = QaSetup::new(&ok_questions(60));
    let server = ScriptedServer::start(
        &json!({
            "require_key": KEY,
            "concurrency": {"limit": 3, "status": 529, "retry_after": "0.2"},
            "rules": [{"responses": [{"text": "ok", "delay_ms": 20}]}],
        }),
        None,
    )
    .unwrap();
    let plan = setup.ws.write(
        "plan.toml",
        &format!(
            r#"
name = "shared-endpoint"
task_concurrency = 16
[defaults]
harness = {{ id = "openai_chat" }}
benchmark = {{ id = "qa", path = "{dataset}" }}
model = {{ id = "scripted-model", base_url = "{base}", api_key = "${{E2E_MODEL_KEY}}" }}
[[requests]]
name = "first"
[[requests]]
name = "second"
model = {{ id = "scripted-model", params = {{ temperature = 0 }} }}
"#,
            dataset = setup.dataset.display(),
            base = server.base_url(),
        ),
    );
    let out = setup
        .ws
        .run(
            &[
                "--plugin-dir",
                setup.plugins.to_str().unwrap(),
                "launch",
                plan.to_str().unwrap(),
                "--progress",
                "none",
            ],
            &[("E2E_MODEL_KEY", KEY)],
        )
        .expect_code(0);
    let dirs: Vec<std::path::PathBuf> = out.stdout.lines().map(Into::into).collect();
    assert_eq!(dirs.len(), 2, "{out:?}");
    let requests = server.requests();
    let refused = requests.iter().filter(|r| r["limited"] == true).count() as u64;
    let peak = requests
        .iter()
        .filter_map(|r| r["in_flight"].as_u64())
        .max()
        .unwrap();
    let mut answers = Vec::new();
    for dir in &dirs {
        assert_eq!(published_results(dir).len(), 60, "{}", dir.display());
        let metrics: Value =
            serde_json::from_str(&fs::read_to_string(dir.join("metrics.json")).unwrap()).unwrap();
        answers.push(metrics["extra"]["rate_limits"]["answers"].as_u64().unwrap());
    }
    eprintln!(
        "launch, 2 x 60 tasks at 16: {refused} answers 529, peak {peak}; rate_limits {answers:?}"
    );
    assert!(peak <= 3);
    assert!(refused > 0, "the endpoint was over its limit");
    // One limit: the request that finished last counted every 529 of both requests.
    assert_eq!(answers.iter().max().copied(), Some(refused), "{answers:?}");
}

#[test]
fn no_adaptive_concurrency_fixes_the_limit_over_the_configured_params() {
    let setup = QaSetup::new(&ok_questions(1));
    let params = setup.params();
    let mut args = setup.args(&params);
    args.extend([
        "--model-base-url",
        "http://127.0.0.1:9/v1",
        "--no-endpoint-check",
        "--dry-run",
        "--model-params",
        r#"{"adaptive_concurrency": true, "max_connections": 8}"#,
        "--no-adaptive-concurrency",
    ]);
    let plan = setup.ws.run_json(&args, &[]);
    assert_eq!(
        plan["request"]["model"]["params"],
        json!({"adaptive_concurrency": false, "max_connections": 8}),
        "{plan}"
    );
}
