//! The issues a request's attempts ended with, counted by code with one example message each,
//! so a run that failed says why on the terminal (not only inside each `result.json`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use agentcompass_plugin_api::contracts::{IssueSeverity, RunResult};

/// How long an example message may be on the terminal (scrubbed first, then cut).
const EXAMPLE_CHARS: usize = 200;

/// One issue code's count and its first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueCount {
    /// The issue code.
    pub code: String,
    /// How many final attempts carried an issue of this code.
    pub count: u64,
    /// The first such issue's message (scrubbed, at most 200 characters).
    pub example: String,
}

/// FATAL and ERROR issues of every final attempt, by code (memory: one entry per code).
#[derive(Debug, Default)]
pub struct IssueTally(Mutex<BTreeMap<String, (u64, String)>>);

impl IssueTally {
    /// Counts the FATAL and ERROR issues of one attempt's final result (each code once).
    pub fn record(&self, result: &RunResult) {
        let mut tally = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut seen = std::collections::BTreeSet::new();
        for issue in result
            .issues
            .iter()
            .filter(|i| i.severity != IssueSeverity::Warning)
        {
            if !seen.insert(issue.code.as_str()) {
                continue;
            }
            let entry = tally.entry(issue.code.clone()).or_insert_with(|| {
                let one_line = agentcompass_plugin_api::one_line(&issue.message);
                (
                    0,
                    agentcompass_redact::scrub_and_truncate(&one_line, EXAMPLE_CHARS),
                )
            });
            entry.0 += 1;
        }
    }

    /// Every code, most frequent first (then by name).
    pub fn summary(&self) -> Vec<IssueCount> {
        let tally = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut counts: Vec<IssueCount> = tally
            .iter()
            .map(|(code, (count, example))| IssueCount {
                code: code.clone(),
                count: *count,
                example: example.clone(),
            })
            .collect();
        counts.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.code.cmp(&b.code)));
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase};

    #[test]
    fn counts_by_code_with_the_first_message() {
        let tally = IssueTally::default();
        for task in ["a", "b", "c"] {
            let mut result = RunResult::new(task);
            result.push_issue(ExecutionIssue::fatal(
                IssuePhase::Setup,
                "unsupported",
                format!("task {task}: cannot enforce\nno-network"),
            ));
            result.push_issue(ExecutionIssue::fatal(
                IssuePhase::Setup,
                "unsupported",
                "again",
            ));
            result.push_issue(ExecutionIssue::warning(IssuePhase::Run, "slow", "w"));
            if task == "c" {
                result.push_issue(ExecutionIssue::error(IssuePhase::Run, "agent_failed", "x"));
            }
            tally.record(&result);
        }
        assert_eq!(
            tally.summary(),
            [
                IssueCount {
                    code: "unsupported".into(),
                    count: 3,
                    example: "task a: cannot enforce | no-network".into()
                },
                IssueCount {
                    code: "agent_failed".into(),
                    count: 1,
                    example: "x".into()
                },
            ]
        );
    }
}
