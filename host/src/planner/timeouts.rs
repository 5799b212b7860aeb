//! Phase timeouts: the request's override or the task/benchmark default, times the phase's
//! multiplier or the common one.

use agentcompass_plugin_api::contracts::{
    BenchmarkPlan, ExecutionPlan, ExecutionSpec, HarnessPlan, TaskSpec, TaskStep,
};

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

/// The run and evaluation timeouts of a plan: the benchmark plan's defaults, then the task's,
/// then (run only) the harness's fallback budget; the request's overrides and multipliers on
/// top.
pub(super) fn phase_timeouts(
    exec: &ExecutionSpec,
    task: &TaskSpec,
    benchmark_plan: &BenchmarkPlan,
    harness_plan: &HarnessPlan,
) -> (Option<f64>, Option<f64>) {
    let run_default = benchmark_plan
        .run_timeout_seconds
        .or(task.run_timeout_seconds)
        .or(harness_plan.default_run_timeout_seconds);
    let evaluation_default = benchmark_plan
        .evaluation_timeout_seconds
        .or(task.evaluation_timeout_seconds);
    (
        resolve_phase_timeout(
            run_default,
            exec.run_timeout_seconds,
            exec.timeout_multiplier,
            exec.run_timeout_multiplier,
        ),
        resolve_phase_timeout(
            evaluation_default,
            exec.evaluation_timeout_seconds,
            exec.timeout_multiplier,
            exec.evaluation_timeout_multiplier,
        ),
    )
}

/// The plan of one step of a multi-step attempt: `plan` with the step's own run and evaluation
/// timeouts in place of the task's defaults (the request's overrides and multipliers apply as
/// for the task). `None` when the step declares neither, so the attempt's plan is used as is.
pub fn step_plan(
    plan: &ExecutionPlan,
    step: &TaskStep,
    exec: &ExecutionSpec,
) -> Option<ExecutionPlan> {
    if step.run_timeout_seconds.is_none() && step.evaluation_timeout_seconds.is_none() {
        return None;
    }
    let mut planned = plan.clone();
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
    Some(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_timeout_replaces_the_task_default_under_the_request_rules() {
        let plan = ExecutionPlan {
            run_timeout_seconds: Some(200.0),
            evaluation_timeout_seconds: Some(60.0),
            ..ExecutionPlan::default()
        };
        let exec = ExecutionSpec {
            timeout_multiplier: 2.0,
            ..ExecutionSpec::default()
        };
        let mut step = TaskStep::new("s", "q");
        assert!(step_plan(&plan, &step, &exec).is_none());
        step.run_timeout_seconds = Some(5.0);
        let planned = step_plan(&plan, &step, &exec).unwrap();
        assert_eq!(planned.run_timeout_seconds, Some(10.0));
        assert_eq!(planned.harness_plan.run_timeout_seconds, Some(10.0));
        assert_eq!(planned.evaluation_timeout_seconds, Some(60.0));
        // An explicit request override wins over the step's declaration.
        let exec = ExecutionSpec {
            run_timeout_seconds: Some(7.0),
            ..exec
        };
        step.evaluation_timeout_seconds = Some(3.0);
        let planned = step_plan(&plan, &step, &exec).unwrap();
        assert_eq!(planned.run_timeout_seconds, Some(14.0));
        assert_eq!(planned.evaluation_timeout_seconds, Some(6.0));
    }

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
