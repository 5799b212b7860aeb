//! `cli_agent`: runs an external agent command (Claude Code, Codex, mini-swe-agent, ...) inside
//! the task environment. The command reaches the run's model through the endpoint the host
//! serves inside the environment (`HarnessPlan::model_endpoint_in_environment`: under every
//! network policy, `no-network` included), given to it in the exec request's environment
//! variables with a per-attempt placeholder token — the real key never enters the
//! environment; the token is scrubbed from everything the harness records.

mod collect;
mod instruction;
mod package;
mod run;
mod settings;
#[cfg(test)]
mod tests;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, EnvironmentSpec, HarnessPlan, ModelSpec, RunRequest, RunResult, Trajectory,
    TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall,
};
use agentcompass_plugin_api::Result;
use serde_json::json;

use crate::oracle::runs_bash;
use collect::Collector;
pub(crate) use instruction::instruction_text;
use run::run;
use settings::Settings;

pub use settings::{schema, ID};

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 3600.0;

/// Registry entry.
pub fn info() -> ComponentInfo {
    crate::harness_info(
        ID,
        "Runs an external agent command in the environment, pointed at the run's model \
         endpoint through OPENAI_*/ANTHROPIC_*/AGENTCOMPASS_* variables",
        schema(),
    )
}

/// The harness.
pub struct CliAgent;

/// The harness session: its settings and the task environment.
pub struct CliSession {
    settings: Settings,
    env: SessionRef,
}

#[async_trait]
impl SessionHarness for CliAgent {
    type Session = CliSession;

    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        let settings = Settings::read(req)?;
        Ok(HarnessPlan {
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            // The command calls the model from inside the environment: the host serves the
            // endpoint there, and the command gets a placeholder token, never the real key.
            model_endpoint_in_environment: true,
            // The host installs a `package` into its cache and mounts it (a failure is the
            // task's fatal `agent_install_failed`, before the environment opens).
            installs: settings
                .package
                .iter()
                .map(|p| p.install(settings.registry.clone(), settings.install_timeout_seconds))
                .collect(),
            ..HarnessPlan::default()
        })
    }

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<CliSession> {
        Ok(CliSession {
            settings: Settings::read(input.req)?,
            env: input.env.clone(),
        })
    }

    async fn execute(
        &self,
        ctx: &Ctx,
        session: &CliSession,
        call: TaskCall<'_>,
    ) -> Result<RunResult> {
        run(
            ctx,
            &session.env,
            &session.settings,
            call.prepared,
            call.plan,
        )
        .await
    }

    /// After a run the host cut short (no trajectory), salvages the output and answer files.
    async fn collect(
        &self,
        _ctx: &Ctx,
        session: &CliSession,
        _call: TaskCall<'_>,
        mut result: RunResult,
    ) -> Result<RunResult> {
        if result.trajectory.is_some() {
            return Ok(result);
        }
        let mut step = TrajectoryStep {
            step_id: 1,
            user_content: json!("collect output files after an interrupted run"),
            ..TrajectoryStep::default()
        };
        let collector = Collector {
            env: &session.env,
            settings: &session.settings,
            secret: "",
        };
        collector.output_files(&mut result, &mut step).await;
        if let Some(answer) = collector.answer_from_file(&mut result).await {
            result.final_answer = Some(answer);
        }
        if !step.observation.is_empty() {
            result.trajectory = Some(Trajectory::new(vec![step]));
        }
        Ok(result)
    }

    fn label(&self) -> &str {
        ID
    }
}
