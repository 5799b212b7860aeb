//! The request a run executes: its `${VAR}` references resolved from the environment (in
//! memory only: printed and persisted requests keep them as written) and converted by the
//! type of the field each fills. The rule is in `config::interpolate`.

use agentcompass_plugin_api::contracts::{ComponentKind, ConfigSchema, ConfigType, RunRequest};
use serde_json::Value;

use crate::config::{replace_references, resolve_as, ConfigError};
use crate::registry::Registry;
use agentcompass_gateway::gateway_param_type;

/// A request with its references resolved.
#[derive(Debug)]
pub struct ResolvedRequest {
    /// The request as it executes.
    pub request: RunRequest,
    /// The text of every variable it refers to, and every string inside a value converted
    /// from JSON text: what the caller registers as secrets.
    pub values: Vec<String>,
}

/// The declared schemas of a request's components (`None`: not registered, or harness
/// `none`).
struct Schemas<'a> {
    benchmark: Option<&'a ConfigSchema>,
    harness: Option<&'a ConfigSchema>,
    environment: Option<&'a ConfigSchema>,
}

impl Schemas<'_> {
    /// The type of the request field at `keys`: a component parameter's declared type, a
    /// gateway setting's type; a string for everything else (a parameter the schema does not
    /// declare, a model generation parameter, a key inside an object parameter, a string
    /// field). The host's other typed fields were converted when the request was built.
    fn field_type(&self, keys: &[&str]) -> ConfigType {
        let declared = |schema: Option<&ConfigSchema>, key: &str| {
            schema
                .and_then(|s| s.get(key))
                .map_or(ConfigType::String, |field| field.kind)
        };
        match keys {
            ["benchmark", "params", key] => declared(self.benchmark, key),
            ["harness", "params", key] => declared(self.harness, key),
            ["environment", "params", key] => declared(self.environment, key),
            ["model", "params", rest @ ..] => {
                gateway_param_type(rest).unwrap_or(ConfigType::String)
            }
            _ => ConfigType::String,
        }
    }
}

/// Every string leaf of `value`.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

/// `request` with every whole-field `${VAR}` outside environment-variable maps resolved from
/// `env` and converted by the type of its field (the components' schemas come from
/// `registry`). An unset variable or a value that does not convert is an error naming the
/// key path, the variable and the expected type, never the value.
pub fn resolve_request_references(
    registry: &Registry,
    request: &RunRequest,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedRequest, ConfigError> {
    let schema = |kind, id: &str| {
        registry
            .find(kind, id)
            .map(|entry| &entry.info.config_schema)
    };
    let schemas = Schemas {
        benchmark: schema(ComponentKind::Benchmark, &request.benchmark.id),
        harness: (!request.is_harness_free())
            .then(|| schema(ComponentKind::Harness, &request.harness.id))
            .flatten(),
        environment: schema(ComponentKind::Environment, &request.environment.id),
    };
    resolve_with(&schemas, request, env)
}

fn resolve_with(
    schemas: &Schemas<'_>,
    request: &RunRequest,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedRequest, ConfigError> {
    let unreadable = |e: serde_json::Error| ConfigError::invalid("request", "", e.to_string());
    let value = serde_json::to_value(request).map_err(unreadable)?;
    let mut values = Vec::new();
    let resolved = replace_references("", &value, &mut |site| {
        let keys: Vec<&str> = site.keys.iter().map(String::as_str).collect();
        let kind = schemas.field_type(&keys);
        let converted = resolve_as("environment", site.path, site.name, kind, env)?;
        values.extend(env(site.name));
        if converted.is_array() || converted.is_object() {
            strings(&converted, &mut values);
        }
        Ok(Some(converted))
    })?;
    Ok(ResolvedRequest {
        request: serde_json::from_value(resolved).map_err(unreadable)?,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{
        BenchmarkSpec, ConfigField, EnvironmentSpec, HarnessSpec, ModelSpec,
    };
    use serde_json::json;

    fn schemas() -> (ConfigSchema, ConfigSchema) {
        let benchmark = ConfigSchema::empty()
            .field(ConfigField::new("seed", ConfigType::Integer, json!(0), ""))
            .field(ConfigField::new(
                "strict",
                ConfigType::Boolean,
                json!(false),
                "",
            ))
            .field(ConfigField::new(
                "ratio",
                ConfigType::Number,
                json!(null),
                "",
            ))
            .field(ConfigField::new("ids", ConfigType::Array, json!(null), ""))
            .field(ConfigField::new(
                "extra",
                ConfigType::Object,
                json!(null),
                "",
            ))
            .field(ConfigField::new(
                "name",
                ConfigType::String,
                json!(null),
                "",
            ))
            .field(ConfigField::new("free", ConfigType::Any, json!(null), ""));
        let harness = ConfigSchema::empty().field(ConfigField::new(
            "steps",
            ConfigType::Integer,
            json!(1),
            "",
        ));
        (benchmark, harness)
    }

    fn env(name: &str) -> Option<String> {
        let value = match name {
            "SEED" => "4242",
            "STRICT" => "yes",
            "RATIO" => "0.25",
            "IDS" => r#"["a", "b"]"#,
            "EXTRA" => r#"{"depth": "${NOT_RESOLVED}", "n": 2}"#,
            "TEXT" => "007",
            "RETRIES" => "2",
            "PRICE" => "1.5",
            "BAD" => "not-a-number-91c2",
            _ => return None,
        };
        Some(value.to_string())
    }

    fn request(benchmark: Value, harness: Value, model: Value) -> RunRequest {
        let mut request = RunRequest {
            model: ModelSpec::new("m"),
            benchmark: BenchmarkSpec::new("b"),
            harness: HarnessSpec::new("h"),
            environment: EnvironmentSpec::new("e"),
            ..RunRequest::default()
        };
        request.benchmark.params = benchmark.as_object().cloned().unwrap();
        request.harness.params = harness.as_object().cloned().unwrap();
        request.model.params = model.as_object().cloned().unwrap();
        request
    }

    fn field_types(request: &RunRequest) -> Result<ResolvedRequest, ConfigError> {
        let (benchmark, harness) = schemas();
        let schemas = Schemas {
            benchmark: Some(&benchmark),
            harness: Some(&harness),
            environment: None,
        };
        resolve_with(&schemas, request, &env)
    }

    #[test]
    fn references_convert_by_the_declared_type() {
        let written = request(
            json!({
                "seed": "${SEED}", "strict": "${STRICT}", "ratio": "${RATIO}", "ids": "${IDS}",
                "extra": "${EXTRA}", "name": "${TEXT}", "free": "${SEED}", "undeclared": "${SEED}",
            }),
            json!({"steps": "${SEED}"}),
            json!({"max_retries": "${RETRIES}", "pricing": {"input": "${PRICE}"},
                   "temperature": "${RATIO}"}),
        );
        let resolved = field_types(&written).unwrap();
        assert_eq!(
            Value::Object(resolved.request.benchmark.params),
            json!({
                "seed": 4242, "strict": true, "ratio": 0.25, "ids": ["a", "b"],
                // Inside a converted object nothing is resolved again.
                "extra": {"depth": "${NOT_RESOLVED}", "n": 2},
                // String and `any` parameters, and keys nobody declares, keep the text.
                "name": "007", "free": "4242", "undeclared": "4242",
            })
        );
        assert_eq!(resolved.request.harness.params["steps"], json!(4242));
        // Gateway settings take the gateway's types; generation parameters keep the text.
        assert_eq!(
            Value::Object(resolved.request.model.params),
            json!({"max_retries": 2, "pricing": {"input": 1.5}, "temperature": "0.25"})
        );
        for value in ["4242", r#"["a", "b"]"#, "a", "b", "${NOT_RESOLVED}", "007"] {
            assert!(resolved.values.iter().any(|v| v == value), "{value}");
        }
        // The written request is untouched.
        assert_eq!(written.benchmark.params["seed"], json!("${SEED}"));
    }

    #[test]
    fn a_value_that_does_not_convert_names_key_variable_and_type() {
        for (benchmark, model, expected) in [
            (
                json!({"seed": "${BAD}"}),
                json!({}),
                "environment: benchmark.params.seed: refers to ${BAD}, whose value is not an \
                 integer (expected a whole number such as 42)",
            ),
            (
                json!({"ids": "${SEED}"}),
                json!({}),
                "environment: benchmark.params.ids: refers to ${SEED}, whose value is not an \
                 array (expected a JSON array such as [\"a\", \"b\"])",
            ),
            (
                json!({}),
                json!({"timeout": "${BAD}"}),
                "environment: model.params.timeout: refers to ${BAD}, whose value is not a \
                 number (expected a number such as 1.5)",
            ),
            (
                json!({"strict": "${UNSET}"}),
                json!({}),
                "environment: benchmark.params.strict: refers to ${UNSET}, which is not set; \
                 export it or change the value",
            ),
        ] {
            let err = field_types(&request(benchmark, json!({}), model))
                .unwrap_err()
                .to_string();
            assert_eq!(err, expected);
            assert!(!err.contains("not-a-number"), "{err}");
        }
    }

    #[test]
    fn registry_schemas_type_the_params() {
        let registry = Registry::with_builtins(&agentcompass_builtins::all());
        let mut written = RunRequest {
            model: ModelSpec::new("m"),
            benchmark: BenchmarkSpec::new("not-registered"),
            harness: HarnessSpec::new("none"),
            environment: EnvironmentSpec::new("host_process"),
            ..RunRequest::default()
        };
        written.environment.params = json!({"workdir": "${TEXT}"}).as_object().cloned().unwrap();
        written.benchmark.params = json!({"seed": "${SEED}"}).as_object().cloned().unwrap();
        let resolved = resolve_request_references(&registry, &written, &env).unwrap();
        // host_process declares workdir a string; an unknown benchmark declares nothing.
        assert_eq!(resolved.request.environment.params["workdir"], json!("007"));
        assert_eq!(resolved.request.benchmark.params["seed"], json!("4242"));
    }
}
