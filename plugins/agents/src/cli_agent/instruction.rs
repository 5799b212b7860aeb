//! The instruction handed to the CLI and the variables that point it at the model endpoint.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{ModelEndpoint, PreparedTask};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::Result;
use serde_json::Value;

use super::settings::ID;

/// The instruction's file name, in the session's own `tmp` directory
/// ([`agentcompass_plugin_api::contracts::SessionDirs::tmp`]: `/tmp` in a container, a
/// private directory on `host_process`), so concurrent tasks never share it.
pub const INSTRUCTION_FILE_NAME: &str = "agentcompass-instruction.md";

/// Where the instruction is written in the environment of `env`.
pub(crate) fn instruction_file(env: &SessionRef) -> String {
    let tmp = env.info().dirs.tmp;
    format!("{}/{INSTRUCTION_FILE_NAME}", tmp.trim_end_matches('/'))
}

/// Instructions longer than this (bytes) are passed by file only (`AGENTCOMPASS_INSTRUCTION`
/// is then unset): one environment string is limited to 128 KiB on Linux.
pub(super) const MAX_INSTRUCTION_ENV_BYTES: usize = 100_000;

/// The instruction handed to the CLI: the task's system prompt (if any), then its prompt (or,
/// without one, the text of its user messages).
pub(crate) fn instruction_text(prepared: &PreparedTask) -> String {
    let input = &prepared.input;
    let body = if input.prompt.trim().is_empty() {
        input
            .messages
            .iter()
            .filter(|m| m.role == "user")
            .filter_map(|m| match &m.content {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    } else {
        input.prompt.clone()
    };
    match input
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        Some(system) => format!("{system}\n\n{body}"),
        None => body,
    }
}

/// The variables that point the CLI at the model endpoint, the instruction (its text and
/// `file`) and the task.
pub(crate) fn agent_env(
    endpoint: &ModelEndpoint,
    instruction: &str,
    file: &str,
    task_id: &str,
) -> BTreeMap<String, String> {
    let anthropic_base = endpoint.base_url.trim_end_matches('/');
    let anthropic_base = anthropic_base.strip_suffix("/v1").unwrap_or(anthropic_base);
    let mut env = BTreeMap::new();
    let mut set = |key: &str, value: &str| {
        env.insert(key.to_string(), value.to_string());
    };
    set("OPENAI_BASE_URL", &endpoint.base_url);
    set("OPENAI_API_KEY", &endpoint.api_key);
    set("OPENAI_MODEL", &endpoint.model);
    set("ANTHROPIC_BASE_URL", anthropic_base);
    set("ANTHROPIC_API_KEY", &endpoint.api_key);
    set("ANTHROPIC_MODEL", &endpoint.model);
    set("AGENTCOMPASS_MODEL", &endpoint.model);
    set("AGENTCOMPASS_MODEL_PROTOCOL", &endpoint.protocol);
    set("AGENTCOMPASS_INSTRUCTION_FILE", file);
    set("AGENTCOMPASS_TASK_ID", task_id);
    if instruction.len() <= MAX_INSTRUCTION_ENV_BYTES {
        set("AGENTCOMPASS_INSTRUCTION", instruction);
    }
    env
}

/// Writes the instruction to `file` (with a warning when it is too long to be passed in
/// `AGENTCOMPASS_INSTRUCTION` as well).
pub(super) async fn write_instruction(
    ctx: &Ctx,
    env: &SessionRef,
    file: &str,
    instruction: &str,
) -> Result<()> {
    if instruction.len() > MAX_INSTRUCTION_ENV_BYTES {
        ctx.warn(&format!(
            "{ID}: the instruction ({} bytes) is passed by {file} only",
            instruction.len()
        ));
    }
    env.write_text(file, instruction)
        .await
        .map_err(|e| e.context(format!("{ID}: writing {file}")))
}
