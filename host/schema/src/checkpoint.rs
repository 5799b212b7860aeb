//! An interrupted attempt's checkpoints, what a `--reuse` run resumes from: the evaluation
//! checkpoint (`attempt-N/checkpoint.json`: the prepared task and the redacted run result, so
//! the attempt is scored without running the agent again) and a multi-step attempt's step
//! checkpoint (`attempt-N/steps/checkpoint.json`: the finished steps and the partial result).

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, NetworkPolicy, PreparedTask, RunResult, StepResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::attempt::{CHECKPOINT_SCHEMA, STEPS_CHECKPOINT_SCHEMA};

/// The file name of both checkpoints (in the attempt directory, or its `steps/`).
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// `attempt-N/checkpoint.json` (fields in the file's order, alphabetical).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationCheckpoint {
    /// The semantic attempt.
    pub attempt: u32,
    /// The plan's evaluation mode (a rerun resumes only under the same).
    pub evaluation_environment_mode: EvaluationEnvironmentMode,
    /// The plan's evaluation policy (a rerun resumes only under the same).
    #[serde(default)]
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// The prepared task.
    #[serde(default)]
    pub prepared: Option<PreparedTask>,
    /// The run's reuse key.
    pub reuse_key: String,
    /// The run result, redacted.
    pub run_result: Value,
    /// [`CHECKPOINT_SCHEMA`].
    pub schema_version: String,
    /// The task.
    pub task_id: String,
}

impl EvaluationCheckpoint {
    /// The run result, when it reads as one.
    pub fn result(&self) -> Option<RunResult> {
        serde_json::from_value(self.run_result.clone()).ok()
    }
}

/// `attempt-N/steps/checkpoint.json` (fields in the file's order, alphabetical).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepsCheckpoint {
    /// The semantic attempt.
    pub attempt: u32,
    /// The finished steps' records, redacted.
    pub finished: Value,
    /// The attempt's result so far, redacted.
    pub partial: Value,
    /// The run's reuse key.
    pub reuse_key: String,
    /// [`STEPS_CHECKPOINT_SCHEMA`].
    pub schema_version: String,
    /// The task's step names, in order.
    pub steps: Vec<String>,
    /// The task.
    pub task_id: String,
    /// The working directory the snapshots were taken of.
    pub workdir: String,
}

impl StepsCheckpoint {
    /// The finished steps' records and the partial result, when they read as such.
    pub fn progress(&self) -> Option<(Vec<StepResult>, RunResult)> {
        Some((
            serde_json::from_value(self.finished.clone()).ok()?,
            serde_json::from_value(self.partial.clone()).ok()?,
        ))
    }
}

/// What an interrupted attempt left to resume from.
#[derive(Debug, Clone, PartialEq)]
pub enum Checkpoint {
    /// Its evaluation.
    Evaluation(Box<EvaluationCheckpoint>),
    /// Its finished steps.
    Steps(Box<StepsCheckpoint>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint as this host wrote it before the record existed (`json!`: keys sorted).
    const EVALUATION: &str = r#"{"attempt":1,"evaluation_environment_mode":"fresh","evaluation_network_policy":null,"prepared":null,"reuse_key":"k","run_result":{"task_id":"t"},"schema_version":"agentcompass.evaluation_checkpoint.v4","task_id":"t"}"#;
    const STEPS: &str = r#"{"attempt":2,"finished":[],"partial":{"task_id":"t"},"reuse_key":"k","schema_version":"agentcompass.steps_checkpoint.v1","steps":["one","two"],"task_id":"t","workdir":"/app"}"#;

    #[test]
    fn todays_checkpoints_round_trip_byte_for_byte() {
        let evaluation: EvaluationCheckpoint = serde_json::from_str(EVALUATION).unwrap();
        assert_eq!(serde_json::to_string(&evaluation).unwrap(), EVALUATION);
        assert_eq!(evaluation.result().unwrap().task_id, "t");
        assert_eq!(evaluation.schema_version, CHECKPOINT_SCHEMA);
        let steps: StepsCheckpoint = serde_json::from_str(STEPS).unwrap();
        assert_eq!(serde_json::to_string(&steps).unwrap(), STEPS);
        let (finished, partial) = steps.progress().unwrap();
        assert!(finished.is_empty());
        assert_eq!(partial.task_id, "t");
        assert_eq!(steps.schema_version, STEPS_CHECKPOINT_SCHEMA);
    }
}
