//! Harness-free benchmarks end to end: `example_self_check` selected with harness `none` runs
//! each task itself (a shell command in the environment); mixing it with a harness, or harness
//! `none` with an ordinary benchmark, is refused before anything runs.

use std::fs;

use agentcompass_e2e::{read_json, run_dir, task_dirs, Outcome, Workspace};

fn self_check_run(ws: &Workspace, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "run",
        "example_self_check",
        "none",
        "calc",
        "--benchmark-params",
        r#"{"size": 4}"#,
        "--progress",
        "none",
    ];
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

fn assert_all_correct(ws: &Workspace, out: &Outcome) {
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(out);
    assert!(run.starts_with(ws.cwd.join("results")), "{}", run.display());
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["series"][0]["value"], 1.0, "{metrics}");
    let normal = task_dirs(&run, "normal");
    assert_eq!(normal.len(), 4, "{normal:?}");
    let result = read_json(&normal[0].join("attempt-1/result.json"));
    assert_eq!(result["status"], "completed");
    assert_eq!(result["metrics"]["correct"], true);
    let answer = result["final_answer"].as_str().expect("final answer");
    let observation = &result["trajectory"]["steps"][0]["observation"][0];
    assert_eq!(observation["returncode"], 0, "{observation}");
    assert_eq!(
        observation["stdout"].as_str().map(str::trim),
        Some(answer),
        "{observation}"
    );
    assert!(
        observation["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("sh -c 'echo $((")),
        "{observation}"
    );
    assert_eq!(
        fs::read_dir(run.join(".env-resources")).unwrap().count(),
        0,
        "every environment closed"
    );
}

fn assert_refused(ws: &Workspace, out: &Outcome, needle: &str) {
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "", "nothing on stdout: {out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line: {out:?}");
    assert!(lines[0].starts_with("error: "), "{out:?}");
    assert!(lines[0].contains(needle), "{out:?}");
    assert!(!ws.cwd.join("results").exists(), "results dir written");
}

#[test]
fn a_harness_free_benchmark_runs_its_tasks_itself() {
    let ws = Workspace::new();
    let out = self_check_run(&ws, &[]);
    assert_all_correct(&ws, &out);
}

#[test]
fn a_harness_free_benchmark_runs_under_the_sandbox() {
    let ws = Workspace::new();
    let out = self_check_run(&ws, &["--env", "sandbox"]);
    assert_all_correct(&ws, &out);
}

#[test]
fn a_harness_free_benchmark_with_a_harness_is_refused() {
    let ws = Workspace::new();
    let out = ws.run(
        &[
            "run",
            "example_self_check",
            "example_calculator",
            "calc",
            "--progress",
            "none",
        ],
        &[],
    );
    assert_refused(
        &ws,
        &out,
        "benchmark `example_self_check` is harness-free: select it with harness `none`",
    );
}

#[test]
fn harness_none_with_an_ordinary_benchmark_is_refused() {
    let ws = Workspace::new();
    let out = ws.run(
        &[
            "run",
            "example_exact_match",
            "none",
            "calc",
            "--progress",
            "none",
        ],
        &[],
    );
    assert_refused(
        &ws,
        &out,
        "harness `none` needs a harness-free benchmark, but `example_exact_match` needs a harness",
    );
}
