//! The `execution` and `runtime` sections: attempts, limits, budgets and the run's runtime
//! options, checked.

use agentcompass_plugin_api::contracts::{
    AttemptLimits, Budget, ExecutionSpec, RunRuntimeSpec, EXECUTION_FIELDS,
};
use serde_json::{Map, Value};

use crate::config::ConfigError;
use crate::request::field_types::execution_field_type;
use crate::request::layers::{attribute, deserialize_merged, Layer};

use super::with_typed_fields;

/// `ExecutionSpec` from layers over the defaults; keys must be ExecutionSpec fields and values
/// within range.
pub fn execution_spec(layers: &[Layer]) -> Result<ExecutionSpec, ConfigError> {
    check_execution_keys(layers)?;
    let layers = &with_typed_fields(layers, execution_field_type)?;
    let base = serde_json::to_value(ExecutionSpec::default()).unwrap_or(Value::Null);
    let spec: ExecutionSpec = deserialize_merged(base, layers)?;
    check_execution(&spec).map_err(|(key, message)| attribute(layers, key, message))?;
    Ok(spec)
}

/// Refuses unknown keys in each layer's `execution` and its `attempts`, `limits` and `budget`.
fn check_execution_keys(layers: &[Layer]) -> Result<(), ConfigError> {
    for layer in layers {
        layer.check_keys(EXECUTION_FIELDS)?;
        layer.check_references()?;
        if let Some(Value::Object(attempts)) = layer.map.get("attempts") {
            Layer::new(
                layer.source.clone(),
                layer.key_path("attempts"),
                attempts.clone(),
            )
            .check_keys(&["k", "strategy"])?;
        }
        for (key, allowed) in [("limits", LIMIT_KEYS), ("budget", BUDGET_KEYS)] {
            if let Some(Value::Object(map)) = layer.map.get(key) {
                Layer::new(layer.source.clone(), layer.key_path(key), map.clone())
                    .check_keys(allowed)?;
            }
        }
    }
    Ok(())
}

/// The contract rules of a merged execution spec: the key that breaks one and why.
fn check_execution(spec: &ExecutionSpec) -> Result<(), (&'static str, String)> {
    let bad = |key: &'static str, message: String| Err((key, message));
    if let Some(script) = spec
        .metric_scripts
        .iter()
        .find(|s| !std::path::Path::new(s).is_file())
    {
        return bad(
            "metric_scripts",
            format!("expected an existing script file, found no file at {script}"),
        );
    }
    if spec.task_concurrency < 1 {
        return bad("task_concurrency", "must be at least 1".into());
    }
    if spec.n_tasks == Some(0) {
        return bad("n_tasks", "expected at least 1, found 0".into());
    }
    for (key, globs) in [
        ("include_tasks", &spec.include_tasks),
        ("exclude_tasks", &spec.exclude_tasks),
    ] {
        if let Err(error) = crate::request::task_globs::TaskGlobs::new(globs) {
            return bad(key, error.to_string());
        }
    }
    if spec.attempts.k < 1 {
        return bad("attempts", "attempts.k must be at least 1".into());
    }
    for (key, value) in [
        (
            "retry_min_delay_seconds",
            Some(spec.retry_min_delay_seconds),
        ),
        (
            "retry_max_delay_seconds",
            Some(spec.retry_max_delay_seconds),
        ),
        (
            "run_timer_compensation_seconds",
            Some(spec.run_timer_compensation_seconds),
        ),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v < 0.0) {
            return bad(key, format!("expected seconds ≥ 0, found {v}"));
        }
    }
    if spec.retry_max_delay_seconds < spec.retry_min_delay_seconds {
        return bad(
            "retry_max_delay_seconds",
            "must not be below retry_min_delay_seconds".into(),
        );
    }
    check_timeouts(spec)?;
    if let Err((field, message)) = check_limits(&spec.limits) {
        return bad("limits", format!("limits.{field}: {message}"));
    }
    if let Some(budget) = &spec.budget {
        if let Err((field, message)) = check_budget(budget) {
            return bad("budget", format!("budget.{field}: {message}"));
        }
    }
    Ok(())
}

/// Timeouts and multipliers: positive and finite, or unset.
fn check_timeouts(spec: &ExecutionSpec) -> Result<(), (&'static str, String)> {
    for (key, value) in [
        ("run_timeout_seconds", spec.run_timeout_seconds),
        (
            "evaluation_timeout_seconds",
            spec.evaluation_timeout_seconds,
        ),
        (
            "artifact_collect_timeout_seconds",
            spec.artifact_collect_timeout_seconds,
        ),
        (
            "runresult_collect_timeout_seconds",
            Some(spec.runresult_collect_timeout_seconds),
        ),
        ("timeout_multiplier", Some(spec.timeout_multiplier)),
        ("run_timeout_multiplier", spec.run_timeout_multiplier),
        (
            "evaluation_timeout_multiplier",
            spec.evaluation_timeout_multiplier,
        ),
        ("setup_timeout_multiplier", spec.setup_timeout_multiplier),
        ("build_timeout_multiplier", spec.build_timeout_multiplier),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return Err((
                key,
                format!("expected a positive finite number or null, found {v}"),
            ));
        }
    }
    Ok(())
}

/// The keys of `execution.limits`.
pub const LIMIT_KEYS: &[&str] = &[
    "max_tokens",
    "max_cost_usd",
    "max_model_calls",
    "max_turns",
    "working_seconds",
];

/// The keys of `execution.budget` and `runtime.budget`.
pub const BUDGET_KEYS: &[&str] = &["max_cost_usd", "max_tokens", "on_exhausted"];

/// Every set limit is positive: counts at least 1, amounts positive and finite.
fn check_limits(limits: &AttemptLimits) -> Result<(), (&'static str, String)> {
    for (field, value) in [
        ("max_tokens", limits.max_tokens),
        ("max_model_calls", limits.max_model_calls),
        ("max_turns", limits.max_turns),
    ] {
        if value == Some(0) {
            return Err((field, "expected at least 1, found 0".into()));
        }
    }
    for (field, value) in [
        ("max_cost_usd", limits.max_cost_usd),
        ("working_seconds", limits.working_seconds),
    ] {
        if let Some(v) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return Err((field, format!("expected a positive number, found {v}")));
        }
    }
    Ok(())
}

/// A budget limits something (cost or tokens), each positive.
pub fn check_budget(budget: &Budget) -> Result<(), (&'static str, String)> {
    if budget.max_cost_usd.is_none() && budget.max_tokens.is_none() {
        return Err((
            "max_cost_usd",
            "a budget needs max_cost_usd or max_tokens, found neither".into(),
        ));
    }
    if budget.max_tokens == Some(0) {
        return Err(("max_tokens", "expected at least 1, found 0".into()));
    }
    if let Some(v) = budget.max_cost_usd.filter(|v| !v.is_finite() || *v <= 0.0) {
        return Err((
            "max_cost_usd",
            format!("expected a positive number, found {v}"),
        ));
    }
    Ok(())
}

/// `RunRuntimeSpec` from layers (`reuse`, `reuse_run_id`, `checkpoint_resume`); a non-empty
/// `reuse_run_id` implies reuse.
pub fn run_runtime_spec(layers: &[Layer]) -> Result<RunRuntimeSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(&[
            "reuse",
            "reuse_run_id",
            "checkpoint_resume",
            "rerun",
            "rerun_invalid",
        ])?;
    }
    let mut spec: RunRuntimeSpec = deserialize_merged(Value::Object(Map::new()), layers)?;
    for entry in &spec.rerun {
        let well_formed = !entry.is_empty()
            && entry
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(attribute(
                layers,
                "rerun",
                format!(
                    "expected failure classes ({}) or issue codes (snake_case), found `{entry}`",
                    crate::issue_codes::FailureClass::ALL
                        .map(|c| c.as_str())
                        .join(", ")
                ),
            ));
        }
    }
    if (!spec.rerun.is_empty() || spec.rerun_invalid) && spec.reuse != Some(true) {
        let key = if spec.rerun.is_empty() {
            "rerun_invalid"
        } else {
            "rerun"
        };
        return Err(attribute(
            layers,
            key,
            format!("{key} picks tasks of a reused run, but reuse is off (add --reuse)"),
        ));
    }
    if !spec.reuse_run_id.is_empty() {
        if spec.reuse == Some(false) {
            return Err(attribute(
                layers,
                "reuse_run_id",
                "reuse_run_id needs reuse, but reuse is false",
            ));
        }
        spec.reuse = Some(true);
    }
    Ok(spec)
}
