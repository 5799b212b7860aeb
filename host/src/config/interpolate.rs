//! `${VAR}` rules for configuration values.
//!
//! Outside environment-variable maps a string may be a *whole-field* reference (`${NAME}`,
//! surrounding whitespace tolerated) and nothing else: `prefix-${NAME}` is rejected with the
//! key path. References are kept as written in requests (so printed and persisted requests show
//! `${NAME}`, never the value) and resolved from the environment only when a request is about
//! to execute ([`resolve_references`]). Environment-variable maps stay raw here; they are
//! resolved at execution time, where `${NAME}` and `${NAME:-default}` may appear inside strings.

use serde_json::Value;

use super::ConfigError;

/// Keys whose mapping is an environment-variable map (left raw until execution).
pub const ENV_MAP_KEYS: [&str; 5] = [
    "env",
    "env_variables",
    "run_env_variables",
    "evaluation_env_variables",
    "evaluation_environment_env_variables",
];

/// Whether `key` names an environment-variable map.
pub fn is_env_map_key(key: &str) -> bool {
    ENV_MAP_KEYS.contains(&key)
}

/// The variable name when `text` is exactly one `${NAME}` reference.
pub fn whole_field_reference(text: &str) -> Option<&str> {
    let name = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Rejects `${...}` used inside a larger string anywhere outside environment-variable maps.
/// `source` names the file or flag, `path` the key path of `value`.
pub fn check_references(source: &str, path: &str, value: &Value) -> Result<(), ConfigError> {
    match value {
        Value::String(text) if text.contains("${") && whole_field_reference(text).is_none() => {
            Err(ConfigError::invalid(
                source,
                path,
                "uses unsupported environment interpolation; use a whole-field ${VAR} (only \
                 environment-variable maps may embed ${NAME} in a string)",
            ))
        }
        Value::Object(map) => {
            for (key, item) in map {
                if !(is_env_map_key(key) && item.is_object()) {
                    check_references(source, &join(path, key), item)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_references(source, &format!("{path}[{i}]"), item)),
        _ => Ok(()),
    }
}

/// A copy of `value` with every whole-field reference outside environment-variable maps
/// replaced by the variable's value. An unset variable is an error naming the key path and
/// the variable (never a value).
pub fn resolve_references(
    path: &str,
    value: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, ConfigError> {
    match value {
        Value::String(text) => match whole_field_reference(text) {
            Some(name) => env(name).map(Value::String).ok_or_else(|| {
                ConfigError::invalid(
                    "environment",
                    path,
                    format!(
                        "refers to ${{{name}}}, which is not set; export it or change the value"
                    ),
                )
            }),
            None => Ok(value.clone()),
        },
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                let resolved = if is_env_map_key(key) && item.is_object() {
                    item.clone()
                } else {
                    resolve_references(&join(path, key), item, env)?
                };
                out.insert(key.clone(), resolved);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| resolve_references(&format!("{path}[{i}]"), item, env))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => Ok(value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_field_references() {
        assert_eq!(whole_field_reference("${OPENAI_KEY}"), Some("OPENAI_KEY"));
        assert_eq!(whole_field_reference("  ${_x1} "), Some("_x1"));
        assert_eq!(whole_field_reference("${1X}"), None);
        assert_eq!(whole_field_reference("a${X}"), None);
        assert_eq!(whole_field_reference("${X:-d}"), None);
    }

    #[test]
    fn embedded_references_are_rejected_outside_env_maps() {
        let ok = json!({"a": "${X}", "environment": {"env_variables": {"P": "x-${X}"}}});
        assert_eq!(check_references("f.toml", "", &ok), Ok(()));
        let bad = json!({"benchmarks": {"b": {"url": "http://${HOST}/x"}}});
        let err = check_references("f.toml", "", &bad)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("f.toml: benchmarks.b.url: uses unsupported"),
            "{err}"
        );
        let bad = json!({"list": ["ok", "pre${X}"]});
        let err = check_references("--benchmark-params", "", &bad)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--benchmark-params: list[1]:"), "{err}");
    }

    #[test]
    fn resolution_replaces_references_and_names_unset_variables() {
        let env = |name: &str| (name == "SET").then(|| "value".to_string());
        let value = json!({"a": "${SET}", "env_variables": {"K": "${UNSET}"}, "l": ["${SET}"]});
        let resolved = resolve_references("", &value, &env).unwrap();
        assert_eq!(
            resolved,
            json!({"a": "value", "env_variables": {"K": "${UNSET}"}, "l": ["value"]})
        );
        let err = resolve_references("model", &json!({"api_key": "${UNSET}"}), &env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment: model.api_key: refers to ${UNSET}, which is not set; export it or change the value"
        );
    }
}
