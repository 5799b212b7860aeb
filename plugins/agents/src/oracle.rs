//! `oracle`: runs a Harbor task's reference solution (`solution/solve.sh`) in the task
//! environment, so a benchmark's verifier can be checked against a known-good agent.

use std::path::Path;
use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ConfigSchema, EnvironmentSpec, ExecRequest, ExecResult, ExecutionIssue,
    HarnessPlan, IssuePhase, ModelSpec, PreparedTask, ReferenceSolution, RunRequest, RunResult,
    Trajectory, TrajectoryMetric, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use crate::params::Params;
use crate::text::{one_line_tail, scrubbed_outcome, tail};
use crate::trajectory::iso_now;

/// Registry id.
pub const ID: &str = "oracle";

/// Characters of stdout/stderr kept in the trajectory.
const OUTPUT_TAIL_CHARS: usize = 10_000;

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 1800.0;

/// The public parameters (none).
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
}

/// Registry entry.
pub fn info() -> ComponentInfo {
    crate::harness_info(
        ID,
        "Runs the task's reference solution (Harbor's solution/solve.sh) in the session's \
         solution directory",
        schema(),
    )
    .with_model_use(agentcompass_plugin_api::contracts::ModelUse::None)
    .reading_reference_solution()
}

/// The harness.
pub struct Oracle;

/// Whether `environment` can run bash (anything but a Windows environment).
pub(crate) fn runs_bash(environment: &EnvironmentSpec) -> bool {
    environment
        .setup
        .os
        .as_deref()
        .is_none_or(|os| !os.eq_ignore_ascii_case("windows"))
}

/// The task's reference solution, as the benchmark offered it.
pub(crate) fn reference_solution<'a>(
    prepared: &'a PreparedTask,
    benchmark: &str,
) -> Result<&'a ReferenceSolution> {
    prepared.reference_solution.as_ref().ok_or_else(|| {
        Error::invalid_input(format!(
            "{ID} needs a reference solution (benchmark `{benchmark}` offered none for task \
             `{}`)",
            prepared.task_id
        ))
    })
}

#[async_trait]
impl SessionHarness for Oracle {
    /// The task environment.
    type Session = SessionRef;

    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Params::read(ID, &schema(), req)?;
        Ok(HarnessPlan {
            // solve.sh reads no prompt.
            inject_network_restriction_notice: false,
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            ..HarnessPlan::default()
        })
    }

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<SessionRef> {
        Params::read(ID, &schema(), input.req)?;
        Ok(input.env.clone())
    }

    async fn execute(&self, ctx: &Ctx, env: &SessionRef, call: TaskCall<'_>) -> Result<RunResult> {
        run(ctx, env, call.prepared, &call.req.benchmark.id, call.plan).await
    }

    fn label(&self) -> &str {
        ID
    }
}

/// The issue for a `solve.sh` that timed out or failed (`None` when it succeeded).
fn solve_issue(outcome: &ExecResult, plan: &HarnessPlan, script: &str) -> Option<ExecutionIssue> {
    if outcome.timed_out {
        Some(ExecutionIssue::error(
            IssuePhase::Run,
            "oracle_timeout",
            format!(
                "{ID}: {script} hit the run timeout ({}s)",
                plan.run_timeout_seconds.unwrap_or_default()
            ),
        ))
    } else if outcome.returncode != 0 {
        Some(ExecutionIssue::error(
            IssuePhase::Run,
            "oracle_failed",
            format!(
                "{ID}: {script} exited with {}: {}",
                outcome.returncode,
                one_line_tail(&outcome.stderr, 300)
            ),
        ))
    } else {
        None
    }
}

/// The one trajectory step: the `solve.sh` command and its output tails.
fn solve_step(
    outcome: &ExecResult,
    duration_ms: u128,
    started_at: String,
    script: &str,
) -> TrajectoryStep {
    TrajectoryStep {
        step_id: 1,
        user_content: json!(format!("bash {script}")),
        observation: vec![json!({
            "command": format!("bash {script}"),
            "exit_code": outcome.returncode,
            "timed_out": outcome.timed_out,
            "stdout": tail(&outcome.stdout, OUTPUT_TAIL_CHARS),
            "stderr": tail(&outcome.stderr, OUTPUT_TAIL_CHARS),
            "duration_ms": duration_ms,
        })],
        metric: TrajectoryMetric {
            env_action_ms: Some(duration_ms as f64),
            ..TrajectoryMetric::default()
        },
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        ..TrajectoryStep::default()
    }
}

/// Uploads the task's `solution/` and runs `solve.sh` in the environment.
async fn run(
    ctx: &Ctx,
    env: &SessionRef,
    prepared: &PreparedTask,
    benchmark: &str,
    plan: &HarnessPlan,
) -> Result<RunResult> {
    let solution = reference_solution(prepared, benchmark)?;
    let host_dir = Path::new(&solution.dir);
    if !host_dir.is_absolute() || !host_dir.is_dir() {
        return Err(Error::invalid_input(format!(
            "{ID}: the reference solution `{}` is not an existing absolute directory",
            solution.dir
        )));
    }
    let target = env.info().dirs.solution;
    let script = format!("{}/{}", target.trim_end_matches('/'), solution.script);
    let started_at = iso_now();
    ctx.progress(json!({"step": "uploading solution", "task_id": prepared.task_id}));
    env.upload_dir(host_dir, &target).await.map_err(|e| {
        e.context(format!(
            "{ID}: uploading the reference solution to {target}"
        ))
    })?;
    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    let mut request = ExecRequest::argv(["bash", script.as_str()]);
    request.env = solution.env.clone();
    request.timeout_seconds = plan.run_timeout_seconds;
    ctx.progress(json!({"step": "running the reference solution", "task_id": prepared.task_id}));
    let clock = Instant::now();
    let outcome = env
        .exec(request)
        .await
        .map_err(|e| e.context(format!("{ID}: running {script}")))?;
    let duration_ms = clock.elapsed().as_millis();
    let outcome = scrubbed_outcome(ctx, outcome, "").await;

    let mut result = RunResult::for_task(prepared);
    result.telemetry.insert("agent".into(), json!(ID));
    result
        .telemetry
        .insert("exit_code".into(), json!(outcome.returncode));
    result
        .telemetry
        .insert("duration_ms".into(), json!(duration_ms));
    if let Some(issue) = solve_issue(&outcome, plan, &script) {
        result.push_issue(issue);
    }
    let step = solve_step(&outcome, duration_ms, started_at.clone(), &script);
    result.trajectory = Some(Trajectory {
        started_at: Some(started_at),
        finished_at: step.finished_at.clone(),
        steps: vec![step],
        ..Trajectory::default()
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{block_on, Call, FakeHost, FakeSession};
    use agentcompass_plugin_api::contracts::{ExecCommand, ExecResult, TaskInput, TaskStatus};

    fn solution_fixture(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agents-pack-oracle-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("solve.sh"), "echo solved\n").unwrap();
        dir
    }

    fn harbor_task(dir: &Path) -> PreparedTask {
        let solution = ReferenceSolution::new(dir.display().to_string())
            .env("MODE", "x")
            .env("N", "2");
        PreparedTask::new("hello", TaskInput::new("Create /app/hello.txt"))
            .with_reference_solution(solution)
    }

    fn plan(timeout: Option<f64>) -> HarnessPlan {
        HarnessPlan {
            run_timeout_seconds: timeout,
            ..HarnessPlan::default()
        }
    }

    #[test]
    fn missing_metadata_is_a_clear_error() {
        let fake = FakeSession::new(|_| Ok(ExecResult::new(0, "", "")));
        let task = PreparedTask::new("t", TaskInput::new("q"));
        let err = block_on(run(
            &Ctx::detached(),
            &fake.session_ref(),
            &task,
            "qa",
            &plan(None),
        ))
        .unwrap_err();
        assert_eq!(
            err.message,
            "oracle needs a reference solution (benchmark `qa` offered none for task `t`)"
        );
        assert!(fake.calls().is_empty());
        let mut bad = harbor_task(Path::new("/definitely/not/here"));
        bad.task_id = "t".into();
        let err = block_on(run(
            &Ctx::detached(),
            &fake.session_ref(),
            &bad,
            "harbor",
            &plan(None),
        ))
        .unwrap_err();
        assert!(
            err.message.contains("not an existing absolute directory"),
            "{err}"
        );
    }

    #[test]
    fn uploads_then_runs_solve_sh() {
        let dir = solution_fixture("ok");
        let fake = FakeSession::new(|_| Ok(ExecResult::new(0, "solved\n", "")));
        let host = FakeHost::new(vec![]);
        let result = block_on(run(
            &host.ctx(),
            &fake.session_ref(),
            &harbor_task(&dir),
            "harbor",
            &plan(Some(600.0)),
        ))
        .unwrap();
        let calls = fake.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            Call::UploadDir(dir.display().to_string(), "/solution".into())
        );
        let Call::Exec(exec) = &calls[1] else {
            panic!("expected exec, got {:?}", calls[1]);
        };
        assert_eq!(
            exec.command,
            ExecCommand::Argv(vec!["bash".into(), "/solution/solve.sh".into()])
        );
        assert_eq!(exec.cwd, None);
        assert_eq!(exec.timeout_seconds, Some(600.0));
        assert_eq!(exec.env["MODE"], "x");
        assert_eq!(exec.env["N"], "2");
        assert_eq!(result.status, TaskStatus::Completed);
        let step = &result.trajectory.unwrap().steps[0];
        assert_eq!(step.observation[0]["exit_code"], 0);
        assert_eq!(step.observation[0]["stdout"], "solved\n");
        assert_eq!(result.telemetry["exit_code"], 0);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn failing_solution_is_a_run_error() {
        let dir = solution_fixture("fail");
        let fake = FakeSession::new(|_| Ok(ExecResult::new(3, "", "boom\nno such file")));
        let result = block_on(run(
            &Ctx::detached(),
            &fake.session_ref(),
            &harbor_task(&dir),
            "harbor",
            &plan(None),
        ))
        .unwrap();
        assert_eq!(result.status, TaskStatus::RunError);
        assert_eq!(result.issues[0].code, "oracle_failed");
        assert_eq!(
            result.issues[0].message,
            "oracle: /solution/solve.sh exited with 3: boom no such file"
        );
        let timeout = FakeSession::new(|_| Ok(ExecResult::timeout("", "")));
        let result = block_on(run(
            &Ctx::detached(),
            &timeout.session_ref(),
            &harbor_task(&dir),
            "harbor",
            &plan(Some(5.0)),
        ))
        .unwrap();
        assert_eq!(result.issues[0].code, "oracle_timeout");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn windows_environments_are_not_supported() {
        let mut env = EnvironmentSpec::new("docker");
        assert!(Oracle.supports(&env, &ModelSpec::default()).unwrap());
        env.setup.os = Some("windows".into());
        assert!(!Oracle.supports(&env, &ModelSpec::default()).unwrap());
    }
}
