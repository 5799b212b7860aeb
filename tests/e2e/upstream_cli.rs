//! Upstream AgentCompass invocations accepted with upstream's meaning (issue 19's parity list),
//! one test per form.

use std::fs;
use std::path::PathBuf;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    assert_secret_nowhere, example_run, files_containing, pack_run, read_json, run_dir, QaSetup,
    Workspace,
};
use serde_json::json;

const KEY: &str = "sk-e2e-upstream-cli-SECRET-77";

/// One `qa` question, `add` (2+2, answer 4).
const QA_LINE: &str = concat!(
    r#"{"id": "add", "question": "What is 2+2? Answer with only the number.", "answer": "4"}"#,
    "\n",
);

#[test]
fn wrap_api_key_sends_upstreams_session_wrapped_key_and_persists_neither() {
    use base64::Engine as _;
    let setup = QaSetup::new(QA_LINE);
    let results = setup.ws.root().join("results");
    let run = results.join("scripted-model_qa_openai_chat/wrapped");
    let wrapped = base64::engine::general_purpose::STANDARD.encode(format!(
        "<api_secret>{KEY}</api_secret><session_id>{}</session_id>",
        run.display()
    ));
    // The server accepts only the wrapped key.
    let server = ScriptedServer::start(
        &json!({"require_key": wrapped, "rules": [
            {"match": {"last_user_contains": "2+2"}, "responses": [{"text": "4"}]}
        ]}),
        None,
    )
    .unwrap();
    let out = setup
        .run(
            &server.base_url(),
            KEY,
            &[
                "--wrap-api-key",
                "--results-dir",
                results.to_str().unwrap(),
                "--run-id",
                "wrapped",
            ],
        )
        .expect_code(0);
    assert_eq!(run_dir(&out), run);
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["series"][0]["value"], 1.0, "{metrics}");
    let info = read_json(&run.join("run_info.json"));
    assert_eq!(info["request"]["model"]["wrap_api_key"], true, "{info}");
    for secret in [KEY, wrapped.as_str()] {
        assert_secret_nowhere(&results, &out, secret);
    }
}

#[test]
fn data_dir_and_file_log_level_flags_set_the_runtime_options() {
    let ws = Workspace::new();
    let data = ws.root().join("data-root");
    let out = ws.run_ok(
        &example_run(&[
            "--data-dir",
            data.to_str().unwrap(),
            "--file-log-level",
            "WARNING",
            "--auto-install-dependencies",
            "--progress",
            "none",
        ]),
        &[],
    );
    let run = run_dir(&out);
    let info = read_json(&run.join("run_info.json"));
    let _ = info;
    let log = fs::read_to_string(run.join("run.log")).unwrap();
    assert!(
        !log.contains(" INFO ") && !log.contains(" DEBUG "),
        "run.log holds only WARNING and above: {log}"
    );
    let dry = ws.run_json(
        &example_run(&[
            "--data-dir",
            data.to_str().unwrap(),
            "--file-log-level",
            "ERROR",
            "--auto-install-dependencies",
            "--dry-run",
        ]),
        &[],
    );
    assert_eq!(dry["runtime"]["data_dir"], data.to_str().unwrap(), "{dry}");
    assert_eq!(dry["runtime"]["file_log_level"], "ERROR");
    assert_eq!(dry["runtime"]["auto_install_dependencies"], true);
    let out = ws.run_expect(2, &example_run(&["--file-log-level", "LOUD"]), &[]);
    assert!(out.stderr.contains("--file-log-level"), "{out:?}");
}

#[test]
fn summary_dry_run_writes_nothing_and_benchmark_params_rescore_a_subset() {
    let ws = Workspace::new();
    let out = ws.run_ok(
        &example_run(&[
            "--harness-params",
            r#"{"wrong_every": 2}"#,
            "--progress",
            "none",
        ]),
        &[],
    );
    let run = run_dir(&out);
    let before = fs::read(run.join("metrics.json")).unwrap();
    fs::remove_file(run.join("summary.md")).unwrap();
    let dry = ws.run_ok(&["summary", run.to_str().unwrap(), "--dry-run"], &[]);
    assert!(dry.stdout.contains("| correct |"), "{dry:?}");
    assert!(
        !run.join("summary.md").exists(),
        "--dry-run wrote summary.md"
    );
    assert_eq!(fs::read(run.join("metrics.json")).unwrap(), before);
    let tasks: Vec<String> = agentcompass_e2e::published_results(&run)
        .into_keys()
        .collect();
    let one = tasks.iter().min().unwrap().clone();
    let params = json!({"sample_ids": [one]}).to_string();
    ws.run_ok(
        &[
            "summary",
            run.to_str().unwrap(),
            "--benchmark-params",
            &params,
        ],
        &[],
    );
    let metrics = read_json(&run.join("metrics.json"));
    assert_eq!(metrics["series"][0]["counts"]["total"], 1, "{metrics}");
    let bad = ws.run_expect(
        2,
        &[
            "summary",
            run.to_str().unwrap(),
            "--benchmark-params",
            "[1]",
        ],
        &[],
    );
    assert!(bad.stderr.contains("--benchmark-params"), "{bad:?}");
}

#[test]
fn config_show_prints_selected_components_effective_parameters_in_yaml_and_json() {
    let ws = Workspace::new();
    ws.write(
        "project/work/config.toml",
        "[benchmarks.example_exact_match]\nsize = 9\n",
    );
    let out = ws.run_ok(
        &[
            "config",
            "show",
            "--benchmark",
            "example_exact_match",
            "--harness",
            "example_calculator",
            "--env",
            "host_process",
            "sandbox",
            "--format",
            "yaml",
        ],
        &[],
    );
    assert!(
        out.stdout.contains("benchmarks:\n  example_exact_match:\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("    size: 9\n"),
        "configured value wins: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains("    wrong_every: 0\n"),
        "declared default: {}",
        out.stdout
    );
    assert!(out.stdout.contains("  sandbox:\n"), "{}", out.stdout);
    let json = ws.run_json(
        &[
            "config",
            "show",
            "--benchmark",
            "example_exact_match",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(
        json["benchmarks"]["example_exact_match"]["size"], 9,
        "{json}"
    );
    let out = ws.run_expect(2, &["config", "show", "--harness", "nope"], &[]);
    assert!(out.stderr.contains("unknown harness `nope`"), "{out:?}");
}

#[test]
fn list_dump_writes_the_components_file_and_prints_its_path() {
    let ws = Workspace::new();
    let out = ws.run_ok(&["list", "dump"], &[]);
    let path = ws.cwd.join("agentcompass_components.md");
    assert_eq!(PathBuf::from(out.stdout.trim()), path);
    let text = fs::read_to_string(&path).unwrap();
    for needle in [
        "## Benchmarks",
        "| `example_exact_match` |",
        "## Harnesses",
        "| `example_calculator` |",
        "## Environments",
        "| `sandbox` |",
        "## Analyzers",
        "## Model API protocols",
        "| `anthropic` |",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn openai_chat_accepts_upstreams_max_retries() {
    let setup = QaSetup::new(QA_LINE);
    let (ws, plugins) = (&setup.ws, &setup.plugins);
    let params = setup.params();
    let run = |retries: u32| {
        // Two server errors, then the answer: one retry is not enough, two are.
        let server = ScriptedServer::start(
            &json!({"rules": [
                {"match": {"last_user_contains": "2+2"},
                 "responses": [{"status": 500}, {"status": 500}, {"text": "4"}]}
            ]}),
            None,
        )
        .unwrap();
        let harness = json!({"max_retries": retries}).to_string();
        let base_url = server.base_url();
        let mut args = setup.args(&params);
        args.extend([
            "--harness-params",
            &harness,
            "--model-base-url",
            &base_url,
            "--model-params",
            r#"{"retry_backoff_seconds": 0}"#,
            "--progress",
            "none",
        ]);
        let out = ws.run(&args, &[]);
        (out.code, read_json(&run_dir(&out).join("metrics.json")))
    };
    let (code, metrics) = run(2);
    assert_eq!(code, 0);
    assert_eq!(metrics["series"][0]["value"], 1.0, "{metrics}");
    let (_, metrics) = run(1);
    assert_eq!(
        metrics["series"][0]["value"],
        serde_json::Value::Null,
        "{metrics}"
    );
    // Exhausted on server errors: a fatal model failure, not scored.
    assert_eq!(
        metrics["extra"]["not_scored"]["classes"]["model"]["reasons"]["server errors"], 1,
        "{metrics}"
    );
    let out = ws.run(
        &pack_run(
            plugins,
            ["qa", "openai_chat", "m"],
            &params,
            &[
                "--harness-params",
                r#"{"max_retries": 99}"#,
                "--model-base-url",
                "http://127.0.0.1:9",
                "--no-endpoint-check",
            ],
        ),
        &[],
    );
    // A harness parameter value the harness refuses is refused before the first task (its
    // plan for the request's environment is checked in preflight): exit 2, nothing written.
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(
        out.stderr
            .contains("parameter `max_retries` must be an integer from 0 to 20 (found 99)"),
        "{out:?}"
    );
}

#[test]
fn a_config_file_of_another_extension_is_read_as_yaml() {
    let ws = Workspace::new();
    let config = ws.write("cfg/eval.conf", "execution:\n  max_retries: 4\n");
    let json = ws.run_json(
        &[
            "--config",
            config.to_str().unwrap(),
            "config",
            "show",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(json["execution"]["max_retries"], 4, "{json}");
}

#[test]
fn an_embedded_reference_in_an_unselected_provider_section_is_not_an_error() {
    let ws = Workspace::new();
    let config = ws.write(
        "cfg/providers.toml",
        "[environments.sandbox]\nbwrap = \"/opt/${E2E_UNSET_PREFIX}/bwrap\"\n",
    );
    let config = config.to_str().unwrap();
    let args = |env: &'static str| {
        vec![
            "--config",
            config,
            "run",
            "example_exact_match",
            "example_calculator",
            "calc",
            "--env",
            env,
            "--progress",
            "none",
        ]
    };
    let out = ws.run(&args("host_process"), &[]);
    assert_eq!(out.code, 0, "the sandbox section is not used: {out:?}");
    let out = ws.run_expect(2, &args("sandbox"), &[]);
    assert!(
        out.stderr.contains("providers.toml: environments.sandbox.bwrap: uses unsupported environment interpolation"),
        "{out:?}"
    );
}

#[test]
fn launch_dry_run_applies_the_resolution_checks_of_a_real_launch() {
    let ws = Workspace::new();
    let write = |name: &str, extra: &str| {
        ws.write(
            &format!("project/work/{name}.yaml"),
            &format!(
                "defaults:\n  benchmark: {{id: example_exact_match}}\n  harness: {{id: example_calculator}}\n  model: {{id: calc}}\nrequests:\n  - name: first\n{extra}"
            ),
        )
    };
    let taken = write("taken", "    output: {run_id: taken}\n");
    let out = ws.run(&["launch", taken.to_str().unwrap(), "--dry-run"], &[]);
    assert_eq!(out.code, 0, "free before the launch: {out:?}");
    ws.run_ok(
        &["launch", taken.to_str().unwrap(), "--progress", "none"],
        &[],
    );
    let out = ws.run_expect(2, &["launch", taken.to_str().unwrap(), "--dry-run"], &[]);
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(
        out.stderr
            .contains("already exists; choose a different --run-id or use --reuse"),
        "{out:?}"
    );
    let missing = write(
        "missing",
        "    runtime: {reuse: true, reuse_run_id: nosuchrun}\n",
    );
    let out = ws.run_expect(2, &["launch", missing.to_str().unwrap(), "--dry-run"], &[]);
    assert!(
        out.stderr
            .contains("request first: runtime.reuse_run_id: run `nosuchrun` not found under"),
        "{out:?}"
    );
    // The real launch refuses the same, before writing anything.
    let runs = || fs::read_dir(ws.cwd.join("results/first")).unwrap().count();
    let before = runs();
    let out = ws.run_expect(
        2,
        &["launch", missing.to_str().unwrap(), "--progress", "none"],
        &[],
    );
    assert_eq!(runs(), before, "nothing written: {out:?}");
}

#[test]
fn the_sdks_environment_variables_are_the_model_defaults_when_no_flag_sets_them() {
    let setup = QaSetup::new(QA_LINE);
    let ws = &setup.ws;
    let params = setup.params();
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "2+2"}, "responses": [{"text": "4"}], "cycle": true}
        ]}),
        None,
    )
    .unwrap();
    let base_url = server.base_url();
    let mut args = setup.args(&params);
    args.extend(["--progress", "none"]);
    for (family, protocol) in [("OPENAI", "openai-chat"), ("ANTHROPIC", "anthropic")] {
        let (url_var, key_var) = (format!("{family}_BASE_URL"), format!("{family}_API_KEY"));
        let out = ws.run(
            &args,
            &[(url_var.as_str(), &base_url), (key_var.as_str(), KEY)],
        );
        assert_eq!(out.code, 0, "{family}: {out:?}");
        let run = run_dir(&out);
        assert_eq!(
            read_json(&run.join("metrics.json"))["series"][0]["value"],
            1.0
        );
        let model = &read_json(&run.join("run_info.json"))["request"]["model"];
        assert_eq!(model["base_url"], format!("${{{url_var}}}"), "{model}");
        let last = server.requests().last().cloned().unwrap();
        assert_eq!(last["auth"], "expected", "{family}: {last}");
        assert!(
            last["path"]
                .as_str()
                .unwrap()
                .contains(if protocol == "anthropic" {
                    "messages"
                } else {
                    "chat/completions"
                }),
            "{family}: {last}"
        );
        assert_eq!(
            files_containing(&ws.cwd.join("results"), KEY),
            Vec::<PathBuf>::new()
        );
    }
    // A configured endpoint wins over the environment.
    let out = ws.run_ok(
        &[
            &args[..],
            &[
                "--model-base-url",
                "http://127.0.0.1:9/v1",
                "--no-endpoint-check",
                "--dry-run",
            ],
        ]
        .concat(),
        &[("OPENAI_BASE_URL", &base_url)],
    );
    assert!(
        out.stdout
            .contains("\"base_url\": \"http://127.0.0.1:9/v1\""),
        "{}",
        out.stdout
    );
}

#[test]
fn analyzers_are_listed_and_documented_like_every_component() {
    let ws = Workspace::new();
    let out = ws.run_ok(&["list", "analyzer"], &[]);
    for id in [
        "EmptyContentAnalyzer",
        "TruncationAnalyzer",
        "HackDetectionAnalyzer",
    ] {
        assert!(out.stdout.contains(id), "{id}: {}", out.stdout);
    }
    assert!(out.stdout.contains("built-in"), "{}", out.stdout);
    let out = ws.run_ok(
        &[
            "config",
            "docs",
            "analyzer",
            "ConsecutiveToolRepetitionAnalyzer",
        ],
        &[],
    );
    assert!(out.stdout.contains("category: behavior"), "{}", out.stdout);
    assert!(
        out.stdout.contains("consecutive_threshold  5"),
        "{}",
        out.stdout
    );
    let out = ws.run_expect(2, &["config", "docs", "analyzer", "Nope"], &[]);
    assert!(out.stderr.contains("unknown analyzer `Nope`"), "{out:?}");
}
