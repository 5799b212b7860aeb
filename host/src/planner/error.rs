//! Why a plan could not be made (or is refused).

use agentcompass_plugin_api::contracts::TaskSpec;
use agentcompass_plugin_api::Error;

use super::bindings::BindingError;
use crate::registry::RegistryError;

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
    #[error("task {task_id}: {defect}")]
    Invalid {
        /// Task concerned.
        task_id: String,
        /// What is wrong.
        defect: PlanDefect,
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

impl PlanError {
    /// The plan is refused because something cannot do what the task asks (a provider's
    /// refusal, or a component's error of kind `Unsupported`), not because planning broke.
    pub fn is_unsupported(&self) -> bool {
        match self {
            PlanError::Unsupported { .. } => true,
            PlanError::Component { error, .. } => {
                error.kind == agentcompass_plugin_api::ErrorKind::Unsupported
            }
            _ => false,
        }
    }

    /// The same error about step `step` of its task (the message names the step).
    pub fn in_step(self, step: &str) -> PlanError {
        let named = |task_id: String| format!("{task_id}, step `{step}`");
        match self {
            PlanError::Invalid { task_id, defect } => PlanError::Invalid {
                task_id: named(task_id),
                defect,
            },
            PlanError::Unsupported { task_id, message } => PlanError::Unsupported {
                task_id: named(task_id),
                message,
            },
            PlanError::Bindings { task_id, error } => PlanError::Bindings {
                task_id: named(task_id),
                error,
            },
            other => other,
        }
    }

    /// A mapper of a component's error during `stage`.
    pub(super) fn component(stage: &str) -> impl Fn(Error) -> PlanError + '_ {
        move |error| PlanError::Component {
            stage: stage.to_string(),
            error,
        }
    }

    /// A mapper of a defect into [`PlanError::Invalid`] for `task`.
    pub(super) fn invalid(task: &TaskSpec) -> impl Fn(PlanDefect) -> PlanError + '_ {
        move |defect| PlanError::Invalid {
            task_id: task.task_id.clone(),
            defect,
        }
    }
}

/// What makes a plan invalid: the request, the task and the benchmark's capabilities do not
/// combine (one line naming the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanDefect {
    /// Artifacts are asked of a benchmark that does not collect them.
    #[error("unsupported: execution.{field} is set, but this benchmark does not collect artifacts (collect_artifacts = false)")]
    ArtifactsNotCollected {
        /// `artifacts` or `artifact_collect`.
        field: &'static str,
    },
    /// A field of an artifact entry or collection command breaks its rule.
    #[error("{list}[{index}].{field} {problem}")]
    ArtifactEntry {
        /// `artifacts` or `artifact_collect`.
        list: &'static str,
        /// The entry's position.
        index: usize,
        /// The field.
        field: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// Two artifact entries would write into each other.
    #[error("artifacts[{first}] and artifacts[{second}] have overlapping destinations `{theirs}` and `{ours}`")]
    OverlappingArtifacts {
        /// The earlier entry.
        first: usize,
        /// The later entry.
        second: usize,
        /// The earlier entry's destination.
        theirs: String,
        /// The later entry's destination.
        ours: String,
    },
    /// A network policy is not valid.
    #[error("{field}: {error}")]
    Policy {
        /// The policy's field.
        field: &'static str,
        /// Why.
        error: agentcompass_plugin_api::contracts::NetworkPolicyError,
    },
    /// A fresh-evaluation field is set for another evaluation mode.
    #[error("environment.{field} applies to a fresh evaluation environment, but the evaluation mode is `{mode}`")]
    FreshOnly {
        /// The field.
        field: &'static str,
        /// The plan's evaluation mode.
        mode: String,
    },
    /// Fresh evaluation without saved artifacts.
    #[error("fresh evaluation restores collected artifacts, so execution.save_artifacts cannot be false")]
    FreshWithoutArtifacts,
}
