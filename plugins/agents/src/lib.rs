//! Work in progress.

use agentcompass_plugin_api::sdk::PluginBuilder;

fn register(_plugin: &mut PluginBuilder) {}

agentcompass_plugin_api::export_plugin!(register);
