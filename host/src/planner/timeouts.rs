//! Phase timeouts: the request's override or the task/benchmark default, times the phase's
//! multiplier or the common one.

use agentcompass_plugin_api::contracts::{BenchmarkPlan, ExecutionSpec, HarnessPlan, TaskSpec};

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

#[cfg(test)]
mod tests {
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
