//! Shared pieces of the ACTF trajectories and results the harnesses build: timestamps, the
//! assistant part and metrics of a model step, and the issue recorded for a gateway failure.

use std::time::{SystemTime, UNIX_EPOCH};

use agentcompass_plugin_api::contracts::{
    AssistantContent, ExecutionIssue, IssuePhase, ModelResponse, TrajectoryMetric,
};
use agentcompass_plugin_api::{Error, ErrorKind};

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn iso_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    iso_from_unix_millis(since.as_millis())
}

/// Formats milliseconds since the Unix epoch as an ISO-8601 UTC timestamp.
fn iso_from_unix_millis(millis: u128) -> String {
    let secs = millis / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        millis % 1000
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

/// The assistant part of a step: content, reasoning and the tool calls in chat shape.
pub(crate) fn assistant_content(response: &ModelResponse) -> AssistantContent {
    AssistantContent {
        content: Some(response.content.clone()),
        reasoning_content: response.reasoning.clone(),
        tool_calls: response
            .assistant_message()
            .tool_calls
            .unwrap_or(serde_json::Value::Null),
    }
}

/// Per-step measurements of a model call (tokens of this call, latency, stop reason).
pub(crate) fn model_metric(response: &ModelResponse) -> TrajectoryMetric {
    TrajectoryMetric {
        prompt_tokens_len: Some(response.usage.prompt_tokens),
        completion_tokens_len: Some(response.usage.completion_tokens),
        llm_infer_ms: Some(response.latency_ms as f64),
        env_action_ms: None,
        stop_reason: Some(response.stop_reason.clone()),
    }
}

/// The run issue for a failed `model.generate` call (the gateway already retried). A timeout
/// is an `error` (`model_timeout`); a refused request (bad input) an `error` (`model_failed`);
/// a call the endpoint kept rate-limiting past the host's wait is `fatal`
/// (`model_rate_limited`); anything else (endpoint down, auth, 5xx after retries) is `fatal`
/// (`model_failed`): the attempt says nothing about the model and is retried. The gateway's
/// message never holds the key; `harness` prefixes it.
pub(crate) fn model_error_issue(harness: &str, err: &Error) -> ExecutionIssue {
    let message = format!("{harness}: model call failed: {}", err.message);
    match err.kind {
        ErrorKind::Timeout => ExecutionIssue::error(IssuePhase::Run, "model_timeout", message),
        ErrorKind::RateLimited => {
            ExecutionIssue::fatal(IssuePhase::Run, "model_rate_limited", message)
        }
        ErrorKind::InvalidInput | ErrorKind::Unsupported => {
            ExecutionIssue::error(IssuePhase::Run, "model_failed", message)
        }
        _ => ExecutionIssue::fatal(IssuePhase::Run, "model_failed", message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{IssueSeverity, ToolCall};
    use serde_json::json;

    #[test]
    fn iso_timestamps() {
        assert_eq!(iso_from_unix_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso_from_unix_millis(1_709_210_096_789),
            "2024-02-29T12:34:56.789Z"
        );
        assert_eq!(iso_now().len(), 24);
    }

    #[test]
    fn assistant_and_metric() {
        let response = ModelResponse {
            content: "hi".into(),
            reasoning: Some("think".into()),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
            }],
            stop_reason: "tool_calls".into(),
            latency_ms: 12,
            ..ModelResponse::default()
        };
        let content = assistant_content(&response);
        assert_eq!(content.tool_calls[0]["function"]["name"], "bash");
        assert_eq!(content.reasoning_content.as_deref(), Some("think"));
        let metric = model_metric(&response);
        assert_eq!(metric.llm_infer_ms, Some(12.0));
        assert_eq!(metric.stop_reason.as_deref(), Some("tool_calls"));
        let plain = assistant_content(&ModelResponse::default());
        assert!(plain.tool_calls.is_null());
    }

    #[test]
    fn gateway_errors_become_issues() {
        let timeout = model_error_issue("h", &Error::new(ErrorKind::Timeout, "slow"));
        assert_eq!(
            (timeout.code.as_str(), timeout.severity),
            ("model_timeout", IssueSeverity::Error)
        );
        assert_eq!(timeout.message, "h: model call failed: slow");
        let down = model_error_issue("h", &Error::msg("HTTP 503"));
        assert_eq!(
            (down.code.as_str(), down.severity),
            ("model_failed", IssueSeverity::Fatal)
        );
        let limited = model_error_issue("h", &Error::rate_limited("429 for 1800 s"));
        assert_eq!(
            (limited.code.as_str(), limited.severity),
            ("model_rate_limited", IssueSeverity::Fatal)
        );
        let bad = model_error_issue("h", &Error::invalid_input("context too long"));
        assert_eq!(bad.severity, IssueSeverity::Error);
    }
}
