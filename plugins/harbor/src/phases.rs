//! The phase tables of a `task.toml`: `[agent]` (run timeout, agent-phase network policy,
//! `user`) and `[verifier]` (timeout, bindings, network policy, environment mode, a separate
//! `[verifier.environment]`, `[[verifier.collect]]`, `user`), shared by the task level and
//! `[[steps]]`.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, EvaluationEnvironmentMode, NetworkPolicy,
};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::artifacts::collect_commands;
use crate::environment::{environment_decl, phase_policy, EnvironmentDecl};
use crate::fields::{Section, Warnings};

/// What `[agent]` declares.
#[derive(Debug, Default)]
pub(crate) struct AgentDecl {
    /// `timeout_sec`.
    pub(crate) timeout_seconds: Option<f64>,
    /// `network_mode` / `allowed_hosts`.
    pub(crate) network_policy: Option<NetworkPolicy>,
    /// `user`: who the agent's commands run as.
    pub(crate) user: Option<String>,
}

/// `[agent]`: the run timeout, the agent-phase network policy and user.
pub(crate) fn agent_decl(agent: &Section, warnings: &mut Warnings) -> Result<AgentDecl> {
    let decl = AgentDecl {
        timeout_seconds: agent.positive_seconds("timeout_sec")?,
        network_policy: phase_policy(agent, warnings)?,
        user: user(agent)?,
    };
    warnings.unknown(agent);
    Ok(decl)
}

/// `user`: a user name or a UID (`str | int`), as the engine's exec takes it.
fn user(section: &Section) -> Result<Option<String>> {
    Ok(match section.string_or_integer("user")? {
        Some(Value::String(name)) => Some(name),
        Some(Value::Integer(uid)) => Some(uid.to_string()),
        _ => None,
    })
}

/// What `[verifier]` declares.
#[derive(Debug, Default)]
pub(crate) struct VerifierDecl {
    /// `timeout_sec`.
    pub(crate) timeout_seconds: Option<f64>,
    /// `env`.
    pub(crate) env_variables: BTreeMap<String, String>,
    /// `network_mode` / `allowed_hosts`.
    pub(crate) network_policy: Option<NetworkPolicy>,
    /// `environment_mode`.
    pub(crate) mode: Option<EvaluationEnvironmentMode>,
    /// `[verifier.environment]`, a separate verifier environment.
    pub(crate) environment: Option<EnvironmentDecl>,
    /// `[[verifier.collect]]`.
    pub(crate) collect: Vec<ArtifactCollectCommand>,
    /// `user`: who the verifier's commands run as.
    pub(crate) user: Option<String>,
}

/// `[verifier]`: timeout, bindings, network policy, environment mode, a separate
/// `[verifier.environment]` (refused with `environment_mode = "shared"`) and collect commands.
pub(crate) fn verifier_decl(verifier: &Section, warnings: &mut Warnings) -> Result<VerifierDecl> {
    let timeout_seconds = verifier.positive_seconds("timeout_sec")?;
    let env_variables = verifier.string_map("env")?.unwrap_or_default();
    let network_policy = phase_policy(verifier, warnings)?;
    let mode = environment_mode(verifier)?;
    let environment = match verifier.table("environment")? {
        Some(section) => Some(environment_decl(&section, warnings)?),
        None => None,
    };
    if mode == Some(EvaluationEnvironmentMode::Reuse) && environment.is_some() {
        return Err(verifier.error(
            "environment_mode",
            "expected \"separate\" (or no value) with a [verifier.environment] table, found \"shared\"",
        ));
    }
    let collect = collect_commands(verifier)?;
    for (i, command) in collect.iter().enumerate() {
        if command.command.trim().is_empty() {
            warnings.note(format!(
                "field `verifier.collect[{i}].command` is empty: it runs as a no-op, as in Harbor"
            ));
        }
    }
    let user = user(verifier)?;
    warnings.unknown(verifier);
    Ok(VerifierDecl {
        timeout_seconds,
        env_variables,
        network_policy,
        mode,
        environment,
        collect,
        user,
    })
}

/// `verifier.environment_mode`: `"shared"` (reuse) or `"separate"` (fresh).
fn environment_mode(verifier: &Section) -> Result<Option<EvaluationEnvironmentMode>> {
    let expected = "\"shared\" or \"separate\"";
    match verifier.get("environment_mode") {
        None => Ok(None),
        Some(Value::String(mode)) if mode == "shared" => Ok(Some(EvaluationEnvironmentMode::Reuse)),
        Some(Value::String(mode)) if mode == "separate" => {
            Ok(Some(EvaluationEnvironmentMode::Fresh))
        }
        Some(other) => Err(verifier.expected("environment_mode", expected, other)),
    }
}
