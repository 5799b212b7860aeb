//! `example_answer_distance`: an analyzer for `example_exact_match` runs. An attempt is a bad
//! case when its final answer is not the expected number; the score is how far off it is
//! (`|given - expected|`), which the built-in analyzers cannot tell. Written as a third party
//! would write an analyzer plugin: it reads only the persisted attempt.
//!
//! Option `panic_on_task` (a task id) makes it panic on that task, to prove that an analyzer
//! failure is recorded in `analysis_result` and never fails the task.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde_json::{json, Value};

/// Registry id.
pub const ID: &str = "example_answer_distance";

/// The analyzer.
pub struct AnswerDistance;

fn number(value: &Value) -> Option<i64> {
    match value {
        Value::String(text) => text.trim().parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

impl Analyzer for AnswerDistance {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        if input.options.get("panic_on_task").and_then(Value::as_str) == Some(&input.task_id) {
            panic!("example_answer_distance: panic_on_task {}", input.task_id);
        }
        let given = &input.result["final_answer"];
        let outcome = match (number(given), number(&input.ground_truth)) {
            (Some(given), Some(expected)) => {
                let distance = given.abs_diff(expected);
                AnalysisOutcome {
                    is_badcase: Some(distance != 0),
                    details: json!({"given": given, "expected": expected, "distance": distance}),
                    score: Some(distance as f64),
                    extra: None,
                }
            }
            // No expected number: nothing to measure.
            (_, None) => AnalysisOutcome::default(),
            (None, Some(expected)) => AnalysisOutcome {
                is_badcase: Some(true),
                details: json!({"given": given, "expected": expected, "reason": "not a number"}),
                score: None,
                extra: None,
            },
        };
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(answer: Value, expected: &str) -> AnalysisInput {
        AnalysisInput {
            task_id: "arith-0001".into(),
            ground_truth: json!(expected),
            result: json!({"final_answer": answer}),
            ..AnalysisInput::default()
        }
    }

    #[test]
    fn measures_how_far_off_the_answer_is() {
        let right = AnswerDistance.analyze(&input(json!("42"), "42")).unwrap();
        assert_eq!(right.is_badcase, Some(false));
        assert_eq!(right.score, Some(0.0));
        let off = AnswerDistance.analyze(&input(json!("45"), "42")).unwrap();
        assert_eq!(off.is_badcase, Some(true));
        assert_eq!(
            off.details,
            json!({"given": 45, "expected": 42, "distance": 3})
        );
        let missing = AnswerDistance.analyze(&input(Value::Null, "42")).unwrap();
        assert_eq!(missing.is_badcase, Some(true));
        assert_eq!(missing.details["reason"], "not a number");
        let unknown = AnswerDistance.analyze(&input(json!("1"), "n/a")).unwrap();
        assert_eq!(unknown.is_badcase, None);
    }
}
