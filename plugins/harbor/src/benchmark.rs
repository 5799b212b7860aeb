//! `harbor`: Harbor task directories (`task.toml`, `instruction.md`, `tests/`, `solution/`)
//! as a benchmark. The agent works in the task environment; `tests/test.sh` then runs in the
//! same environment (`reuse`, the default) or in a fresh verifier environment (tasks with a
//! separate `[verifier.environment]`) and writes `/logs/verifier/reward.{json,txt}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{
    json_type_name, BenchmarkPlan, EnvironmentSpec, EvaluationEnvironmentMode, ExecRequest,
    MetricContract, MetricKind, MetricSpec, PreparedTask, ReferenceSolution, RunRequest, RunResult,
    SessionDirs, StepResult, StepScore, TaskInput, TaskSpec, TaskStep,
};
use agentcompass_plugin_api::sdk::{async_trait, Benchmark, Ctx, EvaluationInput, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::commands::{open_logs, run_checked, tail, LOG_DIRS};
use crate::dataset::{dataset_tasks, task_origin, TaskOrigin};
use crate::discover::task_dirs;
use crate::healthcheck::Healthcheck;
use crate::multistep;
use crate::names::{
    ID, SETUP_SCRIPT, SOLUTION_DIR, STEPS_DIR, TESTS_DIR, TEST_SCRIPT, WORKDIR_DIR,
};
use crate::reward::{self};
use crate::task_toml::{load_task, LoadOptions};
use crate::verifier::{bundled, evaluate_with, Verifier};

/// The harness that runs the reference solution (`solution/solve.sh`).
pub const ORACLE_HARNESS: &str = "oracle";

/// The `solution_env_for_agent` param (default `false`).
fn solution_env_for_agent(req: &RunRequest) -> Result<bool> {
    match req.benchmark.params.get("solution_env_for_agent") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Error::invalid_input(format!(
            "{ID}: param \"solution_env_for_agent\" must be a boolean, found {}",
            json_type_name(other)
        ))),
    }
}

/// Loader options for this request: `solution.env` reaches the agent only for the oracle
/// harness or with `solution_env_for_agent = true`.
fn load_options(req: &RunRequest) -> Result<LoadOptions> {
    Ok(LoadOptions {
        solution_env_for_agent: solution_env_for_agent(req)? || is_oracle(req),
    })
}

fn is_oracle(req: &RunRequest) -> bool {
    req.harness.id == ORACLE_HARNESS
}

/// The evaluator state carried in the typed benchmark plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Absolute host path of the task directory.
    task_dir: String,
    /// The resolved working directory of the task environment, if any.
    pub(crate) workdir: Option<String>,
    /// `[environment.healthcheck]`, run before the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    healthcheck: Option<Healthcheck>,
    /// Who the benchmark's own resets of `/logs` and `/tests` run as: `root` when the task
    /// names a user (Harbor runs them as root), else the image's user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) internal_user: Option<String>,
}

impl Plan {
    /// Runs the environment's health check, if the task declares one.
    async fn environment_healthcheck(&self, ctx: &Ctx, env: &SessionRef) -> Result<()> {
        match &self.healthcheck {
            Some(check) => {
                check
                    .run(ctx, env, self.workdir.as_deref(), "the environment's", None)
                    .await
            }
            None => Ok(()),
        }
    }
}

/// A step's own health check (`[steps.healthcheck]`), if it declares one.
fn step_healthcheck(step: &TaskStep) -> Option<Healthcheck> {
    step.metadata
        .get("healthcheck")
        .cloned()
        .and_then(|check| serde_json::from_value(check).ok())
}

/// The task directory recorded by the loader.
fn task_dir(task: &TaskSpec) -> Result<String> {
    task.metadata
        .get("harbor")
        .and_then(|h| h.get("task_dir"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            Error::invalid_input(format!(
                "{ID}: task {}: metadata.harbor.task_dir is missing (not loaded by {ID})",
                task.task_id
            ))
        })
}

/// The host directory of `step` (`steps/<name>/`).
fn step_dir(task_dir: &str, step: &TaskStep) -> PathBuf {
    Path::new(task_dir).join(STEPS_DIR).join(&step.name)
}

/// Refuses an environment whose session directories are not the container layout Harbor's
/// scripts are written for (`/tests`, `/logs`, `/solution`): on `host_process` they are
/// private directories, and a `test.sh` writing `/logs/verifier` would write the host's root.
fn container_layout(env: &SessionRef) -> Result<()> {
    let info = env.info();
    let dirs = &info.dirs;
    let container = SessionDirs::default();
    if (
        dirs.tests.as_str(),
        dirs.logs.as_str(),
        dirs.solution.as_str(),
    ) == (
        container.tests.as_str(),
        container.logs.as_str(),
        container.solution.as_str(),
    ) {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "{ID}: Harbor tasks write /tests, /logs and /solution, but environment `{}` keeps \
         those per session elsewhere ({}); run them in `sandbox` or `docker`",
        info.provider, dirs.tests
    )))
}

/// The benchmark.
pub struct Harbor;

impl Harbor {
    /// The harness-facing input: the instruction `question`, the workspace and the reference
    /// solution's directory (`solution`, offered to reference harnesses; required for the
    /// oracle).
    fn prepared(
        task: &TaskSpec,
        question: String,
        plan: &Plan,
        req: &RunRequest,
        solution: Option<PathBuf>,
    ) -> Result<PreparedTask> {
        let mut input = TaskInput::new(question);
        input.workspace = plan.workdir.clone();
        let mut prepared = PreparedTask::new(task.task_id.clone(), input);
        prepared.category = task.category.clone();
        // The verifier (tests/) and the reference solution stay on the host.
        prepared.ground_truth = None;

        let mut harbor = serde_json::Map::new();
        if let Some(workdir) = &plan.workdir {
            harbor.insert("workdir".into(), workdir.clone().into());
        }
        match solution {
            // Offered to reference harnesses only: the host removes it for any other.
            Some(solution) => {
                prepared = prepared.with_reference_solution(ReferenceSolution::new(
                    solution.display().to_string(),
                ));
            }
            None if is_oracle(req) => {
                return Err(Error::invalid_input(format!(
                    "{ID}: task {}: the {ORACLE_HARNESS} harness needs {} (missing)",
                    task.task_id,
                    Path::new(&plan.task_dir).join(SOLUTION_DIR).display()
                )));
            }
            None => {}
        }
        if !harbor.is_empty() {
            prepared
                .metadata
                .insert("harbor".into(), Value::Object(harbor));
        }
        Ok(prepared)
    }

    /// Uploads a step's `workdir/` into the environment's working directory (the task's, else
    /// the environment's default) and runs its `setup.sh` there, as Harbor does.
    async fn stage_workdir(
        ctx: &Ctx,
        env: &SessionRef,
        staged: &Path,
        workdir: Option<String>,
        step: &TaskStep,
        user: Option<&str>,
    ) -> Result<()> {
        let as_user = |mut request: ExecRequest| {
            request.user = user.map(str::to_string);
            request
        };
        let workdir = match workdir {
            Some(workdir) => workdir,
            None => {
                let out = env
                    .exec(as_user(ExecRequest::shell("pwd").timeout(60.0)))
                    .await?;
                let pwd = out.stdout.trim();
                if pwd.is_empty() {
                    "/".to_string()
                } else {
                    pwd.to_string()
                }
            }
        };
        env.upload_dir(staged, &workdir).await?;
        if !staged.join(SETUP_SCRIPT).is_file() {
            return Ok(());
        }
        let script = format!("{}/{SETUP_SCRIPT}", workdir.trim_end_matches('/'));
        let mut request = as_user(ExecRequest::argv(["bash", script.as_str()]));
        request.cwd = Some(workdir);
        let out = env.exec(request).await?;
        if out.success() {
            return Ok(());
        }
        Err(Error::environment(format!(
            "{ID}: step `{}`: setup.sh exited with {}: {}",
            step.name,
            out.returncode,
            tail(ctx.scrub(out.stderr.trim()).await.as_str(), 500)
        )))
    }
}

#[async_trait]
impl Benchmark for Harbor {
    /// Tests run in the agent's environment unless a task declares a separate verifier
    /// environment (`TaskSpec.evaluation_environment_mode = fresh`).
    fn evaluation_environment_mode(&self, _req: &RunRequest) -> Result<EvaluationEnvironmentMode> {
        Ok(EvaluationEnvironmentMode::Reuse)
    }

    /// Primary scalar `reward` (mean over tasks) and binary `correct` (`reward >= 1`).
    fn metric_contract(&self) -> Result<MetricContract> {
        Ok(MetricContract {
            metrics: vec![
                MetricSpec {
                    primary: true,
                    label: "Reward".to_string(),
                    description: "The verifier's reward (reward.json `reward` key, or reward.txt)"
                        .to_string(),
                    ..MetricSpec::new(reward::REWARD_KEY, MetricKind::Scalar)
                },
                MetricSpec {
                    label: "Correct".to_string(),
                    description: "reward >= 1".to_string(),
                    ..MetricSpec::new("correct", MetricKind::BinarySuccess)
                },
            ],
        })
    }

    async fn load_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let options = load_options(req)?;
        match task_origin(&req.benchmark.params)? {
            TaskOrigin::Paths(entries) => task_dirs(&entries)?
                .iter()
                .map(|dir| load_task(dir, options))
                .collect(),
            TaskOrigin::Dataset(request) => dataset_tasks(ctx, &request, options).await,
        }
    }

    fn build_plan(
        &self,
        task: &TaskSpec,
        _req: &RunRequest,
        environment: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        // A well-formed task this host cannot run is this task's `unsupported` issue.
        if let Some(reason) = task
            .metadata
            .get("harbor")
            .and_then(|h| h.get("unsupported"))
            .and_then(Value::as_str)
        {
            return Err(Error::unsupported(format!(
                "task {}: {reason}",
                task.task_id
            )));
        }
        let healthcheck = task
            .metadata
            .get("harbor")
            .and_then(|h| h.get("healthcheck"))
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| Error::invalid_input(format!("{ID}: healthcheck: {e}")))?;
        let users = task.run_user.is_some()
            || task.evaluation_user.is_some()
            || task
                .steps
                .iter()
                .any(|s| s.run_user.is_some() || s.evaluation_user.is_some());
        let plan = Plan {
            task_dir: task_dir(task)?,
            workdir: environment.setup.workdir.clone(),
            healthcheck,
            internal_user: users.then(|| "root".to_string()),
        };
        Ok(BenchmarkPlan::default().with_payload(&plan)?)
    }

    async fn prepare_task(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        env: &SessionRef,
        req: &RunRequest,
        plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        let plan: Plan = plan.payload()?;
        container_layout(env)?;
        run_checked(
            ctx,
            env,
            &open_logs(
                format!("mkdir -p {LOG_DIRS}"),
                plan.internal_user.as_deref(),
            ),
            "creating the /logs directories",
            plan.internal_user.as_deref(),
        )
        .await?;
        plan.environment_healthcheck(ctx, env).await?;
        let solution = Path::new(&plan.task_dir).join(SOLUTION_DIR);
        let solution = solution.is_dir().then_some(solution);
        Harbor::prepared(task, task.question.clone(), &plan, req, solution)
    }

    async fn evaluate_attempt(&self, ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let payload: Plan = input.plan.benchmark_plan.payload()?;
        let verifier = Verifier {
            tests: vec![Path::new(&payload.task_dir).join(TESTS_DIR)],
            env: BTreeMap::new(),
            script: "tests/test.sh".into(),
            bundled: bundled(input.task, None, input.plan),
        };
        evaluate_with(
            ctx,
            input,
            payload.workdir,
            payload.internal_user,
            &verifier,
        )
        .await
    }

    async fn prepare_step(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        step: &TaskStep,
        env: &SessionRef,
        req: &RunRequest,
        plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        let plan: Plan = plan.payload()?;
        container_layout(env)?;
        let first = task.steps.first().is_none_or(|s| s.name == step.name);
        // What the previous step's verifier left (its tests and outputs) and the agent logs
        // go before this step's setup or agent can see them.
        let reset = if first {
            format!("mkdir -p {LOG_DIRS}")
        } else {
            format!("mkdir -p {LOG_DIRS} /tests && find /logs/verifier /logs/agent /tests -mindepth 1 -delete")
        };
        let reset = open_logs(reset, plan.internal_user.as_deref());
        let what = "resetting /logs and /tests for the step";
        let root = plan.internal_user.as_deref();
        run_checked(ctx, env, &reset, what, root).await?;
        // Harbor checks the environment once, before the first step.
        if first {
            plan.environment_healthcheck(ctx, env).await?;
        }
        // The step's setup and health check run as its agent does (Harbor's step agent user).
        let user = step.run_user.as_deref().or(task.run_user.as_deref());
        let step_dir = step_dir(&plan.task_dir, step);
        let staged = step_dir.join(WORKDIR_DIR);
        if staged.is_dir() {
            Harbor::stage_workdir(ctx, env, &staged, plan.workdir.clone(), step, user).await?;
        }
        if let Some(check) = step_healthcheck(step) {
            let whose = format!("step `{}`'s", step.name);
            check
                .run(ctx, env, plan.workdir.as_deref(), &whose, user)
                .await?;
        }
        let solution = [
            step_dir.join(SOLUTION_DIR),
            Path::new(&plan.task_dir).join(SOLUTION_DIR),
        ]
        .into_iter()
        .find(|dir| dir.is_dir());
        Harbor::prepared(task, step.question.clone(), &plan, req, solution)
    }

    async fn evaluate_step(
        &self,
        ctx: &Ctx,
        step: &TaskStep,
        input: EvaluationInput<'_>,
    ) -> Result<RunResult> {
        let payload: Plan = input.plan.benchmark_plan.payload()?;
        let step_tests = step_dir(&payload.task_dir, step).join(TESTS_DIR);
        // Harbor uploads the task's tests/ first and the step's over them.
        let tests = [
            Path::new(&payload.task_dir).join(TESTS_DIR),
            step_tests.clone(),
        ]
        .into_iter()
        .filter(|dir| dir.is_dir())
        .collect();
        let script = if step_tests.join(TEST_SCRIPT).is_file() {
            format!("{STEPS_DIR}/{}/{TESTS_DIR}/{TEST_SCRIPT}", step.name)
        } else {
            format!("{TESTS_DIR}/{TEST_SCRIPT}")
        };
        let verifier = Verifier {
            tests,
            env: step
                .metadata
                .get("verifier_env")
                .cloned()
                .and_then(|env| serde_json::from_value(env).ok())
                .unwrap_or_default(),
            script,
            bundled: bundled(input.task, Some(step), input.plan),
        };
        evaluate_with(
            ctx,
            input,
            payload.workdir,
            payload.internal_user,
            &verifier,
        )
        .await
    }

    async fn score_steps(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        steps: &[StepResult],
        _req: &RunRequest,
    ) -> Result<StepScore> {
        Ok(multistep::score(task, steps))
    }
}
