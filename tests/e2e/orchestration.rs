//! Orchestration resolution (`launch FILE --dry-run`), one test per row of the seed's
//! orchestration precedence table, the global `task_concurrency`, and a snapshot.

use std::path::{Path, PathBuf};

use agentcompass_e2e::Workspace;
use serde_json::{json, Value};

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `launch FILE --dry-run EXTRA...`, parsed.
fn launch(ws: &Workspace, file: &Path, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let file = path(file);
    let mut args = vec!["launch", file.as_str(), "--dry-run"];
    args.extend_from_slice(extra);
    let v = ws.run_json(&args, env);
    assert!(v["requests"].is_array(), "{v}");
    v
}

/// The request named `name`.
fn request<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["requests"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no request {name} in {v}"))
}

/// An orchestration file with a model and the example components in `defaults`, then `rest`.
fn orchestration(ws: &Workspace, name: &str, rest: &str) -> PathBuf {
    ws.write(
        &format!("orch/{name}"),
        &format!(
            r#"
[defaults.model]
id = "m"
[defaults.benchmark]
id = "example_exact_match"
[defaults.harness]
id = "example_calculator"
{rest}"#
        ),
    )
}

/// Row 1: component params — the selected config entry, then `defaults.<section>`, then the
/// named request (benchmark, harness and environment alike).
#[test]
fn component_params_config_then_defaults_then_request() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/components.toml",
        r#"
[benchmarks.example_exact_match]
size = 1
seed = 1
case_sensitive = true
[harnesses.example_calculator]
delay_ms = 1
wrong_every = 1
[environments.host_process]
workdir = "/cfg"
setup = { os = "linux" }
"#,
    );
    let file = ws.write(
        "orch/components.toml",
        r#"
[defaults.model]
id = "m"
[defaults.benchmark]
id = "example_exact_match"
size = 2
seed = 2
[defaults.harness]
id = "example_calculator"
wrong_every = 2
[defaults.environment]
id = "host_process"
workdir = "/defaults"
[[requests]]
name = "a"
benchmark = { size = 3 }
harness = { wrong_every = 3 }
environment = { workdir = "/request", setup = { workdir = "/srv" } }
[[requests]]
name = "b"
"#,
    );
    let v = launch(&ws, &file, &["--config", &path(&cfg)], &[]);
    let a = request(&v, "a");
    assert_eq!(
        a["benchmark"],
        json!({"id": "example_exact_match", "params": {"size": 3, "seed": 2, "case_sensitive": true}})
    );
    assert_eq!(
        a["harness"],
        json!({"id": "example_calculator", "params": {"delay_ms": 1, "wrong_every": 3}})
    );
    assert_eq!(a["environment"]["id"], "host_process");
    assert_eq!(a["environment"]["params"], json!({"workdir": "/request"}));
    assert_eq!(a["environment"]["setup"]["os"], "linux");
    assert_eq!(a["environment"]["setup"]["workdir"], "/srv");

    let b = request(&v, "b");
    assert_eq!(
        b["benchmark"]["params"],
        json!({"size": 2, "seed": 2, "case_sensitive": true})
    );
    assert_eq!(
        b["harness"]["params"],
        json!({"delay_ms": 1, "wrong_every": 2})
    );
    assert_eq!(b["environment"]["params"], json!({"workdir": "/defaults"}));
    assert_eq!(b["environment"]["setup"]["workdir"], Value::Null);

    // Without the config file the config layer is simply absent.
    let v = launch(&ws, &file, &[], &[]);
    assert_eq!(
        request(&v, "b")["benchmark"]["params"],
        json!({"size": 2, "seed": 2})
    );
}

/// Row 2: model fields — `defaults.model`, then the named request's model (deep-merged).
/// This orchestration file is YAML.
#[test]
fn model_defaults_then_request_model() {
    let ws = Workspace::new();
    let file = ws.write(
        "orch/model.yaml",
        r#"
version: 1
defaults:
  model:
    id: m-default
    base_url: http://127.0.0.1:9/v1
    api_protocol: openai-chat
    params: {temperature: 0.1, top_p: 0.9}
  benchmark: {id: example_exact_match}
  harness: {id: example_calculator}
requests:
  - name: a
    model: {id: m-a, params: {temperature: 0.7}, api_protocol: [anthropic]}
  - name: b
"#,
    );
    let v = launch(&ws, &file, &[], &[]);
    assert_eq!(
        request(&v, "a")["model"],
        json!({
            "id": "m-a",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "",
            "api_protocol": ["anthropic"],
            "params": {"temperature": 0.7, "top_p": 0.9},
            "wrap_api_key": false
        })
    );
    assert_eq!(
        request(&v, "b")["model"],
        json!({
            "id": "m-default",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "",
            "api_protocol": "openai-chat",
            "params": {"temperature": 0.1, "top_p": 0.9},
            "wrap_api_key": false
        })
    );
}

/// Row 3: execution fields other than task concurrency — ExecutionSpec defaults, then config
/// `execution`, then `defaults.execution`, then the named request's execution.
#[test]
fn execution_defaults_then_config_then_defaults_then_request() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/execution.toml",
        r#"
[execution]
max_retries = 1
timeout_multiplier = 2.0
enable_analysis = false
"#,
    );
    let file = orchestration(
        &ws,
        "execution.toml",
        r#"
[defaults.execution]
max_retries = 2
attempts = { k = 2 }
[[requests]]
name = "a"
execution = { max_retries = 3, attempts = { strategy = "pass" }, enabled_recipes = ["example_recipe"] }
[[requests]]
name = "b"
"#,
    );
    let v = launch(&ws, &file, &["--config", &path(&cfg)], &[]);
    let a = &request(&v, "a")["execution"];
    assert_eq!(a["max_retries"], 3);
    assert_eq!(a["attempts"], json!({"k": 2, "strategy": "pass"}));
    assert_eq!(a["enabled_recipes"], json!(["example_recipe"]));
    assert_eq!(a["timeout_multiplier"], 2.0);
    assert_eq!(a["enable_analysis"], false);
    assert_eq!(a["retry_min_delay_seconds"], 5.0, "untouched default");
    let b = &request(&v, "b")["execution"];
    assert_eq!(b["max_retries"], 2);
    assert_eq!(b["attempts"], json!({"k": 2, "strategy": "avg"}));
    assert_eq!(b["enabled_recipes"], json!([]));
    assert_eq!(b["timeout_multiplier"], 2.0);
    assert_eq!(b["enable_analysis"], false);

    let v = launch(&ws, &file, &[], &[]);
    let b = &request(&v, "b")["execution"];
    assert_eq!(b["timeout_multiplier"], 1.0);
    assert_eq!(b["enable_analysis"], true);
}

/// Row 4: per-request runtime — RunRuntimeSpec defaults and the configured reuse, then
/// `defaults.runtime` (where `--reuse` lands), then the named request's runtime.
#[test]
fn request_runtime_config_reuse_then_defaults_then_request() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/reuse.toml",
        "[runtime]\nreuse = true\ncheckpoint_resume = false\n",
    );
    let plain = orchestration(&ws, "plain.toml", "[[requests]]\nname = \"a\"\n");
    let v = launch(&ws, &plain, &[], &[]);
    assert_eq!(
        request(&v, "a")["runtime"],
        json!({"reuse": null, "reuse_run_id": "", "checkpoint_resume": null})
    );
    let v = launch(&ws, &plain, &["--config", &path(&cfg)], &[]);
    assert_eq!(
        request(&v, "a")["runtime"],
        json!({"reuse": true, "reuse_run_id": "", "checkpoint_resume": false})
    );

    let file = orchestration(
        &ws,
        "runtime.toml",
        r#"
[defaults.runtime]
checkpoint_resume = true
[[requests]]
name = "a"
runtime = { reuse = false }
[[requests]]
name = "b"
runtime = { reuse_run_id = "20250101_120000" }
[[requests]]
name = "c"
"#,
    );
    // `--dry-run` checks what a real launch checks: the named reuse source must exist.
    ws.write("project/work/results/b/20250101_120000/run_info.json", "{}");
    let v = launch(&ws, &file, &["--config", &path(&cfg)], &[]);
    assert_eq!(
        request(&v, "a")["runtime"],
        json!({"reuse": false, "reuse_run_id": "", "checkpoint_resume": true})
    );
    assert_eq!(
        request(&v, "b")["runtime"],
        json!({"reuse": true, "reuse_run_id": "20250101_120000", "checkpoint_resume": true})
    );
    assert_eq!(
        request(&v, "c")["runtime"],
        json!({"reuse": true, "reuse_run_id": "", "checkpoint_resume": true})
    );

    // `--reuse` sets defaults.runtime.reuse: a request's own runtime still wins.
    let v = launch(&ws, &file, &["--reuse"], &[]);
    assert_eq!(request(&v, "a")["runtime"]["reuse"], false);
    assert_eq!(request(&v, "c")["runtime"]["reuse"], true);
}

/// Row 5: output — OutputSpec defaults, then `defaults.output`, then the named request's
/// output; `--run-id` applies to every request.
#[test]
fn output_defaults_then_request_output() {
    let ws = Workspace::new();
    let file = orchestration(
        &ws,
        "output.toml",
        r#"
[defaults.output]
run_name = "exp"
run_id = "d1"
[[requests]]
name = "a"
output = { run_id = "r1" }
[[requests]]
name = "b"
[[requests]]
name = "c"
output = { run_name = "other/nested" }
"#,
    );
    let v = launch(&ws, &file, &[], &[]);
    assert_eq!(
        request(&v, "a")["output"],
        json!({"run_name": "exp", "run_id": "r1"})
    );
    assert_eq!(
        request(&v, "b")["output"],
        json!({"run_name": "exp", "run_id": "d1"})
    );
    assert_eq!(
        request(&v, "c")["output"],
        json!({"run_name": "other/nested", "run_id": "d1"})
    );

    let bare = orchestration(&ws, "bare.toml", "[[requests]]\nname = \"a\"\n");
    let v = launch(&ws, &bare, &[], &[]);
    assert_eq!(
        request(&v, "a")["output"],
        json!({"run_name": "", "run_id": ""})
    );

    let v = launch(&ws, &file, &["--run-id", "cli"], &[]);
    for name in ["a", "b", "c"] {
        assert_eq!(request(&v, name)["output"]["run_id"], "cli", "{name}");
    }
}

/// Row 6: orchestration runtime — runtime defaults, then config `runtime`, then the file's
/// `runtime`, then command-line overrides (maps dict-updated at every step).
#[test]
fn orchestration_runtime_defaults_then_config_then_file_then_cli() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/runtime.toml",
        r#"
[runtime]
results_dir = "cfg-results"
timeout_seconds = 100
log_level = "warning"
provider_limits = { docker = 4, modal = 3 }
env_open_qps = { modal = 2.0 }
"#,
    );
    let file = orchestration(
        &ws,
        "runtime.toml",
        r#"
[runtime]
results_dir = "file-results"
cleanup_grace_seconds = 5
provider_limits = { docker = 2 }
[[requests]]
name = "a"
"#,
    );
    let bare = orchestration(&ws, "bare.toml", "[[requests]]\nname = \"a\"\n");
    let v = launch(&ws, &bare, &[], &[]);
    assert_eq!(v["runtime"]["results_dir"], in_cwd(&ws, "results"));
    assert_eq!(v["runtime"]["timeout_seconds"], 360000.0);
    assert_eq!(v["runtime"]["cleanup_grace_seconds"], 30.0);

    let v = launch(&ws, &bare, &["--config", &path(&cfg)], &[]);
    assert_eq!(v["runtime"]["results_dir"], in_cwd(&ws, "cfg-results"));
    assert_eq!(v["runtime"]["timeout_seconds"], 100.0);
    assert_eq!(v["runtime"]["log_level"], "WARNING");

    let v = launch(&ws, &file, &["--config", &path(&cfg)], &[]);
    let rt = &v["runtime"];
    assert_eq!(rt["results_dir"], in_cwd(&ws, "file-results"));
    assert_eq!(rt["timeout_seconds"], 100.0);
    assert_eq!(rt["cleanup_grace_seconds"], 5.0);
    assert_eq!(
        rt["provider_limits"],
        json!({"docker": 2, "host_process": 128, "modal": 3, "sandbox": 128})
    );

    let v = launch(
        &ws,
        &file,
        &[
            "--config",
            &path(&cfg),
            "--results-dir",
            "cli-results",
            "--timeout-seconds",
            "0",
            "--log-level",
            "debug",
            "--provider-limit",
            "modal=1",
            "--env-open-qps",
            "modal=0.5",
        ],
        &[],
    );
    let rt = &v["runtime"];
    assert_eq!(rt["results_dir"], in_cwd(&ws, "cli-results"));
    assert_eq!(rt["timeout_seconds"], 0.0);
    assert_eq!(rt["cleanup_grace_seconds"], 5.0);
    assert_eq!(rt["log_level"], "DEBUG");
    assert_eq!(
        rt["provider_limits"],
        json!({"docker": 2, "host_process": 128, "modal": 1, "sandbox": 128})
    );
    assert_eq!(rt["env_open_qps"], json!({"modal": 0.5}));
}

/// Global `task_concurrency`: command line, then the file, then config `execution`, then 32 —
/// and the resolved value is written into every request. This orchestration file is JSON.
#[test]
fn task_concurrency_cli_then_file_then_config_then_default_in_every_request() {
    let ws = Workspace::new();
    let body = |task_concurrency: &str| {
        format!(
            r#"{{"version": 1, {task_concurrency}
                "defaults": {{"model": {{"id": "m"}},
                              "benchmark": {{"id": "example_exact_match"}},
                              "harness": {{"id": "example_calculator"}}}},
                "requests": [{{"name": "a"}}, {{"name": "b", "execution": {{"max_retries": 1}}}}]}}"#
        )
    };
    let without = ws.write("orch/without.json", &body(""));
    let with = ws.write("orch/with.json", &body(r#""task_concurrency": 16,"#));
    let cfg = ws.write("cfg/tc.toml", "[execution]\ntask_concurrency = 7\n");
    let cfg = path(&cfg);

    let cases: [(&Path, Vec<&str>, u64); 4] = [
        (&without, vec![], 32),
        (&without, vec!["--config", &cfg], 7),
        (&with, vec!["--config", &cfg], 16),
        (&with, vec!["--config", &cfg, "--task-concurrency", "3"], 3),
    ];
    for (file, extra, expected) in cases {
        let v = launch(&ws, file, &extra, &[]);
        assert_eq!(v["task_concurrency"], expected, "{extra:?}");
        let requests = v["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 2);
        for r in requests {
            assert_eq!(r["execution"]["task_concurrency"], expected, "{extra:?}");
        }
    }
}

/// Requests keep declaration order with stable keys `<orchestration id>/<index>`.
#[test]
fn requests_keep_declaration_order_and_keys() {
    let ws = Workspace::new();
    let file = orchestration(
        &ws,
        "order.toml",
        "[[requests]]\nname = \"zeta\"\n[[requests]]\nname = \"alpha\"\n[[requests]]\nname = \"mid\"\n",
    );
    let v = launch(&ws, &file, &[], &[]);
    let id = v["orchestration_id"].as_str().unwrap();
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    let requests = v["requests"].as_array().unwrap();
    for (index, (r, name)) in requests.iter().zip(["zeta", "alpha", "mid"]).enumerate() {
        assert_eq!(r["name"], name);
        assert_eq!(r["index"], index);
        assert_eq!(r["key"], format!("{id}/{index}"));
        assert_eq!(r["metadata"]["request_name"], name);
    }
}

/// One complete `launch --dry-run` output (paths and the random orchestration id redacted).
#[test]
fn launch_dry_run_snapshot() {
    let ws = Workspace::new();
    ws.write(
        "project/config.toml",
        r#"
[benchmarks.example_exact_match]
seed = 4
[execution]
max_retries = 1
"#,
    );
    let file = ws.write(
        "orch/nightly.yaml",
        r#"
version: 1
name: nightly
task_concurrency: 8
runtime:
  results_dir: nightly-results
  provider_limits: {host_process: 4}
defaults:
  model: {id: my-model, base_url: "http://127.0.0.1:9/v1", api_protocol: openai-chat}
  benchmark: {id: example_exact_match, size: 3}
  harness: {id: example_calculator}
  execution: {attempts: {k: 2, strategy: pass}}
  output: {run_name: exp}
requests:
  - name: plain
  - name: strict
    benchmark: {case_sensitive: true, sample_ids: [arith-0001]}
    harness: {wrong_every: 2}
    environment:
      id: sandbox
      run_network_policy: {network_mode: allowlist, allowed_hosts: [pypi.org]}
      evaluation_environment_mode: reuse
    execution: {max_retries: 2, run_timeout_seconds: 30}
    runtime: {reuse: true}
    output: {run_id: r1}
"#,
    );
    let out = ws.run_ok(&["launch", &path(&file), "--dry-run"], &[]);
    assert_eq!(out.stderr, "");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let id = v["orchestration_id"].as_str().unwrap();
    assert!(!id.is_empty());
    let stdout = out.stdout.replace(id, "[ID]");
    insta::assert_snapshot!("launch_dry_run", ws.redact(&stdout));
}

/// `relative` under the workspace's working directory, as the host resolves a relative
/// runtime path (issue 58: every runtime path is absolute once resolved).
fn in_cwd(ws: &Workspace, relative: &str) -> String {
    ws.cwd.join(relative).display().to_string()
}
