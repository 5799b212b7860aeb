//! Network policies of a plan: the requested ones (an explicit request policy wins over the
//! task's hint), and the public default for every phase still unset after the recipes.

use agentcompass_plugin_api::contracts::{ExecutionPlan, NetworkPolicy, RunRequest, TaskSpec};

use super::{PlanDefect, PlanError};

/// The policies the request and task ask for, before recipes.
pub(super) struct Requested {
    pub(super) baseline: Option<NetworkPolicy>,
    pub(super) run: Option<NetworkPolicy>,
    pub(super) evaluation: Option<NetworkPolicy>,
}

/// The request's policy, else the task's hint, normalised.
fn pick(
    request: &Option<NetworkPolicy>,
    hint: &Option<NetworkPolicy>,
    field: &'static str,
) -> Result<Option<NetworkPolicy>, PlanDefect> {
    request
        .clone()
        .or_else(|| hint.clone())
        .map(|p| {
            p.normalized()
                .map_err(|error| PlanDefect::Policy { field, error })
        })
        .transpose()
}

/// The requested baseline, run and evaluation policies.
pub(super) fn requested(task: &TaskSpec, req: &RunRequest) -> Result<Requested, PlanError> {
    let env = &req.environment;
    let invalid = PlanError::invalid(task);
    Ok(Requested {
        baseline: pick(
            &env.baseline_network_policy,
            &task.baseline_network_policy,
            "baseline_network_policy",
        )
        .map_err(&invalid)?,
        run: pick(
            &env.run_network_policy,
            &task.run_network_policy,
            "run_network_policy",
        )
        .map_err(&invalid)?,
        evaluation: pick(
            &env.evaluation_network_policy,
            &task.evaluation_network_policy,
            "evaluation_network_policy",
        )
        .map_err(&invalid)?,
    })
}

/// Every phase policy still missing becomes `NetworkPolicy()` (public); all are normalised.
pub(super) fn fill_defaults(plan: &mut ExecutionPlan) -> Result<(), PlanDefect> {
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
                .map_err(|error| PlanDefect::Policy { field, error })?,
        );
    }
    Ok(())
}
