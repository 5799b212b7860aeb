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

mod fields;
mod markdown;

use std::collections::{BTreeMap, HashMap, HashSet};

use agentcompass_plugin_api::contracts::{ComponentInfo, JsonMap};
use serde_json::{json, Value};

pub use fields::{distribution_fields, family_of, DistributionMethod};

use crate::py::{percentile, py_str, round, truthy};

/// The label of the overall category and of the overall analyzer.
pub const OVERALL: &str = "__overall__";

/// The label of tasks without a category.
const NO_CATEGORY: &str = "(no category)";

/// Counts of one category × analyzer cell.
#[derive(Debug, Clone, Default, PartialEq)]
struct Stat {
    total: u64,
    badcase: u64,
    error: u64,
    has_badcase_field: bool,
    score_sum: f64,
    score_count: u64,
}

impl Stat {
    fn ratio(&self) -> f64 {
        if self.total > 0 {
            self.badcase as f64 / self.total as f64
        } else {
            0.0
        }
    }

    fn avg_score(&self) -> Option<f64> {
        (self.score_count > 0).then(|| self.score_sum / self.score_count as f64)
    }

    /// Whether a per-category row is shown: statistics-only analyzers always, others when
    /// they found a bad case or an error.
    fn shown(&self) -> bool {
        !self.has_badcase_field || self.badcase > 0 || self.error > 0
    }
}

/// Where a distribution is aggregated: over all tasks, or over one category's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Scope {
    Overall,
    Category(String),
}

impl Scope {
    fn key(&self) -> &str {
        match self {
            Scope::Overall => OVERALL,
            Scope::Category(c) => c,
        }
    }
}

/// Distinct values a `value_counts` field tracks exactly; later new values are counted in
/// the total only (memory stays bounded; the top 50 are exact while a field has at most this
/// many distinct values, as every built-in's fields have).
const MAX_DISTINCT: usize = 4096;

/// Values a `numeric_stats` field keeps: every value up to this many (percentiles exact, as
/// upstream's), then a uniform reservoir sample of this size (seeded, so a summary is
/// reproducible); count, min, max and mean stay exact.
const MAX_VALUES: usize = 4096;

/// Value counts in first-seen order.
#[derive(Debug, Clone, Default)]
struct Counter {
    index: HashMap<String, usize>,
    counts: Vec<(String, u64)>,
    /// Occurrences of values seen after [`MAX_DISTINCT`] distinct ones.
    untracked: u64,
}

impl Counter {
    fn add(&mut self, value: String) {
        match self.index.get(&value) {
            Some(&i) => {
                if let Some(entry) = self.counts.get_mut(i) {
                    entry.1 += 1;
                }
            }
            None if self.counts.len() >= MAX_DISTINCT => self.untracked += 1,
            None => {
                self.index.insert(value.clone(), self.counts.len());
                self.counts.push((value, 1));
            }
        }
    }

    /// Every occurrence counted.
    fn total(&self) -> u64 {
        self.counts.iter().map(|(_, c)| c).sum::<u64>() + self.untracked
    }

    /// Python's `Counter.most_common(n)`: by count, ties in first-seen order.
    fn most_common(&self, n: usize) -> Vec<(String, u64)> {
        let mut sorted = self.counts.clone();
        sorted.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        sorted.truncate(n);
        sorted
    }
}

/// The values of one `numeric_stats` field: exact aggregates, and the values themselves up to
/// [`MAX_VALUES`] (then a reservoir sample).
#[derive(Debug, Clone)]
struct Numbers {
    kept: Vec<f64>,
    seen: u64,
    sum: f64,
    min: f64,
    max: f64,
    rng: fastrand::Rng,
}

impl Default for Numbers {
    fn default() -> Self {
        Numbers {
            kept: Vec::new(),
            seen: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            rng: fastrand::Rng::with_seed(0x5eed),
        }
    }
}

impl Numbers {
    fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.seen += 1;
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        if self.kept.len() < MAX_VALUES {
            self.kept.push(x);
        } else if let Some(slot) = self.kept.get_mut(self.rng.usize(..self.seen as usize)) {
            // Algorithm R: the kept values stay a uniform sample of all seen.
            *slot = x;
        }
    }
}

/// The accumulated values of one distribution field in one scope.
#[derive(Debug, Clone, Default)]
struct Accum {
    counts: Counter,
    values: Numbers,
}

/// Builds the summary one task at a time. Its memory does not grow with the task count
/// except for the bad-case task files the output lists: a `value_counts` field tracks at most
/// [`MAX_DISTINCT`] distinct values and a `numeric_stats` field keeps at most [`MAX_VALUES`]
/// values (every value up to that, so upstream's p50/p90/p95 — interpolated between exact
/// order statistics — are exact on runs of up to 4,096 tasks; beyond, from a uniform sample).
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    benchmark: String,
    model: String,
    fields: BTreeMap<String, Vec<(String, DistributionMethod)>>,
    per_category: BTreeMap<String, BTreeMap<String, Stat>>,
    category_overall: BTreeMap<String, Stat>,
    overall: BTreeMap<String, Stat>,
    overall_overall: Stat,
    accums: HashMap<(String, Scope, String), Accum>,
    items: BTreeMap<String, Vec<String>>,
    item_seen: HashSet<(String, String)>,
    tasks: u64,
}

/// A number from a payload as upstream's `isinstance(x, (int, float))` sees it (a boolean
/// is `0`/`1`).
fn numeric(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

impl SummaryBuilder {
    /// A builder for a run of `benchmark` by `model` (the Markdown title), whose analyzers
    /// (built-ins and plugin ones) declare the distribution fields (later declarations for
    /// the same family add to and override earlier ones, as upstream's registry merge).
    pub fn new<'a>(
        benchmark: &str,
        model: &str,
        analyzers: impl IntoIterator<Item = &'a ComponentInfo>,
    ) -> Self {
        let mut fields: BTreeMap<String, Vec<(String, DistributionMethod)>> = BTreeMap::new();
        for info in analyzers {
            let declared = distribution_fields(info);
            if declared.is_empty() {
                continue;
            }
            let entry = fields.entry(family_of(info)).or_default();
            for (field, method) in declared {
                match entry.iter_mut().find(|(f, _)| *f == field) {
                    Some(existing) => existing.1 = method,
                    None => entry.push((field, method)),
                }
            }
        }
        SummaryBuilder {
            benchmark: benchmark.to_string(),
            model: model.to_string(),
            fields,
            per_category: BTreeMap::new(),
            category_overall: BTreeMap::new(),
            overall: BTreeMap::new(),
            overall_overall: Stat::default(),
            accums: HashMap::new(),
            items: BTreeMap::new(),
            item_seen: HashSet::new(),
            tasks: 0,
        }
    }

    /// Adds one task: its file (relative to the run directory, as the bad-case `items` list
    /// it), its category and the `analysis_result` object of each attempt, in attempt
    /// order. A task without any analyzer payload is not counted.
    pub fn add_task(&mut self, task_file: &str, category: Option<&str>, attempts: &[&JsonMap]) {
        let mut payloads: BTreeMap<&str, Vec<&JsonMap>> = BTreeMap::new();
        for attempt in attempts {
            for (analyzer, data) in attempt.iter() {
                let Value::Object(data) = data else {
                    continue;
                };
                payloads.entry(analyzer).or_default().push(data);
                if data.get("is_badcase").is_some_and(truthy)
                    && self
                        .item_seen
                        .insert((analyzer.clone(), task_file.to_string()))
                {
                    self.items
                        .entry(analyzer.clone())
                        .or_default()
                        .push(task_file.to_string());
                }
            }
        }
        if payloads.is_empty() {
            return;
        }
        self.tasks += 1;
        let category = category.unwrap_or_default().to_string();
        let mut any_badcase = false;
        let mut any_error = false;
        let mut max_score: Option<f64> = None;
        for (analyzer, list) in payloads {
            let Some(last) = list.last() else {
                continue;
            };
            let mut combined: JsonMap = (*last).clone();
            let flags: Vec<bool> = list
                .iter()
                .filter_map(|p| p.get("is_badcase").and_then(Value::as_bool))
                .collect();
            if !flags.is_empty() {
                combined.insert("is_badcase".into(), json!(flags.iter().any(|b| *b)));
            }
            let scores: Vec<f64> = list
                .iter()
                .filter_map(|p| match p.get("score") {
                    Some(Value::Number(n)) => n.as_f64(),
                    _ => None,
                })
                .collect();
            if !scores.is_empty() {
                let mean = scores.iter().sum::<f64>() / scores.len() as f64;
                combined.insert("score".into(), crate::py::num(mean));
            }
            let is_badcase = combined.get("is_badcase");
            let badcase = is_badcase.is_some_and(truthy);
            let has_field = is_badcase.is_some_and(|v| !v.is_null());
            let error = combined.get("error").is_some_and(truthy);
            let score = numeric(combined.get("score"));
            any_badcase |= badcase;
            any_error |= error;
            if let Some(score) = score {
                max_score = Some(max_score.map_or(score, |m| m.max(score)));
            }
            for stat in [
                self.per_category
                    .entry(category.clone())
                    .or_default()
                    .entry(analyzer.to_string())
                    .or_default(),
                self.overall.entry(analyzer.to_string()).or_default(),
            ] {
                stat.total += 1;
                stat.has_badcase_field |= has_field;
                stat.badcase += u64::from(badcase);
                stat.error += u64::from(error);
                if let Some(score) = score {
                    stat.score_sum += score;
                    stat.score_count += 1;
                }
            }
            self.accumulate(analyzer, &category, combined.get("details"));
        }
        for stat in [
            self.category_overall.entry(category).or_default(),
            &mut self.overall_overall,
        ] {
            stat.total += 1;
            stat.badcase += u64::from(any_badcase);
            stat.error += u64::from(any_error);
            if let Some(score) = max_score {
                stat.score_sum += score;
                stat.score_count += 1;
            }
        }
    }

    /// Adds one task's details to the distributions of `analyzer`.
    fn accumulate(&mut self, analyzer: &str, category: &str, details: Option<&Value>) {
        let Some(fields) = self.fields.get(analyzer) else {
            return;
        };
        let Some(Value::Object(details)) = details else {
            return;
        };
        for (field, method) in fields {
            let Some(value) = details.get(field).filter(|v| !v.is_null()) else {
                continue;
            };
            for scope in [Scope::Overall, Scope::Category(category.to_string())] {
                let accum = self
                    .accums
                    .entry((analyzer.to_string(), scope, field.clone()))
                    .or_default();
                match method {
                    DistributionMethod::ValueCounts => match value {
                        Value::Array(items) => {
                            for item in items.iter().filter(|v| !v.is_null()) {
                                accum.counts.add(py_str(item));
                            }
                        }
                        other => accum.counts.add(py_str(other)),
                    },
                    DistributionMethod::NumericStats => {
                        if let Some(x) = numeric(Some(value)) {
                            accum.values.add(x);
                        }
                    }
                }
            }
        }
    }

    /// The summary.
    pub fn finish(self) -> AnalysisSummary {
        let mut categories: Vec<String> = self.per_category.keys().cloned().collect();
        if categories.is_empty() {
            categories.push(String::new());
        }
        let analyzers: Vec<String> = self
            .overall
            .iter()
            .filter(|(_, stat)| stat.shown())
            .map(|(name, _)| name.clone())
            .collect();
        let mut accums = self.accums;
        let mut distributions = Vec::new();
        for analyzer in &analyzers {
            let Some(fields) = self.fields.get(analyzer) else {
                continue;
            };
            let mut scopes = Vec::new();
            let all_scopes = std::iter::once(Scope::Overall)
                .chain(categories.iter().cloned().map(Scope::Category));
            for scope in all_scopes {
                let mut results = Vec::new();
                for (field, method) in fields {
                    let accum = accums
                        .remove(&(analyzer.clone(), scope.clone(), field.clone()))
                        .unwrap_or_default();
                    match method {
                        DistributionMethod::ValueCounts => {
                            let total = accum.counts.total();
                            results.push((
                                field.clone(),
                                FieldAgg::Counts {
                                    total,
                                    top: accum.counts.most_common(50),
                                },
                            ));
                        }
                        DistributionMethod::NumericStats => {
                            if let Some(agg) = numeric_agg(accum.values) {
                                results.push((field.clone(), agg));
                            }
                        }
                    }
                }
                if !results.is_empty() {
                    scopes.push((scope, results));
                }
            }
            distributions.push((analyzer.clone(), scopes));
        }
        AnalysisSummary {
            benchmark: self.benchmark,
            model: self.model,
            analyzers,
            categories,
            per_category: self.per_category,
            category_overall: self.category_overall,
            overall: self.overall,
            overall_overall: self.overall_overall,
            distributions,
            items: self.items,
            tasks: self.tasks,
        }
    }
}

/// One aggregated distribution field.
#[derive(Debug, Clone, PartialEq)]
enum FieldAgg {
    Counts {
        total: u64,
        top: Vec<(String, u64)>,
    },
    Numeric {
        count: usize,
        min: f64,
        mean: f64,
        p50: f64,
        p90: f64,
        p95: f64,
        max: f64,
    },
}

/// `numeric_stats` of some values (rounded to 2 digits), `None` without values.
fn numeric_agg(numbers: Numbers) -> Option<FieldAgg> {
    let mut values = numbers.kept;
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let exact = numbers.seen as usize == values.len();
    Some(FieldAgg::Numeric {
        count: numbers.seen as usize,
        min: round(numbers.min, 2),
        // Upstream's mean is sum / count over the values in order: the same sum when every
        // value is kept.
        mean: round(
            if exact {
                values.iter().sum::<f64>() / values.len() as f64
            } else {
                numbers.sum / numbers.seen as f64
            },
            2,
        ),
        p50: round(percentile(&values, 50.0), 2),
        p90: round(percentile(&values, 90.0), 2),
        p95: round(percentile(&values, 95.0), 2),
        max: round(numbers.max, 2),
    })
}

impl FieldAgg {
    fn to_json(&self) -> Value {
        match self {
            FieldAgg::Counts { total, top } => {
                let distribution: JsonMap =
                    top.iter().map(|(v, c)| (v.clone(), json!(c))).collect();
                json!({"total": total, "distribution": distribution})
            }
            FieldAgg::Numeric {
                count,
                min,
                mean,
                p50,
                p90,
                p95,
                max,
            } => json!({"count": count, "min": min, "mean": mean, "p50": p50, "p90": p90,
                        "p95": p95, "max": max}),
        }
    }
}

/// The aggregated distribution fields of one scope.
type ScopeFields = (Scope, Vec<(String, FieldAgg)>);

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

/// A row of the JSON tables.
fn row(category: &str, analyzer: &str, stat: &Stat) -> JsonMap {
    let label = if category.is_empty() {
        NO_CATEGORY
    } else {
        category
    };
    let mut map = JsonMap::new();
    map.insert("category".into(), json!(label));
    map.insert("analyzer".into(), json!(analyzer));
    map.insert("total".into(), json!(stat.total));
    map.insert("badcase_count".into(), json!(stat.badcase));
    map.insert("error_count".into(), json!(stat.error));
    map.insert("badcase_ratio".into(), json!(round(stat.ratio(), 4)));
    map.insert(
        "avg_score".into(),
        stat.avg_score()
            .map_or(Value::Null, |s| crate::py::num(round(s, 4))),
    );
    map
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
        let mut per_category_per_analyzer = Vec::new();
        let mut per_category_overall = Vec::new();
        for category in &self.categories {
            for analyzer in &self.analyzers {
                let stat = self.cell(category, analyzer);
                if stat.shown() {
                    per_category_per_analyzer.push(Value::Object(row(category, analyzer, &stat)));
                }
            }
            per_category_overall.push(Value::Object(row(
                category,
                OVERALL,
                &self.cell(category, OVERALL),
            )));
        }
        let overall_per_analyzer: Vec<Value> = self
            .analyzers
            .iter()
            .map(|analyzer| {
                let mut r = row(OVERALL, analyzer, &self.cell(OVERALL, analyzer));
                r.insert(
                    "items".into(),
                    json!(self.items.get(analyzer).cloned().unwrap_or_default()),
                );
                Value::Object(r)
            })
            .collect();
        let mut distributions = JsonMap::new();
        for (analyzer, scopes) in &self.distributions {
            let mut by_scope = JsonMap::new();
            for (scope, fields) in scopes {
                let results: JsonMap = fields
                    .iter()
                    .map(|(field, agg)| (field.clone(), agg.to_json()))
                    .collect();
                by_scope.insert(scope.key().to_string(), Value::Object(results));
            }
            distributions.insert(analyzer.clone(), Value::Object(by_scope));
        }
        json!({
            "per_category_per_analyzer": per_category_per_analyzer,
            "per_category_overall": per_category_overall,
            "overall_per_analyzer": overall_per_analyzer,
            "overall": [row(OVERALL, OVERALL, &self.overall_overall)],
            "distributions": distributions,
        })
    }

    /// `analysis_summary.md`, laid out as upstream's.
    pub fn to_markdown(&self) -> String {
        markdown::render(self)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod bounded {
    use super::*;

    #[test]
    fn numbers_keep_a_bounded_sample_with_exact_aggregates() {
        let mut numbers = Numbers::default();
        for i in 0..20_000 {
            numbers.add(f64::from(i));
        }
        numbers.add(f64::NAN);
        assert_eq!(numbers.kept.len(), MAX_VALUES);
        let Some(FieldAgg::Numeric {
            count,
            min,
            mean,
            p50,
            max,
            ..
        }) = numeric_agg(numbers)
        else {
            panic!("no aggregate");
        };
        assert_eq!((count, min, max), (20_000, 0.0, 19_999.0));
        assert_eq!(mean, 9_999.5);
        // A uniform sample of 4,096: the median within a few percent.
        assert!((p50 - 10_000.0).abs() < 600.0, "{p50}");
        // Up to the cap, every value is kept: exact, as upstream.
        let mut small = Numbers::default();
        for x in [3.0, 1.0, 2.0] {
            small.add(x);
        }
        let Some(FieldAgg::Numeric { p50, mean, .. }) = numeric_agg(small) else {
            panic!("no aggregate");
        };
        assert_eq!((p50, mean), (2.0, 2.0));
    }

    #[test]
    fn counters_track_a_bounded_number_of_distinct_values_and_count_all() {
        let mut counter = Counter::default();
        for i in 0..(MAX_DISTINCT + 100) {
            counter.add(format!("v{i}"));
        }
        counter.add("v0".into());
        assert_eq!(counter.counts.len(), MAX_DISTINCT);
        assert_eq!(counter.total(), (MAX_DISTINCT + 101) as u64);
        assert_eq!(counter.most_common(1), [("v0".to_string(), 2)]);
    }
}
