//! `harbor job resume -p RUN_DIR [-f TYPE]...`: the run's own request (its `run_info.json`)
//! run again into the same directory with `--reuse RUN_ID`: finished tasks are kept, the
//! unfinished ones run, and those whose failure `-f` names (Harbor exception types, or this
//! host's failure classes and issue codes) run again (`--rerun`).

use std::path::Path;

use agentcompass_plugin_api::contracts::ExecutionSpec;
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
    let info: Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "harbor job resume: {}: invalid JSON: {e}",
            info.display()
        ))
    })?;
    let mut words = request_words(&info["request"], dir)?;
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

/// The native words that run `request` again into `dir`.
fn request_words(request: &Value, dir: &Path) -> anyhow::Result<Vec<String>> {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
    let (Some(run_id), Some(results)) = (
        dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        dir.parent().and_then(Path::parent),
    ) else {
        return Err(usage(format!(
            "harbor job resume: -p {}: expected RESULTS/NAMESPACE/RUN_ID",
            dir.display()
        )));
    };
    let mut words = vec![
        text(&request["benchmark"]["id"]),
        text(&request["harness"]["id"]),
        text(&request["model"]["id"]),
    ];
    let mut flag = |name: &str, value: String| {
        words.push(name.to_string());
        words.push(value);
    };
    flag(
        "--benchmark-params",
        request["benchmark"]["params"].to_string(),
    );
    flag("--harness-params", request["harness"]["params"].to_string());
    flag("--env", text(&request["environment"]["id"]));
    flag(
        "--env-params",
        environment_params(&request["environment"]).to_string(),
    );
    flag(
        "--execution-params",
        changed_execution(&request["execution"]).to_string(),
    );
    let model = &request["model"];
    for (name, key) in [
        ("--model-base-url", "base_url"),
        ("--model-api-protocol", "api_protocol"),
    ] {
        if !text(&model[key]).is_empty() {
            flag(name, text(&model[key]));
        }
    }
    // A `${VAR}` reference is on record as written; a key from the configuration (recorded
    // redacted) comes from the same configuration again.
    let key = text(&model["api_key"]);
    if key.starts_with("${") {
        flag("--model-api-key", key);
    }
    let run_name = text(&request["output"]["run_name"]);
    if !run_name.is_empty() {
        flag("--run-name", run_name);
    }
    flag("--results-dir", results.display().to_string());
    flag("--reuse", run_id);
    Ok(words)
}

/// The execution fields that differ from the defaults.
fn changed_execution(execution: &Value) -> Value {
    let defaults = serde_json::to_value(ExecutionSpec::default()).unwrap_or(Value::Null);
    let changed = execution
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, value)| defaults.get(key.as_str()) != Some(*value))
        .map(|(key, value)| (key.clone(), value.clone()));
    Value::Object(changed.collect())
}

/// The environment's fields a request file or `--env-params` sets (its provider parameters
/// and shared fields), without the ones left at their defaults.
fn environment_params(environment: &Value) -> Value {
    let mut params = serde_json::Map::new();
    for (key, value) in environment.as_object().into_iter().flatten() {
        let default = match value {
            Value::Null => true,
            Value::Object(map) => map.is_empty() || map.values().all(Value::is_null),
            _ => false,
        };
        match (key.as_str(), value) {
            // Provider parameters are given at the top level of `--env-params`.
            ("params", Value::Object(provider)) => params.extend(provider.clone()),
            ("id", _) => {}
            _ if default => {}
            _ => {
                params.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(params)
}
