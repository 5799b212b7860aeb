//! The real agent CLIs as harnesses (`claude_code`, `codex`, `mini_swe_agent`, `qwen_code`),
//! end to end: the built binary, the bundled Harbor and agents packs, each CLI as installed in
//! the host's install cache (`./dev.sh test` prefetches it with `agents install` and names the
//! cache in `AGENTCOMPASS_TEST_INSTALL_CACHE`), driven by `scripted-llm` on loopback through
//! the in-environment model endpoint of `no-network` tasks.
//!
//! Each agent solves the three bundled Harbor tasks plus a test-only task whose instruction
//! makes it look for the real model key inside its environment (`agent-key-probe`: every
//! process environment, and files under its home, `/tmp` and `/logs`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentcompass_e2e::loopback;
use agentcompass_e2e::npm_mirror::NpmCacheMirror;
use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    assert_secret_nowhere, field_strs, find_element, published_results, read_json, run_dir,
    Outcome, Packs, PluginDirs, Workspace,
};
use serde_json::{json, Value};

/// The real key the host is given (only the relay ever sends it, to scripted-llm).
const KEY: &str = "sk-e2e-AGENTS-real-9043";

/// The bundled tasks every agent solves.
const TASKS: [&str; 3] = ["hello-file", "fizzbuzz", "primes"];

/// The probe's task id.
const PROBE: &str = "agent-key-probe";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with ./dev.sh test, which prefetches the agents")
    })
}

/// The shared install cache `./dev.sh test` filled (the test's own HOME is a temp dir).
fn install_cache() -> String {
    required("AGENTCOMPASS_TEST_INSTALL_CACHE")
}

/// The agent's shell tool call running `command`, in its own vocabulary.
fn tool_call(agent: &str, command: &str) -> Value {
    match agent {
        "claude_code" => {
            json!({"name": "Bash", "arguments": {"command": command, "description": "run"}})
        }
        "codex" => json!({"name": "exec_command", "arguments": {"cmd": command}}),
        "mini_swe_agent" => json!({"name": "bash", "arguments": {"command": command}}),
        "qwen_code" => json!({"name": "run_shell_command",
                              "arguments": {"command": command, "description": "run", "is_background": false}}),
        other => panic!("no tool vocabulary for {other}"),
    }
}

/// The protocol path the agent calls.
fn path_of(agent: &str) -> &'static str {
    match agent {
        "claude_code" => "/v1/messages",
        "codex" => "/v1/responses",
        _ => "/v1/chat/completions",
    }
}

/// The agent's last turn saying `text` (mini-swe-agent submits it as its final action).
fn finish(agent: &str, text: &str) -> Value {
    if agent == "mini_swe_agent" {
        json!({"text": "Submitting.", "tool_calls": [tool_call(agent, &format!(
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo '{text}'"))],
            "usage": {"prompt_tokens": 30, "completion_tokens": 3}})
    } else {
        json!({"text": text, "usage": {"prompt_tokens": 30, "completion_tokens": 3}})
    }
}

/// The probe the agent runs for `agent-key-probe`: the real key (spelled in two pieces, so the
/// command itself does not contain it) counted in every process environment and in files
/// under its home, `/tmp` and `/logs`; and its placeholder variables counted. No command
/// substitution (Qwen Code's shell tool refuses it).
fn probe_command(agent: &str) -> String {
    let (head, tail) = KEY.split_at(10);
    let dir = format!("/logs/agent/{agent}");
    format!(
        "k={head}; k=\"${{k}}{tail}\"; \
         {{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; env; }} 2>/dev/null \
         | grep -cF \"$k\" > {dir}/probe-environ.txt; \
         grep -rlF \"$k\" \"$HOME\" /tmp /logs 2>/dev/null | wc -l > {dir}/probe-files.txt; \
         env | grep -c -e API_KEY -e CODEX_KEY > {dir}/probe-vars.txt; true"
    )
}

/// The fixture script of `agent` with the key required and the probe task's rules first.
fn script(agent: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(format!("tests/fixtures/agents/{agent}.json")))
        .unwrap();
    let mut script: Value = serde_json::from_str(&text).unwrap();
    script["require_key"] = json!(KEY);
    let probe = [
        json!({"match": {"path": path_of(agent), "any_user_contains": "KEY-PROBE", "assistant_turns": 0},
               "response": {"tool_calls": [tool_call(agent, &probe_command(agent))],
                            "usage": {"prompt_tokens": 50, "completion_tokens": 5}}}),
        json!({"match": {"path": path_of(agent), "any_user_contains": "KEY-PROBE", "assistant_turns": 1},
               "response": finish(agent, "probe done")}),
    ];
    let rules = script["rules"].as_array_mut().unwrap();
    for (i, rule) in probe.into_iter().enumerate() {
        rules.insert(i, rule);
    }
    script
}

/// Copies the task directory `from` into `dir` (created).
fn copy_task(from: &Path, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let out = std::process::Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// The bundled tasks and the probe, copied into one directory of `ws`.
fn tasks(ws: &Workspace) -> PathBuf {
    let dir = ws.root().join("tasks");
    for task in TASKS {
        copy_task(&repo().join("examples/harbor").join(task), &dir);
    }
    copy_task(&repo().join("tests/fixtures/harbor").join(PROBE), &dir);
    dir
}

/// The model flags of `agent`: the base URL and protocol it speaks (Claude Code the Anthropic
/// API, Codex the Responses API, the others chat completions).
fn model_flags(agent: &str, server: &ScriptedServer) -> [String; 4] {
    let (url, protocol) = match agent {
        "claude_code" => (server.url(), "anthropic"),
        "codex" => (server.base_url(), "openai-responses"),
        _ => (server.base_url(), "openai-chat"),
    };
    [
        "--model-base-url".into(),
        url,
        "--model-api-protocol".into(),
        protocol.into(),
    ]
}

/// `run harbor AGENT m-test` with the plugins of `packs` and the install cache `cache`, on the
/// Harbor tasks at `tasks` against `server`, with the real key given as `${AGENT_KEY}`, plus
/// `extra`.
fn run_harbor_agent(
    ws: &Workspace,
    packs: &Packs,
    cache: &str,
    agent: &str,
    server: &ScriptedServer,
    tasks: &Path,
    extra: &[&str],
) -> Outcome {
    let benchmark = json!({"path": tasks}).to_string();
    let model = model_flags(agent, server);
    let mut args = vec![
        "--plugin-dir",
        packs.to_str().unwrap(),
        "--install-cache-dir",
        cache,
        "run",
        "harbor",
        agent,
        "m-test",
        "--benchmark-params",
        &benchmark,
        "--model-api-key",
        "${AGENT_KEY}",
    ];
    args.extend(model.iter().map(String::as_str));
    args.extend_from_slice(extra);
    ws.run(&args, &[("AGENT_KEY", KEY)])
}

/// [`run_harbor_agent`] with the shared install cache, the docker provider among the plugins,
/// prices set and four tasks at once; with its wall time in seconds.
fn run_agent(
    ws: &Workspace,
    agent: &str,
    server: &ScriptedServer,
    tasks: &Path,
    extra: &[&str],
) -> (Outcome, f64) {
    let packs = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let mut args = vec![
        "--model-params",
        r#"{"pricing": {"input": 3.0, "output": 15.0}, "max_retries": 1}"#,
        "--task-concurrency",
        "4",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let out = run_harbor_agent(ws, &packs, &install_cache(), agent, server, tasks, &args);
    (out, started.elapsed().as_secs_f64())
}

/// The commands each task's script makes the agent run, in order (the check after the
/// write; mini-swe-agent's submit action last).
fn expected_commands(agent: &str, script: &Value, task_marker: &str) -> Vec<String> {
    let mut turns: Vec<(u64, String)> = Vec::new();
    for rule in script["rules"].as_array().unwrap() {
        let m = &rule["match"];
        if m["any_user_contains"] != json!(task_marker) {
            continue;
        }
        let turn = m["assistant_turns"].as_u64().unwrap();
        for call in rule["response"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let args = &call["arguments"];
            let command = args.get("command").or_else(|| args.get("cmd")).unwrap();
            turns.push((turn, command.as_str().unwrap().to_string()));
        }
    }
    turns.sort_by_key(|(turn, _)| *turn);
    let commands: Vec<String> = turns.into_iter().map(|(_, c)| c).collect();
    assert!(commands.len() >= 2, "{agent} {task_marker}: {commands:?}");
    commands
}

/// Runs `agent` on the three bundled tasks and the key probe in `env` and checks everything
/// the harness records.
fn solves_the_bundled_tasks(agent: &str, extra: &[&str]) {
    let script = script(agent);
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let tasks = tasks(&ws);
    let (out, seconds) = run_agent(&ws, agent, &server, &tasks, extra);
    eprintln!("{agent}: 4 tasks in {seconds:.1} s");
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let results = published_results(&run);
    assert_eq!(results.len(), 4, "{:?}", results.keys());
    let markers = [
        ("hello-file", "/app/hello.txt"),
        ("fizzbuzz", "/app/fizzbuzz.txt"),
        ("primes", "/app/primes.txt"),
    ];
    for (task, (attempt, result)) in &results {
        let telemetry = &result["meta"]["harness"]["telemetry"];
        assert_eq!(
            result["metrics"]["reward"],
            json!(1.0),
            "{task}: {result:#}"
        );
        assert!(
            result["issues"].as_array().unwrap().is_empty(),
            "{task}: {result:#}"
        );
        assert_eq!(telemetry["agent"], json!(agent));
        assert_eq!(telemetry["exit_code"], json!(0), "{task}: {result:#}");
        // The agent's commands, in order, in telemetry and in the trajectory's tool calls.
        let commands: Vec<String> = telemetry["agent_commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        if let Some((_, marker)) = markers.iter().find(|(t, _)| t == task) {
            let expected = expected_commands(agent, &script, marker);
            let found: Vec<&String> = expected
                .iter()
                .filter(|e| commands.iter().any(|c| c.contains(e.as_str())))
                .collect();
            assert_eq!(
                found.len(),
                expected.len(),
                "{task}: {commands:?} vs {expected:?}"
            );
            let positions: Vec<usize> = expected
                .iter()
                .map(|e| {
                    commands
                        .iter()
                        .position(|c| c.contains(e.as_str()))
                        .unwrap()
                })
                .collect();
            assert!(
                positions.windows(2).all(|w| w[0] < w[1]),
                "{task}: {commands:?}"
            );
        }
        let steps = result["trajectory"]["steps"].as_array().unwrap();
        let calls = steps
            .iter()
            .filter(|s| s["assistant_content"]["tool_calls"].is_array())
            .count();
        assert!(calls >= 1, "{task}: {steps:?}");
        assert!(
            result["final_answer"]
                .as_str()
                .is_some_and(|a| !a.is_empty()),
            "{task}"
        );
        // Usage and cost from the gateway's meter.
        let usage = &telemetry["model_usage"];
        assert!(usage["requests"].as_u64().unwrap() >= 2, "{task}: {usage}");
        assert!(
            usage["prompt_tokens"].as_u64().unwrap() > 0,
            "{task}: {usage}"
        );
        assert!(usage["cost_usd"].as_f64().unwrap() > 0.0, "{task}: {usage}");
        // The raw log is an attempt artifact.
        let raw = attempt.join(format!("artifacts/logs/agent/{agent}"));
        let record = if agent == "mini_swe_agent" {
            "trajectory.json"
        } else {
            "stdout.log"
        };
        assert!(raw.join(record).is_file(), "{task}: {}", raw.display());
    }
    // The probe found the real key nowhere inside (its verifier scored that) and saw the
    // placeholder variables.
    let (attempt, _) = &results[PROBE];
    let probe = |name: &str| {
        std::fs::read_to_string(attempt.join(format!("artifacts/logs/agent/{agent}/{name}")))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trim()
            .to_string()
    };
    assert_eq!(probe("probe-environ.txt"), "0");
    assert_eq!(probe("probe-files.txt"), "0");
    assert_ne!(probe("probe-vars.txt"), "0");
    // Only the relay sent the real key, on every model call.
    let requests = server.requests();
    assert!(requests.len() >= 9, "{requests:?}");
    assert!(
        requests.iter().all(|r| r["auth"] == json!("expected")),
        "{requests:?}"
    );
    // Usage and cost in metrics.json and the summary; the key in no results file.
    let metrics = read_json(&run.join("metrics.json"));
    let text = metrics.to_string();
    assert!(text.contains("cost_usd"), "{text}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("Model usage: ") && summary.contains(" · $"),
        "{summary}"
    );
    assert_secret_nowhere(&run, &out, KEY);
    // Harbor accepts each attempt's ATIF, converted from the CLI's own records (issue 57),
    // under Harbor's name of the agent.
    let atif = agentcompass_e2e::atif::assert_harbor_accepts_atif(&run, 4);
    let harbor_name = match agent {
        "claude_code" => "claude-code",
        "mini_swe_agent" => "mini-swe-agent",
        "qwen_code" => "qwen-coder",
        other => other,
    };
    for file in &atif {
        assert_eq!(read_json(file)["agent"]["name"], json!(harbor_name));
    }
}

#[test]
fn claude_code_solves_the_bundled_tasks_in_a_no_network_sandbox() {
    solves_the_bundled_tasks("claude_code", &["--env", "sandbox"]);
}

#[test]
fn codex_solves_the_bundled_tasks_in_a_no_network_sandbox() {
    solves_the_bundled_tasks("codex", &["--env", "sandbox"]);
}

#[test]
fn mini_swe_agent_solves_the_bundled_tasks_in_a_no_network_sandbox() {
    solves_the_bundled_tasks("mini_swe_agent", &["--env", "sandbox"]);
}

#[test]
fn qwen_code_solves_the_bundled_tasks_in_a_no_network_sandbox() {
    solves_the_bundled_tasks("qwen_code", &["--env", "sandbox"]);
}

#[test]
fn an_agent_behind_a_rate_limited_endpoint_loses_no_task_in_a_no_network_sandbox() {
    // Nine tasks (the three bundled ones, three copies of each) at once, through each task's
    // relay, against an endpoint that answers 2 calls at once and 429 beyond: the relays
    // share the endpoint's limit and wait the 429s out; no agent ever sees one.
    let agent = "mini_swe_agent";
    let mut script = script(agent);
    script["concurrency"] = json!({"limit": 2, "retry_after": "0.2"});
    // Each answer takes a second, so that the nine agents' calls overlap.
    for rule in script["rules"].as_array_mut().unwrap() {
        if let Some(answer) = rule.get_mut("response") {
            answer["delay_ms"] = json!(1000);
        }
        for answer in rule
            .get_mut("responses")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            answer["delay_ms"] = json!(1000);
        }
    }
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let dir = ws.root().join("tasks");
    std::fs::create_dir_all(&dir).unwrap();
    for copy in 0..3 {
        for task in TASKS {
            let staged = ws.root().join(format!("copies/{copy}"));
            copy_task(&repo().join("examples/harbor").join(task), &staged);
            std::fs::rename(staged.join(task), dir.join(format!("{task}-{copy}"))).unwrap();
        }
    }
    let packs = Packs::new(&["harbor-pack", "agents-pack"]);
    let started = Instant::now();
    let out = run_harbor_agent(
        &ws,
        &packs,
        &install_cache(),
        agent,
        &server,
        &dir,
        &[
            "--env",
            "sandbox",
            "--task-concurrency",
            "9",
            "--model-params",
            r#"{"max_retries": 0}"#,
        ],
    );
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(out.code, 0, "{out:?}");
    let results = published_results(&run_dir(&out));
    assert_eq!(results.len(), 9, "{:?}", results.keys());
    for (task, (_, result)) in &results {
        assert_eq!(
            result["metrics"]["reward"],
            json!(1.0),
            "{task}: {result:#}"
        );
        assert_eq!(result["issues"], json!([]), "{task}: {result:#}");
    }
    let requests = server.requests();
    let refused = requests.iter().filter(|r| r["limited"] == true).count();
    let peak = requests
        .iter()
        .filter_map(|r| r["in_flight"].as_u64())
        .max()
        .unwrap();
    let metrics = read_json(&run_dir(&out).join("metrics.json"));
    eprintln!(
        "{agent}: 9 tasks at 9 through the relay in {seconds:.1} s: {refused} answers 429, peak {peak}; {}",
        metrics["extra"]["rate_limits"]
    );
    assert!(peak <= 2);
    assert!(refused > 0, "the endpoint was over its limit");
    assert_eq!(metrics["extra"]["rate_limits"]["answers"], json!(refused));
}

/// [`solves_the_bundled_tasks`] in `docker` on the agents' image, on the test daemon.
fn solves_the_bundled_tasks_in_docker(agent: &str) {
    let params = json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    solves_the_bundled_tasks(agent, &["--env", "docker", "--env-params", &params]);
}

#[test]
fn claude_code_solves_the_bundled_tasks_in_docker() {
    solves_the_bundled_tasks_in_docker("claude_code");
}

#[test]
fn mini_swe_agent_solves_the_bundled_tasks_in_docker() {
    solves_the_bundled_tasks_in_docker("mini_swe_agent");
}

/// A loopback npm registry that knows `@anthropic-ai/claude-code` in one version only.
fn one_version_registry() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    loopback::serve(listener, move |head| {
        if !head.contains("claude-code") {
            return loopback::Reply {
                status: "404 Not Found",
                content_type: Some("application/json"),
                body: "{}".to_string(),
            };
        }
        let body = json!({"name": "@anthropic-ai/claude-code", "dist-tags": {"latest": "2.1.332"},
               "versions": {"2.1.332": {"name": "@anthropic-ai/claude-code", "version": "2.1.332",
               "dist": {"tarball": format!("http://127.0.0.1:{port}/none.tgz")}}}});
        loopback::Reply {
            status: "200 OK",
            content_type: Some("application/json"),
            body: body.to_string(),
        }
    });
    port
}

/// `run harbor claude_code m-test --env sandbox` on `tasks` with the install cache `cache`
/// (empty at first), the harness parameters `params` and `extra`, against `server`.
fn run_claude_with_cache(
    ws: &Workspace,
    server: &ScriptedServer,
    tasks: &Path,
    cache: &Path,
    params: &str,
    extra: &[&str],
) -> Outcome {
    let mut args = vec!["--env", "sandbox", "--harness-params", params];
    args.extend_from_slice(extra);
    let cache = cache.to_str().unwrap();
    run_harbor_agent(
        ws,
        &Packs::harbor(),
        cache,
        "claude_code",
        server,
        tasks,
        &args,
    )
}

#[test]
fn a_broken_install_is_one_task_issue_naming_the_package_and_the_installers_error() {
    let port = one_version_registry();
    let server = ScriptedServer::start(&script("claude_code"), None).unwrap();
    let ws = Workspace::new();
    let tasks = hello_only(&ws);
    let empty_cache = tempfile::tempdir().unwrap();
    let params =
        json!({"version": "9.9.9", "registry": format!("http://127.0.0.1:{port}/")}).to_string();
    let out = run_claude_with_cache(&ws, &server, &tasks, empty_cache.path(), &params, &[]);
    let result = hello_file_result(&out);
    let issues = result["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 1, "{result:#}");
    let issue = &issues[0];
    assert_eq!(issue["code"], json!("agent_install_failed"), "{issue}");
    assert_eq!(issue["severity"], json!("fatal"), "{issue}");
    let message = issue["message"].as_str().unwrap();
    assert!(
        message.contains("`@anthropic-ai/claude-code@9.9.9` (npm)"),
        "{message}"
    );
    assert!(
        message.contains("No matching version found for @anthropic-ai/claude-code@9.9.9"),
        "{message}"
    );
    // Nothing was published into the cache, and the model was never called.
    assert!(server.requests().is_empty());
    let entries: Vec<_> = walk(empty_cache.path())
        .into_iter()
        .filter(|p| {
            p.to_string_lossy().contains("claude-code@9.9.9")
                && !p.to_string_lossy().contains(".lock")
        })
        .collect();
    assert!(entries.is_empty(), "{entries:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// A scripted model that keeps Claude Code calling tools forever
/// (`tests/fixtures/agents/claude_code-looping.json`), requiring the real key.
fn looping_claude_code() -> ScriptedServer {
    let text =
        std::fs::read_to_string(repo().join("tests/fixtures/agents/claude_code-looping.json"))
            .unwrap();
    let mut looping: Value = serde_json::from_str(&text).unwrap();
    looping["require_key"] = json!(KEY);
    ScriptedServer::start(&looping, None).unwrap()
}

/// The published result of `hello-file` in the run `out` printed.
fn hello_file_result(out: &Outcome) -> Value {
    let mut results = published_results(&run_dir(out));
    let (_, result) = results
        .remove("hello-file")
        .unwrap_or_else(|| panic!("hello-file is not published: {out:?}"));
    result
}

/// Runs `agent` on hello-file alone in the sandbox against `server`, plus `extra`: its
/// published result and the run's wall time in seconds.
fn on_hello_file(agent: &str, server: &ScriptedServer, extra: &[&str]) -> (Value, f64) {
    let ws = Workspace::new();
    let tasks = hello_only(&ws);
    let mut args = vec!["--env", "sandbox"];
    args.extend_from_slice(extra);
    let (out, seconds) = run_agent(&ws, agent, server, &tasks, &args);
    (hello_file_result(&out), seconds)
}

/// Runs `agent` on hello-file under `max_turns` 2 against `server` (a model that never lets
/// it finish), asserts that exactly two calls reached the model and returns the task's
/// result.
fn stopped_after_two_turns(agent: &str, server: &ScriptedServer) -> Value {
    let (result, seconds) = on_hello_file(
        agent,
        server,
        &[
            "--execution-params",
            r#"{"limits": {"max_turns": 2}, "run_timeout_seconds": 120}"#,
        ],
    );
    let calls = calls_to(server, path_of(agent));
    eprintln!(
        "{agent} under max_turns 2: {calls} model calls, {seconds:.1} s, issues {}",
        result["issues"]
    );
    assert_eq!(calls, 2, "{:?}", server.requests());
    result
}

/// How many of the requests `server` answered went to `path`.
fn calls_to(server: &ScriptedServer, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r["path"] == json!(path))
        .count()
}

/// hello-file alone, copied into `ws`.
fn hello_only(ws: &Workspace) -> PathBuf {
    let dir = ws.root().join("hello");
    copy_task(&repo().join("examples/harbor/hello-file"), &dir);
    dir
}

#[test]
fn a_model_failing_every_call_ends_the_attempt_with_the_gateways_issue() {
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [{"responses": [{"status": 500}]}]}),
        None,
    )
    .unwrap();
    let (result, seconds) = on_hello_file(
        "claude_code",
        &server,
        &["--harness-params", r#"{"agent_retries": 0}"#],
    );
    eprintln!("claude_code against a model answering 500: {seconds:.1} s");
    let codes: Vec<&str> = field_strs(&result["issues"], "code");
    assert!(codes.contains(&"model_failed"), "{result:#}");
    assert!(!codes.contains(&"run_timeout"), "{result:#}");
    let model_failed = find_element(&result["issues"], "code", "model_failed");
    let message = model_failed["message"].as_str().unwrap();
    assert!(message.contains("answered 500"), "{message}");
    // The gateway retried once (max_retries 1) for the agent's one call.
    assert_eq!(server.requests().len(), 2, "{:?}", server.requests());
}

#[test]
fn a_looping_agent_is_stopped_at_a_5_s_run_timeout_with_no_process_left() {
    let server = looping_claude_code();
    // A marker on the agent's command line tells its processes from other tests' agents.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let marker = format!("loop-marker-{}-{nanos}", std::process::id());
    let params = json!({"extra_args": ["--append-system-prompt", marker]}).to_string();
    let (result, seconds) = on_hello_file(
        "claude_code",
        &server,
        &[
            "--execution-params",
            r#"{"run_timeout_seconds": 5}"#,
            "--harness-params",
            &params,
        ],
    );
    let issue = &result["issues"][0];
    assert_eq!(issue["code"], json!("run_timeout"), "{result:#}");
    let steps = result["trajectory"]["steps"].as_array().map_or(0, Vec::len);
    eprintln!(
        "looping claude_code: run of {seconds:.1} s, {steps} steps kept, {} model calls",
        server.requests().len()
    );
    // It was running (under load Claude Code takes seconds to start, so one call may be all).
    assert!(steps >= 1, "{result:#}");
    assert!(!server.requests().is_empty());
    // Nothing of the agent is left running.
    let left = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn config_docs_lists_each_installed_agents_parameters() {
    let dirs = PluginDirs::new();
    let packs = dirs.package("packs", "agents-pack");
    for agent in ["claude_code", "codex", "mini_swe_agent", "qwen_code"] {
        let mut args = agentcompass_e2e::plugin_dir_args(&[&packs]);
        args.extend([
            "config".into(),
            "docs".into(),
            "harness".into(),
            agent.into(),
        ]);
        let out = agentcompass_e2e::run_host(&args).expect_code(0);
        insta::assert_snapshot!(format!("config_docs_{agent}"), dirs.redact(&out.stdout));
    }
}

#[test]
fn an_agent_cli_past_max_model_calls_is_refused_at_the_model_endpoint_and_stopped() {
    let server = looping_claude_code();
    let (result, seconds) = on_hello_file(
        "claude_code",
        &server,
        &[
            "--execution-params",
            r#"{"limits": {"max_model_calls": 3}, "run_timeout_seconds": 120}"#,
        ],
    );
    let codes: Vec<&str> = result["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["severity"] != json!("warning"))
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"limit_exceeded"), "{result:#}");
    assert!(!codes.contains(&"model_failed"), "{result:#}");
    assert!(!codes.contains(&"run_timeout"), "{result:#}");
    let calls = calls_to(&server, "/v1/messages");
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    eprintln!("claude_code under max_model_calls 3: {calls} calls reached the model, run of {seconds:.1} s, usage {usage}");
    // The fourth call was refused by the endpoint in the sandbox: it never reached the model.
    assert_eq!(calls, 3, "{:?}", server.requests());
    assert_eq!(usage["requests"], 3, "{usage}");
}

#[test]
fn claude_code_stops_at_the_requests_max_turns_with_limit_exceeded() {
    let server = looping_claude_code();
    let result = stopped_after_two_turns("claude_code", &server);
    let issues = result["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 1, "{result:#}");
    assert_eq!(issues[0]["code"], json!("limit_exceeded"), "{result:#}");
    let message = issues[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("execution.limits.max_turns (2) reached: claude_code stopped"),
        "{message}"
    );
}

#[test]
fn mini_swe_agent_stops_at_the_requests_max_turns_with_limit_exceeded() {
    // A model that never submits: one shell command a turn, forever.
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [{"responses": [{"text": "Looking around.",
            "tool_calls": [tool_call("mini_swe_agent", "ls /app")],
            "usage": {"prompt_tokens": 30, "completion_tokens": 3}}]}]}),
        None,
    )
    .unwrap();
    let result = stopped_after_two_turns("mini_swe_agent", &server);
    let codes: Vec<&str> = field_strs(&result["issues"], "code");
    assert_eq!(codes, ["limit_exceeded"], "{result:#}");
}

/// `run --auto-install-dependencies` with an empty install cache: Claude Code is installed by
/// the real npm from a loopback registry (replaying npm's own download cache of
/// registry.npmjs.org) before the results directory exists, the task then runs on that
/// install, and a second run finds it and asks the registry nothing.
#[test]
fn auto_install_dependencies_installs_the_agent_cli_before_the_run_starts() {
    let mirror = NpmCacheMirror::start(&Path::new(&install_cache()).join("downloads/npm/_cacache"));
    let server = ScriptedServer::start(&script("claude_code"), None).unwrap();
    let ws = Workspace::new();
    let tasks = hello_only(&ws);
    let empty_cache = tempfile::tempdir().unwrap();
    let params = json!({"registry": mirror.url()}).to_string();
    let run_once = || {
        run_claude_with_cache(
            &ws,
            &server,
            &tasks,
            empty_cache.path(),
            &params,
            &["--auto-install-dependencies"],
        )
    };
    let started = Instant::now();
    let out = run_once();
    eprintln!(
        "auto-install of Claude Code from the loopback registry, then one task: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(out.code, 0, "{out:?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("installed @anthropic-ai/claude-code@"))
        .unwrap_or_else(|| panic!("no install line: {}", out.stderr));
    assert!(line.contains(" for claude_code in "), "{line}");
    eprintln!("{line}");
    // The real npm fetched the packument and the tarballs from the mirror.
    let requests = mirror.requests();
    assert!(
        requests.contains(&("/@anthropic-ai%2fclaude-code".to_string(), 200)),
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .any(|(path, status)| path.ends_with(".tgz") && *status == 200),
        "{requests:?}"
    );
    // The install landed in the empty cache before anything of the run was written.
    let marker = walk(empty_cache.path())
        .into_iter()
        .find(|p| {
            p.ends_with(".agentcompass-install.json")
                && p.to_string_lossy().contains("claude-code@")
        })
        .unwrap_or_else(|| panic!("no install entry: {:?}", walk(empty_cache.path())));
    let installed_at = std::fs::metadata(&marker).unwrap().modified().unwrap();
    let run = run_dir(&out);
    for file in walk(&run) {
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        assert!(
            written >= installed_at,
            "{} before the install",
            file.display()
        );
    }
    let results = published_results(&run);
    let (_, result) = &results["hello-file"];
    assert_eq!(result["metrics"]["reward"], json!(1.0), "{result:#}");
    assert!(
        result["issues"].as_array().unwrap().is_empty(),
        "{result:#}"
    );
    // A second run finds the install: nothing installed, the registry not asked.
    let asked = mirror.requests().len();
    let again = run_once().expect_code(0);
    assert!(!again.stderr.contains("installed @"), "{}", again.stderr);
    assert_eq!(mirror.requests().len(), asked, "{:?}", mirror.requests());
}
