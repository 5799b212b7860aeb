//! Issue 57: a run's spans in a real OTLP receiver. Arize Phoenix (from PyPI, the venv
//! `./dev.sh test` installs: `AGENTCOMPASS_PHOENIX_PYTHON`) runs on loopback with its own
//! working directory; `export otel` sends a terminus run's spans to it and they are read back
//! through Phoenix's REST API (`/v1/projects/default/spans`): the tree's shape, the token
//! counts of the records, the reward on the attempt span, no API key anywhere.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    closed_loopback_port, published_results, read_json, run_dir, terminus_args, Packs, Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Phoenix on loopback, stopped (and its working directory removed) when dropped.
struct Phoenix {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let python = std::env::var_os("AGENTCOMPASS_PHOENIX_PYTHON").unwrap_or_else(|| {
            panic!("AGENTCOMPASS_PHOENIX_PYTHON is not set: run the tests with ./dev.sh test")
        });
        let dir = tempfile::tempdir().unwrap();
        let port = closed_loopback_port();
        let grpc = closed_loopback_port();
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(python)
            .args(["-m", "phoenix.server.main", "serve"])
            .current_dir(dir.path())
            .env("PHOENIX_WORKING_DIR", dir.path().join("work"))
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut phoenix = Phoenix {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        while get(port, "/healthz").is_none() {
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                panic!("Phoenix exited ({status}): {}", phoenix.log());
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix did not start: {}",
                phoenix.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        phoenix
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("phoenix.log")).unwrap_or_default()
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.port)
    }

    /// Every span of the default project, as Phoenix's REST API answers (all pages).
    fn spans(&self) -> Vec<Value> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = "/v1/projects/default/spans?limit=1000".to_string();
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let page: Value = serde_json::from_str(&get(self.port, &path).unwrap()).unwrap();
            spans.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.replace('=', "%3D")),
                None => return spans,
            }
        }
    }

    /// The spans of the trace whose root is the run `run_id`, once Phoenix holds `count` of
    /// them (it ingests in the background).
    fn trace_of(&self, run_id: &str, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let spans = self.spans();
            let root = spans
                .iter()
                .find(|s| s["name"] == json!(format!("run {run_id}")));
            if let Some(root) = root {
                let trace = root["context"]["trace_id"].clone();
                let ours: Vec<Value> = spans
                    .into_iter()
                    .filter(|s| s["context"]["trace_id"] == trace)
                    .collect();
                if ours.len() >= count {
                    return ours;
                }
            }
            assert!(
                Instant::now() < deadline,
                "Phoenix has not all {count} spans"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a 200 answer to `GET path` on loopback `port` (`None`: anything else).
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// A terminus run of the bundled Harbor tasks against the scripted model (key in
/// `E2E_OTEL_KEY`); returns the run directory.
fn terminus_run(ws: &Workspace, server: &ScriptedServer, key: &str, extra: &[&str]) -> PathBuf {
    let plugins = Packs::harbor();
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_OTEL_KEY}");
    args.extend(["--progress", "none"]);
    args.extend(extra);
    let out = ws.run(&args, &[("E2E_OTEL_KEY", key)]).expect_code(0);
    run_dir(&out)
}

/// `export otel RUN --endpoint URL [flags]`: the number of spans it says it sent.
fn export(ws: &Workspace, run: &Path, endpoint: &str, flags: &[&str]) -> usize {
    let run = run.to_string_lossy();
    let mut args = vec!["export", "otel", run.as_ref(), "--endpoint", endpoint];
    args.extend(flags);
    let out = ws.run(&args, &[]).expect_code(0);
    out.stdout
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"))
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn sum(spans: &[&Value], key: &str) -> u64 {
    spans.iter().filter_map(|s| attr(s, key).as_u64()).sum()
}

/// Asserts the tree and the numbers of one exported run against its records; returns the
/// number of LLM and TOOL spans.
fn assert_tree(run: &Path, spans: &[Value]) -> (usize, usize) {
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap(), s))
        .collect();
    let children = |parent: &Value| -> Vec<&Value> {
        let id = &parent["context"]["span_id"];
        spans.iter().filter(|s| &s["parent_id"] == id).collect()
    };
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), 1, "one root: {roots:?}");
    let root = roots[0];
    assert_eq!(root["span_kind"], json!("CHAIN"));
    assert_eq!(attr(root, "agentcompass.harness"), &json!("terminus"));
    let results = published_results(run);
    let tasks = children(root);
    assert_eq!(tasks.len(), results.len(), "a span per task");
    let (mut llm_count, mut tool_count) = (0, 0);
    for (task_id, (attempt_dir, record)) in &results {
        let task = tasks
            .iter()
            .find(|t| attr(t, "agentcompass.task_id") == &json!(task_id))
            .unwrap_or_else(|| panic!("no span of {task_id}"));
        let attempts = children(task);
        assert_eq!(attempts.len(), 1, "{task_id}");
        let attempt = attempts[0];
        assert_eq!(attempt["name"], json!("attempt 1"));
        assert_eq!(
            attr(attempt, "agentcompass.reward"),
            &record["metrics"]["reward"],
            "{task_id}"
        );
        let usage = &record["meta"]["harness"]["telemetry"]["model_usage"];
        assert_eq!(
            attr(attempt, "llm.token_count.prompt"),
            &usage["prompt_tokens"]
        );
        assert_eq!(
            attr(attempt, "gen_ai.usage.output_tokens"),
            &usage["completion_tokens"]
        );
        let phases = children(attempt);
        let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
        for phase in ["open_environment", "agent run", "verification"] {
            assert!(names.contains(&phase), "{task_id}: {names:?}");
        }
        let agent = phases
            .iter()
            .find(|p| p["name"] == json!("agent run"))
            .unwrap();
        assert_eq!(agent["span_kind"], json!("AGENT"));
        let calls = children(agent);
        let llm: Vec<&Value> = calls
            .iter()
            .copied()
            .filter(|s| s["span_kind"] == json!("LLM"))
            .collect();
        let tools: Vec<&Value> = calls
            .iter()
            .copied()
            .filter(|s| s["span_kind"] == json!("TOOL"))
            .collect();
        assert_eq!(llm.len() + tools.len(), calls.len());
        // One model call per ATIF agent step with metrics, its tokens those of the step.
        let atif = read_json(&attempt_dir.join("agent/trajectory.json"));
        let steps: Vec<&Value> = atif["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["source"] == json!("agent") && s.get("metrics").is_some())
            .collect();
        assert_eq!(llm.len(), steps.len(), "{task_id}");
        for step in &steps {
            let span = llm
                .iter()
                .find(|s| attr(s, "agentcompass.atif_step") == &step["step_id"])
                .unwrap();
            assert_eq!(
                attr(span, "llm.token_count.prompt"),
                &step["metrics"]["prompt_tokens"]
            );
            assert_eq!(
                attr(span, "gen_ai.usage.input_tokens"),
                &step["metrics"]["prompt_tokens"]
            );
            assert_eq!(
                attr(span, "llm.token_count.completion"),
                &step["metrics"]["completion_tokens"]
            );
            assert_eq!(attr(span, "llm.model_name"), &json!("scripted-model"));
        }
        assert_eq!(
            sum(&llm, "llm.token_count.prompt"),
            usage["prompt_tokens"].as_u64().unwrap()
        );
        assert_eq!(
            sum(&llm, "llm.token_count.completion"),
            usage["completion_tokens"].as_u64().unwrap()
        );
        let calls_made: usize = atif["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tool_calls"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(tools.len(), calls_made, "{task_id}");
        assert!(tools
            .iter()
            .all(|t| attr(t, "gen_ai.tool.name") == attr(t, "tool.name")));
        llm_count += llm.len();
        tool_count += tools.len();
        assert!(by_id.contains_key(attempt["parent_id"].as_str().unwrap()));
    }
    (llm_count, tool_count)
}

#[test]
fn exported_runs_read_back_from_phoenix_with_their_tree_tokens_and_reward_and_no_key() {
    let script: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let phoenix = Phoenix::start();
    // With contents: prompts, completions, tool arguments and results, yet no key.
    let shown = terminus_run(&ws, &server, &key, &[]);
    let count = export(&ws, &shown, &phoenix.endpoint(), &["--otel-content"]);
    let run_id = read_json(&shown.join("run_info.json"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let spans = phoenix.trace_of(&run_id, count);
    assert_eq!(spans.len(), count);
    let (llm, tools) = assert_tree(&shown, &spans);
    eprintln!("{count} spans: {llm} model calls, {tools} tool calls");
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains(&key), "the API key is in a span");
    assert!(text.contains("tool.parameters") && text.contains("input.value"));
    // Without: ids, counts, times and metrics only.
    let hidden = terminus_run(&ws, &server, &key, &[]);
    let count = export(&ws, &hidden, &phoenix.endpoint(), &[]);
    let run_id = read_json(&hidden.join("run_info.json"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let spans = phoenix.trace_of(&run_id, count);
    assert_tree(&hidden, &spans);
    for span in &spans {
        for key in ["input.value", "output.value", "tool.parameters"] {
            assert!(attr(span, key).is_null(), "{key} in {span}");
        }
    }
    assert!(!serde_json::to_string(&spans).unwrap().contains(&key));
    // A multi-step task: an agent phase per step, in the order the steps ran, each with its
    // tool call, between the phases progress.jsonl timed.
    let plugins = Packs::harbor();
    let params = json!({
        "path": repo_root().join("examples/harbor-features"),
        "sample_ids": ["step-healthcheck"],
    })
    .to_string();
    let args = agentcompass_e2e::pack_run(
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
    let steps = run_dir(&ws.run(&args, &[]).expect_code(0));
    let count = export(&ws, &steps, &phoenix.endpoint(), &[]);
    let run_id = read_json(&steps.join("run_info.json"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let spans = phoenix.trace_of(&run_id, count);
    let mut agents: Vec<&Value> = spans
        .iter()
        .filter(|s| s["span_kind"] == json!("AGENT"))
        .collect();
    agents.sort_by_key(|s| s["start_time"].as_str().unwrap().to_string());
    let names: Vec<&str> = agents.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["agent run (start)", "agent run (use)"],
        "{spans:#?}"
    );
    let attempt = spans
        .iter()
        .find(|s| s["name"] == json!("attempt 1"))
        .unwrap();
    assert!(agents
        .iter()
        .all(|a| a["parent_id"] == attempt["context"]["span_id"]));
    let verifications = spans
        .iter()
        .filter(|s| s["name"] == json!("verification"))
        .count();
    assert_eq!(verifications, 2, "a verification per step");
    for agent in &agents {
        let id = &agent["context"]["span_id"];
        let tools = spans
            .iter()
            .filter(|s| &s["parent_id"] == id && s["span_kind"] == json!("TOOL"))
            .count();
        assert_eq!(tools, 1, "{agent}");
    }
}

#[test]
fn export_otel_without_an_endpoint_or_to_a_closed_port_is_one_line() {
    let script: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let run = terminus_run(&ws, &server, &key, &[]);
    let run_arg = run.to_string_lossy().into_owned();
    let closed = format!("http://127.0.0.1:{}/v1/traces", closed_loopback_port());
    let out = ws
        .run(&["export", "otel", &run_arg, "--endpoint", &closed], &[])
        .expect_code(1);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(
        lines[0].starts_with("error: export otel: cannot export spans to "),
        "{out:?}"
    );
    assert!(lines[0].contains(&closed), "{out:?}");
    let out = ws
        .run(
            &["export", "otel", &run_arg],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")],
        )
        .expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("no endpoint"), "{out:?}");
}

#[test]
fn live_runs_send_their_spans_and_a_collector_that_is_down_is_one_warning() {
    let script: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let ws = Workspace::new();
    let phoenix = Phoenix::start();
    let endpoint = phoenix.endpoint();
    let run = terminus_run(&ws, &server, &key, &["--otel-endpoint", &endpoint]);
    let run_id = read_json(&run.join("run_info.json"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // The run's end waited for its spans: the run's span is there, then the rest.
    let results = published_results(&run);
    let mut expected = 1 + 2 * results.len();
    for (attempt_dir, _) in results.values() {
        let atif = read_json(&attempt_dir.join("agent/trajectory.json"));
        for step in atif["steps"].as_array().unwrap() {
            expected += usize::from(step.get("metrics").is_some());
            expected += step["tool_calls"].as_array().map_or(0, Vec::len);
        }
        expected += 1;
    }
    let live = phoenix.trace_of(&run_id, expected);
    assert_eq!(live.len(), expected);
    let attempts: Vec<&Value> = live
        .iter()
        .filter(|s| s["name"] == json!("attempt 1"))
        .collect();
    assert_eq!(attempts.len(), results.len(), "{live:#?}");
    for (task_id, (_, record)) in &results {
        let attempt = attempts
            .iter()
            .find(|a| attr(a, "agentcompass.task_id") == &json!(task_id))
            .unwrap();
        assert_eq!(
            attr(attempt, "agentcompass.reward"),
            &record["metrics"]["reward"]
        );
        let usage = &record["meta"]["harness"]["telemetry"]["model_usage"];
        assert_eq!(
            attr(attempt, "llm.token_count.prompt"),
            &usage["prompt_tokens"]
        );
    }
    let llm = live
        .iter()
        .filter(|s| s["span_kind"] == json!("LLM"))
        .count();
    assert!(llm > 0, "{live:#?}");
    assert!(!serde_json::to_string(&live).unwrap().contains(&key));
    // `export otel` of the same run sends the same ids (plus the phases progress.jsonl
    // times): Phoenix keeps one copy of each.
    let count = export(&ws, &run, &endpoint, &[]);
    let both = phoenix.trace_of(&run_id, count);
    assert_eq!(both.len(), count, "the live spans have the exported ids");
    eprintln!(
        "live: {} spans ({llm} model calls); exported: {count}",
        live.len()
    );
    // A collector that is down: the run finishes normally, with one warning.
    let closed = format!("http://127.0.0.1:{}/v1/traces", closed_loopback_port());
    let plugins = Packs::harbor();
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_OTEL_KEY}");
    args.extend(["--progress", "none", "--otel-endpoint", &closed]);
    let out = ws.run(&args, &[("E2E_OTEL_KEY", &key)]).expect_code(0);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("OpenTelemetry"))
        .collect();
    assert_eq!(warnings.len(), 1, "{out:?}");
    assert!(warnings[0].contains(&closed), "{out:?}");
    eprintln!("{}", warnings[0]);
}
