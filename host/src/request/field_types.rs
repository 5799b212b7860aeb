//! The host's own types of the request fields it defines, for a whole-field `${VAR}` that
//! fills one (the rule is in `config::interpolate`): `execution`, the environment's shared
//! fields and the model's scalar fields. Keys are those of the section (array indices as
//! `[]`); a key not listed is a string field, or one the host does not type, and keeps the
//! variable's text. The gateway's settings in `model.params` are typed by
//! [`agentcompass_gateway::gateway_param_type`]; component parameters by their component's schema.

use agentcompass_plugin_api::contracts::ConfigType;

/// The type of the `execution` field at `keys`.
pub fn execution_field_type(keys: &[&str]) -> ConfigType {
    use ConfigType::{Array, Boolean, Integer, Number, Object, String};
    match keys {
        ["task_concurrency" | "max_retries" | "n_tasks"]
        | ["attempts", "k"]
        | ["artifact_limits", "max_mb" | "max_files"]
        | ["limits", "max_tokens" | "max_model_calls" | "max_turns"]
        | ["budget", "max_tokens"] => Integer,
        ["keep_environment" | "enable_analysis" | "save_artifacts"] => Boolean,
        ["retry_min_delay_seconds"
        | "retry_max_delay_seconds"
        | "run_timeout_seconds"
        | "run_timer_compensation_seconds"
        | "evaluation_timeout_seconds"
        | "timeout_multiplier"
        | "run_timeout_multiplier"
        | "evaluation_timeout_multiplier"
        | "setup_timeout_multiplier"
        | "build_timeout_multiplier"
        | "runresult_collect_timeout_seconds"
        | "artifact_collect_timeout_seconds"]
        | ["artifact_limits", "timeout_seconds"]
        | ["artifact_collect", "[]", "timeout_seconds"]
        | ["limits", "max_cost_usd" | "working_seconds"]
        | ["budget", "max_cost_usd"] => Number,
        ["attempts" | "analysis_params" | "artifact_limits" | "limits" | "budget"]
        | ["artifact_collect", "[]"] => Object,
        ["enabled_recipes" | "retry_pattern_list" | "artifacts" | "artifact_collect"
        | "metric_scripts" | "include_tasks" | "exclude_tasks"] => Array,
        _ => String,
    }
}

/// The type of the environment's shared field at `keys` (provider parameters, which the
/// provider's schema types, are strings here).
pub fn environment_field_type(keys: &[&str]) -> ConfigType {
    use ConfigType::{Boolean, Integer, Number, Object, String};
    match keys {
        ["resources" | "run_resources" | "evaluation_resources" | "setup" | "evaluation_setup"] => {
            Object
        }
        ["resources" | "run_resources" | "evaluation_resources", field] => match *field {
            "cpu" => Number,
            "memory_mb" | "storage_mb" | "gpu" => Integer,
            "ignore_gpu_type" => Boolean,
            _ => String,
        },
        ["setup" | "evaluation_setup", "build_timeout_seconds"] => Number,
        ["require_startup_env"] => Boolean,
        _ => String,
    }
}

/// The type of the model's field at `keys` (`params`, a map that keeps its references, is
/// typed at execution).
pub fn model_field_type(keys: &[&str]) -> ConfigType {
    match keys {
        ["wrap_api_key"] => ConfigType::Boolean,
        _ => ConfigType::String,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{
        EnvironmentSpec, ExecutionSpec, ModelSpec, ENVIRONMENT_SHARED_FIELDS, EXECUTION_FIELDS,
    };
    use serde::de::DeserializeOwned;
    use serde_json::{json, Value};

    /// A value of `kind` and one the field must refuse if `kind` is right.
    fn samples(kind: ConfigType) -> (Value, Value) {
        match kind {
            ConfigType::Integer => (json!(3), json!(1.5)),
            ConfigType::Number => (json!(1.5), json!("1.5")),
            ConfigType::Boolean => (json!(true), json!(1)),
            ConfigType::Array => (json!([]), json!({})),
            ConfigType::Object => (json!({}), json!("x")),
            ConfigType::String | ConfigType::Any => (json!("x"), json!(1)),
        }
    }

    /// `{k0: {k1: ... value}}`, an array for `[]`.
    fn nest(keys: &[&str], value: Value) -> Value {
        keys.iter().rev().fold(value, |inner, key| match *key {
            "[]" => json!([inner]),
            key => Value::Object(serde_json::Map::from_iter([(key.to_string(), inner)])),
        })
    }

    /// The table agrees with the struct: a value of the listed type deserialises, a value of
    /// a neighbouring type does not. `base` fills the required siblings of a nested field.
    fn check<T: DeserializeOwned>(types: fn(&[&str]) -> ConfigType, keys: &[&str], base: Value) {
        let kind = types(keys);
        let (good, bad) = samples(kind);
        let with = |value: Value| {
            let mut doc = nest(keys, value);
            if let (Some(doc), Some(base)) = (doc.as_object_mut(), base.as_object()) {
                for (k, v) in base {
                    doc.entry(k.clone()).or_insert(v.clone());
                }
            }
            serde_json::from_value::<T>(doc)
        };
        assert!(with(good.clone()).is_ok(), "{keys:?} takes {kind:?} {good}");
        assert!(with(bad.clone()).is_err(), "{keys:?} refuses {bad}");
    }

    #[test]
    fn execution_types_match_the_execution_spec() {
        for field in EXECUTION_FIELDS {
            assert_ne!(
                execution_field_type(&[field]),
                ConfigType::String,
                "{field}"
            );
            check::<ExecutionSpec>(execution_field_type, &[field], json!({}));
        }
        for keys in [
            &["attempts", "k"][..],
            &["artifact_limits", "max_mb"],
            &["artifact_limits", "max_files"],
            &["artifact_limits", "timeout_seconds"],
        ] {
            check::<ExecutionSpec>(execution_field_type, keys, json!({}));
        }
        let value = json!({"artifact_collect": [{"command": "true", "timeout_seconds": "${T}"}]});
        let mut collect = value.clone();
        collect["artifact_collect"][0]["timeout_seconds"] = json!(2.5);
        assert!(serde_json::from_value::<ExecutionSpec>(collect).is_ok());
        assert!(serde_json::from_value::<ExecutionSpec>(value).is_err());
        assert_eq!(
            execution_field_type(&["artifact_collect", "[]", "timeout_seconds"]),
            ConfigType::Number
        );
        assert_eq!(
            execution_field_type(&["attempts", "strategy"]),
            ConfigType::String
        );
        assert_eq!(
            execution_field_type(&["analysis_params", "x"]),
            ConfigType::String
        );
    }

    #[test]
    fn environment_types_match_the_environment_spec() {
        for field in ["resources", "run_resources", "evaluation_resources"] {
            for inner in ["cpu", "memory_mb", "storage_mb", "gpu", "ignore_gpu_type"] {
                check::<EnvironmentSpec>(environment_field_type, &[field, inner], json!({}));
            }
            assert_eq!(
                environment_field_type(&[field, "gpu_type"]),
                ConfigType::String
            );
        }
        for field in ["setup", "evaluation_setup"] {
            check::<EnvironmentSpec>(
                environment_field_type,
                &[field, "build_timeout_seconds"],
                json!({}),
            );
            assert_eq!(
                environment_field_type(&[field, "image"]),
                ConfigType::String
            );
        }
        for field in ENVIRONMENT_SHARED_FIELDS {
            if environment_field_type(&[field]) != ConfigType::String {
                check::<EnvironmentSpec>(environment_field_type, &[field], json!({}));
            }
        }
        // Provider parameters are typed by the provider's schema, not here.
        assert_eq!(environment_field_type(&["workdir"]), ConfigType::String);
    }

    #[test]
    fn model_types_match_the_model_spec() {
        check::<ModelSpec>(model_field_type, &["wrap_api_key"], json!({"id": "m"}));
        assert_eq!(model_field_type(&["params"]), ConfigType::String);
    }
}
