//! `${VAR}` rules for configuration values.
//!
//! Outside environment-variable maps a string may be a *whole-field* reference (`${NAME}`,
//! surrounding whitespace tolerated) and nothing else: `prefix-${NAME}` is rejected with the
//! key path. References are kept as written in requests (so printed and persisted requests show
//! `${NAME}`, never the value) and resolved from the environment only when a request is about
//! to execute ([`resolve_references`]). Environment-variable maps stay raw here; they are
//! resolved at execution time, where `${NAME}` and `${NAME:-default}` may appear inside strings.
//!
//! **Typed fields.** A variable's value is text; a whole-field reference takes the type of the
//! field it fills ([`convert_text`]: integer, number and boolean from their spelling, array and
//! object from JSON text). The type is the one its owner declares: a component parameter's
//! type in the component's config schema; a host field's type from the host's own structs
//! (`request::field_types`). A string field, a parameter declared `any` and a key nobody
//! declares (a key inside an object parameter, a model generation parameter) keep the text.
//! A value that does not convert is one line naming the key path, the variable and the
//! expected type — never the value ([`resolve_as`]).
//!
//! When: component parameters and `model.params` are maps that keep their references, so
//! they convert with every other reference right before execution. The host's typed fields
//! of `execution`, the environment's shared fields and `model.wrap_api_key` cannot hold a
//! reference in a typed request, so a reference there (not a string field's) is resolved and
//! converted when the request is built: printed requests show its value, and its variable
//! must be set for `--dry-run` too.

use agentcompass_plugin_api::contracts::ConfigType;
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
/// replaced by the variable's value (as a string). An unset variable is an error naming the
/// key path and the variable (never a value).
pub fn resolve_references(
    path: &str,
    value: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, ConfigError> {
    replace_references(path, value, &mut |site| {
        resolve_as("environment", site.path, site.name, ConfigType::String, env).map(Some)
    })
}

/// Where a whole-field reference stands, as [`replace_references`] reports it.
#[derive(Debug, Clone, Copy)]
pub struct ReferenceSite<'a> {
    /// The key path (`benchmark.params.seed`, `artifact_collect[0].timeout_seconds`).
    pub path: &'a str,
    /// The same path as keys, every array index as `[]` (`["artifact_collect", "[]",
    /// "timeout_seconds"]`): what a table of field types is matched against.
    pub keys: &'a [String],
    /// The variable's name.
    pub name: &'a str,
}

/// A copy of `value` in which `replace` decides, for every whole-field reference outside
/// environment-variable maps, what stands there instead (`None` keeps the reference as
/// written). `path` is the key path of `value`, used in the sites' paths.
pub fn replace_references(
    path: &str,
    value: &Value,
    replace: &mut dyn FnMut(ReferenceSite<'_>) -> Result<Option<Value>, ConfigError>,
) -> Result<Value, ConfigError> {
    walk(path, &mut Vec::new(), value, replace)
}

fn walk(
    path: &str,
    keys: &mut Vec<String>,
    value: &Value,
    replace: &mut dyn FnMut(ReferenceSite<'_>) -> Result<Option<Value>, ConfigError>,
) -> Result<Value, ConfigError> {
    match value {
        Value::String(text) => match whole_field_reference(text) {
            Some(name) => {
                Ok(replace(ReferenceSite { path, keys, name })?.unwrap_or_else(|| value.clone()))
            }
            None => Ok(value.clone()),
        },
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                let resolved = if is_env_map_key(key) && item.is_object() {
                    item.clone()
                } else {
                    keys.push(key.clone());
                    let resolved = walk(&join(path, key), keys, item, replace);
                    keys.pop();
                    resolved?
                };
                out.insert(key.clone(), resolved);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                keys.push("[]".to_string());
                let resolved = walk(&format!("{path}[{i}]"), keys, item, replace);
                keys.pop();
                out.push(resolved?);
            }
            Ok(Value::Array(out))
        }
        _ => Ok(value.clone()),
    }
}

/// The value of `${name}` for a field of type `kind` at `path`: the variable's text, converted
/// by [`convert_text`]. An unset variable and a text that does not convert are errors naming
/// `source`, the key path, the variable and the expected type; they never show the value.
pub fn resolve_as(
    source: &str,
    path: &str,
    name: &str,
    kind: ConfigType,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, ConfigError> {
    let text = env(name).ok_or_else(|| {
        ConfigError::invalid(
            source,
            path,
            format!("refers to ${{{name}}}, which is not set; export it or change the value"),
        )
    })?;
    convert_text(&text, kind).ok_or_else(|| {
        ConfigError::invalid(
            source,
            path,
            format!(
                "refers to ${{{name}}}, whose value is not {} (expected {})",
                article(kind),
                example(kind)
            ),
        )
    })
}

/// The value a whole-field reference's text stands for in a field of type `kind`, `None` when
/// it does not convert.
///
/// * `string` and `any` (a field declared without a type, or not declared at all): the text
///   as it is.
/// * `integer`: a whole number in JSON spelling (`42`, `-3`; not `4.0`).
/// * `number`: any JSON number (`1.5`, `2`, `1e3`).
/// * `boolean`: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, in any case.
/// * `array` and `object`: JSON text of that shape (`["a", "b"]`, `{"k": 1}`).
///
/// Surrounding whitespace is ignored for every type but `string` and `any`.
pub fn convert_text(text: &str, kind: ConfigType) -> Option<Value> {
    let trimmed = text.trim();
    let json = || serde_json::from_str::<Value>(trimmed).ok();
    match kind {
        ConfigType::String | ConfigType::Any => Some(Value::String(text.to_string())),
        ConfigType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Some(Value::Bool(true)),
            "false" | "0" | "no" | "off" => Some(Value::Bool(false)),
            _ => None,
        },
        ConfigType::Integer => json().filter(|v| v.is_i64() || v.is_u64()),
        ConfigType::Number => json().filter(Value::is_number),
        ConfigType::Array => json().filter(Value::is_array),
        ConfigType::Object => json().filter(Value::is_object),
    }
}

fn article(kind: ConfigType) -> &'static str {
    match kind {
        ConfigType::Integer => "an integer",
        ConfigType::Array => "an array",
        ConfigType::Object => "an object",
        ConfigType::Number => "a number",
        ConfigType::Boolean => "a boolean",
        ConfigType::String | ConfigType::Any => "a string",
    }
}

fn example(kind: ConfigType) -> &'static str {
    match kind {
        ConfigType::Integer => "a whole number such as 42",
        ConfigType::Number => "a number such as 1.5",
        ConfigType::Boolean => "true or false",
        ConfigType::Array => r#"a JSON array such as ["a", "b"]"#,
        ConfigType::Object => r#"a JSON object such as {"k": 1}"#,
        ConfigType::String | ConfigType::Any => "any text",
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

    #[test]
    fn text_converts_by_the_declared_type() {
        let cases = [
            (ConfigType::Integer, "4242", Some(json!(4242))),
            (ConfigType::Integer, " -3\n", Some(json!(-3))),
            (ConfigType::Integer, "4.0", None),
            (ConfigType::Integer, "abc", None),
            (ConfigType::Integer, "", None),
            (ConfigType::Integer, "99999999999999999999", None),
            (ConfigType::Number, "1.5", Some(json!(1.5))),
            (ConfigType::Number, "2", Some(json!(2))),
            (ConfigType::Number, "1e400", None),
            (ConfigType::Number, "NaN", None),
            (ConfigType::Boolean, "TRUE", Some(json!(true))),
            (ConfigType::Boolean, "0", Some(json!(false))),
            (ConfigType::Boolean, "off", Some(json!(false))),
            (ConfigType::Boolean, "maybe", None),
            (ConfigType::Array, r#"["a", 1]"#, Some(json!(["a", 1]))),
            (ConfigType::Array, r#"{"a": 1}"#, None),
            (
                ConfigType::Object,
                r#" {"k": [1]} "#,
                Some(json!({"k": [1]})),
            ),
            (ConfigType::Object, "null", None),
            (ConfigType::String, " 42 ", Some(json!(" 42 "))),
            (ConfigType::Any, "[1]", Some(json!("[1]"))),
        ];
        for (kind, text, expected) in cases {
            assert_eq!(convert_text(text, kind), expected, "{kind:?} {text:?}");
        }
    }

    #[test]
    fn typed_resolution_names_path_variable_and_type_never_the_value() {
        let env = |name: &str| match name {
            "SEED" => Some("4242".to_string()),
            "API_TOKEN" => Some("tok-not-a-number".to_string()),
            _ => None,
        };
        assert_eq!(
            resolve_as(
                "environment",
                "benchmark.params.seed",
                "SEED",
                ConfigType::Integer,
                &env
            ),
            Ok(json!(4242))
        );
        let err = resolve_as(
            "environment",
            "benchmark.params.seed",
            "API_TOKEN",
            ConfigType::Integer,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "environment: benchmark.params.seed: refers to ${API_TOKEN}, whose value is not an \
             integer (expected a whole number such as 42)"
        );
        assert!(!err.contains("tok-"), "{err}");
        let err = resolve_as(
            "--execution-params",
            "max_retries",
            "NOPE",
            ConfigType::Integer,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "--execution-params: max_retries: refers to ${NOPE}, which is not set; export it or change the value"
        );
    }

    #[test]
    fn replacement_sees_key_paths_with_generic_indices_and_skips_env_maps() {
        let value = json!({
            "a": {"b": "${X}"},
            "list": [{"t": "${Y}"}, "${Z}"],
            "env_variables": {"K": "${E}"},
            "keep": "${K}",
        });
        let mut seen = Vec::new();
        let replaced = replace_references("", &value, &mut |site| {
            seen.push((
                site.path.to_string(),
                site.keys.join("/"),
                site.name.to_string(),
            ));
            Ok((site.name != "K").then(|| json!(site.name.to_lowercase())))
        })
        .unwrap();
        assert_eq!(
            replaced,
            json!({"a": {"b": "x"}, "list": [{"t": "y"}, "z"], "env_variables": {"K": "${E}"}, "keep": "${K}"})
        );
        seen.sort();
        assert_eq!(
            seen,
            [
                ("a.b".to_string(), "a/b".to_string(), "X".to_string()),
                ("keep".into(), "keep".into(), "K".into()),
                ("list[0].t".into(), "list/[]/t".into(), "Y".into()),
                ("list[1]".into(), "list/[]".into(), "Z".into()),
            ]
        );
    }
}
