//! The `harbor` pack: Harbor task directories (`task.toml`, `instruction.md`, `tests/`,
//! `solution/`) as a benchmark. `task.toml` is mapped onto the shared task contract (timeouts,
//! environment setup, network policies, resources, environment bindings, artifacts and
//! collect commands); `tests/test.sh` is the verifier and `/logs/verifier/reward.{json,txt}`
//! the reward. Depends only on `agentcompass-plugin-api`.

mod agent_inputs;
mod artifacts;
mod benchmark;
mod commands;
mod dataset;
mod discover;
mod environment;
mod fields;
mod healthcheck;
mod hosts;
mod image;
mod instruction;
mod lax;
mod multistep;
mod names;
mod phases;
mod reward;
mod step_map;
mod steps;
mod task_toml;
mod unmapped;
mod verifier;
mod verifier_files;

#[cfg(test)]
mod tests;

/// The `task.toml` loader, for the fuzz targets in `fuzz/` (not part of the plugin's interface:
/// the host reaches the plugin only through its exported root).
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::environment::parse_size_mb;
    pub use crate::task_toml::{load_task, LoadOptions};
}

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType,
};
use agentcompass_plugin_api::sdk::PluginBuilder;
use serde_json::json;

fn register(plugin: &mut PluginBuilder) {
    plugin.benchmark(
        ComponentInfo::new(
            ComponentKind::Benchmark,
            names::ID,
            "Harbor task directories (task.toml, instruction.md, tests/test.sh, solution/), \
             scored by the verifier's reward file",
        )
        .with_schema(
            ConfigSchema::empty()
                .field(ConfigField::new(
                    "path",
                    ConfigType::Any,
                    json!(null),
                    "A Harbor task directory, a directory of task directories, or a list \
                     of either (strings); task ids are the directory names (give `path` or \
                     `dataset`)",
                ))
                .field(ConfigField::new(
                    "dataset",
                    ConfigType::String,
                    json!(null),
                    "A dataset of a Harbor registry, `NAME@VERSION` or `NAME` (its latest \
                     version); the host fetches its tasks once into `<data_dir>/datasets` and \
                     verifies them on every use; task ids are the last part of each path",
                ))
                .field(ConfigField::new(
                    "registry_path",
                    ConfigType::String,
                    json!(null),
                    "The `registry.json` of `dataset` (or the directory holding it)",
                ))
                .field(ConfigField::new(
                    "registry_url",
                    ConfigType::String,
                    json!(null),
                    "An http(s) URL of the `registry.json` of `dataset` (default: Harbor's \
                     public registry)",
                ))
                .field(ConfigField::new(
                    "sample_ids",
                    ConfigType::Array,
                    json!(null),
                    "Run only these task ids",
                ))
                .field(ConfigField::new(
                    "solution_env_for_agent",
                    ConfigType::Boolean,
                    json!(false),
                    "Give the agent the task's solution.env bindings (always given to the \
                     `oracle` harness)",
                )),
        ),
        || Ok(benchmark::Harbor),
    );
}

agentcompass_plugin_api::export_plugin!(register);
