//! Environment providers end to end: the example benchmark under `sandbox`, environments kept
//! with `--keep-environment` listed and released by `env list` / `env close`.

use std::fs;
use std::path::PathBuf;

use agentcompass_e2e::{example_run, Workspace};
use serde_json::Value;

fn run_dir(stdout: &str) -> PathBuf {
    PathBuf::from(stdout.lines().last().expect("run dir"))
}

#[test]
fn the_example_benchmark_runs_under_the_sandbox() {
    let ws = Workspace::new();
    let out = ws.run_ok(
        &example_run(&[
            "--env",
            "sandbox",
            "--benchmark-params",
            r#"{"size": 6}"#,
            "--progress",
            "none",
        ]),
        &[],
    );
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
    let out = ws.run_ok(
        &example_run(&[
            "--env",
            "sandbox",
            "--benchmark-params",
            r#"{"size": 3}"#,
            "--keep-environment",
            "--progress",
            "none",
        ]),
        &[],
    );
    assert!(
        out.stderr.contains("env close"),
        "the run says where the environments are: {out:?}"
    );
    let listed = ws.run_ok(&["env", "list"], &[]);
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
    ws.run_ok(&["env", "close", "--id", one], &[]);
    ws.run_ok(&["env", "close", "--all"], &[]);
    assert!(
        dirs.iter().all(|d| !d.exists()),
        "env close removed every sandbox"
    );
    let listed = ws.run(&["env", "list"], &[]);
    assert_eq!(listed.stdout.trim(), "[]");
    ws.run_expect(2, &["env", "close", "--id", "nope"], &[]);
}

fn docker_params() -> String {
    let host = std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST").expect(
        "AGENTCOMPASS_TEST_DOCKER_HOST is not set: run the tests with ./dev.sh test, which starts a private Docker daemon",
    );
    serde_json::json!({"setup": {"image": "agentcompass-test/busybox:1"}, "docker_host": host})
        .to_string()
}

/// Containers of the private daemon carrying our label, opened for example tasks.
fn managed_containers() -> Vec<String> {
    let host = std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST").unwrap_or_default();
    let out = std::process::Command::new("docker")
        .env("DOCKER_HOST", host)
        .args([
            "ps",
            "-a",
            "-q",
            "--filter",
            "label=agentcompass.managed=true",
            "--filter",
            "name=agentcompass-arith-",
        ])
        .output()
        .expect("docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_example_benchmark_runs_under_docker_and_a_crash_leaves_nothing_after_env_close() {
    let ws = Workspace::new();
    let docker_plugins = agentcompass_e2e::PluginDirs::new();
    let packaged = docker_plugins.package("p", "docker-provider");
    let params = docker_params();
    let base = |size: &str| {
        vec![
            "--plugin-dir".to_string(),
            packaged.display().to_string(),
            "run".into(),
            "example_exact_match".into(),
            "example_calculator".into(),
            "calc".into(),
            "--env".into(),
            "docker".into(),
            "--env-params".into(),
            params.clone(),
            "--benchmark-params".into(),
            format!(r#"{{"size": {size}}}"#),
            "--progress".into(),
            "none".into(),
        ]
    };
    let args = base("4");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run_ok(&refs, &[]);
    let metrics: Value = serde_json::from_str(
        &fs::read_to_string(run_dir(&out.stdout).join("metrics.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(metrics["series"][0]["value"], 1.0);
    assert!(managed_containers().is_empty(), "every container removed");

    // A crash (SIGKILL) while containers are open: env list shows them, env close removes them.
    let mut args = base("20");
    args.extend([
        "--harness-params".into(),
        r#"{"delay_ms": 30000}"#.into(),
        "--task-concurrency".into(),
        "2".into(),
    ]);
    let mut child = ws
        .command()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let records = || {
        let mut count = 0;
        for namespace in fs::read_dir(ws.cwd.join("results"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for run in fs::read_dir(namespace.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                // Opened sessions' records (an `opening-` record is of one still opening).
                count += fs::read_dir(run.path().join(".env-resources"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|r| !r.file_name().to_string_lossy().starts_with("opening-"))
                    .count();
            }
        }
        count
    };
    // Wait until both containers are running and recorded, then crash.
    while (managed_containers().len() < 2 || records() < 2) && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        managed_containers().len(),
        2,
        "two containers were open at the crash"
    );
    let plugin_args = ["--plugin-dir", packaged.to_str().unwrap()];
    let listed = ws.run(&[&plugin_args[..], &["env", "list"]].concat(), &[]);
    let records: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(records.as_array().unwrap().len(), 2, "{listed:?}");
    ws.run_ok(
        &[&plugin_args[..], &["env", "close", "--all"]].concat(),
        &[],
    );
    assert!(
        managed_containers().is_empty(),
        "no container left in docker ps -a"
    );
}
