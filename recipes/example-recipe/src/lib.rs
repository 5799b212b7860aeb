//! `example_recipe`: a recipe plugin written as a third party would. It matches tasks of the
//! `example_exact_match` benchmark only and gives them a default run timeout, preserving an
//! explicit user value. Like every recipe it only rewrites the plan: no I/O.

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ExecutionPlan, RunRequest, TaskSpec,
};
use agentcompass_plugin_api::sdk::{PluginBuilder, Recipe};
use agentcompass_plugin_api::Result;

/// Registry id.
pub const ID: &str = "example_recipe";
/// The benchmark this recipe adapts.
pub const BENCHMARK: &str = "example_exact_match";
/// The run timeout it sets when neither the task, the benchmark nor the user chose one.
pub const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 60.0;

struct ExampleRecipe;

impl Recipe for ExampleRecipe {
    fn matches(&self, req: &RunRequest, _task: &TaskSpec, _plan: &ExecutionPlan) -> Result<bool> {
        Ok(req.benchmark.id == BENCHMARK)
    }

    fn apply(
        &self,
        mut plan: ExecutionPlan,
        _req: &RunRequest,
        _task: &TaskSpec,
    ) -> Result<ExecutionPlan> {
        if plan.run_timeout_seconds.is_none() {
            plan.run_timeout_seconds = Some(DEFAULT_RUN_TIMEOUT_SECONDS);
        }
        Ok(plan)
    }
}

fn register(plugin: &mut PluginBuilder) {
    plugin.recipe(
        ComponentInfo::new(
            ComponentKind::Recipe,
            ID,
            "Gives example_exact_match tasks a 60 s run timeout unless one is set",
        ),
        || Ok(ExampleRecipe),
    );
}

agentcompass_plugin_api::export_plugin!(register);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_only_its_benchmark_and_keeps_explicit_timeouts() {
        let mut req = RunRequest::default();
        let task = TaskSpec::new("t", "q");
        req.benchmark.id = BENCHMARK.into();
        assert!(ExampleRecipe
            .matches(&req, &task, &ExecutionPlan::default())
            .unwrap());
        req.benchmark.id = "other".into();
        assert!(!ExampleRecipe
            .matches(&req, &task, &ExecutionPlan::default())
            .unwrap());
        let plan = ExampleRecipe
            .apply(ExecutionPlan::default(), &req, &task)
            .unwrap();
        assert_eq!(plan.run_timeout_seconds, Some(DEFAULT_RUN_TIMEOUT_SECONDS));
        let explicit = ExecutionPlan {
            run_timeout_seconds: Some(5.0),
            ..ExecutionPlan::default()
        };
        let plan = ExampleRecipe.apply(explicit, &req, &task).unwrap();
        assert_eq!(plan.run_timeout_seconds, Some(5.0));
    }
}
