//! The run-local recipe set: the registry's recipes in insertion order (built-ins, then
//! validated plugins), or only the request's whitelist (`execution.enabled_recipes`), and
//! their application to a plan. Every matching recipe receives the plan returned by the
//! preceding one, and its id is appended to `ExecutionPlan.applied_recipes`; candidates are
//! never sorted.

use std::sync::Arc;

use agentcompass_plugin_api::contracts::{ComponentKind, ExecutionPlan, RunRequest, TaskSpec};
use agentcompass_plugin_api::sdk::Recipe;

use super::PlanError;
use crate::registry::Registry;

/// The candidate recipes of one request, in the order they are tried.
pub struct RecipeSet(Vec<(String, Arc<dyn Recipe>)>);

impl RecipeSet {
    /// Recipes already instantiated, in the order they are tried.
    pub fn new(recipes: Vec<(String, Arc<dyn Recipe>)>) -> Self {
        RecipeSet(recipes)
    }

    /// Every recipe of `registry` in registry order, or only those `whitelist` names (each of
    /// which must exist).
    pub fn for_request(registry: &Registry, whitelist: &[String]) -> Result<Self, PlanError> {
        for id in whitelist {
            registry.get(ComponentKind::Recipe, id)?;
        }
        let recipes = registry
            .list(ComponentKind::Recipe)
            .filter(|e| whitelist.is_empty() || whitelist.contains(&e.info.id))
            .map(|e| Ok((e.info.id.clone(), registry.recipe(&e.info.id)?)))
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(RecipeSet(recipes))
    }

    /// The ids, in the order they are tried.
    pub fn ids(&self) -> Vec<&str> {
        self.0.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Applies every matching recipe, each on the previous one's plan.
    pub fn apply(
        &self,
        mut plan: ExecutionPlan,
        req: &RunRequest,
        task: &TaskSpec,
    ) -> Result<ExecutionPlan, PlanError> {
        for (id, recipe) in &self.0 {
            let matches = recipe
                .matches(req, task, &plan)
                .map_err(PlanError::component(&format!("recipe {id} matches")))?;
            if matches {
                plan = recipe
                    .apply(plan.clone(), req, task)
                    .map_err(PlanError::component(&format!("recipe {id} apply")))?;
                plan.applied_recipes.push(id.clone());
            }
        }
        Ok(plan)
    }
}
