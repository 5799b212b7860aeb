//! Typed component parameters: declare them once as a serde struct, get the schema the host
//! checks configs against from it, and read them back as the struct.
//!
//! ```
//! use agentcompass_plugin_api::sdk::params::{self, Params};
//! use agentcompass_plugin_api::contracts::JsonMap;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// The parameters of `my_bench`.
//! #[derive(Debug, Serialize, Deserialize, JsonSchema)]
//! #[serde(default, deny_unknown_fields)]
//! struct MyParams {
//!     /// Seconds the hidden tests may run.
//!     timeout_seconds: f64,
//!     /// Only these task ids (default: every task).
//!     only: Vec<String>,
//! }
//!
//! impl Default for MyParams {
//!     fn default() -> Self {
//!         MyParams { timeout_seconds: 60.0, only: Vec::new() }
//!     }
//! }
//!
//! impl Params for MyParams {
//!     fn validate(&self) -> Result<(), String> {
//!         if self.timeout_seconds > 0.0 { Ok(()) } else { Err("`timeout_seconds` must be positive".into()) }
//!     }
//! }
//!
//! let schema = params::schema_of::<MyParams>();
//! assert_eq!(schema.get("timeout_seconds").unwrap().default, serde_json::json!(60.0));
//! let given: JsonMap = serde_json::from_value(serde_json::json!({"only": ["a"]})).unwrap();
//! let read: MyParams = params::read("benchmark `my_bench`", &given).unwrap();
//! assert_eq!((read.timeout_seconds, read.only.len()), (60.0, 1));
//! let bad: JsonMap = serde_json::from_value(serde_json::json!({"timeout_seconds": 0})).unwrap();
//! let err = params::read::<MyParams>("benchmark `my_bench`", &bad).unwrap_err();
//! assert_eq!(err.message, "benchmark `my_bench`: `timeout_seconds` must be positive");
//! ```
//!
//! Register the struct with the component ([`crate::sdk::PluginBuilder::with_params`]): its
//! schema becomes the component's `config_schema`, and the host runs [`Params::validate`] when
//! it resolves a request (so `run --dry-run` and `plan` refuse bad parameter content as a run
//! does), with the defaults filled in.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::contracts::{ConfigField, ConfigSchema, ConfigType, JsonMap};
use crate::{Error, Result};

/// A component's parameters as a typed struct.
pub trait Params: Serialize + DeserializeOwned + Default + schemars::JsonSchema + 'static {
    /// Checks the values beyond their types (ranges, combinations, known names). Runs when
    /// the host resolves a request and on every [`read`]. No I/O.
    fn validate(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// The [`ConfigSchema`] of `P`: one field per property, typed from its JSON schema, its
/// default from `P::default()` and its description from its doc comment.
pub fn schema_of<P: Params>() -> ConfigSchema {
    let schema = schemars::schema_for!(P);
    let root = schema.as_value();
    let defaults = serde_json::to_value(P::default()).unwrap_or(Value::Null);
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = ConfigSchema::empty();
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return fields;
    };
    for (name, property) in properties {
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let default = defaults.get(name).cloned().unwrap_or(Value::Null);
        let mut field = ConfigField::new(name, config_type(property), default, description);
        field.required = required.contains(&name.as_str());
        fields = fields.field(field);
    }
    fields
}

/// The config type of one property's JSON schema (`Any` when it allows several).
fn config_type(property: &Value) -> ConfigType {
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    match types.as_slice() {
        ["boolean"] => ConfigType::Boolean,
        ["integer"] => ConfigType::Integer,
        ["number"] => ConfigType::Number,
        ["string"] => ConfigType::String,
        ["array"] => ConfigType::Array,
        ["object"] => ConfigType::Object,
        _ => ConfigType::Any,
    }
}

/// `params` as a `P` (defaults filled in, `null` meaning the default), validated; errors are
/// invalid input prefixed with `component` (`benchmark \`my_bench\``).
pub fn read<P: Params>(component: &str, params: &JsonMap) -> Result<P> {
    let given: JsonMap = params
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let typed: P = serde_json::from_value(Value::Object(given))
        .map_err(|e| Error::invalid_input(format!("{component}: parameters: {e}")))?;
    typed
        .validate()
        .map_err(|problem| Error::invalid_input(format!("{component}: {problem}")))?;
    Ok(typed)
}

/// [`read`] then the parameters as JSON again, every default filled in (what the host's
/// resolution gets back from a plugin's validator).
pub fn filled<P: Params>(component: &str, params: &JsonMap) -> Result<JsonMap> {
    let typed: P = read(component, params)?;
    match serde_json::to_value(typed) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Error::msg(format!(
            "{component}: parameters serialise to {other}, not an object"
        ))),
        Err(e) => Err(Error::msg(format!("{component}: parameters: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Test params.
    #[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Needed {
        /// The dataset.
        path: String,
        /// Retries.
        #[serde(default)]
        retries: Option<u32>,
        #[serde(default)]
        flags: std::collections::BTreeMap<String, bool>,
    }

    impl Params for Needed {}

    #[test]
    fn schema_types_defaults_and_required() {
        let schema = schema_of::<Needed>();
        let path = schema.get("path").unwrap();
        assert_eq!((path.kind, path.required), (ConfigType::String, true));
        assert_eq!(path.description, "The dataset.");
        let retries = schema.get("retries").unwrap();
        assert_eq!(
            (retries.kind, retries.required),
            (ConfigType::Integer, false)
        );
        assert_eq!(schema.get("flags").unwrap().kind, ConfigType::Object);
        let given: JsonMap =
            serde_json::from_value(json!({"path": "/d", "retries": null})).unwrap();
        let map = filled::<Needed>("benchmark `b`", &given).unwrap();
        assert_eq!(
            Value::Object(map),
            json!({"path": "/d", "retries": null, "flags": {}})
        );
        let err = read::<Needed>("benchmark `b`", &JsonMap::new()).unwrap_err();
        assert_eq!(
            err.message,
            "benchmark `b`: parameters: missing field `path`"
        );
    }
}
