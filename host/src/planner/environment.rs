//! The task-local environment of a plan, and the fresh evaluation environment.

use std::collections::BTreeMap;

use super::PlanDefect;
use agentcompass_plugin_api::contracts::{
    EnvironmentSetup, EnvironmentSpec, EvaluationEnvironmentMode, ExecutionPlan, NetworkPolicy,
    ResourceRequirements, RunRequest, TaskSpec,
};

fn merge_resources(layers: &[Option<&ResourceRequirements>]) -> Option<ResourceRequirements> {
    layers
        .iter()
        .flatten()
        .fold(None, |acc: Option<ResourceRequirements>, next| {
            Some(acc.map_or_else(|| (*next).clone(), |a| a.merge(next)))
        })
}

fn merge_maps(
    task: &BTreeMap<String, String>,
    request: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = task.clone();
    out.extend(request.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// A deep copy of the request's environment with the task's defaults under it: resources
/// `task ⊕ task.run ⊕ request ⊕ request.run`, setup `task ⊕ request`, each env-var map
/// `task ⊕ request` (request wins per key).
pub fn task_environment(req: &RunRequest, task: &TaskSpec) -> EnvironmentSpec {
    let request = &req.environment;
    let mut env = request.clone();
    env.resources = merge_resources(&[
        task.resources.as_ref(),
        task.run_resources.as_ref(),
        request.resources.as_ref(),
        request.run_resources.as_ref(),
    ]);
    env.run_resources = None;
    env.setup = task.environment_setup.merge(&request.setup);
    env.env_variables = merge_maps(&task.env_variables, &request.env_variables);
    env.run_env_variables = merge_maps(&task.run_env_variables, &request.run_env_variables);
    env.evaluation_env_variables = merge_maps(
        &task.evaluation_env_variables,
        &request.evaluation_env_variables,
    );
    env.require_startup_env = Some(
        request
            .require_startup_env
            .unwrap_or(task.require_startup_env),
    );
    env
}

/// The fresh evaluation environment for the final plan.
///
/// - setup: a task's separate verifier setup (`Some`, even empty) is independent of the agent's;
///   `None` inherits the resolved run setup (recipe defaults included); the request's
///   `evaluation_setup` overrides either;
/// - resources: `task ⊕ task.evaluation ⊕ request ⊕ request.evaluation`;
/// - startup bindings: the task's verifier map (`None` inherits the task's common bindings, an
///   explicit map replaces them), then the request's common bindings, then the request's
///   `evaluation_environment_env_variables`; run-only bindings never reach it;
/// - baseline policy: computed by the caller and stored on the plan.
pub fn evaluation_environment(
    req: &RunRequest,
    task: &TaskSpec,
    run_env: &EnvironmentSpec,
) -> EnvironmentSpec {
    let request = &req.environment;
    let mut env = EnvironmentSpec::new(run_env.id.clone());
    env.params = run_env.params.clone();
    let base_setup = task
        .evaluation_environment_setup
        .clone()
        .unwrap_or_else(|| run_env.setup.clone());
    env.setup = base_setup.merge(&request.evaluation_setup);
    env.evaluation_setup = EnvironmentSetup::default();
    env.resources = merge_resources(&[
        task.resources.as_ref(),
        task.evaluation_resources.as_ref(),
        request.resources.as_ref(),
        request.evaluation_resources.as_ref(),
    ]);
    let startup = task
        .evaluation_environment_env_variables
        .clone()
        .unwrap_or_else(|| task.env_variables.clone());
    let startup = merge_maps(&startup, &request.env_variables);
    env.env_variables = merge_maps(
        &startup,
        request
            .evaluation_environment_env_variables
            .as_ref()
            .unwrap_or(&BTreeMap::new()),
    );
    env.evaluation_env_variables = merge_maps(
        &task.evaluation_env_variables,
        &request.evaluation_env_variables,
    );
    env.require_startup_env = run_env.require_startup_env;
    env
}

/// The fresh verifier's baseline policy: request `evaluation_baseline_network_policy` >
/// request `baseline_network_policy` > the task's verifier baseline > the agent baseline.
pub fn evaluation_baseline(
    req: &RunRequest,
    task: &TaskSpec,
    agent_baseline: Option<&NetworkPolicy>,
) -> Option<NetworkPolicy> {
    req.environment
        .evaluation_baseline_network_policy
        .clone()
        .or_else(|| req.environment.baseline_network_policy.clone())
        .or_else(|| task.evaluation_baseline_network_policy.clone())
        .or_else(|| agent_baseline.cloned())
}

/// Fields of a request's environment that only a fresh evaluation environment uses.
fn fresh_only_fields(env: &EnvironmentSpec) -> [(&'static str, bool); 4] {
    [
        (
            "evaluation_baseline_network_policy",
            env.evaluation_baseline_network_policy.is_some(),
        ),
        (
            "evaluation_environment_env_variables",
            env.evaluation_environment_env_variables.is_some(),
        ),
        (
            "evaluation_setup",
            env.evaluation_setup != Default::default(),
        ),
        ("evaluation_resources", env.evaluation_resources.is_some()),
    ]
}

/// Step 8 of planning: for a fresh evaluation, the evaluation environment and its baseline
/// policy (and artifacts must be saved, to be restored there); otherwise neither, and the
/// request may not set fresh-only fields.
pub(super) fn finish_evaluation(
    plan: &mut ExecutionPlan,
    task: &TaskSpec,
    req: &RunRequest,
) -> Result<(), PlanDefect> {
    let mode = plan.evaluation_environment_mode;
    let fresh = mode == EvaluationEnvironmentMode::Fresh;
    if !fresh {
        if let Some((field, _)) = fresh_only_fields(&req.environment)
            .iter()
            .find(|(_, set)| *set)
        {
            return Err(PlanDefect::FreshOnly {
                field,
                mode: mode.to_string(),
            });
        }
    }
    // Unset: saved for a fresh evaluation (it restores them) and whenever the task declares
    // artifacts (a Harbor task's `artifacts`, its `/logs/artifacts`), as Harbor collects them.
    let declared = task.artifacts.as_ref().is_some_and(|a| !a.is_empty());
    plan.save_artifacts = match req.execution.save_artifacts {
        Some(false) if fresh => return Err(PlanDefect::FreshWithoutArtifacts),
        Some(value) => value,
        None => fresh || declared,
    };
    if !fresh {
        plan.evaluation_environment = None;
        plan.evaluation_baseline_network_policy = None;
        return Ok(());
    }
    plan.evaluation_environment = Some(evaluation_environment(req, task, &plan.environment));
    let baseline =
        evaluation_baseline(req, task, plan.baseline_network_policy.as_ref()).unwrap_or_default();
    plan.evaluation_baseline_network_policy =
        Some(baseline.normalized().map_err(|error| PlanDefect::Policy {
            field: "evaluation_baseline_network_policy",
            error,
        })?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn request_overrides_task_per_key() {
        let mut task = TaskSpec::new("t", "q");
        task.env_variables = pairs(&[("A", "task"), ("B", "task")]);
        task.environment_setup.image = Some("task-image".into());
        task.environment_setup.workdir = Some("/task".into());
        task.resources = Some(ResourceRequirements {
            cpu: Some(1.0),
            memory_mb: Some(512),
            ..Default::default()
        });
        let mut req = RunRequest {
            environment: EnvironmentSpec::new("host_process"),
            ..RunRequest::default()
        };
        req.environment.env_variables = pairs(&[("B", "request")]);
        req.environment.setup.image = Some("request-image".into());
        req.environment.run_resources = Some(ResourceRequirements {
            memory_mb: Some(2048),
            ..Default::default()
        });
        let env = task_environment(&req, &task);
        assert_eq!(env.env_variables, pairs(&[("A", "task"), ("B", "request")]));
        assert_eq!(env.setup.image.as_deref(), Some("request-image"));
        assert_eq!(env.setup.workdir.as_deref(), Some("/task"));
        let resources = env.resources.unwrap();
        assert_eq!(
            (resources.cpu, resources.memory_mb),
            (Some(1.0), Some(2048))
        );
    }

    #[test]
    fn verifier_setup_and_startup_bindings_follow_the_independence_rule() {
        let mut task = TaskSpec::new("t", "q");
        task.env_variables = pairs(&[("COMMON", "c")]);
        task.run_env_variables = pairs(&[("RUN_ONLY", "r")]);
        let req = RunRequest::default();
        let mut run_env = task_environment(&req, &task);
        run_env.setup.image = Some("recipe-image".into());
        // No separate verifier: inherit the resolved run setup and the common bindings.
        let eval = evaluation_environment(&req, &task, &run_env);
        assert_eq!(eval.setup.image.as_deref(), Some("recipe-image"));
        assert_eq!(eval.env_variables, pairs(&[("COMMON", "c")]));
        // An explicit (even empty) verifier setup and map are independent.
        task.evaluation_environment_setup = Some(EnvironmentSetup::default());
        task.evaluation_environment_env_variables = Some(BTreeMap::new());
        let eval = evaluation_environment(&req, &task, &run_env);
        assert_eq!(eval.setup.image, None);
        assert!(eval.env_variables.is_empty());
    }

    #[test]
    fn evaluation_baseline_precedence() {
        let mut task = TaskSpec::new("t", "q");
        let mut req = RunRequest::default();
        let agent = NetworkPolicy::no_network();
        assert_eq!(
            evaluation_baseline(&req, &task, Some(&agent)),
            Some(agent.clone())
        );
        task.evaluation_baseline_network_policy = Some(NetworkPolicy::public());
        assert_eq!(
            evaluation_baseline(&req, &task, Some(&agent)),
            Some(NetworkPolicy::public())
        );
        req.environment.baseline_network_policy = Some(NetworkPolicy::allowlist(["a.org"]));
        assert_eq!(
            evaluation_baseline(&req, &task, Some(&agent)),
            Some(NetworkPolicy::allowlist(["a.org"]))
        );
        req.environment.evaluation_baseline_network_policy = Some(NetworkPolicy::no_network());
        assert_eq!(
            evaluation_baseline(&req, &task, Some(&agent)),
            Some(NetworkPolicy::no_network())
        );
    }
}
