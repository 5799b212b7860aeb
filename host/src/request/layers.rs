//! Merging ordered layers of values (config file → defaults → request → flags) while keeping
//! track of where each key came from, so errors name the file or flag that set it.

use agentcompass_plugin_api::contracts::{json_type_name, ConfigSchema, ConfigType};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::config::{check_references, deep_merge, replace_references, resolve_as, ConfigError};

/// One layer: a mapping and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// File path or flag name.
    pub source: String,
    /// Key path of the mapping inside the source (`benchmarks.example_exact_match`,
    /// `requests[0].execution`; empty for a flag).
    pub path: String,
    /// The values.
    pub map: Map<String, Value>,
}

impl Layer {
    /// A new layer.
    pub fn new(
        source: impl Into<String>,
        path: impl Into<String>,
        map: Map<String, Value>,
    ) -> Self {
        Layer {
            source: source.into(),
            path: path.into(),
            map,
        }
    }

    /// The key path of `key` inside this layer.
    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// An error about `key` of this layer.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::invalid(self.source.clone(), self.key_path(key), message)
    }

    /// Rejects keys outside `allowed`.
    pub fn check_keys(&self, allowed: &[&str]) -> Result<(), ConfigError> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(key) => Err(self.error(key, crate::config::unknown_key_message(key, allowed))),
            None => Ok(()),
        }
    }

    /// Rejects embedded `${VAR}` references.
    pub fn check_references(&self) -> Result<(), ConfigError> {
        check_references(&self.source, &self.path, &Value::Object(self.map.clone()))
    }

    /// This layer with every whole-field `${VAR}` that fills a host field of a non-string
    /// type (`types`, given the keys inside the layer) resolved from `env` and converted now:
    /// a typed request has no place for a reference. Every other reference stays as written
    /// until execution. Errors name this layer, the key path, the variable and the type.
    pub fn resolve_typed_fields(
        &self,
        types: fn(&[&str]) -> ConfigType,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Layer, ConfigError> {
        let value = Value::Object(self.map.clone());
        let resolved = replace_references(&self.path, &value, &mut |site| {
            let keys: Vec<&str> = site.keys.iter().map(String::as_str).collect();
            match types(&keys) {
                ConfigType::String | ConfigType::Any => Ok(None),
                kind => resolve_as(&self.source, site.path, site.name, kind, env).map(Some),
            }
        })?;
        Ok(Layer::new(
            self.source.clone(),
            self.path.clone(),
            match resolved {
                Value::Object(map) => map,
                _ => Map::new(),
            },
        ))
    }
}

/// The last layer that sets `key` (the one an error about `key` should name).
pub fn owner<'a>(layers: &'a [Layer], key: &str) -> Option<&'a Layer> {
    layers.iter().rev().find(|l| l.map.contains_key(key))
}

/// Deep-merges the layers in order onto `base`.
pub fn merge(base: Value, layers: &[Layer]) -> Value {
    layers.iter().fold(base, |acc, layer| {
        deep_merge(&acc, &Value::Object(layer.map.clone()))
    })
}

/// An error about `key_path` (dotted, first segment a top-level key) of the merged layers,
/// attributed to the layer that set its first segment.
pub fn attribute(layers: &[Layer], key_path: &str, message: impl Into<String>) -> ConfigError {
    let first = key_path.split(['.', '[']).next().unwrap_or(key_path);
    match owner(layers, first) {
        Some(layer) => {
            ConfigError::invalid(layer.source.clone(), layer.key_path(key_path), message)
        }
        None => ConfigError::invalid("defaults", key_path, message),
    }
}

/// Deserialises the merge of `layers` onto `base`, naming the layer of a bad value.
pub fn deserialize_merged<T: DeserializeOwned>(
    base: Value,
    layers: &[Layer],
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(merge(base, layers)).map_err(|e| {
        let path = e.path().to_string();
        attribute(
            layers,
            &path,
            agentcompass_plugin_api::one_line(&e.inner().to_string()),
        )
    })
}

/// Merges component parameters, checking every layer against the component's schema
/// (unknown parameters and wrong types name their layer) and the merge for required ones.
pub fn component_params(
    what: &str,
    schema: &ConfigSchema,
    layers: &[Layer],
) -> Result<Map<String, Value>, ConfigError> {
    for layer in layers {
        layer.check_references()?;
        for (key, value) in &layer.map {
            match schema.get(key) {
                None => {
                    let known: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(layer.error(
                        key,
                        format!(
                            "{what} has no parameter `{key}` (known: {})",
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                }
                Some(field) if !field.kind.accepts(value) && !is_reference(value) => {
                    return Err(layer.error(
                        key,
                        format!(
                            "expected {}, found {}",
                            field.kind.as_str(),
                            json_type_name(value)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    let merged = match merge(Value::Object(Map::new()), layers) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(field) = schema
        .fields
        .iter()
        .find(|f| f.required && merged.get(&f.name).is_none_or(Value::is_null))
    {
        return Err(ConfigError::invalid(
            what.to_string(),
            field.name.clone(),
            "missing required parameter",
        ));
    }
    Ok(merged)
}

/// Whether `value` is a whole-field `${VAR}` reference (type-checked once resolved).
fn is_reference(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| crate::config::whole_field_reference(s).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{ConfigField, ConfigType};
    use serde_json::json;

    fn layer(source: &str, path: &str, value: Value) -> Layer {
        Layer::new(source, path, value.as_object().cloned().unwrap())
    }

    #[test]
    fn later_layers_win_and_errors_name_the_layer() {
        let schema = ConfigSchema::empty()
            .field(ConfigField::new("size", ConfigType::Integer, json!(5), ""))
            .field(ConfigField::new("seed", ConfigType::Integer, json!(0), ""));
        let layers = [
            layer("c.toml", "benchmarks.b", json!({"size": 1, "seed": 2})),
            layer("--benchmark-params", "", json!({"size": 3})),
        ];
        let merged = component_params("benchmark b", &schema, &layers).unwrap();
        assert_eq!(Value::Object(merged), json!({"size": 3, "seed": 2}));
        let bad = [layer("c.toml", "benchmarks.b", json!({"sise": 1}))];
        let err = component_params("benchmark b", &schema, &bad)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "c.toml: benchmarks.b.sise: benchmark b has no parameter `sise` (known: size, seed)"
        );
        let bad = [layer("--benchmark-params", "", json!({"size": "many"}))];
        let err = component_params("benchmark b", &schema, &bad)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--benchmark-params: size: expected integer, found string"
        );
    }

    #[test]
    fn typed_host_fields_resolve_when_the_layer_is_built() {
        use crate::request::field_types::{environment_field_type, execution_field_type};
        let env = |name: &str| match name {
            "N" => Some("8".to_string()),
            "CPUS" => Some("1.5".to_string()),
            "BAD" => Some("many-3f9e".to_string()),
            _ => None,
        };
        let execution = layer(
            "c.toml",
            "execution",
            json!({
                "task_concurrency": "${N}",
                "attempts": {"k": "${N}", "strategy": "${S}"},
                "analysis_params": {"x": "${N}"},
            }),
        );
        let resolved = execution
            .resolve_typed_fields(execution_field_type, &env)
            .unwrap();
        // String fields and untyped keys keep their references until execution.
        assert_eq!(
            Value::Object(resolved.map),
            json!({
                "task_concurrency": 8,
                "attempts": {"k": 8, "strategy": "${S}"},
                "analysis_params": {"x": "${N}"},
            })
        );
        let environment = layer(
            "--env-params",
            "",
            json!({"resources": {"cpu": "${CPUS}"}, "workdir": "${N}", "setup": {"image": "${I}"}}),
        );
        let resolved = environment
            .resolve_typed_fields(environment_field_type, &env)
            .unwrap();
        assert_eq!(
            Value::Object(resolved.map),
            json!({"resources": {"cpu": 1.5}, "workdir": "${N}", "setup": {"image": "${I}"}})
        );
        let err = layer("--execution-params", "", json!({"max_retries": "${BAD}"}))
            .resolve_typed_fields(execution_field_type, &env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--execution-params: max_retries: refers to ${BAD}, whose value is not an integer \
             (expected a whole number such as 42)"
        );
        let err = layer(
            "c.toml",
            "execution",
            json!({"keep_environment": "${UNSET}"}),
        )
        .resolve_typed_fields(execution_field_type, &env)
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "c.toml: execution.keep_environment: refers to ${UNSET}, which is not set; export \
             it or change the value"
        );
    }

    #[test]
    fn merged_deserialisation_blames_the_setting_layer() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            a: u32,
            b: u32,
        }
        let layers = [
            layer("c.toml", "execution", json!({"a": 1})),
            layer("--execution-params", "", json!({"b": "x"})),
        ];
        let err = deserialize_merged::<S>(json!({}), &layers)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--execution-params: b: invalid type"),
            "{err}"
        );
    }
}
