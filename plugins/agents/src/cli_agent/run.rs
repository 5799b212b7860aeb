//! One run of the CLI: the optional install command, then the agent command, each recorded as
//! a trajectory step with the key scrubbed from it.

use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    ExecRequest, ExecResult, ExecutionIssue, HarnessPlan, IssuePhase, PreparedTask, RunResult,
    Trajectory, TrajectoryMetric, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use super::collect::Collector;
use super::instruction::{agent_env, instruction_file, instruction_text, write_instruction};
use super::settings::{Settings, ID};
use crate::text::{one_line_tail, scrub, scrubbed_outcome, tail, truncate_middle};
use crate::trajectory::iso_now;

/// One `bash -c` step of the run, as recorded.
struct Recorded {
    outcome: ExecResult,
    step: TrajectoryStep,
}

/// What every command of one run shares: the environment, the working directory, the key to
/// scrub from what is recorded, and the output kept per stream.
struct Shell<'a> {
    ctx: &'a Ctx,
    env: &'a SessionRef,
    cwd: Option<String>,
    secret: &'a str,
    max_chars: usize,
}

impl Shell<'_> {
    /// `bash -c command` in the run's working directory.
    fn request(&self, command: &str, timeout_seconds: Option<f64>) -> ExecRequest {
        let mut request = ExecRequest::argv(["bash", "-c", command]);
        request.cwd = self.cwd.clone();
        request.timeout_seconds = timeout_seconds;
        request
    }

    /// Runs `request` and records it as step `step_id` (output scrubbed and truncated).
    async fn step(
        &self,
        request: ExecRequest,
        step_id: u64,
        label: &str,
        command: &str,
    ) -> Result<Recorded> {
        let secret = self.secret;
        let max_chars = self.max_chars;
        let started_at = iso_now();
        let clock = Instant::now();
        let outcome = self.env.exec(request).await.map_err(|e| {
            Error::new(
                e.kind,
                format!("{ID}: running the {label}: {}", scrub(&e.message, secret)),
            )
        })?;
        let duration_ms = clock.elapsed().as_millis();
        let outcome = scrubbed_outcome(self.ctx, outcome, secret).await;
        let step = TrajectoryStep {
            step_id,
            user_content: json!(label),
            observation: vec![json!({
                "command": scrub(command, secret),
                "exit_code": outcome.returncode,
                "timed_out": outcome.timed_out,
                "stdout": truncate_middle(&outcome.stdout, max_chars),
                "stderr": truncate_middle(&outcome.stderr, max_chars),
                "duration_ms": duration_ms,
            })],
            metric: TrajectoryMetric {
                env_action_ms: Some(duration_ms as f64),
                ..TrajectoryMetric::default()
            },
            started_at: Some(started_at),
            finished_at: Some(iso_now()),
            ..TrajectoryStep::default()
        };
        Ok(Recorded { outcome, step })
    }
}

/// Pushes the issue for a failed or timed-out step; `true` when there was one.
fn step_issue(
    result: &mut RunResult,
    outcome: &ExecResult,
    what: &str,
    code: &str,
    timeout: Option<f64>,
) -> bool {
    // An agent that could not be installed did not run: a fatal issue (retried, and a run
    // whose task ends with it fails), never a scored attempt.
    let issue = if code == "agent_install" {
        ExecutionIssue::fatal
    } else {
        ExecutionIssue::error
    };
    if outcome.timed_out {
        let limit = timeout.map_or_else(String::new, |t| format!(" ({t}s)"));
        result.push_issue(issue(
            IssuePhase::Run,
            format!("{code}_timeout"),
            format!("{ID}: the {what} hit its timeout{limit}"),
        ));
        true
    } else if outcome.returncode != 0 {
        result.push_issue(issue(
            IssuePhase::Run,
            format!("{code}_failed"),
            format!(
                "{ID}: the {what} exited with {}: {}",
                outcome.returncode,
                one_line_tail(&outcome.stderr, 300)
            ),
        ));
        true
    } else {
        false
    }
}

/// The trajectory of the run so far.
fn trajectory(steps: Vec<TrajectoryStep>, started_at: String) -> Trajectory {
    Trajectory {
        steps,
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        ..Trajectory::default()
    }
}

/// Runs `install_command` as step 1; `true` with the step when it failed (the agent command
/// is then skipped).
async fn install_agent(
    ctx: &Ctx,
    shell: &Shell<'_>,
    settings: &Settings,
    task_id: &str,
    install: &str,
    result: &mut RunResult,
) -> Result<(TrajectoryStep, bool)> {
    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    ctx.progress(json!({"step": "installing agent", "task_id": task_id}));
    let request = shell.request(install, Some(settings.install_timeout_seconds));
    let recorded = shell.step(request, 1, "install_command", install).await?;
    result.telemetry.insert(
        "install_exit_code".into(),
        json!(recorded.outcome.returncode),
    );
    let failed = step_issue(
        result,
        &recorded.outcome,
        "install command",
        "agent_install",
        Some(settings.install_timeout_seconds),
    );
    Ok((recorded.step, failed))
}

/// Reads the output files into the agent command's step and sets the final answer (the answer
/// file, else the stdout tail).
async fn collect_outputs(
    shell: &Shell<'_>,
    settings: &Settings,
    result: &mut RunResult,
    recorded: &mut Recorded,
) {
    let collector = Collector {
        env: shell.env,
        settings,
        secret: shell.secret,
    };
    collector.output_files(result, &mut recorded.step).await;
    result.final_answer = if settings.answer_file.is_some() {
        collector.answer_from_file(result).await
    } else {
        Some(tail(recorded.outcome.stdout.trim(), shell.max_chars).to_string())
            .filter(|a| !a.is_empty())
    };
}

/// Runs the optional install command, then the agent command (pointed at the model endpoint,
/// within what is left of the run timeout), and collects the output files and the answer.
pub(super) async fn run(
    ctx: &Ctx,
    env: &SessionRef,
    settings: &Settings,
    prepared: &PreparedTask,
    plan: &HarnessPlan,
) -> Result<RunResult> {
    let started = Instant::now();
    let started_at = iso_now();
    let endpoint = ctx
        .model_endpoint()
        .await
        .map_err(|e| e.context(format!("{ID}: the model endpoint is unavailable")))?;
    let shell = Shell {
        ctx,
        env,
        cwd: prepared
            .input
            .workspace
            .clone()
            .filter(|w| !w.trim().is_empty()),
        secret: endpoint.api_key.as_str(),
        max_chars: settings.max_output_chars,
    };
    let instruction = instruction_text(prepared);
    let instruction_path = instruction_file(env);
    write_instruction(ctx, env, &instruction_path, &instruction).await?;

    let mut result = RunResult::for_task(prepared);
    result.telemetry.insert("agent".into(), json!(ID));
    let mut steps = Vec::new();
    if let Some(install) = &settings.install_command {
        let (step, failed) = install_agent(
            ctx,
            &shell,
            settings,
            &prepared.task_id,
            install,
            &mut result,
        )
        .await?;
        steps.push(step);
        if failed {
            result.trajectory = Some(trajectory(steps, started_at));
            return Ok(result);
        }
    }

    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    ctx.progress(json!({"step": "running agent", "task_id": prepared.task_id}));
    let timeout = plan
        .run_timeout_seconds
        .map(|run| (run - started.elapsed().as_secs_f64()).max(1.0));
    let command = match &settings.package {
        Some(package) => package.wrap(&settings.command),
        None => settings.command.clone(),
    };
    let mut request = shell.request(&command, timeout);
    request.env = agent_env(
        &endpoint,
        &instruction,
        &instruction_path,
        &prepared.task_id,
    );
    // The run's `--agent-env` over the harness's own, as Harbor's `--ae`.
    request.env.extend(prepared.agent_inputs.env.clone());
    let step_id = steps.len() as u64 + 1;
    let mut recorded = shell
        .step(request, step_id, "command", &settings.command)
        .await?;
    recorded.step.user_content = json!(instruction);
    result
        .telemetry
        .insert("exit_code".into(), json!(recorded.outcome.returncode));
    step_issue(
        &mut result,
        &recorded.outcome,
        "agent command",
        "agent",
        timeout,
    );

    collect_outputs(&shell, settings, &mut result, &mut recorded).await;
    steps.push(recorded.step);
    result.trajectory = Some(trajectory(steps, started_at));
    Ok(result)
}
