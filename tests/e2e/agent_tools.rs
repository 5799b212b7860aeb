//! What an agent is handed besides its instruction (issue 56), end to end with the real agent
//! CLIs in the tests' engine: a Harbor task written as Harbor's cookbook `mcp-tools` recipe
//! writes it — an MCP server in a compose sidecar (`mcp-tool-server`, on the official Rust
//! SDK), declared in `[[environment.mcp_servers]]` — solved by Claude Code driven by
//! `scripted-llm`: the agent calls the server's `lookup` tool, the server's own log shows the
//! call with its arguments, the trajectory shows the call and its result, and the reward
//! depends on it (the script writes the answer only once the tool's result is in the
//! conversation).

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{published_results, run_dir, target_dir, Packs, Workspace};
use serde_json::{json, Value};

use crate::harbor_images::engine_cli;

/// The real key the host is given (only the relay sends it, to scripted-llm).
const KEY: &str = "sk-e2e-TOOLS-real-5521";

/// What `mcp-tool-server`'s `lookup` answers for `alpha`.
const ALPHA: &str = "value-of-alpha-7f3a";

/// The marker of the task's instruction the script answers.
const MARKER: &str = "MCP-LOOKUP";

fn required(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set: run the tests with ./dev.sh test"))
}

/// Tags the agents' image as `debian:bookworm-slim`, the base the task's tool image names.
fn tag_tool_base() {
    let image = required("AGENTCOMPASS_TEST_AGENT_IMAGE");
    engine_cli(&["tag", &image, "debian:bookworm-slim"]);
}

/// Writes the `mcp-tools` task into `tasks/<name>`: `main` waits for the `tools` sidecar
/// (built from its own Dockerfile with the `mcp-tool-server` binary, healthy once it serves
/// `/health`), which logs its calls into a volume `main` mounts at `/logs/tools` (an artifact
/// of the task); `main` also sees the server's binary at `/opt/tools` (a `stdio` server the
/// agent may start).
fn mcp_task(ws: &Workspace, name: &str) -> PathBuf {
    let dir = ws.root().join("tasks").join(name);
    let tools = dir.join("environment/tools");
    fs::create_dir_all(&tools).unwrap();
    fs::create_dir_all(dir.join("tests")).unwrap();
    fs::write(
        dir.join("task.toml"),
        "schema_version = \"1.4\"\nartifacts = [\"/logs/tools\"]\n\n[task]\n\
         name = \"agentcompass/mcp-lookup\"\n\n[agent]\ntimeout_sec = 180.0\n\n\
         [verifier]\ntimeout_sec = 60.0\n\n[environment]\nworkdir = \"/app\"\n\
         build_timeout_sec = 600.0\n\n[[environment.mcp_servers]]\nname = \"tools\"\n\
         transport = \"streamable-http\"\nurl = \"http://tools:8000/mcp\"\n",
    )
    .unwrap();
    fs::write(
        dir.join("instruction.md"),
        format!(
            "{MARKER}: use the `lookup` tool of the `tools` MCP server to find the value of \
             the key `alpha`, and write exactly that value to /app/answer.txt.\n"
        ),
    )
    .unwrap();
    fs::write(
        dir.join("environment/Dockerfile"),
        "FROM ubuntu:24.04\nWORKDIR /app\n",
    )
    .unwrap();
    fs::write(
        dir.join("environment/docker-compose.yaml"),
        "services:\n  main:\n    depends_on:\n      tools:\n        condition: service_healthy\n\
         \x20   volumes:\n      - calls:/logs/tools\n      - ./tools:/opt/tools:ro\n  tools:\n    build:\n      context: ./tools\n\
         \x20   expose:\n      - \"8000\"\n    volumes:\n      - calls:/calls\n\
         \x20   healthcheck:\n      test: [\"CMD\", \"mcp-tool-server\", \"--probe\", \
         \"http://127.0.0.1:8000/health\"]\n      interval: 1s\n      retries: 30\n\
         volumes:\n  calls: {}\n",
    )
    .unwrap();
    fs::write(
        tools.join("Dockerfile"),
        "FROM debian:bookworm-slim\nCOPY mcp-tool-server /usr/local/bin/mcp-tool-server\n\
         EXPOSE 8000\nCMD [\"mcp-tool-server\", \"--log\", \"/calls/calls.jsonl\"]\n",
    )
    .unwrap();
    fs::copy(
        target_dir().join("mcp-tool-server"),
        tools.join("mcp-tool-server"),
    )
    .unwrap();
    fs::write(
        dir.join("tests/test.sh"),
        format!(
            "#!/bin/bash\n\
             if [ \"$(cat /app/answer.txt 2>/dev/null)\" = \"{ALPHA}\" ] && \
             cat /logs/tools/*.jsonl | grep -q '\"key\":\"alpha\"'; then\n\
             \x20 echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
        ),
    )
    .unwrap();
    dir.parent().unwrap().to_path_buf()
}

/// Claude Code's script: call `mcp__tools__lookup`, then — only once its result is in the
/// conversation — write it, then finish.
fn claude_script() -> Value {
    let path = "/v1/messages";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}],
                      "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "Bash", "arguments": {
             "command": format!("printf '%s' '{ALPHA}' > /app/answer.txt"),
             "description": "write the answer"}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"text": "Wrote the value of alpha.", "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]})
}

/// Codex's script: call `lookup` in the namespace Codex offers the server's tools in
/// (`mcp__tools`), then — once its result is in the conversation — write it, then finish.
fn codex_script() -> Value {
    let path = "/v1/responses";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "lookup", "namespace": "mcp__tools",
                                      "arguments": {"key": "alpha"}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "exec_command", "arguments": {
             "cmd": format!("printf '%s' '{ALPHA}' > /app/answer.txt")}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"text": "Wrote the value of alpha.", "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]})
}

/// Runs `agent` (speaking `protocol`, driven by `script`) on the `mcp-tools` task in the
/// tests' docker daemon, on the agents' image, and checks the call end to end.
fn calls_the_sidecar_mcp_server(agent: &str, protocol: &str, script: &Value) {
    let (log, stdio) = calls_an_mcp_server(agent, protocol, script, &[]);
    assert!(stdio.is_none());
    eprintln!("{agent}: the sidecar's MCP server logged {}", log.unwrap());
}

/// Runs `agent` on the `mcp-tools` task with `extra` flags and checks the reward, the
/// trajectory and that exactly one server logged the call: the logs of the sidecar's server
/// (`calls.jsonl`) and of a `stdio` one (`stdio-calls.jsonl`).
fn calls_an_mcp_server(
    agent: &str,
    protocol: &str,
    script: &Value,
    extra: &[&str],
) -> (Option<String>, Option<String>) {
    tag_tool_base();
    let server = ScriptedServer::start(script, None).unwrap();
    let ws = Workspace::new();
    let tasks = mcp_task(&ws, "mcp-lookup");
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let env_params = json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    let benchmark = json!({"path": tasks}).to_string();
    let base_url = match protocol {
        "anthropic" => server.url(),
        _ => server.base_url(),
    };
    let out = ws.run(
        &[
            "--plugin-dir",
            packs.to_str().unwrap(),
            "--install-cache-dir",
            &required("AGENTCOMPASS_TEST_INSTALL_CACHE"),
            "run",
            "harbor",
            agent,
            "m-test",
            "--benchmark-params",
            &benchmark,
            "--env",
            "docker",
            "--env-params",
            &env_params,
            "--model-base-url",
            &base_url,
            "--model-api-protocol",
            protocol,
            "--model-api-key",
            "${AGENT_KEY}",
            "--execution-params",
            r#"{"save_artifacts": true}"#,
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect::<Vec<_>>(),
        &[("AGENT_KEY", KEY)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let results = published_results(&run);
    assert_eq!(results.len(), 1, "{:?}", results.keys());
    let (task_dir, result) = results.values().next().unwrap();
    assert_eq!(result["issues"], json!([]), "{result:#}");
    assert_eq!(result["metrics"]["reward"], json!(1.0), "{result:#}");
    // The trajectory shows the call and its result.
    let text = result["trajectory"].to_string();
    assert!(text.contains("mcp__tools__lookup"), "{text}");
    assert!(text.contains(ALPHA), "{text}");
    // The server's own log (collected as an artifact of the task) shows the call and its
    // arguments.
    let files = walk(task_dir);
    let read = |name: &str| {
        files
            .iter()
            .find(|p| p.ends_with(name))
            .map(|p| fs::read_to_string(p).unwrap())
            .filter(|text| !text.is_empty())
    };
    let (sidecar, stdio) = (read("calls.jsonl"), read("stdio-calls.jsonl"));
    let log = sidecar.as_ref().xor(stdio.as_ref());
    let log = log.unwrap_or_else(|| panic!("one server logged calls: {files:?}"));
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        json!({"tool": "lookup", "arguments": {"key": "alpha"}, "result": ALPHA})
    );
    (sidecar, stdio)
}

#[test]
fn claude_code_calls_the_mcp_server_of_a_compose_sidecar() {
    calls_the_sidecar_mcp_server("claude_code", "anthropic", &claude_script());
}

#[test]
fn codex_calls_the_mcp_server_of_a_compose_sidecar() {
    calls_the_sidecar_mcp_server("codex", "openai-responses", &codex_script());
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A run's `--mcp-config` replaces the task's server of the same name: `tools` becomes a
/// `stdio` server Claude Code starts inside the environment (its log shows the call; the
/// sidecar's server, declared by the task, is never called).
#[test]
fn mcp_config_replaces_the_tasks_server_with_a_stdio_one() {
    let ws = Workspace::new();
    let config = ws.write(
        "mcp.json",
        &json!({"mcpServers": {"tools": {"command": "/opt/tools/mcp-tool-server",
            "args": ["--stdio", "--log", "/logs/tools/stdio-calls.jsonl"]}}})
        .to_string(),
    );
    let config = config.display().to_string();
    let (sidecar, stdio) = calls_an_mcp_server(
        "claude_code",
        "anthropic",
        &claude_script(),
        &["--mcp-config", &config],
    );
    assert!(
        sidecar.is_none(),
        "the task's server was called: {sidecar:?}"
    );
    eprintln!(
        "claude_code: the run's stdio MCP server logged {}",
        stdio.unwrap()
    );
}
