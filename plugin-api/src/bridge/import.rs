//! ABI objects → Rust trait objects. The host wraps every loaded plugin component in one of
//! these adapters (so nothing past the registry knows where a component came from); plugins
//! use the same adapters for the sessions and host services they receive.
//!
//! Every foreign future is polled through [`CatchUnwind`], and every error is prefixed with
//! the component's label (for example `plugin example-pack@0.1.0 harness example_calculator`)
//! and the method name, so a failure always names the plugin it came from.

use std::sync::Arc;

use abi_stable::std_types::RStr;
use async_trait::async_trait;

use crate::abi::request_json::request_json;
use crate::abi::*;
use crate::contracts::{
    AnalysisInput, AnalysisOutcome, ArtifactSpec, BenchmarkPlan, EnvironmentSpec,
    EvaluationEnvironmentMode, ExecutionPlan, HarnessPlan, MetricContract, MetricReport, ModelSpec,
    OpenEnvironmentRequest, PreparedTask, ProviderCapabilities, RunRequest, RunResult, StepResult,
    StepScore, TaskAttempts, TaskSpec, TaskStep,
};
use crate::sdk::{
    Analyzer, Benchmark, Ctx, EnvironmentProvider, EvaluationInput, Harness, HarnessFreeBenchmark,
    HarnessSession, Recipe, SessionRef, TaskStream, VecTaskStream,
};
use crate::{Error, Result};

use super::call::{await_foreign, sync_result, Label};
use super::host::export_ctx;
use super::session::{export_session, import_session, optional_env};
use super::steps::{read_score_answer, score_request, task_with_step};
use crate::abi::json::to_json;

/// A task stream received over the ABI.
struct ImportedTaskStream {
    object: TaskStreamBox,
    label: Label,
}

impl TaskStream for ImportedTaskStream {
    fn total(&self) -> usize {
        usize::try_from(self.object.total()).unwrap_or(usize::MAX)
    }

    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>> {
        let max = u32::try_from(max).unwrap_or(u32::MAX).max(1);
        abi_call!(self.next_page(max))
    }
}

/// A benchmark loaded from a plugin.
pub struct ImportedBenchmark {
    object: BenchmarkBox,
    label: Label,
}

impl ImportedBenchmark {
    /// Wraps a plugin benchmark object.
    pub fn new(object: BenchmarkBox, label: Label) -> Self {
        ImportedBenchmark { object, label }
    }

    /// `prepare_task` with the task already as JSON (a step rides inside it), errors and
    /// decoding labelled with `method`.
    async fn prepare_json(
        &self,
        ctx: &Ctx,
        task: abi_stable::std_types::RString,
        env: &SessionRef,
        req: &RunRequest,
        plan: &BenchmarkPlan,
        method: &str,
    ) -> Result<PreparedTask> {
        let call = self.object.prepare_task(
            export_ctx(ctx),
            task,
            export_session(env),
            request_json(req)?,
            to_json(plan)?,
        );
        let json = await_foreign(call).await.map_err(self.label.err(method))?;
        self.label.decode(method, &json)
    }

    /// `evaluate` with the task JSON `task` (a step's, or the task's own).
    async fn evaluate_json(
        &self,
        ctx: &Ctx,
        task: abi_stable::std_types::RString,
        input: EvaluationInput<'_>,
        method: &str,
    ) -> Result<RunResult> {
        let call = self.object.evaluate(
            export_ctx(ctx),
            task,
            to_json(input.prepared)?,
            to_json(&input.result)?,
            request_json(input.req)?,
            to_json(input.plan)?,
            optional_env(input.env),
        );
        let json = await_foreign(call).await.map_err(self.label.err(method))?;
        self.label.decode(method, &json)
    }
}

#[async_trait]
impl Benchmark for ImportedBenchmark {
    fn evaluation_environment_mode(&self, req: &RunRequest) -> Result<EvaluationEnvironmentMode> {
        let req = request_json(req)?;
        abi_call!(self.evaluation_environment_mode(req.as_rstr()))
    }

    fn metric_contract(&self) -> Result<MetricContract> {
        abi_call!(self.metric_contract())
    }

    async fn load_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        abi_call!(await self.load_tasks(export_ctx(ctx), request_json(req)?))
    }

    async fn load_selected_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let call = self
            .object
            .load_selected_tasks(export_ctx(ctx), request_json(req)?);
        match await_foreign(call).await {
            Ok(json) => self.label.decode("load_selected_tasks", &json),
            Err(e) if e.kind == crate::ErrorKind::Unsupported => {
                let tasks = self.load_tasks(ctx, req).await?;
                self.select_tasks(ctx, tasks, req).await
            }
            Err(e) => Err(e).map_err(self.label.err("load_selected_tasks")),
        }
    }

    async fn open_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Box<dyn TaskStream>> {
        let call = self.object.open_tasks(export_ctx(ctx), request_json(req)?);
        match await_foreign(call).await {
            Ok(object) => Ok(Box::new(ImportedTaskStream {
                object,
                label: self.label.clone(),
            })),
            Err(e) if e.kind == crate::ErrorKind::Unsupported => {
                let tasks = self.load_selected_tasks(ctx, req).await?;
                Ok(Box::new(
                    VecTaskStream::new(tasks).map_err(self.label.err("open_tasks"))?,
                ))
            }
            Err(e) => Err(e).map_err(self.label.err("open_tasks")),
        }
    }

    async fn select_tasks(
        &self,
        ctx: &Ctx,
        tasks: Vec<TaskSpec>,
        req: &RunRequest,
    ) -> Result<Vec<TaskSpec>> {
        let (tasks, req) = (to_json(&tasks)?, request_json(req)?);
        abi_call!(await self.select_tasks(export_ctx(ctx), tasks, req))
    }

    fn build_plan(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        environment: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        let (task, req, env) = (to_json(task)?, request_json(req)?, to_json(environment)?);
        abi_call!(self.build_plan(task.as_rstr(), req.as_rstr(), env.as_rstr()))
    }

    fn resolve_artifacts(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        plan: &ExecutionPlan,
    ) -> Result<Option<Vec<ArtifactSpec>>> {
        let (task, req, plan) = (to_json(task)?, request_json(req)?, to_json(plan)?);
        abi_call!(self.resolve_artifacts(task.as_rstr(), req.as_rstr(), plan.as_rstr()))
    }

    async fn prepare_task(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        env: &SessionRef,
        req: &RunRequest,
        plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        let task = to_json(task)?;
        self.prepare_json(ctx, task, env, req, plan, "prepare_task")
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
        let task = task_with_step(task, step)?;
        self.prepare_json(ctx, task, env, req, plan, "prepare_step")
            .await
    }

    async fn evaluate_step(
        &self,
        ctx: &Ctx,
        step: &TaskStep,
        input: EvaluationInput<'_>,
    ) -> Result<RunResult> {
        self.evaluate_json(
            ctx,
            task_with_step(input.task, step)?,
            input,
            "evaluate_step",
        )
        .await
    }

    async fn score_steps(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        steps: &[StepResult],
        req: &RunRequest,
    ) -> Result<StepScore> {
        let call = self.object.aggregate_metrics(
            export_ctx(ctx),
            score_request(task, steps)?,
            request_json(req)?,
        );
        // A plugin built before steps cannot decode the request (and does nothing).
        match await_foreign(call).await {
            Ok(json) => read_score_answer(&json).map_err(self.label.err("score_steps")),
            Err(_) => Ok(StepScore::last_evaluated(steps)),
        }
    }

    async fn evaluate_attempt(&self, ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let task = to_json(input.task)?;
        self.evaluate_json(ctx, task, input, "evaluate").await
    }

    async fn aggregate_metrics(
        &self,
        ctx: &Ctx,
        results: &[TaskAttempts],
        req: &RunRequest,
    ) -> Result<MetricReport> {
        let (results, req) = (to_json(&results)?, request_json(req)?);
        abi_call!(await self.aggregate_metrics(export_ctx(ctx), results, req))
    }
}

#[async_trait]
impl HarnessFreeBenchmark for ImportedBenchmark {
    async fn run_task(
        &self,
        ctx: &Ctx,
        task: &TaskSpec,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &ExecutionPlan,
        env: Option<&SessionRef>,
    ) -> Result<RunResult> {
        let (task, prepared) = (to_json(task)?, to_json(prepared)?);
        let (req, plan) = (request_json(req)?, to_json(plan)?);
        abi_call!(await self.run_task(export_ctx(ctx), task, prepared, req, plan, optional_env(env)))
    }
}

/// A harness loaded from a plugin.
pub struct ImportedHarness {
    object: HarnessBox,
    label: Label,
}

impl ImportedHarness {
    /// Wraps a plugin harness object.
    pub fn new(object: HarnessBox, label: Label) -> Self {
        ImportedHarness { object, label }
    }

    fn session<'a>(
        &self,
        session: &'a HarnessSession,
        method: &str,
    ) -> Result<&'a HarnessSessionBox> {
        session.downcast_ref::<HarnessSessionBox>().ok_or_else(|| {
            Error::invalid_input(format!(
                "{}: {method}: the session was not started by this harness",
                self.label.as_str()
            ))
        })
    }
}

#[async_trait]
impl Harness for ImportedHarness {
    fn supports(&self, environment: &EnvironmentSpec, model: &ModelSpec) -> Result<bool> {
        let (env, model) = (to_json(environment)?, to_json(model)?);
        abi_call!(raw self.supports(env.as_rstr(), model.as_rstr()))
    }

    fn build_plan(&self, req: &RunRequest, environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        let (req, env) = (request_json(req)?, to_json(environment)?);
        abi_call!(self.build_plan(req.as_rstr(), env.as_rstr()))
    }

    async fn start_session(
        &self,
        ctx: &Ctx,
        env: &SessionRef,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<HarnessSession> {
        let (req, plan) = (request_json(req)?, to_json(plan)?);
        let session = abi_call!(raw await self.start_session(export_ctx(ctx), export_session(env), req, plan))?;
        Ok(Arc::new(session))
    }

    async fn execute_task(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let call = self.session(session, "execute_task")?.execute_task(
            export_ctx(ctx),
            to_json(prepared)?,
            request_json(req)?,
            to_json(plan)?,
        );
        let json = await_foreign(call)
            .await
            .map_err(self.label.err("execute_task"))?;
        self.label.decode("execute_task", &json)
    }

    async fn collect_result(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &HarnessPlan,
        result: RunResult,
    ) -> Result<RunResult> {
        let call = self.session(session, "collect_result")?.collect_result(
            export_ctx(ctx),
            to_json(prepared)?,
            request_json(req)?,
            to_json(plan)?,
            to_json(&result)?,
        );
        let json = await_foreign(call)
            .await
            .map_err(self.label.err("collect_result"))?;
        self.label.decode("collect_result", &json)
    }

    async fn close_session(&self, ctx: &Ctx, session: HarnessSession) -> Result<()> {
        let call = self
            .session(&session, "close_session")?
            .close(export_ctx(ctx));
        await_foreign(call)
            .await
            .map_err(self.label.err("close_session"))
    }
}

/// An environment provider loaded from a plugin.
pub struct ImportedEnvironment {
    object: EnvironmentBox,
    label: Label,
}

impl ImportedEnvironment {
    /// Wraps a plugin provider object.
    pub fn new(object: EnvironmentBox, label: Label) -> Self {
        ImportedEnvironment { object, label }
    }
}

#[async_trait]
impl EnvironmentProvider for ImportedEnvironment {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        abi_call!(self.capabilities())
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        let plan = to_json(plan)?;
        abi_call!(raw self.validate_plan(plan.as_rstr()))
    }

    async fn open(&self, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let session = abi_call!(raw await self.open(export_ctx(ctx), to_json(request)?))?;
        Ok(import_session(session))
    }

    async fn close(&self, ctx: &Ctx, close_params: &serde_json::Value) -> Result<()> {
        abi_call!(raw await self.close(export_ctx(ctx), to_json(close_params)?))
    }
}

/// A recipe loaded from a plugin.
pub struct ImportedRecipe {
    object: RecipeBox,
    label: Label,
}

impl ImportedRecipe {
    /// Wraps a plugin recipe object.
    pub fn new(object: RecipeBox, label: Label) -> Self {
        ImportedRecipe { object, label }
    }
}

impl Recipe for ImportedRecipe {
    fn matches(&self, req: &RunRequest, task: &TaskSpec, plan: &ExecutionPlan) -> Result<bool> {
        let (req, task, plan) = (request_json(req)?, to_json(task)?, to_json(plan)?);
        abi_call!(raw self.matches(req.as_rstr(), task.as_rstr(), plan.as_rstr()))
    }

    fn apply(
        &self,
        plan: ExecutionPlan,
        req: &RunRequest,
        task: &TaskSpec,
    ) -> Result<ExecutionPlan> {
        let (plan, req, task) = (to_json(&plan)?, request_json(req)?, to_json(task)?);
        abi_call!(self.apply(plan.as_rstr(), req.as_rstr(), task.as_rstr()))
    }
}

/// An analyzer loaded from a plugin: the recipe object `new_recipe("analyzer:ID")` returned
/// (see [`ANALYZER_FACTORY_PREFIX`]).
pub struct ImportedAnalyzer {
    object: RecipeBox,
    label: Label,
}

impl ImportedAnalyzer {
    /// Wraps the object carrying a plugin analyzer.
    pub fn new(object: RecipeBox, label: Label) -> Self {
        ImportedAnalyzer { object, label }
    }
}

impl Analyzer for ImportedAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let input = to_json(input)?;
        let none = RStr::from("");
        let json = sync_result(self.object.apply(input.as_rstr(), none, none))
            .map_err(self.label.err("analyze"))?;
        self.label.decode("analyze", &json)
    }
}

/// A component's typed-parameter validator loaded from a plugin: the recipe object
/// `new_recipe("params:KIND:ID")` returned (see [`crate::abi::PARAMS_FACTORY_PREFIX`]).
pub struct ImportedParams {
    object: RecipeBox,
    label: Label,
}

impl ImportedParams {
    /// Wraps the object carrying a plugin component's params validator.
    pub fn new(object: RecipeBox, label: Label) -> Self {
        ImportedParams { object, label }
    }

    /// `params` with every default filled in, or the plugin's refusal.
    pub fn validate(
        &self,
        params: &crate::contracts::JsonMap,
    ) -> Result<crate::contracts::JsonMap> {
        let params = to_json(params)?;
        let none = RStr::from("");
        let json = sync_result(self.object.apply(params.as_rstr(), none, none))
            .map_err(self.label.err("validate params"))?;
        self.label.decode("validate params", &json)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use std::path::Path;

    use super::*;
    use crate::contracts::{ExecRequest, ExecResult, NetworkPolicy, SessionInfo};
    use crate::sdk::EnvironmentSession;

    /// A session keeping files in memory (stands in for a provider's session).
    #[derive(Default)]
    struct MemorySession(Mutex<HashMap<String, String>>);

    #[async_trait]
    impl EnvironmentSession for MemorySession {
        fn info(&self) -> SessionInfo {
            SessionInfo {
                id: "mem-1".into(),
                provider: "memory".into(),
                ..SessionInfo::default()
            }
        }
        async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
            Ok(ExecResult::new(0, format!("{:?}", request.command), ""))
        }
        async fn upload(&self, _: &Path, _: &str) -> Result<()> {
            Ok(())
        }
        async fn download(&self, _: &str, _: &Path) -> Result<()> {
            Ok(())
        }
        async fn upload_dir(&self, _: &Path, _: &str) -> Result<()> {
            Ok(())
        }
        async fn download_dir(&self, _: &str, _: &Path) -> Result<()> {
            Ok(())
        }
        async fn read_text(&self, path: &str) -> Result<String> {
            let files = self.0.lock().map_err(|_| Error::msg("poisoned"))?;
            files
                .get(path)
                .cloned()
                .ok_or_else(|| Error::environment(format!("{path}: no such file")))
        }
        async fn write_text(&self, path: &str, content: &str) -> Result<()> {
            let mut files = self.0.lock().map_err(|_| Error::msg("poisoned"))?;
            files.insert(path.into(), content.into());
            Ok(())
        }
        async fn is_file(&self, path: &str) -> Result<bool> {
            Ok(self
                .0
                .lock()
                .map_err(|_| Error::msg("poisoned"))?
                .contains_key(path))
        }
        async fn is_dir(&self, _: &str) -> Result<bool> {
            Ok(false)
        }
        async fn close(&self) -> Result<()> {
            Ok(())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sessions_cross_the_boundary_and_are_never_wrapped_twice() {
        let native: SessionRef = Arc::new(MemorySession::default());
        let exported = export_session(&native);
        let imported = import_session(exported);
        assert_eq!(imported.info().provider, "memory");
        imported.write_text("/a.txt", "hello").await.unwrap();
        assert_eq!(native.read_text("/a.txt").await.unwrap(), "hello");
        assert!(imported.is_file("/a.txt").await.unwrap());
        let err = imported.read_text("/missing").await.unwrap_err();
        assert_eq!(
            err.message,
            "environment memory session mem-1: read_text: /missing: no such file"
        );
        // Handing the imported session to another plugin passes the same ABI object on.
        let again = export_session(&imported);
        let twice = import_session(again);
        assert_eq!(twice.read_text("/a.txt").await.unwrap(), "hello");
        assert!(imported.abi_object().is_some());
        // The default network-policy switch refuses anything but public.
        let refused = imported
            .set_network_policy(&NetworkPolicy::no_network())
            .await
            .unwrap_err();
        assert!(
            refused.message.contains("cannot switch network policies"),
            "{refused}"
        );
    }

    /// A benchmark that tells its step calls from its task calls.
    struct Stepped {
        steps: bool,
    }

    #[async_trait]
    impl Benchmark for Stepped {
        async fn load_tasks(&self, _: &Ctx, _: &RunRequest) -> Result<Vec<TaskSpec>> {
            Ok(vec![])
        }
        async fn prepare_task(
            &self,
            _: &Ctx,
            task: &TaskSpec,
            _: &SessionRef,
            _: &RunRequest,
            _: &BenchmarkPlan,
        ) -> Result<PreparedTask> {
            Ok(PreparedTask::new(
                task.task_id.clone(),
                crate::contracts::TaskInput::new(format!("task: {}", task.question)),
            ))
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
            if !self.steps {
                // What the SDK's default does.
                let mut task = task.clone();
                task.question = step.question.clone();
                return self.prepare_task(ctx, &task, env, req, plan).await;
            }
            Ok(PreparedTask::new(
                task.task_id.clone(),
                crate::contracts::TaskInput::new(format!(
                    "step {}: {} (task: {})",
                    step.name, step.question, task.question
                )),
            ))
        }
        async fn evaluate_attempt(&self, _: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
            let mut result = input.result;
            result.extra.insert("by".into(), "evaluate_attempt".into());
            Ok(result)
        }
        async fn evaluate_step(
            &self,
            ctx: &Ctx,
            step: &TaskStep,
            input: EvaluationInput<'_>,
        ) -> Result<RunResult> {
            if !self.steps {
                return self.evaluate_attempt(ctx, input).await;
            }
            let mut result = input.result;
            result
                .extra
                .insert("by".into(), format!("evaluate_step {}", step.name).into());
            Ok(result)
        }
        async fn score_steps(
            &self,
            _: &Ctx,
            _: &TaskSpec,
            steps: &[StepResult],
            _: &RunRequest,
        ) -> Result<StepScore> {
            if !self.steps {
                return Ok(StepScore::last_evaluated(steps));
            }
            if steps.is_empty() {
                return Err(Error::invalid_input("no steps"));
            }
            Ok(StepScore {
                stop: true,
                reason: Some(format!("{} steps", steps.len())),
                ..StepScore::default()
            })
        }
    }

    fn imported(steps: bool) -> ImportedBenchmark {
        let object =
            super::super::export::BenchmarkExport::boxed(Arc::new(Stepped { steps }), None);
        ImportedBenchmark::new(object, Label::new("plugin p benchmark stepped"))
    }

    #[tokio::test(flavor = "current_thread")]
    async fn step_calls_cross_the_boundary_on_the_task_methods() {
        let (bench, ctx) = (imported(true), Ctx::detached());
        let env: SessionRef = Arc::new(MemorySession::default());
        let (task, req) = (TaskSpec::new("t", "whole"), RunRequest::default());
        let step = TaskStep::new("one", "first");
        let plan = BenchmarkPlan::default();
        let prepared = bench
            .prepare_step(&ctx, &task, &step, &env, &req, &plan)
            .await
            .unwrap();
        assert_eq!(prepared.input.prompt, "step one: first (task: whole)");
        let prepared = bench
            .prepare_task(&ctx, &task, &env, &req, &plan)
            .await
            .unwrap();
        assert_eq!(prepared.input.prompt, "task: whole");
        let exec_plan = ExecutionPlan::default();
        let input = || EvaluationInput {
            task: &task,
            prepared: &prepared,
            result: RunResult::new("t"),
            req: &req,
            plan: &exec_plan,
            env: None,
        };
        let stepped = bench.evaluate_step(&ctx, &step, input()).await.unwrap();
        assert_eq!(stepped.extra["by"], "evaluate_step one");
        let whole = bench.evaluate_attempt(&ctx, input()).await.unwrap();
        assert_eq!(whole.extra["by"], "evaluate_attempt");
        let done = [StepResult {
            name: "one".into(),
            ..StepResult::default()
        }];
        let score = bench.score_steps(&ctx, &task, &done, &req).await.unwrap();
        assert_eq!(
            (score.stop, score.reason.as_deref()),
            (true, Some("1 steps"))
        );
        let err = bench.score_steps(&ctx, &task, &[], &req).await.unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::InvalidInput);
        assert!(err.message.ends_with("score_steps: no steps"), "{err}");
        // Ordinary metric aggregation is untouched.
        let report = bench.aggregate_metrics(&ctx, &[], &req).await.unwrap();
        assert_eq!(report.series.len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn step_defaults_use_the_task_methods() {
        let (bench, ctx) = (imported(false), Ctx::detached());
        let env: SessionRef = Arc::new(MemorySession::default());
        let (task, req) = (TaskSpec::new("t", "whole"), RunRequest::default());
        let prepared = bench
            .prepare_step(
                &ctx,
                &task,
                &TaskStep::new("one", "first"),
                &env,
                &req,
                &BenchmarkPlan::default(),
            )
            .await
            .unwrap();
        assert_eq!(prepared.input.prompt, "task: first");
        let done = [StepResult {
            name: "one".into(),
            ..StepResult::default()
        }];
        let score = bench.score_steps(&ctx, &task, &done, &req).await.unwrap();
        assert!(score.stop);
    }
}
