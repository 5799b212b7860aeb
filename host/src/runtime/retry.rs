//! The retry rule of runtime retries: which results retry, and the backoff between them.

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssueSeverity};
use regex::Regex;

/// Why a result should be retried: any FATAL issue, or an ERROR issue whose code or message
/// matches one of `patterns`. Warnings never retry.
pub fn retry_reason(issues: &[ExecutionIssue], patterns: &[Regex]) -> Option<String> {
    if let Some(issue) = issues.iter().find(|i| i.severity == IssueSeverity::Fatal) {
        return Some(format!("fatal:{}", issue.code));
    }
    issues
        .iter()
        .filter(|i| i.severity == IssueSeverity::Error)
        .find_map(|issue| {
            patterns
                .iter()
                .find(|p| p.is_match(&issue.code) || p.is_match(&issue.message))
                .map(|p| format!("pattern:{}", p.as_str()))
        })
}

/// A `retry_pattern_list` entry that is not a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("execution.retry_pattern_list[{index}]: invalid regex: {reason}")]
pub struct PatternError {
    /// The entry's position.
    pub index: usize,
    /// The regex parser's complaint, one line.
    pub reason: String,
}

/// Compiles `retry_pattern_list`, naming a bad entry.
pub fn compile_patterns(patterns: Option<&Vec<String>>) -> Result<Vec<Regex>, PatternError> {
    patterns
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(index, p)| {
                    Regex::new(p).map_err(|e| PatternError {
                        index,
                        reason: agentcompass_plugin_api::one_line(&e.to_string()),
                    })
                })
                .collect()
        })
        .unwrap_or(Ok(Vec::new()))
}

/// The backoff before retry `retry` (1-based): `min × 2^(retry-1)` capped at `max`, then a
/// uniform draw in `[b/2, b]` (`unit` is a uniform number in `[0, 1)`).
pub fn backoff_seconds(retry: u32, min: f64, max: f64, unit: f64) -> f64 {
    let exponent = retry.saturating_sub(1).min(30) as i32;
    let base = (min * 2f64.powi(exponent)).min(max);
    base / 2.0 + unit.clamp(0.0, 1.0) * base / 2.0
}

/// A uniform number in `[0, 1)` (jitter only; not for anything secret).
pub fn jitter_unit() -> f64 {
    fastrand::f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::IssuePhase;

    #[test]
    fn retries_follow_severity_and_patterns() {
        let patterns = compile_patterns(Some(&vec!["rate.?limit".to_string()])).unwrap();
        let fatal = [ExecutionIssue::fatal(
            IssuePhase::Run,
            "harness_failed",
            "boom",
        )];
        assert_eq!(
            retry_reason(&fatal, &[]),
            Some("fatal:harness_failed".into())
        );
        let error = [ExecutionIssue::error(
            IssuePhase::Run,
            "model_failed",
            "hit rate limit",
        )];
        assert_eq!(
            retry_reason(&error, &patterns),
            Some("pattern:rate.?limit".into())
        );
        assert_eq!(retry_reason(&error, &[]), None);
        let warning = [ExecutionIssue::warning(
            IssuePhase::Cleanup,
            "close",
            "rate limit",
        )];
        assert_eq!(retry_reason(&warning, &patterns), None);
        let err = compile_patterns(Some(&vec!["(".to_string()])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("execution.retry_pattern_list[0]: invalid regex"),
            "{err}"
        );
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered_into_the_upper_half() {
        assert_eq!(backoff_seconds(1, 5.0, 60.0, 1.0), 5.0);
        assert_eq!(backoff_seconds(1, 5.0, 60.0, 0.0), 2.5);
        assert_eq!(backoff_seconds(3, 5.0, 60.0, 1.0), 20.0);
        assert_eq!(backoff_seconds(9, 5.0, 60.0, 1.0), 60.0);
        for _ in 0..100 {
            let b = backoff_seconds(2, 5.0, 60.0, jitter_unit());
            assert!((5.0..=10.0).contains(&b), "{b}");
        }
    }
}
