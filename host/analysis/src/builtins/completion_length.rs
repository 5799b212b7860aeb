//! `CompletionLengthAnalyzer`: model steps whose completion is longer than a token limit.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{ratio_outcome, skipped, Options};
use crate::py::{num, round};
use crate::trajectory::steps;

/// Flags an attempt with model steps whose `metric.completion_tokens_len` is above
/// `max_tokens` (default `131072`). Score: the exceeded share of model steps; `threshold`
/// as [`super::TruncationAnalyzer`]'s.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompletionLengthAnalyzer;

impl CompletionLengthAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "CompletionLengthAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect LLM steps whose completion token length exceeds the max_tokens threshold; \
             reports mean/max completion tokens and the exceeded-step ratio.",
            category::EFFICIENCY,
            json!({"threshold": 0.0, "only_incorrect": false, "max_tokens": 131072}),
            &[
                ("mean_completion_tokens", "numeric_stats"),
                ("max_completion_tokens", "numeric_stats"),
                ("exceeded_ratio", "numeric_stats"),
            ],
        )
    }
}

/// A token count as JSON: an integer when it is whole.
pub(crate) fn count_json(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        num(x)
    }
}

/// The details of [`CompletionLengthAnalyzer`].
#[derive(Serialize)]
struct CompletionDetails {
    /// The model steps.
    total_llm_steps: usize,
    /// `max_tokens` as written (`4096` when unset).
    max_tokens_threshold: Value,
    /// The model steps above it.
    exceeded_steps: usize,
    /// Their share.
    exceeded_ratio: f64,
    /// The mean completion length.
    mean_completion_tokens: f64,
    /// The longest completion.
    max_completion_tokens: Value,
    /// The ids of the steps above it (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exceeded_step_ids: Vec<Value>,
}

impl Analyzer for CompletionLengthAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let options = Options(&input.options);
        let threshold = options.f64_or("threshold", 0.0)?;
        let max_tokens = options.number("max_tokens")?;
        let max_tokens_threshold = max_tokens.map_or(json!(4096), |n| n.raw.clone());
        let max_tokens = max_tokens.map_or(4096.0, |n| n.value);
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let mut total = 0usize;
        let mut exceeded = Vec::new();
        let mut tokens = Vec::new();
        for step in &steps {
            if step.assistant().is_none() {
                continue;
            }
            total += 1;
            let Some(n) = step.metric_f64("completion_tokens_len") else {
                continue;
            };
            tokens.push(n);
            if n > max_tokens {
                exceeded.push(step.id());
            }
        }
        if total == 0 {
            return Ok(skipped("no LLM steps in trajectory"));
        }
        let ratio = exceeded.len() as f64 / total as f64;
        let mean = if tokens.is_empty() {
            0.0
        } else {
            round(tokens.iter().sum::<f64>() / tokens.len() as f64, 1)
        };
        let max = tokens
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let hits = exceeded.len();
        let details = CompletionDetails {
            total_llm_steps: total,
            max_tokens_threshold,
            exceeded_steps: exceeded.len(),
            exceeded_ratio: round(ratio, 4),
            mean_completion_tokens: mean,
            max_completion_tokens: count_json(max.unwrap_or(0.0)),
            exceeded_step_ids: exceeded,
        };
        Ok(ratio_outcome(ratio, hits, threshold, details))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{result, run, run_with, step, survives_odd_json};

    fn tokens(id: u64, n: u64) -> Value {
        let mut s = step(id, "x", &[]);
        s["metric"]["completion_tokens_len"] = json!(n);
        s
    }

    #[test]
    fn long_completions_trip_it() {
        let info = CompletionLengthAnalyzer::info();
        let steps = vec![tokens(1, 100), tokens(2, 300)];
        let out = run(&CompletionLengthAnalyzer, &info, result(steps.clone()));
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(
            out.details,
            json!({"total_llm_steps": 2, "max_tokens_threshold": 131072, "exceeded_steps": 0,
                   "exceeded_ratio": 0.0, "mean_completion_tokens": 200.0, "max_completion_tokens": 300})
        );
        let out = run_with(
            &CompletionLengthAnalyzer,
            &info,
            result(steps),
            json!({"max_tokens": 200}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.5));
        assert_eq!(out.details["exceeded_step_ids"], json!([2]));
        survives_odd_json(&CompletionLengthAnalyzer, &info);
    }
}
