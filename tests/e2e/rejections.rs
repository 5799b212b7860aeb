//! One test per rejection rule: exit code 2, nothing on stdout, exactly one `error: ` line on
//! stderr naming the file (or flag) and the key path, and nothing written in the working
//! directory. A snapshot collects every line.

use std::path::Path;

use agentcompass_e2e::Workspace;

type Setup = fn(&Workspace) -> Vec<String>;

/// One rejection: how to provoke it, and how its line must start (after `error: `, with temp
/// paths shown as `[TMP]`) and what else it must say.
struct Case {
    name: &'static str,
    setup: Setup,
    starts_with: &'static str,
    contains: &'static str,
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `run example_exact_match example_calculator m1 EXTRA...` (no `--dry-run`: a rejected
/// request must stop before anything is written).
fn run(extra: &[&str]) -> Vec<String> {
    ["run", "example_exact_match", "example_calculator", "m1"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
}

/// [`run`] with `--config cfg/NAME` holding `content`.
fn with_config(ws: &Workspace, name: &str, content: &str) -> Vec<String> {
    let file = ws.write(&format!("cfg/{name}"), content);
    run(&["--config", &path(&file)])
}

/// `launch orch/NAME` where the file has a model and the example components in `defaults`,
/// then `rest`.
fn launch(ws: &Workspace, name: &str, rest: &str) -> Vec<String> {
    let file = ws.write(
        &format!("orch/{name}"),
        &format!(
            "[defaults.model]\nid = \"m\"\n[defaults.benchmark]\nid = \"example_exact_match\"\n\
             [defaults.harness]\nid = \"example_calculator\"\n{rest}"
        ),
    );
    vec!["launch".to_string(), path(&file)]
}

const CASES: &[Case] = &[
    Case {
        name: "models_section",
        setup: |ws| with_config(ws, "models.toml", "[models.gpt]\nbase_url = \"http://x\"\n"),
        starts_with: "[TMP]/cfg/models.toml: models: ",
        contains: "a models section is not allowed",
    },
    Case {
        name: "params_layer_under_benchmarks",
        setup: |ws| {
            with_config(
                ws,
                "params.toml",
                "[benchmarks.example_exact_match.params]\nsize = 1\n",
            )
        },
        starts_with: "[TMP]/cfg/params.toml: benchmarks.example_exact_match.params: ",
        contains: "remove the params layer",
    },
    Case {
        name: "params_layer_under_harnesses",
        setup: |ws| {
            with_config(
                ws,
                "params.yaml",
                "harnesses:\n  example_calculator:\n    params: {delay_ms: 1}\n",
            )
        },
        starts_with: "[TMP]/cfg/params.yaml: harnesses.example_calculator.params: ",
        contains: "remove the params layer",
    },
    Case {
        name: "params_layer_under_environments",
        setup: |ws| {
            with_config(
                ws,
                "params.json",
                r#"{"environments": {"host_process": {"params": {"workdir": "/x"}}}}"#,
            )
        },
        starts_with: "[TMP]/cfg/params.json: environments.host_process.params: ",
        contains: "remove the params layer",
    },
    Case {
        name: "unknown_execution_key_in_config",
        setup: |ws| with_config(ws, "execution.toml", "[execution]\nk = 3\n"),
        starts_with: "[TMP]/cfg/execution.toml: execution.k: ",
        contains: "unknown key (expected one of: task_concurrency, attempts,",
    },
    Case {
        name: "unknown_execution_key_in_execution_params",
        setup: |_| run(&["--execution-params", r#"{"retries": 3}"#]),
        starts_with: "--execution-params: retries: ",
        contains: "unknown key",
    },
    Case {
        name: "unknown_runtime_key",
        setup: |ws| with_config(ws, "runtime.toml", "[runtime]\ncolour = true\n"),
        starts_with: "[TMP]/cfg/runtime.toml: runtime.colour: ",
        contains: "unknown key (expected one of: results_dir,",
    },
    Case {
        name: "embedded_reference",
        setup: |ws| {
            with_config(
                ws,
                "embedded.toml",
                "[benchmarks.example_exact_match]\nsample_ids = [\"arith-${SUFFIX}\"]\n",
            )
        },
        starts_with: "[TMP]/cfg/embedded.toml: benchmarks.example_exact_match.sample_ids[0]: ",
        contains: "uses unsupported environment interpolation; use a whole-field ${VAR}",
    },
    Case {
        name: "unknown_benchmark_id",
        setup: |_| {
            ["run", "nope", "example_calculator", "m1"]
                .map(String::from)
                .to_vec()
        },
        starts_with: "command line: BENCHMARK: ",
        contains: "unknown benchmark `nope` (known: example_exact_match, example_self_check, example_pyexec)",
    },
    Case {
        name: "unknown_harness_id",
        setup: |_| {
            ["run", "example_exact_match", "nope", "m1"]
                .map(String::from)
                .to_vec()
        },
        starts_with: "command line: HARNESS: ",
        contains: "unknown harness `nope` (known: example_calculator)",
    },
    Case {
        name: "unknown_environment_id",
        setup: |_| run(&["--env", "nope"]),
        starts_with: "--env: environment: ",
        contains: "unknown environment `nope` (known: host_process, sandbox)",
    },
    Case {
        name: "unknown_benchmark_param",
        setup: |_| run(&["--benchmark-params", r#"{"sise": 1}"#]),
        starts_with: "--benchmark-params: sise: ",
        contains: "benchmark example_exact_match has no parameter `sise` (known: size, seed, case_sensitive, evaluate_delay_ms, sample_ids)",
    },
    Case {
        name: "unknown_harness_param",
        setup: |ws| {
            with_config(
                ws,
                "harness.toml",
                "[harnesses.example_calculator]\nspeed = 3\n",
            )
        },
        starts_with: "[TMP]/cfg/harness.toml: harnesses.example_calculator.speed: ",
        contains: "harness example_calculator has no parameter `speed` (known: delay_ms, wrong_every, panic_on_task)",
    },
    Case {
        name: "unknown_environment_param",
        setup: |_| run(&["--env-params", r#"{"cpus": 2}"#]),
        starts_with: "--env-params: cpus: ",
        contains: "environment host_process has no parameter `cpus` (known: workdir)",
    },
    Case {
        name: "wrong_param_type_in_config",
        setup: |ws| {
            with_config(
                ws,
                "types.toml",
                "[benchmarks.example_exact_match]\nsize = \"many\"\n",
            )
        },
        starts_with: "[TMP]/cfg/types.toml: benchmarks.example_exact_match.size: ",
        contains: "expected integer, found string",
    },
    Case {
        name: "wrong_param_type_in_flag",
        setup: |_| run(&["--env-params", r#"{"workdir": 3}"#]),
        starts_with: "--env-params: workdir: ",
        contains: "expected string, found integer",
    },
    Case {
        name: "missing_config_file",
        setup: |ws| run(&["--config", &path(&ws.root().join("cfg/missing.toml"))]),
        starts_with: "config file [TMP]/cfg/missing.toml ",
        contains: "does not exist",
    },
    Case {
        name: "malformed_toml",
        setup: |ws| with_config(ws, "bad.toml", "[execution\nk = 1\n"),
        starts_with: "[TMP]/cfg/bad.toml: ",
        contains: "TOML parse error at line 1",
    },
    Case {
        name: "malformed_yaml",
        setup: |ws| with_config(ws, "bad.yaml", "execution: [1, 2\n"),
        starts_with: "[TMP]/cfg/bad.yaml: ",
        contains: "line 2",
    },
    Case {
        name: "malformed_json",
        setup: |ws| with_config(ws, "bad.json", "{\"execution\": }"),
        starts_with: "[TMP]/cfg/bad.json: ",
        contains: "expected value at line 1 column 15",
    },
    Case {
        name: "orchestration_unknown_top_level_field",
        setup: |ws| launch(ws, "top.toml", "[[requests]]\nname = \"a\"\n[colour]\nx = 1\n"),
        starts_with: "[TMP]/orch/top.toml: colour: ",
        contains: "unknown field `colour`",
    },
    Case {
        name: "orchestration_unknown_request_field",
        setup: |ws| launch(ws, "field.toml", "[[requests]]\nname = \"a\"\ncolour = 1\n"),
        starts_with: "[TMP]/orch/field.toml: requests[0].colour: ",
        contains: "unknown field `colour`",
    },
    Case {
        name: "orchestration_duplicate_request_names",
        setup: |ws| {
            launch(
                ws,
                "dup.toml",
                "[[requests]]\nname = \"a\"\n[[requests]]\nname = \"a\"\n",
            )
        },
        starts_with: "[TMP]/orch/dup.toml: requests[1].name: ",
        contains: "duplicate request name `a`",
    },
    Case {
        name: "orchestration_empty_request_name",
        setup: |ws| launch(ws, "empty.toml", "[[requests]]\nname = \" \"\n"),
        starts_with: "[TMP]/orch/empty.toml: requests[0].name: ",
        contains: "must not be empty",
    },
    Case {
        name: "orchestration_task_concurrency_in_defaults_execution",
        setup: |ws| {
            launch(
                ws,
                "tc-defaults.toml",
                "[defaults.execution]\ntask_concurrency = 4\n[[requests]]\nname = \"a\"\n",
            )
        },
        starts_with: "[TMP]/orch/tc-defaults.toml: defaults.execution.task_concurrency: ",
        contains: "task_concurrency is global",
    },
    Case {
        name: "orchestration_task_concurrency_in_request_execution",
        setup: |ws| {
            launch(
                ws,
                "tc-request.toml",
                "[[requests]]\nname = \"a\"\nexecution = { task_concurrency = 4 }\n",
            )
        },
        starts_with: "[TMP]/orch/tc-request.toml: requests[0].execution.task_concurrency: ",
        contains: "task_concurrency is global",
    },
    Case {
        name: "orchestration_config_task_concurrency_of_wrong_type",
        setup: |ws| {
            let cfg = ws.write("cfg/tc.toml", "[execution]\ntask_concurrency = \"8\"\n");
            let mut args = launch(ws, "tc-config.toml", "[[requests]]\nname = \"a\"\n");
            args.extend(["--config".to_string(), path(&cfg)]);
            args
        },
        starts_with: "[TMP]/cfg/tc.toml: execution.task_concurrency: ",
        contains: "expected a whole number ≥ 1, found \"8\"",
    },
    Case {
        name: "orchestration_colliding_output_namespaces",
        setup: |ws| {
            launch(
                ws,
                "collide.toml",
                "[[requests]]\nname = \"a b\"\n[[requests]]\nname = \"a_b\"\n",
            )
        },
        starts_with: "[TMP]/orch/collide.toml: requests[1].name: ",
        contains: "requests `a b` and `a_b` write to the same output namespace a_b",
    },
    Case {
        name: "orchestration_missing_model",
        setup: |ws| {
            let file = ws.write(
                "orch/no-model.toml",
                "[defaults.benchmark]\nid = \"example_exact_match\"\n[defaults.harness]\n\
                 id = \"example_calculator\"\n[[requests]]\nname = \"a\"\n",
            );
            vec!["launch".to_string(), path(&file)]
        },
        starts_with: "[TMP]/orch/no-model.toml: requests[0].model: ",
        contains: "no model",
    },
    Case {
        name: "orchestration_model_without_id",
        setup: |ws| {
            let file = ws.write(
                "orch/no-model-id.yaml",
                "defaults:\n  benchmark: {id: example_exact_match}\n  harness: {id: example_calculator}\n\
                 requests:\n  - name: a\n    model: {base_url: \"http://x\"}\n",
            );
            vec!["launch".to_string(), path(&file)]
        },
        starts_with: "[TMP]/orch/no-model-id.yaml: requests[0].model.id: ",
        contains: "a model id is required",
    },
    Case {
        name: "orchestration_version_not_1",
        setup: |ws| {
            let file = ws.write(
                "orch/v2.json",
                r#"{"version": 2, "defaults": {"model": {"id": "m"}, "benchmark": {"id": "example_exact_match"}, "harness": {"id": "example_calculator"}}, "requests": [{"name": "a"}]}"#,
            );
            vec!["launch".to_string(), path(&file)]
        },
        starts_with: "[TMP]/orch/v2.json: version: ",
        contains: "only version 1 is supported, found 2",
    },
    Case {
        name: "orchestration_unknown_benchmark_id",
        setup: |ws| {
            launch(
                ws,
                "bench.toml",
                "[[requests]]\nname = \"a\"\nbenchmark = { id = \"nope\" }\n",
            )
        },
        starts_with: "[TMP]/orch/bench.toml: requests[0].benchmark.id: ",
        contains: "unknown benchmark `nope` (known: example_exact_match, example_self_check, example_pyexec)",
    },
    Case {
        name: "orchestration_params_layer",
        setup: |ws| {
            launch(
                ws,
                "params.toml",
                "[[requests]]\nname = \"a\"\nharness = { params = { delay_ms = 1 } }\n",
            )
        },
        starts_with: "[TMP]/orch/params.toml: requests[0].harness.params: ",
        contains: "remove the params layer",
    },
    Case {
        name: "harness_none_with_a_benchmark_that_needs_a_harness",
        setup: |_| {
            ["run", "example_exact_match", "none", "m1"]
                .map(String::from)
                .to_vec()
        },
        starts_with: "command line: HARNESS: ",
        contains: "harness `none` needs a harness-free benchmark, but `example_exact_match` needs a harness",
    },
    Case {
        name: "unknown_recipe",
        setup: |_| run(&["--recipe", "example_recipe", "--recipe", "nope"]),
        starts_with: "--recipe: enabled_recipes: ",
        contains: "unknown recipe `nope` (known: example_recipe)",
    },
    Case {
        name: "bad_model_api_protocol",
        setup: |_| run(&["--model-api-protocol", "grpc"]),
        starts_with: "--model-api-protocol: api_protocol: ",
        contains: "unknown protocol `grpc`",
    },
    Case {
        name: "auto_mixed_with_other_protocols",
        setup: |_| run(&["--model-api-protocol", r#"["openai-chat", "auto"]"#]),
        starts_with: "--model-api-protocol: api_protocol: ",
        contains: "`auto` cannot be combined with other protocols",
    },
    Case {
        name: "allowlist_with_a_url_entry",
        setup: |_| {
            run(&[
                "--env-params",
                r#"{"run_network_policy": {"network_mode": "allowlist", "allowed_hosts": ["https://x.com/a"]}}"#,
            ])
        },
        starts_with: "--env-params: run_network_policy: ",
        contains: "invalid allowed_hosts entry `https://x.com/a`",
    },
    Case {
        name: "image_as_an_env_param",
        setup: |_| run(&["--env-params", r#"{"image": "python:3.12"}"#]),
        starts_with: "--env-params: image: ",
        contains: "set setup.image",
    },
];

/// Runs one case in a fresh workspace and checks the rejection contract; returns the line.
fn rejected(case: &Case) -> String {
    let ws = Workspace::new();
    let args = (case.setup)(&ws);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run(&args, &[]);
    assert_eq!(out.code, 2, "{}: {out:?}", case.name);
    assert_eq!(out.stdout, "", "{}: nothing on stdout", case.name);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}: exactly one line: {out:?}", case.name);
    assert!(lines[0].starts_with("error: "), "{}: {out:?}", case.name);
    assert!(
        !ws.cwd.join("results").exists(),
        "{}: results dir written",
        case.name
    );
    let written: Vec<_> = std::fs::read_dir(&ws.cwd)
        .expect("cwd")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(written.is_empty(), "{}: wrote {written:?}", case.name);
    ws.redact(lines[0])
}

/// Checks the case called `name`.
fn check(name: &str) {
    let case = CASES
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"));
    let line = rejected(case);
    let expected = format!("error: {}", case.starts_with);
    assert!(
        line.starts_with(&expected),
        "{name}: {line}\nexpected start: {expected}"
    );
    assert!(
        line.contains(case.contains),
        "{name}: {line}\nexpected: {}",
        case.contains
    );
}

#[test]
fn models_section() {
    check("models_section");
}

#[test]
fn params_layer_under_benchmarks() {
    check("params_layer_under_benchmarks");
}

#[test]
fn params_layer_under_harnesses() {
    check("params_layer_under_harnesses");
}

#[test]
fn params_layer_under_environments() {
    check("params_layer_under_environments");
}

#[test]
fn unknown_execution_key() {
    check("unknown_execution_key_in_config");
    check("unknown_execution_key_in_execution_params");
}

#[test]
fn unknown_runtime_key() {
    check("unknown_runtime_key");
}

#[test]
fn embedded_reference_outside_env_maps() {
    check("embedded_reference");
}

/// The counterpart of [`embedded_reference_outside_env_maps`]: whole-field references are
/// accepted anywhere (and shown as written), and environment-variable maps may embed
/// `${NAME}` inside a string.
#[test]
fn whole_field_references_and_env_maps_are_accepted() {
    let ws = Workspace::new();
    let cfg = ws.write(
        "cfg/refs.toml",
        r#"
[benchmarks.example_exact_match]
seed = "${SEED}"
[environments.host_process]
workdir = "  ${WORKDIR}  "
[environments.host_process.env_variables]
PATH_PLUS = "/opt/bin:${PATH}"
WITH_DEFAULT = "${NAME:-fallback}"
"#,
    );
    let out = ws.run_ok(
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m1",
            "--dry-run",
            "--config",
            &path(&cfg),
        ],
        &[("SEED", "5"), ("WORKDIR", "/w")],
    );
    assert_eq!(out.stderr, "");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["request"]["benchmark"]["params"]["seed"], "${SEED}");
    assert_eq!(
        v["request"]["environment"]["params"]["workdir"],
        "  ${WORKDIR}  "
    );
    let vars = v["request"]["environment"]["env_variables"]
        .as_object()
        .unwrap();
    assert_eq!(
        vars.keys().collect::<Vec<_>>(),
        ["PATH_PLUS", "WITH_DEFAULT"]
    );
}

#[test]
fn unknown_benchmark_id() {
    check("unknown_benchmark_id");
    check("orchestration_unknown_benchmark_id");
}

#[test]
fn unknown_harness_id() {
    check("unknown_harness_id");
}

#[test]
fn unknown_environment_id() {
    check("unknown_environment_id");
}

#[test]
fn unknown_benchmark_param() {
    check("unknown_benchmark_param");
}

#[test]
fn unknown_harness_param() {
    check("unknown_harness_param");
}

#[test]
fn unknown_environment_param() {
    check("unknown_environment_param");
}

#[test]
fn wrong_param_type() {
    check("wrong_param_type_in_config");
    check("wrong_param_type_in_flag");
}

#[test]
fn missing_config_file() {
    check("missing_config_file");
}

#[test]
fn malformed_toml() {
    check("malformed_toml");
}

#[test]
fn malformed_yaml() {
    check("malformed_yaml");
}

#[test]
fn malformed_json() {
    check("malformed_json");
}

#[test]
fn orchestration_unknown_top_level_field() {
    check("orchestration_unknown_top_level_field");
}

#[test]
fn orchestration_unknown_request_field() {
    check("orchestration_unknown_request_field");
}

#[test]
fn orchestration_duplicate_request_names() {
    check("orchestration_duplicate_request_names");
}

#[test]
fn orchestration_empty_request_name() {
    check("orchestration_empty_request_name");
}

#[test]
fn orchestration_task_concurrency_in_defaults_execution() {
    check("orchestration_task_concurrency_in_defaults_execution");
}

#[test]
fn orchestration_task_concurrency_in_request_execution() {
    check("orchestration_task_concurrency_in_request_execution");
}

/// The global limit taken from a config file is checked there (and blamed on that file).
#[test]
fn orchestration_config_task_concurrency_of_wrong_type() {
    check("orchestration_config_task_concurrency_of_wrong_type");
}

#[test]
fn orchestration_colliding_output_namespaces() {
    check("orchestration_colliding_output_namespaces");
}

#[test]
fn orchestration_missing_model() {
    check("orchestration_missing_model");
    check("orchestration_model_without_id");
}

#[test]
fn orchestration_version_not_1() {
    check("orchestration_version_not_1");
}

#[test]
fn orchestration_params_layer() {
    check("orchestration_params_layer");
}

#[test]
fn harness_none_with_a_benchmark_that_needs_a_harness() {
    check("harness_none_with_a_benchmark_that_needs_a_harness");
}

#[test]
fn unknown_recipe() {
    check("unknown_recipe");
}

#[test]
fn bad_model_api_protocol() {
    check("bad_model_api_protocol");
    check("auto_mixed_with_other_protocols");
}

#[test]
fn allowlist_with_a_url_entry() {
    check("allowlist_with_a_url_entry");
}

#[test]
fn image_as_an_env_param() {
    check("image_as_an_env_param");
}

/// Every case has a test above, and every rejection line, exactly.
#[test]
fn rejection_lines_snapshot() {
    let source = include_str!("rejections.rs");
    let mut lines = String::new();
    for case in CASES {
        assert!(
            source.contains(&format!("check(\"{}\");", case.name)),
            "case {} has no test",
            case.name
        );
        lines.push_str(&format!("{}\n  {}\n", case.name, rejected(case)));
    }
    insta::assert_snapshot!("rejection_lines", lines);
}
