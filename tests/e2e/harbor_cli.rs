//! `agentcompass-host harbor run`: Harbor 0.25's command lines (from Harbor's docs and
//! `harbor run --help`) as one native request each. Every row runs the real binary with
//! `--dry-run` over a local dataset of six tasks (and a `registry.json` dataset served from a
//! git repository made here): it either resolves to the request Harbor's semantics give —
//! fields asserted by JSON pointer into the printed request, the task list after
//! `-i/-x/-l` included — or is refused with exit 2 in one line naming the flag and what to
//! use instead. Effective timeouts are checked on the plan of the printed native command.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{Outcome, Packs, Workspace};
use serde_json::Value;

use crate::datasets::Dataset;

/// The six tasks of the local dataset: the bundled examples and a copy of each.
const TASKS: [(&str, &str); 6] = [
    ("fizzbuzz", "fizzbuzz"),
    ("fizzbuzz-hard", "fizzbuzz"),
    ("hello-file", "hello-file"),
    ("hello-world", "hello-file"),
    ("prime-sieve", "primes"),
    ("primes", "primes"),
];

/// Fake keys of the providers the rows name (never sent: a dry run calls no endpoint).
const KEYS: [(&str, &str); 5] = [
    ("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key"),
    ("OPENAI_API_KEY", "sk-test-not-a-key"),
    ("OPENROUTER_API_KEY", "or-test-not-a-key"),
    ("DASHSCOPE_API_KEY", "ds-test-not-a-key"),
    ("MY_KEY", "my-test-not-a-key"),
];

/// The rows: a `harbor run` line (placeholders `{tasks}`, `{registry}`, `{dir}`) and what it
/// must give: a JSON object of pointer → value into the dry run's output, or `refused:` and
/// the `|`-separated parts of the one-line refusal.
pub(crate) const ROWS: &[(&str, &str)] = &[
    // Task sources and selection (Harbor's `-p`, `-d`, `-i`, `-x`, `-l`; fnmatch globs,
    // include then exclude then the first N, in the dataset's sorted order).
    ("-p {tasks} -a oracle", r#"{"/request/harness/id": "oracle", "/request/model/id": "reference", "/request/environment/id": "sandbox", "/selected_tasks": 6}"#),
    ("-p {tasks}", r#"{"/request/harness/id": "oracle", "/request/benchmark/params/path": "{tasks}"}"#),
    ("-p {tasks}/hello-file -a oracle", r#"{"/task_ids": ["hello-file"]}"#),
    ("-p {tasks} -i hello-*", r#"{"/task_ids": ["hello-file", "hello-world"], "/request/execution/include_tasks": ["hello-*"]}"#),
    ("-p {tasks} -i hello-* -i prime*", r#"{"/task_ids": ["hello-file", "hello-world", "prime-sieve", "primes"]}"#),
    ("-p {tasks} -x fizz*", r#"{"/task_ids": ["hello-file", "hello-world", "prime-sieve", "primes"], "/request/execution/exclude_tasks": ["fizz*"]}"#),
    ("-p {tasks} -i *e* -x hello-* -l 1", r#"{"/task_ids": ["prime-sieve"], "/selected_tasks": 1}"#),
    ("-p {tasks} -l 3", r#"{"/task_ids": ["fizzbuzz", "fizzbuzz-hard", "hello-file"], "/request/execution/n_tasks": 3}"#),
    ("-p {tasks} --n-tasks 2", r#"{"/task_ids": ["fizzbuzz", "fizzbuzz-hard"]}"#),
    ("-p {tasks} --include-task-name primes --exclude-task-name primes", r#"{"/selected_tasks": 0}"#),
    ("-p {tasks} -i ?rime?", r#"{"/task_ids": ["primes"]}"#),
    ("-p {tasks} -i [fh]*-* -x *-world", r#"{"/task_ids": ["fizzbuzz-hard", "hello-file"]}"#),
    ("-p {tasks}/hello-file -i zzz", r#"{"/task_ids": ["hello-file"]}"#),
    ("-d demo@1.0 --registry-path {registry} -e sandbox", r#"{"/request/benchmark/params/dataset": "demo@1.0", "/selected_tasks": 3}"#),
    ("-d demo@1.0 --registry-path {registry} -e sandbox -i hello-* -a oracle", r#"{"/task_ids": ["hello-file"]}"#),
    ("-d demo --registry-path {registry} -e sandbox -x hello-* -l 1", r#"{"/task_ids": ["fizzbuzz"]}"#),
    // Attempts, concurrency, retries.
    ("-p {tasks} -k 3", r#"{"/request/execution/attempts/k": 3}"#),
    ("-p {tasks} --n-attempts 2", r#"{"/request/execution/attempts/k": 2}"#),
    ("-p {tasks} -n 8", r#"{"/request/execution/task_concurrency": 8}"#),
    ("-p {tasks} --n-concurrent 2 -k 4", r#"{"/request/execution/task_concurrency": 2, "/request/execution/attempts/k": 4}"#),
    ("-p {tasks} -r 2", r#"{"/request/execution/max_retries": 2}"#),
    ("-p {tasks} --max-retries 1 -y", r#"{"/request/execution/max_retries": 1}"#),
    // Timeouts: Harbor's common multiplier scales all four phases; a phase's replaces it.
    ("-p {tasks} --timeout-multiplier 2.5", r#"{"/request/execution/timeout_multiplier": 2.5, "/request/execution/setup_timeout_multiplier": 2.5, "/request/execution/build_timeout_multiplier": 2.5}"#),
    ("-p {tasks} --agent-timeout-multiplier 3", r#"{"/request/execution/run_timeout_multiplier": 3.0, "/request/execution/timeout_multiplier": 1.0}"#),
    ("-p {tasks} --verifier-timeout-multiplier 0.5", r#"{"/request/execution/evaluation_timeout_multiplier": 0.5}"#),
    ("-p {tasks} --agent-setup-timeout-multiplier 2 --environment-build-timeout-multiplier 4", r#"{"/request/execution/setup_timeout_multiplier": 2.0, "/request/execution/build_timeout_multiplier": 4.0}"#),
    ("-p {tasks} --timeout-multiplier 2 --agent-timeout-multiplier 4", r#"{"/request/execution/timeout_multiplier": 2.0, "/request/execution/run_timeout_multiplier": 4.0}"#),
    // Resources.
    ("-p {tasks} --override-cpus 2 --override-memory-mb 2048", r#"{"/request/environment/resources/cpu": 2.0, "/request/environment/resources/memory_mb": 2048}"#),
    ("-p {tasks} --cpus ignore --memory ignore", r#"{"/request/environment/resources/cpu_mode": "ignore", "/request/environment/resources/memory_mode": "ignore"}"#),
    ("-p {tasks} --override-storage-mb 4096 --override-gpus 0", r#"{"/request/environment/resources/storage_mb": 4096, "/request/environment/resources/gpu": 0}"#),
    // Agents and their models.
    ("-p {tasks} -a terminus-2 -m openai/gpt-4.1", r#"{"/request/harness/id": "terminus", "/request/model/id": "gpt-4.1", "/request/model/base_url": "https://api.openai.com/v1", "/request/model/api_key": "${OPENAI_API_KEY}", "/request/model/api_protocol": "openai-chat"}"#),
    ("-p {tasks} -a terminus-2 -m openai/gpt-4.1 --ak max_turns=5", r#"{"/request/harness/params/max_turns": 5}"#),
    ("-p {tasks} -a claude-code -m anthropic/claude-sonnet-4-5 -n 8 -k 3", r#"{"/request/harness/id": "claude_code", "/request/model/id": "claude-sonnet-4-5", "/request/model/api_protocol": "anthropic", "/request/model/api_key": "${ANTHROPIC_API_KEY}"}"#),
    ("-p {tasks} -a codex -m openai/gpt-5", r#"{"/request/harness/id": "codex", "/request/model/api_protocol": "openai-responses"}"#),
    ("-p {tasks} -a mini-swe-agent -m openrouter/anthropic/claude-opus-4", r#"{"/request/harness/id": "mini_swe_agent", "/request/model/id": "anthropic/claude-opus-4", "/request/model/base_url": "https://openrouter.ai/api/v1"}"#),
    ("-p {tasks} -a qwen-coder -m dashscope/qwen3-coder-plus", r#"{"/request/harness/id": "qwen_code", "/request/model/api_key": "${DASHSCOPE_API_KEY}"}"#),
    ("-p {tasks} -a terminus-2 -m my-model --base-url http://127.0.0.1:9/v1 --api-key-name MY_KEY", r#"{"/request/model/id": "my-model", "/request/model/base_url": "http://127.0.0.1:9/v1", "/request/model/api_key": "${MY_KEY}"}"#),
    ("-p {tasks} -a terminus-2 -m openai/gpt-4.1 --api-format openai_responses", r#"{"/request/model/api_protocol": "openai-responses"}"#),
    ("-p {tasks} -a claude-code -m anthropic/claude-sonnet-4-5 --effort high", r#"{"/request/harness/params/extra_args": ["--effort", "high"]}"#),
    ("-p {tasks} -a codex -m openai/gpt-5 --effort low", r#"{"/request/harness/params/extra_args": ["-c", "model_reasoning_effort=low"]}"#),
    ("-p {tasks} -a terminus-2 -m openai/gpt-4.1 --ae FOO=bar", r#"{"/request/harness/env/FOO": "********"}"#),
    ("-p {tasks} -a terminus cli_agent", "refused:unexpected argument 'cli_agent'"),
    // Where results go, what is kept, how it is shown.
    ("-p {tasks} -o {dir}/out --job-name my-job", r#"{"/runtime/results_dir": "{dir}/out", "/request/output/run_id": "my-job"}"#),
    ("-p {tasks} --no-delete", r#"{"/request/execution/keep_environment": true}"#),
    ("-p {tasks} -q --debug", r#"{"/runtime/progress": "none", "/runtime/log_level": "DEBUG"}"#),
    ("-p {tasks} -e host_process", "refused:environment `host_process` cannot enforce baseline_network_policy mode `no-network`|--env sandbox"),
    ("-p {tasks} --ek extra=1 -e sandbox", "refused:--env-params|extra"),
    // Job configs, and the command line over them.
    ("-c {dir}/job.yaml", r#"{"/request/harness/id": "oracle", "/request/execution/attempts/k": 2, "/task_ids": ["hello-file", "hello-world"], "/request/output/run_id": "from-config"}"#),
    ("-c {dir}/job.yaml -k 5 -i prime*", r#"{"/request/execution/attempts/k": 5, "/task_ids": ["hello-file", "hello-world", "prime-sieve", "primes"]}"#),
    ("-c {dir}/harbor-job.yaml -e sandbox", r#"{"/request/harness/id": "terminus", "/request/harness/params/max_turns": 7, "/request/model/id": "gpt-4.1", "/request/execution/attempts/k": 2, "/request/execution/task_concurrency": 3, "/request/execution/timeout_multiplier": 1.5, "/request/environment/resources/cpu": 1.0, "/request/execution/keep_environment": true, "/task_ids": ["hello-file", "hello-world"]}"#),
    ("-c {dir}/two-agents.yaml", "refused:-c|agents: expected one agent, found 2|launch"),
    // Harbor's flags with no equivalent here: refused by name, with what to use instead.
    ("-p {tasks} --upload", "refused:--upload has no equivalent here|export harbor RUN_DIR"),
    ("-p {tasks} -a gemini-cli -m gemini/gemini-2.5-pro", "refused:-a gemini-cli: no harness here runs this agent|claude-code"),
    ("-p {tasks} -a oracle --env daytona", "refused:-e daytona: no such environment here|docker, podman, sandbox, host_process"),
    ("-t harbor/hello-world -a oracle", "refused:-t has no equivalent here|-p with the task's directory"),
    ("-p {tasks} --export-traces", "refused:--export-traces has no equivalent here|export traces RUN_DIR"),
    ("-p {tasks} --retry-include AgentTimeoutError", "refused:--retry-include has no equivalent here|--retry-pattern-list"),
    ("-p {tasks} -a terminus-2 -m openai/a -m openai/b", "refused:-m: expected one model, found 2|launch"),
    ("-i hello-*", "refused:expected the tasks: -p PATH|-d NAME@VERSION"),
    ("-p {tasks} -i zzz*", "refused:no task of benchmark harbor matches zzz*|fizzbuzz, fizzbuzz-hard, hello-file"),
    ("-p {tasks} -a terminus-2", "refused:-m: agent terminus calls a model|expected -m PROVIDER/MODEL"),
    ("-p {tasks} --mounts []", "refused:--mounts has no equivalent here"),
    ("-p {tasks} --diff jobs/old", "refused:--diff has no equivalent here|compare"),
    ("-p {tasks} --disable-verification", "refused:--disable-verification has no equivalent here"),
    ("-p {tasks} -a my.module:MyAgent", "refused:-a my.module:MyAgent: Python agent classes|plugin new"),
    ("-p {tasks} --cpus sometimes", "refused:--cpus sometimes: expected one of auto, limit"),
    ("-p {tasks} -a terminus-2 -m gpt-4.1", "refused:-m gpt-4.1: expected a known provider prefix|--base-url"),
    ("-p {tasks} --extra-instruction be-brief", "refused:--extra-instruction has no equivalent here|--extra-instruction-path FILE"),
    ("-p {tasks} --force-build", "refused:--force-build has no equivalent here"),
    ("-p {tasks} --n-concurrent-agents 2", "refused:--n-concurrent-agents has no equivalent here|-n"),
    ("-p {tasks} --allow-agent-host example.com", "refused:--allow-agent-host has no equivalent here|network policy"),
    ("-p {tasks} --install-only", "refused:--install-only has no equivalent here|agents install"),
    ("-p {tasks} -a terminus-2 -m openai/gpt-4.1 --effort high", "refused:--effort: agent terminus takes no reasoning effort"),
    ("-p {tasks} -d demo@1.0", "refused:-p and -d: expected one task source, found both"),
    ("-p {tasks} -l 0", "refused:-l: expected at least 1, found 0"),
];

/// The dataset, registry and job configs the rows name.
pub(crate) struct Table {
    pub(crate) ws: Workspace,
    packs: Packs,
    dataset: Dataset,
    tasks: PathBuf,
}

impl Table {
    /// The table with an `environment/Dockerfile` in every task (Harbor requires one).
    pub(crate) fn with_environments() -> Self {
        let table = Self::new();
        for (name, _) in TASKS {
            let environment = table.tasks.join(name).join("environment");
            fs::create_dir_all(&environment).unwrap();
            fs::write(
                environment.join("Dockerfile"),
                "FROM debian:bookworm\nWORKDIR /app\n",
            )
            .unwrap();
        }
        table
    }

    /// The dry run of `harbor run LINE`: its JSON, or why it failed.
    pub(crate) fn dry_run(&self, line: &str) -> Result<Value, String> {
        let out = self.run(&["run"], line, &["--dry-run"]);
        if out.code != 0 {
            return Err(format!("{out:?}"));
        }
        let (_, json) = out.stdout.split_once('\n').unwrap_or_default();
        serde_json::from_str(json).map_err(|e| format!("{e}: {out:?}"))
    }

    fn new() -> Self {
        let ws = Workspace::new();
        let tasks = ws.root().join("tasks");
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/harbor");
        for (name, source) in TASKS {
            agentcompass_e2e::copy_tree(&examples.join(source), &tasks.join(name));
        }
        let root = ws.root().display().to_string();
        ws.write(
            "job.yaml",
            &format!(
                "job_name: from-config\nn_attempts: 2\nenvironment:\n  type: sandbox\nagents:\n  \
                 - name: oracle\ndatasets:\n  - path: {root}/tasks\n    task_names: [hello-*]\n"
            ),
        );
        ws.write(
            "harbor-job.yaml",
            &format!(
                "job_name: nightly\nn_attempts: 2\nn_concurrent_trials: 3\ntimeout_multiplier: \
                 1.5\nenvironment:\n  override_cpus: 1\n  delete: false\nagents:\n  - name: \
                 terminus-2\n    model_name: openai/gpt-4.1\n    kwargs:\n      max_turns: 7\n\
                 datasets:\n  - path: {root}/tasks\n    task_names: [hello-*, prime*]\n    \
                 exclude_task_names: [primes]\n    n_tasks: 2\n"
            ),
        );
        ws.write(
            "two-agents.yaml",
            "agents:\n  - name: oracle\n  - name: terminus-2\n",
        );
        Table {
            ws,
            packs: Packs::harbor(),
            dataset: Dataset::new(),
            tasks,
        }
    }

    /// `line` with its placeholders filled.
    pub(crate) fn fill(&self, text: &str) -> String {
        text.replace("{tasks}", &self.tasks.display().to_string())
            .replace("{registry}", &self.dataset.registry.display().to_string())
            .replace("{dir}", &self.ws.root().display().to_string())
    }

    /// `agentcompass-host harbor run LINE` (plus `extra`), with the fake keys and the
    /// dataset's data directory.
    fn run(&self, subcommand: &[&str], line: &str, extra: &[&str]) -> Outcome {
        let filled = self.fill(line);
        let words: Vec<String> = shlex::split(&filled).expect("a row splits as shell words");
        let mut args = vec!["--plugin-dir", self.packs.to_str().unwrap(), "harbor"];
        args.extend_from_slice(subcommand);
        args.extend(words.iter().map(String::as_str));
        args.extend_from_slice(extra);
        let env: Vec<(&str, &str)> = KEYS.to_vec();
        let mut command = self.ws.command();
        command.args(&args);
        for (key, value) in env {
            command.env(key, value);
        }
        Outcome::of(command.output().expect("run agentcompass-host"))
    }
}

/// Checks one row; the failure, if any.
fn check(table: &Table, line: &str, expected: &str) -> Result<(), String> {
    let out = table.run(&["run"], line, &["--dry-run"]);
    let shown = || format!("`harbor run {line}`: {out:?}");
    if let Some(parts) = expected.strip_prefix("refused:") {
        // One `error:` line (a `note:` on what the translation chose may precede it).
        let errors: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| !l.starts_with("note: "))
            .collect();
        let stderr = errors.first().copied().unwrap_or_default();
        if out.code != 2 || errors.len() != 1 {
            return Err(format!("expected one line and exit 2 from {}", shown()));
        }
        if let Some(part) = parts.split('|').find(|p| !stderr.contains(&table.fill(p))) {
            return Err(format!("the refusal lacks `{part}`: {}", shown()));
        }
        return Ok(());
    }
    if out.code != 0 {
        return Err(format!("expected exit 0 from {}", shown()));
    }
    let (native, json) = out.stdout.split_once('\n').unwrap_or_default();
    if !native.starts_with("agentcompass-host ") || !native.contains(" run harbor ") {
        return Err(format!("expected the native command first: {}", shown()));
    }
    let payload: Value = serde_json::from_str(json).map_err(|e| format!("{e}: {}", shown()))?;
    let expected: Value = serde_json::from_str(&table.fill(expected)).expect("a row's JSON");
    for (pointer, value) in expected.as_object().expect("an object") {
        if payload.pointer(pointer) != Some(value) {
            return Err(format!(
                "{pointer}: expected {value}, found {:?} in `harbor run {line}`",
                payload.pointer(pointer)
            ));
        }
    }
    Ok(())
}

#[test]
fn harbor_command_lines_resolve_to_their_requests_or_are_refused_by_name() {
    assert!(ROWS.len() >= 40, "at least 40 rows");
    let table = Table::new();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = ROWS
            .chunks(ROWS.len().div_ceil(4))
            .map(|chunk| {
                let table = &table;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(line, expected)| check(table, line, expected).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a row thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
}

/// The native command `--dry-run` printed, as words (`run` → `plan --task TASK`).
fn native_plan(table: &Table, line: &str, task: &str) -> Value {
    let out = table.run(&["run"], line, &["--dry-run"]);
    assert_eq!(out.code, 0, "{out:?}");
    let native = out.stdout.lines().next().unwrap();
    let words = shlex::split(native).unwrap();
    // The workspace gives the plugin directories itself: the words after `run`.
    let run = words.iter().position(|w| w == "run").unwrap();
    let mut args = vec!["--plugin-dir", table.packs.to_str().unwrap(), "plan"];
    args.extend(words[run + 1..].iter().map(String::as_str));
    args.extend(["--task", task]);
    let plan = table.ws.run(&args, &[]).expect_code(0);
    serde_json::from_str::<Value>(&plan.stdout).unwrap()["resolved_execution_plan"].clone()
}

#[test]
fn effective_timeouts_are_the_tasks_times_harbors_multipliers() {
    let table = Table::new();
    // hello-file: agent 120 s, verifier 60 s; no build timeout (Harbor's 600 s).
    for (line, run, evaluation, build) in [
        ("-p {tasks}", 120.0, 60.0, Value::Null),
        ("-p {tasks} --timeout-multiplier 2", 240.0, 120.0, 1200.0.into()),
        ("-p {tasks} --timeout-multiplier 2 --agent-timeout-multiplier 0.5", 60.0, 120.0, 1200.0.into()),
        ("-p {tasks} --verifier-timeout-multiplier 3 --environment-build-timeout-multiplier 0.25", 120.0, 180.0, 150.0.into()),
    ] {
        let plan = native_plan(&table, line, "hello-file");
        assert_eq!(plan["run_timeout_seconds"], run, "{line}");
        assert_eq!(plan["evaluation_timeout_seconds"], evaluation, "{line}");
        assert_eq!(plan["environment"]["setup"]["build_timeout_seconds"], build, "{line}");
    }
}

#[test]
fn harbor_run_runs_the_bundled_tasks_to_reward_one_and_job_resume_keeps_them() {
    let table = Table::new();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/harbor");
    let line = format!("-p {} -a oracle -o {{dir}}/jobs -q", examples.display());
    let out = table.run(&["run"], &line, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let run_dir = PathBuf::from(out.stdout.trim());
    assert!(
        out.stderr
            .contains("reward (native@1): 1.0000 (3/3 evaluated)"),
        "{out:?}"
    );
    let resumed = table.run(
        &["job", "resume"],
        &format!("-p {} -f AgentTimeoutError", run_dir.display()),
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.stderr.contains("(3 tasks, 3 reused)"),
        "finished tasks are kept: {resumed:?}"
    );
    assert!(
        resumed.stderr.contains("cancelled,run_timeout"),
        "{resumed:?}"
    );
    let bad = table.run(&["job", "resume"], "-p {dir}/nowhere", &[]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad
        .stderr
        .contains("expected a run directory holding run_info.json"));
    assert!(fs::read_dir(run_dir.parent().unwrap()).unwrap().count() == 2);
}

#[test]
fn native_task_selection_timeout_multipliers_and_overrides_run_end_to_end() {
    let table = Table::new();
    let params = format!(r#"{{"path": "{}"}}"#, table.tasks.display());
    let results = table.ws.root().join("native");
    let out = table.ws.run(
        &[
            "--plugin-dir",
            table.packs.to_str().unwrap(),
            "run",
            "harbor",
            "oracle",
            "reference",
            "--benchmark-params",
            &params,
            "--env",
            "sandbox",
            "--progress",
            "none",
            "--include-task",
            "hello-*",
            "--include-task",
            "prime*",
            "--exclude-task",
            "primes",
            "--n-tasks",
            "2",
            "-k",
            "2",
            "--timeout-multiplier",
            "2",
            "--agent-timeout-multiplier",
            "3",
            "--override-memory-mb",
            "512",
            "--results-dir",
            results.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    // Include hello-* and prime*, exclude primes, the first two: hello-file, hello-world.
    assert!(
        out.stderr
            .contains("reward (avg@2): 1.0000 (2/2 evaluated)"),
        "{out:?}"
    );
    let run_dir = PathBuf::from(out.stdout.trim());
    let plans = fs::read_to_string(run_dir.join("resolved_plans.jsonl")).unwrap();
    let mut tasks = Vec::new();
    for line in plans.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        tasks.push(record["task_id"].as_str().unwrap().to_string());
        for plan in record["attempts"].as_object().unwrap().values() {
            // hello-*: agent 120 s × 3 (the agent's multiplier), verifier 60 s × 2.
            assert_eq!(plan["run_timeout_seconds"], 360.0, "{plan}");
            assert_eq!(plan["evaluation_timeout_seconds"], 120.0, "{plan}");
            assert_eq!(plan["environment"]["resources"]["memory_mb"], 512, "{plan}");
        }
        assert_eq!(record["attempts"].as_object().unwrap().len(), 2, "-k 2");
    }
    tasks.sort();
    assert_eq!(tasks, ["hello-file", "hello-world"]);
}

/// The tasks a run directory's plans name, sorted, and their run timeouts.
fn planned(run_dir: &Path) -> (Vec<String>, Vec<Value>) {
    let plans = fs::read_to_string(run_dir.join("resolved_plans.jsonl")).unwrap();
    let (mut tasks, mut timeouts) = (Vec::new(), Vec::new());
    for line in plans.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        tasks.push(record["task_id"].as_str().unwrap().to_string());
        for plan in record["attempts"].as_object().unwrap().values() {
            timeouts.push(plan["run_timeout_seconds"].clone());
        }
    }
    tasks.sort();
    (tasks, timeouts)
}

#[test]
fn launch_applies_the_selection_and_timeout_flags_to_every_request_under_its_own() {
    let table = Table::new();
    let tasks = table.tasks.display();
    let file = table.ws.write(
        "orchestration.toml",
        &format!(
            "[defaults]\nharness = {{ id = \"oracle\" }}\nmodel = {{ id = \"reference\" }}\n\
             environment = {{ id = \"sandbox\" }}\n\n[[requests]]\nname = \"flags\"\n\
             benchmark = {{ id = \"harbor\", path = \"{tasks}\" }}\n\n[[requests]]\n\
             name = \"own\"\nbenchmark = {{ id = \"harbor\", path = \"{tasks}\" }}\n\
             execution = {{ n_tasks = 3 }}\n"
        ),
    );
    let results = table.ws.root().join("launched");
    let out = table.ws.run(
        &[
            "--plugin-dir",
            table.packs.to_str().unwrap(),
            "launch",
            file.to_str().unwrap(),
            "--include-task",
            "hello-*",
            "--include-task",
            "prime*",
            "--n-tasks",
            "1",
            "--agent-timeout-multiplier",
            "2",
            "--progress",
            "none",
            "--results-dir",
            results.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let runs: Vec<PathBuf> = out
        .stdout
        .lines()
        .map(|l| PathBuf::from(l.split_whitespace().last().unwrap()))
        .collect();
    assert_eq!(runs.len(), 2, "{out:?}");
    let mut seen: Vec<(Vec<String>, Vec<Value>)> = runs.iter().map(|r| planned(r)).collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen,
        [
            (vec!["hello-file".to_string()], vec![Value::from(240.0)]),
            (
                vec![
                    "hello-file".to_string(),
                    "hello-world".into(),
                    "prime-sieve".into()
                ],
                vec![Value::from(240.0), 240.0.into(), 240.0.into()]
            ),
        ]
    );
}
