//! Configuration files: discovery (user, project, explicit), parsing (TOML, YAML, JSON),
//! validation, `deep_merge`, and `${VAR}` reference rules.

mod files;
mod interpolate;
mod merge;
mod validate;

pub use files::{
    discover_config_files, load_run_config, parse_file, parse_text, user_config_dir, ConfigFile,
    LoadedConfig, CONFIG_FILE_NAMES,
};
pub use interpolate::{
    check_references, convert_text, is_env_map_key, replace_references, resolve_as,
    resolve_references, whole_field_reference, ReferenceSite,
};
pub use merge::deep_merge;
pub use validate::{
    nearest_key, unknown_key_message, validate_config, EXECUTION_KEYS, RUNTIME_KEYS,
};

use std::path::PathBuf;

/// Reads a variable of the launcher's environment (the source every `${VAR}` reference and
/// environment binding resolves from).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A configuration problem: one line naming the file (or flag) and the key path.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// An explicitly named file does not exist.
    #[error("config file {} does not exist", .0.display())]
    Missing(PathBuf),
    /// A file could not be read.
    #[error("cannot read {}: {message}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A file could not be parsed.
    #[error("{}: {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Parser message, one line.
        message: String,
    },
    /// A value is not allowed where it is.
    #[error("{source_name}: {path}: {message}")]
    Invalid {
        /// File path or flag name.
        source_name: String,
        /// Dotted key path.
        path: String,
        /// What was expected and what was found.
        message: String,
    },
}

impl ConfigError {
    /// A rejection naming the source (file or flag) and the key path.
    pub fn invalid(
        source: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let path = path.into();
        let message = message.into();
        // A message about a secret field must not echo its value.
        let message = if agentcompass_redact::is_secret_path(&path) {
            agentcompass_redact::scrub_value_from_message(&message)
        } else {
            message
        };
        ConfigError::Invalid {
            source_name: source.into(),
            path,
            message,
        }
    }
}
