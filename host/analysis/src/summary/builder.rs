//! [`SummaryBuilder`]: combines each task's payloads over its attempts and counts them into
//! the table cells and the distribution accumulators.

use std::collections::{BTreeMap, HashMap, HashSet};

use agentcompass_plugin_api::contracts::{ComponentInfo, JsonMap};
use serde_json::{json, Value};

use super::distribution::{numeric, Accum, Scope};
use super::fields::{distribution_fields, family_of, DistributionMethod};
use super::stat::Stat;
use super::AnalysisSummary;
use crate::py::truthy;
use crate::view::json_view;

json_view! {
    /// One analyzer's payload in an attempt's `analysis_result`.
    struct Payload {
        /// Whether the attempt is a bad case (`null`: the analyzer only measures).
        is_badcase,
        /// The analyzer's score.
        score,
        /// Why the analyzer failed.
        error,
        /// What it found.
        details,
    }
}

/// Builds the summary one task at a time. Its memory does not grow with the task count
/// except for the bad-case task files the output lists: a `value_counts` field tracks at most
/// 4,096 distinct values and a `numeric_stats` field keeps at most 4,096 values (every value
/// up to that, so upstream's p50/p90/p95 — interpolated between exact order statistics — are
/// exact on runs of up to 4,096 tasks; beyond, from a uniform sample).
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

/// What one analyzer found in one task, its payloads over the attempts combined.
struct Finding {
    /// A truthy `is_badcase`.
    badcase: bool,
    /// An `is_badcase` that is not `null`.
    has_badcase_field: bool,
    /// A truthy `error`.
    error: bool,
    /// The numeric score.
    score: Option<f64>,
}

/// The latest of an analyzer's payloads, with `is_badcase` = any attempt's (when one is a
/// boolean) and `score` = the mean of the numeric scores.
fn combine(list: &[&JsonMap]) -> Option<JsonMap> {
    let mut combined: JsonMap = (*list.last()?).clone();
    let flags: Vec<bool> = list
        .iter()
        .filter_map(|p| Payload::from(*p).is_badcase().and_then(Value::as_bool))
        .collect();
    if !flags.is_empty() {
        combined.insert("is_badcase".into(), json!(flags.iter().any(|b| *b)));
    }
    let scores: Vec<f64> = list
        .iter()
        .filter_map(|p| match Payload::from(*p).score() {
            Some(Value::Number(n)) => n.as_f64(),
            _ => None,
        })
        .collect();
    if !scores.is_empty() {
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        combined.insert("score".into(), crate::py::num(mean));
    }
    Some(combined)
}

impl Finding {
    /// What a combined payload says.
    fn of(combined: &JsonMap) -> Self {
        let payload = Payload::from(combined);
        let is_badcase = payload.is_badcase();
        Finding {
            badcase: is_badcase.is_some_and(truthy),
            has_badcase_field: is_badcase.is_some_and(|v| !v.is_null()),
            error: payload.error().is_some_and(truthy),
            score: numeric(payload.score()),
        }
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
        let payloads = self.collect_payloads(task_file, attempts);
        if payloads.is_empty() {
            return;
        }
        self.tasks += 1;
        let category = category.unwrap_or_default().to_string();
        let mut any_badcase = false;
        let mut any_error = false;
        let mut max_score: Option<f64> = None;
        for (analyzer, list) in payloads {
            let Some(combined) = combine(&list) else {
                continue;
            };
            let finding = Finding::of(&combined);
            any_badcase |= finding.badcase;
            any_error |= finding.error;
            if let Some(score) = finding.score {
                max_score = Some(max_score.map_or(score, |m| m.max(score)));
            }
            self.count_finding(analyzer, &category, &finding);
            self.accumulate(analyzer, &category, Payload::from(&combined).details());
        }
        for stat in [
            self.category_overall.entry(category).or_default(),
            &mut self.overall_overall,
        ] {
            stat.count(any_badcase, any_error, max_score);
        }
    }

    /// Each analyzer's payloads over the attempts, in attempt order; records the task as a
    /// bad-case item of every analyzer with a truthy `is_badcase` in some attempt.
    fn collect_payloads<'a>(
        &mut self,
        task_file: &str,
        attempts: &[&'a JsonMap],
    ) -> BTreeMap<&'a str, Vec<&'a JsonMap>> {
        let mut payloads: BTreeMap<&str, Vec<&JsonMap>> = BTreeMap::new();
        for attempt in attempts {
            for (analyzer, data) in attempt.iter() {
                let Value::Object(data) = data else {
                    continue;
                };
                payloads.entry(analyzer).or_default().push(data);
                if Payload::from(data).is_badcase().is_some_and(truthy)
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
        payloads
    }

    /// Counts one analyzer's finding in its cell of the task's category and overall.
    fn count_finding(&mut self, analyzer: &str, category: &str, finding: &Finding) {
        for stat in [
            self.per_category
                .entry(category.to_string())
                .or_default()
                .entry(analyzer.to_string())
                .or_default(),
            self.overall.entry(analyzer.to_string()).or_default(),
        ] {
            stat.has_badcase_field |= finding.has_badcase_field;
            stat.count(finding.badcase, finding.error, finding.score);
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
                self.accums
                    .entry((analyzer.to_string(), scope, field.clone()))
                    .or_default()
                    .add(*method, value);
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
                    if let Some(agg) = accum.aggregate(*method) {
                        results.push((field.clone(), agg));
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
