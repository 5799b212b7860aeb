//! The component traits. Built-in components implement them directly; plugins implement them
//! and export them with [`crate::export_plugin!`]; the host wraps loaded plugin objects in
//! adapters implementing the same traits, so nothing past the registry knows where a component
//! came from.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::Ctx;
use crate::abi::SessionBox;
use crate::contracts::{
    AnalysisInput, AnalysisOutcome, ArtifactSpec, BenchmarkPlan, EnvironmentSpec,
    EvaluationEnvironmentMode, ExecRequest, ExecResult, ExecutionPlan, HarnessPlan, MetricContract,
    MetricReport, ModelSpec, NetworkPolicy, OpenEnvironmentRequest, PreparedTask,
    ProviderCapabilities, RunRequest, RunResult, SessionInfo, StepResult, StepScore, TaskAttempts,
    TaskSpec, TaskStep,
};
use crate::{Error, Result};

/// A shared, open environment session.
pub type SessionRef = Arc<dyn EnvironmentSession>;

/// The state a harness keeps between `start_session` and `close_session`.
pub type HarnessSession = Arc<dyn Any + Send + Sync>;

/// The state `start_session` put into `session`, as a `T` (what `execute_task`,
/// `collect_result` and `close_session` start with); an error naming `harness` when the
/// session holds something else, e.g. one another harness started.
///
/// ```
/// use std::sync::Arc;
/// use agentcompass_plugin_api::sdk::{downcast_session, HarnessSession};
///
/// struct Mine(u8);
/// let session: HarnessSession = Arc::new(Mine(7));
/// assert_eq!(downcast_session::<Mine>(&session, "my_agent").map(|m| m.0).ok(), Some(7));
/// let err = downcast_session::<String>(&session, "my_agent").err().map(|e| e.to_string());
/// assert_eq!(err.as_deref(), Some("my_agent: foreign harness session"));
/// ```
pub fn downcast_session<'a, T: Any>(session: &'a HarnessSession, harness: &str) -> Result<&'a T> {
    session
        .downcast_ref::<T>()
        .ok_or_else(|| Error::msg(format!("{harness}: foreign harness session")))
}

/// What [`Benchmark::evaluate_attempt`] scores: one attempt of one task.
pub struct EvaluationInput<'a> {
    /// The task.
    pub task: &'a TaskSpec,
    /// What the harness saw.
    pub prepared: &'a PreparedTask,
    /// The attempt's run result, to be scored and returned.
    pub result: RunResult,
    /// The resolved run request.
    pub req: &'a RunRequest,
    /// The attempt's final execution plan.
    pub plan: &'a ExecutionPlan,
    /// The evaluation environment, if the mode has one.
    pub env: Option<&'a SessionRef>,
}

impl<'a> EvaluationInput<'a> {
    /// The evaluation environment: the task's own in `reuse` mode, a fresh one in `fresh`
    /// mode; an error in `none` mode (declare `reuse` or `fresh` in
    /// [`Benchmark::evaluation_environment_mode`] to evaluate in an environment).
    pub fn environment(&self) -> Result<&'a SessionRef> {
        self.env.ok_or_else(|| {
            Error::msg(
                "this attempt has no evaluation environment (evaluation mode `none`): declare \
                 `reuse` or `fresh` in evaluation_environment_mode",
            )
        })
    }
}

/// What [`Benchmark::prepare`] gets: one task, or one step of a multi-step task, in the
/// task environment.
pub struct PrepareInput<'a> {
    /// The task.
    pub task: &'a TaskSpec,
    /// The step being prepared (multi-step tasks only).
    pub step: Option<&'a TaskStep>,
    /// The task environment.
    pub env: &'a SessionRef,
    /// The resolved run request.
    pub req: &'a RunRequest,
    /// The benchmark's plan for this attempt.
    pub plan: &'a BenchmarkPlan,
}

/// Loads tasks, prepares them for the harness and scores the results.
#[async_trait]
pub trait Benchmark: Send + Sync + 'static {
    /// The benchmark's default evaluation environment mode (`none` unless overridden).
    fn evaluation_environment_mode(&self, _req: &RunRequest) -> Result<EvaluationEnvironmentMode> {
        Ok(EvaluationEnvironmentMode::default())
    }

    /// The metrics this benchmark observes (default: primary binary `correct`).
    fn metric_contract(&self) -> Result<MetricContract> {
        Ok(MetricContract::correct())
    }

    /// Loads every task with a stable `task_id`, in a deterministic order.
    async fn load_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>>;

    /// Selects the tasks to run (default: the `sample_ids` parameter, if given).
    async fn select_tasks(
        &self,
        _ctx: &Ctx,
        tasks: Vec<TaskSpec>,
        req: &RunRequest,
    ) -> Result<Vec<TaskSpec>> {
        super::select::select_by_sample_ids(tasks, req)
    }

    /// The tasks to run: `load_tasks` then `select_tasks`.
    async fn load_selected_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let tasks = self.load_tasks(ctx, req).await?;
        self.select_tasks(ctx, tasks, req).await
    }

    /// The tasks to run as a stream read a page at a time (what the runtime calls). The
    /// default serves [`Benchmark::load_selected_tasks`] from memory; a benchmark with a large
    /// dataset overrides it so that neither side ever holds every task (the host keeps only
    /// the tasks of the page it is scheduling). Errors in the data should be found here, so
    /// bad input is refused before a run starts.
    async fn open_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Box<dyn TaskStream>> {
        let tasks = self.load_selected_tasks(ctx, req).await?;
        Ok(Box::new(VecTaskStream::new(tasks)?))
    }

    /// Builds the benchmark-private plan for one task attempt. No I/O.
    fn build_plan(
        &self,
        _task: &TaskSpec,
        _req: &RunRequest,
        _environment: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        Ok(BenchmarkPlan::default())
    }

    /// Adjusts artifact paths after recipes ran (`None` keeps the planner's list). No I/O.
    fn resolve_artifacts(
        &self,
        _task: &TaskSpec,
        _req: &RunRequest,
        _plan: &ExecutionPlan,
    ) -> Result<Option<Vec<ArtifactSpec>>> {
        Ok(None)
    }

    /// Prepares the harness-facing input of a task or (with `input.step`) one step of it; may
    /// create files in the environment. Must be safe to repeat (retries call it again) and
    /// must not expose hidden answers. The host calls only this one; its default calls
    /// [`Benchmark::prepare_step`] or [`Benchmark::prepare_task`], so implement either this
    /// or those.
    async fn prepare(&self, ctx: &Ctx, input: PrepareInput<'_>) -> Result<PreparedTask> {
        match input.step {
            Some(step) => {
                self.prepare_step(ctx, input.task, step, input.env, input.req, input.plan)
                    .await
            }
            None => {
                self.prepare_task(ctx, input.task, input.env, input.req, input.plan)
                    .await
            }
        }
    }

    /// Prepares the harness-facing input; may create files in the environment. Must be safe
    /// to repeat (retries call it again) and must not expose hidden answers.
    ///
    /// The default is [`PreparedTask::from_task`]: the task's id, question and category.
    async fn prepare_task(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        _env: &SessionRef,
        _req: &RunRequest,
        _plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        Ok(PreparedTask::from_task(task))
    }

    /// Scores one attempt; owns `metrics`, correctness and evaluation errors. `input.env` is
    /// the evaluation environment (the task's own in `reuse` mode, a fresh one in `fresh`
    /// mode, none in `none` mode).
    ///
    /// Implement this method. Its default calls [`Benchmark::evaluate`], so benchmarks written
    /// against the seven-argument form keep building and running unchanged.
    async fn evaluate_attempt(&self, ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        #[allow(deprecated)]
        self.evaluate(
            ctx,
            input.task,
            input.prepared,
            input.result,
            input.req,
            input.plan,
            input.env,
        )
        .await
    }

    /// The former form of [`Benchmark::evaluate_attempt`], kept for benchmarks written against
    /// it; the host only calls `evaluate_attempt`.
    #[deprecated(note = "implement `evaluate_attempt`, which takes one `EvaluationInput`")]
    #[allow(clippy::too_many_arguments)]
    async fn evaluate(
        &self,
        _ctx: &Ctx,
        _task: &TaskSpec,
        _prepared: &PreparedTask,
        _result: RunResult,
        _req: &RunRequest,
        _plan: &ExecutionPlan,
        _env: Option<&SessionRef>,
    ) -> Result<RunResult> {
        Err(Error::msg(
            "this benchmark implements neither `evaluate_attempt` nor `evaluate`",
        ))
    }

    /// Prepares one step of a multi-step task ([`TaskSpec::steps`]) in the task environment,
    /// which holds whatever the earlier steps left there. Like `prepare_task`, it must be safe
    /// to repeat and must not expose hidden answers.
    ///
    /// The default is [`Benchmark::prepare_task`] on a copy of the task whose question is the
    /// step's (when the step has one).
    async fn prepare_step(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        step: &TaskStep,
        env: &SessionRef,
        req: &RunRequest,
        plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        if step.question.is_empty() {
            return self.prepare_task(ctx, task, env, req, plan).await;
        }
        let mut task = task.clone();
        task.question = step.question.clone();
        self.prepare_task(ctx, &task, env, req, plan).await
    }

    /// Scores one step of a multi-step task: `input.prepared` is what `prepare_step` returned
    /// for it and `input.result` the step's run result; `input.env` is the task environment
    /// (steps are evaluated in it, `reuse`) or none (`none`).
    ///
    /// The default is [`Benchmark::evaluate_attempt`].
    async fn evaluate_step(
        &self,
        ctx: &Ctx,
        step: &TaskStep,
        input: EvaluationInput<'_>,
    ) -> Result<RunResult> {
        let _ = step;
        self.evaluate_attempt(ctx, input).await
    }

    /// The verdict after each finished step of a multi-step task (`steps` holds every step
    /// run so far, in order): whether the remaining steps run, and the attempt's metrics over
    /// the steps so far (the last verdict's are the attempt's). It should do no I/O.
    ///
    /// The default ([`StepScore::last_evaluated`]) stops after a step that was not evaluated
    /// and scores the attempt by the last evaluated step.
    async fn score_steps(
        &self,
        _ctx: &Ctx,
        _task: &TaskSpec,
        steps: &[StepResult],
        _req: &RunRequest,
    ) -> Result<StepScore> {
        Ok(StepScore::last_evaluated(steps))
    }

    /// Request-level metrics (default: contract-driven mean of each metric).
    async fn aggregate_metrics(
        &self,
        _ctx: &Ctx,
        results: &[TaskAttempts],
        req: &RunRequest,
    ) -> Result<MetricReport> {
        super::metrics::default_report(&self.metric_contract()?, results, req)
    }
}

/// The selected tasks of a benchmark, read in order a page at a time (see
/// [`Benchmark::open_tasks`]). Pages are read between task launches, so `next_page` should
/// not block for long (reading a local file is fine; fetch remote data in `open_tasks`).
pub trait TaskStream: Send + 'static {
    /// How many tasks the stream yields in all.
    fn total(&self) -> usize;

    /// Up to `max` (at least one) next tasks; empty once every task was returned.
    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>>;
}

/// A [`TaskStream`] over tasks already in memory.
pub struct VecTaskStream {
    tasks: std::vec::IntoIter<TaskSpec>,
    total: usize,
}

impl VecTaskStream {
    /// Serves `tasks` in order; a task id that occurs twice is refused.
    pub fn new(tasks: Vec<TaskSpec>) -> Result<Self> {
        let mut seen = std::collections::HashSet::with_capacity(tasks.len());
        if let Some(dup) = tasks.iter().find(|t| !seen.insert(t.task_id.as_str())) {
            return Err(crate::Error::invalid_input(format!(
                "task id `{}` occurs twice",
                dup.task_id
            )));
        }
        Ok(VecTaskStream {
            total: tasks.len(),
            tasks: tasks.into_iter(),
        })
    }
}

impl TaskStream for VecTaskStream {
    fn total(&self) -> usize {
        self.total
    }

    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>> {
        Ok(self.tasks.by_ref().take(max.max(1)).collect())
    }
}

/// A benchmark that runs tasks itself (selected with harness id `none`).
#[async_trait]
pub trait HarnessFreeBenchmark: Benchmark {
    /// Replaces the harness stage.
    async fn run_task(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &ExecutionPlan,
        env: Option<&SessionRef>,
    ) -> Result<RunResult>;
}

/// The agent under test.
#[async_trait]
pub trait Harness: Send + Sync + 'static {
    /// Whether this harness can run in `environment` with `model`.
    fn supports(&self, _environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(true)
    }

    /// Builds the harness plan after config validation. No I/O.
    fn build_plan(&self, _req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Ok(HarnessPlan::default())
    }

    /// Starts a session in the task environment.
    async fn start_session(
        &self,
        ctx: &Ctx,
        env: &SessionRef,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<HarnessSession>;

    /// Runs the task; returns status, answer, trajectory, artifacts and execution errors.
    async fn execute_task(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<RunResult>;

    /// Read-only recovery of saved output after execution (default: keep the result).
    async fn collect_result(
        &self,
        _ctx: &Ctx,
        _session: &HarnessSession,
        _prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &HarnessPlan,
        result: RunResult,
    ) -> Result<RunResult> {
        Ok(result)
    }

    /// Releases the session.
    async fn close_session(&self, _ctx: &Ctx, _session: HarnessSession) -> Result<()> {
        Ok(())
    }
}

/// Creates sandboxes and enforces their policies.
#[async_trait]
pub trait EnvironmentProvider: Send + Sync + 'static {
    /// What the provider can enforce.
    fn capabilities(&self) -> Result<ProviderCapabilities>;

    /// Refuses a plan the provider cannot enforce, before anything is allocated.
    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        super::validate::validate_against_capabilities(&self.capabilities()?, plan)
    }

    /// Opens an environment for one task attempt (or its fresh evaluation).
    async fn open(&self, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef>;

    /// Releases an environment from its persisted `close_params` (crash recovery,
    /// `env close`).
    async fn close(&self, _ctx: &Ctx, _close_params: &serde_json::Value) -> Result<()> {
        Ok(())
    }
}

/// An open environment.
#[async_trait]
pub trait EnvironmentSession: Send + Sync + 'static {
    /// Identity, provider and default working directory.
    fn info(&self) -> SessionInfo;
    /// Runs a command (`shell=false` argv or `shell=true` string).
    async fn exec(&self, request: ExecRequest) -> Result<ExecResult>;
    /// Copies a host file into the environment.
    async fn upload(&self, src: &Path, dst: &str) -> Result<()>;
    /// Copies a file out of the environment.
    async fn download(&self, src: &str, dst: &Path) -> Result<()>;
    /// Copies a host directory into the environment (modes preserved).
    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()>;
    /// Copies a directory out of the environment (modes preserved).
    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()>;
    /// Reads a UTF-8 file.
    async fn read_text(&self, path: &str) -> Result<String>;
    /// Writes a UTF-8 file (parents created).
    async fn write_text(&self, path: &str, content: &str) -> Result<()>;
    /// Whether a regular file exists.
    async fn is_file(&self, path: &str) -> Result<bool>;
    /// Whether a directory exists.
    async fn is_dir(&self, path: &str) -> Result<bool>;
    /// The environment's service endpoint, if it has one.
    async fn endpoint(&self) -> Result<Option<String>> {
        Ok(None)
    }
    /// Switches the network policy; the default accepts only the current (public) policy.
    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        if *policy == NetworkPolicy::default() {
            Ok(())
        } else {
            Err(crate::Error::unsupported(format!(
                "environment `{}` cannot switch network policies at run time",
                self.info().provider
            )))
        }
    }
    /// Releases the environment.
    async fn close(&self) -> Result<()>;

    /// The ABI object behind this session when it came from a plugin (lets the host pass it
    /// on to another plugin without wrapping it twice).
    fn abi_object(&self) -> Option<SessionBox> {
        None
    }
}

/// A plan adapter. Both methods run during planning: no environment, no model, no task files.
pub trait Recipe: Send + Sync + 'static {
    /// Whether the recipe applies to this task attempt.
    fn matches(&self, req: &RunRequest, task: &TaskSpec, plan: &ExecutionPlan) -> Result<bool>;
    /// Returns the adapted copy of `plan`, preserving compatible explicit user choices.
    fn apply(
        &self,
        plan: ExecutionPlan,
        req: &RunRequest,
        task: &TaskSpec,
    ) -> Result<ExecutionPlan>;
}

/// Finds bad cases in one finished attempt (upstream's `BaseAnalyzer`). Runs after the attempt
/// is evaluated, or later over a persisted run (`agentcompass-host analysis`); it reads only
/// the persisted result, never an environment or a model, and its failure is recorded in
/// `analysis_result[family].error`, never failing the task.
pub trait Analyzer: Send + Sync + 'static {
    /// Analyzes one attempt.
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome>;
}
