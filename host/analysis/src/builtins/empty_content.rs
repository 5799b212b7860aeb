//! `EmptyContentAnalyzer`: steps where the model produced no visible content and no tool
//! call (reasoning-only dead steps), as upstream defines it.

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde_json::json;

use super::{category, info};
use crate::options::skipped;
use crate::py::{prefix, round};
use crate::trajectory::steps;

/// Flags an attempt with a model step that has neither visible content (after trimming
/// whitespace) nor a tool call. Score: the share of such steps among all steps.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmptyContentAnalyzer;

impl EmptyContentAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "EmptyContentAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Flag steps where the model emits reasoning but no visible content and no tool calls \
             (reasoning-only dead steps).",
            category::LLM_ERROR,
            json!({"only_incorrect": false, "threshold": 0.0}),
            &[],
        )
    }
}

impl Analyzer for EmptyContentAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let total = steps.len();
        let mut bad = Vec::new();
        for step in &steps {
            let Some(ac) = step.assistant() else {
                continue;
            };
            if ac.content_text().trim().is_empty() && !ac.has_tool_calls() {
                bad.push(json!({
                    "step_id": step.id(),
                    "reasoning_preview": prefix(ac.reasoning_text().trim(), 200),
                }));
            }
        }
        let score = round(bad.len() as f64 / total as f64, 4);
        Ok(AnalysisOutcome {
            is_badcase: Some(!bad.is_empty()),
            details: json!({
                "total_steps": total,
                "bad_steps": bad.len(),
                "score": score,
                "bad_step_details": bad,
            }),
            score: Some(score),
            extra: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{result, run, step, survives_odd_json};

    #[test]
    fn flags_a_reasoning_only_step() {
        let mut dead = step(2, "  \n", &[]);
        dead["assistant_content"]["reasoning_content"] = json!("thinking hard");
        let out = run(
            &EmptyContentAnalyzer,
            &EmptyContentAnalyzer::info(),
            result(vec![
                step(1, "", &[("bash", json!({"command": "ls"}))]),
                dead,
            ]),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.5));
        assert_eq!(
            out.details,
            json!({"total_steps": 2, "bad_steps": 1, "score": 0.5,
                   "bad_step_details": [{"step_id": 2, "reasoning_preview": "thinking hard"}]})
        );
    }

    #[test]
    fn content_or_calls_are_fine_and_non_model_steps_are_skipped() {
        let command_step = json!({"step_id": 3, "assistant_content":
            {"content": null, "reasoning_content": null, "tool_calls": null},
            "observation": [{"command": "install", "exit_code": 0}]});
        let out = run(
            &EmptyContentAnalyzer,
            &EmptyContentAnalyzer::info(),
            result(vec![step(1, "answer", &[]), command_step]),
        );
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(out.score, Some(0.0));
    }

    #[test]
    fn missing_trajectory_is_skipped() {
        let out = run(
            &EmptyContentAnalyzer,
            &EmptyContentAnalyzer::info(),
            json!({}),
        );
        assert_eq!(out.is_badcase, None);
        assert_eq!(out.details, json!({"skipped": "no trajectory available"}));
        survives_odd_json(&EmptyContentAnalyzer, &EmptyContentAnalyzer::info());
    }
}
