//! The registry id and the validated parameters of the `terminus` harness (a leaf: the
//! other `terminus` modules import it, it imports none of them).

use agentcompass_plugin_api::contracts::{ConfigField, ConfigSchema, ConfigType, RunRequest};
use agentcompass_plugin_api::Result;
use serde_json::json;

use crate::params::Params;

/// Registry id.
pub const ID: &str = "terminus";

/// The public parameters.
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "max_turns",
            ConfigType::Integer,
            json!(30),
            "Model calls before the run stops with a `turn_limit` issue",
        ))
        .field(ConfigField::new(
            "command_timeout_seconds",
            ConfigType::Number,
            json!(120),
            "Timeout of one bash command (also capped by the remaining run time)",
        ))
        .field(ConfigField::new(
            "max_output_chars",
            ConfigType::Integer,
            json!(10_000),
            "Command output shown to the model, in characters (head and tail kept)",
        ))
        .field(ConfigField::new(
            "cost_limit_usd",
            ConfigType::Number,
            json!(null),
            "Stop with a `cost_limit` issue once the summed model cost exceeds this (needs \
             prices known to the gateway)",
        ))
        .field(ConfigField::new(
            "request_timeout_seconds",
            ConfigType::Number,
            json!(null),
            "Per-call model request timeout in seconds (default: the gateway's)",
        ))
}

/// Validated params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// Model calls before the run stops (`max_turns`, or the request's
    /// `execution.limits.max_turns` when lower).
    pub(crate) max_turns: u64,
    /// `max_turns` is the request's `execution.limits.max_turns` (reaching it is a
    /// `limit_exceeded` issue, not the harness's own `turn_limit`).
    pub(crate) turns_limited_by_request: bool,
    /// Timeout of one bash command (`command_timeout_seconds`).
    pub(crate) command_timeout_seconds: f64,
    /// Command output shown to the model, in characters (`max_output_chars`).
    pub(crate) max_output_chars: usize,
    /// Summed model cost that stops the run (`cost_limit_usd`).
    pub(crate) cost_limit_usd: Option<f64>,
    /// Per-call model request timeout (`request_timeout_seconds`).
    pub(crate) request_timeout_seconds: Option<f64>,
}

impl Settings {
    /// Reads and validates the harness params of `req`.
    pub(crate) fn read(req: &RunRequest) -> Result<Self> {
        let params = Params::read(ID, &schema(), req)?;
        let max_output_chars = params.integer("max_output_chars", 100)?.unwrap_or(10_000);
        let own_max_turns = params.integer("max_turns", 1)?.unwrap_or(30);
        let request_max_turns = req
            .execution
            .limits
            .max_turns
            .filter(|n| *n < own_max_turns);
        Ok(Settings {
            max_turns: request_max_turns.unwrap_or(own_max_turns),
            turns_limited_by_request: request_max_turns.is_some(),
            command_timeout_seconds: params
                .positive_number("command_timeout_seconds")?
                .unwrap_or(120.0),
            max_output_chars: usize::try_from(max_output_chars)
                .map_err(|_| params.error("max_output_chars", "is too large"))?,
            cost_limit_usd: params.positive_number("cost_limit_usd")?,
            request_timeout_seconds: params.positive_number("request_timeout_seconds")?,
        })
    }
}
