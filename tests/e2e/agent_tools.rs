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
pub(crate) const KEY: &str = "sk-e2e-TOOLS-real-5521";

/// What `mcp-tool-server`'s `lookup` answers for `alpha`.
const ALPHA: &str = "value-of-alpha-7f3a";

/// The marker of the task's instruction the script answers.
pub(crate) const MARKER: &str = "MCP-LOOKUP";

pub(crate) fn required(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set: run the tests with ./dev.sh test"))
}

/// Tags the agents' image as `debian:bookworm-slim`, the base the task's tool image names.
pub(crate) fn tag_tool_base() {
    let image = required("AGENTCOMPASS_TEST_AGENT_IMAGE");
    engine_cli(&["tag", &image, "debian:bookworm-slim"]);
}

/// Writes the `mcp-tools` task into `tasks/<name>`: `main` waits for the `tools` sidecar
/// (built from its own Dockerfile with the `mcp-tool-server` binary, healthy once it serves
/// `/health`), which logs its calls into a volume `main` mounts at `/logs/tools` (an artifact
/// of the task); `main` also sees the server's binary at `/opt/tools` (a `stdio` server the
/// agent may start).
pub(crate) fn mcp_task(ws: &Workspace, name: &str) -> PathBuf {
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

/// `run harbor AGENT m-test` on `tasks` in the tests' docker daemon on the agents' image,
/// against `server` in the protocol the agent speaks (its key as `${AGENT_KEY}`), then `extra`.
pub(crate) fn docker_run_args(
    packs: &Packs,
    tasks: &Path,
    agent: &str,
    server: &ScriptedServer,
    extra: &[&str],
) -> Vec<String> {
    let (url, protocol) = match agent {
        "claude_code" => (server.url(), "anthropic"),
        "codex" => (server.base_url(), "openai-responses"),
        _ => (server.base_url(), "openai-chat"),
    };
    let env_params = json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    let mut args: Vec<String> = [
        "--plugin-dir",
        packs.to_str().unwrap(),
        "--install-cache-dir",
        &required("AGENTCOMPASS_TEST_INSTALL_CACHE"),
        "run",
        "harbor",
        agent,
        "m-test",
        "--benchmark-params",
        &json!({"path": tasks}).to_string(),
        "--env",
        "docker",
        "--env-params",
        &env_params,
        "--model-base-url",
        &url,
        "--model-api-protocol",
        protocol,
        "--model-api-key",
        "${AGENT_KEY}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs `agent` (driven by `script`) on the `mcp-tools` task in the
/// tests' docker daemon, on the agents' image, and checks the call end to end.
fn calls_the_sidecar_mcp_server(agent: &str, script: &Value) {
    let (log, stdio) = calls_an_mcp_server(agent, script, &[]);
    assert!(stdio.is_none());
    eprintln!("{agent}: the sidecar's MCP server logged {}", log.unwrap());
}

/// Runs `agent` on the `mcp-tools` task with `extra` flags and checks the reward, the
/// trajectory and that exactly one server logged the call: the logs of the sidecar's server
/// (`calls.jsonl`) and of a `stdio` one (`stdio-calls.jsonl`).
fn calls_an_mcp_server(
    agent: &str,
    script: &Value,
    extra: &[&str],
) -> (Option<String>, Option<String>) {
    tag_tool_base();
    let server = ScriptedServer::start(script, None).unwrap();
    let ws = Workspace::new();
    let tasks = mcp_task(&ws, "mcp-lookup");
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let mut flags = vec!["--execution-params", r#"{"save_artifacts": true}"#];
    flags.extend_from_slice(extra);
    let args = docker_run_args(&packs, &tasks, agent, &server, &flags);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run(&args, &[("AGENT_KEY", KEY)]);
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
    calls_the_sidecar_mcp_server("claude_code", &claude_script());
}

#[test]
fn codex_calls_the_mcp_server_of_a_compose_sidecar() {
    calls_the_sidecar_mcp_server("codex", &codex_script());
}

/// Every file under `dir`.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
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
    let (sidecar, stdio) =
        calls_an_mcp_server("claude_code", &claude_script(), &["--mcp-config", &config]);
    assert!(
        sidecar.is_none(),
        "the task's server was called: {sidecar:?}"
    );
    eprintln!(
        "claude_code: the run's stdio MCP server logged {}",
        stdio.unwrap()
    );
}

/// Writes a skill `name` (front matter and one line of body) under `dir`.
fn skill(dir: &Path, name: &str) {
    let skill = dir.join(name);
    fs::create_dir_all(&skill).unwrap();
    fs::write(
        skill.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: The {name} skill of the tests.\n---\n\nSay {name}.\n"
        ),
    )
    .unwrap();
}

/// A git repository at `dir` holding `skills/<name>/SKILL.md`, one commit; its commit id.
fn skills_repo(dir: &Path, name: &str) -> String {
    skill(&dir.join("skills"), name);
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "skills"]);
    git(&["rev-parse", "HEAD"])
}

/// Skills reach Claude Code where it reads them: its own `init` event lists the skill the
/// task's `skills_dir` holds, one from a `--skill` directory and one from a `--skill` git
/// source (`file://`, pinned to a commit, fetched into the dataset cache and recorded with its
/// digest in the run's provenance).
#[test]
fn claude_code_lists_the_skills_of_the_task_and_the_run() {
    let ws = Workspace::new();
    let tasks = mcp_task(&ws, "skills-task");
    let task = tasks.join("skills-task");
    // The task's skills directory, bound into `main` (writable: the run's skills join it).
    skill(&task.join("environment/skills"), "task-skill");
    let toml = fs::read_to_string(task.join("task.toml")).unwrap();
    fs::write(
        task.join("task.toml"),
        toml.replace(
            "workdir = \"/app\"\n",
            "workdir = \"/app\"\nskills_dir = \"/skills\"\n",
        ),
    )
    .unwrap();
    let compose = fs::read_to_string(task.join("environment/docker-compose.yaml")).unwrap();
    fs::write(
        task.join("environment/docker-compose.yaml"),
        compose.replace(
            "      - ./tools:/opt/tools:ro\n",
            "      - ./tools:/opt/tools:ro\n      - ./skills:/skills\n",
        ),
    )
    .unwrap();
    let local = ws.root().join("my-skills");
    skill(&local, "run-skill");
    let repo = ws.root().join("skills-repo");
    fs::create_dir_all(&repo).unwrap();
    let commit = skills_repo(&repo, "git-skill");
    let git_source = format!("file://{}@{commit}", repo.display());
    let local = local.join("run-skill").display().to_string();
    let (out, files) = run_claude(&ws, &tasks, &["--skill", &local, "--skill", &git_source]);
    let skills = init_skills(&files);
    for name in ["task-skill", "run-skill", "git-skill"] {
        assert!(skills.iter().any(|s| s == name), "{name} not in {skills:?}");
    }
    eprintln!("claude_code: init event skills {skills:?}");
    // The provenance names each run skill with its digest, the git one with its commit.
    let info: Value =
        serde_json::from_str(&fs::read_to_string(run_dir(&out).join("run_info.json")).unwrap())
            .unwrap();
    let recorded = &info["provenance"]["skills"];
    let git = recorded
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "git-skill")
        .unwrap_or_else(|| panic!("{recorded}"));
    assert_eq!(git["git_commit"], json!(commit), "{recorded}");
    assert!(git["digest"].as_str().unwrap().starts_with("sha256:"));
    // Pinned and cached: with the repository gone, a second run takes the skill from the
    // cache.
    fs::remove_dir_all(&repo).unwrap();
    let (_, files) = run_claude(&ws, &tasks, &["--skill", &git_source]);
    assert!(init_skills(&files).contains(&"git-skill".to_string()));
}

/// The skills Claude Code's `init` event lists, from its `stdout.log` among `files`.
fn init_skills(files: &[PathBuf]) -> Vec<String> {
    let stdout = files
        .iter()
        .find(|p| p.ends_with("claude_code/stdout.log"))
        .map(|p| fs::read_to_string(p).unwrap())
        .expect("Claude Code's stdout.log");
    let init: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .expect("Claude Code's init event");
    init["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Runs Claude Code (one text answer) on `tasks` in the tests' docker daemon with `extra`;
/// the outcome and the published task's files.
fn run_claude(
    ws: &Workspace,
    tasks: &Path,
    extra: &[&str],
) -> (agentcompass_e2e::Outcome, Vec<PathBuf>) {
    let (out, files, _) = run_agent_once(ws, tasks, "claude_code", extra);
    (out, files)
}

/// Runs `agent` (one text answer) on `tasks` in the tests' docker daemon with `extra`; the
/// outcome, the published task's files and the model requests.
fn run_agent_once(
    ws: &Workspace,
    tasks: &Path,
    agent: &str,
    extra: &[&str],
) -> (agentcompass_e2e::Outcome, Vec<PathBuf>, Vec<Value>) {
    let script = json!({"require_key": KEY, "rules": [
        {"response": {"text": "Done.", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}}]});
    let server = ScriptedServer::start(&script, None).unwrap();
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let args = docker_run_args(&packs, tasks, agent, &server, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run(&args, &[("AGENT_KEY", KEY)]);
    assert_eq!(out.code, 0, "{out:?}");
    let results = published_results(&run_dir(&out));
    let (task_dir, _) = results.values().next().unwrap();
    let files = walk(task_dir);
    (out, files, server.requests())
}

/// Codex and Qwen Code read a `--skill` where they read skills: each lists it (its name and
/// description) in what it sends the model.
#[test]
fn codex_and_qwen_code_tell_their_model_about_a_run_skill() {
    for agent in ["codex", "qwen_code"] {
        let ws = Workspace::new();
        let tasks = mcp_task(&ws, "skills-task");
        let local = ws.root().join("my-skills");
        skill(&local, "run-skill");
        let local = local.join("run-skill").display().to_string();
        let (_, _, requests) = run_agent_once(&ws, &tasks, agent, &["--skill", &local]);
        let told = requests.iter().any(|r| {
            let body = r["body"].to_string();
            body.contains("run-skill") && body.contains("The run-skill skill of the tests.")
        });
        assert!(
            told,
            "{agent} never told its model about the skill: {requests:?}"
        );
    }
}

/// The credential the host's tool server requires (given to the run as `${TOOLS_TOKEN}`).
const TOOLS_TOKEN: &str = "tok-TOOLS-SECRET-8812";

/// `mcp-tool-server` on the host's loopback, requiring `Authorization: Bearer TOOLS_TOKEN`
/// and logging to `log`; killed on drop. Its port.
struct HostToolServer {
    child: std::process::Child,
    port: u16,
}

impl HostToolServer {
    fn start(log: &Path) -> HostToolServer {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(target_dir().join("mcp-tool-server"))
            .args(["--listen", "127.0.0.1:0", "--log"])
            .arg(log)
            .args([
                "--require-header",
                &format!("Authorization=Bearer {TOOLS_TOKEN}"),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().rsplit(':').next().unwrap().parse().unwrap();
        HostToolServer { child, port }
    }
}

impl Drop for HostToolServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command counting `TOOLS_TOKEN` (spelled in two pieces) in every process environment and
/// in files under the agent's home, `/tmp` and `/logs`, into `/logs/agent/claude_code/`.
fn token_probe() -> String {
    let (head, tail) = TOOLS_TOKEN.split_at(8);
    format!(
        "k={head}; k=\"${{k}}{tail}\"; \
         {{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; env; }} 2>/dev/null \
         | grep -cF \"$k\" > /logs/agent/claude_code/probe-environ.txt; \
         grep -rlF \"$k\" \"$HOME\" /tmp /logs 2>/dev/null | wc -l > /logs/agent/claude_code/probe-files.txt; true"
    )
}

/// An MCP server on the host (an internal tool service on loopback, requiring a header
/// credential) used by Claude Code from a `no-network` sandbox: through the attempt's tool
/// relay, which adds the header on the host. The agent's call reaches the server, the reward
/// depends on it, and the credential is nowhere in the environment (every process's
/// environment, files) or the results.
#[test]
fn a_host_mcp_server_is_reached_from_a_no_network_sandbox_through_the_relay() {
    let ws = Workspace::new();
    let log = ws.root().join("host-calls.jsonl");
    let tools = HostToolServer::start(&log);
    let task = ws.root().join("tasks/host-tools");
    fs::create_dir_all(task.join("tests")).unwrap();
    fs::write(
        task.join("task.toml"),
        format!(
            "schema_version = \"1.4\"\n\n[task]\nname = \"agentcompass/host-tools\"\n\n\
             [agent]\ntimeout_sec = 180.0\n\n[verifier]\ntimeout_sec = 60.0\n\n\
             [environment]\nworkdir = \"/app\"\nnetwork_mode = \"no-network\"\n\n\
             [[environment.mcp_servers]]\nname = \"tools\"\ntransport = \"streamable-http\"\n\
             url = \"http://127.0.0.1:{}/mcp\"\n\
             headers = {{ Authorization = \"Bearer ${{TOOLS_TOKEN}}\" }}\n",
            tools.port
        ),
    )
    .unwrap();
    fs::write(
        task.join("instruction.md"),
        format!(
            "{MARKER}: look up `alpha` with the `tools` server; write it to /app/answer.txt.\n"
        ),
    )
    .unwrap();
    fs::write(
        task.join("tests/test.sh"),
        format!(
            "#!/bin/bash\nif [ \"$(cat /app/answer.txt 2>/dev/null)\" = \"{ALPHA}\" ]; then \
             echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
        ),
    )
    .unwrap();
    let path = "/v1/messages";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    let write = format!("printf '%s' '{ALPHA}' > /app/answer.txt; {}", token_probe());
    let script = json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}],
                      "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "Bash", "arguments": {
             "command": write, "description": "write the answer"}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"text": "Done.", "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]});
    let server = ScriptedServer::start(&script, None).unwrap();
    let packs = Packs::new(&["harbor-pack", "agents-pack"]);
    let benchmark = json!({"path": ws.root().join("tasks")}).to_string();
    let url = server.url();
    let cache = required("AGENTCOMPASS_TEST_INSTALL_CACHE");
    let out = ws.run(
        &[
            "--plugin-dir",
            packs.to_str().unwrap(),
            "--install-cache-dir",
            &cache,
            "run",
            "harbor",
            "claude_code",
            "m-test",
            "--benchmark-params",
            &benchmark,
            "--env",
            "sandbox",
            "--model-base-url",
            &url,
            "--model-api-protocol",
            "anthropic",
            "--model-api-key",
            "${AGENT_KEY}",
        ],
        &[("AGENT_KEY", KEY), ("TOOLS_TOKEN", TOOLS_TOKEN)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let results = published_results(&run);
    let (task_dir, result) = results.values().next().unwrap();
    assert_eq!(result["issues"], json!([]), "{result:#}");
    assert_eq!(result["metrics"]["reward"], json!(1.0), "{result:#}");
    let calls = fs::read_to_string(&log).unwrap();
    assert!(calls.contains("\"key\":\"alpha\""), "{calls}");
    let files = walk(task_dir);
    let probe = |name: &str| {
        let file = files
            .iter()
            .find(|p| p.ends_with(name))
            .unwrap_or_else(|| panic!("{name}: {files:?}"));
        fs::read_to_string(file).unwrap().trim().to_string()
    };
    assert_eq!(
        probe("probe-environ.txt"),
        "0",
        "the credential is in an environment"
    );
    assert_eq!(probe("probe-files.txt"), "0", "the credential is in a file");
    agentcompass_e2e::assert_secret_nowhere(&ws.cwd.join("results"), &out, TOOLS_TOKEN);
    eprintln!("claude_code: the host's MCP server, through the relay, logged {calls}");
}

/// Qwen Code's script (chat completions): call `mcp__tools__lookup`, then write its result
/// with its shell tool, then finish.
fn qwen_script() -> Value {
    let path = "/v1/chat/completions";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}],
                      "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "run_shell_command", "arguments": {
             "command": format!("printf '%s' '{ALPHA}' > /app/answer.txt"),
             "description": "write the answer", "is_background": false}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"text": "Wrote the value of alpha.", "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]})
}

/// Qwen Code reads the server from its `settings.json` (`httpUrl`) and calls it.
#[test]
fn qwen_code_calls_the_mcp_server_of_a_compose_sidecar() {
    calls_the_sidecar_mcp_server("qwen_code", &qwen_script());
}

/// `terminus`' script (chat completions): call `mcp__tools__lookup`, then — once its result
/// is in the conversation — write it with `bash`, then `done`.
fn terminus_script() -> Value {
    let path = "/v1/chat/completions";
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
    json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}],
                      "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"tool_calls": [{"name": "bash", "arguments": {
             "command": format!("printf '%s' '{ALPHA}' > /app/answer.txt")}}], "usage": usage}},
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 2},
         "response": {"tool_calls": [{"name": "done", "arguments": {"summary": "wrote it"}}],
                      "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]})
}

/// `terminus` is an MCP client itself: it lists the sidecar server's tools, offers them to
/// the model and calls them (from inside the environment's network), each call a step of its
/// trajectory.
#[test]
fn terminus_calls_the_mcp_server_of_a_compose_sidecar() {
    calls_the_sidecar_mcp_server("terminus", &terminus_script());
}

/// … and starts a run's `stdio` server inside the environment.
#[test]
fn terminus_calls_a_stdio_server_of_the_run() {
    let ws = Workspace::new();
    let config = ws.write(
        "mcp.yaml",
        "mcp_servers:\n  - name: tools\n    transport: stdio\n    command: /opt/tools/mcp-tool-server\n    \
         args: [--stdio, --log, /logs/tools/stdio-calls.jsonl]\n",
    );
    let config = config.display().to_string();
    let (sidecar, stdio) =
        calls_an_mcp_server("terminus", &terminus_script(), &["--mcp-config", &config]);
    assert!(sidecar.is_none(), "{sidecar:?}");
    eprintln!(
        "terminus: the run's stdio MCP server logged {}",
        stdio.unwrap()
    );
}

/// A model-only run uses the tools too: `openai_chat` on a `qa` question, handed the host's
/// MCP server by `--mcp-config` (its credential a `${VAR}` header the host resolves), calls
/// `lookup` and answers with its result — scored correct by the benchmark.
#[test]
fn openai_chat_answers_with_a_run_mcp_servers_tool() {
    let ws = Workspace::new();
    let log = ws.root().join("host-calls.jsonl");
    let tools = HostToolServer::start(&log);
    let config = ws.write(
        "mcp.toml",
        &format!(
            "[[mcp_servers]]\nname = \"tools\"\ntransport = \"streamable-http\"\n\
             url = \"http://127.0.0.1:{}/mcp\"\n\
             headers = {{ Authorization = \"Bearer ${{TOOLS_TOKEN}}\" }}\n",
            tools.port
        ),
    );
    let dataset = ws.write(
        "data/q.jsonl",
        &format!(
            "{{\"id\": \"q-0\", \"question\": \"{MARKER}: what is stored under alpha?\", \"answer\": \"{ALPHA}\"}}\n"
        ),
    );
    let path = "/v1/chat/completions";
    let usage = json!({"prompt_tokens": 50, "completion_tokens": 5});
    let script = json!({"require_key": KEY, "rules": [
        {"match": {"path": path, "any_user_contains": MARKER, "assistant_turns": 0},
         "response": {"tool_calls": [{"name": "mcp__tools__lookup", "arguments": {"key": "alpha"}}],
                      "usage": usage}},
        {"match": {"path": path, "any_user_contains": ALPHA, "assistant_turns": 1},
         "response": {"text": ALPHA, "usage": usage}},
        {"response": {"text": "unexpected request", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    ]});
    let server = ScriptedServer::start(&script, None).unwrap();
    let qa = agentcompass_e2e::PluginDirs::new();
    let plugins = qa.package("p", "qa-pack");
    let agents = Packs::new(&["agents-pack"]);
    let params = json!({"path": dataset}).to_string();
    let url = server.base_url();
    let config = config.display().to_string();
    let out = ws.run(
        &[
            "--plugin-dir",
            plugins.to_str().unwrap(),
            "--plugin-dir",
            agents.to_str().unwrap(),
            "run",
            "qa",
            "openai_chat",
            "m-test",
            "--benchmark-params",
            &params,
            "--model-base-url",
            &url,
            "--model-api-protocol",
            "openai-chat",
            "--model-api-key",
            "${AGENT_KEY}",
            "--mcp-config",
            &config,
            "--progress",
            "none",
        ],
        &[("AGENT_KEY", KEY), ("TOOLS_TOKEN", TOOLS_TOKEN)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let results = published_results(&run);
    let (_, result) = results.values().next().unwrap();
    assert_eq!(result["final_answer"], json!(ALPHA), "{result:#}");
    let text = result["trajectory"].to_string();
    assert!(
        text.contains("mcp__tools__lookup") && text.contains("\"server\":\"tools\""),
        "{text}"
    );
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["series"][0]["value"], json!(1.0), "{metrics:#}");
    assert!(fs::read_to_string(&log)
        .unwrap()
        .contains("\"key\":\"alpha\""));
    agentcompass_e2e::assert_secret_nowhere(&ws.cwd.join("results"), &out, TOOLS_TOKEN);
}
