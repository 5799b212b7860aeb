//! Results parity with upstream AgentCompass 1.0.1: its own `summary --dry-run` (its CLI, its
//! run-directory reader with its strict task-detail validation, its metric aggregation) reads
//! run directories of ours and recomputes the same series as our `summary`.
//!
//! Upstream runs from `AGENTCOMPASS_UPSTREAM_PYTHON` (a venv with `agentcompass==1.0.1`, made
//! and cached by `./dev.sh test`) through `tests/upstream_oracle/summary.py`, offline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{
    pack_run, qa_calculator_args, read_json, run_dir, Packs, PluginDirs, Workspace,
};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn upstream_python() -> PathBuf {
    match std::env::var_os("AGENTCOMPASS_UPSTREAM_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => panic!(
            "AGENTCOMPASS_UPSTREAM_PYTHON is not set: run this test through `./dev.sh test` (it \
             installs AgentCompass 1.0.1 into a cached venv and exports it)"
        ),
    }
}

/// What upstream's `summary RUN --dry-run` printed (its markdown) and the metric report its
/// launcher recomputed.
struct Upstream {
    markdown: String,
    metrics: Value,
}

/// Runs upstream's reader (`tests/upstream_oracle/summary.py`) with `args` under the home
/// `home` and returns its standard output, asserting that it succeeded (`failed` says what
/// its failure means).
fn upstream_oracle(args: &[&std::ffi::OsStr], home: &Path, failed: &str) -> String {
    let output = Command::new(upstream_python())
        .arg(repo_root().join("tests/upstream_oracle/summary.py"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        // LiteLLM (imported by upstream) would fetch its price map from the internet.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .expect("run upstream's summary.py");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{failed}:\n{stdout}\n{stderr}");
    stdout
}

fn upstream_summary(run: &Path, home: &Path) -> Upstream {
    let stdout = upstream_oracle(
        &[run.as_os_str()],
        home,
        "upstream's summary refused our run directory",
    );
    let (markdown, metrics) = stdout
        .split_once("UPSTREAM-METRICS ")
        .unwrap_or_else(|| panic!("no metrics line: {stdout}"));
    Upstream {
        markdown: markdown.to_string(),
        metrics: serde_json::from_str(metrics.trim()).unwrap(),
    }
}

/// What upstream's viewer server answered for the run: `/api/run`, the first page of
/// `/api/details-page` and `/api/detail` of its first task, each `{"status", "body"}`.
fn upstream_viewer(run: &Path, home: &Path) -> Value {
    let stdout = upstream_oracle(
        &["--viewer".as_ref(), run.as_os_str()],
        home,
        "upstream's viewer failed",
    );
    let (_, answers) = stdout
        .split_once("UPSTREAM-VIEWER ")
        .unwrap_or_else(|| panic!("no viewer line: {stdout}"));
    serde_json::from_str(answers.trim()).unwrap()
}

/// Upstream's viewer serves the run: its run page, every task card and a task's detail.
fn assert_viewer_serves(ws: &Workspace, run: &Path) {
    let ours = agentcompass_e2e::published_results(run);
    let api = upstream_viewer(run, &ws.home);
    for name in ["run", "page", "detail"] {
        assert_eq!(api[name]["status"], 200, "{name}: {}", api[name]);
    }
    let run_body = &api["run"]["body"];
    assert_eq!(run_body["isRun"], true, "{run_body}");
    assert_eq!(run_body["detailsTotal"], ours.len(), "{run_body}");
    assert!(run_body["metricsJson"]["series"].is_array(), "{run_body}");
    assert!(run_body["analysisSummaryJson"].is_object(), "{run_body}");
    let cards = api["page"]["body"]["details"].as_array().unwrap();
    let mut ids: Vec<&str> = cards
        .iter()
        .map(|c| c["taskId"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut expected: Vec<&str> = ours.keys().map(String::as_str).collect();
    expected.sort();
    assert_eq!(ids, expected);
    for card in cards {
        assert_eq!(card["reductionState"], "evaluated", "{card}");
        // The analyzers that flagged the task: none on these runs.
        assert!(card["analyzers"].is_array(), "{card}");
    }
    let detail = &api["detail"]["body"]["detail"];
    assert_eq!(detail["task_id"], cards[0]["taskId"], "{detail}");
    assert!(
        detail["attempts"]["1"]["trajectory"]["steps"].is_array(),
        "{detail}"
    );
}

/// `series_id` → (value, evaluated, total) of a metric report.
fn series(report: &Value) -> BTreeMap<String, (Option<f64>, u64, u64)> {
    report["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["series_id"].as_str().unwrap().to_string(),
                (
                    s["value"].as_f64(),
                    s["counts"]["evaluated"].as_u64().unwrap(),
                    s["counts"]["total"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Our `summary RUN` rewrites metrics.json from the task details; upstream recomputes the same
/// series (same ids, values and counts) and names the headline values in its markdown.
fn assert_same_metrics(ws: &Workspace, run: &Path, plugin_dir: &Path, same_roles: bool) {
    ws.run_ok(
        &[
            "--plugin-dir",
            plugin_dir.to_str().unwrap(),
            "summary",
            run.to_str().unwrap(),
        ],
        &[],
    );
    let ours = read_json(&run.join("metrics.json"));
    let upstream = upstream_summary(run, &ws.home);
    let (ours_series, upstream_series) = (series(&ours), series(&upstream.metrics));
    assert_eq!(ours_series, upstream_series, "ours vs upstream");
    for (id, (value, ..)) in &ours_series {
        let value = value.unwrap();
        assert!(
            upstream.markdown.contains(&format!("{value:.4}")),
            "{id} = {value:.4} is not in upstream's summary:\n{}",
            upstream.markdown
        );
    }
    // Per category, values, counts and weights agree too; so do the roles, except where
    // the primary differs (Harbor's `reward`: README "Differences from upstream").
    let by_id = |report: &Value| -> BTreeMap<String, Value> {
        report["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["series_id"].as_str().unwrap().to_string(), s.clone()))
            .collect()
    };
    let theirs = by_id(&upstream.metrics);
    for (id, a) in by_id(&ours) {
        let b = &theirs[&id];
        assert_eq!(a["categories"], b["categories"], "{id}");
        if same_roles {
            assert_eq!(a["role"], b["role"], "{id}");
        }
    }
}

#[test]
fn upstream_summary_reads_our_qa_run_with_k_2() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let dataset = ws.write(
        "data/arith.jsonl",
        concat!(
            r#"{"id": "q-0", "question": "What is 2 + 2?", "answer": "4", "category": "add"}"#,
            "\n",
            r#"{"id": "q-1", "question": "What is 6 * 7?", "answer": 42, "category": "mul"}"#,
            "\n",
            r#"{"id": "q-2", "question": "What is 9 - 10?", "answer": "-1", "category": "sub"}"#,
            "\n",
            r#"{"id": "q-3", "question": "What is 3 * 3?", "answer": "9", "category": "mul"}"#,
            "\n",
        ),
    );
    let params = serde_json::json!({"path": dataset}).to_string();
    // Every third answer is wrong: attempts of one task disagree.
    let mut args = qa_calculator_args(&qa, &params, r#"{"wrong_every": 3}"#);
    args.extend(["--k", "2", "--progress", "none"]);
    let out = ws.run_ok(&args, &[]);
    let run = run_dir(&out);
    assert_same_metrics(&ws, &run, &qa, true);
    assert_viewer_serves(&ws, &run);
    let headline = &read_json(&run.join("metrics.json"))["series"][0];
    assert_eq!(headline["series_id"], "correct.avg@2");
    assert!(headline["value"].as_f64().unwrap() < 1.0, "{headline}");
}

#[test]
fn upstream_summary_reads_our_harbor_run_with_k_2() {
    let ws = Workspace::new();
    let harbor = Packs::harbor();
    let params = serde_json::json!({"path": repo_root().join("examples/harbor")}).to_string();
    let out = ws.run_ok(
        &pack_run(
            &harbor,
            ["harbor", "oracle", "none"],
            &params,
            &["--env", "sandbox", "--k", "2", "--progress", "none"],
        ),
        &[],
    );
    let run = run_dir(&out);
    assert_same_metrics(&ws, &run, &harbor, false);
    assert_viewer_serves(&ws, &run);
    let task = read_json(
        &std::fs::read_dir(run.join("details/normal"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("task.json"),
    );
    for key in ["category", "ground_truth", "attempt_plan"] {
        assert!(task.get(key).is_some(), "task.json lacks {key}: {task}");
    }
}
