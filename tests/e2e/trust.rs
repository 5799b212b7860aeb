//! Runs people can trust: budgets that stop a run where they are reached and let `--reuse`
//! continue exactly there, failure classes that keep the model's and the infrastructure's
//! failures out of the score, `--fail-on-error`, targeted reruns (`--rerun`) and the
//! provenance in `run_info.json` — the `qa` benchmark answered by `openai_chat` (real plugins)
//! against a scripted model on loopback that prices every call.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    copy_tree, files_containing, json_files_parse, published_results, read_json, run_dir,
    terminus_args, Outcome, Packs, QaSetup, Workspace,
};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-trust-SECRET-7781";

/// $10 per million input tokens: a call of 1,000 prompt tokens costs $0.01.
const PRICING: &str = r#"{"pricing": {"input": 10.0, "output": 10.0}, "retry_backoff_seconds": 0, "max_retries": 1, "max_rate_limit_wait_seconds": 0.3}"#;

/// `n` questions `q-0` … whose answer is their number.
fn setup(n: usize) -> QaSetup {
    let lines: String = (0..n)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("q-{i}"), "question": format!("Say the number {i} (task q-{i}).") , "answer": i.to_string()})
            )
        })
        .collect();
    QaSetup::new(&lines)
}

/// Answers every question with its number at 1,000 prompt tokens; the tasks whose number is
/// a multiple of 5 get a 429 every time when `rate_limit_fifths` (beyond the retries).
fn server(setup: &QaSetup, rate_limit_fifths: bool, log: &str) -> ScriptedServer {
    let mut rules = Vec::new();
    if rate_limit_fifths {
        for i in (0..1000).step_by(5) {
            rules.push(
                json!({"match": {"last_user_contains": format!("(task q-{i})")},
                              "responses": [{"status": 429}]}),
            );
        }
    }
    for i in 0..1000 {
        rules.push(json!({"match": {"last_user_contains": format!("(task q-{i})")},
                          "responses": [{"text": i.to_string(), "usage": {"prompt_tokens": 1000, "completion_tokens": 0}}]}));
    }
    ScriptedServer::start(
        &json!({"require_key": KEY, "rules": rules}),
        Some(setup.ws.cwd.join(log)),
    )
    .unwrap()
}

/// `run qa openai_chat scripted-model` at the scripted model's prices, then `extra`.
fn run(setup: &QaSetup, server: &ScriptedServer, extra: &[&str]) -> Outcome {
    let priced = [&["--model-params", PRICING][..], extra].concat();
    setup.run(&server.base_url(), KEY, &priced)
}

/// The task ids (`PREFIX-N`) named `(task PREFIX-N)` in the requests the scripted model
/// received, in the order asked.
fn named_tasks(server: &ScriptedServer, prefix: &str) -> Vec<String> {
    let marker = format!("(task {prefix}-");
    server
        .requests()
        .iter()
        .filter_map(|r| {
            let body = r["body"].to_string();
            let at = body.find(&marker)?;
            let rest = &body[at + 6..];
            Some(rest[..rest.find(')')?].to_string())
        })
        .collect()
}

/// The QA task ids the scripted model was asked about, in the order asked.
fn asked(server: &ScriptedServer) -> Vec<String> {
    named_tasks(server, "q")
}

/// The task ids a run's `task_skipped` events name, with their reasons.
fn skipped(run: &Path) -> Vec<(String, String)> {
    fs::read_to_string(run.join("progress.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "task_skipped")
        .map(|event| {
            (
                event["task_id"].as_str().unwrap().to_string(),
                event["payload"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn spent_usd(run: &Path) -> f64 {
    read_json(&run.join("metrics.json"))["extra"]["model_usage"]["cost_usd"]
        .as_f64()
        .unwrap_or(0.0)
}

#[test]
fn a_budget_stops_starting_tasks_and_reuse_with_a_larger_one_runs_exactly_the_rest() {
    let setup = setup(200);
    let server = server(&setup, false, "model.jsonl");
    let budget = setup.ws.write(
        "budget.toml",
        "[execution]\ntask_concurrency = 4\n[execution.budget]\nmax_cost_usd = 0.5\n",
    );
    let out = run(&setup, &server, &["--config", budget.to_str().unwrap()]).expect_code(1);
    let run1 = run_dir(&out);
    let info = read_json(&run1.join("run_info.json"));
    assert_eq!(info["status"], "stopped_by_budget", "{info}");
    assert_eq!(info["stopped"]["reason"], "budget_exhausted");
    let published = published_results(&run1).len();
    let spent = spent_usd(&run1);
    // At $0.01 a task the budget covers 50; the 4 attempts in flight when it was reached finish.
    println!(
        "budget $0.50: {published} tasks published, ${spent:.4} spent, {} skipped",
        200 - published
    );
    assert!((50..=54).contains(&published), "{published}");
    assert!((0.5..=0.5 + 4.0 * 0.01 + 1e-9).contains(&spent), "{spent}");
    let skipped1 = skipped(&run1);
    assert_eq!(skipped1.len(), 200 - published);
    assert!(skipped1
        .iter()
        .all(|(_, reason)| reason == "budget_exhausted"));
    // Skipped tasks are excluded from the score, never counted as wrong.
    let metrics = read_json(&run1.join("metrics.json"));
    let headline = &metrics["series"][0];
    assert_eq!(headline["value"], 1.0, "{metrics}");
    assert_eq!(headline["counts"]["total"], published as u64);
    assert_eq!(
        metrics["extra"]["skipped"],
        json!({"tasks": 200 - published, "reasons": {"budget_exhausted": 200 - published}})
    );
    let summary = fs::read_to_string(run1.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!(
            "{} tasks skipped (not run, not scored): {} budget_exhausted",
            200 - published,
            200 - published
        )),
        "{summary}"
    );
    let line = out.stderr_lines("stopped by budget");
    assert_eq!(line.len(), 1, "{}", out.stderr);
    assert!(
        line[0].contains("execution.budget spent $0.5") && line[0].contains("of $0.5"),
        "{}",
        line[0]
    );
    // `summary` recomputes the same report, the skipped tasks included.
    let written = read_json(&run1.join("metrics.json"));
    fs::remove_file(run1.join("metrics.json")).unwrap();
    setup.ws.run_ok(&["summary", run1.to_str().unwrap()], &[]);
    assert_eq!(read_json(&run1.join("metrics.json")), written);
    let progress = read_json(&run1.join("progress.json"));
    assert_eq!(
        progress["skipped_tasks"],
        200 - published as u64,
        "{progress}"
    );
    assert_eq!(asked(&server).len(), published);

    // `--reuse` with a larger budget runs exactly the tasks the first run skipped.
    let bigger = setup.ws.write(
        "bigger.toml",
        "[execution]\ntask_concurrency = 4\n[execution.budget]\nmax_cost_usd = 5.0\n",
    );
    let before = asked(&server).len();
    let again = run(
        &setup,
        &server,
        &["--config", bigger.to_str().unwrap(), "--reuse"],
    )
    .expect_code(0);
    let run2 = run_dir(&again);
    assert_eq!(
        read_json(&run2.join("run_info.json"))["status"],
        "completed"
    );
    assert_eq!(published_results(&run2).len(), 200);
    let rerun: BTreeSet<String> = asked(&server)[before..].iter().cloned().collect();
    let expected: BTreeSet<String> = skipped1.into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        rerun.len(),
        asked(&server).len() - before,
        "each asked once"
    );
    assert_eq!(rerun, expected);
    let metrics = read_json(&run2.join("metrics.json"));
    assert_eq!(metrics["series"][0]["counts"]["total"], 200);
    assert!((spent_usd(&run2) - 2.0).abs() < 1e-9, "{metrics}");
    assert!(json_files_parse(&setup.ws.cwd.join("results")) > 400);
    setup.assert_secret_nowhere(&again, KEY);
}

#[test]
fn an_orchestration_budget_is_shared_by_its_requests() {
    let setup = setup(60);
    let server = server(&setup, false, "model.jsonl");
    let file = setup.ws.write(
        "orch.yaml",
        &format!(
            r#"
version: 1
task_concurrency: 2
runtime:
  budget: {{max_cost_usd: 0.3}}
  progress: none
defaults:
  model:
    id: scripted-model
    base_url: "{}"
    api_key: "${{E2E_MODEL_KEY}}"
    params: {PRICING}
  benchmark: {{id: qa, path: "{}"}}
  harness: {{id: openai_chat}}
requests:
  - name: first
  - name: second
"#,
            server.base_url(),
            setup.dataset.display()
        ),
    );
    let out = setup.ws.run_expect(
        1,
        &[
            "--plugin-dir",
            setup.plugins.to_str().unwrap(),
            "launch",
            file.to_str().unwrap(),
        ],
        &[("E2E_MODEL_KEY", KEY)],
    );
    let dirs: Vec<PathBuf> = out.stdout.lines().map(PathBuf::from).collect();
    assert_eq!(dirs.len(), 2, "{out:?}");
    let mut published = 0;
    let mut spent = 0.0;
    for dir in &dirs {
        let info = read_json(&dir.join("run_info.json"));
        assert_eq!(info["status"], "stopped_by_budget", "{info}");
        assert!(info["stopped"]["message"]
            .as_str()
            .unwrap()
            .contains("runtime.budget spent"));
        published += published_results(dir).len();
        spent += spent_usd(dir);
    }
    println!("orchestration budget $0.30 over two requests: {published} tasks, ${spent:.4}");
    // `launch --reuse --rerun` sets every request's reruns.
    let dry = setup.ws.run_ok(
        &[
            "--plugin-dir",
            setup.plugins.to_str().unwrap(),
            "launch",
            file.to_str().unwrap(),
            "--reuse",
            "--rerun",
            "model,environment",
            "--rerun-invalid",
            "--dry-run",
        ],
        &[("E2E_MODEL_KEY", KEY)],
    );
    let resolved: Value = serde_json::from_str(&dry.stdout).unwrap();
    for request in resolved["requests"].as_array().unwrap() {
        assert_eq!(
            request["runtime"],
            json!({"reuse": true, "reuse_run_id": "", "checkpoint_resume": null, "rerun": ["model", "environment"], "rerun_invalid": true}),
            "{request}"
        );
    }
    // 30 tasks' worth, plus at most the 2 attempts in flight.
    assert!((30..=32).contains(&published), "{published}");
    assert!(spent <= 0.3 + 2.0 * 0.01 + 1e-9, "{spent}");
    assert_eq!(asked(&server).len(), published);
}

#[test]
fn a_cost_budget_without_prices_is_refused_before_anything_is_written() {
    let setup = setup(3);
    let server = server(&setup, false, "model.jsonl");
    let budget = setup
        .ws
        .write("budget.toml", "[execution.budget]\nmax_cost_usd = 1\n");
    let params = setup.params();
    let base_url = server.base_url();
    let mut args = setup.args(&params);
    args.extend([
        "--config",
        budget.to_str().unwrap(),
        "--model-base-url",
        &base_url,
    ]);
    let out = setup.ws.run_expect(2, &args, &[]);
    // Where prices come from: the pinned table (it has no such model), or the flag.
    let refusal = out.stderr.trim();
    assert!(
        refusal.starts_with("error: execution.budget.max_cost_usd: a cost limit needs the prices of model `scripted-model`, found none: it is not in LiteLLM ")
            && refusal.ends_with("'s price table (host/gateway/prices/litellm.json) and model.params.pricing is not set (US dollars per million tokens: {\"input\": 3.0, \"output\": 15.0})"),
        "{refusal}"
    );
    assert!(!setup.ws.cwd.join("results").exists());
}

#[test]
fn model_failures_are_not_scored_stop_a_run_on_errors_and_rerun_alone() {
    let setup = setup(40);
    let server = server(&setup, true, "model.jsonl");
    // Every 5th task is rate-limited beyond the gateway's retries.
    let out = run(&setup, &server, &[]).expect_code(1);
    let run1 = run_dir(&out);
    let metrics = read_json(&run1.join("metrics.json"));
    let headline = &metrics["series"][0];
    // 32 answered right; the 8 rate-limited tasks are not scored (not counted as wrong).
    assert_eq!(headline["counts"]["total"], 40, "{metrics}");
    assert_eq!(headline["counts"]["evaluated"], 32);
    assert_eq!(headline["reference_value"], 1.0);
    assert_eq!(
        metrics["extra"]["not_scored"],
        json!({"tasks": 8, "classes": {"model": {"tasks": 8, "reasons": {"rate limited": 8}}}})
    );
    let line = out.stderr_lines("8 tasks not scored");
    assert_eq!(
        line,
        ["8 tasks not scored: 8 model (rate limited)"],
        "{}",
        out.stderr
    );
    let summary = fs::read_to_string(run1.join("summary.md")).unwrap();
    assert!(
        summary.contains("8 tasks not scored: 8 model (rate limited)"),
        "{summary}"
    );

    // `--fail-on-error 0.1` stops starting tasks once more than 10 % failed outside the agent.
    let stopped = run(
        &setup,
        &server,
        &["--fail-on-error", "0.1", "--task-concurrency", "1"],
    )
    .expect_code(1);
    let run2 = run_dir(&stopped);
    let info = read_json(&run2.join("run_info.json"));
    assert_eq!(info["status"], "stopped_on_errors", "{info}");
    let ran = published_results(&run2).len();
    println!("--fail-on-error 0.1: stopped after {ran} of 40 tasks");
    assert!(ran < 40, "{ran}");
    assert!(skipped(&run2)
        .iter()
        .all(|(_, reason)| reason == "error_rate_exceeded"));

    // `--rerun model` reruns only the rate-limited tasks of the first run.
    let fixed = server_without_429(&setup);
    let rerun = run(
        &setup,
        &fixed,
        &[
            "--reuse",
            run1.file_name().unwrap().to_str().unwrap(),
            "--rerun",
            "model",
        ],
    )
    .expect_code(0);
    let asked: BTreeSet<String> = asked(&fixed).into_iter().collect();
    let expected: BTreeSet<String> = (0..40).step_by(5).map(|i| format!("q-{i}")).collect();
    assert_eq!(asked, expected);
    assert_eq!(asked.len(), fixed.requests().len(), "each asked once");
    let run3 = run_dir(&rerun);
    let metrics = read_json(&run3.join("metrics.json"));
    assert_eq!(metrics["series"][0]["value"], 1.0, "{metrics}");
    assert_eq!(metrics["series"][0]["counts"]["evaluated"], 40);
    setup.assert_secret_nowhere(&rerun, KEY);
}

fn server_without_429(setup: &QaSetup) -> ScriptedServer {
    server(setup, false, "fixed.jsonl")
}

#[test]
fn run_info_records_what_ran_and_no_secret() {
    let setup = setup(2);
    let server = server(&setup, false, "model.jsonl");
    let params = json!({"path": "${E2E_DATASET}"}).to_string();
    let base_url = server.base_url();
    let mut args = setup.args(&params);
    args.extend([
        "--model-params",
        r#"{"seed": 7}"#,
        "--model-base-url",
        &base_url,
        "--model-api-key",
        "${E2E_MODEL_KEY}",
        "--progress",
        "none",
    ]);
    let out = setup.ws.run_ok(
        &args,
        &[
            ("E2E_MODEL_KEY", KEY),
            ("E2E_DATASET", setup.dataset.to_str().unwrap()),
        ],
    );
    let run = run_dir(&out);
    let provenance = &read_json(&run.join("run_info.json"))["provenance"];
    let host = &provenance["host"];
    let version = setup.ws.run(&["--version"], &[]).stdout;
    assert_eq!(
        version.trim(),
        format!("agentcompass-host {}", host["version"].as_str().unwrap())
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert_eq!(host["commit"], head.as_str(), "{provenance}");
    let plugins = provenance["plugins"].as_array().unwrap();
    let qa = plugins.iter().find(|p| p["name"] == "qa-pack").unwrap();
    let so = fs::read_dir(&*setup.plugins)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "so")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("qa"))
        })
        .unwrap();
    assert_eq!(qa["sha256"], agentcompass_e2e::sha256_hex(&so));
    assert_eq!(provenance["components"]["benchmark"]["source"], "qa-pack");
    assert_eq!(provenance["components"]["harness"]["id"], "openai_chat");
    let port = server
        .base_url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        provenance["model"],
        json!({"id": "scripted-model", "protocol": "openai-chat", "endpoint_host": format!("127.0.0.1:{port}")})
    );
    assert_eq!(
        provenance["variables"],
        json!({"E2E_DATASET": setup.dataset.to_str().unwrap(), "E2E_MODEL_KEY": "********"})
    );
    assert_eq!(provenance["seeds"], json!({"model": 7}));
    let datasets = provenance["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 1);
    assert_eq!(
        datasets[0]["sha256"],
        agentcompass_e2e::sha256_hex(&setup.dataset)
    );
    assert_eq!(datasets[0]["path"], setup.dataset.to_str().unwrap());
    let machine = &provenance["machine"];
    assert!(machine["cpus"].as_u64().unwrap() >= 1);
    assert!(machine["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    setup.assert_secret_nowhere(&out, KEY);
}

/// `terminus` on the bundled `hello-file` Harbor task in `sandbox`, driven by the demo's
/// scripted model (four calls of 334, 433, 473 and 505 tokens), under `limits`.
fn terminus_with_limits(limits: &str, model_params: &str) -> (Value, Outcome) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let script: Value = serde_json::from_str(
        &fs::read_to_string(root.join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    terminus_with_script(limits, model_params, &script)
}

/// As [`terminus_with_limits`], answered by `script`.
fn terminus_with_script(limits: &str, model_params: &str, script: &Value) -> (Value, Outcome) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(script, None).unwrap();
    let config = ws.write("limits.toml", &format!("[execution.limits]\n{limits}\n"));
    let params =
        json!({"path": root.join("examples/harbor"), "sample_ids": ["hello-file"]}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_TERMINUS_KEY}");
    args.extend([
        "--config",
        config.to_str().unwrap(),
        "--model-params",
        model_params,
        "--progress",
        "none",
    ]);
    let out = ws.run_ok(&args, &[("E2E_TERMINUS_KEY", &key)]);
    let results = published_results(&run_dir(&out));
    assert_eq!(results.len(), 1, "{out:?}");
    let (_, result) = results.into_values().next().unwrap();
    assert_eq!(
        server.requests().len() as u64,
        result["meta"]["harness"]["telemetry"]["model_usage"]["requests"]
            .as_u64()
            .unwrap()
    );
    (result, out)
}

/// The attempt's one ERROR issue: `limit_exceeded`, with its message.
fn limit_issue(result: &Value) -> String {
    let issues: Vec<&Value> = result["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["severity"] != "warning")
        .collect();
    assert_eq!(issues.len(), 1, "{result}");
    assert_eq!(issues[0]["code"], "limit_exceeded", "{result}");
    issues[0]["message"].as_str().unwrap().to_string()
}

#[test]
fn terminus_stops_at_each_per_attempt_limit_with_the_usage_up_to_it() {
    // max_turns: the harness's loop ends after two turns.
    let (result, _) = terminus_with_limits("max_turns = 2", "{}");
    let message = limit_issue(&result);
    assert!(
        message.starts_with("execution.limits.max_turns (2) reached"),
        "{message}"
    );
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(
        (usage["requests"].as_u64(), usage["prompt_tokens"].as_u64()),
        (Some(2), Some(310 + 402))
    );
    println!("max_turns 2: {message}; usage {usage}");

    // max_tokens: the third call passes 1,000 tokens; the fourth is refused.
    let (result, _) = terminus_with_limits("max_tokens = 1000", "{}");
    let message = limit_issue(&result);
    assert_eq!(
        message,
        "execution.limits.max_tokens (1000) reached: 1240 tokens used; the agent was stopped"
    );
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(usage["requests"], 3, "{usage}");
    assert_eq!(usage["prompt_tokens"], 310 + 402 + 455);
    assert_eq!(
        result["meta"]["harness"]["telemetry"]["limit_exceeded"]["limit"],
        "max_tokens"
    );
    // The refused call is not reported as a model failure; the attempt is still evaluated.
    assert!(result["metrics"]["reward"].is_number(), "{result}");
    println!("max_tokens 1000: {message}");

    // max_cost_usd: at $10 per million tokens the second call passes $0.005.
    let (result, _) = terminus_with_limits(
        "max_cost_usd = 0.005",
        r#"{"pricing": {"input": 10.0, "output": 10.0}}"#,
    );
    let message = limit_issue(&result);
    assert_eq!(
        message,
        "execution.limits.max_cost_usd (0.005) reached: 767 tokens, $0.0077 used; the agent was stopped"
    );
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(usage["requests"], 2, "{usage}");
    assert!(
        (usage["cost_usd"].as_f64().unwrap() - 0.00767).abs() < 1e-9,
        "{usage}"
    );
    println!("max_cost_usd 0.005: {message}");

    // max_model_calls: the third call is never made.
    let (result, _) = terminus_with_limits("max_model_calls = 2", "{}");
    let message = limit_issue(&result);
    assert!(
        message.starts_with("execution.limits.max_model_calls (2) reached: 2 model calls made"),
        "{message}"
    );
    assert_eq!(
        result["meta"]["harness"]["telemetry"]["model_usage"]["requests"],
        2
    );

    // working_seconds: a command that sleeps is work, not a model wait; the agent is stopped.
    let sleeper = json!({"require_key": "k-work", "rules": [{"responses": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 5}}]}]});
    let started = std::time::Instant::now();
    let (result, _) = terminus_with_script("working_seconds = 2", "{}", &sleeper);
    let took = started.elapsed();
    let message = limit_issue(&result);
    assert!(
        message.starts_with("execution.limits.working_seconds (2) reached"),
        "{message}"
    );
    assert_eq!(
        result["meta"]["harness"]["telemetry"]["limit_exceeded"]["limit"],
        "working_seconds"
    );
    println!("working_seconds 2: {message} (run took {took:?})");
}

/// Harbor tasks `t-0` … `t-{n-1}` (the `hello-file` task, each naming itself in its
/// instruction), plus `crashing-verifier` and `bad-sandbox`, under `root/tasks`.
fn classed_tasks(ws: &Workspace, n: usize) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let hello = repo.join("examples/harbor/hello-file");
    let tasks = ws.cwd.join("tasks");
    for i in 0..n {
        let dir = tasks.join(format!("t-{i}"));
        copy_tree(&hello, &dir);
        fs::write(
            dir.join("instruction.md"),
            format!("Create the file `/app/hello.txt` containing exactly the line `Hello, world!` (task t-{i})."),
        )
        .unwrap();
    }
    copy_tree(&hello, &tasks.join("crashing-verifier"));
    fs::write(
        tasks.join("crashing-verifier/tests/test.sh"),
        "#!/bin/bash\necho verifier crashed >&2\nexit 3\n",
    )
    .unwrap();
    copy_tree(&hello, &tasks.join("bad-sandbox"));
    let toml = fs::read_to_string(hello.join("task.toml"))
        .unwrap()
        .replace("workdir = \"/app\"", "workdir = \"/proc/nope\"");
    fs::write(tasks.join("bad-sandbox/task.toml"), toml).unwrap();
    tasks
}

/// A terminus script: tasks `t-{5j}` are rate-limited beyond every retry when
/// `rate_limit_fifths`; every other task writes the file, then calls `done`.
fn terminus_script(n: usize, rate_limit_fifths: bool) -> Value {
    let mut rules = Vec::new();
    if rate_limit_fifths {
        for i in (0..n).step_by(5) {
            rules.push(
                json!({"match": {"any_user_contains": format!("(task t-{i})")},
                              "responses": [{"status": 429}]}),
            );
        }
    }
    rules.push(json!({"match": {"assistant_turns": 0},
        "responses": [{"tool_calls": [{"name": "bash", "arguments": {"command": "printf 'Hello, world!\\n' > /app/hello.txt"}}],
                       "usage": {"prompt_tokens": 300, "completion_tokens": 20}}]}));
    rules.push(
        json!({"responses": [{"tool_calls": [{"name": "done", "arguments": {"summary": "written"}}],
                       "usage": {"prompt_tokens": 350, "completion_tokens": 10}}]}),
    );
    json!({"require_key": KEY, "rules": rules})
}

/// The `t-N` tasks the scripted model was asked about (once per task: the first turn).
fn terminus_tasks_asked(server: &ScriptedServer) -> BTreeSet<String> {
    named_tasks(server, "t").into_iter().collect()
}

fn run_terminus(
    ws: &Workspace,
    plugins: &Path,
    tasks: &Path,
    server: &ScriptedServer,
    extra: &[&str],
) -> Outcome {
    let params = json!({"path": tasks}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(plugins, &params, &base_url, "${E2E_MODEL_KEY}");
    args.extend([
        "--model-params",
        r#"{"retry_backoff_seconds": 0, "max_retries": 1, "max_rate_limit_wait_seconds": 0.3}"#,
        "--progress",
        "none",
    ]);
    args.extend_from_slice(extra);
    ws.run(&args, &[("E2E_MODEL_KEY", KEY)])
}

#[test]
fn terminus_runs_score_only_agent_outcomes_stop_on_errors_and_rerun_the_models_failures() {
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let tasks = classed_tasks(&ws, 20);
    let server = ScriptedServer::start(&terminus_script(20, true), None).unwrap();
    let out = run_terminus(&ws, &plugins, &tasks, &server, &[]).expect_code(1);
    let run1 = run_dir(&out);
    let metrics = read_json(&run1.join("metrics.json"));
    assert_eq!(
        metrics["extra"]["not_scored"],
        json!({"tasks": 6, "classes": {
            "model": {"tasks": 4, "reasons": {"rate limited": 4}},
            "environment": {"tasks": 1, "reasons": {"unsupported": 1}},
            "evaluation": {"tasks": 1, "reasons": {"reward_file_missing": 1}}}}),
        "{metrics}"
    );
    // The 16 tasks the agent solved are the score; the 6 others are not counted as wrong.
    let headline = &metrics["series"][0];
    assert_eq!(headline["counts"]["total"], 22, "{metrics}");
    assert_eq!(headline["counts"]["evaluated"], 16, "{metrics}");
    assert_eq!(headline["reference_value"], 1.0, "{metrics}");
    let line = "6 tasks not scored: 4 model (rate limited), 1 environment (unsupported), 1 evaluation (reward_file_missing)";
    assert_eq!(
        out.stderr_lines("6 tasks not scored"),
        [line],
        "{}",
        out.stderr
    );
    assert!(fs::read_to_string(run1.join("summary.md"))
        .unwrap()
        .contains(line));

    // --fail-on-error 0.1 stops once more than 10 % of the finished tasks failed outside
    // the agent.
    let stopped = run_terminus(
        &ws,
        &plugins,
        &tasks,
        &server,
        &["--fail-on-error", "0.1", "--task-concurrency", "1"],
    )
    .expect_code(1);
    let run2 = run_dir(&stopped);
    assert_eq!(
        read_json(&run2.join("run_info.json"))["status"],
        "stopped_on_errors"
    );
    let ran = published_results(&run2).len();
    println!(
        "terminus --fail-on-error 0.1: {ran} of 22 tasks ran, {} skipped",
        skipped(&run2).len()
    );
    assert_eq!(ran + skipped(&run2).len(), 22);
    assert!(ran < 22);
    assert_eq!(
        stopped.stderr_lines("stopped on errors").len(),
        1,
        "{}",
        stopped.stderr
    );

    // --rerun model: only the rate-limited tasks run again (against a model that answers).
    let fixed = ScriptedServer::start(&terminus_script(20, false), None).unwrap();
    let rerun = run_terminus(
        &ws,
        &plugins,
        &tasks,
        &fixed,
        &[
            "--reuse",
            run1.file_name().unwrap().to_str().unwrap(),
            "--rerun",
            "model",
        ],
    );
    assert_eq!(rerun.code, 1, "the bad sandbox still fails: {rerun:?}");
    let expected: BTreeSet<String> = ["t-0", "t-5", "t-10", "t-15"].map(String::from).into();
    assert_eq!(terminus_tasks_asked(&fixed), expected);
    assert_eq!(
        fixed.requests().len(),
        2 * 4,
        "two turns each, nothing else"
    );
    let metrics = read_json(&run_dir(&rerun).join("metrics.json"));
    assert_eq!(metrics["series"][0]["counts"]["evaluated"], 20, "{metrics}");
    assert_eq!(
        metrics["extra"]["not_scored"]["classes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["environment", "evaluation"]
    );
    assert_eq!(
        files_containing(&ws.cwd.join("results"), KEY),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn bad_limits_budgets_and_reruns_are_one_line_and_write_nothing() {
    let setup = setup(3);
    let server = server(&setup, false, "model.jsonl");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "[execution.limits]\nmax_tokens = 0\n",
            &[],
            "execution.limits: limits.max_tokens: expected at least 1, found 0",
        ),
        (
            "[execution.limits]\nmax_tokenz = 10\n",
            &[],
            "execution.limits.max_tokenz: unknown key",
        ),
        (
            "[execution.budget]\non_exhausted = \"finish\"\n",
            &[],
            "budget.max_cost_usd: a budget needs max_cost_usd or max_tokens, found neither",
        ),
        (
            "[runtime.budget]\nmax_cost_usd = -1\n",
            &[],
            "runtime.budget.max_cost_usd: expected a positive number, found -1",
        ),
        (
            "",
            &["--fail-on-error", "0"],
            "--fail-on-error: runtime.fail_on_error: expected a share of failures in (0, 1) or a count of 1 or more, found 0",
        ),
        (
            "",
            &["--rerun", "model"],
            "rerun picks tasks of a reused run, but reuse is off (add --reuse)",
        ),
        (
            "",
            &["--reuse", "--rerun", "Model!"],
            "expected failure classes (agent, model, environment, evaluation, host, limit, budget, cancelled) or issue codes (snake_case), found `Model!`",
        ),
        (
            "[execution.budget]\nmax_tokens = 100\n",
            &["--executor", "slurm"],
            "runtime.executor: a budget is enforced by the local executor only, found executor `slurm`",
        ),
    ];
    for (config, flags, expected) in cases {
        let file = setup.ws.write("case.toml", config);
        let mut extra = vec!["--config", file.to_str().unwrap()];
        extra.extend_from_slice(flags);
        let out = run(&setup, &server, &extra);
        assert_eq!(out.code, 2, "{config} {flags:?}: {out:?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(
            lines[0].contains(expected),
            "{config} {flags:?}: {}",
            lines[0]
        );
        assert!(!setup.ws.cwd.join("results").exists());
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_budget_with_on_exhausted_cancel_stops_the_running_attempts() {
    let setup = setup(40);
    // Four attempts start together (task_concurrency 4). Task q-0's answer comes after 2 s and
    // costs the whole budget ($0.10: 10,000 tokens at $10 a million); every other task's
    // answer would take 30 s: when the budget is reached, q-1..q-3 are waiting on the model.
    let mut rules = Vec::new();
    for i in 0..40 {
        let (delay_ms, tokens) = if i == 0 {
            (2_000, 10_000)
        } else {
            (30_000, 1_000)
        };
        rules.push(json!({"match": {"last_user_contains": format!("(task q-{i})")},
                          "responses": [{"text": i.to_string(), "delay_ms": delay_ms,
                                         "usage": {"prompt_tokens": tokens, "completion_tokens": 0}}]}));
    }
    let slow = ScriptedServer::start(&json!({"require_key": KEY, "rules": rules}), None).unwrap();
    let budget = setup.ws.write(
        "budget.toml",
        "[execution]\ntask_concurrency = 4\n[execution.budget]\nmax_cost_usd = 0.1\non_exhausted = \"cancel\"\n",
    );
    let started = std::time::Instant::now();
    let out = run(&setup, &slow, &["--config", budget.to_str().unwrap()]).expect_code(1);
    let run1 = run_dir(&out);
    let info = read_json(&run1.join("run_info.json"));
    assert_eq!(info["status"], "stopped_by_budget", "{info}");
    let published = published_results(&run1).len();
    let skipped = skipped(&run1);
    println!(
        "cancel at $0.10: {published} published, {} skipped, {} calls made, in {:?}",
        skipped.len(),
        slow.requests().len(),
        started.elapsed()
    );
    assert_eq!(
        published + skipped.len(),
        40,
        "every task published or skipped"
    );
    // The attempts in flight were cancelled, not finished: at most q-0 is published (it may
    // be cancelled while it is scored; its spend counts).
    assert!(published <= 1, "{published}");
    assert_eq!(slow.requests().len(), 4, "four attempts were in flight");
    let spent = info["stopped"]["budgets"][0]["spent_cost_usd"]
        .as_f64()
        .unwrap();
    assert!((spent - 0.1).abs() < 1e-9, "{info}");
    assert!(spent_usd(&run1) <= 0.1 + 1e-9);
    // A cancelled attempt is skipped like the tasks never started, and `--reuse` runs it.
    let prompt = server(&setup, false, "prompt.jsonl");
    let again = run(&setup, &prompt, &["--reuse"]).expect_code(0);
    assert_eq!(published_results(&run_dir(&again)).len(), 40);
}
