//! The Planner: one `ExecutionPlan` per task attempt, in the seed's order. Planning does no
//! I/O: it opens no environment, calls no model and touches no task file (benchmark, harness
//! and recipe `build_plan`/`matches`/`apply` are synchronous by contract).

mod artifacts;
pub mod bindings;
mod environment;

use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, EvaluationEnvironmentMode, ExecutionPlan, HarnessPlan,
    NetworkPolicy, RunRequest, TaskSpec,
};
use agentcompass_plugin_api::sdk::{BenchmarkHandle, EnvironmentProvider, Harness, Recipe};
use agentcompass_plugin_api::Error;

use crate::registry::{Registry, RegistryError};
pub use bindings::{check_plan_bindings, phase_bindings, resolve_bindings, BindingError, Phase};

/// Why a plan could not be made (or is refused).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A component could not be instantiated.
    #[error("{0}")]
    Registry(String),
    /// A component failed while planning.
    #[error("{stage}: {error}")]
    Component {
        /// `benchmark build_plan`, `recipe example_recipe apply`, ...
        stage: String,
        /// The component's error (already naming the plugin).
        error: Error,
    },
    /// The request and task combine into an invalid plan.
    #[error("task {task_id}: {message}")]
    Invalid {
        /// Task concerned.
        task_id: String,
        /// What is wrong.
        message: String,
    },
    /// The provider cannot enforce the plan (fail closed, before anything is allocated).
    #[error("task {task_id}: {message}")]
    Unsupported {
        /// Task concerned.
        task_id: String,
        /// The provider's refusal.
        message: String,
    },
    /// Environment bindings refer to unset variables.
    #[error("task {task_id}: {error}")]
    Bindings {
        /// Task concerned.
        task_id: String,
        /// The missing names.
        error: BindingError,
    },
}

impl From<RegistryError> for PlanError {
    fn from(err: RegistryError) -> Self {
        PlanError::Registry(err.to_string())
    }
}

/// The components one request plans with, instantiated once per run.
pub struct Planner {
    benchmark: BenchmarkHandle,
    benchmark_info: ComponentInfo,
    harness: Option<Arc<dyn Harness>>,
    recipes: Vec<(String, Arc<dyn Recipe>)>,
    provider: Arc<dyn EnvironmentProvider>,
}

/// `(override or default) × (phase multiplier or common multiplier)`; `None` stays `None`.
pub fn resolve_phase_timeout(
    default: Option<f64>,
    explicit: Option<f64>,
    multiplier: f64,
    phase_multiplier: Option<f64>,
) -> Option<f64> {
    explicit
        .or(default)
        .map(|seconds| seconds * phase_multiplier.unwrap_or(multiplier))
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
        let harness = if req.is_harness_free() {
            None
        } else {
            Some(registry.harness(&req.harness.id)?)
        };
        let whitelist = &req.execution.enabled_recipes;
        for id in whitelist {
            registry.get(ComponentKind::Recipe, id)?;
        }
        let recipes = registry
            .list(ComponentKind::Recipe)
            .filter(|e| whitelist.is_empty() || whitelist.contains(&e.info.id))
            .map(|e| Ok((e.info.id.clone(), registry.recipe(&e.info.id)?)))
            .collect::<Result<Vec<_>, PlanError>>()?;
        let provider = registry.environment(&req.environment.id)?;
        Ok(Planner {
            benchmark,
            benchmark_info,
            harness,
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
            recipes,
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

    /// The environment provider.
    pub fn provider(&self) -> &Arc<dyn EnvironmentProvider> {
        &self.provider
    }

    /// Ids of the candidate recipes, in the order they are tried.
    pub fn recipe_ids(&self) -> Vec<&str> {
        self.recipes.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Plans one attempt of `task`.
    pub fn plan(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        attempt: u32,
    ) -> Result<ExecutionPlan, PlanError> {
        let invalid = |message: String| PlanError::Invalid {
            task_id: task.task_id.clone(),
            message,
        };
        let component = |stage: &str| {
            let stage = stage.to_string();
            move |error: Error| PlanError::Component {
                stage: stage.clone(),
                error,
            }
        };
        let exec = &req.execution;

        // 1. Evaluation mode: request > task > benchmark default.
        let mode = match req
            .environment
            .evaluation_environment_mode
            .or(task.evaluation_environment_mode)
        {
            Some(mode) => mode,
            None => self
                .benchmark
                .benchmark
                .evaluation_environment_mode(req)
                .map_err(component("benchmark evaluation_environment_mode"))?,
        };

        // 2. Policies: an explicit request policy wins over the task's hint.
        let env_req = &req.environment;
        let pick = |request: &Option<NetworkPolicy>, hint: &Option<NetworkPolicy>, field: &str| {
            request
                .clone()
                .or_else(|| hint.clone())
                .map(|p| p.normalized().map_err(|e| invalid(format!("{field}: {e}"))))
                .transpose()
        };
        let baseline = pick(
            &env_req.baseline_network_policy,
            &task.baseline_network_policy,
            "baseline_network_policy",
        )?;
        let run_policy = pick(
            &env_req.run_network_policy,
            &task.run_network_policy,
            "run_network_policy",
        )?;
        let evaluation_policy = pick(
            &env_req.evaluation_network_policy,
            &task.evaluation_network_policy,
            "evaluation_network_policy",
        )?;

        // 3. Task-local copy of the environment.
        let environment = environment::task_environment(req, task);

        // 4.-5. Component subplans.
        let benchmark_plan = self
            .benchmark
            .benchmark
            .build_plan(task, req, &environment)
            .map_err(component("benchmark build_plan"))?;
        let harness_plan = match &self.harness {
            Some(harness) => harness
                .build_plan(req, &environment)
                .map_err(component("harness build_plan"))?,
            None => HarnessPlan::default(),
        };

        // Timeouts: benchmark plan, then task, then the harness fallback budget.
        let run_default = benchmark_plan
            .run_timeout_seconds
            .or(task.run_timeout_seconds)
            .or(harness_plan.default_run_timeout_seconds);
        let evaluation_default = benchmark_plan
            .evaluation_timeout_seconds
            .or(task.evaluation_timeout_seconds);

        let supported = self.benchmark_info.collect_artifacts;
        let artifacts =
            artifacts::initial_paths(supported, exec.artifacts.as_ref(), task.artifacts.as_ref())
                .map_err(invalid)?;
        let artifact_collect = artifacts::initial_commands(
            supported,
            exec.artifact_collect.as_ref(),
            &task.artifact_collect,
        )
        .map_err(invalid)?;

        let mut plan = ExecutionPlan {
            task_id: task.task_id.clone(),
            attempt,
            environment,
            evaluation_environment: None,
            evaluation_environment_mode: mode,
            baseline_network_policy: baseline,
            run_network_policy: run_policy,
            evaluation_network_policy: evaluation_policy,
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
            run_timeout_seconds: resolve_phase_timeout(
                run_default,
                exec.run_timeout_seconds,
                exec.timeout_multiplier,
                exec.run_timeout_multiplier,
            ),
            evaluation_timeout_seconds: resolve_phase_timeout(
                evaluation_default,
                exec.evaluation_timeout_seconds,
                exec.timeout_multiplier,
                exec.evaluation_timeout_multiplier,
            ),
            save_artifacts: false,
        };

        // 6. Recipes, in registry order, each on the previous one's plan.
        for (id, recipe) in &self.recipes {
            if recipe
                .matches(req, task, &plan)
                .map_err(component(&format!("recipe {id} matches")))?
            {
                plan = recipe
                    .apply(plan.clone(), req, task)
                    .map_err(component(&format!("recipe {id} apply")))?;
                plan.applied_recipes.push(id.clone());
            }
        }
        self.finish(plan, task, req)
    }

    /// Post-recipe normalisation: artifact capability, benchmark artifact resolution,
    /// validation, the harness's native timeout, default policies and the evaluation env.
    fn finish(
        &self,
        mut plan: ExecutionPlan,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<ExecutionPlan, PlanError> {
        let invalid = |message: String| PlanError::Invalid {
            task_id: task.task_id.clone(),
            message,
        };
        let exec = &req.execution;
        let supported = self.benchmark_info.collect_artifacts;
        plan.artifact_collection_supported = supported;
        if supported {
            if exec.artifacts.is_none() {
                if let Some(list) = self
                    .benchmark
                    .benchmark
                    .resolve_artifacts(task, req, &plan)
                    .map_err(|error| PlanError::Component {
                        stage: "benchmark resolve_artifacts".into(),
                        error,
                    })?
                {
                    plan.artifacts = list;
                }
            }
            plan.artifacts = artifacts::with_main_dir(std::mem::take(&mut plan.artifacts));
        } else {
            plan.artifacts.clear();
            plan.artifact_collect.clear();
        }
        artifacts::validate(&plan.artifacts, &plan.artifact_collect).map_err(invalid)?;

        plan.harness_plan.run_timeout_seconds = plan.run_timeout_seconds;

        // 7. Missing policies become public.
        for (field, slot) in [
            ("baseline_network_policy", &mut plan.baseline_network_policy),
            ("run_network_policy", &mut plan.run_network_policy),
            (
                "evaluation_network_policy",
                &mut plan.evaluation_network_policy,
            ),
        ] {
            let policy = slot.take().unwrap_or_default();
            *slot = Some(
                policy
                    .normalized()
                    .map_err(|e| invalid(format!("{field}: {e}")))?,
            );
        }

        // 8. The evaluation environment for the final mode.
        let mode = plan.evaluation_environment_mode;
        let fresh = mode == EvaluationEnvironmentMode::Fresh;
        let env_req = &req.environment;
        if !fresh {
            let fresh_only = [
                (
                    "evaluation_baseline_network_policy",
                    env_req.evaluation_baseline_network_policy.is_some(),
                ),
                (
                    "evaluation_environment_env_variables",
                    env_req.evaluation_environment_env_variables.is_some(),
                ),
                (
                    "evaluation_setup",
                    env_req.evaluation_setup != Default::default(),
                ),
                (
                    "evaluation_resources",
                    env_req.evaluation_resources.is_some(),
                ),
            ];
            if let Some((field, _)) = fresh_only.iter().find(|(_, set)| *set) {
                return Err(invalid(format!(
                    "environment.{field} applies to a fresh evaluation environment, but the evaluation mode is `{mode}`"
                )));
            }
        }
        plan.save_artifacts = match exec.save_artifacts {
            Some(false) if fresh => {
                return Err(invalid(
                    "fresh evaluation restores collected artifacts, so execution.save_artifacts cannot be false".into(),
                ))
            }
            Some(value) => value,
            None => fresh,
        };
        if fresh {
            plan.evaluation_environment = Some(environment::evaluation_environment(
                req,
                task,
                &plan.environment,
            ));
            let baseline =
                environment::evaluation_baseline(req, task, plan.baseline_network_policy.as_ref())
                    .unwrap_or_default();
            plan.evaluation_baseline_network_policy = Some(
                baseline
                    .normalized()
                    .map_err(|e| invalid(format!("evaluation_baseline_network_policy: {e}")))?,
            );
        } else {
            plan.evaluation_environment = None;
            plan.evaluation_baseline_network_policy = None;
        }
        Ok(plan)
    }

    /// Fail-closed checks before anything is allocated: the provider must be able to enforce
    /// the plan, and every environment binding must resolve from `env`.
    pub fn check(
        &self,
        plan: &ExecutionPlan,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), PlanError> {
        self.provider
            .validate_plan(plan)
            .map_err(|e| PlanError::Unsupported {
                task_id: plan.task_id.clone(),
                message: e.message,
            })?;
        check_plan_bindings(plan, env).map_err(|error| PlanError::Bindings {
            task_id: plan.task_id.clone(),
            error,
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod timeout_tests {
    use super::*;

    #[test]
    fn phase_multiplier_replaces_the_common_one() {
        assert_eq!(
            resolve_phase_timeout(Some(100.0), None, 2.0, None),
            Some(200.0)
        );
        assert_eq!(
            resolve_phase_timeout(Some(100.0), None, 2.0, Some(0.5)),
            Some(50.0)
        );
        assert_eq!(
            resolve_phase_timeout(Some(100.0), Some(10.0), 2.0, None),
            Some(20.0)
        );
        assert_eq!(resolve_phase_timeout(None, None, 2.0, Some(3.0)), None);
    }
}
