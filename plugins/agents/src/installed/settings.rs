//! The parameters every installed agent takes, validated.

use agentcompass_plugin_api::contracts::{ConfigField, ConfigSchema, ConfigType, RunRequest};
use agentcompass_plugin_api::Result;
use serde_json::{json, Value};

use super::agents::AgentCli;
use crate::params::Params;

/// The default install timeout, in seconds.
const DEFAULT_INSTALL_TIMEOUT_SECONDS: f64 = 1800.0;

/// The public parameters of `agent`'s harness.
pub(crate) fn schema(agent: AgentCli) -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "version",
            ConfigType::String,
            json!(agent.default_version()),
            format!(
                "Version of {} to install ({}) and run",
                agent.package(),
                agent.installer().as_str()
            ),
        ))
        .field(ConfigField::new(
            "registry",
            ConfigType::String,
            Value::Null,
            "Registry the installer uses (npm `--registry`, pip `--index-url`; default: the \
             installer's own)",
        ))
        .field(ConfigField::new(
            "install_timeout_seconds",
            ConfigType::Number,
            json!(DEFAULT_INSTALL_TIMEOUT_SECONDS),
            "Timeout of the one install per machine and platform (the host's install cache)",
        ))
        .field(ConfigField::new(
            "agent_retries",
            ConfigType::Integer,
            json!(1),
            "The agent's own retries of a failed model call, after the gateway's retries",
        ))
        .field(ConfigField::new(
            "extra_args",
            ConfigType::Array,
            json!([]),
            "Arguments added to the agent's command line (before a trailing prompt)",
        ))
}

/// Validated params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// `version`.
    pub(crate) version: String,
    /// `registry`.
    pub(crate) registry: Option<String>,
    /// `install_timeout_seconds`.
    pub(crate) install_timeout_seconds: f64,
    /// `agent_retries`.
    pub(crate) agent_retries: u64,
    /// `extra_args`.
    pub(crate) extra_args: Vec<String>,
    /// The request's `execution.limits.max_turns`, passed to the agents that take one.
    pub(crate) max_turns: Option<u64>,
}

impl Settings {
    /// Reads and validates `req`'s harness params for `agent`.
    pub(crate) fn read(agent: AgentCli, req: &RunRequest) -> Result<Settings> {
        let params = Params::read(agent.id(), &schema(agent), req)?;
        let version = params
            .string("version", true)?
            .unwrap_or_else(|| agent.default_version().to_string());
        let plain = version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
        if !plain || version.starts_with('-') {
            return Err(params.error(
                "version",
                format!("must be a plain version (found `{version}`)"),
            ));
        }
        let extra_args = match req.harness.params.get("extra_args") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    item.as_str().map(str::to_string).ok_or_else(|| {
                        params.error("extra_args", format!("[{i}] must be a string"))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        Ok(Settings {
            version,
            registry: params.string("registry", true)?,
            install_timeout_seconds: params
                .positive_number("install_timeout_seconds")?
                .unwrap_or(DEFAULT_INSTALL_TIMEOUT_SECONDS),
            agent_retries: params.integer("agent_retries", 0)?.unwrap_or(1),
            extra_args,
            max_turns: req.execution.limits.max_turns,
        })
    }
}
