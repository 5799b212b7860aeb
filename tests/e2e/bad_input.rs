//! Malformed input of every kind the host reads — configuration files, orchestration files,
//! command-line values, `qa` datasets and Harbor task directories — is refused the same way:
//! exit code 2, nothing on stdout, exactly one `error: ` line on stderr naming the file or the
//! flag, and nothing written in the working directory (no `results/`, so no
//! `results/<namespace>/<run_id>` either). `rejections.rs` covers the configuration rules
//! (unknown keys, params layers, ids, ...); this suite covers syntax, types, unreadable or
//! odd files, and the inputs plugins only see when tasks load. A snapshot collects every line.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{PluginDirs, Workspace};
use serde_json::json;

/// A workspace plus the `qa`, Harbor and agent packs.
struct Ctx {
    ws: Workspace,
    packs: PathBuf,
}

type Setup = fn(&Ctx) -> Vec<String>;

/// One malformed input: how to provoke it, the file or flag the line must name (with temp
/// paths shown as `[TMP]`), and what else it must say.
struct Case {
    name: &'static str,
    setup: Setup,
    names: &'static str,
    says: &'static str,
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `run example_exact_match example_calculator m1 EXTRA...` (never `--dry-run`).
fn run(extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["run", "example_exact_match", "example_calculator", "m1"]);
    args.extend(strings(extra));
    args
}

/// Writes `bytes` at `relative` under the temp root.
fn write_bytes(c: &Ctx, relative: &str, bytes: &[u8]) -> PathBuf {
    let file = c.ws.root().join(relative);
    fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    fs::write(&file, bytes).expect("write");
    file
}

/// [`run`] with `--config cfg/NAME` holding `content`.
fn with_config(c: &Ctx, name: &str, content: &[u8]) -> Vec<String> {
    let file = write_bytes(c, &format!("cfg/{name}"), content);
    run(&["--config", &path(&file)])
}

/// `launch orch/NAME` holding `content`.
fn launch(c: &Ctx, name: &str, content: &[u8]) -> Vec<String> {
    let file = write_bytes(c, &format!("orch/{name}"), content);
    vec!["launch".to_string(), path(&file)]
}

/// An orchestration file: `top` first (top-level keys must precede the tables), then
/// defaults naming a model and the example components, then `rest`.
fn orchestration(top: &str, rest: &str) -> Vec<u8> {
    format!(
        "{top}[defaults.model]\nid = \"m\"\n[defaults.benchmark]\nid = \"example_exact_match\"\n\
         [defaults.harness]\nid = \"example_calculator\"\n{rest}"
    )
    .into_bytes()
}

/// `[a, [b, [c, ...]]]`-style nesting `depth` deep.
fn nested(open: &str, close: &str, depth: usize) -> String {
    format!("{}{}", open.repeat(depth), close.repeat(depth))
}

/// `run qa example_calculator m` on `data/NAME` holding `content` (`None`: no such file).
fn qa(c: &Ctx, name: &str, content: Option<&str>) -> Vec<String> {
    let file = match content {
        Some(text) => c.ws.write(&format!("data/{name}"), text),
        None => c.ws.root().join("data").join(name),
    };
    qa_path(c, &file)
}

fn qa_path(c: &Ctx, file: &Path) -> Vec<String> {
    let params = json!({ "path": file }).to_string();
    strings(&[
        "--plugin-dir",
        &path(&c.packs),
        "run",
        "qa",
        "example_calculator",
        "m",
        "--benchmark-params",
        &params,
    ])
}

/// `run harbor HARNESS m --env sandbox` on the Harbor task path `task`.
fn harbor_with(c: &Ctx, harness: &str, task: &Path) -> Vec<String> {
    let params = json!({ "path": task }).to_string();
    strings(&[
        "--plugin-dir",
        &path(&c.packs),
        "run",
        "harbor",
        harness,
        "m",
        "--env",
        "sandbox",
        "--benchmark-params",
        &params,
    ])
}

fn harbor(c: &Ctx, task: &Path) -> Vec<String> {
    harbor_with(c, "oracle", task)
}

/// A Harbor task directory `tasks/NAME` with an instruction, a verifier script and
/// `task.toml` holding `toml` (`None`: no `task.toml`).
fn harbor_task(c: &Ctx, name: &str, toml: Option<&str>) -> PathBuf {
    let dir = c.ws.root().join("tasks").join(name);
    c.ws.write(&format!("tasks/{name}/instruction.md"), "Do it.\n");
    c.ws.write(
        &format!("tasks/{name}/tests/test.sh"),
        "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    );
    if let Some(toml) = toml {
        c.ws.write(&format!("tasks/{name}/task.toml"), toml);
    }
    dir
}

/// Variables every case runs with (only the cases that refer to them notice); no line may
/// show their values.
const CASE_ENV: &[(&str, &str)] = &[("BAR_SEED", "abc-not-a-seed")];

const QA_LINE: &str = r#"{"id": "a", "question": "What is 2 + 2?", "answer": "4"}"#;

const CASES: &[Case] = &[
    // Configuration files.
    Case {
        name: "config_toml_error_on_a_later_line",
        setup: |c| {
            with_config(
                c,
                "late.toml",
                b"[execution]\nmax_retries = 1\n[runtime]\nresults_dir = \n",
            )
        },
        names: "[TMP]/cfg/late.toml",
        says: "TOML parse error at line 4",
    },
    Case {
        name: "config_toml_duplicate_key",
        setup: |c| {
            with_config(
                c,
                "dup.toml",
                b"[execution]\nmax_retries = 1\nmax_retries = 2\n",
            )
        },
        names: "[TMP]/cfg/dup.toml",
        says: "line 3",
    },
    Case {
        name: "config_yaml_bad_indentation",
        setup: |c| with_config(c, "indent.yaml", b"execution:\n  max_retries: 1\n   k: 2\n"),
        names: "[TMP]/cfg/indent.yaml",
        says: "line 3",
    },
    Case {
        name: "config_json_trailing_comma",
        setup: |c| {
            with_config(
                c,
                "trailing.json",
                b"{\"execution\": {\"max_retries\": 1},\n \"runtime\": {\n}\n,}",
            )
        },
        names: "[TMP]/cfg/trailing.json",
        says: "trailing comma at line 4",
    },
    Case {
        name: "config_section_of_wrong_type",
        setup: |c| with_config(c, "section.toml", b"execution = \"fast\"\n"),
        names: "[TMP]/cfg/section.toml: execution: ",
        says: "expected a mapping, found string",
    },
    Case {
        name: "config_runtime_value_of_wrong_type",
        setup: |c| with_config(c, "runtime.yaml", b"runtime:\n  timeout_seconds: soon\n"),
        names: "[TMP]/cfg/runtime.yaml: runtime.timeout_seconds: ",
        says: "invalid type: string \"soon\"",
    },
    Case {
        name: "config_yaml_top_level_list",
        setup: |c| with_config(c, "list.yaml", b"- 1\n- 2\n"),
        names: "[TMP]/cfg/list.yaml",
        says: "expected a mapping at the top level, found array",
    },
    Case {
        name: "config_json_top_level_string",
        setup: |c| with_config(c, "string.json", b"\"execution\""),
        names: "[TMP]/cfg/string.json",
        says: "expected a mapping at the top level, found string",
    },
    Case {
        name: "config_binary_garbage",
        setup: |c| {
            with_config(
                c,
                "garbage.toml",
                b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00\x9c",
            )
        },
        names: "[TMP]/cfg/garbage.toml",
        says: "did not contain valid UTF-8",
    },
    Case {
        name: "config_empty_json",
        setup: |c| with_config(c, "empty.json", b""),
        names: "[TMP]/cfg/empty.json",
        says: "EOF while parsing a value at line 1",
    },
    Case {
        name: "config_directory_instead_of_a_file",
        setup: |c| {
            let dir = c.ws.root().join("cfg/dir.toml");
            fs::create_dir_all(&dir).expect("mkdir");
            run(&["--config", &path(&dir)])
        },
        names: "[TMP]/cfg/dir.toml",
        says: "expected a config file, found a directory",
    },
    // chmod 000 does not stop root; a symlink loop cannot be read by anyone.
    Case {
        name: "config_unreadable_symlink_loop",
        setup: |c| {
            let link = c.ws.root().join("cfg/loop.toml");
            fs::create_dir_all(link.parent().unwrap()).expect("mkdir");
            std::os::unix::fs::symlink(&link, &link).expect("symlink");
            run(&["--config", &path(&link)])
        },
        names: "[TMP]/cfg/loop.toml",
        says: "Too many levels of symbolic links",
    },
    Case {
        // Read as YAML, as upstream reads any other extension: INI text is not YAML.
        name: "config_other_extension_is_yaml",
        setup: |c| with_config(c, "settings.ini", b"[execution]\nmax_retries = 1\n"),
        names: "[TMP]/cfg/settings.ini",
        says: "deserializing from YAML containing more than one document is not supported",
    },
    Case {
        name: "config_deeply_nested_json",
        setup: |c| {
            let text = format!("{{\"execution\": {}}}", nested("[", "]", 5000));
            with_config(c, "deep.json", text.as_bytes())
        },
        names: "[TMP]/cfg/deep.json",
        says: "recursion limit exceeded",
    },
    Case {
        name: "config_deeply_nested_yaml",
        setup: |c| {
            let text = format!("execution: {}\n", nested("[", "]", 5000));
            with_config(c, "deep.yaml", text.as_bytes())
        },
        names: "[TMP]/cfg/deep.yaml",
        says: "nested more than 256 levels deep",
    },
    Case {
        name: "config_deeply_nested_toml",
        setup: |c| {
            let text = format!("x = {}\n", nested("[", "]", 5000));
            with_config(c, "deep.toml", text.as_bytes())
        },
        names: "[TMP]/cfg/deep.toml",
        says: "recursion limit exceeded",
    },
    // Orchestration files.
    Case {
        name: "orchestration_without_requests",
        setup: |c| launch(c, "none.toml", &orchestration("", "")),
        names: "[TMP]/orch/none.toml: requests: ",
        says: "at least one request is needed",
    },
    Case {
        name: "orchestration_with_an_empty_request_list",
        setup: |c| launch(c, "empty-list.toml", &orchestration("requests = []\n", "")),
        names: "[TMP]/orch/empty-list.toml: requests: ",
        says: "at least one request is needed",
    },
    Case {
        name: "orchestration_requests_not_a_list",
        setup: |c| launch(c, "string.toml", &orchestration("requests = \"a\"\n", "")),
        names: "[TMP]/orch/string.toml: requests: ",
        says: "expected a sequence",
    },
    Case {
        name: "orchestration_request_not_a_table",
        setup: |c| launch(c, "ints.toml", &orchestration("requests = [1, 2]\n", "")),
        names: "[TMP]/orch/ints.toml: requests[0]: ",
        says: "invalid type: integer",
    },
    Case {
        name: "orchestration_request_without_a_name",
        setup: |c| {
            launch(
                c,
                "nameless.toml",
                &orchestration("", "[[requests]]\nexecution = { max_retries = 1 }\n"),
            )
        },
        names: "[TMP]/orch/nameless.toml: requests[0]: ",
        says: "missing field `name`",
    },
    Case {
        name: "orchestration_request_name_of_wrong_type",
        setup: |c| {
            launch(
                c,
                "name-type.toml",
                &orchestration("", "[[requests]]\nname = 5\n"),
            )
        },
        names: "[TMP]/orch/name-type.toml: requests[0].name: ",
        says: "invalid type: integer",
    },
    Case {
        name: "orchestration_model_not_a_table",
        setup: |c| {
            launch(
                c,
                "model.yaml",
                b"requests:\n  - name: a\n    model: gpt\n    benchmark: {id: example_exact_match}\n",
            )
        },
        names: "[TMP]/orch/model.yaml: requests[0].model: ",
        says: "expected a map",
    },
    Case {
        name: "orchestration_unknown_defaults_key",
        setup: |c| {
            launch(
                c,
                "defaults.toml",
                &orchestration("", "[defaults.colour]\nx = 1\n[[requests]]\nname = \"a\"\n"),
            )
        },
        names: "[TMP]/orch/defaults.toml: defaults.colour: ",
        says: "unknown field `colour`",
    },
    Case {
        name: "orchestration_version_of_wrong_type",
        setup: |c| {
            launch(
                c,
                "version.toml",
                &orchestration("version = \"1\"\n", "[[requests]]\nname = \"a\"\n"),
            )
        },
        names: "[TMP]/orch/version.toml: version: ",
        says: "invalid type: string",
    },
    Case {
        name: "orchestration_task_concurrency_zero",
        setup: |c| {
            launch(
                c,
                "zero.toml",
                &orchestration("task_concurrency = 0\n", "[[requests]]\nname = \"a\"\n"),
            )
        },
        names: "[TMP]/orch/zero.toml: task_concurrency: ",
        says: "must be at least 1",
    },
    Case {
        name: "orchestration_request_runtime_of_wrong_type",
        setup: |c| {
            launch(
                c,
                "reuse.toml",
                &orchestration(
                    "",
                    "[[requests]]\nname = \"a\"\nruntime = { reuse = \"yes\" }\n",
                ),
            )
        },
        names: "[TMP]/orch/reuse.toml: requests[0].runtime.reuse: ",
        says: "expected a boolean",
    },
    Case {
        name: "orchestration_reuse_of_a_missing_run",
        setup: |c| {
            launch(
                c,
                "reuse-missing.toml",
                &orchestration(
                    "",
                    "[[requests]]\nname = \"a\"\nruntime = { reuse_run_id = \"nope\" }\n",
                ),
            )
        },
        names: "[TMP]/orch/reuse-missing.toml: request a: runtime.reuse_run_id: ",
        says: "run `nope` not found",
    },
    Case {
        name: "orchestration_empty_yaml",
        setup: |c| launch(c, "empty.yaml", b""),
        names: "[TMP]/orch/empty.yaml",
        says: "expected a mapping with `requests` at the top level, found null",
    },
    Case {
        name: "orchestration_top_level_array",
        setup: |c| launch(c, "array.json", br#"[{"name": "a"}]"#),
        names: "[TMP]/orch/array.json",
        says: "expected a mapping with `requests` at the top level, found array",
    },
    Case {
        name: "orchestration_yaml_syntax_error",
        setup: |c| {
            launch(
                c,
                "syntax.yaml",
                b"requests:\n  - name: a\n    benchmark: {id: example_exact_match\n",
            )
        },
        names: "[TMP]/orch/syntax.yaml",
        says: "line 4",
    },
    Case {
        name: "orchestration_binary_garbage",
        setup: |c| launch(c, "garbage.yaml", b"\x00\x01\xff\xfe requests"),
        names: "[TMP]/orch/garbage.yaml",
        says: "did not contain valid UTF-8",
    },
    Case {
        name: "orchestration_missing_file",
        setup: |c| {
            vec![
                "launch".into(),
                path(&c.ws.root().join("orch/missing.toml")),
            ]
        },
        names: "[TMP]/orch/missing.toml",
        says: "No such file or directory",
    },
    Case {
        name: "orchestration_directory_instead_of_a_file",
        setup: |c| {
            let dir = c.ws.root().join("orch/dir.toml");
            fs::create_dir_all(&dir).expect("mkdir");
            vec!["launch".into(), path(&dir)]
        },
        names: "[TMP]/orch/dir.toml",
        says: "Is a directory",
    },
    // Command-line values.
    Case {
        name: "benchmark_params_bad_json",
        setup: |_| run(&["--benchmark-params", "{size: 1}"]),
        names: "--benchmark-params",
        says: "invalid JSON: key must be a string",
    },
    Case {
        name: "execution_params_not_an_object",
        setup: |_| run(&["--execution-params", "[1, 2]"]),
        names: "--execution-params",
        says: "expected a JSON object, found array",
    },
    Case {
        name: "model_params_bad_json",
        setup: |_| run(&["--model-params", r#"{"temperature": }"#]),
        names: "--model-params",
        says: "invalid JSON",
    },
    Case {
        name: "model_params_value_of_wrong_type",
        setup: |_| run(&["--model-params", r#"{"max_retries": "many"}"#]),
        names: "--model-params",
        says: "model.params.max_retries: expected an integer",
    },
    // `CASE_ENV` sets BAR_SEED to a value no integer field accepts; the line never shows it.
    Case {
        name: "benchmark_param_reference_that_does_not_convert",
        setup: |_| run(&["--benchmark-params", r#"{"seed": "${BAR_SEED}"}"#]),
        names: "environment: benchmark.params.seed: ",
        says: "refers to ${BAR_SEED}, whose value is not an integer",
    },
    Case {
        name: "execution_param_reference_that_does_not_convert",
        setup: |_| run(&["--execution-params", r#"{"max_retries": "${BAR_SEED}"}"#]),
        names: "--execution-params: max_retries: ",
        says: "refers to ${BAR_SEED}, whose value is not an integer",
    },
    Case {
        name: "env_params_a_json_string",
        setup: |_| run(&["--env-params", r#""workdir""#]),
        names: "--env-params",
        says: "expected a JSON object, found string",
    },
    Case {
        name: "harness_params_a_json_number",
        setup: |_| run(&["--harness-params", "7"]),
        names: "--harness-params",
        says: "expected a JSON object, found integer",
    },
    Case {
        name: "empty_env",
        setup: |_| run(&["--env", ""]),
        names: "--env",
        says: "unknown environment ``",
    },
    Case {
        name: "k_not_a_number",
        setup: |_| run(&["--k", "two"]),
        names: "--k",
        says: "expected a whole number ≥ 0, found `two`",
    },
    Case {
        name: "egress_host_that_is_not_an_address",
        setup: |c| {
            with_config(
                c,
                "egress.toml",
                b"[runtime.egress.hosts]\n\"models.internal\" = \"localhost\"\n",
            )
        },
        names: "[TMP]/cfg/egress.toml",
        says: "runtime.egress.hosts.models.internal: invalid host map address `localhost` for `models.internal`: not an IP address",
    },
    Case {
        name: "network_policy_with_an_unknown_key",
        setup: |_| run(&["--env-params", r#"{"run_network_policy": {"mode": "no-network"}}"#]),
        names: "--env-params",
        says: "run_network_policy.mode: unknown key (expected network_mode, allowed_hosts or denied_hosts)",
    },
    Case {
        name: "network_policy_the_provider_cannot_enforce",
        setup: |_| {
            run(&["--env-params", r#"{"run_network_policy": {"network_mode": "no-network"}}"#])
        },
        names: "environment `host_process`",
        says: "cannot enforce run_network_policy mode `no-network` (it supports: public); the request's network policy applies to every task, so none can run",
    },
    Case {
        name: "denylist_the_provider_cannot_enforce",
        setup: |_| {
            run(&[
                "--env-params",
                r#"{"run_network_policy": {"network_mode": "denylist", "denied_hosts": ["evil.example:443"]}}"#,
            ])
        },
        names: "environment `host_process`",
        says: "cannot enforce run_network_policy mode `denylist` (it supports: public)",
    },
    Case {
        name: "k_negative",
        setup: |_| run(&["--k", "-1"]),
        names: "--k",
        says: "expected a whole number ≥ 0, found `-1`",
    },
    Case {
        name: "task_concurrency_negative",
        setup: |_| run(&["--task-concurrency", "-5"]),
        names: "--task-concurrency",
        says: "expected a whole number ≥ 0, found `-5`",
    },
    Case {
        name: "task_concurrency_negative_joined",
        setup: |_| run(&["--task-concurrency=-5"]),
        names: "--task-concurrency",
        says: "expected a whole number ≥ 0, found `-5`",
    },
    Case {
        name: "max_retries_negative",
        setup: |_| run(&["--max-retries", "-1"]),
        names: "--max-retries",
        says: "expected a whole number ≥ 0, found `-1`",
    },
    Case {
        name: "launch_task_concurrency_negative",
        setup: |c| {
            let mut args = launch(c, "neg.toml", &orchestration("", ""));
            args.extend(strings(&["--task-concurrency", "-5"]));
            args
        },
        names: "--task-concurrency",
        says: "expected a whole number ≥ 0, found `-5`",
    },
    Case {
        name: "results_dir_is_a_regular_file",
        setup: |c| run(&["--results-dir", &path(&c.ws.write("a-file", "x\n"))]),
        names: "--results-dir",
        says: "expected a directory, found a regular file",
    },
    Case {
        name: "results_dir_under_a_regular_file",
        setup: |c| {
            let file = c.ws.write("b-file", "x\n");
            run(&["--results-dir", &path(&file.join("sub"))])
        },
        names: "--results-dir",
        says: "expected a directory, found a regular file at",
    },
    Case {
        name: "k_zero",
        setup: |_| run(&["--k", "0"]),
        names: "--k",
        says: "must be at least 1",
    },
    Case {
        name: "task_concurrency_zero",
        setup: |_| run(&["--task-concurrency", "0"]),
        names: "--task-concurrency",
        says: "must be at least 1",
    },
    Case {
        name: "negative_timeout_seconds",
        setup: |_| run(&["--timeout-seconds=-5"]),
        names: "--timeout-seconds",
        says: "expected seconds ≥ 0, found -5",
    },
    Case {
        name: "negative_timeout_seconds_as_a_separate_word",
        setup: |_| run(&["--timeout-seconds", "-5"]),
        names: "--timeout-seconds",
        says: "expected seconds ≥ 0, found -5",
    },
    Case {
        name: "nan_cleanup_grace_seconds",
        setup: |_| run(&["--cleanup-grace-seconds", "NaN"]),
        names: "--cleanup-grace-seconds",
        says: "expected seconds ≥ 0, found NaN",
    },
    Case {
        name: "unknown_log_level",
        setup: |_| run(&["--log-level", "LOUD"]),
        names: "--log-level",
        says: "found `LOUD`",
    },
    Case {
        name: "provider_limit_without_a_value",
        setup: |_| run(&["--provider-limit", "docker"]),
        names: "--provider-limit",
        says: "expected PROVIDER=N, found `docker`",
    },
    Case {
        name: "provider_limit_negative",
        setup: |_| run(&["--provider-limit", "docker=-1"]),
        names: "--provider-limit",
        says: "expected a whole number after `docker=`",
    },
    Case {
        name: "env_open_qps_negative",
        setup: |_| run(&["--env-open-qps", "sandbox=-2"]),
        names: "--env-open-qps",
        says: "expected a rate ≥ 0",
    },
    Case {
        name: "unknown_attempt_strategy",
        setup: |_| run(&["--attempt-strategy", "best"]),
        names: "--attempt-strategy",
        says: "[possible values: avg, pass]",
    },
    Case {
        name: "retry_pattern_not_a_regex",
        setup: |_| run(&["--retry-pattern-list", r#"["(unclosed"]"#]),
        names: "--retry-pattern-list",
        says: "invalid regex",
    },
    Case {
        name: "model_api_protocol_bad_json_list",
        setup: |_| run(&["--model-api-protocol", "[\"openai-chat\""]),
        names: "--model-api-protocol",
        says: "invalid JSON list",
    },
    Case {
        name: "reuse_of_a_missing_run",
        setup: |_| run(&["--reuse", "20200101_000000"]),
        names: "--reuse",
        says: "run `20200101_000000` not found",
    },
    Case {
        name: "missing_positional_arguments",
        setup: |_| strings(&["run", "example_exact_match"]),
        names: "<HARNESS>",
        says: "required arguments were not provided",
    },
    // `qa` datasets.
    Case {
        name: "qa_missing_dataset",
        setup: |c| qa(c, "missing.jsonl", None),
        names: "[TMP]/data/missing.jsonl",
        says: "No such file or directory",
    },
    Case {
        name: "qa_dataset_not_json",
        setup: |c| qa(c, "prose.jsonl", Some("What is 2 + 2?\n")),
        names: "[TMP]/data/prose.jsonl:1",
        says: "invalid JSON",
    },
    Case {
        name: "qa_line_without_a_question",
        setup: |c| {
            qa(
                c,
                "no-question.jsonl",
                Some(&format!(
                    "{QA_LINE}\n{{\"id\": \"b\", \"answer\": \"5\"}}\n"
                )),
            )
        },
        names: "[TMP]/data/no-question.jsonl:2",
        says: "missing field \"question\"",
    },
    Case {
        name: "qa_duplicate_ids",
        setup: |c| qa(c, "dup.jsonl", Some(&format!("{QA_LINE}\n{QA_LINE}\n"))),
        names: "[TMP]/data/dup.jsonl:2",
        says: "duplicate id \"a\" (first at line 1)",
    },
    Case {
        name: "qa_empty_dataset",
        setup: |c| qa(c, "empty.jsonl", Some("")),
        names: "[TMP]/data/empty.jsonl",
        says: "the dataset holds no records",
    },
    Case {
        name: "qa_answer_of_wrong_type",
        setup: |c| {
            qa(
                c,
                "answer.jsonl",
                Some(r#"{"id": "a", "question": "2 + 2?", "answer": {"value": 4}}"#),
            )
        },
        names: "[TMP]/data/answer.jsonl:1",
        says: "field \"answer\" must be a string, number or list of strings, found object",
    },
    Case {
        name: "qa_record_not_an_object",
        setup: |c| qa(c, "array.jsonl", Some("[\"2 + 2?\", \"4\"]\n")),
        names: "[TMP]/data/array.jsonl:1",
        says: "expected a JSON object, found array",
    },
    Case {
        name: "qa_dataset_is_a_directory",
        setup: |c| {
            let dir = c.ws.root().join("data/dir.jsonl");
            fs::create_dir_all(&dir).expect("mkdir");
            qa_path(c, &dir)
        },
        names: "[TMP]/data/dir.jsonl",
        says: "Is a directory",
    },
    // Harbor task directories.
    Case {
        name: "harbor_missing_task_toml",
        setup: |c| harbor(c, &harbor_task(c, "no-toml", None)),
        names: "[TMP]/tasks/no-toml",
        says: "expected task.toml in it or in its sub-directories",
    },
    Case {
        name: "harbor_bad_toml",
        setup: |c| {
            harbor(
                c,
                &harbor_task(
                    c,
                    "bad-toml",
                    Some("[agent]\ntimeout_sec = 10.0\n[verifier\n"),
                ),
            )
        },
        names: "[TMP]/tasks/bad-toml/task.toml",
        says: "invalid TOML (line 3)",
    },
    Case {
        name: "harbor_field_of_wrong_type",
        setup: |c| {
            harbor(
                c,
                &harbor_task(c, "wrong-type", Some("[agent]\ntimeout_sec = \"long\"\n")),
            )
        },
        names: "[TMP]/tasks/wrong-type/task.toml",
        says: "field `agent.timeout_sec`: expected a positive number of seconds, found string",
    },
    Case {
        name: "harbor_section_of_wrong_type",
        setup: |c| harbor(c, &harbor_task(c, "section-type", Some("verifier = 3\n"))),
        names: "[TMP]/tasks/section-type/task.toml",
        says: "verifier",
    },
    Case {
        name: "harbor_multi_step_task",
        setup: |c| {
            harbor(
                c,
                &harbor_task(c, "multi-step", Some("[[steps]]\nname = \"one\"\n")),
            )
        },
        names: "[TMP]/tasks/multi-step",
        says: "expected the directory of step `one`",
    },
    Case {
        name: "harbor_collect_with_a_user",
        setup: |c| {
            harbor(
                c,
                &harbor_task(
                    c,
                    "collect-user",
                    Some("[verifier]\ncollect = [{ command = \"true\", user = \"root\" }]\n"),
                ),
            )
        },
        names: "[TMP]/tasks/collect-user/task.toml",
        says: "field `verifier.collect[0].user`",
    },
    Case {
        name: "harbor_path_is_a_file",
        setup: |c| harbor(c, &c.ws.write("tasks/a-file", "not a task\n")),
        names: "[TMP]/tasks/a-file",
        says: "found a file",
    },
    Case {
        name: "harbor_missing_path",
        setup: |c| harbor(c, &c.ws.root().join("tasks/missing")),
        names: "[TMP]/tasks/missing",
        says: "cannot open",
    },
    Case {
        name: "harbor_missing_verifier_script",
        setup: |c| {
            let dir = harbor_task(c, "no-test", Some("[agent]\ntimeout_sec = 10.0\n"));
            fs::remove_file(dir.join("tests/test.sh")).expect("rm");
            harbor(c, &dir)
        },
        names: "[TMP]/tasks/no-test",
        says: "expected the verifier script tests/test.sh",
    },
    Case {
        name: "harbor_duplicate_task_ids",
        setup: |c| {
            let a = harbor_task(c, "one/same", Some("[agent]\ntimeout_sec = 10.0\n"));
            let b = harbor_task(c, "two/same", Some("[agent]\ntimeout_sec = 10.0\n"));
            let params = json!({ "path": [a.parent().unwrap(), b.parent().unwrap()] });
            strings(&[
                "--plugin-dir",
                &path(&c.packs),
                "run",
                "harbor",
                "oracle",
                "m",
                "--env",
                "sandbox",
                "--benchmark-params",
                &params.to_string(),
            ])
        },
        names: "[TMP]/tasks/one/same and [TMP]/tasks/two/same",
        says: "duplicate task id \"same\"",
    },
    Case {
        name: "harbor_with_an_unknown_harness",
        setup: |c| {
            harbor_with(
                c,
                "nope",
                &harbor_task(c, "fine", Some("[agent]\ntimeout_sec = 10.0\n")),
            )
        },
        names: "HARNESS",
        says: "unknown harness `nope`",
    },
];

/// Runs one case in a fresh workspace and checks the contract; returns the redacted line.
fn rejected(case: &Case, packs: &Path) -> String {
    let c = Ctx {
        ws: Workspace::new(),
        packs: packs.to_path_buf(),
    };
    let args = (case.setup)(&c);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = c.ws.run(&args, CASE_ENV);
    let name = case.name;
    assert_eq!(out.code, 2, "{name}: {out:?}");
    assert_eq!(out.stdout, "", "{name}: nothing on stdout: {out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{name}: exactly one line: {out:?}");
    assert!(lines[0].starts_with("error: "), "{name}: {out:?}");
    // No results directory (so no `results/<namespace>/<run_id>`), nor anything else.
    assert!(
        !c.ws.cwd.join("results").exists(),
        "{name}: results dir written: {out:?}"
    );
    let written: Vec<_> = fs::read_dir(&c.ws.cwd)
        .expect("cwd")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(written.is_empty(), "{name}: wrote {written:?}");
    for (variable, value) in CASE_ENV {
        assert!(
            !lines[0].contains(value),
            "{name}: shows ${variable}'s value: {out:?}"
        );
    }
    let line = c.ws.redact(lines[0]);
    assert!(
        line.contains(case.names),
        "{name}: {line}\nexpected it to name: {}",
        case.names
    );
    assert!(
        line.contains(case.says),
        "{name}: {line}\nexpected: {}",
        case.says
    );
    line
}

/// Every case (in parallel batches), then every line in a snapshot.
#[test]
fn malformed_input_is_one_line_exit_2_and_writes_nothing() {
    assert!(CASES.len() >= 30, "{} cases", CASES.len());
    let mut names = std::collections::HashSet::new();
    for case in CASES {
        assert!(names.insert(case.name), "duplicate case {}", case.name);
    }
    let dirs = PluginDirs::new();
    let packs = dirs.package("packs", "qa-pack");
    dirs.package("packs", "harbor-pack");
    dirs.package("packs", "agents-pack");
    let lines: Vec<String> = std::thread::scope(|scope| {
        CASES
            .chunks(CASES.len().div_ceil(8))
            .map(|batch| {
                let packs = &packs;
                scope.spawn(move || {
                    batch
                        .iter()
                        .map(|case| rejected(case, packs))
                        .collect::<Vec<_>>()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .flat_map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
            .collect()
    });
    let snapshot: String = CASES
        .iter()
        .zip(&lines)
        .map(|(case, line)| format!("{}\n  {line}\n", case.name))
        .collect();
    insta::assert_snapshot!("bad_input_lines", snapshot);
}
