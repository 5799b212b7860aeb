//! Environment providers end to end: the example benchmark under `sandbox`, environments kept
//! with `--keep-environment` listed and released by `env list` / `env close`.

use std::fs;
use std::path::PathBuf;

use agentcompass_e2e::Workspace;
use serde_json::Value;

fn run_dir(stdout: &str) -> PathBuf {
    PathBuf::from(stdout.lines().last().expect("run dir"))
}

#[test]
fn the_example_benchmark_runs_under_the_sandbox() {
    let ws = Workspace::new();
    let out = ws.run(
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "calc",
            "--env",
            "sandbox",
            "--benchmark-params",
            r#"{"size": 6}"#,
            "--progress",
            "none",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out.stdout);
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["series"][0]["value"], 1.0);
    assert_eq!(
        fs::read_dir(run.join(".env-resources")).unwrap().count(),
        0,
        "every sandbox closed"
    );
}

#[test]
fn kept_environments_are_listed_and_closed() {
    let ws = Workspace::new();
    let out = ws.run(
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "calc",
            "--env",
            "sandbox",
            "--benchmark-params",
            r#"{"size": 3}"#,
            "--keep-environment",
            "--progress",
            "none",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("env close"),
        "the run says where the environments are: {out:?}"
    );
    let listed = ws.run(&["env", "list"], &[]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let records: Value = serde_json::from_str(&listed.stdout).unwrap();
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 3, "{records:?}");
    assert!(records
        .iter()
        .all(|r| r["provider"] == "sandbox" && r["state"] == "active"));
    let dirs: Vec<PathBuf> = records
        .iter()
        .map(|r| PathBuf::from(r["close_params"]["dir"].as_str().unwrap()))
        .collect();
    assert!(
        dirs.iter().all(|d| d.is_dir()),
        "kept sandboxes still exist"
    );

    let one = records[0]["id"].as_str().unwrap();
    let closed = ws.run(&["env", "close", "--id", one], &[]);
    assert_eq!(closed.code, 0, "{closed:?}");
    let closed = ws.run(&["env", "close", "--all"], &[]);
    assert_eq!(closed.code, 0, "{closed:?}");
    assert!(
        dirs.iter().all(|d| !d.exists()),
        "env close removed every sandbox"
    );
    let listed = ws.run(&["env", "list"], &[]);
    assert_eq!(listed.stdout.trim(), "[]");
    let unknown = ws.run(&["env", "close", "--id", "nope"], &[]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
}
