//! Multi-step calls over the frozen ABI. abi_stable refuses a plugin whose vtables have fewer
//! methods than the host's, so the step methods of [`Benchmark`](crate::sdk::Benchmark) ride
//! on existing methods, in their JSON:
//!
//! - `prepare_step` and `evaluate_step` are `prepare_task` and `evaluate` with the step
//!   attached to the task JSON under [`STEP_KEY`] (and the step's question in place of the
//!   task's). A plugin built before steps existed ignores the key: it prepares the task with the
//!   step's question and evaluates the attempt, which is what the SDK's defaults do;
//! - `score_steps` is `aggregate_metrics` with an object (the task and its finished steps
//!   under [`SCORE_KEY`]) where the task results array belongs. Such a plugin cannot decode it
//!   and fails without doing anything, and the host uses the SDK's default; a newer plugin
//!   always answers `Ok` (the score or its error inside), so an `Err` means "built before".

use abi_stable::std_types::RString;
use serde_json::{json, Value};

use crate::abi::json::{from_json, to_json};
use crate::contracts::{StepResult, StepScore, TaskSpec, TaskStep};
use crate::{Error, ErrorKind, Result};

/// The key of the task JSON that carries the step (and the task's own question).
pub(super) const STEP_KEY: &str = "agentcompass_step";
/// The key of the `aggregate_metrics` argument that asks for `score_steps`.
pub(super) const SCORE_KEY: &str = "agentcompass_score_steps";
/// The key of a `score_steps` answer.
const SCORE_ANSWER: &str = "agentcompass_step_score";
/// The key of a `score_steps` error.
const SCORE_ERROR: &str = "agentcompass_step_score_error";

fn encode_error(e: serde_json::Error) -> Error {
    Error::invalid_input(format!("cannot encode value: {e}"))
}

/// The task JSON of a step call: the step's question in place of the task's (when it has one),
/// the step and the task's question under [`STEP_KEY`].
pub(super) fn task_with_step(task: &TaskSpec, step: &TaskStep) -> Result<RString> {
    let mut value = serde_json::to_value(task).map_err(encode_error)?;
    if let Some(object) = value.as_object_mut() {
        if !step.question.is_empty() {
            object.insert("question".into(), step.question.clone().into());
        }
        let step = serde_json::to_value(step).map_err(encode_error)?;
        object.insert(
            STEP_KEY.into(),
            json!({"step": step, "task_question": task.question}),
        );
    }
    to_json(&value)
}

/// Decodes the task JSON of a `prepare_task` or `evaluate` call: the task as loaded and, for a
/// step call, the step.
pub(super) fn task_and_step(json: &str) -> Result<(TaskSpec, Option<TaskStep>)> {
    if !json.contains(STEP_KEY) {
        return Ok((from_json(json, "task")?, None));
    }
    let mut value: Value = from_json(json, "task")?;
    let attached = value.as_object_mut().and_then(|o| o.remove(STEP_KEY));
    let mut task: TaskSpec = serde_json::from_value(value)
        .map_err(|e| Error::invalid_input(format!("invalid task: {e}")))?;
    let Some(mut attached) = attached else {
        return Ok((task, None));
    };
    if let Some(Value::String(question)) = attached.get_mut("task_question").map(Value::take) {
        task.question = question;
    }
    let step = serde_json::from_value(attached["step"].take())
        .map_err(|e| Error::invalid_input(format!("invalid task step: {e}")))?;
    Ok((task, Some(step)))
}

/// The `aggregate_metrics` argument asking for `score_steps`.
pub(super) fn score_request(task: &TaskSpec, steps: &[StepResult]) -> Result<RString> {
    to_json(&json!({SCORE_KEY: {"task": task, "steps": steps}}))
}

/// The task and steps of a `score_steps` request (`None`: an ordinary `aggregate_metrics`).
pub(super) fn score_request_of(json: &str) -> Option<Result<(TaskSpec, Vec<StepResult>)>> {
    if !json.trim_start().starts_with('{') {
        return None;
    }
    let decode = || {
        let mut value: Value = from_json(json, "score_steps request")?;
        let mut request = value
            .get_mut(SCORE_KEY)
            .map(Value::take)
            .ok_or_else(|| Error::invalid_input("invalid task results: expected an array"))?;
        let task = serde_json::from_value(request["task"].take())
            .map_err(|e| Error::invalid_input(format!("invalid task: {e}")))?;
        let steps = serde_json::from_value(request["steps"].take())
            .map_err(|e| Error::invalid_input(format!("invalid step results: {e}")))?;
        Ok((task, steps))
    };
    Some(decode())
}

/// A `score_steps` answer: always `Ok` across the boundary, the score or its error inside.
pub(super) fn score_answer(score: Result<StepScore>) -> Result<RString> {
    match score {
        Ok(score) => to_json(&json!({SCORE_ANSWER: score})),
        Err(e) => to_json(&json!({SCORE_ERROR: {"kind": e.kind.code(), "message": e.message}})),
    }
}

/// Reads a `score_steps` answer.
pub(super) fn read_score_answer(json: &str) -> Result<StepScore> {
    let mut value: Value = from_json(json, "return value")?;
    if let Some(score) = value.get_mut(SCORE_ANSWER) {
        return serde_json::from_value(score.take())
            .map_err(|e| Error::invalid_input(format!("invalid return value: {e}")));
    }
    let error = &value[SCORE_ERROR];
    let kind = error["kind"]
        .as_u64()
        .and_then(|k| u32::try_from(k).ok())
        .map_or(ErrorKind::Failed, ErrorKind::from_code);
    Err(Error::new(
        kind,
        error["message"]
            .as_str()
            .unwrap_or("score_steps answered without a score"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_rides_on_the_task_and_comes_back_off_it() {
        let mut task = TaskSpec::new("t", "the task");
        task.category = "c".into();
        let step = TaskStep::new("one", "do step one");
        let json = task_with_step(&task, &step).unwrap();
        // What a plugin built before steps reads: the task, with the step's question.
        let old: TaskSpec = from_json(&json, "task").unwrap();
        assert_eq!(old.question, "do step one");
        assert_eq!(old.category, "c");
        let (back, back_step) = task_and_step(&json).unwrap();
        assert_eq!(back, task);
        assert_eq!(back_step, Some(step));
        let plain = to_json(&task).unwrap();
        assert_eq!(task_and_step(&plain).unwrap(), (task, None));
    }

    #[test]
    fn a_step_without_a_question_keeps_the_tasks() {
        let task = TaskSpec::new("t", "the task");
        let json = task_with_step(&task, &TaskStep::new("one", "")).unwrap();
        let old: TaskSpec = from_json(&json, "task").unwrap();
        assert_eq!(old.question, "the task");
    }

    #[test]
    fn score_requests_are_never_task_results() {
        let task = TaskSpec::new("t", "q");
        let steps = vec![StepResult {
            name: "one".into(),
            evaluated: true,
            ..StepResult::default()
        }];
        let json = score_request(&task, &steps).unwrap();
        // A plugin built before steps fails to decode it (no side effect).
        assert!(from_json::<Vec<crate::contracts::TaskAttempts>>(&json, "task results").is_err());
        let (t, s) = score_request_of(&json).unwrap().unwrap();
        assert_eq!((t, s), (task, steps));
        assert!(score_request_of("[]").is_none());
    }

    #[test]
    fn score_answers_carry_the_score_or_the_error() {
        let score = StepScore {
            stop: true,
            reason: Some("why".into()),
            ..StepScore::default()
        };
        let json = score_answer(Ok(score.clone())).unwrap();
        assert_eq!(read_score_answer(&json).unwrap(), score);
        let json = score_answer(Err(Error::invalid_input("bad threshold"))).unwrap();
        let err = read_score_answer(&json).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert_eq!(err.message, "bad threshold");
    }
}
