//! `TruncationAnalyzer`: model steps cut off by the output-length limit.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{ratio_outcome, skipped, Options};
use crate::py::round;
use crate::trajectory::steps;

/// Stop reasons that mean "cut off at the length limit", compared case-insensitively:
/// upstream's `length` and `max_tokens`, plus the spellings other providers use.
const TRUNCATION_REASONS: &[&str] = &[
    "length",
    "max_tokens",
    "max_output_tokens",
    "max_completion_tokens",
    "model_length",
    "max_length",
];

/// Flags an attempt whose model steps stopped at the length limit (`metric.stop_reason`).
/// Score: the truncated share of model steps. Option `threshold` (default `0`): with `0` any
/// truncated step is a bad case, otherwise a share `>= threshold`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TruncationAnalyzer;

impl TruncationAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "TruncationAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect LLM steps truncated by length/max_tokens stop reasons and report the \
             truncation ratio.",
            category::LLM_ERROR,
            json!({"threshold": 0.0, "only_incorrect": false}),
            &[],
        )
    }
}

/// Whether a stop reason is a length stop.
pub(crate) fn is_length_stop(reason: &str) -> bool {
    TRUNCATION_REASONS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(reason.trim()))
}

/// The details of [`TruncationAnalyzer`].
#[derive(Serialize)]
struct TruncationDetails {
    /// The model steps.
    total_llm_steps: usize,
    /// The truncated ones.
    truncated_steps: usize,
    /// Their share.
    truncation_ratio: f64,
    /// Their ids (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    truncated_step_ids: Vec<Value>,
}

impl Analyzer for TruncationAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let threshold = Options(&input.options).f64_or("threshold", 0.0)?;
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let mut total = 0usize;
        let mut truncated = Vec::new();
        for step in &steps {
            if step.assistant().is_none() {
                continue;
            }
            total += 1;
            if step
                .metric("stop_reason")
                .and_then(Value::as_str)
                .is_some_and(is_length_stop)
            {
                truncated.push(step.id());
            }
        }
        let ratio = if total > 0 {
            truncated.len() as f64 / total as f64
        } else {
            0.0
        };
        let hits = truncated.len();
        let details = TruncationDetails {
            total_llm_steps: total,
            truncated_steps: truncated.len(),
            truncation_ratio: round(ratio, 4),
            truncated_step_ids: truncated,
        };
        Ok(ratio_outcome(ratio, hits, threshold, details))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{result, run, run_with, step, survives_odd_json};

    fn stopped(id: u64, reason: &str) -> Value {
        let mut s = step(id, "partial", &[]);
        s["metric"]["stop_reason"] = json!(reason);
        s
    }

    #[test]
    fn flags_a_length_stop() {
        let out = run(
            &TruncationAnalyzer,
            &TruncationAnalyzer::info(),
            result(vec![
                stopped(1, "tool_calls"),
                stopped(2, "length"),
                stopped(3, "stop"),
                stopped(4, "MAX_TOKENS"),
            ]),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.5));
        assert_eq!(
            out.details,
            json!({"total_llm_steps": 4, "truncated_steps": 2, "truncation_ratio": 0.5,
                   "truncated_step_ids": [2, 4]})
        );
    }

    #[test]
    fn normal_stops_and_thresholds() {
        let info = TruncationAnalyzer::info();
        let out = run(&TruncationAnalyzer, &info, result(vec![stopped(1, "stop")]));
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(
            out.details,
            json!({"total_llm_steps": 1, "truncated_steps": 0, "truncation_ratio": 0.0})
        );
        let steps = vec![stopped(1, "length"), stopped(2, "stop"), stopped(3, "stop")];
        let out = run_with(
            &TruncationAnalyzer,
            &info,
            result(steps),
            json!({"threshold": 0.5}),
        );
        assert_eq!(out.is_badcase, Some(false));
    }

    #[test]
    fn odd_json_is_skipped() {
        survives_odd_json(&TruncationAnalyzer, &TruncationAnalyzer::info());
        let bad = TruncationAnalyzer.analyze(&AnalysisInput {
            options: json!({"threshold": "high"}).as_object().cloned().unwrap(),
            ..AnalysisInput::default()
        });
        assert!(bad.is_err());
    }
}
