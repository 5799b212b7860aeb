//! The plan of one step of a multi-step attempt: the attempt's plan with what the step
//! declares of its own (Harbor's `[[steps]]` tables) — its run and evaluation timeouts and
//! users, its artifacts and collection commands (appended to the attempt's), its phase
//! network policies and its evaluation environment (a mode, or a fresh verifier image of its
//! own). The request's explicit values still win over a step's, as they win over the task's.

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, ExecutionSpec, RunRequest, TaskSpec, TaskStep,
};

use super::timeouts::resolve_phase_timeout;
use super::{artifacts, environment, resources, PlanDefect, PlanError, Planner};

impl Planner {
    /// The plan of `step` of `task`: `plan` (the attempt's) with the step's own declarations.
    /// `None` when the step declares nothing of its own (the attempt's plan is used as is). An
    /// error names the step.
    pub fn step_plan(
        &self,
        plan: &ExecutionPlan,
        task: &TaskSpec,
        step: &TaskStep,
        req: &RunRequest,
    ) -> Result<Option<ExecutionPlan>, PlanError> {
        if !step.has_own_plan() {
            return Ok(None);
        }
        let mut planned = plan.clone();
        step_timeouts(&mut planned, step, &req.execution);
        if step.run_user.is_some() {
            planned.run_user = step.run_user.clone();
        }
        if step.evaluation_user.is_some() {
            planned.evaluation_user = step.evaluation_user.clone();
        }
        let invalid = |defect| PlanError::Invalid {
            task_id: task.task_id.clone(),
            defect,
        };
        step_artifacts(&mut planned, step).map_err(invalid)?;
        // A step that declares artifacts wants them kept (Harbor keeps them in the step's
        // directory), unless the request says otherwise.
        if !step.artifacts.is_empty() && req.execution.save_artifacts != Some(false) {
            planned.save_artifacts = true;
        }
        step_policies(&mut planned, step, req).map_err(invalid)?;
        self.step_evaluation(&mut planned, step, task, req)?;
        Ok(Some(planned))
    }

    /// Checks every step's own plan as the attempt's is checked ([`Planner::check`]), before
    /// anything is allocated: a step whose policy or verifier environment the provider cannot
    /// enforce refuses the task before its first step.
    pub fn check_steps(
        &self,
        plan: &ExecutionPlan,
        task: &TaskSpec,
        req: &RunRequest,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), PlanError> {
        for step in &task.steps {
            let in_step = |e: PlanError| e.in_step(&step.name);
            if let Some(planned) = self.step_plan(plan, task, step, req).map_err(in_step)? {
                self.check(&planned, env).map_err(in_step)?;
            }
        }
        Ok(())
    }

    /// The step's evaluation mode (unless the request set one) and, for a fresh evaluation,
    /// its own verifier environment (resources fitted as the attempt's are).
    fn step_evaluation(
        &self,
        planned: &mut ExecutionPlan,
        step: &TaskStep,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<(), PlanError> {
        let mode = match req.environment.evaluation_environment_mode {
            Some(_) => None,
            None => step.evaluation_environment_mode,
        };
        if mode.is_none() && step.evaluation_environment_setup.is_none() {
            return Ok(());
        }
        if let Some(mode) = mode {
            planned.evaluation_environment_mode = mode;
        }
        let mut stepped = task.clone();
        if let Some(setup) = &step.evaluation_environment_setup {
            stepped.evaluation_environment_setup = Some(setup.clone());
        }
        environment::finish_evaluation(planned, &stepped, req).map_err(PlanError::invalid(task))?;
        if planned.evaluation_environment_mode != EvaluationEnvironmentMode::Fresh {
            return Ok(());
        }
        if let (Ok(caps), Some(evaluation)) = (
            self.provider.capabilities(),
            planned.evaluation_environment.as_mut(),
        ) {
            resources::fit(evaluation, &caps).map_err(|refusal| PlanError::Unsupported {
                task_id: task.task_id.clone(),
                message: refusal.to_string(),
            })?;
        }
        Ok(())
    }
}

/// The step's own run and evaluation timeouts in place of the task's defaults (the request's
/// overrides and multipliers apply as for the task).
fn step_timeouts(planned: &mut ExecutionPlan, step: &TaskStep, exec: &ExecutionSpec) {
    if step.run_timeout_seconds.is_some() {
        planned.run_timeout_seconds = resolve_phase_timeout(
            step.run_timeout_seconds,
            exec.run_timeout_seconds,
            exec.timeout_multiplier,
            exec.run_timeout_multiplier,
        );
        planned.harness_plan.run_timeout_seconds = planned.run_timeout_seconds;
    }
    if step.evaluation_timeout_seconds.is_some() {
        planned.evaluation_timeout_seconds = resolve_phase_timeout(
            step.evaluation_timeout_seconds,
            exec.evaluation_timeout_seconds,
            exec.timeout_multiplier,
            exec.evaluation_timeout_multiplier,
        );
    }
}

/// The step's artifacts and collection commands after the attempt's (an entry the attempt
/// already collects is not repeated), validated as the attempt's are.
fn step_artifacts(planned: &mut ExecutionPlan, step: &TaskStep) -> Result<(), PlanDefect> {
    if step.artifacts.is_empty() && step.artifact_collect.is_empty() {
        return Ok(());
    }
    if !planned.artifact_collection_supported {
        return Err(PlanDefect::ArtifactsNotCollected { field: "artifacts" });
    }
    for spec in &step.artifacts {
        if !planned.artifacts.contains(spec) {
            planned.artifacts.push(spec.clone());
        }
    }
    planned
        .artifact_collect
        .extend(step.artifact_collect.iter().cloned());
    artifacts::validate(&planned.artifacts, &planned.artifact_collect)
}

/// The step's phase policies in place of the task's, unless the request set its own.
fn step_policies(
    planned: &mut ExecutionPlan,
    step: &TaskStep,
    req: &RunRequest,
) -> Result<(), PlanDefect> {
    let env = &req.environment;
    for (field, requested, declared, slot) in [
        (
            "run_network_policy",
            env.run_network_policy.is_some(),
            &step.run_network_policy,
            &mut planned.run_network_policy,
        ),
        (
            "evaluation_network_policy",
            env.evaluation_network_policy.is_some(),
            &step.evaluation_network_policy,
            &mut planned.evaluation_network_policy,
        ),
    ] {
        if let (false, Some(policy)) = (requested, declared) {
            *slot = Some(
                policy
                    .normalized()
                    .map_err(|error| PlanDefect::Policy { field, error })?,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use agentcompass_plugin_api::contracts::{
        ArtifactSpec, EnvironmentSetup, ExecutionSpec, NetworkMode, NetworkPolicy,
    };

    use super::*;
    use crate::planner::tests::{planner, request, task};

    fn planned(step: &TaskStep, req: &RunRequest) -> Result<Option<ExecutionPlan>, PlanError> {
        let planner = planner();
        let mut task = task();
        task.steps = vec![step.clone()];
        let plan = planner.plan(&task, req, 1).unwrap();
        planner.step_plan(&plan, &task, step, req)
    }

    #[test]
    fn a_step_timeout_replaces_the_task_default_under_the_request_rules() {
        let mut req = request();
        req.execution = ExecutionSpec {
            timeout_multiplier: 2.0,
            ..ExecutionSpec::default()
        };
        let mut step = TaskStep::new("s", "q");
        assert!(planned(&step, &req).unwrap().is_none());
        step.run_timeout_seconds = Some(5.0);
        let plan = planned(&step, &req).unwrap().unwrap();
        assert_eq!(plan.run_timeout_seconds, Some(10.0));
        assert_eq!(plan.harness_plan.run_timeout_seconds, Some(10.0));
        // An explicit request override wins over the step's declaration.
        req.execution.run_timeout_seconds = Some(7.0);
        step.evaluation_timeout_seconds = Some(3.0);
        let plan = planned(&step, &req).unwrap().unwrap();
        assert_eq!(plan.run_timeout_seconds, Some(14.0));
        assert_eq!(plan.evaluation_timeout_seconds, Some(6.0));
    }

    #[test]
    fn step_artifacts_and_commands_come_after_the_attempts() {
        let mut step = TaskStep::new("s", "q");
        step.artifacts = vec![ArtifactSpec::new("/app/out.txt")];
        let plan = planned(&step, &request()).unwrap().unwrap();
        let sources: Vec<&str> = plan.artifacts.iter().map(|a| a.source.as_str()).collect();
        assert_eq!(sources.last(), Some(&"/app/out.txt"));
        assert!(sources.len() >= 2, "the conventional directory stays first");
        assert!(plan.save_artifacts, "kept in the step's directory");
        // Validated as the attempt's: a relative source names the step.
        step.artifacts = vec![ArtifactSpec::new("out.txt")];
        let err = planned(&step, &request()).unwrap_err().in_step("s");
        assert!(
            err.to_string().starts_with("task t1, step `s`: artifacts["),
            "{err}"
        );
    }

    #[test]
    fn step_policies_replace_the_tasks_unless_the_request_sets_one() {
        let mut step = TaskStep::new("s", "q");
        step.run_network_policy = Some(NetworkPolicy {
            network_mode: NetworkMode::NoNetwork,
            ..NetworkPolicy::default()
        });
        let plan = planned(&step, &request()).unwrap().unwrap();
        let mode = |p: &Option<NetworkPolicy>| p.as_ref().map(|p| p.network_mode);
        assert_eq!(mode(&plan.run_network_policy), Some(NetworkMode::NoNetwork));
        assert_eq!(
            mode(&plan.evaluation_network_policy),
            Some(NetworkMode::Public)
        );
        let mut req = request();
        req.environment.run_network_policy = Some(NetworkPolicy::default());
        let plan = planned(&step, &req).unwrap().unwrap();
        assert_eq!(mode(&plan.run_network_policy), Some(NetworkMode::Public));
    }

    #[test]
    fn a_step_verifier_of_its_own_is_a_fresh_environment_of_that_image() {
        let mut step = TaskStep::new("s", "q");
        step.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
        step.evaluation_environment_setup = Some(EnvironmentSetup {
            build_context: Some("/tasks/x/steps/s/tests".into()),
            ..EnvironmentSetup::default()
        });
        let plan = planned(&step, &request()).unwrap().unwrap();
        assert_eq!(
            plan.evaluation_environment_mode,
            EvaluationEnvironmentMode::Fresh
        );
        let fresh = plan.evaluation_environment.expect("a fresh environment");
        assert_eq!(
            fresh.setup.build_context.as_deref(),
            Some("/tasks/x/steps/s/tests")
        );
        assert!(plan.save_artifacts, "restored into the fresh verifier");
        // The request's mode wins over the step's.
        let mut req = request();
        req.environment.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Reuse);
        step.evaluation_environment_setup = None;
        let plan = planned(&step, &req).unwrap().unwrap();
        assert_eq!(
            plan.evaluation_environment_mode,
            EvaluationEnvironmentMode::Reuse
        );
        assert!(plan.evaluation_environment.is_none());
    }
}
