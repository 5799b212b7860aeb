//! The run-level analysis summary (`analysis_summary.json` / `.md`), as upstream's
//! `save_analysis_summary` builds it, fed one task at a time.
//!
//! Per task, each analyzer's payloads over the attempts are combined: the latest payload,
//! with `is_badcase` = any attempt's (when one is a boolean) and `score` = the mean of the
//! numeric scores. Rows count tasks per category × analyzer: `total`, `badcase_count`
//! (truthy `is_badcase`), `error_count` (truthy `error`), `badcase_ratio`, `avg_score`; the
//! `__overall__` analyzer counts a task once, as a bad case when any analyzer found one and
//! with the highest of its scores. Analyzers that answer `is_badcase` but found no bad case
//! and no error anywhere are left out (statistics-only analyzers always stay).
//!
//! Memory does not grow with the task count except for what the output lists (the bad-case
//! task files) and two exact aggregates: value counts keep one counter per distinct value,
//! and `numeric_stats` keeps one `f64` per task per field (per scope: overall and the
//! task's category), since upstream's p50/p90/p95 interpolate between exact order
//! statistics.

mod builder;
mod distribution;
mod fields;
mod json;
mod markdown;
mod stat;

use std::collections::BTreeMap;

use serde_json::Value;

pub use builder::SummaryBuilder;
pub use fields::{distribution_fields, family_of, DistributionMethod};

use self::distribution::ScopeFields;
use self::stat::Stat;

/// The label of the overall category and of the overall analyzer.
pub const OVERALL: &str = "__overall__";

/// The label of tasks without a category.
const NO_CATEGORY: &str = "(no category)";

/// The finished summary.
#[derive(Debug, Clone)]
pub struct AnalysisSummary {
    benchmark: String,
    model: String,
    analyzers: Vec<String>,
    categories: Vec<String>,
    per_category: BTreeMap<String, BTreeMap<String, Stat>>,
    category_overall: BTreeMap<String, Stat>,
    overall: BTreeMap<String, Stat>,
    overall_overall: Stat,
    distributions: Vec<(String, Vec<ScopeFields>)>,
    items: BTreeMap<String, Vec<String>>,
    tasks: u64,
}

impl AnalysisSummary {
    /// Whether no task had analysis data (upstream writes no summary then).
    pub fn is_empty(&self) -> bool {
        self.tasks == 0
    }

    /// How many tasks were counted.
    pub fn task_count(&self) -> u64 {
        self.tasks
    }

    /// The analyzers the tables list (statistics-only ones, and the others that found a bad
    /// case or an error), sorted.
    pub fn analyzers(&self) -> &[String] {
        &self.analyzers
    }

    /// The stat of one category × analyzer cell (zero when the cell is empty).
    fn cell(&self, category: &str, analyzer: &str) -> Stat {
        let stat = match (category == OVERALL, analyzer == OVERALL) {
            (true, true) => Some(&self.overall_overall),
            (true, false) => self.overall.get(analyzer),
            (false, true) => self.category_overall.get(category),
            (false, false) => self
                .per_category
                .get(category)
                .and_then(|m| m.get(analyzer)),
        };
        stat.cloned().unwrap_or_default()
    }

    /// `analysis_summary.json`: `per_category_per_analyzer`, `per_category_overall`,
    /// `overall_per_analyzer` (rows with `items`, the bad-case task files), `overall` and
    /// `distributions` (`{analyzer: {"__overall__" | category: {field: aggregate}}}`).
    pub fn to_json(&self) -> Value {
        json::render(self)
    }

    /// `analysis_summary.md`, laid out as upstream's.
    pub fn to_markdown(&self) -> String {
        markdown::render(self)
    }
}

#[cfg(test)]
mod tests;
