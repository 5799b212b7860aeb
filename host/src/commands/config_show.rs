//! `config show`: the merged configuration, redacted; with `--benchmark/--harness/--env IDs`
//! also each component's effective parameters (its declared defaults merged with its
//! configuration section), as upstream's `config show` prints them.

use anyhow::Context;
use serde_json::{Map, Value};

use super::invocation::{load_config, load_registry, print_json, without_nulls};
use crate::cli::{GlobalArgs, ShowFormat};
use agentcompass_plugin_api::contracts::ComponentKind;
use agentcompass_redact::redact_value;

/// The components whose effective parameters to show.
#[derive(Debug, Clone, Default)]
pub struct Selected {
    /// `--benchmark`.
    pub benchmarks: Vec<String>,
    /// `--harness`.
    pub harnesses: Vec<String>,
    /// `--env`.
    pub environments: Vec<String>,
}

impl Selected {
    fn is_empty(&self) -> bool {
        self.benchmarks.is_empty() && self.harnesses.is_empty() && self.environments.is_empty()
    }
}

/// What `config show` says on standard error when no configuration file was found: where it
/// looked and how to add one.
fn no_config_note(env: &dyn Fn(&str) -> Option<String>) -> String {
    let user = agentcompass_host::config::user_config_dir(env)
        .map(|dir| format!("{} and ", dir.display()))
        .unwrap_or_default();
    format!(
        "note: no configuration file: none of {} in {user}the working directory or its \
         parents, and no --config FILE; showing only what flags and defaults give",
        agentcompass_host::config::CONFIG_FILE_NAMES.join(", ")
    )
}

/// `config show`: the merged configuration, redacted.
pub fn config_show(
    global: &GlobalArgs,
    format: ShowFormat,
    selected: &Selected,
) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    if config.files.is_empty() {
        eprintln!(
            "{}",
            no_config_note(&agentcompass_host::config::process_env)
        );
    }
    let mut payload = config.payload.clone();
    if !selected.is_empty() {
        let (_, _, setup) = load_registry(global)?;
        for (section, kind, ids) in [
            ("benchmarks", ComponentKind::Benchmark, &selected.benchmarks),
            ("harnesses", ComponentKind::Harness, &selected.harnesses),
            (
                "environments",
                ComponentKind::Environment,
                &selected.environments,
            ),
        ] {
            let mut shown = Map::new();
            for id in ids {
                let entry = setup.registry.get(kind, id)?;
                let mut effective: Map<String, Value> = entry
                    .info
                    .config_schema
                    .fields
                    .iter()
                    .filter(|f| !f.default.is_null())
                    .map(|f| (f.name.clone(), f.default.clone()))
                    .collect();
                if let Some(Value::Object(configured)) =
                    config.payload.get(section).and_then(|s| s.get(id))
                {
                    for (key, value) in configured {
                        effective.insert(key.clone(), value.clone());
                    }
                }
                shown.insert(id.clone(), Value::Object(effective));
            }
            if !shown.is_empty() {
                payload.insert(section.to_string(), Value::Object(shown));
            }
        }
    }
    let merged = redact_value(&Value::Object(payload));
    match format {
        ShowFormat::Json => print_json(&merged)?,
        ShowFormat::Yaml => crate::out!(
            "{}",
            yaml_serde::to_string(&without_nulls(&merged)).context("cannot render YAML")?
        ),
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
