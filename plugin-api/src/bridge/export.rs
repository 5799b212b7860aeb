//! Rust trait objects → ABI objects. Plugins export their components through these wrappers;
//! the host exports its sessions and host services through them. Every method body runs under
//! [`guard`](crate::abi::guard), so a panic or a bad value becomes a [`PluginError`].

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RResult, RStr, RString};
use async_ffi::FfiFuture;

use crate::abi::guard::{async_call, sync_call};
use crate::abi::request_json::decode_request;
use crate::abi::*;
use crate::sdk::{
    Analyzer, Benchmark, EnvironmentProvider, EvaluationInput, Harness, HarnessFreeBenchmark,
    HarnessSession, PrepareInput, Recipe, TaskStream,
};
use crate::Error;

use super::consume;
use super::host::import_ctx;
use super::session::{export_session, import_session, optional_session};
use super::steps::{score_answer, score_request_of, task_and_step};
use crate::abi::json::{from_json, to_json};

/// A benchmark exported over the ABI.
pub struct BenchmarkExport {
    benchmark: Arc<dyn Benchmark>,
    harness_free: Option<Arc<dyn HarnessFreeBenchmark>>,
}

impl BenchmarkExport {
    /// Wraps a benchmark (and its harness-free side, if it has one) into an ABI object.
    pub fn boxed(
        benchmark: Arc<dyn Benchmark>,
        harness_free: Option<Arc<dyn HarnessFreeBenchmark>>,
    ) -> BenchmarkBox {
        BenchmarkAbi_TO::from_value(
            BenchmarkExport {
                benchmark,
                harness_free,
            },
            TD_Opaque,
        )
    }
}

impl BenchmarkAbi for BenchmarkExport {
    fn evaluation_environment_mode(&self, req: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let req = decode_request(req.as_str())?;
            to_json(&self.benchmark.evaluation_environment_mode(&req)?)
        })
    }

    fn metric_contract(&self) -> JsonResult {
        sync_call(|| to_json(&self.benchmark.metric_contract()?))
    }

    fn load_tasks(&self, ctx: HostBox, req: RString) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let req = consume(req, decode_request)?;
            to_json(&b.load_tasks(&import_ctx(ctx), &req).await?)
        })
    }

    fn load_selected_tasks(&self, ctx: HostBox, req: RString) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let req = consume(req, decode_request)?;
            to_json(&b.load_selected_tasks(&import_ctx(ctx), &req).await?)
        })
    }

    fn open_tasks(
        &self,
        ctx: HostBox,
        req: RString,
    ) -> FfiFuture<RResult<TaskStreamBox, PluginError>> {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let req = consume(req, decode_request)?;
            let stream = b.open_tasks(&import_ctx(ctx), &req).await?;
            Ok(TaskStreamAbi_TO::from_value(
                TaskStreamExport(stream),
                TD_Opaque,
            ))
        })
    }

    fn select_tasks(&self, ctx: HostBox, tasks: RString, req: RString) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let tasks = consume(tasks, |text| from_json(text, "task list"))?;
            let req = consume(req, decode_request)?;
            to_json(&b.select_tasks(&import_ctx(ctx), tasks, &req).await?)
        })
    }

    fn build_plan(&self, task: RStr<'_>, req: RStr<'_>, environment: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let task = from_json(task.as_str(), "task")?;
            let req = decode_request(req.as_str())?;
            let environment = from_json(environment.as_str(), "environment spec")?;
            to_json(&self.benchmark.build_plan(&task, &req, &environment)?)
        })
    }

    fn resolve_artifacts(&self, task: RStr<'_>, req: RStr<'_>, plan: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let task = from_json(task.as_str(), "task")?;
            let req = decode_request(req.as_str())?;
            let plan = from_json(plan.as_str(), "execution plan")?;
            to_json(&self.benchmark.resolve_artifacts(&task, &req, &plan)?)
        })
    }

    fn prepare_task(
        &self,
        ctx: HostBox,
        task: RString,
        env: SessionBox,
        req: RString,
        plan: RString,
    ) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let (task, step) = consume(task, task_and_step)?;
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "benchmark plan"))?;
            let env = import_session(env);
            let ctx = import_ctx(ctx);
            let input = PrepareInput {
                task: &task,
                step: step.as_ref(),
                env: &env,
                req: &req,
                plan: &plan,
            };
            let prepared = b.prepare(&ctx, input).await?;
            to_json(&prepared)
        })
    }

    fn evaluate(
        &self,
        ctx: HostBox,
        task: RString,
        prepared: RString,
        result: RString,
        req: RString,
        plan: RString,
        env: ROption<SessionBox>,
    ) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            let (task, step) = consume(task, task_and_step)?;
            let prepared = consume(prepared, |text| from_json(text, "prepared task"))?;
            let result = consume(result, |text| from_json(text, "run result"))?;
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "execution plan"))?;
            let env = optional_session(env);
            let ctx = import_ctx(ctx);
            let input = EvaluationInput {
                task: &task,
                prepared: &prepared,
                result,
                req: &req,
                plan: &plan,
                env: env.as_ref(),
            };
            let evaluated = match step {
                Some(step) => b.evaluate_step(&ctx, &step, input).await?,
                None => b.evaluate_attempt(&ctx, input).await?,
            };
            to_json(&evaluated)
        })
    }

    fn aggregate_metrics(&self, ctx: HostBox, results: RString, req: RString) -> JsonFuture {
        let b = self.benchmark.clone();
        async_call(None, async move {
            if let Some(request) = score_request_of(&results) {
                let score = match (request, decode_request(&req)) {
                    (Ok((task, steps)), Ok(req)) => {
                        b.score_steps(&import_ctx(ctx), &task, &steps, &req).await
                    }
                    (Err(e), _) | (_, Err(e)) => Err(e),
                };
                return score_answer(score);
            }
            let results: Vec<_> = from_json(&results, "task results")?;
            let req = consume(req, decode_request)?;
            to_json(
                &b.aggregate_metrics(&import_ctx(ctx), &results, &req)
                    .await?,
            )
        })
    }

    fn run_task(
        &self,
        ctx: HostBox,
        task: RString,
        prepared: RString,
        req: RString,
        plan: RString,
        env: ROption<SessionBox>,
    ) -> JsonFuture {
        let b = self.harness_free.clone();
        async_call(None, async move {
            let b =
                b.ok_or_else(|| Error::unsupported("run_task: not a harness-free benchmark"))?;
            let task = consume(task, |text| from_json(text, "task"))?;
            let prepared = consume(prepared, |text| from_json(text, "prepared task"))?;
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "execution plan"))?;
            let env = optional_session(env);
            let ctx = import_ctx(ctx);
            to_json(
                &b.run_task(&ctx, &task, &prepared, &req, &plan, env.as_ref())
                    .await?,
            )
        })
    }
}

/// A task stream exported over the ABI.
struct TaskStreamExport(Box<dyn TaskStream>);

impl TaskStreamAbi for TaskStreamExport {
    fn total(&self) -> u64 {
        self.0.total() as u64
    }

    fn next_page(&mut self, max: u32) -> JsonResult {
        sync_call(|| to_json(&self.0.next_page(max as usize)?))
    }
}

/// A harness exported over the ABI.
pub struct HarnessExport {
    harness: Arc<dyn Harness>,
}

impl HarnessExport {
    /// Wraps a harness into an ABI object.
    pub fn boxed(harness: Arc<dyn Harness>) -> HarnessBox {
        HarnessAbi_TO::from_value(HarnessExport { harness }, TD_Opaque)
    }
}

impl HarnessAbi for HarnessExport {
    fn supports(&self, environment: RStr<'_>, model: RStr<'_>) -> RResult<bool, PluginError> {
        sync_call(|| {
            let environment = from_json(environment.as_str(), "environment spec")?;
            let model = from_json(model.as_str(), "model spec")?;
            self.harness.supports(&environment, &model)
        })
    }

    fn build_plan(&self, req: RStr<'_>, environment: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let req = decode_request(req.as_str())?;
            let environment = from_json(environment.as_str(), "environment spec")?;
            to_json(&self.harness.build_plan(&req, &environment)?)
        })
    }

    fn start_session(
        &self,
        ctx: HostBox,
        env: SessionBox,
        req: RString,
        plan: RString,
    ) -> FfiFuture<RResult<HarnessSessionBox, PluginError>> {
        let harness = self.harness.clone();
        async_call(None, async move {
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "harness plan"))?;
            let env = import_session(env);
            let state = harness
                .start_session(&import_ctx(ctx), &env, &req, &plan)
                .await?;
            Ok(HarnessSessionAbi_TO::from_value(
                HarnessSessionExport { harness, state },
                TD_Opaque,
            ))
        })
    }
}

struct HarnessSessionExport {
    harness: Arc<dyn Harness>,
    state: HarnessSession,
}

impl HarnessSessionAbi for HarnessSessionExport {
    fn execute_task(
        &self,
        ctx: HostBox,
        prepared: RString,
        req: RString,
        plan: RString,
    ) -> JsonFuture {
        let (harness, state) = (self.harness.clone(), self.state.clone());
        async_call(None, async move {
            let prepared = consume(prepared, |text| from_json(text, "prepared task"))?;
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "harness plan"))?;
            let ctx = import_ctx(ctx);
            to_json(
                &harness
                    .execute_task(&ctx, &state, &prepared, &req, &plan)
                    .await?,
            )
        })
    }

    fn collect_result(
        &self,
        ctx: HostBox,
        prepared: RString,
        req: RString,
        plan: RString,
        result: RString,
    ) -> JsonFuture {
        let (harness, state) = (self.harness.clone(), self.state.clone());
        async_call(None, async move {
            let prepared = consume(prepared, |text| from_json(text, "prepared task"))?;
            let req = consume(req, decode_request)?;
            let plan = consume(plan, |text| from_json(text, "harness plan"))?;
            let result = consume(result, |text| from_json(text, "run result"))?;
            let ctx = import_ctx(ctx);
            to_json(
                &harness
                    .collect_result(&ctx, &state, &prepared, &req, &plan, result)
                    .await?,
            )
        })
    }

    fn close(&self, ctx: HostBox) -> UnitFuture {
        let (harness, state) = (self.harness.clone(), self.state.clone());
        async_call(None, async move {
            harness.close_session(&import_ctx(ctx), state).await
        })
    }
}

/// An environment provider exported over the ABI.
pub struct EnvironmentExport {
    provider: Arc<dyn EnvironmentProvider>,
}

impl EnvironmentExport {
    /// Wraps a provider into an ABI object.
    pub fn boxed(provider: Arc<dyn EnvironmentProvider>) -> EnvironmentBox {
        EnvironmentAbi_TO::from_value(EnvironmentExport { provider }, TD_Opaque)
    }
}

impl EnvironmentAbi for EnvironmentExport {
    fn capabilities(&self) -> JsonResult {
        sync_call(|| to_json(&self.provider.capabilities()?))
    }

    fn validate_plan(&self, plan: RStr<'_>) -> RResult<(), PluginError> {
        sync_call(|| {
            let plan = from_json(plan.as_str(), "execution plan")?;
            self.provider.validate_plan(&plan)
        })
    }

    fn open(&self, ctx: HostBox, request: RString) -> FfiFuture<RResult<SessionBox, PluginError>> {
        let provider = self.provider.clone();
        async_call(None, async move {
            let request = consume(request, |text| from_json(text, "open-environment request"))?;
            let session = provider.open(&import_ctx(ctx), &request).await?;
            Ok(export_session(&session))
        })
    }

    fn close(&self, ctx: HostBox, close_params: RString) -> UnitFuture {
        let provider = self.provider.clone();
        async_call(None, async move {
            let params = consume(close_params, |text| from_json(text, "close params"))?;
            provider.close(&import_ctx(ctx), &params).await
        })
    }
}

/// A recipe exported over the ABI.
pub struct RecipeExport {
    recipe: Arc<dyn Recipe>,
}

impl RecipeExport {
    /// Wraps a recipe into an ABI object.
    pub fn boxed(recipe: Arc<dyn Recipe>) -> RecipeBox {
        RecipeAbi_TO::from_value(RecipeExport { recipe }, TD_Opaque)
    }
}

impl RecipeAbi for RecipeExport {
    fn matches(&self, req: RStr<'_>, task: RStr<'_>, plan: RStr<'_>) -> RResult<bool, PluginError> {
        sync_call(|| {
            let req = decode_request(req.as_str())?;
            let task = from_json(task.as_str(), "task")?;
            let plan = from_json(plan.as_str(), "execution plan")?;
            self.recipe.matches(&req, &task, &plan)
        })
    }

    fn apply(&self, plan: RStr<'_>, req: RStr<'_>, task: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let plan = from_json(plan.as_str(), "execution plan")?;
            let req = decode_request(req.as_str())?;
            let task = from_json(task.as_str(), "task")?;
            to_json(&self.recipe.apply(plan, &req, &task)?)
        })
    }
}

/// An analyzer exported over the ABI, as a recipe object (see
/// [`ANALYZER_FACTORY_PREFIX`]): `apply(input, "", "")` analyzes one attempt.
pub struct AnalyzerExport {
    analyzer: Arc<dyn Analyzer>,
}

impl AnalyzerExport {
    /// Wraps an analyzer into the ABI object that carries it.
    pub fn boxed(analyzer: Arc<dyn Analyzer>) -> RecipeBox {
        RecipeAbi_TO::from_value(AnalyzerExport { analyzer }, TD_Opaque)
    }
}

impl RecipeAbi for AnalyzerExport {
    fn matches(&self, _: RStr<'_>, _: RStr<'_>, _: RStr<'_>) -> RResult<bool, PluginError> {
        RResult::ROk(true)
    }

    fn apply(&self, input: RStr<'_>, _: RStr<'_>, _: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let input = from_json(input.as_str(), "analysis input")?;
            to_json(&self.analyzer.analyze(&input)?)
        })
    }
}

/// A component's typed-parameter validator exported over the ABI, as a recipe object (see
/// [`crate::abi::PARAMS_FACTORY_PREFIX`]): `apply(params, "", "")` returns the params with
/// their defaults filled in.
pub struct ParamsExport {
    check: crate::sdk::builder::ParamsCheck,
}

impl ParamsExport {
    /// Wraps a validator into the ABI object that carries it.
    pub(crate) fn boxed(check: crate::sdk::builder::ParamsCheck) -> RecipeBox {
        RecipeAbi_TO::from_value(ParamsExport { check }, TD_Opaque)
    }
}

impl RecipeAbi for ParamsExport {
    fn matches(&self, _: RStr<'_>, _: RStr<'_>, _: RStr<'_>) -> RResult<bool, PluginError> {
        RResult::ROk(true)
    }

    fn apply(&self, params: RStr<'_>, _: RStr<'_>, _: RStr<'_>) -> JsonResult {
        sync_call(|| {
            let params = from_json(params.as_str(), "params")?;
            to_json(&(self.check)(&params)?)
        })
    }
}
