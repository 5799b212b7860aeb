//! The verdict over the finished steps of a multi-step task, as Harbor 0.25.0's
//! `MultiStepTrial` reaches it: the remaining steps stop after a step that failed without a
//! verifier result, or whose rewards miss its `min_reward` (a missing key counts as -inf);
//! the attempt's rewards follow `multi_step_reward_strategy` — `mean` (the default): per-key
//! means over the steps with a verifier result, a key a step lacks counting 0; `final`: the
//! last step's rewards as they are.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{IssueSeverity, StepResult, StepScore, TaskSpec};
use serde_json::{json, Value};

use crate::names::ID;
use crate::reward::{self, Rewards};

/// The raw rewards of a step's verifier (`None`: the step has no verifier result).
fn rewards_of(step: &StepResult) -> Option<BTreeMap<String, f64>> {
    if !step.evaluated {
        return None;
    }
    let rewards = step.extra.get(ID)?.get("rewards")?.as_object()?;
    Some(
        rewards
            .iter()
            .filter_map(|(key, value)| Some((key.clone(), value.as_f64()?)))
            .collect(),
    )
}

/// The task's `multi_step_reward_strategy` (`mean` unless it says `final`).
fn strategy(task: &TaskSpec) -> &str {
    match task
        .metadata
        .get(ID)
        .and_then(|h| h.get("multi_step_reward_strategy"))
        .and_then(Value::as_str)
    {
        Some("final") => "final",
        _ => "mean",
    }
}

/// The `min_reward` thresholds of the step named `name`.
fn thresholds(task: &TaskSpec, name: &str) -> BTreeMap<String, f64> {
    task.steps
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.metadata.get("min_reward"))
        .and_then(Value::as_object)
        .map(|table| {
            table
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Why the remaining steps stop after `step` (`None`: they run).
fn stop_reason(task: &TaskSpec, step: &StepResult) -> Option<String> {
    let rewards = rewards_of(step);
    let failed = step
        .issues
        .iter()
        .any(|i| i.severity != IssueSeverity::Warning);
    if rewards.is_none() && failed {
        return Some(format!(
            "step `{}` failed without a verifier result",
            step.name
        ));
    }
    for (key, threshold) in thresholds(task, &step.name) {
        let actual = rewards
            .as_ref()
            .and_then(|r| r.get(&key).copied())
            .unwrap_or(f64::NEG_INFINITY);
        if actual < threshold {
            return Some(format!(
                "step `{}`: {key}={actual} below min_reward {threshold}",
                step.name
            ));
        }
    }
    None
}

/// The attempt's rewards under the task's strategy (`None`: no step has a verifier result).
fn combined(task: &TaskSpec, steps: &[StepResult]) -> Option<BTreeMap<String, f64>> {
    if strategy(task) == "final" {
        return steps.last().and_then(rewards_of);
    }
    let valid: Vec<BTreeMap<String, f64>> = steps.iter().filter_map(rewards_of).collect();
    if valid.is_empty() {
        return None;
    }
    let count = valid.len() as f64;
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for key in valid.iter().flat_map(|r| r.keys()) {
        sums.entry(key.clone()).or_default();
    }
    for rewards in &valid {
        for (key, sum) in sums.iter_mut() {
            *sum += rewards.get(key).copied().unwrap_or(0.0);
        }
    }
    (!sums.is_empty()).then(|| sums.into_iter().map(|(k, v)| (k, v / count)).collect())
}

/// The verdict after the last of `steps`.
pub(crate) fn score(task: &TaskSpec, steps: &[StepResult]) -> StepScore {
    let reason = steps.last().and_then(|last| stop_reason(task, last));
    let rewards = combined(task, steps);
    let metrics = rewards
        .as_ref()
        .map(|values| {
            reward::metrics(&Rewards {
                values: values.clone(),
                source: String::new(),
            })
        })
        .unwrap_or_default();
    let mut extra = serde_json::Map::new();
    extra.insert(
        ID.into(),
        json!({"multi_step_reward_strategy": strategy(task), "rewards": rewards}),
    );
    StepScore {
        stop: reason.is_some(),
        reason,
        metrics,
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, MetricValue, TaskStep};

    fn task(strategy: Option<&str>, min_reward: Option<Value>) -> TaskSpec {
        let mut task = TaskSpec::new("t", "");
        task.metadata.insert(
            ID.into(),
            json!({"multi_step_reward_strategy": strategy.unwrap_or("mean")}),
        );
        let mut one = TaskStep::new("one", "1");
        if let Some(min) = min_reward {
            one.metadata.insert("min_reward".into(), min);
        }
        task.steps = vec![one, TaskStep::new("two", "2")];
        task
    }

    fn step(name: &str, rewards: Option<Value>) -> StepResult {
        let mut step = StepResult {
            name: name.into(),
            evaluated: rewards.is_some(),
            ..StepResult::default()
        };
        match rewards {
            Some(rewards) => {
                step.extra.insert(ID.into(), json!({"rewards": rewards}));
            }
            None => step.issues.push(ExecutionIssue::error(
                IssuePhase::Evaluate,
                "reward_file_missing",
                "no reward",
            )),
        }
        step
    }

    #[test]
    fn mean_is_per_key_over_the_steps_with_a_verifier_result() {
        let steps = [
            step("one", Some(json!({"reward": 1.0, "style": 0.5}))),
            step("two", Some(json!({"reward": 0.0}))),
        ];
        let score = score(&task(None, None), &steps);
        assert!(!score.stop);
        assert_eq!(score.metrics["reward"], MetricValue::Float(0.5));
        assert!(
            !score.metrics.contains_key("style"),
            "undeclared: kept in extra only"
        );
        assert_eq!(score.extra[ID]["rewards"]["style"], 0.25);
        assert_eq!(score.metrics["correct"], MetricValue::Bool(false));
        assert_eq!(score.extra[ID]["multi_step_reward_strategy"], "mean");
        // A step without a verifier result is left out of the mean (and stops the rest).
        let steps = [step("one", Some(json!({"reward": 1.0}))), step("two", None)];
        let score = super::score(&task(None, None), &steps);
        assert_eq!(score.metrics["reward"], MetricValue::Float(1.0));
        assert_eq!(score.metrics["correct"], MetricValue::Bool(true));
        assert_eq!(
            score.reason.as_deref(),
            Some("step `two` failed without a verifier result")
        );
    }

    #[test]
    fn final_is_the_last_step_run() {
        let steps = [
            step("one", Some(json!({"reward": 1.0}))),
            step("two", Some(json!({"reward": 0.25}))),
        ];
        let score = score(&task(Some("final"), None), &steps);
        assert_eq!(score.metrics["reward"], MetricValue::Float(0.25));
        let steps = [step("one", Some(json!({"reward": 1.0}))), step("two", None)];
        let score = super::score(&task(Some("final"), None), &steps);
        assert!(score.metrics.is_empty());
        assert_eq!(score.extra[ID]["rewards"], Value::Null);
    }

    #[test]
    fn min_reward_stops_the_remaining_steps() {
        let gated = task(None, Some(json!({"reward": 1.0})));
        let low = [step("one", Some(json!({"reward": 0.5})))];
        let score = score(&gated, &low);
        assert!(score.stop);
        assert_eq!(
            score.reason.as_deref(),
            Some("step `one`: reward=0.5 below min_reward 1")
        );
        assert_eq!(score.metrics["reward"], MetricValue::Float(0.5));
        let met = [step("one", Some(json!({"reward": 1.0})))];
        assert!(!super::score(&gated, &met).stop);
        // A gated key the rewards lack counts as -inf.
        let keyed = task(None, Some(json!({"style": 0.1})));
        let score = super::score(&keyed, &met);
        assert_eq!(
            score.reason.as_deref(),
            Some("step `one`: style=-inf below min_reward 0.1")
        );
    }
}
