//! Services beside a Harbor task that need a model (issue 56), end to end in the tests'
//! engine: a simulated user written as Harbor's cookbook `simulated-user` recipe writes it —
//! an MCP server in a sidecar whose `ask_user` tool asks a model, its key named in the
//! service's environment as `${ANTHROPIC_API_KEY}` — gets the run's model endpoint through
//! the attempt's relay: its call is metered with the attempt's, waits while the run is paused
//! (`ctl pause`), and its container holds no key (`docker inspect`). A service naming a key
//! nobody set is refused before the first task.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{host_bin, published_results, run_dir, Packs, Workspace};
use serde_json::{json, Value};

use crate::agent_tools::{docker_run_args, mcp_task, required, tag_tool_base, KEY, MARKER};
use crate::harbor_images::engine_cli;

/// The simulated user's answer, scripted.
const USER_ANSWER: &str = "USER-SAYS-JSON-ARRAY";

/// The question the agent asks the simulated user.
const QUESTION: &str = "Which output format do you want?";

/// The `simulated-user` task `name` in `ws` (the `mcp-tools` task with its server renamed
/// `user-server` and the model key in its environment, as the cookbook writes it): the
/// directory of the tasks.
fn simulated_user_task(ws: &Workspace, name: &str) -> PathBuf {
    let tasks = mcp_task(ws, name);
    let task = tasks.join(name);
    let toml = fs::read_to_string(task.join("task.toml")).unwrap();
    fs::write(
        task.join("task.toml"),
        toml.replace("name = \"tools\"", "name = \"user-server\"")
            .replace("http://tools:8000/mcp", "http://user-server:8000/mcp"),
    )
    .unwrap();
    let compose = fs::read_to_string(task.join("environment/docker-compose.yaml")).unwrap();
    fs::write(
        task.join("environment/docker-compose.yaml"),
        compose
            .replace(
                "      tools:\n        condition",
                "      user-server:\n        condition",
            )
            .replace("  tools:\n    build:", "  user-server:\n    build:")
            .replace(
                "    expose:\n",
                "    environment:\n      - ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY}\n      \
                 - SIM_USER_MODEL=${SIM_USER_MODEL:-}\n    expose:\n",
            ),
    )
    .unwrap();
    fs::write(
        task.join("tests/test.sh"),
        format!(
            "#!/bin/bash\nif [ \"$(cat /app/answer.txt 2>/dev/null)\" = \"{USER_ANSWER}\" ]; then \
             echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
        ),
    )
    .unwrap();
    tasks
}

/// Claude Code asks the user (its first reply after `first_delay_ms`), writes the answer,
/// finishes; the simulated user's own call (one message, no system prompt of Claude Code's)
/// gets [`USER_ANSWER`].
fn simulated_user_script(first_delay_ms: u64) -> Value {
    let path = "/v1/messages";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "last_user_contains": QUESTION, "assistant_turns": 0},
         "response": {"text": USER_ANSWER, "usage": {"prompt_tokens": 20, "completion_tokens": 5}}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__user-server__ask_user",
                                      "arguments": {"question": QUESTION}}],
                      "usage": usage, "delay_ms": first_delay_ms}},
        {"match": {"path": path, "any_user_contains": USER_ANSWER, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "Bash", "arguments": {
             "command": format!("printf '%s' '{USER_ANSWER}' > /app/answer.txt"),
             "description": "write the answer"}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"text": "Done.", "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]})
}

/// The simulated user's calls that reached `server`.
fn user_calls(server: &ScriptedServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r["body"].to_string().contains(QUESTION))
        .filter(|r| {
            r["body"]["messages"]
                .as_array()
                .is_some_and(|m| m.len() == 1)
        })
        .count()
}

/// A simulated user in a sidecar, written as Harbor's cookbook `simulated-user` recipe writes
/// it (`ANTHROPIC_API_KEY: ${ANTHROPIC_API_KEY}` in the service's environment): its model
/// call goes through the attempt's relay — counted in the attempt's model usage — and its
/// container holds the relay's placeholder, never the key (`docker inspect` of the kept
/// container), though the host has the key under that very name.
#[test]
fn a_simulated_users_model_calls_go_through_the_relay_without_the_key() {
    tag_tool_base();
    let ws = Workspace::new();
    let tasks = simulated_user_task(&ws, "simulated-user-kept");
    let server = ScriptedServer::start(&simulated_user_script(0), None).unwrap();
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let args = docker_run_args(
        &packs,
        &tasks,
        "claude_code",
        &server,
        &["--keep-environment"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run(&args, &[("AGENT_KEY", KEY), ("ANTHROPIC_API_KEY", KEY)]);
    // This test's sidecar (another test's run may keep one meanwhile).
    let kept: String = engine_cli(&[
        "ps",
        "-a",
        "--filter",
        "name=simulated-user-kept",
        "--format",
        "{{.Names}}",
    ])
    .lines()
    .filter(|name| name.ends_with("-user-server"))
    .map(|name| format!("{name}\n"))
    .collect();
    let inspected = kept
        .lines()
        .map(|name| engine_cli(&["inspect", "-f", "{{json .Config.Env}}", name]))
        .collect::<Vec<_>>();
    let plugins = packs.to_str().unwrap();
    let closed = ws.run(&["--plugin-dir", plugins, "env", "close", "--all"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(closed.code, 0, "{closed:?}");
    assert_eq!(inspected.len(), 1, "{kept}");
    let env: Vec<String> = serde_json::from_str(&inspected[0]).unwrap();
    assert!(
        !inspected[0].contains(KEY),
        "the key is in the sidecar: {env:?}"
    );
    assert!(
        env.iter()
            .any(|v| v.starts_with("ANTHROPIC_BASE_URL=http://127.0.0.1:")),
        "{env:?}"
    );
    let results = published_results(&run_dir(&out));
    let (_, result) = results.values().next().unwrap();
    assert_eq!(result["metrics"]["reward"], json!(1.0), "{result:#}");
    // Four model calls through the relay, the simulated user's among them, all with the key
    // the relay added: in the attempt's usage.
    let requests = server.requests();
    let calls: Vec<&Value> = requests
        .iter()
        .filter(|r| r["path"] == "/v1/messages")
        .collect();
    assert!(calls.iter().all(|r| r["auth"] == "expected"), "{calls:?}");
    assert_eq!(user_calls(&server), 1, "{calls:?}");
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(usage["requests"], json!(4), "{usage}");
    assert_eq!(usage["prompt_tokens"], json!(320), "{usage}");
    eprintln!("simulated user: {} model calls, usage {usage}", calls.len());
}

/// The run directory of the run writing under `results`, once its `progress.json` names a
/// control socket.
fn live_run_dir(results: &Path) -> PathBuf {
    let start = Instant::now();
    loop {
        let found = fs::read_dir(results)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|ns| fs::read_dir(ns.path()).into_iter().flatten().flatten())
            .map(|run| run.path())
            .find(|run| {
                fs::read_to_string(run.join("progress.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .is_some_and(|p| p["control"]["socket"].is_string())
            });
        if let Some(run) = found {
            return run;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no live run");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ctl RUN_DIR ARG` must succeed.
fn ctl(run: &Path, arg: &str) {
    let out = std::process::Command::new(host_bin())
        .arg("ctl")
        .arg(run)
        .arg(arg)
        .output()
        .unwrap();
    assert!(out.status.success(), "ctl {arg}: {out:?}");
}

/// The simulated user's model call waits while the run is paused (`ctl pause`, taken while
/// the agent's first reply is on its way) and goes out once it is resumed.
#[test]
fn a_simulated_users_model_call_waits_while_the_run_is_paused() {
    tag_tool_base();
    let ws = Workspace::new();
    let tasks = simulated_user_task(&ws, "simulated-user-paused");
    let server = ScriptedServer::start(&simulated_user_script(1500), None).unwrap();
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let args = docker_run_args(
        &packs,
        &tasks,
        "claude_code",
        &server,
        &["--progress", "none"],
    );
    let child = ws
        .command()
        .args(&args)
        .env("AGENT_KEY", KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = live_run_dir(&ws.cwd.join("results"));
    // Paused while the agent's first reply (asking the user) is delayed at the model.
    let start = Instant::now();
    while !server
        .requests()
        .iter()
        .any(|r| r["body"].to_string().contains(MARKER))
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the agent never called"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    ctl(&run, "pause");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        user_calls(&server),
        0,
        "the simulated user's call went out while paused"
    );
    ctl(&run, "resume");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(user_calls(&server), 1);
    let results = published_results(&run);
    let (_, result) = results.values().next().unwrap();
    assert_eq!(result["metrics"]["reward"], json!(1.0), "{result:#}");
}

/// A service naming a key variable the user has not set (one the run's model endpoint does
/// not answer) is refused before the first task: exit 2, naming the file and the variable,
/// nothing written.
#[test]
fn a_sidecar_naming_an_unset_key_is_refused_before_the_first_task() {
    let ws = Workspace::new();
    let tasks = mcp_task(&ws, "unset-key");
    let compose_file = tasks.join("unset-key/environment/docker-compose.yaml");
    let compose = fs::read_to_string(&compose_file).unwrap();
    fs::write(
        &compose_file,
        compose.replace(
            "    expose:\n",
            "    environment:\n      - SEARCH_API_KEY=${AC_TEST_SEARCH_API_KEY}\n    expose:\n",
        ),
    )
    .unwrap();
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let env_params = json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    let benchmark = json!({"path": tasks}).to_string();
    let out = ws.run(
        &[
            "--plugin-dir",
            packs.to_str().unwrap(),
            "run",
            "harbor",
            "claude_code",
            "m-test",
            "--benchmark-params",
            &benchmark,
            "--env",
            "docker",
            "--env-params",
            &env_params,
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--model-api-key",
            "k",
            "--no-endpoint-check",
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("docker-compose.yaml") && out.stderr.contains("AC_TEST_SEARCH_API_KEY"),
        "{out:?}"
    );
    assert!(!ws.cwd.join("results").exists());
}
