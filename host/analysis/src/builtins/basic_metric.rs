//! `BasicMetricAnalyzer`: trajectory statistics, no bad case (as upstream).

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde_json::json;

use super::completion_length::count_json;
use super::{category, info};
use crate::options::skipped;
use crate::py::round;
use crate::trajectory::{all_steps, trajectory, NO_TRAJECTORY};

/// Step and tool-call counts, the tool names called and completion lengths, for the
/// summary's distributions. Always `is_badcase: null`, no score.
#[derive(Debug, Clone, Copy, Default)]
pub struct BasicMetricAnalyzer;

impl BasicMetricAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "BasicMetricAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Trajectory basic statistics: step count, tool call count, average tool calls per \
             step, unique tool count, tool call distribution.",
            category::BEHAVIOR,
            json!({"only_incorrect": false, "threshold": 0.0}),
            &[
                ("total_steps", "numeric_stats"),
                ("total_tool_calls", "numeric_stats"),
                ("avg_tool_calls_per_step", "numeric_stats"),
                ("unique_tool_count", "numeric_stats"),
                ("tool_names", "value_counts"),
                ("max_completion_token_len", "numeric_stats"),
                ("min_completion_token_len", "numeric_stats"),
                ("avg_completion_token_len", "numeric_stats"),
            ],
        )
    }
}

impl Analyzer for BasicMetricAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let Some(traj) = trajectory(&input.result) else {
            return Ok(skipped(NO_TRAJECTORY));
        };
        let steps = all_steps(traj);
        let names: Vec<&str> = steps
            .iter()
            .flat_map(|s| s.tool_calls().into_iter().map(|c| c.name))
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        let lens: Vec<f64> = steps
            .iter()
            .filter_map(|s| s.metric_f64("completion_tokens_len"))
            .collect();
        let avg_calls = if steps.is_empty() {
            0.0
        } else {
            round(names.len() as f64 / steps.len() as f64, 4)
        };
        let (max, min, avg) = if lens.is_empty() {
            (json!(0), json!(0), 0.0)
        } else {
            (
                count_json(lens.iter().copied().fold(f64::MIN, f64::max)),
                count_json(lens.iter().copied().fold(f64::MAX, f64::min)),
                round(lens.iter().sum::<f64>() / lens.len() as f64, 4),
            )
        };
        Ok(AnalysisOutcome {
            is_badcase: None,
            details: json!({
                "total_steps": steps.len(),
                "total_tool_calls": names.len(),
                "avg_tool_calls_per_step": avg_calls,
                "unique_tool_count": unique.len(),
                "tool_names": names,
                "max_completion_token_len": max,
                "min_completion_token_len": min,
                "avg_completion_token_len": avg,
            }),
            score: None,
            extra: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{bash, result, run, step, survives_odd_json};

    #[test]
    fn counts_steps_and_calls() {
        let mut s = step(
            2,
            "",
            &[("bash", json!({"command": "a"})), ("done", json!({}))],
        );
        s["metric"]["completion_tokens_len"] = json!(40);
        let mut first = bash(1, "ls");
        first["metric"]["completion_tokens_len"] = json!(10);
        let out = run(
            &BasicMetricAnalyzer,
            &BasicMetricAnalyzer::info(),
            result(vec![first, s]),
        );
        assert_eq!(out.is_badcase, None);
        assert_eq!(
            out.details,
            json!({"total_steps": 2, "total_tool_calls": 3, "avg_tool_calls_per_step": 1.5,
                   "unique_tool_count": 2, "tool_names": ["bash", "bash", "done"],
                   "max_completion_token_len": 40, "min_completion_token_len": 10,
                   "avg_completion_token_len": 25.0})
        );
        survives_odd_json(&BasicMetricAnalyzer, &BasicMetricAnalyzer::info());
    }
}
