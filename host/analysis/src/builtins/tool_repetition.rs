//! Repeated tool calls (the same tool name with the same arguments): within one step
//! (`StepToolRepetitionAnalyzer`), anywhere in the trajectory
//! (`CrossStepToolRepetitionAnalyzer`) and in a run of consecutive steps
//! (`ConsecutiveToolRepetitionAnalyzer`), as upstream defines them. Arguments are compared
//! as upstream does: parsed from their JSON text, rendered with sorted keys.

use std::collections::HashMap;

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{skipped, Options};
use crate::py::round;
use crate::trajectory::{steps, Step};

/// A tool call's identity: (name, arguments as sorted-key JSON).
type Key = (String, String);

/// Counts in first-seen order (Python's `Counter` iteration order).
#[derive(Default)]
struct Counts {
    index: HashMap<Key, usize>,
    entries: Vec<(Key, usize, Vec<Value>)>,
}

impl Counts {
    fn add(&mut self, key: Key, step_id: Value) {
        match self.index.get(&key) {
            Some(&i) => {
                if let Some(entry) = self.entries.get_mut(i) {
                    entry.1 += 1;
                    entry.2.push(step_id);
                }
            }
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, 1, vec![step_id]));
            }
        }
    }

    /// Calls beyond the first of each identity.
    fn duplicates(&self) -> usize {
        self.entries
            .iter()
            .map(|(_, c, _)| c.saturating_sub(1))
            .sum()
    }

    /// The identities called more than once.
    fn repeated(&self) -> impl Iterator<Item = &(Key, usize, Vec<Value>)> {
        self.entries.iter().filter(|(_, c, _)| *c > 1)
    }
}

/// The keys of a step's tool calls.
fn keys(step: &Step<'_>) -> Vec<Key> {
    step.tool_calls().iter().map(|call| call.key()).collect()
}

/// Duplicate calls within one step. Score: duplicates / calls over all steps; bad case
/// when the score is above `threshold` (default `0.2`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StepToolRepetitionAnalyzer;

impl StepToolRepetitionAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "StepToolRepetitionAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect repeated tool calls (same name + same arguments) within a single step.",
            category::BEHAVIOR,
            json!({"only_incorrect": false, "threshold": 0.2}),
            &[("step_repetition_ratio", "numeric_stats")],
        )
    }
}

impl Analyzer for StepToolRepetitionAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let threshold = Options(&input.options).f64_or("threshold", 0.2)?;
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let mut step_details = Vec::new();
        let (mut total_tools, mut total_duplicates) = (0usize, 0usize);
        for step in &steps {
            let keys = keys(step);
            if keys.is_empty() {
                continue;
            }
            total_tools += keys.len();
            let mut counts = Counts::default();
            for key in &keys {
                counts.add(key.clone(), Value::Null);
            }
            let duplicates = counts.duplicates();
            total_duplicates += duplicates;
            if duplicates > 0 {
                let items: Vec<Value> = counts
                    .repeated()
                    .map(|((tool, args), count, _)| {
                        json!({"tool": tool, "args_hash": args, "count": count})
                    })
                    .collect();
                step_details.push(json!({
                    "step_id": step.id(),
                    "total_tools": keys.len(),
                    "duplicates": duplicates,
                    "repetition_ratio": round(duplicates as f64 / keys.len() as f64, 4),
                    "duplicate_tools": items,
                }));
            }
        }
        let ratio = if total_tools > 0 {
            total_duplicates as f64 / total_tools as f64
        } else {
            0.0
        };
        let score = round(ratio, 4);
        Ok(AnalysisOutcome {
            is_badcase: Some(score > threshold),
            details: json!({
                "total_tools": total_tools,
                "total_duplicates": total_duplicates,
                "step_repetition_ratio": score,
                "steps_with_duplicates": step_details.len(),
                "step_details": step_details,
            }),
            score: Some(score),
            extra: None,
        })
    }
}

/// Identical calls anywhere in the trajectory. Score: duplicates / calls; bad case when the
/// score is above `threshold` (default `0.2`); `is_badcase: null` when there is no call.
#[derive(Debug, Clone, Copy, Default)]
pub struct CrossStepToolRepetitionAnalyzer;

impl CrossStepToolRepetitionAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "CrossStepToolRepetitionAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect repeated tool calls (same name + same arguments) across all steps of the \
             trajectory.",
            category::BEHAVIOR,
            json!({"only_incorrect": false, "threshold": 0.2}),
            &[("cross_step_repetition_ratio", "numeric_stats")],
        )
    }
}

impl Analyzer for CrossStepToolRepetitionAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let threshold = Options(&input.options).f64_or("threshold", 0.2)?;
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let mut counts = Counts::default();
        let mut total_tools = 0usize;
        for step in &steps {
            for key in keys(step) {
                total_tools += 1;
                counts.add(key, step.id());
            }
        }
        if total_tools == 0 {
            return Ok(AnalysisOutcome {
                is_badcase: None,
                details: json!({"total_tools": 0, "total_duplicates": 0,
                                "cross_step_repetition_ratio": 0.0}),
                score: Some(0.0),
                extra: None,
            });
        }
        let total_duplicates = counts.duplicates();
        let score = round(total_duplicates as f64 / total_tools as f64, 4);
        let repeated: Vec<Value> = counts
            .repeated()
            .map(|((tool, args), count, step_ids)| {
                json!({"tool": tool, "args_hash": args, "count": count, "step_ids": step_ids})
            })
            .collect();
        Ok(AnalysisOutcome {
            is_badcase: Some(score > threshold),
            details: json!({
                "total_tools": total_tools,
                "total_duplicates": total_duplicates,
                "cross_step_repetition_ratio": score,
                "num_repeated_tools": repeated.len(),
                "repeated_tools": repeated.into_iter().take(20).collect::<Vec<_>>(),
            }),
            score: Some(score),
            extra: None,
        })
    }
}

/// The same call (or the same set of calls) in consecutive steps. Score: the longest run;
/// bad case when it is longer than `consecutive_threshold` (default `5`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsecutiveToolRepetitionAnalyzer;

impl ConsecutiveToolRepetitionAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "ConsecutiveToolRepetitionAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect consecutive identical tool calls across steps; a run longer than the \
             consecutive_threshold is flagged as a badcase.",
            category::BEHAVIOR,
            json!({"only_incorrect": false, "consecutive_threshold": 5}),
            &[("max_consecutive_repetition", "numeric_stats")],
        )
    }
}

/// A step's signature: its single call, or for several calls the sorted names and
/// arguments each joined with `|` (order-independent); `None` without calls.
fn signature(step: &Step<'_>) -> Option<Key> {
    let mut keys = keys(step);
    keys.sort();
    match keys.len() {
        0 => None,
        1 => keys.pop(),
        _ => Some((
            keys.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join("|"),
            keys.iter()
                .map(|(_, a)| a.as_str())
                .collect::<Vec<_>>()
                .join("|"),
        )),
    }
}

/// The details of [`ConsecutiveToolRepetitionAnalyzer`].
#[derive(Serialize)]
struct ConsecutiveDetails<'a> {
    /// The longest run of the same signature.
    max_consecutive_repetition: usize,
    /// The step count.
    total_steps: usize,
    /// The signature of the longest run (omitted without any tool call).
    #[serde(skip_serializing_if = "Option::is_none")]
    most_repeated_tool: Option<&'a str>,
    /// The runs above the threshold, else the first five runs (omitted without a run).
    #[serde(skip_serializing_if = "Option::is_none")]
    long_runs: Option<Vec<Value>>,
    /// How many runs of two or more there are (omitted without a run).
    #[serde(skip_serializing_if = "Option::is_none")]
    total_runs: Option<usize>,
}

impl Analyzer for ConsecutiveToolRepetitionAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let threshold = Options(&input.options).f64_or("consecutive_threshold", 5.0)?;
        let steps = match steps(&input.result) {
            Ok(steps) => steps,
            Err(why) => return Ok(skipped(why)),
        };
        let sigs: Vec<Option<Key>> = steps.iter().map(signature).collect();
        let mut runs = Vec::new();
        let mut best: Option<(usize, &Key)> = None;
        let mut i = 0;
        while i < sigs.len() {
            let Some(sig) = &sigs[i] else {
                i += 1;
                continue;
            };
            let mut j = i + 1;
            while j < sigs.len() && sigs[j].as_ref() == Some(sig) {
                j += 1;
            }
            let len = j - i;
            if len > 1 {
                runs.push((
                    len,
                    json!({
                        "tool": sig.0,
                        "args": sig.1,
                        "consecutive_count": len,
                        "start_step": steps[i].id(),
                        "end_step": steps[j - 1].id(),
                    }),
                ));
            }
            if best.is_none_or(|(n, _)| len > n) {
                best = Some((len, sig));
            }
            i = j;
        }
        let best_len = best.map_or(0, |(n, _)| n);
        let long_runs = (!runs.is_empty()).then(|| {
            let long: Vec<Value> = runs
                .iter()
                .filter(|(n, _)| *n as f64 > threshold)
                .map(|(_, run)| run.clone())
                .collect();
            if long.is_empty() {
                runs.iter().take(5).map(|(_, run)| run.clone()).collect()
            } else {
                long
            }
        });
        let details = ConsecutiveDetails {
            max_consecutive_repetition: best_len,
            total_steps: steps.len(),
            most_repeated_tool: best.map(|(_, (tool, _))| tool.as_str()),
            long_runs,
            total_runs: (!runs.is_empty()).then_some(runs.len()),
        };
        Ok(AnalysisOutcome {
            is_badcase: Some(best_len as f64 > threshold),
            details: json!(details),
            score: Some(best_len as f64),
            extra: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{bash, result, run, run_with, step, survives_odd_json};

    #[test]
    fn a_loop_of_one_command_trips_consecutive() {
        let info = ConsecutiveToolRepetitionAnalyzer::info();
        let steps: Vec<Value> = (1..=7).map(|i| bash(i, "pytest -q")).collect();
        let out = run(&ConsecutiveToolRepetitionAnalyzer, &info, result(steps));
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(7.0));
        assert_eq!(
            out.details,
            json!({"max_consecutive_repetition": 7, "total_steps": 7, "most_repeated_tool": "bash",
                   "long_runs": [{"tool": "bash", "args": "{\"command\": \"pytest -q\"}",
                                  "consecutive_count": 7, "start_step": 1, "end_step": 7}],
                   "total_runs": 1})
        );
    }

    #[test]
    fn short_runs_do_not_trip_consecutive() {
        let info = ConsecutiveToolRepetitionAnalyzer::info();
        let steps = vec![
            bash(1, "ls"),
            bash(2, "ls"),
            step(3, "hm", &[]),
            bash(4, "ls"),
            bash(5, "pwd"),
        ];
        let out = run(
            &ConsecutiveToolRepetitionAnalyzer,
            &info,
            result(steps.clone()),
        );
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(out.details["max_consecutive_repetition"], 2);
        assert_eq!(out.details["total_runs"], 1);
        assert_eq!(out.details["long_runs"][0]["end_step"], 2);
        let out = run_with(
            &ConsecutiveToolRepetitionAnalyzer,
            &info,
            result(steps),
            json!({"consecutive_threshold": 1}),
        );
        assert_eq!(out.is_badcase, Some(true));
    }

    #[test]
    fn multi_call_steps_compare_as_sets() {
        let two = |id, a: &str, b: &str| {
            step(
                id,
                "",
                &[
                    ("bash", json!({"command": a})),
                    ("bash", json!({"command": b})),
                ],
            )
        };
        let steps = vec![two(1, "a", "b"), two(2, "b", "a")];
        let out = run(
            &ConsecutiveToolRepetitionAnalyzer,
            &ConsecutiveToolRepetitionAnalyzer::info(),
            result(steps),
        );
        assert_eq!(out.details["max_consecutive_repetition"], 2);
        assert_eq!(out.details["most_repeated_tool"], "bash|bash");
    }

    #[test]
    fn cross_step_counts_repeats_anywhere() {
        let info = CrossStepToolRepetitionAnalyzer::info();
        let steps = vec![
            bash(1, "ls"),
            bash(2, "cat a"),
            bash(3, "ls"),
            bash(4, "ls"),
        ];
        let out = run(&CrossStepToolRepetitionAnalyzer, &info, result(steps));
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.5));
        assert_eq!(
            out.details,
            json!({"total_tools": 4, "total_duplicates": 2, "cross_step_repetition_ratio": 0.5,
                   "num_repeated_tools": 1,
                   "repeated_tools": [{"tool": "bash", "args_hash": "{\"command\": \"ls\"}",
                                       "count": 3, "step_ids": [1, 3, 4]}]})
        );
        let out = run(
            &CrossStepToolRepetitionAnalyzer,
            &info,
            result(vec![bash(1, "ls"), bash(2, "pwd")]),
        );
        assert_eq!(out.is_badcase, Some(false));
        let out = run(
            &CrossStepToolRepetitionAnalyzer,
            &info,
            result(vec![step(1, "hi", &[])]),
        );
        assert_eq!(out.is_badcase, None);
        assert_eq!(out.score, Some(0.0));
    }

    #[test]
    fn step_repetition_counts_duplicates_within_a_step() {
        let info = StepToolRepetitionAnalyzer::info();
        let dup = step(
            1,
            "",
            &[
                ("read", json!({"path": "a", "n": 1})),
                ("read", json!({"n": 1, "path": "a"})),
                ("read", json!({"path": "b"})),
            ],
        );
        // The repeated `ls` of steps 2 and 3 is across steps: it does not count here.
        let out = run(
            &StepToolRepetitionAnalyzer,
            &info,
            result(vec![dup.clone(), bash(2, "ls"), bash(3, "ls")]),
        );
        assert_eq!(out.is_badcase, Some(false), "1 of 5 is not above 0.2");
        assert_eq!(out.score, Some(0.2));
        let out = run(
            &StepToolRepetitionAnalyzer,
            &info,
            result(vec![dup, bash(2, "ls")]),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(0.25));
        assert_eq!(out.details["total_tools"], 4);
        assert_eq!(out.details["total_duplicates"], 1);
        assert_eq!(
            out.details["step_details"],
            json!([{"step_id": 1, "total_tools": 3, "duplicates": 1, "repetition_ratio": 0.3333,
                    "duplicate_tools": [{"tool": "read", "args_hash": "{\"n\": 1, \"path\": \"a\"}", "count": 2}]}])
        );
        let out = run(
            &StepToolRepetitionAnalyzer,
            &info,
            result(vec![bash(1, "ls"), bash(2, "ls")]),
        );
        assert_eq!(out.is_badcase, Some(false));
    }

    #[test]
    fn odd_json_is_survived() {
        survives_odd_json(
            &StepToolRepetitionAnalyzer,
            &StepToolRepetitionAnalyzer::info(),
        );
        survives_odd_json(
            &CrossStepToolRepetitionAnalyzer,
            &CrossStepToolRepetitionAnalyzer::info(),
        );
        survives_odd_json(
            &ConsecutiveToolRepetitionAnalyzer,
            &ConsecutiveToolRepetitionAnalyzer::info(),
        );
    }
}
