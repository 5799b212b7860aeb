//! Judging results: `compare` (paired statistics checked against reference numbers computed
//! once with scipy 1.x / numpy 2.x, recorded below) and the CI gates `--fail-under`,
//! `--baseline` and `--junit` with their exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{example_run, qa_calculator_args, run_dir, PluginDirs, Workspace};
use serde_json::Value;

/// 40 QA tasks `q-00`..`q-39` (the example calculator solves all; `wrong_every: w` gets task
/// `q-i` wrong when (i + 1) % w == 0), `extra` more after them.
fn dataset(ws: &Workspace, name: &str, extra: usize) -> PathBuf {
    let lines: String = (0..40 + extra)
        .map(|i| {
            format!(
                "{{\"id\": \"q-{i:02}\", \"question\": \"What is {i} + 1?\", \"answer\": \"{}\", \"category\": \"{}\"}}\n",
                i + 1,
                ["add", "mul"][i % 2]
            )
        })
        .collect();
    ws.write(&format!("data/{name}.jsonl"), &lines)
}

fn qa_run(
    ws: &Workspace,
    qa: &Path,
    data: &Path,
    wrong_every: u32,
    extra: &[&str],
) -> (i32, String, PathBuf) {
    let params = serde_json::json!({"path": data}).to_string();
    let harness = serde_json::json!({"wrong_every": wrong_every}).to_string();
    let mut args = qa_calculator_args(qa, &params, &harness);
    args.extend(["--progress", "none"]);
    args.extend_from_slice(extra);
    let out = ws.run(&args, &[]);
    let dir = if out.stdout.trim().is_empty() {
        PathBuf::new()
    } else {
        run_dir(&out)
    };
    (out.code, out.stderr, dir)
}

/// `compare A B --json`, parsed (asserting exit 0).
fn compare_json(ws: &Workspace, a: &Path, b: &Path) -> serde_json::Value {
    ws.run_json(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
}

fn wrong(w: usize) -> Vec<String> {
    (0..40)
        .filter(|i| (i + 1) % w == 0)
        .map(|i| format!("q-{i:02}"))
        .collect()
}

#[test]
fn compare_lists_exactly_the_flips_with_reference_statistics() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let (code, err, a) = qa_run(&ws, &qa, &dataset(&ws, "a", 0), 3, &[]);
    assert_eq!(code, 0, "{err}");
    let (code, err, b) = qa_run(&ws, &qa, &dataset(&ws, "b", 1), 5, &[]);
    assert_eq!(code, 0, "{err}");
    let c = compare_json(&ws, &a, &b);
    // Fixed: wrong in A (w = 3) and right in B (w = 5); broken: the other way round.
    let (wa, wb) = (wrong(3), wrong(5));
    let fixed: Vec<String> = wa.iter().filter(|t| !wb.contains(t)).cloned().collect();
    let broken: Vec<String> = wb.iter().filter(|t| !wa.contains(t)).cloned().collect();
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&c["fixed"]), fixed, "{c}");
    assert_eq!(ids(&c["broken"]), broken, "{c}");
    assert_eq!((fixed.len(), broken.len()), (11, 6));
    assert_eq!(ids(&c["only_b"]), ["q-40"], "never silently dropped");
    assert_eq!(c["shared"], 40);
    assert_eq!(c["mcnemar"]["fixed"], 11);
    assert_eq!(c["mcnemar"]["broken"], 6);
    // scipy.stats.binomtest(6, 17, 0.5).pvalue
    let p = c["mcnemar"]["p_value"].as_f64().unwrap();
    assert!((p - 0.332305908203125).abs() < 1e-12, "{p}");
    assert!((c["difference"].as_f64().unwrap() - 0.125).abs() < 1e-12);
    // numpy percentile bootstrap of the 40 paired differences, 200,000 resamples
    // (default_rng(0)): [-0.075, 0.325]; ours uses 10,000 seeded resamples, whose Monte Carlo
    // error is far below 0.01.
    let (low, high) = (
        c["interval"]["low"].as_f64().unwrap(),
        c["interval"]["high"].as_f64().unwrap(),
    );
    assert!(
        (low + 0.075).abs() <= 0.01 && (high - 0.325).abs() <= 0.01,
        "[{low}, {high}]"
    );
    let cats = c["categories"].as_array().unwrap();
    assert_eq!(cats.len(), 2);
    assert_eq!(cats[0]["category"], "add");
    // The text form says the same.
    let text = ws.run_ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()], &[]);
    assert!(
        text.stdout
            .contains("McNemar exact: fixed 11, broken 6, p = 0.3323"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("only in B (1): q-40"),
        "{}",
        text.stdout
    );
    // Both forms end with a newline (a shell prompt after them starts on its own line).
    assert!(
        text.stdout.ends_with(")\n") || text.stdout.ends_with("40\n"),
        "{:?}",
        text.stdout
    );
    let json = ws.run_ok(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ],
        &[],
    );
    assert!(json.stdout.ends_with("}\n"), "{:?}", json.stdout);
}

#[test]
fn compare_reports_pass_at_k_and_flaky_tasks_with_k_2() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let data = dataset(&ws, "k", 0);
    let (code, err, a) = qa_run(&ws, &qa, &data, 4, &["--k", "2"]);
    assert_eq!(code, 0, "{err}");
    let (code, err, b) = qa_run(&ws, &qa, &data, 0, &["--k", "2"]);
    assert_eq!(code, 0, "{err}");
    let c = compare_json(&ws, &a, &b);
    // The calculator answers a task the same way every attempt: no task is flaky.
    assert_eq!(c["pass_k_a"]["k"], 2, "{c}");
    assert_eq!(c["pass_k_a"]["pass_at_k"], 0.75);
    assert_eq!(c["pass_k_a"]["pass_hat_k"], 0.75);
    assert_eq!(c["pass_k_b"]["pass_at_k"], 1.0);
    assert_eq!(c["pass_k_a"]["flaky"], serde_json::json!([]));
}

#[test]
fn compare_refuses_runs_of_different_benchmarks_and_unknown_metrics() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let (code, err, a) = qa_run(&ws, &qa, &dataset(&ws, "a", 0), 3, &[]);
    assert_eq!(code, 0, "{err}");
    let out = ws.run_ok(&example_run(&["--progress", "none"]), &[]);
    let other = run_dir(&out);
    let out = ws.run_expect(
        2,
        &["compare", a.to_str().unwrap(), other.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("is a run of benchmark `qa`"), "{out:?}");
    assert!(
        out.stderr
            .contains("of `example_exact_match`: compare runs of one benchmark"),
        "{out:?}"
    );
    let out = ws.run_expect(
        2,
        &[
            "compare",
            a.to_str().unwrap(),
            a.to_str().unwrap(),
            "--metric",
            "speed",
        ],
        &[],
    );
    assert!(out.stderr.contains("--metric `speed`: run"), "{out:?}");
    assert!(out.stderr.contains("(its metrics: correct)"), "{out:?}");
}

#[test]
fn gates_exit_3_below_a_threshold_or_significantly_under_the_baseline() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let data = dataset(&ws, "g", 0);
    let (code, err, baseline) = qa_run(&ws, &qa, &data, 0, &["--fail-under", "correct=1"]);
    assert_eq!(code, 0, "at the threshold passes: {err}");
    assert!(
        err.contains("gate --fail-under correct=1: correct.native@1 = 1.0000 — passed"),
        "{err}"
    );
    let (code, err, _) = qa_run(
        &ws,
        &qa,
        &data,
        2,
        &["--fail-under", "correct.native@1=0.6"],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("correct.native@1 = 0.5000 — FAILED"), "{err}");
    // Half the tasks wrong against a perfect baseline: the whole interval is below zero.
    let base = baseline.to_str().unwrap();
    let (code, err, _) = qa_run(&ws, &qa, &data, 2, &["--baseline", base]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("FAILED (significantly worse)"), "{err}");
    // A tolerated drop passes; so does a drop the interval does not exclude from zero.
    let (code, err, _) = qa_run(
        &ws,
        &qa,
        &data,
        2,
        &["--baseline", base, "--max-regression", "0.6"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, err, _) = qa_run(&ws, &qa, &data, 20, &["--baseline", base]);
    assert_eq!(code, 0, "two tasks of forty are not significant: {err}");
    // Bad gates are bad input: one line, exit 2, and a bad baseline is refused before anything runs.
    // A metric the benchmark does not declare is refused before the first task: nothing
    // is written (issue 36).
    let (code, err, dir) = qa_run(&ws, &qa, &data, 0, &["--fail-under", "speed=1"]);
    assert_eq!((code, dir), (2, PathBuf::new()), "{err}");
    insta::assert_snapshot!("fail_under_undeclared_metric", err);
    let (code, err, _) = qa_run(&ws, &qa, &data, 0, &["--fail-under", "corect.avg@1=1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("(did you mean `correct`?)"), "{err}");
    let (code, err, dir) = qa_run(&ws, &qa, &data, 0, &["--baseline", "/nonexistent/run"]);
    assert_eq!((code, dir), (2, PathBuf::new()), "{err}");
    assert_eq!(
        err.trim(),
        "error: --baseline /nonexistent/run: expected a run directory (holding run_info.json), found none"
    );
    let (code, err, _) = qa_run(&ws, &qa, &data, 0, &["--fail-under", "correct"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expected METRIC=VALUE (for example correct=0.8), found `correct`"),
        "{err}"
    );
}

#[test]
fn junit_has_one_case_per_task_and_validates_against_the_schema() {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let qa = dirs.package("qa", "qa-pack");
    let junit = ws.root().join("report.xml");
    let (code, err, _) = qa_run(
        &ws,
        &qa,
        &dataset(&ws, "j", 0),
        4,
        &["--junit", junit.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 40, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 10, "{xml}");
    assert!(
        xml.contains(
            "<testsuites name=\"agentcompass-host\" tests=\"40\" skipped=\"0\" failures=\"10\" errors=\"0\">"
        ),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<testcase name=\"q-03\" classname=\"calc_qa_example_calculator.mul\" time=\""
        ),
        "{xml}"
    );
    // Each case carries its task's time (the attempts' recorded durations).
    let times: Vec<f64> = xml
        .split("<testcase ")
        .skip(1)
        .filter_map(|case| {
            case.split("time=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(times.len(), 40, "{xml}");
    assert!(times.iter().any(|t| *t > 0.0), "{times:?}");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/junit/junit.xsd");
    let check = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(&junit)
        .output()
        .expect("xmllint (Debian libxml2-utils; ./dev.sh test installs it)");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
