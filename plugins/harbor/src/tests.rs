//! Unit tests: task.toml mapping, discovery, rewards, and prepare/evaluate against a scripted
//! session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, ArtifactSpec, EnvironmentSetup, EnvironmentSpec,
    EvaluationEnvironmentMode, ExecCommand, ExecRequest, ExecResult, ExecutionPlan, IssuePhase,
    MetricKind, MetricValue, NetworkMode, NetworkPolicy, PreparedTask, ResourceRequirements,
    RunRequest, RunResult, SessionDirs, SessionInfo, TaskSpec, TaskStatus, TaskStep,
};
use agentcompass_plugin_api::sdk::testing::block_on;
use agentcompass_plugin_api::sdk::{
    async_trait, Benchmark, Ctx, EnvironmentSession, EvaluationInput, SessionRef,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::benchmark::Harbor;
use crate::commands::TEST_STDOUT;
use crate::environment::parse_size_mb;
use crate::names::ID;
use crate::reward::{self, REWARD_JSON, REWARD_TXT};
use crate::task_toml::{load_task, LoadOptions};

/// Writes a task directory `root/name` with `toml` and a minimal instruction/tests/solution.
pub(crate) fn write_task(root: &Path, name: &str, toml: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::create_dir_all(dir.join("solution")).unwrap();
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    std::fs::write(dir.join("instruction.md"), format!("Do {name}.\n")).unwrap();
    std::fs::write(
        dir.join("tests/test.sh"),
        "echo 1 > /logs/verifier/reward.txt\n",
    )
    .unwrap();
    std::fs::write(dir.join("solution/solve.sh"), "true\n").unwrap();
    std::fs::canonicalize(dir).unwrap()
}

pub(crate) fn load(dir: &Path) -> Result<TaskSpec> {
    load_task(dir, LoadOptions::default())
}

fn load_err(dir: &Path) -> String {
    let message = load(dir).unwrap_err().message;
    assert!(!message.contains('\n'), "{message}");
    message
}

fn request(params: Value, harness: &str) -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = ID.to_string();
    req.benchmark.params = params.as_object().unwrap().clone();
    req.harness.id = harness.to_string();
    req
}

fn load_all(params: Value) -> Result<Vec<TaskSpec>> {
    block_on(Harbor.load_selected_tasks(&Ctx::detached(), &request(params, "agent")))
}

fn ids(tasks: &[TaskSpec]) -> Vec<&str> {
    tasks.iter().map(|t| t.task_id.as_str()).collect()
}

fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The reference example of harbor-and-inspect.md §A1, plus env tables and collect hooks.
const FULL_TOML: &str = r#"
schema_version = "1.4"
source = "https://example.org/tasks"
artifacts = ["/app/hello.txt", {source = "/app/out", destination = "out", exclude = ["*.tmp"]}]

[task]
name = "acme/hello-file"
version = "1.0.0"
description = "Create a greeting file"
keywords = ["files", "smoke"]
authors = [{name = "Ada", email = "ada@example.org"}]

[metadata]
difficulty = "easy"
category = "smoke"
source = "overridden by the root source"

[agent]
timeout_sec = 300.0
user = "agent"

[verifier]
timeout_sec = 120
env = { GRADER_MODE = "${GRADER_MODE:-strict}" }

[[verifier.collect]]
command = "cp /app/hello.txt /logs/artifacts/hello.txt"
timeout_sec = 30

[[verifier.collect]]
command = "true"
service = "main"

[environment]
build_timeout_sec = 600.0
docker_image = "ubuntu:24.04"
os = "linux"
cpus = 1
memory_mb = 2048
storage_mb = 4096
gpus = 0
workdir = "/app"
network_mode = "allowlist"
allowed_hosts = ["pypi.org", "*.pythonhosted.org"]
env = { TOKEN = "${TOKEN}", MODE = "fast" }

[environment.healthcheck]
command = "test -d /app"
retries = 3

[solution]
env = { SOLUTION_KEY = "${SOLUTION_KEY}" }
"#;

#[test]
fn full_task_toml_maps_onto_the_task_spec() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(tmp.path(), "hello-file", FULL_TOML);
    let task = load(&dir).unwrap();
    assert_eq!(task.task_id, "hello-file");
    assert_eq!(task.question, "Do hello-file.\n");
    assert_eq!(task.category, "smoke");
    assert_eq!(task.run_timeout_seconds, Some(300.0));
    assert_eq!(task.evaluation_timeout_seconds, Some(120.0));
    assert_eq!(
        task.environment_setup,
        EnvironmentSetup {
            image: Some("ubuntu:24.04".into()),
            build_timeout_seconds: Some(600.0),
            workdir: Some("/app".into()),
            os: Some("linux".into()),
            build_context: None,
            compose: None,
        }
    );
    let allowlist = NetworkPolicy::allowlist(["*.pythonhosted.org", "pypi.org"]);
    assert_eq!(task.baseline_network_policy, Some(allowlist.clone()));
    // No phase overrides: both phases keep the baseline.
    assert_eq!(task.run_network_policy, Some(allowlist.clone()));
    assert_eq!(task.evaluation_network_policy, Some(allowlist));
    assert_eq!(
        task.resources,
        Some(ResourceRequirements {
            cpu: Some(1.0),
            memory_mb: Some(2048),
            storage_mb: Some(4096),
            ..Default::default()
        })
    );
    assert_eq!(task.run_resources, None);
    assert_eq!(task.evaluation_resources, None);
    assert_eq!(
        task.env_variables,
        pairs(&[("MODE", "fast"), ("TOKEN", "${TOKEN}")])
    );
    assert_eq!(
        task.evaluation_env_variables,
        pairs(&[("GRADER_MODE", "${GRADER_MODE:-strict}")])
    );
    // solution.env is not the agent's by default.
    assert!(task.run_env_variables.is_empty());
    assert_eq!(task.evaluation_environment_env_variables, None);
    assert_eq!(task.evaluation_environment_setup, None);
    assert_eq!(task.evaluation_baseline_network_policy, None);
    assert_eq!(task.evaluation_environment_mode, None);
    assert_eq!(
        task.artifacts,
        Some(vec![
            ArtifactSpec::main_dir(),
            ArtifactSpec::new("/app/hello.txt"),
            ArtifactSpec {
                destination: Some("out".into()),
                exclude: vec!["*.tmp".into()],
                ..ArtifactSpec::new("/app/out")
            },
        ])
    );
    assert_eq!(
        task.artifact_collect,
        vec![
            ArtifactCollectCommand {
                timeout_seconds: 30.0,
                ..ArtifactCollectCommand::new("cp /app/hello.txt /logs/artifacts/hello.txt")
            },
            ArtifactCollectCommand::new("true"),
        ]
    );
    assert_eq!(task.artifact_collect[1].timeout_seconds, 60.0);

    // Metadata: free-form table merged, explicit declarations win, raw kept.
    assert_eq!(task.metadata["difficulty"], json!("easy"));
    assert_eq!(task.metadata["source"], json!("https://example.org/tasks"));
    assert_eq!(
        task.metadata["task"],
        json!({
            "name": "acme/hello-file",
            "version": "1.0.0",
            "description": "Create a greeting file",
            "keywords": ["files", "smoke"],
            "authors": [{"name": "Ada", "email": "ada@example.org"}],
        })
    );
    assert_eq!(
        task.metadata["harbor"],
        json!({
            "task_dir": dir.display().to_string(),
            "schema_version": "1.4",
            "has_solution": true,
            "workdir": "/app",
            // Run before the agent, with Harbor's defaults filled in.
            "healthcheck": {
                "command": "test -d /app",
                "interval_sec": 5.0,
                "timeout_sec": 30.0,
                "start_period_sec": 0.0,
                "start_interval_sec": 5.0,
                "retries": 3,
            },
        })
    );
    let raw = &task.metadata["harbor_raw"];
    assert_eq!(raw["environment"]["memory_mb"], json!(2048));
    assert_eq!(
        raw["solution"]["env"]["SOLUTION_KEY"],
        json!("${SOLUTION_KEY}")
    );
    assert_eq!(
        raw["metadata"]["source"],
        json!("overridden by the root source")
    );

    // Every declaration is mapped: `agent.user` is the agent phase's user.
    assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);
    assert_eq!(task.run_user.as_deref(), Some("agent"));
}

#[test]
fn solution_env_reaches_the_agent_only_when_asked() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(tmp.path(), "t", FULL_TOML);
    let opted_in = load_task(
        &dir,
        LoadOptions {
            solution_env_for_agent: true,
        },
    )
    .unwrap();
    assert_eq!(
        opted_in.run_env_variables,
        pairs(&[("SOLUTION_KEY", "${SOLUTION_KEY}")])
    );
    let path = json!({"path": dir.display().to_string()});
    let load_with = |params: Value, harness: &str| {
        block_on(Harbor.load_tasks(&Ctx::detached(), &request(params, harness))).unwrap()
    };
    assert!(load_with(path.clone(), "agent")[0]
        .run_env_variables
        .is_empty());
    assert_eq!(
        load_with(path.clone(), "oracle")[0].run_env_variables,
        opted_in.run_env_variables
    );
    let mut param = path.clone();
    param["solution_env_for_agent"] = json!(true);
    assert_eq!(
        load_with(param, "agent")[0].run_env_variables,
        opted_in.run_env_variables
    );
}

#[test]
fn legacy_allow_internet_memory_and_version() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(
        tmp.path(),
        "legacy",
        r#"
version = "1.0"
[environment]
allow_internet = false
memory = "2G"
storage = "10G"
"#,
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.baseline_network_policy,
        Some(NetworkPolicy::no_network())
    );
    assert_eq!(task.run_network_policy, Some(NetworkPolicy::no_network()));
    let resources = task.resources.unwrap();
    assert_eq!(resources.memory_mb, Some(2048));
    assert_eq!(resources.storage_mb, Some(10240));
    assert_eq!(task.metadata["harbor"]["schema_version"], json!("1.0"));
    assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);

    let dir = write_task(
        tmp.path(),
        "public",
        "[environment]\nallow_internet = true\nnetwork_mode = \"public\"\n",
    );
    assert_eq!(
        load(&dir).unwrap().baseline_network_policy,
        Some(NetworkPolicy::public())
    );
    // allow_internet next to network_mode: network_mode wins (as in Harbor), with a warning.
    let dir = write_task(
        tmp.path(),
        "wins",
        "[environment]\nallow_internet = \"yes\"\nnetwork_mode = \"no-network\"\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.baseline_network_policy,
        Some(NetworkPolicy::no_network())
    );
    assert!(task.load_warnings[0].contains(
        "legacy field `environment.allow_internet` is ignored (`environment.network_mode` is given and wins, as in Harbor)"
    ));
    // `version` next to `schema_version` is ignored (Harbor renames it only when alone).
    let dir = write_task(
        tmp.path(),
        "both",
        "schema_version = \"1.4\"\nversion = 1\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(task.metadata["harbor"]["schema_version"], json!("1.4"));
    assert!(task.load_warnings[0].contains("legacy field `version` is ignored"));
    // A legacy size that is not a string is ignored with a warning (seed 004).
    let dir = write_task(tmp.path(), "number", "[environment]\nmemory = 2048\n");
    let task = load(&dir).unwrap();
    assert_eq!(task.resources, None);
    assert!(task.load_warnings[0].contains("legacy field `environment.memory` is ignored"));
    // Harbor's coercions: numeric strings, whole floats, any-case os, booleans as text.
    let dir = write_task(
        tmp.path(),
        "coerced",
        "[agent]\ntimeout_sec = \"300\"\n[environment]\ncpus = \"2\"\nmemory_mb = 2048.0\nos = \"LINUX\"\nallow_internet = \"off\"\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(task.run_timeout_seconds, Some(300.0));
    let resources = task.resources.clone().unwrap();
    assert_eq!(
        (resources.cpu, resources.memory_mb),
        (Some(2.0), Some(2048))
    );
    assert_eq!(task.environment_setup.os.as_deref(), Some("linux"));
    assert_eq!(
        task.baseline_network_policy,
        Some(NetworkPolicy::no_network())
    );
    // An empty instruction is accepted, leading canary lines are stripped.
    let dir = write_task(tmp.path(), "canary", "");
    std::fs::write(
        dir.join("instruction.md"),
        "<!-- canary GUID 1 -->\n\nDo it.\n",
    )
    .unwrap();
    assert_eq!(load(&dir).unwrap().question, "Do it.\n");
    std::fs::write(dir.join("instruction.md"), "").unwrap();
    assert_eq!(load(&dir).unwrap().question, "");

    // Equal old and new values: the legacy one is ignored with a warning.
    let dir = write_task(
        tmp.path(),
        "same",
        "[environment]\nmemory = \"2G\"\nmemory_mb = 2048\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(task.resources.unwrap().memory_mb, Some(2048));
    assert_eq!(task.load_warnings.len(), 1);
    assert!(task.load_warnings[0].contains("legacy field `environment.memory` is ignored"));

    for (text, mb) in [
        ("2G", Some(2048)),
        ("512M", Some(512)),
        ("1.5G", Some(1536)),
        ("1.5GB", None),
        ("10Gi", None),
        ("1t", None),
        ("2048K", Some(2)),
        ("2048", None),
        ("lots", None),
        ("0M", None),
        ("-1G", None),
    ] {
        assert_eq!(parse_size_mb(text), mb, "{text}");
    }
}

#[test]
fn conflicting_and_invalid_declarations_are_one_line_errors() {
    let tmp = TempDir::new().unwrap();
    let file = |dir: &Path| dir.join("task.toml").display().to_string();
    let cases: &[(&str, &str, &str)] = &[
        (
            "mem",
            "[environment]\nmemory = \"4G\"\nmemory_mb = 2048\n",
            "field `environment.memory`: expected the same size as environment.memory_mb = 2048, found \"4G\" (4096 MiB; conflicting values)",
        ),
        (
            "size",
            "[environment]\nmemory = \"2GB\"\n",
            "field `environment.memory`: expected a size string such as \"2G\", \"512M\" or \"2048K\", found string \"2GB\"",
        ),
        (
            "package",
            "[task]\nversion = \"1.0\"\n",
            "field `task.name`: expected a package name in org/name format, found none",
        ),
        (
            "package-name",
            "[task]\nname = \"hello\"\n",
            "field `task.name`: expected a package name in org/name format",
        ),
        (
            "destination",
            "artifacts = [{source = \"/a\", destination = \".\"}]\n",
            "field `artifacts[0].destination`: expected a destination naming a file or directory, found \".\"",
        ),
        (
            "backslash",
            "artifacts = [{source = \"/a\", destination = \"a\\\\b\"}]\n",
            "field `artifacts[0].destination`: expected a destination with forward slashes only",
        ),
        (
            "gpu-types",
            "[environment]\ngpu_types = \"H100\"\n",
            "field `environment.gpu_types`: expected an array of strings, found string \"H100\"",
        ),
        (
            "tpu",
            "[environment]\ntpu = {type = \"v5e\", topology = \"2x\"}\n",
            "field `environment.tpu.topology`: expected positive dimensions separated by `x`",
        ),
        (
            "user",
            "[agent]\nuser = 1.5\n",
            "field `agent.user`: expected a user name or a UID, found float 1.5",
        ),
        (
            "healthcheck",
            "[environment]\nhealthcheck = {retries = 3}\n",
            "field `environment.healthcheck.command`: expected a string, found none",
        ),
        (
            "mcp",
            "[[environment.mcp_servers]]\nname = \"web\"\ntransport = \"sse\"\n",
            "field `environment.mcp_servers[0].url`: expected a url for an HTTP transport, found none",
        ),
        (
            "strategy",
            "multi_step_reward_strategy = \"max\"\n",
            "field `multi_step_reward_strategy`: expected one of \"mean\", \"final\", found string \"max\"",
        ),
        (
            "cpus",
            "[environment]\ncpus = 0\n",
            "field `environment.cpus`: expected a positive number, found integer 0",
        ),
        (
            "hosts",
            "[environment]\nnetwork_mode = \"public\"\nallowed_hosts = [\"a.org\"]\n",
            "field `environment.allowed_hosts`: expected only with network_mode = \"allowlist\"",
        ),
        (
            "timeout",
            "[agent]\ntimeout_sec = \"5m\"\n",
            "field `agent.timeout_sec`: expected a positive number of seconds, found string \"5m\"",
        ),
        (
            "zero",
            "[verifier]\ntimeout_sec = 0\n",
            "field `verifier.timeout_sec`: expected a positive number of seconds, found integer 0",
        ),
        (
            "lots",
            "[environment]\nmemory = \"lots\"\n",
            "field `environment.memory`: expected a size string such as \"2G\", \"512M\" or \"2048K\", found string \"lots\"",
        ),
        (
            "workdir",
            "[environment]\nworkdir = \"app\"\n",
            "field `environment.workdir`: expected an absolute POSIX path, found \"app\"",
        ),
        (
            "env",
            "[environment]\nenv = { N = 1 }\n",
            "field `environment.env.N`: expected a string, found integer 1",
        ),
        (
            "mode",
            "[verifier]\nenvironment_mode = \"sometimes\"\n",
            "field `verifier.environment_mode`: expected \"shared\" or \"separate\", found string \"sometimes\"",
        ),
        (
            "shared",
            "[verifier]\nenvironment_mode = \"shared\"\n[verifier.environment]\n",
            "field `verifier.environment_mode`: expected \"separate\"",
        ),
        (
            "artifact",
            "artifacts = [\"relative/path\"]\n",
            "field `artifacts[0]`: expected an absolute source path without `..`",
        ),
        (
            "sidecar-artifact",
            "artifacts = [{source = \"/data\", service = \"db\"}]\n",
            "field `artifacts[0].service`: expected \"main\" (sidecar services are not supported), found \"db\"",
        ),
        ("toml", "[agent]\ntimeout_sec = 1\n[environment\n", "invalid TOML (line 3): "),
    ];
    for (name, toml, expected) in cases {
        let dir = write_task(tmp.path(), name, toml);
        let message = load_err(&dir);
        let prefix = format!("{ID}: {}: {expected}", file(&dir));
        assert!(
            message.starts_with(&prefix),
            "{message}\n  expected: {prefix}"
        );
    }

    // Missing files name the file.
    let dir = write_task(tmp.path(), "no-instruction", "");
    std::fs::remove_file(dir.join("instruction.md")).unwrap();
    assert!(load_err(&dir).contains(&format!(
        "{}: cannot read the task instruction",
        dir.join("instruction.md").display()
    )));
    let dir = write_task(tmp.path(), "no-tests", "");
    std::fs::remove_file(dir.join("tests/test.sh")).unwrap();
    assert_eq!(
        load_err(&dir),
        format!(
            "{ID}: {}: expected the verifier script tests/test.sh, found nothing",
            dir.display()
        )
    );
}

#[test]
fn verifier_collect_mapping_and_rejections() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(
        tmp.path(),
        "collect",
        "[[verifier.collect]]\ncommand = \"git diff > /logs/artifacts/patch\"\ntimeout_sec = 300.0\n",
    );
    assert_eq!(
        load(&dir).unwrap().artifact_collect,
        vec![ArtifactCollectCommand {
            timeout_seconds: 300.0,
            ..ArtifactCollectCommand::new("git diff > /logs/artifacts/patch")
        }]
    );
    // An empty command is kept, as Harbor keeps it (`bash -c ""`: nothing runs, nothing
    // fails), with a warning naming its field.
    let dir = write_task(
        tmp.path(),
        "empty-collect",
        "[[verifier.collect]]\ncommand = \"true\"\n[[verifier.collect]]\ncommand = \"\"\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.artifact_collect,
        vec![
            ArtifactCollectCommand::new("true"),
            ArtifactCollectCommand::new("")
        ]
    );
    assert!(
        task.load_warnings.iter().any(|w| w.ends_with(
            "field `verifier.collect[1].command` is empty: it runs as a no-op, as in Harbor"
        )),
        "{:?}",
        task.load_warnings
    );
    let cases: &[(&str, &str)] = &[
        (
            "[[verifier.collect]]\ncommand = \"x\"\nservice = \"db\"\n",
            "field `verifier.collect[0].service`: expected \"main\" (sidecar services are not supported), found \"db\"",
        ),
        (
            "[[verifier.collect]]\ncommand = \"x\"\nuser = \"root\"\n",
            "field `verifier.collect[0].user`: expected no value (command-level user overrides are not supported), found string \"root\"",
        ),
        (
            "[[verifier.collect]]\ncommand = \"x\"\n[[verifier.collect]]\ncommand = \"y\"\nretries = 2\n",
            "field `verifier.collect[1].retries`: expected one of command, timeout_sec, service; found an unknown field",
        ),
        (
            "[[verifier.collect]]\ntimeout_sec = 5\n",
            "field `verifier.collect[0]`: expected a `command` string, found none",
        ),
        (
            "[[verifier.collect]]\ncommand = \"x\"\ntimeout_sec = -1\n",
            "field `verifier.collect[0].timeout_sec`: expected a positive number of seconds, found integer -1",
        ),
        (
            "[verifier]\ncollect = \"x\"\n",
            "field `verifier.collect`: expected an array of tables, found string \"x\"",
        ),
    ];
    for (i, (toml, expected)) in cases.iter().enumerate() {
        let dir = write_task(tmp.path(), &format!("bad-{i}"), toml);
        let message = load_err(&dir);
        assert!(
            message.ends_with(expected),
            "{message}\n  expected: ...{expected}"
        );
        assert!(message.contains(&dir.join("task.toml").display().to_string()));
    }
}

/// Writes step `name` of the task at `dir`: its instruction and the given files.
pub(crate) fn write_step(dir: &Path, name: &str, files: &[(&str, &str)]) {
    let step = dir.join("steps").join(name);
    std::fs::create_dir_all(&step).unwrap();
    std::fs::write(step.join("instruction.md"), format!("Step {name}.\n")).unwrap();
    for (path, content) in files {
        let file = step.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }
}

#[test]
fn multi_step_tasks_load_their_steps() {
    let tmp = TempDir::new().unwrap();
    let toml =
        "[[steps]]\nname = \"one\"\nmin_reward = 1\nverifier = { env = { LEVEL = \"1\" } }\n\
                [[steps]]\nname = \"two\"\nmin_reward = { reward = 0.5, style = \"0.25\" }\n";
    let dir = write_task(tmp.path(), "steps-table", toml);
    assert_eq!(
        load_err(&dir),
        format!(
            "{ID}: {}/steps/one: expected the directory of step `one`, found nothing",
            dir.display()
        )
    );
    write_step(&dir, "one", &[("tests/test.sh", "exit 0\n")]);
    write_step(&dir, "two", &[]);
    let task = load(&dir).unwrap();
    assert_eq!(
        task.question, "",
        "a multi-step task has no instruction of its own"
    );
    let names: Vec<&str> = task.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(task.steps[0].question, "Step one.\n");
    assert_eq!(task.steps[0].metadata["min_reward"], json!({"reward": 1.0}));
    assert_eq!(
        task.steps[0].metadata["verifier_env"],
        json!({"LEVEL": "1"})
    );
    assert_eq!(
        task.steps[1].metadata["min_reward"],
        json!({"reward": 0.5, "style": 0.25})
    );
    assert_eq!(
        task.metadata["harbor"]["multi_step_reward_strategy"],
        "mean"
    );
    assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);

    // The strategy is kept; step fields not applied per step are warned about.
    let toml = "multi_step_reward_strategy = \"final\"\n[[steps]]\nname = \"one\"\n\
                agent = { timeout_sec = 5 }\nartifacts = [\"/app/x\"]\n";
    let dir = write_task(tmp.path(), "final", toml);
    write_step(&dir, "one", &[]);
    let task = load(&dir).unwrap();
    assert_eq!(
        task.metadata["harbor"]["multi_step_reward_strategy"],
        "final"
    );
    // The step's agent timeout is its own; its artifacts come after the task's.
    assert_eq!(task.steps[0].run_timeout_seconds, Some(5.0));
    assert_eq!(task.steps[0].evaluation_timeout_seconds, None);
    assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);
    let sources: Vec<&str> = task.steps[0]
        .artifacts
        .iter()
        .map(|a| a.source.as_str())
        .collect();
    assert_eq!(sources, ["/app/x"]);

    // A step needs a test script of its own or the task's.
    let dir = write_task(tmp.path(), "no-tests", "[[steps]]\nname = \"one\"\n");
    write_step(&dir, "one", &[]);
    std::fs::remove_file(dir.join("tests/test.sh")).unwrap();
    assert!(load_err(&dir).contains("expected the verifier script of step `one`"));
    // Where each step's verifier runs is tested in `step_map`.

    // Invalid steps are reported as such (Harbor's StepConfig rules).
    let dir = write_task(tmp.path(), "bad-step", "[[steps]]\nname = \"a/b\"\n");
    assert!(load_err(&dir).contains("field `steps[0].name`: expected a portable directory name"));
    let dir = write_task(
        tmp.path(),
        "dup-step",
        "[[steps]]\nname = \"A\"\n[[steps]]\nname = \"a\"\n",
    );
    assert!(load_err(&dir).contains("field `steps[1].name`: expected a unique step name"));
    // `steps = []` and a steps/ directory without [[steps]] are single-step tasks in Harbor.
    let dir = write_task(tmp.path(), "no-steps", "steps = []\n");
    assert!(load(&dir).unwrap().steps.is_empty());
    let dir = write_task(tmp.path(), "steps-dir", "");
    std::fs::create_dir_all(dir.join("steps/one")).unwrap();
    let task = load(&dir).unwrap();
    assert!(task.load_warnings[0].contains("the steps/ directory is ignored"));
}

#[test]
fn unmapped_fields_become_load_warnings() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(
        tmp.path(),
        "warn",
        r#"
multi_step_reward_strategy = "mean"
custom_root = 1

[verifier]
user = "grader"
type = "custom"

[environment]
gpu_types = ["H100"]
skills_dir = "skills"
tpu = { type = "v5", topology = "2x2" }

[[environment.mcp_servers]]
name = "db"
transport = "stdio"
command = "db-mcp"

[solution]
extra = true
"#,
    );
    std::fs::write(dir.join("trajectory.json"), "{}").unwrap();
    std::fs::create_dir_all(dir.join("environment")).unwrap();
    std::fs::write(dir.join("environment/Dockerfile"), "FROM ubuntu\n").unwrap();
    let task = load(&dir).unwrap();
    let warnings = task.load_warnings.join("\n");
    for needle in [
        "field `multi_step_reward_strategy` is not supported",
        "unknown field `custom_root` is ignored",
        "unknown field `verifier.type` is ignored",
        "field `environment.gpu_types` is not supported and is ignored",
        "field `environment.tpu` is not supported: the task is refused",
        "unknown field `solution.extra` is ignored",
        "trajectory.json is not supported",
    ] {
        assert!(
            warnings.contains(needle),
            "missing {needle:?} in\n{warnings}"
        );
    }
    assert_eq!(task.load_warnings.len(), 7, "{warnings}");
    // Its skills directory and MCP servers are handed to the agent (the host refuses a
    // harness that cannot take them).
    assert_eq!(task.skills_dir.as_deref(), Some("skills"));
    assert_eq!(task.mcp_servers[0].command.as_deref(), Some("db-mcp"));
    // Without its TPUs the task is not what it measures: refused.
    let unsupported = task.metadata["harbor"]["unsupported"]
        .as_str()
        .unwrap_or_default();
    assert!(
        unsupported.ends_with(
            "task.toml: field `environment.tpu` is not supported (no environment here has \
             TPUs); the task is not run without it"
        ),
        "{unsupported}"
    );
    assert_eq!(task.evaluation_user.as_deref(), Some("grader"));
    // The task's Dockerfile is its image (module `image`), not a warning.
    assert_eq!(
        task.environment_setup.build_context,
        Some(dir.join("environment").display().to_string())
    );
    // Warnings are kept on the task; the raw declarations too.
    assert_eq!(
        task.metadata["harbor_raw"]["verifier"]["type"],
        json!("custom")
    );
}

#[test]
fn task_images_come_from_where_harbor_takes_them() {
    let tmp = TempDir::new().unwrap();
    let dockerfile = |dir: &Path, sub: &str| {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("Dockerfile"), "FROM busybox\n").unwrap();
    };
    // A declared image wins over a Dockerfile beside it (Harbor without --force-build).
    let dir = write_task(
        tmp.path(),
        "declared",
        "[environment]\ndocker_image = \"img:1\"\n",
    );
    dockerfile(&dir, "environment");
    let task = load(&dir).unwrap();
    assert_eq!(task.environment_setup.image.as_deref(), Some("img:1"));
    assert_eq!(task.environment_setup.build_context, None);
    // A separate verifier: tests/Dockerfile, else the task's own image.
    let dir = write_task(
        tmp.path(),
        "verifier",
        "[verifier.environment]\nnetwork_mode = \"no-network\"\n",
    );
    dockerfile(&dir, "environment");
    let task = load(&dir).unwrap();
    let context = |sub: &str| Some(dir.join(sub).display().to_string());
    assert_eq!(task.environment_setup.build_context, context("environment"));
    let verifier = task.evaluation_environment_setup.clone().unwrap();
    assert_eq!(verifier.build_context, context("environment"));
    dockerfile(&dir, "tests");
    let task = load(&dir).unwrap();
    let verifier = task.evaluation_environment_setup.unwrap();
    assert_eq!(verifier.build_context, context("tests"));
    // Sidecar services run beside the task's container (and the verifier's copy of it).
    std::fs::write(
        dir.join("environment/docker-compose.yaml"),
        "services: {}\n",
    )
    .unwrap();
    std::fs::remove_file(dir.join("tests/Dockerfile")).unwrap();
    let task = load(&dir).unwrap();
    assert!(task.metadata["harbor"].get("unsupported").is_none());
    let compose = task.environment_setup.compose.clone().unwrap();
    assert_eq!(
        compose.file,
        dir.join("environment/docker-compose.yaml")
            .display()
            .to_string()
    );
    assert_eq!(compose.root, dir.display().to_string());
    let verifier = task.evaluation_environment_setup.unwrap();
    assert_eq!(verifier.compose, Some(compose));
}

#[test]
fn separate_verifier_environment_is_independent() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(
        tmp.path(),
        "separate",
        r#"
[environment]
docker_image = "agent:1"
workdir = "/app"
network_mode = "no-network"
cpus = 2
env = { COMMON = "c" }

[verifier]
network_mode = "public"

[verifier.environment]
docker_image = "verifier:1"
memory = "1G"
env = { GRADER = "g" }
"#,
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.evaluation_environment_mode,
        Some(EvaluationEnvironmentMode::Fresh)
    );
    assert_eq!(
        task.evaluation_environment_setup,
        Some(EnvironmentSetup {
            image: Some("verifier:1".into()),
            ..Default::default()
        })
    );
    assert_eq!(
        task.baseline_network_policy,
        Some(NetworkPolicy::no_network())
    );
    assert_eq!(task.run_network_policy, Some(NetworkPolicy::no_network()));
    assert_eq!(
        task.evaluation_baseline_network_policy,
        Some(NetworkPolicy::public())
    );
    assert_eq!(
        task.evaluation_network_policy,
        Some(NetworkPolicy::public())
    );
    assert_eq!(
        task.evaluation_environment_env_variables,
        Some(pairs(&[("GRADER", "g")]))
    );
    assert_eq!(task.env_variables, pairs(&[("COMMON", "c")]));
    assert_eq!(task.resources, None);
    assert_eq!(task.run_resources.unwrap().cpu, Some(2.0));
    assert_eq!(task.evaluation_resources.unwrap().memory_mb, Some(1024));

    // An empty verifier environment is still independent: public network, no bindings.
    let dir = write_task(
        tmp.path(),
        "empty",
        "[environment]\nnetwork_mode = \"no-network\"\n[verifier.environment]\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.evaluation_environment_setup,
        Some(EnvironmentSetup::default())
    );
    assert_eq!(
        task.evaluation_environment_env_variables,
        Some(BTreeMap::new())
    );
    assert_eq!(
        task.evaluation_baseline_network_policy,
        Some(NetworkPolicy::public())
    );

    // `separate` without a verifier table inherits; `shared` keeps the agent env.
    let dir = write_task(
        tmp.path(),
        "sep",
        "[verifier]\nenvironment_mode = \"separate\"\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.evaluation_environment_mode,
        Some(EvaluationEnvironmentMode::Fresh)
    );
    assert_eq!(task.evaluation_environment_setup, None);
    assert_eq!(task.evaluation_environment_env_variables, None);
    let dir = write_task(
        tmp.path(),
        "shared",
        "[verifier]\nenvironment_mode = \"shared\"\n",
    );
    assert_eq!(
        load(&dir).unwrap().evaluation_environment_mode,
        Some(EvaluationEnvironmentMode::Reuse)
    );

    // Phase overrides.
    let dir = write_task(
        tmp.path(),
        "phases",
        "[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"api.example.org\"]\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(task.baseline_network_policy, None);
    assert_eq!(
        task.run_network_policy,
        Some(NetworkPolicy::allowlist(["api.example.org"]))
    );
    assert_eq!(task.evaluation_network_policy, None);
}

#[test]
fn artifacts_keep_the_convention_dir_and_drop_overlaps() {
    let tmp = TempDir::new().unwrap();
    let dir = write_task(tmp.path(), "none", "");
    assert_eq!(
        load(&dir).unwrap().artifacts,
        Some(vec![ArtifactSpec::main_dir()])
    );

    let dir = write_task(
        tmp.path(),
        "overlap",
        "artifacts = [\"/logs/artifacts/result.txt\", \"/app/a\", {source = \"/app/b\", destination = \"app/a\"}]\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.artifacts,
        Some(vec![ArtifactSpec::main_dir(), ArtifactSpec::new("/app/a")])
    );
    assert_eq!(task.load_warnings.len(), 2, "{:?}", task.load_warnings);
    assert!(task.load_warnings[0]
        .contains("artifact `artifacts[0]` (/logs/artifacts/result.txt) is dropped"));

    // An explicit convention entry supplies its own exclusions.
    let dir = write_task(
        tmp.path(),
        "explicit",
        "artifacts = [\"/app/x\", {source = \"/logs/artifacts/\", exclude = [\"*.log\"]}]\n",
    );
    let artifacts = load(&dir).unwrap().artifacts.unwrap();
    assert_eq!(artifacts.len(), 2);
    assert_eq!(artifacts[0], ArtifactSpec::new("/app/x"));
    assert_eq!(artifacts[1].exclude, ["*.log"]);
}

#[test]
fn discovery_order_and_id_collisions() {
    let tmp = TempDir::new().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for name in ["zeta", "alpha", "mid"] {
        write_task(&a, name, "");
    }
    std::fs::create_dir_all(a.join("not-a-task")).unwrap();
    std::fs::write(a.join("README.md"), "x").unwrap();
    write_task(&b, "beta", "");
    let single = write_task(&b, "alpha", "");

    let tasks = load_all(json!({"path": a.display().to_string()})).unwrap();
    assert_eq!(ids(&tasks), ["alpha", "mid", "zeta"]);

    // A single task dir; a list (list order, sorted within a directory).
    let tasks = load_all(json!({"path": [single.join("../beta").display().to_string(), a.join("mid").display().to_string()]})).unwrap();
    assert_eq!(ids(&tasks), ["beta", "mid"]);
    let listed = format!("[\"{}\"]", single.display());
    assert_eq!(ids(&load_all(json!({"path": listed})).unwrap()), ["alpha"]);

    // Same name in two directories.
    let message = load_all(json!({"path": [a.display().to_string(), b.display().to_string()]}))
        .unwrap_err()
        .message;
    let first = std::fs::canonicalize(a.join("alpha")).unwrap();
    assert_eq!(
        message,
        format!(
            "{ID}: duplicate task id \"alpha\": {} and {} (task ids are directory names)",
            first.display(),
            single.display()
        )
    );

    // sample_ids through the shared selection.
    let tasks = load_all(json!({"path": a.display().to_string(), "sample_ids": ["zeta", "alpha"]}))
        .unwrap();
    assert_eq!(ids(&tasks), ["alpha", "zeta"]);

    // Param errors.
    let err = |params: Value| load_all(params).unwrap_err().message;
    assert_eq!(
        err(json!({})),
        format!("{ID}: missing required param \"path\" (task directories) or \"dataset\" (NAME@VERSION of a Harbor registry)")
    );
    assert_eq!(
        err(json!({"path": 3})),
        format!("{ID}: param \"path\" must be a string or a list of strings, found integer")
    );
    assert_eq!(
        err(json!({"path": ["x", 1]})),
        format!("{ID}: param \"path\"[1] must be a string, found integer")
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        err(json!({"path": empty.display().to_string()})),
        format!(
            "{ID}: {}: expected task.toml in it or in its sub-directories, found no Harbor task",
            empty.display()
        )
    );
    assert!(
        err(json!({"path": tmp.path().join("missing").display().to_string()}))
            .contains("cannot open")
    );
    assert_eq!(
        err(json!({"path": a.display().to_string(), "solution_env_for_agent": "yes"})),
        format!("{ID}: param \"solution_env_for_agent\" must be a boolean, found string")
    );
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor")
}

#[test]
fn bundled_examples_load() {
    let tasks = load_all(json!({"path": examples_dir().display().to_string()})).unwrap();
    assert_eq!(ids(&tasks), ["fizzbuzz", "hello-file", "primes"]);
    for task in &tasks {
        assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);
        assert!(!task.question.trim().is_empty());
        assert_eq!(task.environment_setup.workdir.as_deref(), Some("/app"));
        assert_eq!(
            task.baseline_network_policy,
            Some(NetworkPolicy::no_network())
        );
        assert_eq!(task.run_network_policy, Some(NetworkPolicy::no_network()));
        assert_eq!(
            task.evaluation_network_policy,
            Some(NetworkPolicy::no_network())
        );
        assert_eq!(task.resources, None, "the sandbox applies no resources");
        assert_eq!(task.run_timeout_seconds, Some(120.0));
        assert_eq!(task.evaluation_timeout_seconds, Some(60.0));
        assert_eq!(task.metadata["harbor"]["schema_version"], json!("1.4"));
        assert_eq!(task.metadata["harbor"]["has_solution"], json!(true));
        assert!(task.metadata["task"]["name"]
            .as_str()
            .unwrap()
            .starts_with("agentcompass/"));
        assert!(!task.category.is_empty());
        let dir = PathBuf::from(task.metadata["harbor"]["task_dir"].as_str().unwrap());
        assert!(dir.is_absolute() && dir.join("solution/solve.sh").is_file());
    }
    assert_eq!(
        Harbor
            .evaluation_environment_mode(&RunRequest::default())
            .unwrap(),
        EvaluationEnvironmentMode::Reuse
    );
    assert!(tasks
        .iter()
        .all(|t| t.evaluation_environment_mode.is_none()));
}

#[test]
fn reward_parsing() {
    let rewards = reward::from_files(Some(r#"{"reward": 0.5, "coverage": 1}"#), Some("1")).unwrap();
    assert_eq!(rewards.source, REWARD_JSON);
    assert_eq!(rewards.values["coverage"], 1.0);
    assert_eq!(rewards.primary(), 0.5);
    let rewards = reward::from_files(None, Some(" 0.25\n")).unwrap();
    assert_eq!(rewards.source, REWARD_TXT);
    assert_eq!(
        rewards.values,
        BTreeMap::from([("reward".to_string(), 0.25)])
    );
    assert_eq!(reward::parse_txt("1e0").unwrap(), 1.0);
    // Without a `reward` key: the single value, else the mean.
    assert_eq!(
        reward::from_files(Some(r#"{"score": 0.75}"#), None)
            .unwrap()
            .primary(),
        0.75
    );
    assert_eq!(
        reward::from_files(Some(r#"{"a": 1, "b": 0}"#), None)
            .unwrap()
            .primary(),
        0.5
    );
    // The metrics never average keys: several without `reward` have no headline.
    let multi = reward::from_files(Some(r#"{"correctness": 1, "performance": 0}"#), None).unwrap();
    assert_eq!(multi.headline(), None);
    assert!(reward::metrics(&multi).is_empty());

    let code = |json: Option<&str>, txt: Option<&str>| reward::from_files(json, txt).unwrap_err();
    assert_eq!(code(None, None).code, "reward_file_missing");
    assert_eq!(code(None, Some("  \n")).code, "reward_file_empty");
    assert_eq!(code(Some(""), Some("1")).code, "reward_file_empty");
    for bad in ["nan", "NaN", "inf", "-infinity", "one", "1 2"] {
        let e = code(None, Some(bad));
        assert_eq!(e.code, "reward_parse_error", "{bad}");
        assert!(e.message.starts_with(REWARD_TXT), "{}", e.message);
    }
    for bad in [
        "[1]",
        "{}",
        r#"{"reward": "1"}"#,
        r#"{"reward": true}"#,
        r#"{"r": {"x": 1}}"#,
        "{",
    ] {
        let e = code(Some(bad), None);
        assert_eq!(e.code, "reward_parse_error", "{bad}");
        assert!(e.message.starts_with(REWARD_JSON), "{}", e.message);
    }
    assert_eq!(
        code(None, Some("NaN")).message,
        format!("{REWARD_TXT}: expected a single finite number, found \"NaN\"")
    );
}

#[test]
fn metric_contract_has_a_scalar_primary_reward() {
    let contract = Harbor.metric_contract().unwrap();
    let primary = contract.primary().unwrap();
    assert_eq!(
        (primary.id.as_str(), primary.kind),
        ("reward", MetricKind::Scalar)
    );
    assert_eq!(
        contract.get("correct").unwrap().kind,
        MetricKind::BinarySuccess
    );
}

/// What the scripted verifier does when `bash /tests/test.sh` runs.
#[derive(Clone)]
enum Verifier {
    Writes(Vec<(&'static str, &'static str)>),
    Nothing,
    TimesOut,
}

/// A session over an in-memory file map that understands the benchmark's few commands.
struct ScriptedSession {
    files: Mutex<BTreeMap<String, String>>,
    log: Mutex<Vec<String>>,
    verifier: Verifier,
    dirs: SessionDirs,
}

impl ScriptedSession {
    fn new(verifier: Verifier) -> Arc<Self> {
        Arc::new(ScriptedSession {
            files: Mutex::new(BTreeMap::new()),
            log: Mutex::new(Vec::new()),
            verifier,
            dirs: SessionDirs::default(),
        })
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl EnvironmentSession for ScriptedSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: "scripted-1".into(),
            provider: "scripted".into(),
            dirs: self.dirs.clone(),
            ..SessionInfo::default()
        }
    }
    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        let command = match &request.command {
            ExecCommand::Shell(command) => command.clone(),
            ExecCommand::Argv(argv) => format!("argv {argv:?}"),
        };
        self.log.lock().unwrap().push(format!(
            "exec {command} cwd={:?} timeout={:?}",
            request.cwd, request.timeout_seconds
        ));
        let mut files = self.files.lock().unwrap();
        if command.contains("rm -f") {
            files.remove(REWARD_TXT);
            files.remove(REWARD_JSON);
        }
        if command.starts_with("bash /tests/test.sh") {
            files.insert(TEST_STDOUT.into(), "verifier ran\n".into());
            match &self.verifier {
                Verifier::Writes(writes) => {
                    for (path, content) in writes {
                        files.insert(path.to_string(), content.to_string());
                    }
                }
                Verifier::Nothing => {}
                Verifier::TimesOut => return Ok(ExecResult::timeout("", "")),
            }
            return Ok(ExecResult::new(3, "", ""));
        }
        Ok(ExecResult::new(0, "", ""))
    }
    async fn upload(&self, _: &Path, _: &str) -> Result<()> {
        Err(Error::unsupported("upload"))
    }
    async fn download(&self, _: &str, _: &Path) -> Result<()> {
        Err(Error::unsupported("download"))
    }
    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        assert!(
            dst != "/tests" || src.ends_with("tests"),
            "{}",
            src.display()
        );
        let mut log = self.log.lock().unwrap();
        if src.iter().any(|c| c == "steps") {
            let relative = src
                .iter()
                .skip_while(|c| *c != "steps")
                .collect::<PathBuf>();
            log.push(format!("upload_dir {} {dst}", relative.display()));
        } else {
            log.push(format!("upload_dir {dst}"));
        }
        Ok(())
    }
    async fn download_dir(&self, _: &str, _: &Path) -> Result<()> {
        Err(Error::unsupported("download_dir"))
    }
    async fn read_text(&self, path: &str) -> Result<String> {
        self.files
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .ok_or_else(|| Error::environment(format!("no {path}")))
    }
    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_string(), content.to_string());
        Ok(())
    }
    async fn is_file(&self, path: &str) -> Result<bool> {
        Ok(self.files.lock().unwrap().contains_key(path))
    }
    async fn is_dir(&self, _: &str) -> Result<bool> {
        Ok(true)
    }
    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

fn example_task(name: &str, harness: &str) -> (TaskSpec, RunRequest) {
    let req = request(
        json!({"path": examples_dir().join(name).display().to_string()}),
        harness,
    );
    let tasks = block_on(Harbor.load_tasks(&Ctx::detached(), &req)).unwrap();
    (tasks.into_iter().next().unwrap(), req)
}

fn execution_plan(task: &TaskSpec, req: &RunRequest) -> ExecutionPlan {
    let mut environment = EnvironmentSpec::new("sandbox");
    environment.setup = task.environment_setup.clone();
    ExecutionPlan {
        task_id: task.task_id.clone(),
        benchmark_plan: Harbor.build_plan(task, req, &environment).unwrap(),
        environment,
        evaluation_environment_mode: EvaluationEnvironmentMode::Reuse,
        evaluation_timeout_seconds: task.evaluation_timeout_seconds,
        ..ExecutionPlan::default()
    }
}

fn prepare(task: &TaskSpec, req: &RunRequest, session: &Arc<ScriptedSession>) -> PreparedTask {
    let env: SessionRef = session.clone();
    let plan = execution_plan(task, req);
    block_on(Harbor.prepare_task(&Ctx::detached(), task, &env, req, &plan.benchmark_plan)).unwrap()
}

#[test]
fn an_environment_without_the_container_layout_is_refused_before_any_command() {
    let session = Arc::new(ScriptedSession {
        dirs: SessionDirs::under("/tmp/agentcompass-t-1-x", "app"),
        ..Arc::into_inner(ScriptedSession::new(Verifier::Nothing)).unwrap()
    });
    let (task, req) = example_task("hello-file", "oracle");
    let env: SessionRef = session.clone();
    let plan = execution_plan(&task, &req);
    let err =
        block_on(Harbor.prepare_task(&Ctx::detached(), &task, &env, &req, &plan.benchmark_plan))
            .unwrap_err();
    assert_eq!(err.kind, agentcompass_plugin_api::ErrorKind::Unsupported);
    assert!(
        err.message.contains("run them in `sandbox` or `docker`"),
        "{err}"
    );
    assert!(session.log().is_empty(), "nothing ran: {:?}", session.log());
}

fn evaluate(name: &str, session: &Arc<ScriptedSession>, stale: Option<&str>) -> RunResult {
    let (task, req) = example_task(name, "agent");
    if let Some(stale) = stale {
        session
            .files
            .lock()
            .unwrap()
            .insert(REWARD_TXT.into(), stale.into());
    }
    let plan = execution_plan(&task, &req);
    let prepared = prepare(&task, &req, session);
    let env: SessionRef = session.clone();
    block_on(Harbor.evaluate_attempt(
        &Ctx::detached(),
        EvaluationInput {
            task: &task,
            prepared: &prepared,
            result: RunResult::new(task.task_id.clone()),
            req: &req,
            plan: &plan,
            env: Some(&env),
        },
    ))
    .unwrap()
}

#[test]
fn prepare_offers_the_solution_only_as_the_reference_solution() {
    let session = ScriptedSession::new(Verifier::Nothing);
    let (task, req) = example_task("hello-file", "agent");
    let mut prepared = prepare(&task, &req, &session);
    // Offered through the typed contract (the host removes it for a non-reference harness),
    // and nowhere else.
    let offered = prepared.reference_solution.take().unwrap();
    assert!(
        offered.dir.ends_with("hello-file/solution"),
        "{}",
        offered.dir
    );
    assert_eq!(prepared.input.prompt, task.question);
    assert_eq!(prepared.input.workspace.as_deref(), Some("/app"));
    assert_eq!(prepared.ground_truth, None);
    assert_eq!(prepared.metadata["harbor"], json!({"workdir": "/app"}));
    let text = serde_json::to_string(&prepared).unwrap();
    assert!(
        !text.contains("solution") && !text.contains("tests"),
        "{text}"
    );
    assert_eq!(
        session.log(),
        ["exec mkdir -p /logs/verifier /logs/agent /logs/artifacts cwd=None timeout=Some(120.0)"]
    );

    let (task, req) = example_task("hello-file", "oracle");
    let prepared = prepare(&task, &req, &session);
    let solution = &prepared.reference_solution.as_ref().unwrap().dir;
    assert_eq!(
        prepared.reference_solution.as_ref().unwrap().script,
        "solve.sh"
    );
    assert!(Path::new(solution).join("solve.sh").is_file(), "{solution}");
    assert!(Path::new(solution).is_absolute());
    assert_eq!(prepared.metadata["harbor"]["workdir"], json!("/app"));
}

#[test]
fn evaluate_removes_stale_rewards_then_reads_reward_txt() {
    let session = ScriptedSession::new(Verifier::Writes(vec![(REWARD_TXT, "1\n")]));
    let result = evaluate("hello-file", &session, Some("1"));
    assert_eq!(result.status, TaskStatus::Completed);
    assert!(result.issues.is_empty(), "{:?}", result.issues);
    assert_eq!(result.metrics["reward"], MetricValue::Float(1.0));
    assert_eq!(result.metrics["correct"], MetricValue::Bool(true));
    let harbor = &result.extra["harbor"];
    assert_eq!(harbor["reward_file"], json!(REWARD_TXT));
    assert_eq!(
        harbor["test_exit_code"],
        json!(3),
        "the exit code is not the reward"
    );
    assert_eq!(harbor["test_stdout_tail"], json!("verifier ran\n"));

    let log = session.log();
    let rm = log
        .iter()
        .position(|l| l.contains("rm -f /logs/verifier/reward.txt"))
        .unwrap();
    let upload = log.iter().position(|l| l == "upload_dir /tests").unwrap();
    let run = log
        .iter()
        .position(|l| l.contains("bash /tests/test.sh"))
        .unwrap();
    assert!(rm < upload && upload < run, "{log:?}");
    assert!(log[run].contains("cwd=Some(\"/app\")"), "{}", log[run]);
    let timeout: f64 = log[run]
        .rsplit("timeout=Some(")
        .next()
        .unwrap()
        .trim_end_matches(')')
        .parse()
        .unwrap();
    assert!(timeout > 50.0 && timeout <= 57.0, "{timeout}");

    // A stale reward alone is not a reward.
    let session = ScriptedSession::new(Verifier::Nothing);
    let result = evaluate("hello-file", &session, Some("1"));
    assert_eq!(result.status, TaskStatus::EvalError);
    assert!(result.metrics.is_empty());
    assert_eq!(result.issues[0].code, "reward_file_missing");
    assert_eq!(result.issues[0].phase, IssuePhase::Evaluate);
}

#[test]
fn evaluate_prefers_reward_json_and_reports_bad_rewards() {
    let session = ScriptedSession::new(Verifier::Writes(vec![
        (REWARD_JSON, r#"{"reward": 0, "coverage": 0.4}"#),
        (REWARD_TXT, "1"),
    ]));
    let result = evaluate("primes", &session, None);
    assert_eq!(result.metrics["reward"], MetricValue::Float(0.0));
    assert!(
        !result.metrics.contains_key("coverage"),
        "undeclared metrics stay in meta"
    );
    assert_eq!(result.metrics["correct"], MetricValue::Bool(false));
    assert_eq!(
        result.extra["harbor"]["rewards"],
        json!({"reward": 0.0, "coverage": 0.4})
    );

    for (writes, code) in [
        (vec![(REWARD_TXT, "")], "reward_file_empty"),
        (vec![(REWARD_TXT, "nan")], "reward_parse_error"),
        (
            vec![(REWARD_JSON, r#"{"reward": "high"}"#)],
            "reward_parse_error",
        ),
    ] {
        let session = ScriptedSession::new(Verifier::Writes(writes));
        let result = evaluate("primes", &session, None);
        assert_eq!(result.status, TaskStatus::EvalError);
        assert_eq!(result.issues.len(), 1);
        assert_eq!(result.issues[0].code, code);
        assert!(result.issues[0].message.contains("task primes"));
        assert!(result.metrics.is_empty());
    }

    let session = ScriptedSession::new(Verifier::TimesOut);
    let result = evaluate("primes", &session, None);
    assert_eq!(result.status, TaskStatus::EvalError);
    assert_eq!(result.issues[0].code, "verifier_timeout");
    assert_eq!(result.extra["harbor"]["test_timed_out"], json!(true));

    // No environment (evaluation mode `none`): an eval error, not a crash.
    let (task, req) = example_task("primes", "agent");
    let mut plan = execution_plan(&task, &req);
    plan.evaluation_environment_mode = EvaluationEnvironmentMode::NoEnvironment;
    let result = block_on(Harbor.evaluate_attempt(
        &Ctx::detached(),
        EvaluationInput {
            task: &task,
            prepared: &PreparedTask::default(),
            result: RunResult::new("primes"),
            req: &req,
            plan: &plan,
            env: None,
        },
    ))
    .unwrap();
    assert_eq!(result.issues[0].code, "no_environment");
}

#[test]
fn network_mode_values_round_trip() {
    // The three Harbor network modes map one to one (Harbor has no `denylist`).
    let tmp = TempDir::new().unwrap();
    for mode in [
        NetworkMode::Public,
        NetworkMode::NoNetwork,
        NetworkMode::Allowlist,
    ] {
        let hosts = if mode == NetworkMode::Allowlist {
            "allowed_hosts = [\"10.0.0.0/8\"]\n"
        } else {
            ""
        };
        let dir = write_task(
            tmp.path(),
            mode.as_str(),
            &format!("[environment]\nnetwork_mode = \"{mode}\"\n{hosts}"),
        );
        assert_eq!(
            load(&dir)
                .unwrap()
                .baseline_network_policy
                .unwrap()
                .network_mode,
            mode
        );
    }
    let dir = write_task(
        tmp.path(),
        "url",
        "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"https://x.org\"]\n",
    );
    assert!(load_err(&dir).contains(
        "field `environment.allowed_hosts[0]`: expected a hostname, an IP address or an IP CIDR range (not a URL, port or path), found \"https://x.org\""
    ));
    // Harbor refuses a CIDR range with host bits set.
    let dir = write_task(
        tmp.path(),
        "cidr",
        "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"10.0.0.1/8\"]\n",
    );
    assert!(load_err(&dir).contains("field `environment.allowed_hosts[0]`: expected"));
    // An allowlist without hosts allows nothing; hosts no DNS name can match are dropped.
    let dir = write_task(
        tmp.path(),
        "empty",
        "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"999.1.1.1\"]\n",
    );
    let task = load(&dir).unwrap();
    assert_eq!(
        task.baseline_network_policy,
        Some(NetworkPolicy::no_network())
    );
    assert!(task.load_warnings[0]
        .contains("entry \"999.1.1.1\" of `environment.allowed_hosts` is dropped"));
    // Modes are spelled exactly.
    let dir = write_task(tmp.path(), "case", "[agent]\nnetwork_mode = \"Public\"\n");
    assert!(load_err(&dir).contains(
        "field `agent.network_mode`: expected one of \"public\", \"no-network\", \"allowlist\", found string \"Public\""
    ));
}

/// The working directory `bash /tests/test.sh` ran in (from the session's log).
fn test_sh_cwd(session: &ScriptedSession) -> String {
    session
        .log()
        .into_iter()
        .find(|line| line.contains("bash /tests/test.sh"))
        .and_then(|line| line.split(" cwd=").nth(1).map(str::to_string))
        .and_then(|rest| rest.split(" timeout=").next().map(str::to_string))
        .unwrap()
}

#[test]
fn a_fresh_verifier_does_not_inherit_the_agent_workdir() {
    // Issue 13, bug 2: `[environment] workdir` with an empty `[verifier.environment]`.
    let tmp = TempDir::new().unwrap();
    let dir = write_task(
        tmp.path(),
        "fresh-workdir",
        "[environment]\nworkdir = \"/srv/w\"\n[verifier.environment]\n",
    );
    let task = load(&dir).unwrap();
    let req = request(json!({"path": dir.display().to_string()}), "agent");
    let run = |mode: EvaluationEnvironmentMode| {
        let mut plan = execution_plan(&task, &req);
        plan.evaluation_environment_mode = mode;
        if mode == EvaluationEnvironmentMode::Fresh {
            // As the planner resolves it: the explicit (empty) verifier setup, not inherited.
            let mut fresh = EnvironmentSpec::new("sandbox");
            fresh.setup = task.evaluation_environment_setup.clone().unwrap();
            plan.evaluation_environment = Some(fresh);
        }
        let session = ScriptedSession::new(Verifier::Writes(vec![(REWARD_TXT, "1")]));
        let env: SessionRef = session.clone();
        let prepared = block_on(Harbor.prepare_task(
            &Ctx::detached(),
            &task,
            &env,
            &req,
            &plan.benchmark_plan,
        ))
        .unwrap();
        let result = block_on(Harbor.evaluate_attempt(
            &Ctx::detached(),
            EvaluationInput {
                task: &task,
                prepared: &prepared,
                result: RunResult::new(task.task_id.clone()),
                req: &req,
                plan: &plan,
                env: Some(&env),
            },
        ))
        .unwrap();
        assert!(result.issues.is_empty(), "{:?}", result.issues);
        test_sh_cwd(&session)
    };
    assert_eq!(
        task.evaluation_environment_mode,
        Some(EvaluationEnvironmentMode::Fresh)
    );
    assert_eq!(run(EvaluationEnvironmentMode::Fresh), "None");
    // The reused task environment keeps the agent's workdir.
    assert_eq!(run(EvaluationEnvironmentMode::Reuse), "Some(\"/srv/w\")");
}

#[test]
fn steps_are_prepared_and_verified_with_their_own_files() {
    let tmp = TempDir::new().unwrap();
    let toml = "[environment]\nworkdir = \"/app\"\n[[steps]]\nname = \"one\"\n\
                verifier = { env = { LEVEL = \"1\" } }\n[[steps]]\nname = \"two\"\n";
    let dir = write_task(tmp.path(), "two-steps", toml);
    write_step(
        &dir,
        "one",
        &[
            ("tests/test.sh", "exit 0\n"),
            ("workdir/setup.sh", "touch ready\n"),
            ("workdir/data.txt", "x\n"),
            ("solution/solve.sh", "true\n"),
        ],
    );
    write_step(&dir, "two", &[]);
    let req = request(json!({"path": dir.display().to_string()}), "oracle");
    let task = block_on(Harbor.load_tasks(&Ctx::detached(), &req))
        .unwrap()
        .remove(0);
    let plan = execution_plan(&task, &req);
    let session = ScriptedSession::new(Verifier::Writes(vec![(REWARD_TXT, "1\n")]));
    let env: SessionRef = session.clone();
    let ctx = Ctx::detached();
    let prepare = |step: &TaskStep| {
        block_on(Harbor.prepare_step(&ctx, &task, step, &env, &req, &plan.benchmark_plan)).unwrap()
    };
    let evaluate = |step: &TaskStep, prepared: &PreparedTask| {
        block_on(Harbor.evaluate_step(
            &ctx,
            step,
            EvaluationInput {
                task: &task,
                prepared,
                result: RunResult::new(task.task_id.clone()),
                req: &req,
                plan: &plan,
                env: Some(&env),
            },
        ))
        .unwrap()
    };

    let one = prepare(&task.steps[0]);
    assert_eq!(one.input.prompt, "Step one.\n");
    let solution = &one.reference_solution.as_ref().unwrap().dir;
    assert!(
        solution.ends_with("two-steps/steps/one/solution"),
        "{solution}"
    );
    let log = session.log();
    assert_eq!(
        log,
        [
            "exec mkdir -p /logs/verifier /logs/agent /logs/artifacts cwd=None timeout=Some(120.0)",
            "upload_dir steps/one/workdir /app",
            "exec argv [\"bash\", \"/app/setup.sh\"] cwd=Some(\"/app\") timeout=None",
        ]
    );
    let result = evaluate(&task.steps[0], &one);
    assert_eq!(result.metrics["reward"], MetricValue::Float(1.0));
    let log = session.log();
    let uploads: Vec<&String> = log.iter().filter(|l| l.starts_with("upload_dir")).collect();
    assert_eq!(
        uploads[1..],
        ["upload_dir /tests", "upload_dir steps/one/tests /tests"]
    );

    // The second step starts without the first one's verifier files; it has no solution or
    // tests of its own, so the task's serve.
    let before = session.log().len();
    let two = prepare(&task.steps[1]);
    assert_eq!(
        session.log()[before],
        "exec mkdir -p /logs/verifier /logs/agent /logs/artifacts /tests && find /logs/verifier \
         /logs/agent /tests -mindepth 1 -delete cwd=None timeout=Some(120.0)"
    );
    let solution = &two.reference_solution.as_ref().unwrap().dir;
    assert!(solution.ends_with("two-steps/solution"), "{solution}");
    let before = session.log().len();
    evaluate(&task.steps[1], &two);
    let uploads: Vec<String> = session.log()[before..]
        .iter()
        .filter(|l| l.starts_with("upload_dir"))
        .cloned()
        .collect();
    assert_eq!(uploads, ["upload_dir /tests"]);
}
