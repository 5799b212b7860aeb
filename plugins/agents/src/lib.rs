//! The agents pack: harnesses that run a model or a solution against a task.
//!
//! - `openai_chat`: one model call with the prepared task (no environment interaction).
//! - `oracle`: runs a Harbor task's reference `solution/solve.sh` in the environment.
//! - `terminus`: a bash-tool agent loop (Terminus-2 / mini-swe-agent style) through the host's
//!   model gateway.
//! - `cli_agent`: runs an external agent CLI inside the environment, pointed at the run's model
//!   endpoint through environment variables.
//! - `installed`: `claude_code`, `codex`, `mini_swe_agent`, `qwen_code` — real agent CLIs
//!   installed by the host's install cache and run inside the environment; their records are
//!   read by `transcript`.
//!
//! Depends only on `agentcompass-plugin-api`.

mod cli_agent;
mod installed;
mod mcp;
mod openai_chat;
mod oracle;
mod params;
mod terminus;
#[cfg(test)]
mod testkit;
mod text;
mod trajectory;
mod transcript;

use agentcompass_plugin_api::contracts::{ComponentInfo, ComponentKind, ConfigSchema};
use agentcompass_plugin_api::sdk::PluginBuilder;

/// The registry entry of one of the pack's harnesses: every one keeps its state per session,
/// so attempts of one task may run in parallel.
fn harness_info(id: &str, description: &str, schema: ConfigSchema) -> ComponentInfo {
    let mut info = ComponentInfo::new(ComponentKind::Harness, id, description).with_schema(schema);
    info.parallel_attempts_safe = true;
    info
}

fn register(plugin: &mut PluginBuilder) {
    plugin.harness(openai_chat::info(), || Ok(openai_chat::OpenAiChat));
    plugin.harness(oracle::info(), || Ok(oracle::Oracle));
    plugin.harness(terminus::info(), || Ok(terminus::Terminus));
    plugin.harness(cli_agent::info(), || Ok(cli_agent::CliAgent));
    for agent in installed::AgentCli::ALL {
        plugin.harness(installed::info(agent), move || {
            Ok(installed::InstalledAgent { agent })
        });
    }
}

agentcompass_plugin_api::export_plugin!(register);
