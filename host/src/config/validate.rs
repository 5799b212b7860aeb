//! Structural rules of a configuration file, checked per file so errors name it.

use agentcompass_plugin_api::contracts::EXECUTION_FIELDS;
use serde_json::{Map, Value};

use super::{check_references, ConfigError};

/// Keys allowed under `execution` (the ExecutionSpec fields).
pub const EXECUTION_KEYS: &[&str] = EXECUTION_FIELDS;

/// Keys allowed under `runtime`: the process-wide runtime options plus the per-request reuse
/// defaults (`reuse`, `checkpoint_resume`).
pub const RUNTIME_KEYS: &[&str] = &[
    "results_dir",
    "data_dir",
    "timeout_seconds",
    "cleanup_grace_seconds",
    "checkpoint_after_seconds",
    "progress",
    "progress_interval_seconds",
    "log_level",
    "file_log_level",
    "log_file",
    "auto_install_dependencies",
    "provider_limits",
    "env_open_qps",
    "recipe_dirs",
    "plugin_dirs",
    "plugin_lock",
    "egress",
    "install_cache_dir",
    "executor",
    "slurm",
    "budget",
    "fail_on_error",
    "otel",
    "reuse",
    "checkpoint_resume",
];

const COMPONENT_SECTIONS: [&str; 3] = ["benchmarks", "harnesses", "environments"];
const KNOWN_TOP_LEVEL: [&str; 5] = [
    "benchmarks",
    "harnesses",
    "environments",
    "execution",
    "runtime",
];

fn mapping<'a>(
    source: &str,
    path: &str,
    value: &'a Value,
) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
    match value {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(ConfigError::invalid(
            source,
            path,
            format!(
                "expected a mapping, found {}",
                agentcompass_plugin_api::contracts::json_type_name(other)
            ),
        )),
    }
}

/// Checks the keys of `map` against `allowed`, naming the first unknown one.
pub fn check_keys(
    source: &str,
    path: &str,
    map: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), ConfigError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(ConfigError::invalid(
            source,
            format!("{path}.{key}"),
            unknown_key_message(key, allowed),
        )),
        None => Ok(()),
    }
}

/// The valid key `key` was most likely meant to be: the closest of `allowed` by edit
/// distance, when it is close enough to be a typo (a third of the longer name, at least 1).
pub fn nearest_key<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    allowed
        .iter()
        .map(|candidate| (strsim::levenshtein(key, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (key.len().max(candidate.len()) / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// "unknown key (did you mean `x`? expected one of: ...)": the message of every unknown key
/// of a configuration or orchestration mapping.
pub fn unknown_key_message(key: &str, allowed: &[&str]) -> String {
    match nearest_key(key, allowed) {
        Some(near) => format!(
            "unknown key (did you mean `{near}`? expected one of: {})",
            allowed.join(", ")
        ),
        None => format!("unknown key (expected one of: {})", allowed.join(", ")),
    }
}

/// Validates one file's top-level mapping: only the known sections (an unknown one is an
/// error naming the nearest valid key; `models` says where the model comes from); component sections flat
/// (no `params:` layer); `execution` and `runtime` keys known; `${VAR}` only as whole fields.
pub fn validate_config(source: &str, payload: &Map<String, Value>) -> Result<(), ConfigError> {
    if payload.contains_key("models") {
        return Err(ConfigError::invalid(
            source,
            "models",
            "a models section is not allowed: the model comes only from the command line \
             (run MODEL, --model-*) or an orchestration file",
        ));
    }
    if let Some(key) = payload
        .keys()
        .find(|key| !KNOWN_TOP_LEVEL.contains(&key.as_str()))
    {
        return Err(ConfigError::invalid(
            source,
            key.as_str(),
            unknown_key_message(key, &KNOWN_TOP_LEVEL),
        ));
    }
    for section in COMPONENT_SECTIONS {
        let Some(value) = payload.get(section) else {
            continue;
        };
        let Some(entries) = mapping(source, section, value)? else {
            continue;
        };
        for (id, entry) in entries {
            let path = format!("{section}.{id}");
            if let Some(params) = mapping(source, &path, entry)? {
                if params.contains_key("params") {
                    return Err(ConfigError::invalid(
                        source,
                        format!("{path}.params"),
                        format!(
                            "remove the params layer: put the parameters directly under {path}"
                        ),
                    ));
                }
            }
        }
    }
    if let Some(value) = payload.get("execution") {
        if let Some(execution) = mapping(source, "execution", value)? {
            check_keys(source, "execution", execution, EXECUTION_KEYS)?;
            if let Some(attempts) = execution.get("attempts") {
                if let Some(attempts) = mapping(source, "execution.attempts", attempts)? {
                    check_keys(source, "execution.attempts", attempts, &["k", "strategy"])?;
                }
            }
        }
    }
    if let Some(value) = payload.get("runtime") {
        if let Some(runtime) = mapping(source, "runtime", value)? {
            check_keys(source, "runtime", runtime, RUNTIME_KEYS)?;
        }
    }
    // Provider sections are checked when a request selects the provider (upstream
    // interpolates only the selected provider's section): a `${VAR}` embedded in the section
    // of a provider this run does not use is not an error.
    let mut checked = payload.clone();
    checked.remove("environments");
    check_references(source, "", &Value::Object(checked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: Value) -> Result<(), String> {
        validate_config("c.toml", value.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn rejection_rules_name_the_file_and_key() {
        let cases = [
            (
                json!({"models": {}}),
                "c.toml: models: a models section is not allowed",
            ),
            (
                json!({"benchmarks": {"b": {"params": {}}}}),
                "c.toml: benchmarks.b.params: remove the params layer",
            ),
            (
                json!({"harnesses": []}),
                "c.toml: harnesses: expected a mapping, found array",
            ),
            (
                json!({"execution": {"k": 3}}),
                "c.toml: execution.k: unknown key",
            ),
            (
                json!({"execution": {"attempts": {"n": 1}}}),
                "c.toml: execution.attempts.n: unknown key",
            ),
            (
                json!({"runtime": {"colour": true}}),
                "c.toml: runtime.colour: unknown key",
            ),
            (
                json!({"benchmark": {"qa": {}}}),
                "c.toml: benchmark: unknown key (did you mean `benchmarks`? expected one of: \
                 benchmarks, harnesses, environments, execution, runtime)",
            ),
            (
                json!({"runtime": {"result_dir": "r"}}),
                "c.toml: runtime.result_dir: unknown key (did you mean `results_dir`?",
            ),
            (
                json!({"colors": {}}),
                "c.toml: colors: unknown key (expected one of: benchmarks,",
            ),
            (
                json!({"benchmarks": {"b": {"u": "a${X}"}}}),
                "c.toml: benchmarks.b.u: uses unsupported",
            ),
        ];
        for (value, expected) in cases {
            let err = check(value).unwrap_err();
            assert!(err.starts_with(expected), "{err}");
        }
        assert_eq!(
            check(
                json!({"benchmarks": {"b": {"size": 1}}, "execution": {"max_retries": 1}, "runtime": {"results_dir": "r"}, "environments": {"e": null}})
            ),
            Ok(())
        );
    }
}
