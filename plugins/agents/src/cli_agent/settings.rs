//! The registry id and the validated parameters of the `cli_agent` harness (a leaf: the other
//! `cli_agent` modules import it, it imports none of them).

use agentcompass_plugin_api::contracts::{ConfigField, ConfigSchema, ConfigType, RunRequest};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use crate::params::Params;

/// Registry id.
pub const ID: &str = "cli_agent";

/// The public parameters.
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(
            ConfigField::new(
                "command",
                ConfigType::String,
                json!(null),
                "The agent command, run with `bash -c` in the task workspace (or the \
                 environment's default workdir); it gets the model endpoint and the instruction \
                 through OPENAI_*/ANTHROPIC_*/AGENTCOMPASS_* variables",
            )
            .required(),
        )
        .field(ConfigField::new(
            "package",
            ConfigType::String,
            json!(null),
            "The agent's pinned package, `npm:NAME@VERSION` or `pip:NAME==VERSION`: the host \
             installs it once per machine into its install cache and mounts it read-only; its \
             executables are first on the command's PATH (a failed install is the task's \
             fatal `agent_install_failed`)",
        ))
        .field(ConfigField::new(
            "registry",
            ConfigType::String,
            json!(null),
            "The npm registry or pip index URL of `package` (default: the installer's)",
        ))
        .field(ConfigField::new(
            "install_command",
            ConfigType::String,
            json!(null),
            "Run first with `bash -c` inside the task (no model variables; prefer `package`, \
             which also works in `no-network` tasks); a failure is the task's fatal \
             `agent_install_failed` and skips `command`",
        ))
        .field(ConfigField::new(
            "install_timeout_seconds",
            ConfigType::Number,
            json!(600),
            "Timeout of `package`'s install or of `install_command`",
        ))
        .field(ConfigField::new(
            "output_files",
            ConfigType::Array,
            json!(null),
            "Absolute paths read after the run (e.g. a trajectory JSON the CLI writes): JSON \
             files are kept parsed, others as a text tail, in the run step's observations",
        ))
        .field(ConfigField::new(
            "answer_file",
            ConfigType::String,
            json!(null),
            "Absolute path of a file holding the final answer (default: the stdout tail)",
        ))
        .field(ConfigField::new(
            "max_output_chars",
            ConfigType::Integer,
            json!(10_000),
            "Characters of stdout/stderr kept in the trajectory (head and tail) and of the \
             stdout tail used as the answer",
        ))
}

/// Validated params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// The agent command (`command`).
    pub(crate) command: String,
    /// The agent's pinned package (`package`).
    pub(crate) package: Option<super::package::Package>,
    /// Its registry or index (`registry`).
    pub(crate) registry: Option<String>,
    /// Run before the agent command (`install_command`).
    pub(crate) install_command: Option<String>,
    /// Timeout of the install command (`install_timeout_seconds`).
    pub(crate) install_timeout_seconds: f64,
    /// Files read after the run (`output_files`).
    pub(crate) output_files: Vec<String>,
    /// File holding the final answer (`answer_file`).
    pub(crate) answer_file: Option<String>,
    /// Characters of output kept (`max_output_chars`).
    pub(crate) max_output_chars: usize,
}

impl Settings {
    /// Reads and validates the harness params of `req` (`env` is refused).
    pub(crate) fn read(req: &RunRequest) -> Result<Self> {
        if req.harness.params.contains_key("env") {
            return Err(Error::invalid_input(format!(
                "harness `{ID}`: parameter `env` is not supported (set variables with the \
                 environment's run_env_variables)"
            )));
        }
        let params = Params::read(ID, &schema(), req)?;
        let command = params
            .string("command", true)?
            .ok_or_else(|| params.error("command", "is required"))?;
        let answer_file = params.string("answer_file", true)?;
        if let Some(path) = answer_file.as_deref().filter(|p| !p.starts_with('/')) {
            return Err(params.error(
                "answer_file",
                format!("needs an absolute path (found `{path}`)"),
            ));
        }
        let max_output_chars = params.integer("max_output_chars", 100)?.unwrap_or(10_000);
        let package = match params.string("package", true)? {
            Some(text) => Some(
                super::package::Package::parse(&text)
                    .map_err(|message| params.error("package", message))?,
            ),
            None => None,
        };
        Ok(Settings {
            command,
            package,
            registry: params.string("registry", true)?,
            install_command: params.string("install_command", true)?,
            install_timeout_seconds: params
                .positive_number("install_timeout_seconds")?
                .unwrap_or(600.0),
            output_files: params.absolute_paths("output_files")?,
            answer_file,
            max_output_chars: usize::try_from(max_output_chars)
                .map_err(|_| params.error("max_output_chars", "is too large"))?,
        })
    }
}
