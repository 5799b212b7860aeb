//! The gateway's own settings, taken out of `model.params` (everything else there is a
//! generation parameter sent to the endpoint): `max_retries` (default 3), `timeout` (seconds
//! per request, default 600), `retry_backoff_seconds` (first backoff, doubled each retry,
//! default 1), `pricing` (US dollars per million tokens: `input`, `output`,
//! `cached_input`; over the pinned price table's, module `prices`), `max_connections` (the most requests to the endpoint at once; default: the
//! run's task concurrency), `adaptive_concurrency` (default `true`: the limit halves when the
//! endpoint rate-limits and grows back while it answers) and `max_rate_limit_wait_seconds`
//! (how long one call may wait out rate limits, which do not count against `max_retries`;
//! default 1800).

use std::time::Duration;

use agentcompass_plugin_api::contracts::{ConfigType, JsonMap, TokenUsage};
use serde_json::Value;

use super::GatewayError;

/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

const DEFAULT_MAX_RETRIES: u32 = 3;
const DEFAULT_TIMEOUT_SECONDS: f64 = 600.0;
const DEFAULT_BACKOFF_SECONDS: f64 = 1.0;
const DEFAULT_MAX_RATE_LIMIT_WAIT_SECONDS: f64 = 1800.0;

/// The type of the gateway setting at `keys` inside `model.params` (a whole-field `${VAR}`
/// there converts to it); `None` for a generation parameter, which goes to the endpoint with
/// the variable's text: its type is the endpoint's.
pub fn gateway_param_type(keys: &[&str]) -> Option<ConfigType> {
    match keys {
        ["max_retries" | "max_connections"] => Some(ConfigType::Integer),
        ["timeout" | "retry_backoff_seconds" | "max_rate_limit_wait_seconds"] => {
            Some(ConfigType::Number)
        }
        ["adaptive_concurrency"] => Some(ConfigType::Boolean),
        ["pricing"] => Some(ConfigType::Object),
        ["pricing", "input" | "output" | "cached_input"] => Some(ConfigType::Number),
        _ => None,
    }
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cached input tokens (defaults to `input`).
    pub cached_input: f64,
}

impl Pricing {
    /// The cost of `usage`.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let uncached = usage.prompt_tokens - cached;
        (uncached as f64 * self.input
            + cached as f64 * self.cached_input
            + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Gateway settings plus the remaining generation parameters.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Retries after the first try.
    pub max_retries: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// First backoff.
    pub backoff: Duration,
    /// `model.params.pricing`, when set (it overrides the price table: `prices`).
    pub pricing: Option<Pricing>,
    /// The most requests to the endpoint at once (`None`: the run's task concurrency).
    pub max_connections: Option<u32>,
    /// Whether the limit adapts to the endpoint's rate limits.
    pub adaptive_concurrency: bool,
    /// How long one call may wait out rate limits before it fails.
    pub max_rate_limit_wait: Duration,
    /// What is sent to the endpoint.
    pub generation_params: JsonMap,
}

fn bad(key: &str, expected: &str, found: &Value) -> GatewayError {
    GatewayError::Config {
        message: format!("model.params.{key}: expected {expected}, found {found}"),
    }
}

fn seconds(key: &str, value: &Value) -> Result<Duration, GatewayError> {
    value
        .as_f64()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| bad(key, "a positive number of seconds", value))
}

fn price(key: &str, table: &JsonMap, field: &str) -> Result<Option<f64>, GatewayError> {
    match table.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .filter(|p| p.is_finite() && *p >= 0.0)
            .map(Some)
            .ok_or_else(|| bad(&format!("{key}.{field}"), "a non-negative number", value)),
    }
}

impl GatewaySettings {
    /// Splits `params` into gateway settings and generation parameters.
    pub fn from_params(params: &JsonMap) -> Result<Self, GatewayError> {
        let mut generation_params = params.clone();
        let max_retries = match generation_params.remove("max_retries") {
            None | Some(Value::Null) => DEFAULT_MAX_RETRIES,
            Some(value) => value
                .as_u64()
                .filter(|n| *n <= 20)
                .map(|n| n as u32)
                .ok_or_else(|| bad("max_retries", "an integer from 0 to 20", &value))?,
        };
        let timeout = match generation_params.remove("timeout") {
            None | Some(Value::Null) => Duration::from_secs_f64(DEFAULT_TIMEOUT_SECONDS),
            Some(value) => seconds("timeout", &value)?,
        };
        let backoff = match generation_params.remove("retry_backoff_seconds") {
            None | Some(Value::Null) => Duration::from_secs_f64(DEFAULT_BACKOFF_SECONDS),
            Some(value) => {
                let zero = value.as_f64() == Some(0.0);
                if zero {
                    Duration::ZERO
                } else {
                    seconds("retry_backoff_seconds", &value)?
                }
            }
        };
        let max_connections = match generation_params.remove("max_connections") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .filter(|n| (1..=100_000).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| bad("max_connections", "an integer from 1 to 100000", &value))?,
            ),
        };
        let adaptive_concurrency = match generation_params.remove("adaptive_concurrency") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(adaptive)) => adaptive,
            Some(value) => return Err(bad("adaptive_concurrency", "true or false", &value)),
        };
        let max_rate_limit_wait = match generation_params.remove("max_rate_limit_wait_seconds") {
            None | Some(Value::Null) => {
                Duration::from_secs_f64(DEFAULT_MAX_RATE_LIMIT_WAIT_SECONDS)
            }
            Some(value) => seconds("max_rate_limit_wait_seconds", &value)?,
        };
        let pricing = match generation_params.remove("pricing") {
            None | Some(Value::Null) => None,
            Some(Value::Object(table)) => {
                for key in table.keys() {
                    if !["input", "output", "cached_input"].contains(&key.as_str()) {
                        return Err(bad(
                            &format!("pricing.{key}"),
                            "one of input, output, cached_input",
                            &Value::String(key.clone()),
                        ));
                    }
                }
                let input = price("pricing", &table, "input")?.unwrap_or(0.0);
                Some(Pricing {
                    input,
                    output: price("pricing", &table, "output")?.unwrap_or(0.0),
                    cached_input: price("pricing", &table, "cached_input")?.unwrap_or(input),
                })
            }
            Some(other) => {
                return Err(bad(
                    "pricing",
                    "a table of prices per million tokens",
                    &other,
                ))
            }
        };
        Ok(GatewaySettings {
            max_retries,
            timeout,
            backoff,
            pricing,
            max_connections,
            adaptive_concurrency,
            max_rate_limit_wait,
            generation_params,
        })
    }

    /// The wait before retry number `attempt` (1-based): the first backoff doubled each time.
    pub fn backoff(&self, attempt: u32) -> Duration {
        self.backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(MAX_BACKOFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> JsonMap {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn gateway_keys_are_taken_out_of_the_generation_params() {
        let settings = GatewaySettings::from_params(&params(json!({
            "temperature": 0, "max_retries": 1, "timeout": 5, "retry_backoff_seconds": 0,
            "pricing": {"input": 2.0, "output": 8.0}
        })))
        .unwrap();
        assert_eq!(settings.max_retries, 1);
        assert_eq!(settings.timeout, Duration::from_secs(5));
        assert_eq!(settings.backoff(3), Duration::ZERO);
        assert_eq!(
            settings.generation_params,
            params(json!({"temperature": 0}))
        );
        let pricing = settings.pricing.unwrap();
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: 0,
            ..TokenUsage::default()
        };
        assert!((pricing.cost(&usage) - 6.0).abs() < 1e-9);
    }

    #[test]
    fn defaults_and_backoff_growth() {
        let settings = GatewaySettings::from_params(&JsonMap::new()).unwrap();
        assert_eq!(settings.max_retries, 3);
        assert_eq!(settings.backoff(1), Duration::from_secs(1));
        assert_eq!(settings.backoff(3), Duration::from_secs(4));
        assert_eq!(settings.backoff(30), MAX_BACKOFF);
        assert!(settings.pricing.is_none());
    }

    #[test]
    fn bad_settings_name_the_field() {
        for (value, field) in [
            (json!({"max_retries": -1}), "model.params.max_retries"),
            (json!({"timeout": "soon"}), "model.params.timeout"),
            (
                json!({"pricing": {"inptu": 1}}),
                "model.params.pricing.inptu",
            ),
            (
                json!({"pricing": {"input": -1}}),
                "model.params.pricing.input",
            ),
        ] {
            let err = GatewaySettings::from_params(&params(value))
                .unwrap_err()
                .to_string();
            assert!(err.contains(field), "{err}");
        }
    }

    #[test]
    fn gateway_param_types_are_what_the_settings_accept() {
        let sample = |kind| match kind {
            Some(ConfigType::Integer) => json!(2),
            Some(ConfigType::Number) => json!(2.5),
            Some(ConfigType::Object) => json!({}),
            other => panic!("{other:?}"),
        };
        for key in ["max_retries", "timeout", "retry_backoff_seconds", "pricing"] {
            let value = sample(gateway_param_type(&[key]));
            let settings = GatewaySettings::from_params(&params(json!({ key: value })));
            assert!(settings.is_ok(), "{key}");
        }
        for field in ["input", "output", "cached_input"] {
            let value = sample(gateway_param_type(&["pricing", field]));
            let settings =
                GatewaySettings::from_params(&params(json!({"pricing": { field: value }})));
            assert!(settings.is_ok(), "pricing.{field}");
        }
        assert_eq!(
            gateway_param_type(&["max_retries"]),
            Some(ConfigType::Integer)
        );
        assert_eq!(gateway_param_type(&["temperature"]), None);
        assert_eq!(gateway_param_type(&["pricing", "other"]), None);
    }
}
