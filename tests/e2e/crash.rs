//! Crash safety and cancellation: SIGKILL at random instants followed by `--reuse` loses
//! nothing and duplicates nothing; SIGINT cancels cleanly with exit 130.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::{json_files_parse, Workspace};
use serde_json::Value;

const TASKS: usize = 200;

fn spawn_run(ws: &Workspace, reuse: bool) -> Child {
    spawn_sized(ws, reuse, TASKS, r#"{"delay_ms": 15, "wrong_every": 3}"#, 8)
}

/// `run example_exact_match example_calculator` over `size` tasks, `concurrency` at a time
/// (`--reuse` when asked).
fn spawn_sized(
    ws: &Workspace,
    reuse: bool,
    size: usize,
    harness_params: &str,
    concurrency: usize,
) -> Child {
    let mut command = ws.command();
    command
        .args([
            "run",
            "example_exact_match",
            "example_calculator",
            "calc",
            "--benchmark-params",
            &format!(r#"{{"size": {size}}}"#),
            "--harness-params",
            harness_params,
            "--task-concurrency",
            &concurrency.to_string(),
            "--progress",
            "none",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if reuse {
        command.arg("--reuse");
    }
    command.spawn().expect("spawn agentcompass-host")
}

fn published_ids(run: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for state in ["normal", "error", "fatal"] {
        let Ok(entries) = fs::read_dir(run.join("details").join(state)) else {
            continue;
        };
        for entry in entries.flatten() {
            let task: Value =
                serde_json::from_str(&fs::read_to_string(entry.path().join("task.json")).unwrap())
                    .unwrap();
            ids.push(task["task_id"].as_str().unwrap().to_string());
        }
    }
    ids.sort();
    ids
}

fn metric_value(run: &Path) -> Value {
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    metrics["series"][0]["value"].clone()
}

fn finished_run_dir(child: Child) -> PathBuf {
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap()
            .to_string(),
    )
}

#[test]
fn sigkill_at_random_instants_then_reuse_loses_and_duplicates_nothing() {
    let clean = Workspace::new();
    let clean_run = finished_run_dir(spawn_run(&clean, false));
    assert_eq!(published_ids(&clean_run).len(), TASKS);

    let ws = Workspace::new();
    // Pseudo-random kill instants (deterministic sequence, spread over the run).
    let kills_ms = [350u64, 170, 620, 90, 480];
    for (i, delay) in kills_ms.iter().enumerate() {
        let mut child = spawn_run(&ws, i > 0);
        std::thread::sleep(Duration::from_millis(*delay));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
    }
    let final_run = finished_run_dir(spawn_run(&ws, true));
    let ids = published_ids(&final_run);
    assert_eq!(ids.len(), TASKS, "every task exactly once");
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), TASKS, "no duplicates");
    assert!(json_files_parse(&ws.cwd.join("results")) > TASKS);
    assert_eq!(
        metric_value(&final_run),
        metric_value(&clean_run),
        "metrics match a clean run"
    );
}

/// The run directories under `ws`'s results, newest name last.
fn run_dirs(ws: &Workspace) -> Vec<PathBuf> {
    let ns = ws
        .cwd
        .join("results/calc_example_exact_match_example_calculator");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&ns)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.retain(|d| d.join("run_info.json").is_file());
    dirs.sort();
    dirs
}

/// A `--reuse` run killed while it is still importing the earlier run's tasks never becomes
/// the next reuse's source: after a complete run, reuses killed at several points of their
/// import (the first as soon as its run_info.json exists, later ones after 1, 50 and 400
/// imported tasks), the next reuse runs no task again.
#[test]
fn a_reuse_killed_while_importing_loses_no_finished_work() {
    const SIZE: usize = 1500;
    let params = r#"{"delay_ms": 0, "wrong_every": 3}"#;
    let ws = Workspace::new();
    let complete = finished_run_dir(spawn_sized(&ws, false, SIZE, params, 8));
    assert_eq!(published_ids(&complete).len(), SIZE);
    let mut imported_at_kill = Vec::new();
    for after in [0usize, 1, 50, 400] {
        let before = run_dirs(&ws);
        let mut child = spawn_sized(&ws, true, SIZE, params, 8);
        let deadline = Instant::now() + Duration::from_secs(60);
        let killed_at = loop {
            let fresh = run_dirs(&ws).into_iter().find(|d| !before.contains(d));
            if let Some(run) = fresh {
                let imported = published_ids(&run).len();
                if imported >= after {
                    child.kill().expect("SIGKILL");
                    break published_ids(&run).len();
                }
            }
            if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                panic!("the reuse run ended before it could be killed at {after} imports");
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        child.wait().unwrap();
        imported_at_kill.push(killed_at);
    }
    // At least one kill landed in the middle of an import.
    assert!(
        imported_at_kill.iter().any(|&n| n > 0 && n < SIZE),
        "imports at the kills: {imported_at_kill:?}"
    );
    eprintln!("tasks imported when each reuse was killed: {imported_at_kill:?}");
    let last = finished_run_dir(spawn_sized(&ws, true, SIZE, params, 8));
    let ids = published_ids(&last);
    assert_eq!(ids.len(), SIZE, "every task, once");
    let progress = fs::read_to_string(last.join("progress.jsonl")).unwrap();
    let rerun = progress.matches("\"attempt_started\"").count();
    assert_eq!(
        rerun, 0,
        "finished tasks were run again (imports at the kills: {imported_at_kill:?})"
    );
    assert_eq!(metric_value(&last), metric_value(&complete));
}

#[test]
fn sigint_cancels_cleanly_with_exit_130() {
    let ws = Workspace::new();
    let child = spawn_sized(&ws, false, 60, r#"{"delay_ms": 300}"#, 4);
    let pid = child.id().to_string();
    std::thread::sleep(Duration::from_millis(1200));
    let started = Instant::now();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "cleanup within the grace"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let run = PathBuf::from(stdout.lines().last().unwrap());
    let info: Value =
        serde_json::from_str(&fs::read_to_string(run.join("run_info.json")).unwrap()).unwrap();
    assert_eq!(info["status"], "cancelled");
    let published = published_ids(&run).len();
    assert!(
        (4..60).contains(&published),
        "finished tasks are published: {published}"
    );
    assert_eq!(
        fs::read_dir(run.join(".env-resources")).unwrap().count(),
        0,
        "no environment left open"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Cancellation requested"));
    // The summary counts the run's 60 selected tasks, not only those that finished.
    let headline = stderr
        .lines()
        .find(|l| l.starts_with("cancelled — "))
        .unwrap_or_else(|| panic!("no headline: {stderr}"));
    assert!(
        headline.contains("/60 evaluated)")
            && headline.ends_with(&format!("({published} of 60 tasks, 0 reused)")),
        "{headline}"
    );
    // The exact command that resumes it, and it does: the published tasks are reused.
    let run_id = run.file_name().unwrap().to_str().unwrap();
    let resume = stderr
        .lines()
        .find_map(|l| l.strip_prefix("to resume: "))
        .unwrap_or_else(|| panic!("no resume line: {stderr}"));
    assert!(
        resume.ends_with(&format!(
            "run example_exact_match example_calculator calc --benchmark-params '{{\"size\": \
             60}}' --harness-params '{{\"delay_ms\": 300}}' --task-concurrency 4 --progress \
             none --reuse {run_id}"
        )),
        "{resume}"
    );
    // Run as a shell reads it (its quoting included), in the same place.
    let out = Command::new("sh")
        .arg("-c")
        .arg(resume)
        .current_dir(&ws.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &ws.home)
        .output()
        .unwrap();
    let out = agentcompass_e2e::Outcome::of(out);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("(60 tasks, {published} reused)")),
        "{}",
        out.stderr
    );
}
