//! `harbor job resume -p RUN_DIR [-f TYPE]...`: the run's own request (its `run_info.json`)
//! run again with `--reuse RUN_ID`, as every reuse does into a new run directory beside it:
//! finished tasks are imported, the unfinished ones run, and those whose failure `-f` names
//! (Harbor exception types, or this host's failure classes and issue codes) run again
//! (`--rerun`).

use std::path::Path;

use agentcompass_plugin_api::contracts::{EnvironmentSpec, ExecutionSpec, RunRequest};
use serde_json::Value;

use super::{command_line, native_run, usage};
use crate::cli::{GlobalArgs, HarborResume};

/// Harbor's exception types as this host's failure classes and issue codes.
const EXCEPTION_TYPES: &[(&str, &str)] = &[
    ("CancelledError", "cancelled"),
    ("AgentTimeoutError", "run_timeout"),
    ("NonZeroAgentExitCodeError", "run_failed"),
    ("AgentSetupTimeoutError", "agent_install_timeout"),
    ("EnvironmentStartTimeoutError", "environment_timeout"),
    ("EnvironmentBuildTimeoutError", "environment_timeout"),
    ("VerifierTimeoutError", "evaluate_timeout"),
    ("RewardFileNotFoundError", "evaluate_failed"),
    ("RewardFileEmptyError", "evaluate_failed"),
    ("VerifierOutputParseError", "evaluate_failed"),
    ("ApiUsageLimitError", "model"),
    ("ModelNotFoundError", "model"),
];

/// `harbor job resume`.
pub fn resume(global: &GlobalArgs, args: &HarborResume) -> anyhow::Result<i32> {
    let dir = &args.job_path;
    let info = dir.join("run_info.json");
    let text = std::fs::read_to_string(&info).map_err(|e| {
        usage(format!(
            "harbor job resume: -p {}: expected a run directory holding run_info.json: {e}",
            dir.display()
        ))
    })?;
    /// The part of `run_info.json` a resume reads.
    #[derive(serde::Deserialize)]
    struct RunInfo {
        request: RunRequest,
    }
    let info: RunInfo = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "harbor job resume: {}: expected a run's run_info.json: {e}",
            info.display()
        ))
    })?;
    let mut words = request_words(&info.request, dir)?;
    let mut rerun = vec!["cancelled".to_string()];
    for kind in &args.filter_error_types {
        rerun.push(rerun_class(kind)?);
    }
    rerun.dedup();
    words.extend(["--rerun".into(), rerun.join(",")]);
    let cmd = native_run(&words)?;
    eprintln!("resuming with: {}", command_line(global, &words));
    super::super::run::run(global, &cmd)
}

/// The `--rerun` word of `-f TYPE`.
fn rerun_class(kind: &str) -> anyhow::Result<String> {
    if let Some((_, class)) = EXCEPTION_TYPES.iter().find(|(name, _)| *name == kind) {
        return Ok(class.to_string());
    }
    use agentcompass_host::issue_codes::{class_of_code, FailureClass};
    if FailureClass::parse(kind).is_some() || class_of_code(kind).is_some() {
        return Ok(kind.to_string());
    }
    Err(usage(format!(
        "harbor job resume: -f {kind}: expected a Harbor exception type ({}), a failure class \
         (agent, model, environment, evaluation, host, limit, budget, cancelled) or an issue \
         code",
        EXCEPTION_TYPES
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The native words that run `request` again beside `dir`, reusing it.
fn request_words(request: &RunRequest, dir: &Path) -> anyhow::Result<Vec<String>> {
    let (Some(run_id), Some(results)) = (
        dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        dir.parent().and_then(Path::parent),
    ) else {
        return Err(usage(format!(
            "harbor job resume: -p {}: expected RESULTS/NAMESPACE/RUN_ID",
            dir.display()
        )));
    };
    let harness = &request.harness;
    if !harness.mcp_servers.is_empty() || !harness.extra_instructions.is_empty() {
        return Err(usage(
            "harbor job resume: the run gave its agent MCP servers or extra instructions, \
             which its record keeps resolved; resume it with its own `agentcompass-host run \
             ... --reuse RUN_ID`",
        ));
    }
    let mut words = vec![
        request.benchmark.id.clone(),
        harness.id.clone(),
        request.model.id.clone(),
    ];
    let mut flag = |name: &str, value: String| {
        words.push(name.to_string());
        words.push(value);
    };
    let json = |map: &serde_json::Map<String, Value>| Value::Object(map.clone()).to_string();
    flag("--benchmark-params", json(&request.benchmark.params));
    flag("--harness-params", json(&harness.params));
    flag("--env", request.environment.id.clone());
    flag(
        "--env-params",
        environment_params(&request.environment).to_string(),
    );
    flag(
        "--execution-params",
        changed_execution(&request.execution).to_string(),
    );
    for skill in &harness.skills {
        flag("--skill", skill.clone());
    }
    for (name, value) in &harness.env {
        // Only `${VAR}` references are on record as written (literal values are redacted).
        if !value.starts_with("${") {
            return Err(usage(format!(
                "harbor job resume: the agent variable {name} was given literally and is not \
                 kept; resume the run with its own `agentcompass-host run ... --reuse RUN_ID`"
            )));
        }
        flag("--agent-env", format!("{name}={value}"));
    }
    let model = &request.model;
    if !model.base_url.is_empty() {
        flag("--model-base-url", model.base_url.clone());
    }
    match serde_json::to_value(&model.api_protocol).unwrap_or(Value::Null) {
        Value::String(protocol) if protocol.is_empty() => {}
        Value::String(protocol) => flag("--model-api-protocol", protocol),
        list => flag("--model-api-protocol", list.to_string()),
    }
    // A `${VAR}` reference is on record as written; a key from the configuration (recorded
    // redacted) comes from the same configuration again.
    if model.api_key.starts_with("${") {
        flag("--model-api-key", model.api_key.clone());
    }
    if !request.output.run_name.is_empty() {
        flag("--run-name", request.output.run_name.clone());
    }
    flag("--results-dir", results.display().to_string());
    flag("--reuse", run_id);
    Ok(words)
}

/// The execution fields that differ from the defaults.
fn changed_execution(execution: &ExecutionSpec) -> Value {
    let defaults = serde_json::to_value(ExecutionSpec::default()).unwrap_or(Value::Null);
    let given = serde_json::to_value(execution).unwrap_or(Value::Null);
    let changed = given
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, value)| defaults.get(key.as_str()) != Some(*value))
        .map(|(key, value)| (key.clone(), value.clone()));
    Value::Object(changed.collect())
}

/// The environment's fields a request file or `--env-params` sets (its provider parameters
/// and shared fields), without the ones left at their defaults.
fn environment_params(environment: &EnvironmentSpec) -> Value {
    let defaults = serde_json::to_value(EnvironmentSpec::default()).unwrap_or(Value::Null);
    let given = serde_json::to_value(environment).unwrap_or(Value::Null);
    let mut params = serde_json::Map::new();
    for (key, value) in given.as_object().into_iter().flatten() {
        match (key.as_str(), value) {
            // Provider parameters are given at the top level of `--env-params`.
            ("params", Value::Object(provider)) => params.extend(provider.clone()),
            ("id", _) => {}
            _ if defaults.get(key.as_str()) == Some(value) => {}
            _ => {
                params.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(params)
}
