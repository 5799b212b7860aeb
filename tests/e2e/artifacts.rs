//! Submission artifacts end to end (seed 004): collection into `attempt-N/artifacts/` with an
//! `artifacts.manifest.json` whose sizes and sha256 match the stored files, fresh evaluation
//! restoring the collected outputs, and reuse / evaluation resume refusing corrupt artifacts.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{
    example_run, field_strs, find_element, progress_events, read_json, run_dir, sha256_hex,
    task_dirs, task_phases, Outcome, Workspace,
};
use serde_json::{json, Value};

fn task_dir(run: &Path, task_id: &str) -> PathBuf {
    ["normal", "error", "fatal"]
        .iter()
        .flat_map(|state| task_dirs(run, state))
        .find(|d| read_json(&d.join("task.json"))["task_id"] == task_id)
        .unwrap_or_else(|| panic!("task {task_id} is not published in {}", run.display()))
}

/// The sandbox submission: `/app/out` (excluding `*.tmp`), `/app/result.json` and a missing
/// `/app/none`, plus the conventional `/logs/artifacts`.
fn sandbox_execution_params() -> String {
    json!({
        "save_artifacts": true,
        "artifacts": [
            {"source": "/app/out", "destination": "out", "exclude": ["*.tmp"]},
            "/app/result.json",
            "/app/none",
        ],
        "artifact_collect": [{
            "command": "mkdir -p /app/out/sub /logs/artifacts && printf hello > /app/out/a.txt \
                && printf x > /app/out/b.tmp && head -c 3000 /dev/urandom > /app/out/sub/c.bin \
                && printf '{}' > /app/result.json && printf art > /logs/artifacts/z.txt",
            "timeout_seconds": 30,
        }],
    })
    .to_string()
}

fn sandbox_run(ws: &Workspace, size: u32, extra: &[&str]) -> Outcome {
    let params = format!(r#"{{"size": {size}}}"#);
    let execution = sandbox_execution_params();
    let mut args = example_run(&[
        "--env",
        "sandbox",
        "--benchmark-params",
        &params,
        "--execution-params",
        &execution,
        "--progress",
        "none",
    ]);
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

/// Checks every collected file of the attempt against its manifest record; returns the
/// manifest.
fn check_manifest(attempt: &Path) -> Value {
    let manifest = read_json(&attempt.join("artifacts.manifest.json"));
    assert_eq!(manifest["schema_version"], 1);
    assert_eq!(manifest["complete"], true, "{manifest:#}");
    let root = attempt.join("artifacts");
    let mut total = 0;
    for entry in manifest["entries"].as_array().unwrap() {
        if entry["status"] != "collected" {
            continue;
        }
        let local = root.join(entry["destination"].as_str().unwrap());
        if entry["kind"] == "file" {
            assert_eq!(
                fs::metadata(&local).unwrap().len(),
                entry["bytes"].as_u64().unwrap()
            );
            assert_eq!(sha256_hex(&local), entry["sha256"].as_str().unwrap());
        } else {
            for file in entry["files"].as_array().unwrap() {
                let path = local.join(file["path"].as_str().unwrap());
                assert_eq!(
                    fs::metadata(&path).unwrap().len(),
                    file["bytes"].as_u64().unwrap(),
                    "{}",
                    path.display()
                );
                assert_eq!(
                    sha256_hex(&path),
                    file["sha256"].as_str().unwrap(),
                    "{}",
                    path.display()
                );
            }
        }
        total += entry["bytes"].as_u64().unwrap();
    }
    assert_eq!(manifest["total_bytes"].as_u64().unwrap(), total);
    manifest
}

#[test]
fn collection_writes_a_manifest_matching_the_stored_files() {
    let ws = Workspace::new();
    let out = sandbox_run(&ws, 2, &[]).expect_code(0);
    let run = run_dir(&out);
    assert_eq!(task_dirs(&run, "normal").len(), 2, "{out:?}");
    for task in task_dirs(&run, "normal") {
        let attempt = task.join("attempt-1");
        let manifest = check_manifest(&attempt);
        let entries = manifest["entries"].as_array().unwrap();
        let by_source = |source: &str| {
            entries
                .iter()
                .find(|e| e["source"] == source)
                .unwrap_or_else(|| panic!("{source} in {manifest:#}"))
        };
        let logs = by_source("/logs/artifacts");
        assert_eq!(logs["status"], "collected");
        assert_eq!(logs["files"][0]["path"], "z.txt");
        let out_dir = by_source("/app/out");
        assert_eq!(out_dir["kind"], "directory");
        assert_eq!(out_dir["entries"], 2);
        assert_eq!(out_dir["excluded"], 1);
        assert_eq!(out_dir["bytes"], 3005);
        let files: Vec<&str> = field_strs(&out_dir["files"], "path");
        assert_eq!(files, ["a.txt", "sub/c.bin"]);
        assert!(!attempt.join("artifacts/out/b.tmp").exists(), "excluded");
        let result_file = by_source("/app/result.json");
        assert_eq!(result_file["kind"], "file");
        assert_eq!(result_file["destination"], "app/result.json");
        assert_eq!(by_source("/app/none")["status"], "missing");
        assert!(!attempt.join("artifacts/app/none").exists());
        // The result keeps the same record.
        let result = read_json(&attempt.join("result.json"));
        assert_eq!(result["artifacts"]["declared_artifacts"], manifest);
    }
}

#[test]
fn a_limit_violation_is_a_fatal_capture_error() {
    let ws = Workspace::new();
    let execution = json!({
        "save_artifacts": true,
        "artifacts": ["/app/many"],
        "artifact_collect": [{"command": "mkdir -p /app/many && for i in 1 2 3 4 5 6; do touch /app/many/f$i; done"}],
        "artifact_limits": {"max_files": 4},
    })
    .to_string();
    let out = ws.run(
        &example_run(&[
            "--env",
            "sandbox",
            "--benchmark-params",
            r#"{"size": 1}"#,
            "--execution-params",
            &execution,
            "--progress",
            "none",
        ]),
        &[],
    );
    let run = run_dir(&out);
    let fatal = task_dirs(&run, "fatal");
    assert_eq!(fatal.len(), 1, "{out:?}");
    let attempt = fatal[0].join("attempt-1");
    let result = read_json(&attempt.join("result.json"));
    let issue = find_element(&result["issues"], "code", "artifact_limit_exceeded");
    assert_eq!(issue["severity"], "fatal");
    let message = issue["message"].as_str().unwrap();
    assert!(
        message.contains("max_files") && message.contains("/app/many"),
        "{message}"
    );
    let manifest = read_json(&attempt.join("artifacts.manifest.json"));
    assert_eq!(manifest["complete"], false);
    let many = find_element(&manifest["entries"], "source", "/app/many");
    assert_eq!(many["status"], "failed");
    assert!(!attempt.join("artifacts/app/many").exists());
}

#[test]
fn fresh_evaluation_restores_the_collected_outputs() {
    let ws = Workspace::new();
    let target = ws.root().join("host-submission");
    let target_str = target.display().to_string();
    let execution = json!({
        "artifacts": [{"source": target_str, "destination": "submission", "exclude": ["*.tmp"]}],
        "artifact_collect": [{
            "command": format!(
                "mkdir -p '{target_str}/sub' && printf hello > '{target_str}/a.txt' \
                 && printf stale > '{target_str}/b.tmp' && printf deep > '{target_str}/sub/c.txt' \
                 && printf hidden > '{target_str}/.hidden.tmp'"
            ),
        }],
    })
    .to_string();
    let out = ws.run_ok(
        &example_run(&[
            "--benchmark-params",
            r#"{"size": 1}"#,
            "--env-params",
            r#"{"evaluation_environment_mode": "fresh"}"#,
            "--execution-params",
            &execution,
            "--progress",
            "none",
        ]),
        &[],
    );
    let run = run_dir(&out);
    let task = task_dir(&run, "arith-0000");
    let manifest = check_manifest(&task.join("attempt-1"));
    let entries = manifest["entries"].as_array().unwrap();
    assert_eq!(entries[0]["source"], "/logs/artifacts");
    assert_eq!(
        entries[0]["status"], "missing",
        "the conventional directory is optional"
    );
    assert_eq!(entries[1]["source"], target_str.as_str());
    assert_eq!(entries[1]["excluded"], 2);
    let phases = task_phases(&progress_events(&run), "arith-0000");
    let restore = phases.iter().position(|p| p == "restore_artifacts");
    let evaluate = phases.iter().position(|p| p == "evaluate");
    assert!(
        restore.is_some() && restore < evaluate,
        "restored before evaluate: {phases:?}"
    );
    // The restore emptied the target (removing the excluded, never-collected files, hidden
    // ones included) and put back exactly the collected outputs.
    assert!(target.is_dir());
    assert_eq!(fs::read(target.join("a.txt")).unwrap(), b"hello");
    assert_eq!(fs::read(target.join("sub/c.txt")).unwrap(), b"deep");
    assert!(!target.join("b.tmp").exists());
    assert!(!target.join(".hidden.tmp").exists());
    let result = read_json(&task.join("attempt-1/result.json"));
    assert_eq!(result["metrics"]["correct"], true, "{result:#}");
}

#[test]
fn fresh_evaluation_in_the_sandbox_restores_and_scores() {
    let ws = Workspace::new();
    let out = sandbox_run(
        &ws,
        2,
        &[
            "--env-params",
            r#"{"evaluation_environment_mode": "fresh"}"#,
        ],
    )
    .expect_code(0);
    let run = run_dir(&out);
    assert_eq!(task_dirs(&run, "normal").len(), 2, "{out:?}");
    let events = progress_events(&run);
    for task in ["arith-0000", "arith-0001"] {
        let phases = task_phases(&events, task);
        assert!(
            phases.contains(&"restore_artifacts".to_string()),
            "{phases:?}"
        );
    }
    assert_eq!(
        read_json(&run.join("metrics.json"))["series"][0]["value"],
        1.0
    );
}

/// Flips the first byte of `path`.
fn flip_first_byte(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    bytes[0] ^= 0x01;
    fs::write(path, bytes).unwrap();
}

#[test]
fn reuse_reruns_a_task_whose_artifact_is_corrupt() {
    let ws = Workspace::new();
    let first = sandbox_run(&ws, 3, &[]).expect_code(0);
    let first_run = run_dir(&first);
    let corrupt_task = task_dir(&first_run, "arith-0001");
    let corrupt = corrupt_task.join("attempt-1/artifacts/out/sub/c.bin");
    flip_first_byte(&corrupt);
    let first_bytes: Vec<u8> =
        fs::read(task_dir(&first_run, "arith-0000").join("attempt-1/artifacts/out/sub/c.bin"))
            .unwrap();

    let again = sandbox_run(&ws, 3, &["--reuse"]).expect_code(0);
    let second = run_dir(&again);
    assert_ne!(second, first_run);
    let events = progress_events(&second);
    let reuse = events
        .iter()
        .find(|e| e["event"] == "reuse_loaded")
        .expect("reuse_loaded");
    assert_eq!(reuse["payload"]["reused_tasks"], 2, "{reuse:#}");
    assert_eq!(reuse["payload"]["tasks_to_run"], 1);
    let started: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "task_started")
        .map(|e| e["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["arith-0001"], "only the corrupt task reran");
    let log = fs::read_to_string(second.join("run.log")).unwrap_or_default() + &again.stderr;
    assert!(
        log.contains("cannot reuse task arith-0001") && log.contains("c.bin"),
        "the warning names the task and the file: {log}"
    );
    // The reused tasks kept their bytes; the rerun one has a fresh, consistent collection.
    let reused = task_dir(&second, "arith-0000").join("attempt-1");
    check_manifest(&reused);
    assert_eq!(
        fs::read(reused.join("artifacts/out/sub/c.bin")).unwrap(),
        first_bytes
    );
    let rerun = task_dir(&second, "arith-0001").join("attempt-1");
    check_manifest(&rerun);
    assert_ne!(
        read_json(&rerun.join("artifacts.manifest.json")),
        read_json(&corrupt_task.join("attempt-1/artifacts.manifest.json")),
        "the rerun collected new random bytes"
    );
    assert_eq!(task_dirs(&second, "normal").len(), 3);
}

/// Simulates a crash between an attempt's evaluation checkpoint and its publication.
fn unpublish(run: &Path, task_id: &str) -> PathBuf {
    let dir = task_dir(run, task_id);
    let running = run.join("details/running").join(dir.file_name().unwrap());
    fs::rename(&dir, &running).unwrap();
    fs::remove_file(running.join("task.json")).unwrap();
    fs::remove_file(running.join("attempt-1/result.json")).unwrap();
    running
}

#[test]
fn evaluation_resume_declines_a_checkpoint_with_corrupt_artifacts() {
    let ws = Workspace::new();
    let first = sandbox_run(&ws, 3, &["--checkpoint-after-seconds", "0"]).expect_code(0);
    let first_run = run_dir(&first);
    let intact = unpublish(&first_run, "arith-0000");
    assert!(intact.join("attempt-1/checkpoint.json").is_file());
    let broken = unpublish(&first_run, "arith-0002");
    fs::remove_file(broken.join("attempt-1/artifacts/out/a.txt")).unwrap();

    let again = sandbox_run(&ws, 3, &["--reuse"]).expect_code(0);
    let second = run_dir(&again);
    let events = progress_events(&second);
    let intact_phases = task_phases(&events, "arith-0000");
    assert!(
        !intact_phases.contains(&"run_harness".to_string()),
        "an intact checkpoint resumes only the evaluation: {intact_phases:?}"
    );
    let broken_phases = task_phases(&events, "arith-0002");
    assert!(
        broken_phases.contains(&"recover_evaluation".to_string())
            && broken_phases.contains(&"run_harness".to_string()),
        "a corrupt checkpoint reruns the agent: {broken_phases:?}"
    );
    let log = fs::read_to_string(second.join("run.log")).unwrap_or_default() + &again.stderr;
    assert!(
        log.contains("not resuming the evaluation of task arith-0002") && log.contains("a.txt"),
        "{log}"
    );
    check_manifest(&task_dir(&second, "arith-0000").join("attempt-1"));
    check_manifest(&task_dir(&second, "arith-0002").join("attempt-1"));
    assert_eq!(task_dirs(&second, "normal").len(), 3);
}
