//! Multi-step tasks: the steps a task declares ([`TaskStep`]), what the host records of each
//! finished step ([`StepResult`]) and the benchmark's verdict over the steps so far
//! ([`StepScore`]).
//!
//! A task with steps runs them one after another in the same task environment (the agent's
//! state carries over): for each step the benchmark prepares it
//! ([`crate::sdk::Benchmark::prepare_step`]), the harness runs, the benchmark scores it
//! ([`crate::sdk::Benchmark::evaluate_step`]) and then says whether the remaining steps run
//! and what the attempt scores so far ([`crate::sdk::Benchmark::score_steps`]). A task without
//! steps (the default) runs as one step through `prepare_task` and `evaluate_attempt`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    ArtifactCollectCommand, ArtifactSpec, EnvironmentSetup, EvaluationEnvironmentMode,
    ExecutionIssue, JsonMap, MetricValue, NetworkPolicy, TaskStatus,
};

/// One step of a multi-step task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStep {
    /// The step's name, unique within the task (a portable directory name: the host stores
    /// the step's results under `attempt-N/steps/<name>/`).
    pub name: String,
    /// The step's instruction (empty: the benchmark's `prepare_step` supplies it).
    #[serde(default)]
    pub question: String,
    /// Benchmark-private declarations of the step (thresholds, paths, ...).
    #[serde(default)]
    pub metadata: JsonMap,
    /// The step's own run (agent) timeout: replaces the task's default for this step; the
    /// request's override and multipliers apply as they do to the task's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_timeout_seconds: Option<f64>,
    /// The step's own evaluation (verifier) timeout, applied like `run_timeout_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_timeout_seconds: Option<f64>,
    /// Paths collected after this step, appended to the attempt's (the step's artifacts are
    /// collected after every step into `attempt-N/steps/<name>/artifacts/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactSpec>,
    /// Commands run before this step's artifacts are collected, after the attempt's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifact_collect: Vec<ArtifactCollectCommand>,
    /// The step's run-phase network policy: replaces the task's (a request's explicit policy
    /// still wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_network_policy: Option<NetworkPolicy>,
    /// The step's evaluation-phase network policy, applied like `run_network_policy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// Where the step's evaluation runs, when it differs from the task's (a request's explicit
    /// mode still wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_environment_mode: Option<EvaluationEnvironmentMode>,
    /// The step's own fresh evaluation environment (its image): replaces the task's
    /// `evaluation_environment_setup` for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_environment_setup: Option<EnvironmentSetup>,
    /// The user the step's agent phase runs as (replaces the task's `run_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_user: Option<String>,
    /// The user the step's evaluation runs as (replaces the task's `evaluation_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_user: Option<String>,
}

impl TaskStep {
    /// A step with a name and an instruction.
    pub fn new(name: impl Into<String>, question: impl Into<String>) -> Self {
        TaskStep {
            name: name.into(),
            question: question.into(),
            metadata: JsonMap::new(),
            ..TaskStep::default()
        }
    }

    /// Whether the step plans differently from its task (its own timeouts, artifacts,
    /// policies or evaluation environment).
    pub fn has_own_plan(&self) -> bool {
        self.run_timeout_seconds.is_some()
            || self.evaluation_timeout_seconds.is_some()
            || !self.artifacts.is_empty()
            || !self.artifact_collect.is_empty()
            || self.run_network_policy.is_some()
            || self.evaluation_network_policy.is_some()
            || self.evaluation_environment_mode.is_some()
            || self.evaluation_environment_setup.is_some()
            || self.run_user.is_some()
            || self.evaluation_user.is_some()
    }
}

/// What the host records of one finished step (the attempt's `result.json` lists them as
/// `steps`, in order; `attempt-N/steps/<name>/result.json` holds the step's full result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// The step's name.
    pub name: String,
    /// The step's status (derived from its issues).
    #[serde(default)]
    pub status: TaskStatus,
    /// Whether the step's evaluation ran and returned a result (a step whose preparation or
    /// agent run failed fatally, or whose evaluation failed, has none).
    #[serde(default)]
    pub evaluated: bool,
    /// The step's metrics (empty when it was not evaluated).
    #[serde(default)]
    pub metrics: BTreeMap<String, MetricValue>,
    /// The step's issues.
    #[serde(default)]
    pub issues: Vec<ExecutionIssue>,
    /// The benchmark's step extras (for example the verifier's raw rewards).
    #[serde(default)]
    pub extra: JsonMap,
    /// RFC 3339 start time.
    #[serde(default)]
    pub started_at: Option<String>,
    /// RFC 3339 end time.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Wall-clock duration in seconds.
    #[serde(default)]
    pub duration_seconds: f64,
    /// Why the remaining steps did not run after this one (set on the last step run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The step finished in an interrupted earlier run and was not run again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
}

/// The benchmark's verdict after a step: whether the remaining steps run, and the attempt's
/// score over the steps so far (the final verdict's score is the attempt's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepScore {
    /// Skip the remaining steps.
    #[serde(default)]
    pub stop: bool,
    /// Why (recorded on the step as `stop_reason`).
    #[serde(default)]
    pub reason: Option<String>,
    /// The attempt's metrics.
    #[serde(default)]
    pub metrics: BTreeMap<String, MetricValue>,
    /// Benchmark extras merged into the attempt's `extra`.
    #[serde(default)]
    pub extra: JsonMap,
}

impl StepScore {
    /// The default verdict: stop after a step that was not evaluated (its failure leaves
    /// nothing to build on), score the attempt by the last evaluated step's metrics.
    pub fn last_evaluated(steps: &[StepResult]) -> StepScore {
        let metrics = steps
            .iter()
            .rev()
            .find(|s| s.evaluated)
            .map(|s| s.metrics.clone())
            .unwrap_or_default();
        let failed = steps.last().filter(|s| !s.evaluated);
        StepScore {
            stop: failed.is_some(),
            reason: failed.map(|s| format!("step `{}` has no evaluation result", s.name)),
            metrics,
            extra: JsonMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, evaluated: bool, reward: f64) -> StepResult {
        StepResult {
            name: name.into(),
            evaluated,
            metrics: if evaluated {
                BTreeMap::from([("reward".to_string(), MetricValue::Float(reward))])
            } else {
                BTreeMap::new()
            },
            ..StepResult::default()
        }
    }

    #[test]
    fn the_default_verdict_keeps_the_last_evaluated_step() {
        let score = StepScore::last_evaluated(&[step("a", true, 0.5), step("b", true, 1.0)]);
        assert!(!score.stop);
        assert_eq!(score.metrics["reward"], MetricValue::Float(1.0));
        let score = StepScore::last_evaluated(&[step("a", true, 0.5), step("b", false, 0.0)]);
        assert!(score.stop);
        assert_eq!(
            score.reason.as_deref(),
            Some("step `b` has no evaluation result")
        );
        assert_eq!(score.metrics["reward"], MetricValue::Float(0.5));
        assert_eq!(StepScore::last_evaluated(&[]), StepScore::default());
    }

    #[test]
    fn step_records_read_with_defaults_and_omit_unset_flags() {
        let record: StepResult = serde_json::from_str(r#"{"name": "one"}"#).unwrap();
        assert_eq!(record.name, "one");
        assert!(!record.evaluated && !record.resumed);
        let json = serde_json::to_value(&record).unwrap();
        assert!(json.get("resumed").is_none() && json.get("stop_reason").is_none());
        let task_step: TaskStep = serde_json::from_str(r#"{"name": "two"}"#).unwrap();
        assert_eq!(task_step, TaskStep::new("two", ""));
    }
}
