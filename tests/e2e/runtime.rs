//! `run` for real: the task lifecycle, results layout, statuses, attempts, retries, watchdogs,
//! reuse and cancellation, against the built binary and the example pack.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentcompass_e2e::{
    example_run, field_strs, progress_events, read_json, run_dir, task_dirs, task_phases, Outcome,
    Workspace,
};
use serde_json::Value;

/// The example benchmark's first `size` tasks by the example harness, then `extra`.
fn sized_run(ws: &Workspace, size: u32, extra: &[&str]) -> Outcome {
    let params = format!(r#"{{"size": {size}}}"#);
    let mut args = example_run(&["--benchmark-params", &params, "--progress", "none"]);
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

fn count(events: &[Value], name: &str) -> usize {
    events.iter().filter(|e| e["event"] == name).count()
}

#[test]
fn a_run_publishes_every_task_in_the_upstream_layout() {
    let ws = Workspace::new();
    let out = sized_run(&ws, 10, &[]).expect_code(0);
    let run = run_dir(&out);
    assert!(
        run.starts_with(
            ws.cwd
                .join("results/calc_example_exact_match_example_calculator")
        ),
        "{}",
        run.display()
    );
    let info = read_json(&run.join("run_info.json"));
    assert_eq!(info["schema_version"], "agentcompass.run_info.v3");
    assert_eq!(info["status"], "completed");
    assert_eq!(info["request"]["benchmark"]["params"]["size"], 10);
    let plans = info["resolved_execution_plans"].as_object().expect("plans");
    assert_eq!(plans.len(), 10);
    assert_eq!(
        plans["arith-0003"]["attempts"]["1"]["applied_recipes"][0],
        "example_recipe"
    );
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["series"][0]["value"], 1.0);
    assert!(fs::read_to_string(run.join("summary.md"))
        .unwrap()
        .contains("100.00%"));
    let normal = task_dirs(&run, "normal");
    assert_eq!(normal.len(), 10);
    let task = read_json(&normal[0].join("task.json"));
    assert_eq!(task["schema_version"], "agentcompass.task.v3");
    let result = read_json(&normal[0].join("attempt-1/result.json"));
    assert_eq!(result["status"], "completed");
    assert_eq!(result["metrics"]["correct"], true);
    assert_eq!(
        fs::read_dir(run.join("details/running")).unwrap().count(),
        0
    );
    assert_eq!(
        fs::read_dir(run.join(".env-resources")).unwrap().count(),
        0,
        "every environment closed"
    );
    let events = progress_events(&run);
    for name in [
        "run_started",
        "tasks_loaded",
        "task_started",
        "attempt_started",
        "phase_changed",
        "execution_plan_resolved",
        "attempt_finished",
        "task_finished",
        "run_finished",
    ] {
        assert!(count(&events, name) > 0, "no {name} event");
    }
    assert_eq!(count(&events, "task_finished"), 10);
    let snapshot = read_json(&run.join("progress.json"));
    assert_eq!(snapshot["status"], "completed");
    assert!(
        out.stderr.contains("correct"),
        "the CLI prints a summary: {out:?}"
    );
}

#[test]
fn a_wrong_answer_is_a_completed_task_with_score_zero() {
    let ws = Workspace::new();
    let out = sized_run(&ws, 4, &["--harness-params", r#"{"wrong_every": 2}"#]).expect_code(0);
    let run = run_dir(&out);
    assert_eq!(
        task_dirs(&run, "normal").len(),
        4,
        "a valid score of 0 is not an error"
    );
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["series"][0]["value"], 0.5);
    let wrong = read_json(&task_dirs(&run, "normal")[1].join("attempt-1/result.json"));
    assert_eq!(wrong["status"], "completed");
    assert_eq!(wrong["metrics"]["correct"], false);
}

#[test]
fn a_plugin_panic_ends_that_task_never_the_request() {
    let ws = Workspace::new();
    let out = sized_run(
        &ws,
        5,
        &["--harness-params", r#"{"panic_on_task": "arith-0001"}"#],
    );
    assert_eq!(
        out.code, 1,
        "a final FATAL issue fails the evaluation: {out:?}"
    );
    let run = run_dir(&out);
    assert_eq!(task_dirs(&run, "normal").len(), 4);
    let fatal = task_dirs(&run, "fatal");
    assert_eq!(fatal.len(), 1);
    let result = read_json(&fatal[0].join("attempt-1/result.json"));
    assert_eq!(result["status"], "run_error");
    let issue = &result["issues"][0];
    assert_eq!(
        (
            issue["severity"].as_str(),
            issue["phase"].as_str(),
            issue["code"].as_str()
        ),
        (Some("fatal"), Some("run"), Some("harness_failed"))
    );
    assert!(
        issue["message"].as_str().unwrap().contains(
            "plugin example-pack@0.1.0 harness example_calculator: execute_task: panicked"
        ),
        "{issue}"
    );
    assert_eq!(read_json(&run.join("run_info.json"))["status"], "failed");
}

#[test]
fn k_attempts_avg_runs_all_and_pass_stops_at_the_first_success() {
    let ws = Workspace::new();
    let out = sized_run(&ws, 3, &["--k", "3"]).expect_code(0);
    let run = run_dir(&out);
    let task = read_json(&task_dirs(&run, "normal")[0].join("task.json"));
    assert_eq!(task["attempts"].as_object().unwrap().len(), 3);
    let metrics = read_json(&run.join("metrics.json"));
    let ids: Vec<&str> = field_strs(&metrics["series"], "series_id");
    assert!(
        ids.contains(&"correct.avg@3") && ids.contains(&"correct.pass@3"),
        "{ids:?}"
    );
    let events = progress_events(&run);
    assert_eq!(
        count(&events, "execution_plan_resolved"),
        9,
        "a new plan per semantic attempt"
    );

    let out = sized_run(&ws, 3, &["--k", "3", "--attempt-strategy", "pass"]).expect_code(0);
    let run = run_dir(&out);
    let task = read_json(&task_dirs(&run, "normal")[0].join("task.json"));
    assert_eq!(
        task["attempts"].as_object().unwrap().len(),
        1,
        "pass stops at the first success"
    );
}

#[test]
fn fatal_issues_are_retried_with_bounded_backoff_on_the_same_plan() {
    let ws = Workspace::new();
    let started = Instant::now();
    let out = sized_run(
        &ws,
        2,
        &[
            "--harness-params",
            r#"{"panic_on_task": "arith-0000"}"#,
            "--max-retries",
            "2",
            "--execution-params",
            r#"{"retry_min_delay_seconds": 0.2, "retry_max_delay_seconds": 0.3}"#,
        ],
    );
    let elapsed = started.elapsed();
    assert_eq!(out.code, 1, "{out:?}");
    // Backoff: retry 1 waits in [0.1, 0.2] s, retry 2 in [0.15, 0.3] s.
    assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
    let run = run_dir(&out);
    let fatal = task_dirs(&run, "fatal");
    let retries: Vec<PathBuf> = fs::read_dir(fatal[0].join("attempt-1/retries"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(retries.len(), 2);
    let record = read_json(&retries[0]);
    assert_eq!(record["schema_version"], "agentcompass.retry.v1");
    assert_eq!(record["matched_pattern"], "fatal:harness_failed");
    assert!(
        record["archived_to"].is_null(),
        "a harness that failed left no checkpoint or artifacts to archive"
    );
    let delay = record["retry_delay_seconds"].as_f64().unwrap();
    assert!((0.1..=0.3).contains(&delay), "{delay}");
    assert_eq!(
        read_json(&fatal[0].join("attempt-1/result.json"))["retry_count"],
        2
    );
    let events = progress_events(&run);
    assert_eq!(count(&events, "attempt_retry"), 2);
    assert_eq!(
        count(&events, "execution_plan_resolved"),
        2,
        "retries reuse the attempt's plan"
    );
}

#[test]
fn a_harness_past_its_watchdog_is_stopped_and_error_patterns_retry() {
    let ws = Workspace::new();
    let timeouts = r#"{"run_timeout_seconds": 0.3, "run_timer_compensation_seconds": 0.1}"#;
    let started = Instant::now();
    let out = sized_run(
        &ws,
        1,
        &[
            "--harness-params",
            r#"{"delay_ms": 20000}"#,
            "--execution-params",
            timeouts,
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 20 s agent step was stopped"
    );
    assert_eq!(out.code, 0, "an ERROR issue is not fatal: {out:?}");
    let run = run_dir(&out);
    let error = task_dirs(&run, "error");
    assert_eq!(error.len(), 1);
    let result = read_json(&error[0].join("attempt-1/result.json"));
    assert_eq!(result["status"], "run_error");
    assert_eq!(result["issues"][0]["code"], "run_timeout");
    assert_eq!(result["meta"]["harness"]["telemetry"]["timed_out"], true);
    assert!(
        !error[0].join("attempt-1/retries").exists(),
        "errors retry only when a pattern matches"
    );

    let out = sized_run(
        &ws,
        1,
        &[
            "--harness-params",
            r#"{"delay_ms": 20000}"#,
            "--execution-params",
            r#"{"run_timeout_seconds": 0.3, "run_timer_compensation_seconds": 0.1, "retry_min_delay_seconds": 0.01, "retry_max_delay_seconds": 0.02}"#,
            "--max-retries",
            "1",
            "--retry-pattern-list",
            r#"["run_time?out"]"#,
        ],
    );
    let run = run_dir(&out);
    let error = task_dirs(&run, "error");
    let record = read_json(
        &fs::read_dir(error[0].join("attempt-1/retries"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path(),
    );
    assert_eq!(record["matched_pattern"], "pattern:run_time?out");
}

#[test]
fn reuse_takes_matching_results_and_reruns_the_rest() {
    let ws = Workspace::new();
    let subset = r#"{"size": 8, "sample_ids": ["arith-0000", "arith-0001", "arith-0002", "arith-0004", "arith-0005", "arith-0007"]}"#;
    let args = example_run(&["--benchmark-params", subset, "--progress", "none"]);
    let first = ws.run_ok(&args, &[]);
    let first_run = run_dir(&first);
    let started = Instant::now();
    let again = sized_run(&ws, 8, &["--reuse"]).expect_code(0);
    let second = run_dir(&again);
    assert_ne!(first_run, second, "reuse writes a new run directory");
    let events = progress_events(&second);
    let reuse = events
        .iter()
        .find(|e| e["event"] == "reuse_loaded")
        .expect("reuse_loaded");
    assert_eq!(reuse["payload"]["reused_tasks"], 6);
    assert_eq!(reuse["payload"]["tasks_to_run"], 2);
    assert_eq!(
        count(&events, "task_started"),
        2,
        "only the missing tasks ran"
    );
    assert_eq!(task_dirs(&second, "normal").len(), 8);
    assert_eq!(
        read_json(&second.join("metrics.json"))["series"][0]["counts"]["evaluated"],
        8
    );
    assert!(started.elapsed() < Duration::from_secs(30));

    // Different benchmark params: nothing is reused, and the reason is given.
    let args = example_run(&[
        "--benchmark-params",
        r#"{"size": 8, "seed": 3}"#,
        "--progress",
        "none",
        "--reuse",
    ]);
    let other = ws.run(&args, &[]);
    let events = progress_events(&run_dir(&other));
    let reuse = events
        .iter()
        .find(|e| e["event"] == "reuse_loaded")
        .expect("reuse_loaded");
    assert_eq!(reuse["payload"]["reused_tasks"], 0);
    assert_eq!(
        reuse["payload"]["not_reused"]["different benchmark, params or attempt plan"],
        8
    );

    // A different attempt plan does not match either.
    let other = sized_run(&ws, 8, &["--reuse", "--k", "2"]);
    let events = progress_events(&run_dir(&other));
    let reuse = events
        .iter()
        .find(|e| e["event"] == "reuse_loaded")
        .expect("reuse_loaded");
    assert_eq!(reuse["payload"]["reused_tasks"], 0);
}

/// Simulates a crash between an attempt's evaluation checkpoint and its publication.
fn unpublish(run: &Path, task_id: &str) {
    let dir = task_dirs(run, "normal")
        .into_iter()
        .find(|d| read_json(&d.join("task.json"))["task_id"] == task_id)
        .expect("published task");
    let running = run.join("details/running").join(dir.file_name().unwrap());
    fs::rename(&dir, &running).unwrap();
    fs::remove_file(running.join("task.json")).unwrap();
    fs::remove_file(running.join("attempt-1/result.json")).unwrap();
}

#[test]
fn reuse_resumes_only_the_evaluation_from_a_checkpoint() {
    let ws = Workspace::new();
    let first = sized_run(&ws, 3, &["--checkpoint-after-seconds", "0"]).expect_code(0);
    let first_run = run_dir(&first);
    assert!(
        task_dirs(&first_run, "normal")[1]
            .join("attempt-1/checkpoint.json")
            .is_file(),
        "none mode checkpoints"
    );
    unpublish(&first_run, "arith-0001");

    let again = sized_run(&ws, 3, &["--reuse"]).expect_code(0);
    let second = run_dir(&again);
    let events = progress_events(&second);
    let reuse = events
        .iter()
        .find(|e| e["event"] == "reuse_loaded")
        .unwrap();
    assert_eq!(reuse["payload"]["reused_tasks"], 2);
    assert_eq!(reuse["payload"]["interrupted_tasks_with_checkpoints"], 1);
    let phases = task_phases(&events, "arith-0001");
    assert!(
        phases.contains(&"recover_evaluation".to_string()),
        "{phases:?}"
    );
    assert!(
        !phases.contains(&"run_harness".to_string()),
        "the agent did not run again: {phases:?}"
    );
    assert_eq!(task_dirs(&second, "normal").len(), 3);
    assert_eq!(
        read_json(&second.join("metrics.json"))["series"][0]["value"],
        1.0
    );

    // --no-checkpoint-resume reruns the agent.
    unpublish(&second, "arith-0002");
    let third = sized_run(&ws, 3, &["--reuse", "--no-checkpoint-resume"]);
    let events = progress_events(&run_dir(&third));
    assert!(task_phases(&events, "arith-0002").contains(&"run_harness".to_string()));
}

#[test]
fn only_an_evaluation_still_running_after_checkpoint_after_seconds_saves_a_checkpoint() {
    let ws = Workspace::new();
    let checkpoints = |params: &str, extra: &[&str]| {
        let mut args = example_run(&["--benchmark-params", params, "--progress", "none"]);
        args.extend_from_slice(extra);
        let out = ws.run_ok(&args, &[]);
        let run = run_dir(&out);
        let saved = task_dirs(&run, "normal")
            .iter()
            .filter(|dir| dir.join("attempt-1/checkpoint.json").is_file())
            .count();
        (saved, progress_events(&run))
    };
    // Quick evaluations (the default 1 s): the results are written, no checkpoints.
    let (saved, events) = checkpoints(r#"{"size": 3}"#, &[]);
    assert_eq!(saved, 0);
    assert!(!events
        .iter()
        .any(|e| e["phase"] == "save_evaluation_checkpoint"));
    // Evaluations that outlast the threshold save theirs while they run.
    let (saved, _) = checkpoints(
        r#"{"size": 2, "evaluate_delay_ms": 1500}"#,
        &["--checkpoint-after-seconds", "0.2"],
    );
    assert_eq!(saved, 2);
    // 0: every attempt saves one before its evaluation, as a phase of its own.
    let (saved, events) = checkpoints(r#"{"size": 2}"#, &["--checkpoint-after-seconds", "0"]);
    assert_eq!(saved, 2);
    assert!(events
        .iter()
        .any(|e| e["phase"] == "save_evaluation_checkpoint"));
}

#[test]
fn launch_runs_every_request_under_one_concurrency_limit() {
    let ws = Workspace::new();
    let plan = ws.write(
        "plan.toml",
        r#"
name = "two"
task_concurrency = 3
[defaults]
model = { id = "calc" }
harness = { id = "example_calculator" }
[[requests]]
name = "small"
benchmark = { id = "example_exact_match", size = 4 }
[[requests]]
name = "half"
benchmark = { id = "example_exact_match", size = 6 }
harness = { id = "example_calculator", wrong_every = 2 }
"#,
    );
    let out = ws.run_ok(
        &["launch", plan.to_str().unwrap(), "--progress", "none"],
        &[],
    );
    let dirs: Vec<PathBuf> = out.stdout.lines().map(PathBuf::from).collect();
    assert_eq!(dirs.len(), 2);
    assert!(
        dirs[0].starts_with(ws.cwd.join("results/small")),
        "{dirs:?}"
    );
    assert_eq!(
        read_json(&dirs[0].join("metrics.json"))["series"][0]["value"],
        1.0
    );
    assert_eq!(
        read_json(&dirs[1].join("metrics.json"))["series"][0]["value"],
        0.5
    );
    let info = read_json(&dirs[1].join("run_info.json"));
    assert_eq!(info["request"]["execution"]["task_concurrency"], 3);
    assert_eq!(info["request"]["metadata"]["request_name"], "half");
}

#[test]
fn summary_recomputes_metrics_from_the_details() {
    let ws = Workspace::new();
    let out = sized_run(&ws, 4, &["--harness-params", r#"{"wrong_every": 4}"#]);
    let run = run_dir(&out);
    let before = read_json(&run.join("metrics.json"));
    fs::remove_file(run.join("metrics.json")).unwrap();
    fs::remove_file(run.join("summary.md")).unwrap();
    let out = ws.run_ok(&["summary", run.to_str().unwrap()], &[]);
    assert!(
        out.stdout.contains("| correct | native@1 | 75.00% |"),
        "{out:?}"
    );
    assert_eq!(
        read_json(&run.join("metrics.json"))["series"],
        before["series"]
    );
    assert!(run.join("summary.md").is_file());
}

#[test]
fn the_orchestration_deadline_ends_the_run_as_timed_out() {
    let ws = Workspace::new();
    let started = Instant::now();
    let out = sized_run(
        &ws,
        40,
        &[
            "--harness-params",
            r#"{"delay_ms": 400}"#,
            "--task-concurrency",
            "2",
            "--timeout-seconds",
            "1",
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(15), "{out:?}");
    assert_eq!(out.code, 1, "{out:?}");
    let run = run_dir(&out);
    assert_eq!(read_json(&run.join("run_info.json"))["status"], "timed_out");
    let published = task_dirs(&run, "normal").len();
    assert!(
        (1..40).contains(&published),
        "finished tasks are published: {published}"
    );
    assert_eq!(fs::read_dir(run.join(".env-resources")).unwrap().count(), 0);
}

#[test]
fn an_existing_run_id_or_a_missing_reuse_run_is_bad_input() {
    let ws = Workspace::new();
    sized_run(&ws, 2, &["--run-id", "r1"]).expect_code(0);
    let out = sized_run(&ws, 2, &["--run-id", "r1"]).expect_code(2);
    assert!(
        out.stderr
            .starts_with("error: output.run_id: run directory "),
        "{out:?}"
    );
    assert!(
        out.stderr
            .trim_end()
            .ends_with("already exists; choose a different --run-id or use --reuse"),
        "{out:?}"
    );
    let out = sized_run(&ws, 2, &["--reuse", "nope"]).expect_code(2);
    assert!(
        out.stderr
            .starts_with("error: runtime.reuse_run_id: run `nope` not found under "),
        "{out:?}"
    );
    let runs = fs::read_dir(
        ws.cwd
            .join("results/calc_example_exact_match_example_calculator"),
    )
    .unwrap()
    .count();
    assert_eq!(runs, 1, "nothing was written by the refused runs");
}
