//! Streaming metric aggregation: k-reduction of each task's attempts, `micro_weighted`
//! aggregation over tasks, per-category breakdowns, and the `summary.md` renderer.
//!
//! [`MetricAggregator`] consumes one task at a time ([`MetricAggregator::add_task`]) and keeps
//! only running sums and counters per series and per category, so memory does not grow with
//! the number of tasks. [`MetricAggregator::report`] can be called at any point.
//!
//! Reduction rules (per task, per metric):
//! - `native` (k = 1): the single attempt's valid value.
//! - `avg` (k > 1): the mean over the k attempts; `None` unless all k are valid.
//! - `pass` (k > 1, binary metrics only): 1 if any attempt is `true`, 0 if all k are valid and
//!   none is `true`, else `None`.
//!
//! A task with a fatal attempt is *invalidated*; if any task is, the report has
//! `evaluation_failed = true` and every series value moves to `reference_value` (computed over
//! the remaining tasks).

pub mod dataset;
pub mod harbor;
mod outcomes;
pub mod pass_at_k;
mod render;
pub mod uv_script;

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    AttemptStrategy, CategoryBreakdown, ExecutionIssue, IssueSeverity, JsonMap, MetricContract,
    MetricDisplay, MetricKind, MetricReport, MetricSeries, MetricSpec, MetricValue, RunResult,
    SeriesCounts, TokenUsage,
};

use agentcompass_schema::metrics::{HostExtras, NotScored, ReasonCounts};

use crate::issue_codes::FailureClass;

pub use outcomes::{
    attempt_records, complete_attempt_records, outcomes_from_results, AttemptRecord,
};
pub use render::{
    harbor_metric_lines, headline_line, headline_line_of, not_scored_line, render_summary,
    skipped_line, SummaryTitle,
};

/// The aggregation written into every report produced here.
pub const AGGREGATION_MICRO_WEIGHTED: &str = "micro_weighted";

pub use agentcompass_schema::task::DEFAULT_CATEGORY;

/// What metric aggregation needs to know about one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptOutcome {
    /// Observations by metric id.
    pub metrics: BTreeMap<String, MetricValue>,
    /// The attempt has a FATAL issue of a class that is not scored (invalidates the task).
    pub fatal: bool,
    /// The attempt has an ERROR issue of a class that is not scored: its metrics do not
    /// count, the task is `error`.
    pub error: bool,
    /// The agent failed (an `agent` or `limit` class issue): a metric it has no value for
    /// counts as a failure (0).
    pub failed: bool,
    /// Why the attempt is not scored (with `fatal` or `error`): the issue's class and a short
    /// reason (`rate limited`, a code).
    pub unscored: Option<(FailureClass, String)>,
    /// Model usage of the attempt (`telemetry.model_usage`).
    pub usage: TokenUsage,
}

impl AttemptOutcome {
    /// Derives the outcome of a finished attempt from its result.
    pub fn from_result(result: &RunResult) -> Self {
        let usage = result
            .telemetry
            .get("model_usage")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        Self::from_parts(result.metrics.clone(), &result.issues, usage)
    }

    /// The outcome of an attempt with these metrics, issues and usage: an unscored-class
    /// FATAL issue invalidates the task, an unscored-class ERROR issue makes it `error`, an
    /// `agent`/`limit` failure is scored as a failure.
    pub fn from_parts(
        metrics: BTreeMap<String, MetricValue>,
        issues: &[ExecutionIssue],
        usage: TokenUsage,
    ) -> Self {
        let unscored = crate::issue_codes::unscored_issue(issues);
        let failed =
            unscored.is_none() && issues.iter().any(|i| i.severity >= IssueSeverity::Error);
        AttemptOutcome {
            metrics,
            fatal: unscored.is_some_and(|(i, _)| i.severity == IssueSeverity::Fatal),
            error: unscored.is_some_and(|(i, _)| i.severity == IssueSeverity::Error),
            failed,
            unscored: unscored
                .map(|(issue, class)| (class, crate::issue_codes::failure_detail(issue, class))),
            usage,
        }
    }
}

/// A k-reducer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reducer {
    Native,
    Avg,
    Pass,
}

impl Reducer {
    fn as_str(self) -> &'static str {
        match self {
            Reducer::Native => "native",
            Reducer::Avg => "avg",
            Reducer::Pass => "pass",
        }
    }
}

/// Running sum over the evaluated tasks of one category, and its task counts.
#[derive(Debug, Clone, Copy, Default)]
struct CategoryAcc {
    sum: f64,
    counts: SeriesCounts,
}

impl CategoryAcc {
    fn mean(self) -> Option<f64> {
        let evaluated = self.counts.evaluated;
        (evaluated > 0).then(|| self.sum / evaluated as f64)
    }

    /// Upstream's `MetricBreakdown`: the value moves to `reference_value` when evaluation
    /// failed; the weight is the evaluated task count (`micro_weighted`).
    fn breakdown(self, evaluation_failed: bool) -> CategoryBreakdown {
        let mean = self.mean();
        CategoryBreakdown {
            value: if evaluation_failed { None } else { mean },
            reference_value: if evaluation_failed { mean } else { None },
            counts: self.counts,
            aggregation_weight: Some(self.counts.evaluated as f64),
        }
    }
}

/// How one task counts in a series.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TaskCount {
    Evaluated(f64),
    Invalidated,
    Error,
    Unavailable,
}

impl TaskCount {
    fn add_to(self, counts: &mut SeriesCounts) {
        counts.total += 1;
        match self {
            TaskCount::Evaluated(_) => counts.evaluated += 1,
            TaskCount::Invalidated => counts.invalidated += 1,
            TaskCount::Error => counts.error += 1,
            TaskCount::Unavailable => counts.unavailable += 1,
        }
    }
}

/// Running state of one series.
#[derive(Debug, Clone)]
struct SeriesAcc {
    metric_id: String,
    display: MetricDisplay,
    kind: MetricKind,
    reducer: Reducer,
    headline: bool,
    sum: f64,
    counts: SeriesCounts,
    categories: BTreeMap<String, CategoryAcc>,
}

impl SeriesAcc {
    fn new(spec: &MetricSpec, reducer: Reducer, headline: bool) -> Self {
        SeriesAcc {
            metric_id: spec.id.clone(),
            display: spec.display(),
            kind: spec.kind,
            reducer,
            headline,
            sum: 0.0,
            counts: SeriesCounts::default(),
            categories: BTreeMap::new(),
        }
    }

    /// Adds a task's value (or its absence) to `category`, allocating the category's name only
    /// the first time it is seen.
    fn add_to_category(&mut self, category: &str, count: TaskCount) {
        let add = |acc: &mut CategoryAcc| {
            if let TaskCount::Evaluated(v) = count {
                acc.sum += v;
            }
            count.add_to(&mut acc.counts);
        };
        match self.categories.get_mut(category) {
            Some(acc) => add(acc),
            None => {
                let mut acc = CategoryAcc::default();
                add(&mut acc);
                self.categories.insert(category.to_string(), acc);
            }
        }
    }

    /// This series' value for one task, or `None` when the task has none.
    fn reduce(&self, attempts: &[AttemptOutcome], k: usize) -> Option<f64> {
        let observe = |a: &AttemptOutcome| observation(a, &self.metric_id, self.kind);
        match self.reducer {
            Reducer::Native => attempts.first().and_then(observe),
            Reducer::Avg => {
                if attempts.len() < k {
                    return None;
                }
                let mut sum = 0.0;
                for attempt in attempts {
                    sum += observe(attempt)?;
                }
                Some(sum / k as f64)
            }
            Reducer::Pass => {
                let mut all_valid = attempts.len() >= k;
                for attempt in attempts {
                    match observe(attempt) {
                        Some(v) if v > 0.0 => return Some(1.0),
                        Some(_) => {}
                        None => all_valid = false,
                    }
                }
                all_valid.then_some(0.0)
            }
        }
    }

    fn finish(&self, k: u32, evaluation_failed: bool) -> MetricSeries {
        let mut series = MetricSeries::new(&self.metric_id, self.kind, self.reducer.as_str(), k);
        series.role = if self.headline {
            "headline"
        } else {
            "auxiliary"
        }
        .to_string();
        series.display = Some(self.display.clone());
        let mean = (self.counts.evaluated > 0).then(|| self.sum / self.counts.evaluated as f64);
        if evaluation_failed {
            series.reference_value = mean;
        } else {
            series.value = mean;
        }
        series.counts = self.counts;
        series.categories = self
            .categories
            .iter()
            .map(|(name, acc)| (name.clone(), acc.breakdown(evaluation_failed)))
            .collect();
        series
    }
}

/// A valid observation of `metric_id` in one attempt: a strict bool for binary metrics, any
/// finite number (bools count as 1.0 / 0.0) for scalar metrics. An unscored attempt has none;
/// a failed agent's missing value is a failure (0).
pub fn observation(attempt: &AttemptOutcome, metric_id: &str, kind: MetricKind) -> Option<f64> {
    if attempt.error || attempt.fatal {
        return None;
    }
    let Some(&value) = attempt.metrics.get(metric_id) else {
        return attempt.failed.then_some(0.0);
    };
    match (kind, value) {
        (MetricKind::BinarySuccess, MetricValue::Bool(b)) => Some(f64::from(u8::from(b))),
        (MetricKind::BinarySuccess, _) => None,
        (MetricKind::Scalar, v) => Some(v.as_f64()).filter(|f| f.is_finite()),
    }
}

/// Streams tasks into a [`MetricReport`] (aggregation `micro_weighted`).
///
/// State is per series (running sum and counts) and per series and category (sum and count of
/// evaluated tasks) — never per task.
#[derive(Debug, Clone)]
pub struct MetricAggregator {
    k: u32,
    strategy: AttemptStrategy,
    series: Vec<SeriesAcc>,
    invalidated_tasks: u64,
    usage: TokenUsage,
    /// Tasks not scored, by class, then by reason (memory: one entry per class and reason).
    not_scored: BTreeMap<FailureClass, BTreeMap<String, u64>>,
    /// Tasks that never ran, by reason (`budget_exhausted`, ...).
    skipped: BTreeMap<String, u64>,
}

impl MetricAggregator {
    /// An empty aggregator for `contract`, `k` attempts per task (0 is treated as 1) and
    /// `strategy`.
    ///
    /// Series: with strategy `avg`, `native` for every metric when k = 1, else `avg` for every
    /// metric plus `pass` for binary ones; with strategy `pass` only the primary's `pass`
    /// series (`native` when k = 1). Strategy `pass` with a non-binary primary falls back to
    /// `avg`. The primary metric comes first and its first series is the headline.
    pub fn new(contract: MetricContract, k: u32, strategy: AttemptStrategy) -> Self {
        let k = k.max(1);
        let primary = contract.primary();
        let pass_only = match (strategy, primary) {
            (AttemptStrategy::Pass, Some(p)) if p.kind == MetricKind::BinarySuccess => true,
            (AttemptStrategy::Pass, _) => {
                tracing::warn!(
                    "attempt strategy `pass` needs a binary primary metric; reducing with `avg`"
                );
                false
            }
            (AttemptStrategy::Avg, _) => false,
        };
        let ordered = primary
            .into_iter()
            .chain(contract.metrics.iter().filter(|m| !m.primary));
        let mut series = Vec::new();
        for spec in ordered {
            let reducers: &[Reducer] = match (k, spec.kind) {
                (1, _) => &[Reducer::Native],
                (_, _) if pass_only => &[Reducer::Pass],
                (_, MetricKind::BinarySuccess) => &[Reducer::Avg, Reducer::Pass],
                (_, MetricKind::Scalar) => &[Reducer::Avg],
            };
            // As upstream: every series of the primary metric is a headline.
            for &reducer in reducers {
                series.push(SeriesAcc::new(spec, reducer, spec.primary));
            }
            if pass_only {
                break;
            }
        }
        MetricAggregator {
            k,
            strategy,
            series,
            invalidated_tasks: 0,
            usage: TokenUsage::default(),
            not_scored: BTreeMap::new(),
            skipped: BTreeMap::new(),
        }
    }

    /// The headline so far, for the terminal: `correct 84.20%` (the first series' mean over
    /// the tasks evaluated yet), `None` before the first.
    pub fn headline_so_far(&self) -> Option<String> {
        let series = self.series.first()?;
        let evaluated = series.counts.evaluated;
        (evaluated > 0).then(|| {
            let mean = series.sum / evaluated as f64;
            format!(
                "{} {}",
                series.metric_id,
                render::format_value(series.kind, Some(mean))
            )
        })
    }

    /// Counts a task that never ran (`reason`: `budget_exhausted`, ...); it is not scored and
    /// is in no series' counts.
    pub fn add_skipped(&mut self, reason: &str) {
        match self.skipped.get_mut(reason) {
            Some(n) => *n += 1,
            None => {
                self.skipped.insert(reason.to_string(), 1);
            }
        }
    }

    /// Attempts per task.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Adds one task: its attempts in order (fewer than k means the rest are missing; extra
    /// attempts beyond k are ignored). An empty category counts as [`DEFAULT_CATEGORY`].
    pub fn add_task(&mut self, category: &str, attempts: &[AttemptOutcome]) {
        for attempt in attempts {
            self.usage.add(&attempt.usage);
        }
        let k = self.k as usize;
        let attempts = &attempts[..attempts.len().min(k)];
        let invalidated = attempts.iter().any(|a| a.fatal);
        let errored = attempts.len() < k || attempts.iter().any(|a| a.error);
        let unscored = attempts
            .iter()
            .filter(|a| a.fatal)
            .chain(attempts.iter().filter(|a| a.error))
            .find_map(|a| a.unscored.as_ref());
        if let Some((class, reason)) = unscored {
            let reasons = self.not_scored.entry(*class).or_default();
            match reasons.get_mut(reason) {
                Some(n) => *n += 1,
                None => {
                    reasons.insert(reason.clone(), 1);
                }
            }
        }
        let category = if category.is_empty() {
            DEFAULT_CATEGORY
        } else {
            category
        };
        if invalidated {
            self.invalidated_tasks += 1;
        }
        for series in &mut self.series {
            let value = if invalidated {
                None
            } else {
                series.reduce(attempts, k)
            };
            let count = match value {
                _ if invalidated => TaskCount::Invalidated,
                Some(v) => TaskCount::Evaluated(v),
                None if errored => TaskCount::Error,
                None => TaskCount::Unavailable,
            };
            if let TaskCount::Evaluated(v) = count {
                series.sum += v;
            }
            count.add_to(&mut series.counts);
            series.add_to_category(category, count);
        }
    }

    /// The report over the tasks added so far.
    pub fn report(&self) -> MetricReport {
        let evaluation_failed = self.invalidated_tasks > 0;
        let mut extra = JsonMap::new();
        HostExtras {
            model_usage: (!self.usage.is_empty()).then_some(self.usage),
            not_scored: (!self.not_scored.is_empty()).then(|| self.not_scored()),
            skipped: (!self.skipped.is_empty()).then(|| ReasonCounts {
                tasks: self.skipped.values().sum(),
                reasons: self.skipped.clone(),
            }),
            // The run's, not the tasks': added when the run finishes.
            rate_limits: None,
            dataset_metrics: None,
            pass_at_k: None,
            // The gateway's: added when the run finishes.
            pricing: None,
        }
        .write_into(&mut extra);
        MetricReport {
            k: self.k,
            strategy: self.strategy,
            aggregation: AGGREGATION_MICRO_WEIGHTED.to_string(),
            series: self
                .series
                .iter()
                .map(|s| s.finish(self.k, evaluation_failed))
                .collect(),
            evaluation_failed,
            extra,
            ..MetricReport::default()
        }
    }
}

impl MetricAggregator {
    /// `extra.not_scored`: the tasks without a score by failure class.
    fn not_scored(&self) -> NotScored {
        let classes: BTreeMap<String, ReasonCounts> = self
            .not_scored
            .iter()
            .map(|(class, reasons)| {
                let counts = ReasonCounts {
                    tasks: reasons.values().sum(),
                    reasons: reasons.clone(),
                };
                (class.as_str().to_string(), counts)
            })
            .collect();
        NotScored {
            tasks: classes.values().map(|c| c.tasks).sum(),
            classes,
        }
    }
}

#[cfg(test)]
mod tests;
