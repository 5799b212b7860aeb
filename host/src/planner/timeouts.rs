//! Phase timeouts: the request's override or the task/benchmark default, times the phase's
//! multiplier or the common one.

use agentcompass_plugin_api::contracts::{
    BenchmarkPlan, ExecutionPlan, ExecutionSpec, HarnessPlan, TaskSpec,
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

/// Harbor's environment build timeout when a task names none (`build_timeout_sec`).
pub const DEFAULT_BUILD_TIMEOUT_SECONDS: f64 = 600.0;

/// The explicit setup multipliers (Harbor's agent-setup and environment-build ones; upstream's
/// `timeout_multiplier` scales only the run and evaluation phases): the harness's install
/// timeouts, and the build timeout of the task and evaluation environments (Harbor's 600 s
/// when the task names none).
pub(super) fn scale_setup_timeouts(plan: &mut ExecutionPlan, exec: &ExecutionSpec) {
    if let Some(factor) = exec.setup_timeout_multiplier {
        for install in &mut plan.harness_plan.installs {
            install.timeout_seconds *= factor;
        }
    }
    if let Some(factor) = exec.build_timeout_multiplier {
        let environments =
            std::iter::once(&mut plan.environment).chain(plan.evaluation_environment.as_mut());
        for environment in environments {
            let setup = &mut environment.setup;
            let base = setup
                .build_timeout_seconds
                .unwrap_or(DEFAULT_BUILD_TIMEOUT_SECONDS);
            setup.build_timeout_seconds = Some(base * factor);
        }
    }
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

    #[test]
    fn setup_multipliers_scale_installs_and_builds_only_when_given() {
        use agentcompass_plugin_api::contracts::{Installer, ToolInstall};
        let mut plan = ExecutionPlan::default();
        plan.harness_plan.installs = vec![ToolInstall {
            installer: Installer::Npm,
            package: "p".into(),
            version: "1".into(),
            mount_path: "/opt/p".into(),
            registry: None,
            timeout_seconds: 100.0,
        }];
        let mut exec = ExecutionSpec {
            timeout_multiplier: 3.0,
            ..ExecutionSpec::default()
        };
        scale_setup_timeouts(&mut plan, &exec);
        assert_eq!(plan.harness_plan.installs[0].timeout_seconds, 100.0);
        assert_eq!(plan.environment.setup.build_timeout_seconds, None);
        exec.setup_timeout_multiplier = Some(2.0);
        exec.build_timeout_multiplier = Some(0.5);
        scale_setup_timeouts(&mut plan, &exec);
        assert_eq!(plan.harness_plan.installs[0].timeout_seconds, 200.0);
        assert_eq!(plan.environment.setup.build_timeout_seconds, Some(300.0));
    }
}
