//! `terminus`: a bash-tool agent loop in the spirit of Terminus-2 / mini-swe-agent. The model
//! (through the host's gateway) calls `bash` to run commands in the task environment and
//! `done` (alias `submit`) to finish.

mod agent;
mod prompt;
mod settings;
mod skills;
#[cfg(test)]
mod tests;
mod tools;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, EnvironmentSpec, HarnessPlan, ModelSpec, RunRequest, RunResult, Trajectory,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall,
};
use agentcompass_plugin_api::Result;
use serde_json::json;

use crate::oracle::runs_bash;
use agent::Journal;

pub(crate) use agent::Agent;
pub(crate) use settings::Settings;
pub use settings::{schema, ID};

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 3600.0;

/// Registry entry.
pub fn info() -> ComponentInfo {
    crate::harness_info(
        ID,
        "Agent loop with a `bash` tool run in the task environment and a `done` tool \
         (Terminus-2 / mini-swe-agent style), through the host's model gateway",
        schema(),
    )
    .with_model_use(agentcompass_plugin_api::contracts::ModelUse::Required)
    // An MCP client itself (module `mcp`), and told about skills as Harbor's terminus-2 is.
    .with_agent_inputs(agentcompass_plugin_api::contracts::AgentInputSupport::ALL)
}

/// The harness.
pub struct Terminus;

pub struct TerminusSession {
    settings: Settings,
    env: SessionRef,
    /// Copies of the finished steps, so `collect_result` can keep them when the host's
    /// watchdog cut `execute_task` short.
    journal: Journal,
}

#[async_trait]
impl SessionHarness for Terminus {
    type Session = TerminusSession;

    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Settings::read(req)?;
        Ok(HarnessPlan {
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            ..HarnessPlan::default()
        })
    }

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<TerminusSession> {
        Ok(TerminusSession {
            settings: Settings::read(input.req)?,
            env: input.env.clone(),
            journal: Journal::default(),
        })
    }

    async fn execute(
        &self,
        ctx: &Ctx,
        session: &TerminusSession,
        call: TaskCall<'_>,
    ) -> Result<RunResult> {
        Agent::new(
            ctx,
            &session.env,
            &session.settings,
            call.prepared,
            call.plan,
        )
        .with_journal(session.journal.clone())
        .run()
        .await
    }

    /// After a run the host cut short (no trajectory), keeps the steps finished so far.
    async fn collect(
        &self,
        _ctx: &Ctx,
        session: &TerminusSession,
        _call: TaskCall<'_>,
        mut result: RunResult,
    ) -> Result<RunResult> {
        if result.trajectory.is_some() {
            return Ok(result);
        }
        let steps = session
            .journal
            .lock()
            .map(|steps| steps.clone())
            .unwrap_or_default();
        if !steps.is_empty() {
            result.telemetry.insert("turns".into(), json!(steps.len()));
            result.trajectory = Some(Trajectory::new(steps));
        }
        Ok(result)
    }

    fn label(&self) -> &str {
        ID
    }
}
