//! Reading what the CLI left behind: the output files and the answer file.

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, RunResult, TrajectoryStep};
use agentcompass_plugin_api::sdk::SessionRef;
use serde_json::{json, Value};

use super::settings::{Settings, ID};
use crate::text::{scrub, tail};

/// Output files larger than this (characters) are kept as a text tail, never parsed.
const MAX_OUTPUT_FILE_CHARS: usize = 2_000_000;

/// Reads what the CLI left behind, scrubbing the key from it.
pub(super) struct Collector<'a> {
    /// The environment the CLI ran in.
    pub(super) env: &'a SessionRef,
    /// The harness settings (`output_files`, `answer_file`).
    pub(super) settings: &'a Settings,
    /// The key to scrub (empty: nothing to scrub).
    pub(super) secret: &'a str,
}

impl Collector<'_> {
    /// Adds one observation per output file to `step` (a missing file is a warning).
    pub(super) async fn output_files(&self, result: &mut RunResult, step: &mut TrajectoryStep) {
        for path in &self.settings.output_files {
            match self.env.read_text(path).await {
                Ok(text) => {
                    let text = scrub(&text, self.secret);
                    let parsed = (text.chars().count() <= MAX_OUTPUT_FILE_CHARS)
                        .then(|| serde_json::from_str::<Value>(&text).ok())
                        .flatten();
                    step.observation.push(match parsed {
                        Some(value) => json!({"output_file": path, "json": value}),
                        None => json!({
                            "output_file": path,
                            "text": tail(&text, self.settings.max_output_chars),
                        }),
                    });
                }
                Err(err) => {
                    let message = scrub(&err.message, self.secret);
                    step.observation
                        .push(json!({"output_file": path, "error": message}));
                    result.push_issue(ExecutionIssue::warning(
                        IssuePhase::Run,
                        "output_file_missing",
                        format!("{ID}: cannot read output file {path}: {message}"),
                    ));
                }
            }
        }
    }

    /// The trimmed content of `answer_file` (a missing file is a warning and no answer).
    pub(super) async fn answer_from_file(&self, result: &mut RunResult) -> Option<String> {
        let path = self.settings.answer_file.as_deref()?;
        match self.env.read_text(path).await {
            Ok(text) => Some(scrub(text.trim(), self.secret)),
            Err(err) => {
                result.push_issue(ExecutionIssue::warning(
                    IssuePhase::Run,
                    "answer_file_missing",
                    format!(
                        "{ID}: cannot read answer file {path}: {}",
                        scrub(&err.message, self.secret)
                    ),
                ));
                None
            }
        }
    }
}
