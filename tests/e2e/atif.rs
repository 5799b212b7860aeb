//! Issue 57: every attempt writes an ATIF trajectory (`agent/trajectory.json`, a step's under
//! `steps/<step>/`) that Harbor 0.25's own validator accepts and its pydantic `Trajectory`
//! loads, with the attempt's recorded token totals. The installed CLIs' attempts are checked
//! in `installed_agents`; here: terminus (with a tool call that fails), the oracle of a
//! multi-step task, `openai_chat`, and the real Claude Code starting a subagent, all in the
//! sandbox.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::atif::assert_harbor_accepts_atif;
use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    ok_questions, pack_run, published_results, read_json, run_dir, terminus_args, Packs, QaSetup,
    Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The demo's terminus script with a failing command first on `hello-file`.
fn script_with_a_failing_call() -> Value {
    let text = fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap();
    let mut script: Value = serde_json::from_str(&text).unwrap();
    let hello = script["rules"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["match"]["any_message_contains"] == json!("/app/hello.txt"))
        .unwrap();
    let failing = json!({"text": "Is it there already?",
        "tool_calls": [{"name": "bash", "arguments": {"command": "cat /app/no-such-file.txt"}}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 9}});
    hello["responses"]
        .as_array_mut()
        .unwrap()
        .insert(0, failing);
    script
}

#[test]
fn terminus_attempts_write_atif_that_harbor_accepts_a_failed_call_included() {
    let script = script_with_a_failing_call();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_ATIF_KEY}");
    args.extend(["--progress", "none"]);
    let out = ws.run(&args, &[("E2E_ATIF_KEY", &key)]).expect_code(0);
    let run = run_dir(&out);
    let files = assert_harbor_accepts_atif(&run, 3);
    assert_eq!(files.len(), 3, "{files:?}");
    let hello = files
        .iter()
        .find(|f| f.to_string_lossy().contains("hello-file"))
        .unwrap();
    let doc = read_json(hello);
    assert_eq!(doc["agent"]["name"], json!("terminus-2"));
    assert_eq!(doc["agent"]["model_name"], json!("scripted-model"));
    let sources: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(&sources[..3], ["system", "user", "agent"], "{sources:?}");
    // The failed call: its command, its result answering it by id, its exit code.
    let first = &doc["steps"][2];
    let call = &first["tool_calls"][0];
    assert_eq!(call["function_name"], json!("bash"));
    assert_eq!(
        call["arguments"]["command"],
        json!("cat /app/no-such-file.txt")
    );
    let result = &first["observation"]["results"][0];
    assert_eq!(result["source_call_id"], call["tool_call_id"]);
    assert_eq!(result["extra"]["exit_code"], json!(1), "{result}");
    assert!(
        result["content"].as_str().unwrap().contains("No such file"),
        "{result}"
    );
    assert_eq!(first["metrics"]["prompt_tokens"], json!(200));
}

#[test]
fn each_step_of_a_multi_step_task_has_its_own_atif_and_the_oracle_too() {
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let params = json!({
        "path": repo_root().join("examples/harbor-features"),
        "sample_ids": ["step-healthcheck"],
    })
    .to_string();
    let args = pack_run(
        &plugins,
        ["harbor", "oracle", "m"],
        &params,
        &[
            "--env",
            "sandbox",
            "--env-params",
            r#"{"host_root": true}"#,
            "--progress",
            "none",
        ],
    );
    let out = ws.run(&args, &[]).expect_code(0);
    let run = run_dir(&out);
    let files = assert_harbor_accepts_atif(&run, 2);
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(&run)
                .unwrap()
                .components()
                .skip(3)
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    assert_eq!(
        names,
        [
            "attempt-1/steps/start/agent/trajectory.json",
            "attempt-1/steps/use/agent/trajectory.json"
        ]
    );
    let doc = read_json(&files[0]);
    assert_eq!(doc["agent"]["name"], json!("oracle"));
    let call = &doc["steps"][1]["tool_calls"][0];
    assert_eq!(call["function_name"], json!("bash"), "{doc}");
}

#[test]
fn openai_chat_attempts_write_atif_with_their_usage() {
    let setup = QaSetup::new(&ok_questions(2));
    let server = ScriptedServer::start(
        &json!({"require_key": "k-atif", "rules": [{"responses": [
            {"text": "ok", "usage": {"prompt_tokens": 40, "completion_tokens": 2, "cached_tokens": 8}}
        ]}]}),
        None,
    )
    .unwrap();
    let out = setup.run(&server.base_url(), "k-atif", &[]).expect_code(0);
    let run = run_dir(&out);
    let files = assert_harbor_accepts_atif(&run, 2);
    assert_eq!(files.len(), 2);
    for (task, (attempt, _)) in published_results(&run) {
        let doc = read_json(&attempt.join("agent/trajectory.json"));
        assert_eq!(doc["agent"]["name"], json!("openai_chat"), "{task}");
        assert_eq!(doc["final_metrics"]["total_prompt_tokens"], json!(40));
        assert_eq!(doc["final_metrics"]["total_cached_tokens"], json!(8));
    }
}

/// The script of a Claude Code run that starts a subagent for `hello-file`: the main agent
/// calls the `Agent` tool, the subagent (its prompt names SUBAGENT-TASK) writes the file
/// and answers, the main agent finishes.
fn claude_subagent_script() -> Value {
    let messages = |marker: &str, turns: u64| json!({"path": "/v1/messages", "any_user_contains": marker, "assistant_turns": turns});
    json!({"rules": [
        {"match": messages("SUBAGENT-TASK", 0), "response": {
            "tool_calls": [{"name": "Bash", "arguments": {
                "command": "printf 'Hello, world!\\n' > /app/hello.txt",
                "description": "write hello.txt"}}],
            "usage": {"prompt_tokens": 60, "completion_tokens": 9}}},
        {"match": messages("SUBAGENT-TASK", 1), "response": {
            "text": "Wrote /app/hello.txt.",
            "usage": {"prompt_tokens": 80, "completion_tokens": 5}}},
        {"match": messages("/app/hello.txt", 0), "response": {
            "tool_calls": [{"name": "Agent", "arguments": {
                "description": "write the greeting",
                "prompt": "SUBAGENT-TASK: create /app/hello.txt holding the line Hello, world!",
                "subagent_type": "general-purpose",
                "run_in_background": false}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20}}},
        {"match": messages("/app/hello.txt", 1), "response": {
            "text": "The subagent created /app/hello.txt.",
            "usage": {"prompt_tokens": 140, "completion_tokens": 8}}}
    ]})
}

#[test]
fn a_claude_code_subagent_is_a_subagent_trajectory_that_harbor_accepts() {
    let cache = std::env::var("AGENTCOMPASS_TEST_INSTALL_CACHE")
        .expect("AGENTCOMPASS_TEST_INSTALL_CACHE: run the tests with ./dev.sh test");
    let server = ScriptedServer::start(&claude_subagent_script(), None).unwrap();
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let params = json!({
        "path": repo_root().join("examples/harbor"),
        "sample_ids": ["hello-file"],
    })
    .to_string();
    let url = server.url();
    let mut args = pack_run(
        &plugins,
        ["harbor", "claude_code", "m-test"],
        &params,
        &[
            "--env",
            "sandbox",
            "--progress",
            "none",
            "--model-base-url",
            &url,
        ],
    );
    args.extend([
        "--model-api-protocol",
        "anthropic",
        "--model-api-key",
        "k-sub",
    ]);
    let mut full = vec!["--install-cache-dir", cache.as_str()];
    full.extend(args);
    let out = ws.run(&full, &[]);
    let run = run_dir(&out);
    let results = published_results(&run);
    let (attempt, result) = &results["hello-file"];
    assert_eq!(
        result["metrics"]["reward"],
        json!(1.0),
        "{out:?} {result:#}"
    );
    let files = assert_harbor_accepts_atif(&run, 1);
    assert_eq!(files.len(), 1);
    let doc = read_json(&attempt.join("agent/trajectory.json"));
    let subs = doc["subagent_trajectories"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(subs.len(), 1, "{doc:#}");
    let sub = &subs[0];
    let commands: Vec<String> = sub["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["tool_calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["arguments"]["command"].as_str().map(str::to_string))
        .collect();
    assert!(
        commands.iter().any(|c| c.contains("/app/hello.txt")),
        "{sub:#}"
    );
    // The main agent's call that started it names it.
    let referenced: Vec<&Value> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["observation"]["results"].as_array().into_iter().flatten())
        .filter_map(|r| {
            r["subagent_trajectory_ref"][0]["trajectory_id"]
                .as_str()
                .map(|_| r)
        })
        .collect();
    assert_eq!(referenced.len(), 1, "{doc:#}");
    assert_eq!(
        referenced[0]["subagent_trajectory_ref"][0]["trajectory_id"],
        sub["trajectory_id"]
    );
}
