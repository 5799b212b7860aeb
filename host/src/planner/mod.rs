//! The Planner: one `ExecutionPlan` per task attempt, in the seed's order. Planning does no
//! I/O: it opens no environment, calls no model and touches no task file (benchmark, harness
//! and recipe `build_plan`/`matches`/`apply` are synchronous by contract).

pub(crate) mod agent_inputs;
mod artifacts;
pub mod bindings;
mod environment;
mod error;
mod policies;
pub mod recipe;
mod resources;
mod steps;
mod timeouts;

use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    AgentInputSupport, ComponentInfo, ComponentKind, EnvironmentSpec, EvaluationEnvironmentMode,
    ExecutionPlan, HarnessPlan, RunRequest, TaskSpec,
};
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{BenchmarkHandle, EnvironmentProvider, Harness, Recipe};

use crate::registry::Registry;
pub use bindings::{
    check_plan_bindings, phase_bindings, resolve_bindings, resolve_secret_bindings, BindingError,
    Phase,
};
pub use error::{PlanDefect, PlanError};
use recipe::RecipeSet;
pub use timeouts::resolve_phase_timeout;

/// The components one request plans with, instantiated once per run.
pub struct Planner {
    benchmark: BenchmarkHandle,
    benchmark_info: ComponentInfo,
    harness: Option<Arc<dyn Harness>>,
    /// Whether the harness is a reference harness (handed reference solutions).
    harness_reads_reference: bool,
    /// What the harness hands its agent besides the instruction.
    harness_agent_inputs: AgentInputSupport,
    recipes: RecipeSet,
    provider: Arc<dyn EnvironmentProvider>,
}

impl Planner {
    /// Instantiates the request's benchmark, harness, provider and candidate recipes: every
    /// recipe of the run-local registry in registry order, or only the whitelisted ones.
    pub fn new(registry: &Registry, req: &RunRequest) -> Result<Self, PlanError> {
        let benchmark = registry.benchmark(&req.benchmark.id)?;
        let benchmark_info = registry
            .get(ComponentKind::Benchmark, &req.benchmark.id)?
            .info
            .clone();
        let (harness, harness_reads_reference, harness_agent_inputs) = if req.is_harness_free() {
            (None, false, AgentInputSupport::default())
        } else {
            let info = &registry.get(ComponentKind::Harness, &req.harness.id)?.info;
            let (reads, inputs) = (info.reads_reference_solution, info.agent_inputs);
            (Some(registry.harness(&req.harness.id)?), reads, inputs)
        };
        let recipes = RecipeSet::for_request(registry, &req.execution.enabled_recipes)?;
        let provider = registry.environment(&req.environment.id)?;
        Ok(Planner {
            benchmark,
            benchmark_info,
            harness,
            harness_reads_reference,
            harness_agent_inputs,
            recipes,
            provider,
        })
    }

    /// A planner over already-instantiated components (recipes in the order they are tried).
    pub fn from_parts(
        benchmark: BenchmarkHandle,
        benchmark_info: ComponentInfo,
        harness: Option<Arc<dyn Harness>>,
        recipes: Vec<(String, Arc<dyn Recipe>)>,
        provider: Arc<dyn EnvironmentProvider>,
    ) -> Self {
        Planner {
            benchmark,
            benchmark_info,
            harness,
            harness_reads_reference: false,
            harness_agent_inputs: AgentInputSupport::ALL,
            recipes: RecipeSet::new(recipes),
            provider,
        }
    }

    /// The benchmark (and its harness-free side).
    pub fn benchmark(&self) -> &BenchmarkHandle {
        &self.benchmark
    }

    /// The harness (`None` for a harness-free benchmark).
    pub fn harness(&self) -> Option<&Arc<dyn Harness>> {
        self.harness.as_ref()
    }

    /// Whether the harness is handed the benchmark's reference solutions
    /// ([`agentcompass_plugin_api::contracts::ComponentInfo::reads_reference_solution`]).
    pub fn harness_reads_reference(&self) -> bool {
        self.harness_reads_reference
    }

    /// What the harness hands its agent besides the instruction
    /// ([`agentcompass_plugin_api::contracts::ComponentInfo::agent_inputs`]).
    pub fn harness_agent_inputs(&self) -> AgentInputSupport {
        self.harness_agent_inputs
    }

    /// The environment provider.
    pub fn provider(&self) -> &Arc<dyn EnvironmentProvider> {
        &self.provider
    }

    /// Ids of the candidate recipes, in the order they are tried.
    pub fn recipe_ids(&self) -> Vec<&str> {
        self.recipes.ids()
    }

    /// Plans one attempt of `task`, in the seed's order: evaluation mode, requested policies,
    /// the task-local environment, the benchmark's and harness's subplans, recipes, then the
    /// normalisation of the final plan.
    pub fn plan(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        attempt: u32,
    ) -> Result<ExecutionPlan, PlanError> {
        // A reference harness runs the task's solution, not an agent: like Harbor's oracle it
        // ignores the task's tools (the run's own flags are refused for it up front).
        if self.harness.is_some() && !self.harness_reads_reference {
            agent_inputs::check(&req.harness.id, self.harness_agent_inputs, task, req)?;
        }
        let mode = self.evaluation_mode(task, req)?;
        let policies = policies::requested(task, req)?;
        let environment = environment::task_environment(req, task);
        let benchmark_plan = self
            .benchmark
            .benchmark
            .build_plan(task, req, &environment)
            .map_err(PlanError::component("benchmark build_plan"))?;
        let harness_plan = match &self.harness {
            Some(harness) => harness
                .build_plan(req, &environment)
                .map_err(PlanError::component("harness build_plan"))?,
            None => HarnessPlan::default(),
        };
        let exec = &req.execution;
        let (run_timeout_seconds, evaluation_timeout_seconds) =
            timeouts::phase_timeouts(exec, task, &benchmark_plan, &harness_plan);
        let supported = self.benchmark_info.collect_artifacts;
        let invalid = PlanError::invalid(task);
        let artifacts =
            artifacts::initial_paths(supported, exec.artifacts.as_ref(), task.artifacts.as_ref())
                .map_err(&invalid)?;
        let artifact_collect = artifacts::initial_commands(
            supported,
            exec.artifact_collect.as_ref(),
            &task.artifact_collect,
        )
        .map_err(&invalid)?;
        let plan = ExecutionPlan {
            task_id: task.task_id.clone(),
            attempt,
            environment,
            evaluation_environment: None,
            evaluation_environment_mode: mode,
            baseline_network_policy: policies.baseline,
            run_network_policy: policies.run,
            evaluation_network_policy: policies.evaluation,
            evaluation_baseline_network_policy: None,
            benchmark_plan,
            harness_plan,
            execution: exec.clone(),
            applied_recipes: Vec::new(),
            artifacts,
            artifact_collect,
            artifact_collection_supported: supported,
            artifact_limits: exec.artifact_limits.clone(),
            artifact_collect_timeout_seconds: exec.artifact_collect_timeout_seconds,
            runresult_collect_timeout_seconds: exec.runresult_collect_timeout_seconds,
            run_timer_compensation_seconds: exec.run_timer_compensation_seconds,
            run_timeout_seconds,
            evaluation_timeout_seconds,
            save_artifacts: false,
            run_user: task.run_user.clone(),
            evaluation_user: task.evaluation_user.clone(),
        };
        let plan = self.recipes.apply(plan, req, task)?;
        self.finish(plan, task, req)
    }

    /// The initial evaluation mode: request > task > the benchmark's default.
    fn evaluation_mode(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<EvaluationEnvironmentMode, PlanError> {
        match req
            .environment
            .evaluation_environment_mode
            .or(task.evaluation_environment_mode)
        {
            Some(mode) => Ok(mode),
            None => self
                .benchmark
                .benchmark
                .evaluation_environment_mode(req)
                .map_err(PlanError::component(
                    "benchmark evaluation_environment_mode",
                )),
        }
    }

    /// Post-recipe normalisation: artifact capability, benchmark artifact resolution,
    /// validation, the harness's native timeout, default policies and the evaluation env.
    fn finish(
        &self,
        mut plan: ExecutionPlan,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<ExecutionPlan, PlanError> {
        self.finish_artifacts(&mut plan, task, req)?;
        plan.harness_plan.run_timeout_seconds = plan.run_timeout_seconds;
        // 7. Missing policies become public.
        policies::fill_defaults(&mut plan).map_err(PlanError::invalid(task))?;
        // 8. The evaluation environment for the final mode.
        environment::finish_evaluation(&mut plan, task, req).map_err(PlanError::invalid(task))?;
        timeouts::scale_setup_timeouts(&mut plan, &req.execution);
        // Resources under their enforcement modes (Harbor's `auto` by default): what the
        // provider cannot limit is recorded as not enforced (`provenance.resources`).
        if let Ok(caps) = self.provider.capabilities() {
            let unsupported = |refusal: resources::ResourceRefusal| PlanError::Unsupported {
                task_id: task.task_id.clone(),
                message: refusal.to_string(),
            };
            resources::fit(&mut plan.environment, &caps).map_err(unsupported)?;
            if let Some(evaluation) = plan.evaluation_environment.as_mut() {
                resources::fit(evaluation, &caps).map_err(unsupported)?;
            }
        }
        Ok(plan)
    }

    /// The final artifact selection: the benchmark's resolution (unless the request lists its
    /// own), the conventional main directory, validation; nothing without the capability.
    fn finish_artifacts(
        &self,
        plan: &mut ExecutionPlan,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<(), PlanError> {
        let supported = self.benchmark_info.collect_artifacts;
        plan.artifact_collection_supported = supported;
        if !supported {
            plan.artifacts.clear();
            plan.artifact_collect.clear();
        } else {
            if req.execution.artifacts.is_none() {
                let resolved = self
                    .benchmark
                    .benchmark
                    .resolve_artifacts(task, req, plan)
                    .map_err(PlanError::component("benchmark resolve_artifacts"))?;
                if let Some(list) = resolved {
                    plan.artifacts = list;
                }
            }
            plan.artifacts = artifacts::with_main_dir(std::mem::take(&mut plan.artifacts));
            // The harness's own files (its agent's raw logs) come after the benchmark's.
            let own = plan.harness_plan.artifacts.clone();
            plan.artifacts.extend(own);
        }
        artifacts::validate(&plan.artifacts, &plan.artifact_collect)
            .map_err(PlanError::invalid(task))
    }

    /// The environments of `task`'s first attempt that build their own image
    /// (`setup.build_context`): the task's, a fresh verifier's and each step's own fresh
    /// verifier's (none if it cannot be planned).
    pub fn image_builds(&self, task: &TaskSpec, req: &RunRequest) -> Vec<EnvironmentSpec> {
        let Ok(plan) = self.plan(task, req, 1) else {
            return Vec::new();
        };
        let steps: Vec<EnvironmentSpec> = task
            .steps
            .iter()
            .filter_map(|step| self.step_plan(&plan, task, step, req).ok().flatten())
            .filter_map(|planned| planned.evaluation_environment)
            .collect();
        std::iter::once(plan.environment)
            .chain(plan.evaluation_environment)
            .chain(steps)
            .filter(|env| env.setup.build_context.is_some())
            .collect()
    }

    /// `provenance.resources`: how the provider enforces a task's declared resources.
    pub fn resource_provenance(&self, req: &RunRequest) -> serde_json::Value {
        self.provider
            .capabilities()
            .map(|caps| resources::provenance(&caps, req.environment.resources.as_ref()))
            .unwrap_or_default()
    }

    /// Fail-closed checks before anything is allocated: the provider must be able to enforce
    /// the plan, and every environment binding must resolve from `env`. The host checks the
    /// plan against the provider's declared capabilities itself before the provider's own
    /// check: a plugin built before a policy feature (a mode, entries with ports) does not
    /// declare it, and its own older check could not know to refuse it.
    pub fn check(
        &self,
        plan: &ExecutionPlan,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), PlanError> {
        let unsupported = |e: agentcompass_plugin_api::Error| PlanError::Unsupported {
            task_id: plan.task_id.clone(),
            message: e.message,
        };
        let capabilities = self.provider.capabilities().map_err(unsupported)?;
        validate_against_capabilities(&capabilities, plan).map_err(unsupported)?;
        self.provider.validate_plan(plan).map_err(unsupported)?;
        self.check_host_endpoints(plan)?;
        check_plan_bindings(plan, env).map_err(|error| PlanError::Bindings {
            task_id: plan.task_id.clone(),
            error,
        })
    }
}

impl Planner {
    /// A harness whose agent calls the model from inside the environment needs a provider
    /// that serves host endpoints there (fail closed: the real key never goes in instead);
    /// one that installs tools needs a provider that mounts host directories, and installs
    /// the host can make (absolute, distinct mount paths; plain package names and versions).
    pub fn check_host_endpoints(&self, plan: &ExecutionPlan) -> Result<(), PlanError> {
        let capabilities = self.provider.capabilities().ok();
        if !plan.harness_plan.installs.is_empty()
            && !capabilities.as_ref().is_some_and(|caps| caps.host_mounts)
        {
            let install = &plan.harness_plan.installs[0];
            return Err(PlanError::Unsupported {
                task_id: plan.task_id.clone(),
                message: format!(
                    "environment `{}` cannot mount host directories, which the harness needs \
                     for its installed `{}` ({}); use an environment that does (`config docs \
                     env ID` lists `host_mounts`)",
                    plan.environment.id,
                    install.package,
                    install.installer.as_str()
                ),
            });
        }
        if let Err(bad) = crate::install::check_installs(&plan.harness_plan.installs) {
            return Err(PlanError::Unsupported {
                task_id: plan.task_id.clone(),
                message: bad.to_string(),
            });
        }
        if !plan.harness_plan.model_endpoint_in_environment {
            return Ok(());
        }
        let serves = capabilities.is_some_and(|caps| caps.host_endpoints);
        if serves {
            return Ok(());
        }
        Err(PlanError::Unsupported {
            task_id: plan.task_id.clone(),
            message: format!(
                "environment `{}` cannot serve the model endpoint inside the environment, \
                 which the harness needs (its agent runs there); use an environment that does \
                 (`config docs env ID` lists `host_endpoints`)",
                plan.environment.id
            ),
        })
    }
}

#[cfg(test)]
mod tests;
