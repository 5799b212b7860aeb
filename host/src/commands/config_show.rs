//! `config show`: the merged configuration, redacted.

use anyhow::Context;
use serde_json::Value;

use super::invocation::{load_config, print_json, without_nulls};
use crate::cli::{GlobalArgs, ShowFormat};
use agentcompass_redact::redact_value;

/// `config show`: the merged configuration, redacted.
pub fn config_show(global: &GlobalArgs, format: ShowFormat) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let merged = redact_value(&Value::Object(config.payload.clone()));
    match format {
        ShowFormat::Json => print_json(&merged)?,
        ShowFormat::Toml => {
            for file in &config.files {
                crate::outln!("# {}", file.path.display());
            }
            crate::out!(
                "{}",
                toml::to_string_pretty(&without_nulls(&merged)).context("cannot render TOML")?
            );
        }
    }
    Ok(0)
}
