//! Harness parameter reading: schema check, defaults, and typed getters whose errors are one
//! line naming the harness and the parameter.

use agentcompass_plugin_api::contracts::{json_type_name, ConfigSchema, JsonMap, RunRequest};
use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

/// The validated params of one harness (schema defaults filled in).
pub(crate) struct Params {
    harness: &'static str,
    map: JsonMap,
}

impl Params {
    /// Checks `req.harness.params` against `schema` (unknown keys, types, required fields) and
    /// fills the defaults.
    pub(crate) fn read(
        harness: &'static str,
        schema: &ConfigSchema,
        req: &RunRequest,
    ) -> Result<Self> {
        Self::from_map(harness, schema, &req.harness.params)
    }

    /// As [`Params::read`], from a bare map.
    pub(crate) fn from_map(
        harness: &'static str,
        schema: &ConfigSchema,
        params: &JsonMap,
    ) -> Result<Self> {
        let problems = schema.validate(params);
        if let Some(first) = problems.first() {
            let more = match problems.len() {
                1 => String::new(),
                n => format!(
                    " (and {} more problem{})",
                    n - 1,
                    if n == 2 { "" } else { "s" }
                ),
            };
            return Err(Error::invalid_input(format!(
                "harness `{harness}`: {first}{more}"
            )));
        }
        Ok(Params {
            harness,
            map: schema.with_defaults(params),
        })
    }

    /// An error about `key`.
    pub(crate) fn error(&self, key: &str, message: impl std::fmt::Display) -> Error {
        Error::invalid_input(format!(
            "harness `{}`: parameter `{key}` {message}",
            self.harness
        ))
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// An optional string; `non_empty` refuses blank strings.
    pub(crate) fn string(&self, key: &str, non_empty: bool) -> Result<Option<String>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) if non_empty && s.trim().is_empty() => {
                Err(self.error(key, "must not be empty"))
            }
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.error(
                key,
                format!("expects a string, found {}", json_type_name(other)),
            )),
        }
    }

    /// An optional boolean.
    pub(crate) fn boolean(&self, key: &str) -> Result<Option<bool>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.error(
                key,
                format!("expects a boolean, found {}", json_type_name(other)),
            )),
        }
    }

    /// An optional integer of at least `min`.
    pub(crate) fn integer(&self, key: &str, min: u64) -> Result<Option<u64>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v >= min => Ok(Some(v)),
                _ => Err(self.error(
                    key,
                    format!("must be an integer of at least {min} (found {n})"),
                )),
            },
            Some(other) => Err(self.error(
                key,
                format!("expects an integer, found {}", json_type_name(other)),
            )),
        }
    }

    /// An optional finite number greater than zero.
    pub(crate) fn positive_number(&self, key: &str) -> Result<Option<f64>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
                _ => Err(self.error(key, format!("must be a number greater than 0 (found {n})"))),
            },
            Some(other) => Err(self.error(
                key,
                format!("expects a number, found {}", json_type_name(other)),
            )),
        }
    }

    /// An optional list of absolute paths.
    pub(crate) fn absolute_paths(&self, key: &str) -> Result<Vec<String>> {
        let items = match self.value(key) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(self.error(
                    key,
                    format!("expects an array of paths, found {}", json_type_name(other)),
                ))
            }
        };
        items
            .iter()
            .map(|item| match item {
                Value::String(path) if path.starts_with('/') => Ok(path.clone()),
                Value::String(path) => {
                    Err(self.error(key, format!("needs absolute paths (found `{path}`)")))
                }
                other => Err(self.error(
                    key,
                    format!("expects strings, found {}", json_type_name(other)),
                )),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{ConfigField, ConfigType};
    use serde_json::json;

    fn schema() -> ConfigSchema {
        ConfigSchema::empty()
            .field(ConfigField::new("n", ConfigType::Integer, json!(3), "n"))
            .field(ConfigField::new("name", ConfigType::String, json!(null), "name").required())
            .field(ConfigField::new(
                "paths",
                ConfigType::Array,
                json!(null),
                "paths",
            ))
            .field(ConfigField::new(
                "limit",
                ConfigType::Number,
                json!(null),
                "limit",
            ))
    }

    fn map(value: Value) -> JsonMap {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn schema_problems_name_the_harness_and_key() {
        let err = Params::from_map("h", &schema(), &map(json!({"bogus": 1, "name": "x"})))
            .err()
            .unwrap();
        assert!(
            err.message
                .starts_with("harness `h`: unknown parameter `bogus`"),
            "{err}"
        );
        let err = Params::from_map("h", &schema(), &map(json!({})))
            .err()
            .unwrap();
        assert_eq!(
            err.message,
            "harness `h`: missing required parameter `name`"
        );
        let err = Params::from_map("h", &schema(), &map(json!({"n": "x"})))
            .err()
            .unwrap();
        assert!(err.message.contains("(and 1 more problem)"), "{err}");
    }

    #[test]
    fn typed_getters() {
        let p = Params::from_map(
            "h",
            &schema(),
            &map(json!({"name": " ", "paths": ["/a", "b"], "limit": -1, "n": 0})),
        )
        .unwrap();
        assert_eq!(p.string("name", false).unwrap().as_deref(), Some(" "));
        assert_eq!(
            p.string("name", true).err().unwrap().message,
            "harness `h`: parameter `name` must not be empty"
        );
        assert!(p
            .absolute_paths("paths")
            .err()
            .unwrap()
            .message
            .contains("`b`"));
        assert!(p.positive_number("limit").is_err());
        assert_eq!(p.integer("n", 0).unwrap(), Some(0));
        assert!(p
            .integer("n", 1)
            .err()
            .unwrap()
            .message
            .contains("at least 1"));
        let defaults = Params::from_map("h", &schema(), &map(json!({"name": "x"}))).unwrap();
        assert_eq!(defaults.integer("n", 1).unwrap(), Some(3));
        assert_eq!(defaults.positive_number("limit").unwrap(), None);
        assert!(defaults.absolute_paths("paths").unwrap().is_empty());
    }
}
