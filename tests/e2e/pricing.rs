//! Cost without typing prices (issue 57 §5): the `qa` benchmark answered by `openai_chat`
//! against the scripted model server, as `claude-sonnet-4-5` (Anthropic's protocol) and
//! `gpt-4o` (OpenAI's), priced from the pinned LiteLLM table with no flag — the figure is the
//! tokens times the table's prices, per attempt and per run, and the run names the table and
//! its version —, `model.params.pricing` overriding it, and an unknown model shown as having
//! no price rather than costing $0.

use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    pack_run, published_results, read_json, report_data_block, run_dir, QaSetup, THREE_QUESTIONS,
};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-pricing-0123";

/// Tokens each question's answer reports: (prompt, cached of them, completion).
const USAGE: [(&str, &str, u64, u64, u64); 3] = [
    ("add", "2+2", 1000, 400, 200),
    ("mul", "6*7", 2000, 0, 100),
    ("cap", "France", 520, 0, 50),
];

/// The pinned table (`host/gateway/prices/litellm.json`), read as a user would.
fn table() -> Value {
    read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/gateway/prices/litellm.json"))
}

/// The cost of `prompt` tokens (`cached` of them read from the cache) and `completion` tokens
/// at `prices` (US dollars per token: input, cached input, output).
fn cost(prices: (f64, f64, f64), prompt: u64, cached: u64, completion: u64) -> f64 {
    (prompt - cached) as f64 * prices.0 + cached as f64 * prices.1 + completion as f64 * prices.2
}

/// The table's per-token prices of `entry`.
fn table_prices(entry: &str) -> (f64, f64, f64) {
    let table = table();
    let model = &table["models"][entry];
    let input = model["input_cost_per_token"].as_f64().unwrap();
    let cached = model["cache_read_input_token_cost"]
        .as_f64()
        .unwrap_or(input);
    (
        input,
        cached,
        model["output_cost_per_token"].as_f64().unwrap(),
    )
}

/// A scripted server answering the three questions with [`USAGE`].
fn server() -> ScriptedServer {
    let rules: Vec<Value> = USAGE
        .iter()
        .map(|(id, question, prompt, cached, completion)| {
            let answer = match *id {
                "add" => "4",
                "mul" => "42",
                _ => "Paris",
            };
            json!({"match": {"last_user_contains": question}, "responses": [{"text": answer,
                "usage": {"prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": completion}}]})
        })
        .collect();
    ScriptedServer::start(&json!({"require_key": KEY, "rules": rules}), None).unwrap()
}

/// `run qa openai_chat MODEL` over the three questions against a fresh scripted server
/// speaking `protocol`, then `extra`; returns the run directory and its `Model usage:` line.
fn run(setup: &QaSetup, model: &str, protocol: &str, extra: &[&str]) -> (PathBuf, String) {
    let server = server();
    let params = setup.params();
    let base_url = server.base_url();
    let mut args = pack_run(&setup.plugins, ["qa", "openai_chat", model], &params, &[]);
    args.extend([
        "--model-base-url",
        &base_url,
        "--model-api-key",
        "${E2E_MODEL_KEY}",
        "--model-api-protocol",
        protocol,
        "--progress",
        "none",
    ]);
    args.extend_from_slice(extra);
    let out = setup
        .ws
        .run(&args, &[("E2E_MODEL_KEY", KEY)])
        .expect_code(0);
    assert_eq!(server.requests().len(), 3, "{out:?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("Model usage: "))
        .unwrap_or_else(|| panic!("no usage line: {}", out.stderr))
        .to_string();
    let run = run_dir(&out);
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains(&line), "{summary}");
    (run, line)
}

/// Asserts the run's cost, per attempt and in total, is the tokens times `prices`, and returns
/// the run's `extra.pricing` and `provenance.model.pricing`.
fn assert_costs(run: &Path, prices: (f64, f64, f64)) -> (Value, Value) {
    let results = published_results(run);
    let mut total = 0.0;
    for (id, _, prompt, cached, completion) in USAGE {
        let expected = cost(prices, prompt, cached, completion);
        let usage = &results[id].1["meta"]["harness"]["telemetry"]["model_usage"];
        let recorded = usage["cost_usd"]
            .as_f64()
            .unwrap_or_else(|| panic!("{usage}"));
        assert!(
            (recorded - expected).abs() < 1e-12,
            "{id}: {recorded} != {expected}"
        );
        // The attempt's ATIF trajectory carries the same cost.
        let atif = read_json(&results[id].0.join("agent/trajectory.json"));
        assert_eq!(
            atif["final_metrics"]["total_cost_usd"].as_f64(),
            Some(recorded),
            "{id}: {atif}"
        );
        total += expected;
    }
    let metrics = read_json(&run.join("metrics.json"));
    let recorded = metrics["extra"]["model_usage"]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!((recorded - total).abs() < 1e-12, "{recorded} != {total}");
    let info = read_json(&run.join("run_info.json"));
    (
        metrics["extra"]["pricing"].clone(),
        info["provenance"]["model"]["pricing"].clone(),
    )
}

/// `report RUN` (the viewer's data, self-contained) carries the run's cost and its prices.
fn assert_report_shows(setup: &QaSetup, run: &Path, pricing: &Value) {
    setup.ws.run_ok(&["report", run.to_str().unwrap()], &[]);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let (_, block) = report_data_block(&html).expect("a data block");
    let data: Value = serde_json::from_str(&html[block]).unwrap();
    let metrics = read_json(&run.join("metrics.json"));
    let shown = &data["run"]["metrics"]["extra"];
    assert_eq!(shown["model_usage"], metrics["extra"]["model_usage"]);
    assert!(shown["model_usage"]["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(&shown["pricing"], pricing);
    assert_eq!(
        &data["run"]["run_info"]["provenance"]["model"]["pricing"],
        pricing
    );
    let details = data["details"].as_object().unwrap();
    assert_eq!(details.len(), 3);
    for (id, detail) in details {
        let attempt = &detail["attempts"][0]["result"]["meta"]["harness"]["telemetry"];
        assert!(
            attempt["model_usage"]["cost_usd"].as_f64().is_some(),
            "{id}"
        );
    }
}

/// The table's version (`1.110.2`) made a placeholder, for snapshots that outlive an update.
fn versionless(line: &str) -> String {
    let version = table()["litellm_version"].as_str().unwrap().to_string();
    line.replace(&format!("litellm@{version}"), "litellm@[VERSION]")
}

#[test]
fn known_models_are_priced_from_the_pinned_table_without_a_flag() {
    let setup = QaSetup::new(THREE_QUESTIONS);
    let version = table()["litellm_version"].as_str().unwrap().to_string();
    // A cost budget is accepted for a model the table prices (no model.params.pricing).
    let budget = setup
        .ws
        .write("budget.toml", "[execution.budget]\nmax_cost_usd = 1\n");
    let budget = budget.to_str().unwrap();
    let mut lines = Vec::new();
    for (model, protocol) in [
        ("claude-sonnet-4-5", "anthropic"),
        ("gpt-4o", "openai-chat"),
    ] {
        let (run, line) = run(&setup, model, protocol, &["--config", budget]);
        let prices = table_prices(model);
        let (extra, provenance) = assert_costs(&run, prices);
        assert_eq!(extra["source"], format!("litellm@{version}"), "{extra}");
        assert_eq!(extra["entry"], model, "{extra}");
        assert_eq!(extra["input"].as_f64().unwrap(), prices.0 * 1e6);
        assert_eq!(provenance, extra);
        let total: f64 = USAGE.iter().map(|u| cost(prices, u.2, u.3, u.4)).sum();
        assert_eq!(
            line,
            format!(
                "Model usage: 3 calls · 3520 prompt tokens (400 cached) · 350 completion tokens · ${total:.4} (litellm@{version})"
            )
        );
        lines.push(format!("{model}: {}", versionless(&line)));
        if model == "gpt-4o" {
            assert_report_shows(&setup, &run, &extra);
            // `summary` recomputes the cost from the attempts and keeps the recorded source.
            std::fs::remove_file(run.join("metrics.json")).unwrap();
            let out = setup.ws.run_ok(&["summary", run.to_str().unwrap()], &[]);
            assert!(out.stdout.contains(&line), "{}", out.stdout);
            assert_eq!(
                read_json(&run.join("metrics.json"))["extra"]["pricing"],
                extra
            );
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn explicit_pricing_overrides_the_table() {
    let setup = QaSetup::new(THREE_QUESTIONS);
    let (run, line) = run(
        &setup,
        "gpt-4o",
        "openai-chat",
        &[
            "--model-params",
            r#"{"pricing": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}"#,
        ],
    );
    let (extra, provenance) = assert_costs(&run, (1e-6, 0.5e-6, 2e-6));
    assert_eq!(
        extra,
        json!({"source": "model.params.pricing", "input": 1.0, "output": 2.0, "cached_input": 0.5})
    );
    assert_eq!(provenance, extra);
    insta::assert_snapshot!(line);
}

#[test]
fn an_unknown_model_shows_no_price_not_zero_dollars() {
    let setup = QaSetup::new(THREE_QUESTIONS);
    let (run, line) = run(&setup, "scripted-model", "openai-chat", &[]);
    insta::assert_snapshot!(line);
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["extra"]["model_usage"]["cost_usd"], Value::Null);
    assert_eq!(metrics["extra"]["pricing"], Value::Null);
    for (id, (_, result)) in published_results(&run) {
        let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
        assert_eq!(usage["cost_usd"], Value::Null, "{id}: {usage}");
        let atif = read_json(&published_results(&run)[&id].0.join("agent/trajectory.json"));
        assert_eq!(
            atif["final_metrics"].get("total_cost_usd"),
            None,
            "{id}: {atif}"
        );
    }
    let info = read_json(&run.join("run_info.json"));
    assert_eq!(info["provenance"]["model"]["pricing"], Value::Null);
    assert_eq!(info["provenance"]["model"]["id"], "scripted-model");
}
