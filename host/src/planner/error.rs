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

impl PlanError {
    /// A mapper of a component's error during `stage`.
    pub(super) fn component(stage: &str) -> impl Fn(Error) -> PlanError + '_ {
        move |error| PlanError::Component {
            stage: stage.to_string(),
            error,
        }
    }

    /// A mapper of a message into [`PlanError::Invalid`] for `task`.
    pub(super) fn invalid(task: &TaskSpec) -> impl Fn(String) -> PlanError + '_ {
        move |message| PlanError::Invalid {
            task_id: task.task_id.clone(),
            message,
        }
    }
}
