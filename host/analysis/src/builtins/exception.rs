//! `ExceptionAnalyzer`: execution issues and diagnostics recorded on the attempt, with
//! tracebacks parsed into stable, aggregable fingerprints (as upstream does).

use std::sync::LazyLock;

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo, JsonMap};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use regex::Regex;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{skipped, Options};
use crate::py::prefix;
use crate::view::{json_view, AttemptResult};

json_view! {
    /// One execution issue recorded on the attempt.
    struct Issue {
        /// `info`, `warning`, `error` or `fatal` (any case).
        severity,
        /// What happened.
        message,
    }
}

json_view! {
    /// The attempt's artifacts.
    struct Artifacts {
        /// Diagnostics the harness preserved (a traceback, stderr).
        execution_diagnostics,
    }
}

/// Flags an attempt with an `error`/`fatal` issue or preserved diagnostics
/// (`artifacts.execution_diagnostics`). Score: `1` for a bad case, else `0`. Details:
/// `task_status`, `error_snippet` and the traceback fingerprint (`error_type`,
/// `error_location`, `error_message_normalized`, `error_fingerprint`, `error_cause_*`).
///
/// Option `include_warnings` (default `false`): upstream joins the messages of *every*
/// issue, warnings included, into the diagnostics, so a warning alone is a bad case there;
/// this host records routine warnings (a missing optional output file, skipped transcript
/// lines), so only error and fatal issues count unless the option is set.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExceptionAnalyzer;

impl ExceptionAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "ExceptionAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect execution issues and preserved diagnostic evidence, and parse tracebacks \
             into stable, aggregable fingerprints (error type, location, cause).",
            category::ENV_FRAMEWORK_ERROR,
            json!({"only_incorrect": false, "threshold": 0.0, "include_warnings": false}),
            &[
                ("error_type", "value_counts"),
                ("error_fingerprint", "value_counts"),
                ("task_status", "value_counts"),
            ],
        )
    }
}

impl Analyzer for ExceptionAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let include_warnings = Options(&input.options).bool_or("include_warnings", false)?;
        let Some(result) = input.result.as_object().map(AttemptResult::from) else {
            return Ok(skipped("no result available"));
        };
        let issues: Vec<Issue<'_>> = match result.issues() {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_object)
                .map(Issue::from)
                .collect(),
            _ => Vec::new(),
        };
        let severity = |issue: &Issue<'_>| {
            issue
                .severity()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase()
        };
        let is_error = |issue: &Issue<'_>| matches!(severity(issue).as_str(), "error" | "fatal");
        let has_error_status = issues.iter().any(is_error);
        let diagnostics = match result
            .artifacts()
            .and_then(|a| Artifacts::from(a).execution_diagnostics())
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
        {
            Some(diagnostics) => diagnostics.to_string(),
            None => issues
                .iter()
                .filter(|issue| include_warnings || is_error(issue))
                .map(|issue| issue.message().and_then(Value::as_str).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let has_error_field = !diagnostics.is_empty();
        let is_badcase = has_error_status || has_error_field;
        let mut details = JsonMap::new();
        if has_error_status {
            let status = result.status().map(crate::py::py_str).unwrap_or_default();
            details.insert("task_status".into(), json!(status));
        }
        if has_error_field {
            details.insert("error_snippet".into(), json!(prefix(&diagnostics, 500)));
            details.extend(fingerprint(&diagnostics));
        }
        Ok(AnalysisOutcome {
            is_badcase: Some(is_badcase),
            details: Value::Object(details),
            score: Some(if is_badcase { 1.0 } else { 0.0 }),
            extra: None,
        })
    }
}

/// A compiled pattern (`None` only if the literal pattern were invalid; a test checks).
fn pattern(re: &str) -> Option<Regex> {
    Regex::new(re).ok()
}

static FRAME_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| pattern(r#"(?m)^\s*File "([^"]+)", line \d+, in (\S+)"#));
static EXC_LINE_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| pattern(r"(?m)^([A-Za-z_][\w.]*): (.*)$"));
static CHAIN_SEP_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    pattern(
        r"(?:The above exception was the direct cause of the following exception|During handling of the above exception, another exception occurred):",
    )
});
static NORMALIZE: LazyLock<Vec<(Option<Regex>, &'static str)>> = LazyLock::new(|| {
    vec![
        (pattern(r"0x[0-9a-fA-F]+"), "<hex>"),
        (
            pattern(
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            ),
            "<uuid>",
        ),
        (pattern(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"), "<ip>"),
        (pattern(r"(?:/[\w.\-]+)+"), "<path>"),
        (pattern(r#""[^"]*""#), "<s>"),
        (pattern(r"'[^']*'"), "<s>"),
    ]
});

/// Upstream's message normalization: hex, UUIDs, IPs, paths and quoted strings replaced.
fn normalize(message: &str) -> String {
    let mut s = message.to_string();
    for (re, replacement) in NORMALIZE.iter() {
        if let Some(re) = re {
            s = re.replace_all(&s, *replacement).into_owned();
        }
    }
    s.trim().to_string()
}

/// The file name of a path (`os.path.basename`).
fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The `Type: message` lines of a traceback, in order.
fn exception_lines(error: &str) -> Vec<(String, String)> {
    EXC_LINE_RE
        .as_ref()
        .map(|re| {
            re.captures_iter(error)
                .map(|c| (c[1].to_string(), c[2].to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The frames of a traceback: where each starts, its file and its function.
fn frames(error: &str) -> Vec<(usize, String, String)> {
    FRAME_RE
        .as_ref()
        .map(|re| {
            re.captures_iter(error)
                .filter_map(|c| {
                    let start = c.get(0)?.start();
                    Some((start, c[1].to_string(), c[2].to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A frame's location, `file.py:function`.
fn location((_, path, func): &(usize, String, String)) -> String {
    format!("{}:{func}", basename(path))
}

/// A location, or `<unknown>` when there is none.
fn or_unknown(loc: &str) -> String {
    if loc.is_empty() {
        "<unknown>".to_string()
    } else {
        loc.to_string()
    }
}

/// The fingerprint of an error without a `Type: message` line: the whole text as its type,
/// its normalization (or `<error>`) as the fingerprint.
fn unparsed(out: &mut JsonMap, error: &str) {
    let normalized = normalize(error.trim());
    out.insert("error_type".into(), json!(error));
    out.insert(
        "error_fingerprint".into(),
        json!(if normalized.is_empty() {
            "<error>".to_string()
        } else {
            normalized
        }),
    );
}

/// One exception of a traceback: its type, message and innermost location.
struct Raised<'e> {
    /// The exception type (`ValueError`).
    typ: &'e str,
    /// Its message.
    message: &'e str,
    /// Its innermost frame (`file.py:function`, or empty).
    location: String,
}

/// The message and fingerprint fields of a chained exception (`final`, caused by `cause`).
fn chained_fields(out: &mut JsonMap, last: &Raised<'_>, last_msg_n: &str, cause: &Raised<'_>) {
    let (cause_type, cause_msg) = (cause.typ, cause.message);
    let cause_msg_n = normalize(cause_msg);
    out.insert("error_cause_type".into(), json!(cause_type));
    out.insert("error_cause_location".into(), json!(cause.location));
    out.insert(
        "error_cause".into(),
        json!(format!("{cause_type}: {cause_msg}")),
    );
    out.insert(
        "error_message_normalized".into(),
        json!(format!(
            "{last_msg_n} (caused by: {cause_type}: {cause_msg_n})"
        )),
    );
    out.insert(
        "error_fingerprint".into(),
        json!(format!(
            "{} @ {} (caused by: {cause_type} @ {})",
            last.typ,
            or_unknown(&last.location),
            or_unknown(&cause.location)
        )),
    );
}

/// Upstream's `_traceback_fingerprint`: the final exception type and normalized message,
/// the innermost frame, and the cause of a chained exception.
fn fingerprint(error: &str) -> JsonMap {
    let mut out = JsonMap::new();
    for key in [
        "error_type",
        "error_location",
        "error_message_normalized",
        "error_fingerprint",
        "error_cause_type",
        "error_cause_location",
        "error_cause",
    ] {
        out.insert(key.into(), json!(""));
    }
    if error.trim().is_empty() {
        return out;
    }
    let exc_lines = exception_lines(error);
    let frames = frames(error);
    let sep = CHAIN_SEP_RE.as_ref().and_then(|re| re.find(error));
    let Some((final_type, final_msg)) = exc_lines.last() else {
        unparsed(&mut out, error);
        return out;
    };
    let chained = sep.is_some() && exc_lines.len() >= 2;
    let final_loc = frames.last().map(location).unwrap_or_default();
    let final_msg_n = normalize(final_msg);
    out.insert(
        "error_type".into(),
        json!(format!("{final_type}: {final_msg_n}")),
    );
    out.insert("error_location".into(), json!(final_loc));
    match (chained, sep, exc_lines.first()) {
        (true, Some(sep), Some((cause_type, cause_msg))) => {
            let cause = Raised {
                typ: cause_type,
                message: cause_msg,
                location: frames
                    .iter()
                    .rev()
                    .find(|(start, _, _)| *start < sep.start())
                    .map(location)
                    .unwrap_or_default(),
            };
            let last = Raised {
                typ: final_type,
                message: final_msg,
                location: final_loc,
            };
            chained_fields(&mut out, &last, &final_msg_n, &cause);
        }
        _ => {
            out.insert("error_message_normalized".into(), json!(final_msg_n));
            out.insert(
                "error_fingerprint".into(),
                json!(format!("{final_type} @ {}", or_unknown(&final_loc))),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{run, run_with, survives_odd_json};

    #[test]
    fn patterns_compile() {
        assert!(FRAME_RE.is_some() && EXC_LINE_RE.is_some() && CHAIN_SEP_RE.is_some());
        assert!(NORMALIZE.iter().all(|(re, _)| re.is_some()));
    }

    #[test]
    fn an_error_issue_is_a_bad_case_with_a_fingerprint() {
        let result = json!({"status": "run_error", "issues": [
            {"severity": "fatal", "phase": "run", "code": "environment_failed",
             "message": "terminus: the environment failed running a command: connection to 10.0.0.3 refused at /var/run/docker.sock"},
            {"severity": "warning", "phase": "run", "code": "w", "message": "a warning"}]});
        let out = run(&ExceptionAnalyzer, &ExceptionAnalyzer::info(), result);
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.score, Some(1.0));
        assert_eq!(out.details["task_status"], "run_error");
        assert_eq!(
            out.details["error_type"],
            "terminus: the environment failed running a command: connection to <ip> refused at <path>"
        );
        assert_eq!(out.details["error_fingerprint"], "terminus @ <unknown>");
    }

    #[test]
    fn a_python_traceback_is_fingerprinted() {
        let tb = "Traceback (most recent call last):\n  File \"/app/a.py\", line 3, in load\n    x()\nKeyError: 'k'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"/app/b.py\", line 9, in run\n    load()\nRuntimeError: failed at 0xdeadbeef\n";
        let out = run(
            &ExceptionAnalyzer,
            &ExceptionAnalyzer::info(),
            json!({"status": "completed", "artifacts": {"execution_diagnostics": tb}}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert!(out.details.get("task_status").is_none());
        assert_eq!(out.details["error_type"], "RuntimeError: failed at <hex>");
        assert_eq!(out.details["error_location"], "b.py:run");
        assert_eq!(out.details["error_cause_type"], "KeyError");
        assert_eq!(out.details["error_cause_location"], "a.py:load");
        assert_eq!(out.details["error_cause"], "KeyError: 'k'");
        assert_eq!(
            out.details["error_fingerprint"],
            "RuntimeError @ b.py:run (caused by: KeyError @ a.py:load)"
        );
        assert_eq!(
            out.details["error_message_normalized"],
            "failed at <hex> (caused by: KeyError: <s>)"
        );
    }

    #[test]
    fn warnings_only_or_nothing_is_fine_unless_asked() {
        let result = json!({"status": "completed", "issues": [
            {"severity": "warning", "phase": "run", "code": "w", "message": "1 line was not JSON"}]});
        let info = ExceptionAnalyzer::info();
        let out = run(&ExceptionAnalyzer, &info, result.clone());
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(out.score, Some(0.0));
        assert_eq!(out.details, json!({}));
        let out = run_with(
            &ExceptionAnalyzer,
            &info,
            result,
            json!({"include_warnings": true}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.details["error_fingerprint"], "1 line was not JSON");
        assert_eq!(out.details["error_type"], "1 line was not JSON");
        survives_odd_json(&ExceptionAnalyzer, &info);
    }
}
