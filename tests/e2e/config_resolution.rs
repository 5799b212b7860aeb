//! Single-run request resolution (`run --dry-run`), one test per row of the seed's single-run
//! precedence table, and configuration files: user < nearest project < each `--config` in
//! order, TOML/YAML/JSON, deep merge, environment layers.

use std::path::Path;

use agentcompass_e2e::{published_results, read_json, run_dir, Workspace};
use serde_json::{json, Value};

const RUN: [&str; 5] = [
    "run",
    "example_exact_match",
    "example_calculator",
    "m1",
    "--dry-run",
];

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `run example_exact_match example_calculator m1 --dry-run EXTRA...`.
fn run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = RUN.to_vec();
    args.extend_from_slice(extra);
    args
}

/// [`run_args`], run and parsed.
fn dry_run(ws: &Workspace, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let v = ws.run_json(&run_args(extra), env);
    assert!(v["request"].is_object() && v["runtime"].is_object(), "{v}");
    v
}

/// `--config FILE` for each file, in order.
fn configs(files: &[&Path]) -> Vec<String> {
    files
        .iter()
        .flat_map(|f| ["--config".to_string(), path(f)])
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

// --- single-run table -------------------------------------------------------------------

/// Row 1: Benchmark, Harness and Environment params — the selected config entry, then the
/// explicit `--*-params`. Entries of unselected ids are not applied.
#[test]
fn component_params_config_entry_then_explicit_params() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/components.toml",
        r#"
[benchmarks.example_exact_match]
size = 7
seed = 3
[benchmarks.some_other_benchmark]
size = 100
[harnesses.example_calculator]
delay_ms = 5
wrong_every = 4
[environments.host_process]
workdir = "/cfg/work"
"#,
    );
    let cfg = path(&cfg);

    let v = dry_run(&ws, &["--config", &cfg], &[]);
    let r = &v["request"];
    assert_eq!(
        r["benchmark"],
        json!({"id": "example_exact_match", "params": {"size": 7, "seed": 3}})
    );
    assert_eq!(
        r["harness"],
        json!({"id": "example_calculator", "params": {"delay_ms": 5, "wrong_every": 4}})
    );
    assert_eq!(r["environment"]["id"], "host_process");
    assert_eq!(r["environment"]["params"], json!({"workdir": "/cfg/work"}));

    let v = dry_run(
        &ws,
        &[
            "--config",
            &cfg,
            "--benchmark-params",
            r#"{"size": 9, "case_sensitive": true}"#,
            "--harness-params",
            r#"{"wrong_every": 2}"#,
            "--env-params",
            r#"{"workdir": "/cli/work"}"#,
        ],
        &[],
    );
    let r = &v["request"];
    assert_eq!(r["benchmark"]["params"]["size"], 9);
    assert_eq!(r["benchmark"]["params"]["seed"], 3);
    assert_eq!(r["benchmark"]["params"]["case_sensitive"], true);
    assert_eq!(
        r["benchmark"]["params"].as_object().map(|m| m.len()),
        Some(3)
    );
    assert_eq!(
        r["harness"]["params"],
        json!({"delay_ms": 5, "wrong_every": 2})
    );
    assert_eq!(r["environment"]["params"], json!({"workdir": "/cli/work"}));
}

/// Row 2: ExecutionSpec fields — dataclass defaults, then config `execution`, then
/// `--execution-params`, then the dedicated flags (`--k`, `--max-retries`,
/// `--task-concurrency`, `--recipe`, ...).
#[test]
fn execution_defaults_then_config_then_execution_params_then_flags() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/execution.toml",
        r#"
[execution]
max_retries = 1
task_concurrency = 4
timeout_multiplier = 2.0
enable_analysis = false
[execution.attempts]
k = 2
"#,
    );
    let cfg = path(&cfg);

    let defaults = dry_run(&ws, &[], &[]);
    let e = &defaults["request"]["execution"];
    assert_eq!(e["task_concurrency"], 32);
    assert_eq!(e["attempts"], json!({"k": 1, "strategy": "avg"}));
    assert_eq!(e["max_retries"], 0);
    assert_eq!(e["timeout_multiplier"], 1.0);
    assert_eq!(e["enable_analysis"], true);
    assert_eq!(e["enabled_recipes"], json!([]));

    let config = dry_run(&ws, &["--config", &cfg], &[]);
    let e = &config["request"]["execution"];
    assert_eq!(e["task_concurrency"], 4);
    assert_eq!(e["attempts"], json!({"k": 2, "strategy": "avg"}));
    assert_eq!(e["max_retries"], 1);
    assert_eq!(e["timeout_multiplier"], 2.0);
    assert_eq!(e["enable_analysis"], false);
    assert_eq!(e["retry_min_delay_seconds"], 5.0, "untouched default");

    let params = dry_run(
        &ws,
        &[
            "--config",
            &cfg,
            "--execution-params",
            r#"{"max_retries": 3, "task_concurrency": 6, "attempts": {"strategy": "pass"}}"#,
        ],
        &[],
    );
    let e = &params["request"]["execution"];
    assert_eq!(e["max_retries"], 3);
    assert_eq!(e["task_concurrency"], 6);
    assert_eq!(
        e["attempts"],
        json!({"k": 2, "strategy": "pass"}),
        "attempts merge by key"
    );
    assert_eq!(e["timeout_multiplier"], 2.0);

    let flags = dry_run(
        &ws,
        &[
            "--config",
            &cfg,
            "--execution-params",
            r#"{"max_retries": 3, "task_concurrency": 6, "attempts": {"strategy": "pass", "k": 3}}"#,
            "--max-retries",
            "5",
            "--k",
            "4",
            "--task-concurrency",
            "9",
            "--attempt-strategy",
            "avg",
            "--retry-pattern-list",
            r#"["timeout", "5\\d\\d"]"#,
            "--recipe",
            "example_recipe",
            "--keep-environment",
        ],
        &[],
    );
    let e = &flags["request"]["execution"];
    assert_eq!(e["max_retries"], 5);
    assert_eq!(e["task_concurrency"], 9);
    assert_eq!(e["attempts"], json!({"k": 4, "strategy": "avg"}));
    assert_eq!(e["retry_pattern_list"], json!(["timeout", "5\\d\\d"]));
    assert_eq!(e["enabled_recipes"], json!(["example_recipe"]));
    assert_eq!(e["keep_environment"], true);
    assert_eq!(e["timeout_multiplier"], 2.0);
    assert_eq!(e["enable_analysis"], false);
}

/// Row 3: process runtime options — runtime defaults, then config `runtime`, then explicit
/// flags; provider limits and environment open rates are dict-updated.
#[test]
fn runtime_options_defaults_then_config_then_flags() {
    let ws = Workspace::new();
    let defaults = dry_run(&ws, &[], &[]);
    let rt = &defaults["runtime"];
    assert_eq!(rt["results_dir"], in_cwd(&ws, "results"));
    // The user's cache, never the working directory (upstream's `./data`).
    let data = ws.home.join(".cache/agentcompass-host/data");
    assert_eq!(rt["data_dir"], data.to_str().unwrap());
    assert_eq!(rt["timeout_seconds"], 360000.0);
    assert_eq!(rt["cleanup_grace_seconds"], 30.0);
    assert_eq!(rt["progress"], "auto");
    assert_eq!(rt["log_level"], "INFO");
    assert_eq!(rt["file_log_level"], "DEBUG");
    assert_eq!(
        rt["provider_limits"],
        json!({"docker": 128, "host_process": 128, "sandbox": 128})
    );
    assert_eq!(rt["env_open_qps"], json!({}));

    let cfg = ws.write(
        "cfg/runtime.toml",
        r#"
[runtime]
results_dir = "cfg-results"
timeout_seconds = 100
log_level = "warning"
progress = "plain"
provider_limits = { docker = 4, modal = 3 }
env_open_qps = { modal = 5.0 }
"#,
    );
    let cfg = path(&cfg);
    let config = dry_run(&ws, &["--config", &cfg], &[]);
    let rt = &config["runtime"];
    assert_eq!(rt["results_dir"], in_cwd(&ws, "cfg-results"));
    assert_eq!(rt["timeout_seconds"], 100.0);
    assert_eq!(rt["log_level"], "WARNING");
    assert_eq!(rt["progress"], "plain");
    assert_eq!(rt["cleanup_grace_seconds"], 30.0);
    assert_eq!(
        rt["provider_limits"],
        json!({"docker": 4, "host_process": 128, "modal": 3, "sandbox": 128})
    );
    assert_eq!(rt["env_open_qps"], json!({"modal": 5.0}));

    let flags = dry_run(
        &ws,
        &[
            "--config",
            &cfg,
            "--results-dir",
            "cli-results",
            "--timeout-seconds",
            "10",
            "--cleanup-grace-seconds",
            "2.5",
            "--progress",
            "none",
            "--provider-limit",
            "docker=9",
            "--provider-limit",
            "extra=1",
            "--env-open-qps",
            "docker=0.5",
        ],
        &[],
    );
    let rt = &flags["runtime"];
    assert_eq!(rt["results_dir"], in_cwd(&ws, "cli-results"));
    assert_eq!(rt["timeout_seconds"], 10.0);
    assert_eq!(rt["cleanup_grace_seconds"], 2.5);
    assert_eq!(rt["progress"], "none");
    assert_eq!(rt["log_level"], "WARNING", "config value kept");
    assert_eq!(
        rt["provider_limits"],
        json!({"docker": 9, "extra": 1, "host_process": 128, "modal": 3, "sandbox": 128})
    );
    assert_eq!(rt["env_open_qps"], json!({"docker": 0.5, "modal": 5.0}));
}

/// Row 4: the model comes from explicit arguments only; configuration never supplies it.
#[test]
fn model_comes_from_explicit_arguments_only() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/everything.toml",
        r#"
[benchmarks.example_exact_match]
size = 2
[execution]
max_retries = 1
[runtime]
results_dir = "r"
"#,
    );
    let v = dry_run(&ws, &["--config", &path(&cfg)], &[]);
    assert_eq!(
        v["request"]["model"],
        json!({"id": "m1", "base_url": "", "api_key": "", "api_protocol": "", "params": {}, "wrap_api_key": false})
    );

    let v = dry_run(
        &ws,
        &[
            "--config",
            &path(&cfg),
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--model-api-protocol",
            r#"["openai-chat", "anthropic"]"#,
            "--model-params",
            r#"{"temperature": 0.5, "max_tokens": 64}"#,
        ],
        &[],
    );
    assert_eq!(
        v["request"]["model"],
        json!({
            "id": "m1",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "",
            "api_protocol": ["openai-chat", "anthropic"],
            "params": {"temperature": 0.5, "max_tokens": 64},
            "wrap_api_key": false
        })
    );
    let v = dry_run(&ws, &["--model-api-protocol", "auto"], &[]);
    assert_eq!(v["request"]["model"]["api_protocol"], "auto");

    // A config file cannot carry a model.
    let models = ws.write("cfg/models.toml", "[models.m1]\nbase_url = \"http://x\"\n");
    let out = ws.run_expect(2, &run_args(&["--config", &path(&models)]), &[]);
    assert!(
        out.stderr
            .contains("models: a models section is not allowed"),
        "{out:?}"
    );
}

/// Row 5a: output from explicit arguments only.
#[test]
fn output_comes_from_explicit_arguments() {
    let ws = Workspace::new();
    let v = dry_run(&ws, &[], &[]);
    assert_eq!(
        v["request"]["output"],
        json!({"run_name": "", "run_id": ""})
    );
    let v = dry_run(
        &ws,
        &["--run-name", "exp/nightly", "--run-id", "20250101_120000"],
        &[],
    );
    assert_eq!(
        v["request"]["output"],
        json!({"run_name": "exp/nightly", "run_id": "20250101_120000"})
    );
    assert_eq!(v["request"]["metadata"]["request_name"], "");
}

/// Row 5b: per-request reuse from explicit arguments; the configured `runtime.reuse` (and
/// `runtime.checkpoint_resume`) apply only when the flags are not given.
#[test]
fn configured_reuse_applies_only_without_reuse_flag() {
    let ws = Workspace::new();
    let v = dry_run(&ws, &[], &[]);
    assert_eq!(
        v["request"]["runtime"],
        json!({"reuse": null, "reuse_run_id": "", "checkpoint_resume": null})
    );

    let on = ws.write(
        "cfg/reuse-on.toml",
        "[runtime]\nreuse = true\ncheckpoint_resume = false\n",
    );
    let v = dry_run(&ws, &["--config", &path(&on)], &[]);
    assert_eq!(
        v["request"]["runtime"],
        json!({"reuse": true, "reuse_run_id": "", "checkpoint_resume": false})
    );

    let off = ws.write(
        "cfg/reuse-off.toml",
        "[runtime]\nreuse = false\ncheckpoint_resume = true\n",
    );
    let v = dry_run(&ws, &["--config", &path(&off), "--reuse"], &[]);
    assert_eq!(
        v["request"]["runtime"],
        json!({"reuse": true, "reuse_run_id": "", "checkpoint_resume": true})
    );
    // The reuse source must exist, as in a real run.
    ws.write(
        "project/work/results/m1_example_exact_match_example_calculator/20250101_120000/run_info.json",
        "{}",
    );
    let v = dry_run(
        &ws,
        &[
            "--config",
            &path(&off),
            "--reuse",
            "20250101_120000",
            "--no-checkpoint-resume",
        ],
        &[],
    );
    assert_eq!(
        v["request"]["runtime"],
        json!({"reuse": true, "reuse_run_id": "20250101_120000", "checkpoint_resume": false})
    );
    // The per-request keys do not leak into the process runtime options.
    assert!(v["runtime"].get("reuse").is_none(), "{}", v["runtime"]);
}

// --- configuration files ----------------------------------------------------------------

/// User config < nearest project config < each `--config` in argument order; every file
/// loaded is recorded in `metadata.config_path`.
#[test]
fn user_then_project_then_explicit_configs_in_argument_order() {
    let ws = Workspace::new();
    let user = ws.write(
        "home/.config/agentcompass/config.toml",
        r#"
[benchmarks.example_exact_match]
size = 1
seed = 1
case_sensitive = true
[harnesses.example_calculator]
delay_ms = 1
"#,
    );
    let project = ws.write(
        "project/config.yaml",
        r#"
benchmarks:
  example_exact_match:
    size: 2
    seed: 2
"#,
    );
    let a = ws.write(
        "cfg/a.json",
        r#"{"benchmarks": {"example_exact_match": {"size": 3}}, "harnesses": {"example_calculator": {"wrong_every": 3}}}"#,
    );
    let b = ws.write("cfg/b.toml", "[benchmarks.example_exact_match]\nsize = 4\n");

    let v = dry_run(&ws, &[], &[]);
    assert_eq!(
        v["request"]["benchmark"]["params"],
        json!({"size": 2, "seed": 2, "case_sensitive": true})
    );
    assert_eq!(
        v["request"]["metadata"]["config_path"],
        json!([path(&user), path(&project)]).to_string()
    );

    let v = dry_run(&ws, &strs(&configs(&[&a, &b])), &[]);
    let r = &v["request"];
    assert_eq!(
        r["benchmark"]["params"],
        json!({"size": 4, "seed": 2, "case_sensitive": true})
    );
    assert_eq!(
        r["harness"]["params"],
        json!({"delay_ms": 1, "wrong_every": 3})
    );
    assert_eq!(
        r["metadata"]["config_path"],
        json!([path(&user), path(&project), path(&a), path(&b)]).to_string()
    );

    let v = dry_run(&ws, &strs(&configs(&[&b, &a])), &[]);
    assert_eq!(
        v["request"]["benchmark"]["params"]["size"], 3,
        "argument order decides"
    );
}

/// `$XDG_CONFIG_HOME/agentcompass/` replaces `~/.config/agentcompass/` when set.
#[test]
fn xdg_config_home_replaces_the_home_config() {
    let ws = Workspace::new();
    ws.write(
        "home/.config/agentcompass/config.toml",
        "[benchmarks.example_exact_match]\nsize = 1\n",
    );
    let xdg = ws.write(
        "xdg/agentcompass/config.json",
        r#"{"benchmarks": {"example_exact_match": {"seed": 9}}}"#,
    );
    let xdg_home = path(&ws.root().join("xdg"));
    let v = dry_run(&ws, &[], &[("XDG_CONFIG_HOME", &xdg_home)]);
    assert_eq!(v["request"]["benchmark"]["params"], json!({"seed": 9}));
    assert_eq!(v["request"]["metadata"]["config_path"], path(&xdg));
}

/// Only the nearest project config walking up from the working directory is loaded, and a
/// file reached twice (project and `--config`) is loaded once.
#[test]
fn nearest_project_config_only_and_duplicates_load_once() {
    let ws = Workspace::new();
    ws.write(
        "config.toml",
        "[benchmarks.example_exact_match]\nsize = 1\nseed = 1\n",
    );
    let near = ws.write(
        "project/config.toml",
        "[benchmarks.example_exact_match]\nsize = 2\n",
    );
    let v = dry_run(&ws, &[], &[]);
    assert_eq!(v["request"]["benchmark"]["params"], json!({"size": 2}));
    assert_eq!(v["request"]["metadata"]["config_path"], path(&near));

    let v = dry_run(&ws, &["--config", &path(&near)], &[]);
    assert_eq!(v["request"]["metadata"]["config_path"], path(&near));
}

/// TOML, YAML and JSON files are all accepted and mean the same thing.
#[test]
fn toml_yaml_and_json_configs_are_equivalent() {
    let ws = Workspace::new();
    let toml = ws.write(
        "cfg/c.toml",
        r#"
[benchmarks.example_exact_match]
size = 3
sample_ids = ["arith-0001"]
[execution]
max_retries = 2
[execution.attempts]
strategy = "pass"
[runtime]
results_dir = "out"
"#,
    );
    let yaml = ws.write(
        "cfg/c.yaml",
        r#"
benchmarks:
  example_exact_match:
    size: 3
    sample_ids: [arith-0001]
execution:
  max_retries: 2
  attempts: {strategy: pass}
runtime:
  results_dir: out
"#,
    );
    let json_file = ws.write(
        "cfg/c.json",
        r#"{"benchmarks": {"example_exact_match": {"size": 3, "sample_ids": ["arith-0001"]}},
            "execution": {"max_retries": 2, "attempts": {"strategy": "pass"}},
            "runtime": {"results_dir": "out"}}"#,
    );
    let mut seen = Vec::new();
    for file in [&toml, &yaml, &json_file] {
        let mut v = dry_run(&ws, &["--config", &path(file)], &[]);
        assert_eq!(v["request"]["metadata"]["config_path"], path(file));
        v["request"]["metadata"]["config_path"] = Value::Null;
        assert_eq!(
            v["request"]["benchmark"]["params"],
            json!({"size": 3, "sample_ids": ["arith-0001"]})
        );
        assert_eq!(v["request"]["execution"]["max_retries"], 2);
        assert_eq!(v["request"]["execution"]["attempts"]["strategy"], "pass");
        assert_eq!(v["runtime"]["results_dir"], in_cwd(&ws, "out"));
        seen.push(v);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], seen[2]);
}

/// Deep merge across files: mappings merge by key at every depth, lists are replaced.
#[test]
fn deep_merge_merges_mappings_and_replaces_lists() {
    let ws = Workspace::new();
    let first = ws.write(
        "cfg/first.toml",
        r#"
[benchmarks.example_exact_match]
sample_ids = ["arith-0000", "arith-0001", "arith-0002"]
seed = 1
[execution]
retry_pattern_list = ["x", "y"]
[execution.attempts]
k = 2
strategy = "pass"
[execution.analysis_params.Outer]
x = 1
y = 2
[execution.artifact_limits]
max_mb = 10
"#,
    );
    let second = ws.write(
        "cfg/second.yaml",
        r#"
benchmarks:
  example_exact_match:
    sample_ids: [arith-0003]
execution:
  retry_pattern_list: [w]
  attempts: {k: 3}
  analysis_params: {Outer: {y: 3}, Other: true}
  artifact_limits: {max_files: 5}
"#,
    );
    let args = configs(&[&first, &second]);
    // The analyzer ids are made up: the analyzers stay off, or the dry run (which checks what
    // a run checks) would refuse them.
    let mut dry = strs(&args);
    dry.push("--no-enable-analysis");
    let v = dry_run(&ws, &dry, &[]);
    let r = &v["request"];
    assert_eq!(
        r["benchmark"]["params"],
        json!({"sample_ids": ["arith-0003"], "seed": 1})
    );
    let e = &r["execution"];
    assert_eq!(e["retry_pattern_list"], json!(["w"]));
    assert_eq!(e["attempts"], json!({"k": 3, "strategy": "pass"}));
    assert_eq!(
        e["analysis_params"],
        json!({"Outer": {"x": 1, "y": 3}, "Other": true})
    );
    assert_eq!(
        e["artifact_limits"],
        json!({"max_mb": 10, "max_files": 5, "timeout_seconds": 600.0})
    );

    // `config show` prints the same merge.
    let mut show = vec!["config", "show", "--format", "json"];
    show.extend(strs(&args));
    let merged = ws.run_json(&show, &[]);
    assert_eq!(
        merged["execution"]["analysis_params"],
        json!({"Outer": {"x": 1, "y": 3}, "Other": true})
    );
    assert_eq!(
        merged["benchmarks"]["example_exact_match"]["sample_ids"],
        json!(["arith-0003"])
    );
}

/// Environment layers keep file boundaries: `setup` merges key-wise, env-var maps union, and a
/// later file setting `environments.<id>` to null clears every earlier layer.
#[test]
fn environment_layers_merge_setup_keywise_and_null_clears() {
    let ws = Workspace::new();
    let e1 = ws.write(
        "cfg/e1.toml",
        r#"
[environments.host_process]
workdir = "/e1"
env_variables = { A = "${A1}" }
setup = { os = "windows", build_timeout_seconds = 10.0 }
"#,
    );
    let e2 = ws.write(
        "cfg/e2.yaml",
        r#"
environments:
  host_process:
    setup: {workdir: /w}
    env_variables: {B: "${B1}"}
"#,
    );
    let e3 = ws.write("cfg/e3.json", r#"{"environments": {"host_process": null}}"#);
    let e4 = ws.write(
        "cfg/e4.toml",
        "[environments.host_process.env_variables]\nC = \"${C1}\"\n",
    );

    let mut args = configs(&[&e1, &e2]);
    args.extend([
        "--env-params".to_string(),
        r#"{"setup": {"os": "linux"}, "env_variables": {"D": "${D1}"}}"#.to_string(),
    ]);
    let v = dry_run(&ws, &strs(&args), &[]);
    let env = &v["request"]["environment"];
    assert_eq!(env["params"], json!({"workdir": "/e1"}));
    assert_eq!(
        env["setup"],
        json!({"os": "linux", "build_timeout_seconds": 10.0, "workdir": "/w", "image": null})
    );
    assert_eq!(
        env["env_variables"],
        json!({"A": "${A1}", "B": "${B1}", "D": "${D1}"})
    );

    let v = dry_run(&ws, &strs(&configs(&[&e1, &e2, &e3, &e4])), &[]);
    let env = &v["request"]["environment"];
    assert_eq!(env["params"], json!({}));
    assert_eq!(
        env["setup"],
        json!({"os": null, "build_timeout_seconds": null, "workdir": null, "image": null})
    );
    assert_eq!(env["env_variables"], json!({"C": "${C1}"}));
}

// --- snapshots --------------------------------------------------------------------------

/// One complete `run --dry-run` output (paths redacted).
#[test]
fn run_dry_run_snapshot() {
    let ws = Workspace::new();
    ws.write(
        "project/config.toml",
        r#"
[benchmarks.example_exact_match]
size = 3
seed = 7
[harnesses.example_calculator]
wrong_every = 2
[environments.sandbox]
run_network_policy = { network_mode = "allowlist", allowed_hosts = ["PyPI.org", "*.example.com"] }
setup = { workdir = "/srv/task" }
[execution]
max_retries = 1
[runtime]
results_dir = "results-cfg"
"#,
    );
    let out = ws.run_ok(
        &run_args(&[
            // The sandbox enforces an allowlist; a dry run checks what a run checks.
            "--env",
            "sandbox",
            "--k",
            "2",
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--model-api-protocol",
            "openai-chat",
            "--run-name",
            "exp",
            "--recipe",
            "example_recipe",
        ]),
        &[],
    );
    assert_eq!(out.stderr, "");
    insta::assert_snapshot!("run_dry_run", ws.redact(&out.stdout));
}

/// One `config show` (TOML) output: the files loaded, then the merged configuration.
#[test]
fn config_show_toml_snapshot() {
    let ws = Workspace::new();
    ws.write(
        "home/.config/agentcompass/config.toml",
        "[runtime]\nresults_dir = \"user-results\"\nprovider_limits = { docker = 4 }\n",
    );
    ws.write(
        "project/config.yaml",
        r#"
benchmarks:
  example_exact_match: {size: 3, sample_ids: [arith-0000]}
environments:
  host_process: {workdir: /srv}
"#,
    );
    let extra = ws.write(
        "cfg/extra.json",
        r#"{"execution": {"max_retries": 2, "attempts": {"k": 3}}, "runtime": {"provider_limits": {"modal": 1}}}"#,
    );
    let out = ws.run_ok(&["config", "show", "--config", &path(&extra)], &[]);
    assert_eq!(out.stderr, "");
    insta::assert_snapshot!("config_show_toml", ws.redact(&out.stdout));
}

#[test]
fn limits_for_providers_not_installed_are_kept_with_a_warning() {
    let ws = Workspace::new();
    let out = ws.run_ok(
        &run_args(&[
            "--provider-limit",
            "sandbx=3",
            "--provider-limit",
            "docker=2",
            "--env-open-qps",
            "modal=1",
        ]),
        &[],
    );
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: runtime."))
        .collect();
    assert_eq!(warnings.len(), 2, "{}", out.stderr);
    assert!(warnings[0].starts_with(
        "warning: runtime.provider_limits: no environment provider `sandbx` is installed (known: host_process, sandbox"
    ));
    assert!(warnings[1].starts_with(
        "warning: runtime.env_open_qps: no environment provider `modal` is installed"
    ));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["runtime"]["provider_limits"]["sandbx"], 3);
}

// --- typed `${VAR}` references ----------------------------------------------------------

/// The variables of [`typed_references_config`].
const TYPED_ENV: &[(&str, &str)] = &[
    ("BAR_SIZE", "3"),
    ("BAR_SEED", "4242"),
    ("BAR_CASE", "true"),
    ("BAR_WRONG", "2"),
    ("BAR_RETRIES", "1"),
    ("BAR_DELAY", "0.5"),
    ("BAR_K", "2"),
    ("BAR_BUILD", "30"),
    ("BAR_TIMEOUT", "45"),
    ("BAR_TEMPERATURE", "0.2"),
];

/// Integer and boolean parameters of the example benchmark and harness, execution numbers and
/// an environment setup number, each a whole-field `${VAR}`.
fn typed_references_config(ws: &Workspace) -> String {
    path(&ws.write(
        "cfg/typed.toml",
        r#"
[benchmarks.example_exact_match]
size = "${BAR_SIZE}"
seed = "${BAR_SEED}"
case_sensitive = "${BAR_CASE}"
[harnesses.example_calculator]
wrong_every = "${BAR_WRONG}"
[execution]
max_retries = "${BAR_RETRIES}"
retry_min_delay_seconds = "${BAR_DELAY}"
attempts = { k = "${BAR_K}" }
[environments.host_process]
setup = { build_timeout_seconds = "${BAR_BUILD}" }
"#,
    ))
}

/// Issue 13, bug 3: `seed = "${BAR_SEED}"` and its kind fill typed parameters. A real run
/// succeeds and evaluates the same tasks as literal values: component parameters convert by
/// their schema's type at execution (the request and `params.json` keep the references),
/// the host's typed fields (execution, environment setup, gateway settings in
/// `model.params`) by the host's types; a model generation parameter keeps the text.
#[test]
fn whole_field_references_fill_typed_parameters_in_a_real_run() {
    let ws = Workspace::new();
    let cfg = typed_references_config(&ws);
    let model_params = r#"{"timeout": "${BAR_TIMEOUT}", "temperature": "${BAR_TEMPERATURE}"}"#;
    let args = [
        "run",
        "example_exact_match",
        "example_calculator",
        "m1",
        "--config",
        &cfg,
        "--model-params",
        model_params,
        "--progress",
        "none",
    ];

    // Printed: component and model params as written, the host's typed fields converted.
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let v = ws.run_json(&dry, TYPED_ENV);
    let r = &v["request"];
    assert_eq!(
        r["benchmark"]["params"],
        json!({"size": "${BAR_SIZE}", "seed": "${BAR_SEED}", "case_sensitive": "${BAR_CASE}"})
    );
    assert_eq!(
        r["harness"]["params"],
        json!({"wrong_every": "${BAR_WRONG}"})
    );
    assert_eq!(r["execution"]["max_retries"], 1);
    assert_eq!(r["execution"]["retry_min_delay_seconds"], 0.5);
    assert_eq!(
        r["execution"]["attempts"],
        json!({"k": 2, "strategy": "avg"})
    );
    assert_eq!(r["environment"]["setup"]["build_timeout_seconds"], 30.0);
    assert_eq!(r["model"]["params"]["timeout"], "${BAR_TIMEOUT}");

    let out = ws.run_ok(&args, TYPED_ENV);
    let run = run_dir(&out);
    let params = read_json(&run.join("params.json"));
    assert_eq!(params["benchmark"]["params"]["seed"], "${BAR_SEED}");
    assert_eq!(
        params["model"]["params"]["temperature"],
        "${BAR_TEMPERATURE}"
    );
    let results = published_results(&run);
    assert_eq!(results.len(), 3, "size = ${{BAR_SIZE}} = 3: {results:?}");
    for (id, (attempt_dir, result)) in &results {
        // k = ${BAR_K} = 2 semantic attempts; wrong_every = ${BAR_WRONG} = 2 misses arith-0001.
        assert!(attempt_dir.ends_with("attempt-2"), "{id}: {attempt_dir:?}");
        assert_eq!(result["status"], "completed", "{id}: {result}");
        assert_eq!(
            result["metrics"]["correct"],
            id != "arith-0001",
            "{id}: {result}"
        );
    }

    // The same tasks as literal values, which differ from the default seed's.
    let truths = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "example_exact_match",
            "example_calculator",
            "m1",
            "--progress",
            "none",
        ];
        args.extend_from_slice(extra);
        let out = ws.run_ok(&args, &[]);
        let mut truths: Vec<(String, Value)> = published_results(&run_dir(&out))
            .into_iter()
            .map(|(id, (attempt, _))| (id, task_ground_truth(&attempt)))
            .collect();
        truths.sort_by(|a, b| a.0.cmp(&b.0));
        truths
    };
    let mut referenced: Vec<(String, Value)> = results
        .into_iter()
        .map(|(id, (attempt, _))| (id, task_ground_truth(&attempt)))
        .collect();
    referenced.sort_by(|a, b| a.0.cmp(&b.0));
    let literal = truths(&["--benchmark-params", r#"{"size": 3, "seed": 4242}"#]);
    assert_eq!(referenced, literal);
    assert_ne!(literal, truths(&["--benchmark-params", r#"{"size": 3}"#]));
}

/// A referenced value that does not convert is refused before anything is written, one line
/// naming the key path, the variable and the type but never the value; `--dry-run` warns.
#[test]
fn a_referenced_value_that_does_not_convert_is_refused_without_its_value() {
    let ws = Workspace::new();
    let cfg = typed_references_config(&ws);
    for (variable, value, names) in [
        ("BAR_SEED", "s3cr3t-seed", "environment: benchmark.params.seed: refers to ${BAR_SEED}, whose value is not an integer"),
        ("BAR_CASE", "s3cr3t-case", "environment: benchmark.params.case_sensitive: refers to ${BAR_CASE}, whose value is not a boolean"),
        ("BAR_K", "s3cr3t-k", "[TMP]/cfg/typed.toml: execution.attempts.k: refers to ${BAR_K}, whose value is not an integer"),
    ] {
        let env: Vec<(&str, &str)> = TYPED_ENV
            .iter()
            .map(|&(k, v)| if k == variable { (k, value) } else { (k, v) })
            .collect();
        let out = ws.run_expect(2,
            &["run", "example_exact_match", "example_calculator", "m1", "--config", &cfg],
            &env,
        );
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(ws.redact(lines[0]).contains(names), "{out:?}");
        assert!(!out.stderr.contains(value), "{out:?}");
        assert!(!ws.cwd.join("results").exists(), "{out:?}");
    }
    let env: Vec<(&str, &str)> = TYPED_ENV
        .iter()
        .map(|&(k, v)| {
            if k == "BAR_SEED" {
                (k, "s3cr3t-seed")
            } else {
                (k, v)
            }
        })
        .collect();
    let out = ws.run_ok(&run_args(&["--config", &cfg]), &env);
    assert_eq!(
        out.stderr_lines("warning: environment: benchmark.params.seed: refers to ${BAR_SEED}")
            .len(),
        1,
        "{out:?}"
    );
    assert!(!out.stderr.contains("s3cr3t"), "{out:?}");
}

/// The task-level `ground_truth` of a published attempt (its task's `task.json`).
fn task_ground_truth(attempt: &std::path::Path) -> Value {
    agentcompass_e2e::read_json(&attempt.parent().unwrap().join("task.json"))["ground_truth"]
        .clone()
}

/// `relative` under the workspace's working directory, as the host resolves a relative
/// runtime path (issue 58: every runtime path is absolute once resolved).
fn in_cwd(ws: &Workspace, relative: &str) -> String {
    ws.cwd.join(relative).display().to_string()
}
