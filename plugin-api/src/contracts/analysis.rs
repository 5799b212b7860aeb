//! Analysis: what an analyzer is given about one attempt and what it answers (upstream's
//! `BaseAnalyzer.analysis` → `AnalysisResult`).

use serde::{Deserialize, Serialize};

use super::JsonMap;

/// What an analyzer declares about itself (`ComponentInfo::analyzer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnalyzerInfo {
    /// The analyzer's category (upstream's `category`: `trajectory`, `latency`, `safety`, ...).
    pub category: String,
    /// The family its result is stored under in `analysis_result` (upstream's
    /// `base_analyzer`); `None` = the analyzer's own id. Within a family the analyzer with the
    /// highest `priority` that applies wins.
    pub family: Option<String>,
    /// Rank within the family.
    pub priority: i32,
    /// Whether it runs when `analysis_params.analyzers` does not name it (upstream excludes
    /// LLM-driven analyzers by default).
    pub enabled_by_default: bool,
    /// The benchmark ids it applies to; empty = every benchmark.
    pub datasets: Vec<String>,
    /// Default options, overridden per run by `analysis_params[<id>]`.
    pub defaults: JsonMap,
}

impl Default for AnalyzerInfo {
    fn default() -> Self {
        AnalyzerInfo {
            category: "general".to_string(),
            family: None,
            priority: 0,
            enabled_by_default: true,
            datasets: Vec::new(),
            defaults: JsonMap::new(),
        }
    }
}

/// One attempt as an analyzer sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnalysisInput {
    /// The benchmark id of the run.
    pub benchmark: String,
    /// The task id.
    pub task_id: String,
    /// The task's category.
    pub category: Option<String>,
    /// The task's ground truth (as the benchmark gave it).
    pub ground_truth: serde_json::Value,
    /// The attempt number (1-based).
    pub attempt: u32,
    /// The attempt's persisted `result.json` (`status`, `metrics`, `final_answer`,
    /// `trajectory` in ACTF, `issues`, `artifacts`, `meta`), secrets already masked.
    pub result: serde_json::Value,
    /// The analyzer's options: its `defaults` with `analysis_params[<id>]` merged over them.
    pub options: JsonMap,
}

/// What an analyzer found in one attempt (`analysis_result[family]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnalysisOutcome {
    /// Whether the attempt is a bad case for this analyzer; `None` = could not tell.
    pub is_badcase: Option<bool>,
    /// What was found (analyzer-specific JSON: the offending steps, counts, ...).
    pub details: serde_json::Value,
    /// A numeric score, when the analyzer measures one (a latency, a ratio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Anything else worth keeping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Value>,
}
