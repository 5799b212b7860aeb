//! The terminal summary of a run whose model failed (issue 36 §2): worded as what happened
//! (no "evaluation failed", no "1 attempts"), each repeated warning printed once and counted,
//! the tokens and cost of a run that made calls, and the exact command that runs the tasks
//! not scored again — which, run as the shell reads it, does.

use std::path::Path;
use std::process::Command;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{pack_run, Packs, QaSetup, Workspace, THREE_QUESTIONS};
use serde_json::json;

#[test]
fn a_failed_model_is_said_plainly_and_the_rerun_command_runs_the_tasks_again() {
    let setup = QaSetup::new(THREE_QUESTIONS);
    // A port that is closed now and serves the model later.
    let port = agentcompass_e2e::closed_loopback_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = setup.run(
        &url,
        "k",
        &[
            "--no-endpoint-check",
            "--run-id",
            "first",
            "--model-params",
            r#"{"max_retries": 0, "pricing": {"input": 3.0, "output": 15.0}}"#,
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let stderr = out.stderr.replace(&port.to_string(), "PORT");
    let headline = stderr
        .lines()
        .find(|l| l.starts_with("failed — "))
        .unwrap_or("");
    assert_eq!(
        headline,
        "failed — correct (native@1): n/a — 3 of 3 tasks invalidated (3 model); no task was \
         scored (3 tasks, 0 reused)"
    );
    assert!(!stderr.contains("evaluation failed"), "{stderr}");
    assert!(stderr.contains("(gave up after 1 attempt)"), "{stderr}");
    assert!(!stderr.contains("1 attempts"), "{stderr}");
    // The harness's warning is printed for one task and counted for the others.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: openai_chat: model call failed"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    // The count names the tasks whose warning was not printed, not the one that was.
    let printed = warnings[0]
        .split("task_id=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no task_id: {}", warnings[0]));
    let others: Vec<&str> = ["add", "cap", "mul"]
        .into_iter()
        .filter(|task| *task != printed)
        .collect();
    let repeat = stderr
        .lines()
        .find(|l| l.starts_with("warning: 2 more like this one"))
        .unwrap_or_else(|| panic!("no count line: {stderr}"));
    assert!(
        repeat.starts_with(&format!(
            "warning: 2 more like this one, not printed (tasks {}, {}): openai_chat: model call \
             failed",
            others[0], others[1]
        )),
        "{repeat}"
    );
    assert!(!repeat.contains("task_id="), "{repeat}");
    let rerun = stderr
        .lines()
        .find_map(|l| l.strip_prefix("to run the tasks not scored again: "))
        .unwrap_or_else(|| panic!("no rerun line: {stderr}"));
    assert!(rerun.ends_with(" --reuse first --rerun model"), "{rerun}");
    assert!(!rerun.contains("--run-id"), "{rerun}");

    // The endpoint comes up on that port; the suggested command, as a shell reads it.
    let server = ScriptedServer::start_on(
        port,
        &json!({"rules": [
            {"match": {"last_user_contains": "2+2"}, "responses": [{"text": "4", "usage": {"prompt_tokens": 1000, "completion_tokens": 10}}]},
            {"match": {"last_user_contains": "6*7"}, "responses": [{"text": "42"}]},
            {"match": {}, "responses": [{"text": "Paris"}]}
        ]}),
    )
    .expect("server");
    let rerun = rerun.replace("PORT", &port.to_string());
    let out = Command::new("sh")
        .arg("-c")
        .arg(&rerun)
        .current_dir(&setup.ws.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &setup.ws.home)
        .env("E2E_MODEL_KEY", "k")
        .output()
        .expect("sh");
    let out = agentcompass_e2e::Outcome::of(out);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("correct (native@1): 100.00% (3/3 evaluated)"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 3);
    // The run's usage and cost on the terminal, as summary.md has them.
    assert!(
        out.stderr.contains(
            "Model usage: 3 calls · 1000 prompt tokens (0 cached) · 10 completion tokens · $0.0032"
        ),
        "{}",
        out.stderr
    );
}

/// The bundled Harbor task `name`, copied under `tasks/` of the workspace.
fn harbor_task(ws: &Workspace, name: &str) -> std::path::PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/harbor");
    let dir = ws.root().join("tasks").join(name);
    agentcompass_e2e::copy_tree(&examples.join(name), &dir);
    dir
}

/// Failures a rerun cannot get past (issue 58): `host_process` cannot run Harbor tasks (one
/// refused for its network policy, one by the benchmark), and a task without its reference
/// solution cannot be prepared for `oracle` in any environment. The footer names no `--rerun` for them; it
/// says what to change instead.
#[test]
fn failures_a_rerun_cannot_fix_get_the_fix_not_a_rerun_command() {
    let ws = Workspace::new();
    let packs = Packs::harbor();
    let public = harbor_task(&ws, "hello-file");
    let toml = std::fs::read_to_string(public.join("task.toml")).unwrap();
    std::fs::write(
        public.join("task.toml"),
        toml.replace("network_mode = \"no-network\"", "network_mode = \"public\""),
    )
    .unwrap();
    harbor_task(&ws, "fizzbuzz");
    let params = json!({"path": ws.root().join("tasks")}).to_string();
    let run = |env: &str| {
        let args = pack_run(
            &packs,
            ["harbor", "oracle", "m"],
            &params,
            &["--env", env, "--progress", "none"],
        );
        ws.run(&args, &[]).expect_code(1)
    };
    let out = run("host_process");
    assert!(
        !out.stderr.contains("--rerun"),
        "no rerun can succeed in host_process: {}",
        out.stderr
    );
    let fix = out
        .stderr_lines("2 tasks not scored would fail the same way if run again")
        .join("\n");
    assert!(
        fix.contains("(prepare_failed, unsupported)") && fix.contains("--env sandbox"),
        "{}",
        out.stderr
    );

    // No reference solution: the benchmark refuses to prepare it in the sandbox too.
    std::fs::remove_dir_all(ws.root().join("tasks/fizzbuzz")).unwrap();
    std::fs::remove_dir_all(public.join("solution")).unwrap();
    let out = run("sandbox");
    assert!(!out.stderr.contains("--rerun"), "{}", out.stderr);
    let fix = out.stderr_lines("1 task not scored would fail the same way if run again");
    assert_eq!(fix.len(), 1, "{}", out.stderr);
    assert!(
        fix[0].ends_with(
            "(prepare_failed): the benchmark could not prepare it in the environment; the issue \
             above says why"
        ),
        "{}",
        fix[0]
    );
}
