//! `execution.analysis_params`, as upstream reads it: `analyzers` (an allow-list, `null` =
//! every analyzer enabled by default), `exclude_analyzers` (ignored when `analyzers` is set),
//! `task_concurrency` (upstream's analysis-command concurrency) and `<AnalyzerId>: {options}`
//! merged over that analyzer's defaults.

use std::collections::BTreeMap;
use std::fmt;

use agentcompass_plugin_api::contracts::{json_type_name, JsonMap};
use serde_json::Value;

/// Upstream analyzers this host does not implement (LLM-driven or tied to upstream-only
/// result fields). Params written for upstream name them (its default params exclude the
/// LLM ones and carry their model settings), so they are accepted and ignored in
/// `exclude_analyzers` and as option keys; naming one in `analyzers` is an error.
pub const UPSTREAM_ONLY_IDS: &[&str] = &[
    "QualitativeAnalyzer",
    "MultiQualitativeAnalyzer",
    "ContentRepetitionAnalyzer",
    "ReasoningRepetitionAnalyzer",
    "ContentKeywordAnalyzer",
    "ReasoningKeywordAnalyzer",
    "ContentMixedLangAnalyzer",
    "ReasoningMixedLangAnalyzer",
    "JSONErrorAnalyzer",
    "NetworkOperationAnalyzer",
    "TerminalBench2CommandRunningAnalyzer",
    "TerminalBench2ConsecutiveToolRepetitionAnalyzer",
    "TerminalBench2ExceptionAnalyzer",
];

/// The keys of `analysis_params` that are not analyzer ids.
const RESERVED_KEYS: &[&str] = &["analyzers", "exclude_analyzers", "task_concurrency"];

/// Parsed `analysis_params`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnalysisParams {
    /// The allow-list (`analyzers`); `None` = every analyzer enabled by default.
    pub analyzers: Option<Vec<String>>,
    /// Analyzers left out (`exclude_analyzers`); upstream ignores it when `analyzers` is set.
    pub exclude_analyzers: Vec<String>,
    /// `task_concurrency`: how many tasks a re-analysis of a persisted run may analyze at
    /// once (`None` = the host's choice).
    pub task_concurrency: Option<u64>,
    /// Per-analyzer option overrides (`analysis_params[<id>]`), by analyzer id.
    pub options: BTreeMap<String, JsonMap>,
    /// Upstream-only analyzer ids the params mention (in `exclude_analyzers` or as option
    /// keys), which this host ignores; the host may warn about them.
    pub ignored: Vec<String>,
}

/// An `analysis_params` value that cannot be used: its Display is one line, `key: expected
/// ..., found ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamsError {
    /// Where: `analysis_params`, `analysis_params.analyzers[1]`, `analysis_params.<Id>`, ...
    pub key: String,
    /// What was expected there.
    pub expected: String,
    /// What was found there.
    pub found: String,
}

impl ParamsError {
    /// A new error.
    pub fn new(
        key: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        ParamsError {
            key: key.into(),
            expected: expected.into(),
            found: found.into(),
        }
    }
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.key, self.expected, self.found
        )
    }
}

impl std::error::Error for ParamsError {}

/// The key prefix of every error.
const ROOT: &str = "analysis_params";

/// Parses `analysis_params` (`null` = no params) against the ids of the known analyzers
/// (built-ins and plugin ones).
pub fn parse_params(value: &Value, known_ids: &[&str]) -> Result<AnalysisParams, ParamsError> {
    let mut params = AnalysisParams::default();
    let map = match value {
        Value::Null => return Ok(params),
        Value::Object(map) => map,
        other => return Err(ParamsError::new(ROOT, "an object", json_type_name(other))),
    };
    for (key, value) in map {
        match key.as_str() {
            "analyzers" => {
                if let Some(ids) = allow_list(key, value, known_ids)? {
                    params.analyzers = Some(ids);
                }
            }
            "exclude_analyzers" => exclusions(&mut params, key, value, known_ids)?,
            "task_concurrency" => {
                if let Some(n) = task_concurrency(value)? {
                    params.task_concurrency = Some(n);
                }
            }
            id if known_ids.contains(&id) => {
                if let Some(options) = analyzer_options(id, value)? {
                    params.options.insert(id.to_string(), options.clone());
                }
            }
            id if UPSTREAM_ONLY_IDS.contains(&id) => params.ignored.push(id.to_string()),
            other => {
                return Err(ParamsError::new(
                    format!("{ROOT}.{}", one_line_key(other)),
                    format!("{} or {}", RESERVED_KEYS.join(", "), known_list(known_ids)),
                    "an unknown key",
                ))
            }
        }
    }
    Ok(params)
}

/// What an analyzer-id entry must be: one of the known ids.
fn known_list(known_ids: &[&str]) -> String {
    format!("one of the known analyzer ids ({})", known_ids.join(", "))
}

/// `analyzers`: the allow-list (`null` = `None`), every id a known one.
fn allow_list(
    key: &str,
    value: &Value,
    known_ids: &[&str],
) -> Result<Option<Vec<String>>, ParamsError> {
    let Some(ids) = id_list(key, value)? else {
        return Ok(None);
    };
    for (i, id) in ids.iter().enumerate() {
        if !known_ids.contains(&id.as_str()) {
            let found = if UPSTREAM_ONLY_IDS.contains(&id.as_str()) {
                format!(
                    "{} (an upstream analyzer this host does not provide)",
                    quoted(id)
                )
            } else {
                quoted(id)
            };
            return Err(ParamsError::new(
                format!("{ROOT}.analyzers[{i}]"),
                known_list(known_ids),
                found,
            ));
        }
    }
    Ok(Some(ids))
}

/// `exclude_analyzers`: known ids are excluded, upstream-only ones ignored, others an error.
fn exclusions(
    params: &mut AnalysisParams,
    key: &str,
    value: &Value,
    known_ids: &[&str],
) -> Result<(), ParamsError> {
    for (i, id) in id_list(key, value)?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if known_ids.contains(&id.as_str()) {
            params.exclude_analyzers.push(id);
        } else if UPSTREAM_ONLY_IDS.contains(&id.as_str()) {
            params.ignored.push(id);
        } else {
            return Err(ParamsError::new(
                format!("{ROOT}.exclude_analyzers[{i}]"),
                known_list(known_ids),
                quoted(&id),
            ));
        }
    }
    Ok(())
}

/// `task_concurrency`: a whole number >= 1, or `null` (`None`).
fn task_concurrency(value: &Value) -> Result<Option<u64>, ParamsError> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) if n.as_u64().is_some_and(|n| n >= 1) => Ok(n.as_u64()),
        other => Err(ParamsError::new(
            format!("{ROOT}.task_concurrency"),
            "a whole number >= 1",
            found_value(other),
        )),
    }
}

/// `<AnalyzerId>`: an object of options, or `null` (`None`).
fn analyzer_options<'v>(id: &str, value: &'v Value) -> Result<Option<&'v JsonMap>, ParamsError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(options) => Ok(Some(options)),
        other => Err(ParamsError::new(
            format!("{ROOT}.{id}"),
            "an object of analyzer options",
            json_type_name(other),
        )),
    }
}

/// A list of analyzer ids (`null` = `None`).
fn id_list(key: &str, value: &Value) -> Result<Option<Vec<String>>, ParamsError> {
    let items = match value {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => {
            return Err(ParamsError::new(
                format!("{ROOT}.{key}"),
                "a list of analyzer ids or null",
                json_type_name(other),
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(id) => Ok(id.clone()),
            other => Err(ParamsError::new(
                format!("{ROOT}.{key}[{i}]"),
                "an analyzer id (a string)",
                json_type_name(other),
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A string as a JSON literal (quoted, control characters escaped: the message stays one line).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// A key for a message, its control characters escaped.
fn one_line_key(key: &str) -> String {
    if key.chars().any(char::is_control) {
        quoted(key)
    } else {
        key.to_string()
    }
}

/// A found value for a message: its type, with the value when it is a short scalar.
fn found_value(value: &Value) -> String {
    match value {
        Value::Number(n) => format!("{n}"),
        Value::String(s) if s.chars().count() <= 40 => quoted(s),
        other => json_type_name(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KNOWN: &[&str] = &["A", "B"];

    fn err(value: Value) -> String {
        parse_params(&value, KNOWN).unwrap_err().to_string()
    }

    #[test]
    fn parses_upstream_shaped_params() {
        let params = parse_params(
            &json!({
                "task_concurrency": 4,
                "analyzers": null,
                "exclude_analyzers": ["B", "QualitativeAnalyzer"],
                "A": {"threshold": 0.5},
                "B": null,
                "HackDetectionAnalyzer": {"model": "gpt-4o"},
                "QualitativeAnalyzer": {"chunk_size": 15},
            }),
            &["A", "B", "HackDetectionAnalyzer"],
        )
        .unwrap();
        assert_eq!(params.analyzers, None);
        assert_eq!(params.exclude_analyzers, vec!["B".to_string()]);
        assert_eq!(params.task_concurrency, Some(4));
        assert_eq!(params.options["A"]["threshold"], json!(0.5));
        assert_eq!(
            params.options["HackDetectionAnalyzer"]["model"],
            json!("gpt-4o")
        );
        assert!(!params.options.contains_key("B"));
        assert_eq!(
            params.ignored,
            vec![
                "QualitativeAnalyzer".to_string(),
                "QualitativeAnalyzer".to_string()
            ]
        );
        assert_eq!(
            parse_params(&Value::Null, KNOWN).unwrap(),
            AnalysisParams::default()
        );
        let allow = parse_params(&json!({"analyzers": ["B"]}), KNOWN).unwrap();
        assert_eq!(allow.analyzers, Some(vec!["B".to_string()]));
    }

    #[test]
    fn errors_are_one_line_and_name_the_key() {
        assert_eq!(
            err(json!([])),
            "analysis_params: expected an object, found array"
        );
        assert_eq!(
            err(json!({"analyzers": ["A", "Nope"]})),
            "analysis_params.analyzers[1]: expected one of the known analyzer ids (A, B), found \"Nope\""
        );
        assert_eq!(
            err(json!({"analyzers": ["QualitativeAnalyzer"]})),
            "analysis_params.analyzers[0]: expected one of the known analyzer ids (A, B), found \"QualitativeAnalyzer\" (an upstream analyzer this host does not provide)"
        );
        assert_eq!(
            err(json!({"analyzers": "A"})),
            "analysis_params.analyzers: expected a list of analyzer ids or null, found string"
        );
        assert_eq!(
            err(json!({"exclude_analyzers": [1]})),
            "analysis_params.exclude_analyzers[0]: expected an analyzer id (a string), found integer"
        );
        assert_eq!(
            err(json!({"exclude_analyzers": ["Zed"]})),
            "analysis_params.exclude_analyzers[0]: expected one of the known analyzer ids (A, B), found \"Zed\""
        );
        assert_eq!(
            err(json!({"task_concurrency": 0})),
            "analysis_params.task_concurrency: expected a whole number >= 1, found 0"
        );
        assert_eq!(
            err(json!({"task_concurrency": "2"})),
            "analysis_params.task_concurrency: expected a whole number >= 1, found \"2\""
        );
        assert_eq!(
            err(json!({"A": [1]})),
            "analysis_params.A: expected an object of analyzer options, found array"
        );
        assert_eq!(
            err(json!({"Typo": {}})),
            "analysis_params.Typo: expected analyzers, exclude_analyzers, task_concurrency or one of the known analyzer ids (A, B), found an unknown key"
        );
        assert_eq!(
            err(json!({"analyzers": ["x\ny"]})),
            "analysis_params.analyzers[0]: expected one of the known analyzer ids (A, B), found \"x\\ny\""
        );
        assert_eq!(
            err(json!({"a\nb": 1})),
            "analysis_params.\"a\\nb\": expected analyzers, exclude_analyzers, task_concurrency or one of the known analyzer ids (A, B), found an unknown key"
        );
    }
}
