//! Installed agents: third-party agent CLIs — Claude Code, Codex, mini-swe-agent, Qwen Code —
//! run inside the task environment as first-class harnesses.
//!
//! Each harness's plan declares its package (a [`ToolInstall`]): the host installs it once per
//! machine and platform into its install cache and mounts it read-only at the agent's mount
//! path, and serves the run's model endpoint inside the environment
//! (`model_endpoint_in_environment`), so the agent gets a placeholder token, never the real
//! key, and `no-network` tasks stay closed. The agent is configured through its documented
//! settings only (`agents`), its raw output is kept under `/logs/agent/<id>/` (an attempt
//! artifact) and parsed into ACTF steps (`crate::transcript`), and usage and cost come from
//! the gateway's meter like every other harness's.

mod agents;
mod run;
mod settings;
#[cfg(test)]
mod tests;
mod tools;

use agentcompass_plugin_api::contracts::{
    ArtifactSpec, ComponentInfo, EnvironmentSpec, HarnessPlan, ModelSpec, RunRequest, RunResult,
    ToolInstall,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall,
};
use agentcompass_plugin_api::Result;

use crate::oracle::runs_bash;
pub(crate) use agents::AgentCli;
use settings::{schema, Settings};

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 3600.0;

/// The registry entry of `agent`'s harness.
pub(crate) fn info(agent: AgentCli) -> ComponentInfo {
    crate::harness_info(agent.id(), agent.description(), schema(agent))
        .with_model_use(agentcompass_plugin_api::contracts::ModelUse::Required)
        .with_agent_inputs(agent.agent_inputs())
}

/// One installed agent's harness.
pub(crate) struct InstalledAgent {
    /// Which agent.
    pub(crate) agent: AgentCli,
}

/// A started session: the validated params and the environment.
pub(crate) struct AgentSession {
    settings: Settings,
    env: SessionRef,
}

#[async_trait]
impl SessionHarness for InstalledAgent {
    type Session = AgentSession;

    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        let settings = Settings::read(self.agent, req)?;
        let agent = self.agent;
        Ok(HarnessPlan {
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            model_endpoint_in_environment: true,
            installs: vec![ToolInstall {
                installer: agent.installer(),
                package: agent.package().to_string(),
                version: settings.version,
                mount_path: agent.mount_path(),
                registry: settings.registry,
                timeout_seconds: settings.install_timeout_seconds,
            }],
            artifacts: vec![ArtifactSpec::new(agent.log_dir())],
            ..HarnessPlan::default()
        })
    }

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<AgentSession> {
        Ok(AgentSession {
            settings: Settings::read(self.agent, input.req)?,
            env: input.env.clone(),
        })
    }

    async fn execute(
        &self,
        ctx: &Ctx,
        session: &AgentSession,
        call: TaskCall<'_>,
    ) -> Result<RunResult> {
        let (env, settings) = (&session.env, &session.settings);
        run::run(self.agent, ctx, env, settings, call.prepared, call.plan).await
    }

    /// After a run the host cut short (no trajectory), reads what the agent recorded so far.
    async fn collect(
        &self,
        ctx: &Ctx,
        session: &AgentSession,
        call: TaskCall<'_>,
        result: RunResult,
    ) -> Result<RunResult> {
        if result.trajectory.is_some() {
            return Ok(result);
        }
        Ok(run::salvage(self.agent, ctx, &session.env, call.prepared, result).await)
    }

    fn label(&self) -> &str {
        self.agent.id()
    }
}
