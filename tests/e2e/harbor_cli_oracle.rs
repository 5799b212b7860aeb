//! Harbor 0.25 itself as the oracle of `agentcompass-host harbor run`: every resolving row of
//! the table in `harbor_cli` that Harbor can resolve offline (a local dataset, given with
//! `-p` or by a Harbor job config) is given to Harbor's own CLI (`harbor run WORDS --print-config`, in-process, by
//! `tests/harbor_oracle/cli.py`) and to its `DatasetConfig` for the tasks `-i/-x/-l` select;
//! our dry run of the same words must agree field by field: the task list, attempts,
//! concurrency (Harbor's default 4), retries, the four effective timeout multipliers,
//! resources and their modes, agent, model, agent options and variables, where results go.
//! The tasks get an `environment/Dockerfile` here, as Harbor requires; our side runs them in
//! the sandbox (`-e sandbox`, which Harbor does not know, is added to ours only).

use std::path::Path;
use std::process::Command;

use agentcompass_e2e::atif::harbor_python;
use serde_json::Value;

use crate::harbor_cli::{Table, ROWS};

/// Harbor's agent names and our harnesses.
const AGENTS: [(&str, &str); 6] = [
    ("oracle", "oracle"),
    ("claude-code", "claude_code"),
    ("codex", "codex"),
    ("mini-swe-agent", "mini_swe_agent"),
    ("qwen-coder", "qwen_code"),
    ("terminus-2", "terminus"),
];

/// The rows Harbor resolves offline: ours resolve, over the local dataset (given with `-p`
/// or by Harbor's own job config), without our own environments or config.
fn oracle_rows() -> Vec<&'static str> {
    ROWS.iter()
        .filter(|(line, expected)| {
            !expected.starts_with("refused:")
                && (line.contains("{tasks}") || line.contains("harbor-job.yaml"))
                && ["/job.yaml", "--ek", "host_process"]
                    .iter()
                    .all(|w| !line.contains(w))
        })
        .map(|(line, _)| *line)
        .collect()
}

/// Harbor's results for each line (its words, without `-e sandbox`).
fn harbor_results(table: &Table, lines: &[Vec<String>]) -> Vec<Value> {
    let rows = table.ws.root().join("oracle-rows.json");
    std::fs::write(&rows, serde_json::to_string(lines).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("harbor_oracle/cli.py");
    let out = Command::new(harbor_python())
        .arg(script)
        .arg(&rows)
        .current_dir(table.ws.root())
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)))
}

/// `value` or `default` when absent or null.
fn or(value: &Value, default: Value) -> Value {
    if value.is_null() {
        default
    } else {
        value.clone()
    }
}

/// The first difference between Harbor's resolution and our dry run, if any.
fn disagreement(harbor: &Value, ours: &Value) -> Option<String> {
    let config = &harbor["config"];
    let exec = &ours["request"]["execution"];
    let env = &ours["request"]["environment"]["resources"];
    let agent = &config["agents"][0];
    let common = or(&config["timeout_multiplier"], 1.0.into());
    let ours_common = exec["timeout_multiplier"].clone();
    let effective = |key: &str| or(&exec[key], ours_common.clone());
    let harbor_name = agent["name"].as_str().unwrap_or("oracle");
    let harness = AGENTS
        .iter()
        .find(|(h, _)| *h == harbor_name)
        .map(|(_, o)| *o);
    let checks: Vec<(&str, Value, Value)> = vec![
        ("tasks", harbor["tasks"].clone(), ours["task_ids"].clone()),
        (
            "n_attempts",
            or(&config["n_attempts"], 1.into()),
            exec["attempts"]["k"].clone(),
        ),
        (
            "n_concurrent_trials",
            or(&config["n_concurrent_trials"], 4.into()),
            exec["task_concurrency"].clone(),
        ),
        (
            "retry.max_retries",
            or(&config["retry"]["max_retries"], 0.into()),
            exec["max_retries"].clone(),
        ),
        ("timeout_multiplier", common.clone(), ours_common.clone()),
        (
            "agent_timeout_multiplier",
            or(&config["agent_timeout_multiplier"], common.clone()),
            effective("run_timeout_multiplier"),
        ),
        (
            "verifier_timeout_multiplier",
            or(&config["verifier_timeout_multiplier"], common.clone()),
            effective("evaluation_timeout_multiplier"),
        ),
        (
            "agent_setup_timeout_multiplier",
            or(&config["agent_setup_timeout_multiplier"], common.clone()),
            or(&exec["setup_timeout_multiplier"], 1.0.into()),
        ),
        (
            "environment_build_timeout_multiplier",
            or(
                &config["environment_build_timeout_multiplier"],
                common.clone(),
            ),
            or(&exec["build_timeout_multiplier"], 1.0.into()),
        ),
        (
            "environment.override_cpus",
            config["environment"]["override_cpus"].as_f64().into(),
            env["cpu"].clone(),
        ),
        (
            "environment.override_memory_mb",
            config["environment"]["override_memory_mb"].clone(),
            or(&env["memory_mb"], Value::Null),
        ),
        (
            "environment.override_storage_mb",
            config["environment"]["override_storage_mb"].clone(),
            or(&env["storage_mb"], Value::Null),
        ),
        (
            "environment.override_gpus",
            config["environment"]["override_gpus"].clone(),
            or(&env["gpu"], Value::Null),
        ),
        (
            "environment.cpu_enforcement_policy",
            or(
                &config["environment"]["cpu_enforcement_policy"],
                "auto".into(),
            ),
            or(&env["cpu_mode"], "auto".into()),
        ),
        (
            "environment.memory_enforcement_policy",
            or(
                &config["environment"]["memory_enforcement_policy"],
                "auto".into(),
            ),
            or(&env["memory_mode"], "auto".into()),
        ),
        (
            "environment.delete",
            or(&config["environment"]["delete"], true.into()),
            (!exec["keep_environment"].as_bool().unwrap_or(false)).into(),
        ),
        (
            "agents[0].name",
            harness.into(),
            ours["request"]["harness"]["id"].clone(),
        ),
        (
            "job_name",
            config["job_name"].clone(),
            or(&ours["request"]["output"]["run_id"], Value::Null)
                .as_str()
                .filter(|s| !s.is_empty())
                .into(),
        ),
        (
            "quiet",
            or(&config["quiet"], false.into()),
            (ours["runtime"]["progress"] == "none").into(),
        ),
        (
            "debug",
            or(&config["debug"], false.into()),
            (ours["runtime"]["log_level"] == "DEBUG").into(),
        ),
    ];
    if let Some((key, h, o)) = checks.into_iter().find(|(_, h, o)| h != o) {
        return Some(format!("{key}: Harbor {h}, ours {o}"));
    }
    if let Some(model) = agent["model_name"].as_str() {
        let id = ours["request"]["model"]["id"].as_str().unwrap_or_default();
        if !model.ends_with(id) || id.is_empty() {
            return Some(format!("model_name: Harbor {model}, ours {id}"));
        }
    }
    for (key, value) in agent["kwargs"].as_object().into_iter().flatten() {
        let params = &ours["request"]["harness"]["params"];
        let agrees = match key.as_str() {
            // As the agent CLI's own flag (claude-code `--effort X`, codex
            // `-c model_reasoning_effort=X`), as Harbor renders it.
            "reasoning_effort" => value
                .as_str()
                .is_some_and(|v| params["extra_args"].to_string().contains(v)),
            _ => &params[key] == value,
        };
        if !agrees {
            return Some(format!(
                "agents[0].kwargs.{key}: Harbor {value}, ours {params}"
            ));
        }
    }
    for key in agent["env"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if ours["request"]["harness"]["env"][key].is_null() {
            return Some(format!("agents[0].env.{key}: missing in ours"));
        }
    }
    if let Some(dir) = config["jobs_dir"].as_str() {
        let ours = ours["runtime"]["results_dir"].as_str().unwrap_or_default();
        if !ours.ends_with(dir) {
            return Some(format!("jobs_dir: Harbor {dir}, ours {ours}"));
        }
    }
    None
}

#[test]
fn harbor_itself_resolves_the_table_the_way_harbor_run_does() {
    let table = Table::with_environments();
    let rows = oracle_rows();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    let words: Vec<Vec<String>> = rows
        .iter()
        .map(|line| {
            let mut words = shlex::split(&table.fill(line)).unwrap();
            if let Some(at) = words.iter().position(|w| w == "-e") {
                words.drain(at..at + 2);
            }
            words
        })
        .collect();
    let harbor = harbor_results(&table, &words);
    let mut failures = Vec::new();
    for ((line, words), harbor) in rows.iter().zip(&words).zip(&harbor) {
        if let Some(error) = harbor.get("error") {
            failures.push(format!("`{line}`: Harbor refused it: {error}"));
            continue;
        }
        let quoted: Vec<String> = words
            .iter()
            .map(|w| shlex::try_quote(w).unwrap().into_owned())
            .collect();
        let ours = table.dry_run(&format!("{} -e sandbox", quoted.join(" ")));
        match ours {
            Err(error) => failures.push(format!("`{line}`: ours: {error}")),
            Ok(ours) => {
                failures.extend(disagreement(harbor, &ours).map(|d| format!("`{line}`: {d}")))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows disagree with Harbor:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
