//! The distribution fields' accumulators (bounded value counts and numeric samples) and
//! their aggregates (`value_counts`, `numeric_stats`).

use std::collections::HashMap;

use agentcompass_plugin_api::contracts::JsonMap;
use serde_json::{json, Value};

use super::fields::DistributionMethod;
use super::OVERALL;
use crate::py::{percentile, py_str, round};

/// Where a distribution is aggregated: over all tasks, or over one category's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Scope {
    /// Every task.
    Overall,
    /// The tasks of one category.
    Category(String),
}

impl Scope {
    /// The scope's key in the JSON `distributions`.
    pub(super) fn key(&self) -> &str {
        match self {
            Scope::Overall => OVERALL,
            Scope::Category(c) => c,
        }
    }
}

/// Distinct values a `value_counts` field tracks exactly; later new values are counted in
/// the total only (memory stays bounded; the top 50 are exact while a field has at most this
/// many distinct values, as every built-in's fields have).
pub(super) const MAX_DISTINCT: usize = 4096;

/// Values a `numeric_stats` field keeps: every value up to this many (percentiles exact, as
/// upstream's), then a uniform reservoir sample of this size (seeded, so a summary is
/// reproducible); count, min, max and mean stay exact.
pub(super) const MAX_VALUES: usize = 4096;

/// A number from a payload as upstream's `isinstance(x, (int, float))` sees it (a boolean
/// is `0`/`1`).
pub(super) fn numeric(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// Value counts in first-seen order.
#[derive(Debug, Clone, Default)]
pub(super) struct Counter {
    index: HashMap<String, usize>,
    counts: Vec<(String, u64)>,
    /// Occurrences of values seen after [`MAX_DISTINCT`] distinct ones.
    untracked: u64,
}

impl Counter {
    /// Counts one occurrence of `value`.
    pub(super) fn add(&mut self, value: String) {
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
    pub(super) fn total(&self) -> u64 {
        self.counts.iter().map(|(_, c)| c).sum::<u64>() + self.untracked
    }

    /// Python's `Counter.most_common(n)`: by count, ties in first-seen order.
    pub(super) fn most_common(&self, n: usize) -> Vec<(String, u64)> {
        let mut sorted = self.counts.clone();
        sorted.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        sorted.truncate(n);
        sorted
    }
}

/// The values of one `numeric_stats` field: exact aggregates, and the values themselves up to
/// [`MAX_VALUES`] (then a reservoir sample).
#[derive(Debug, Clone)]
pub(super) struct Numbers {
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
    /// Adds one value (non-finite ones are ignored).
    pub(super) fn add(&mut self, x: f64) {
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
pub(super) struct Accum {
    counts: Counter,
    values: Numbers,
}

impl Accum {
    /// Adds one task's (non-null) value of the field, as `method` aggregates it.
    pub(super) fn add(&mut self, method: DistributionMethod, value: &Value) {
        match method {
            DistributionMethod::ValueCounts => match value {
                Value::Array(items) => {
                    for item in items.iter().filter(|v| !v.is_null()) {
                        self.counts.add(py_str(item));
                    }
                }
                other => self.counts.add(py_str(other)),
            },
            DistributionMethod::NumericStats => {
                if let Some(x) = numeric(Some(value)) {
                    self.values.add(x);
                }
            }
        }
    }

    /// The field's aggregate as `method` computes it; `None` for `numeric_stats` without
    /// values.
    pub(super) fn aggregate(self, method: DistributionMethod) -> Option<FieldAgg> {
        match method {
            DistributionMethod::ValueCounts => Some(FieldAgg::Counts {
                total: self.counts.total(),
                top: self.counts.most_common(50),
            }),
            DistributionMethod::NumericStats => numeric_agg(self.values),
        }
    }
}

/// One aggregated distribution field.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FieldAgg {
    /// `value_counts`: every occurrence counted, and the 50 most common values.
    Counts {
        /// Every occurrence counted.
        total: u64,
        /// The most common values with their counts.
        top: Vec<(String, u64)>,
    },
    /// `numeric_stats`, rounded to 2 digits.
    Numeric(NumericStats),
}

/// `numeric_stats` of one field, as `analysis_summary.json` writes them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(super) struct NumericStats {
    /// Values seen.
    pub(super) count: usize,
    /// The smallest.
    pub(super) min: f64,
    /// The mean.
    pub(super) mean: f64,
    /// The median.
    pub(super) p50: f64,
    /// The 90th percentile.
    pub(super) p90: f64,
    /// The 95th percentile.
    pub(super) p95: f64,
    /// The largest.
    pub(super) max: f64,
}

/// `numeric_stats` of some values (rounded to 2 digits), `None` without values.
fn numeric_agg(numbers: Numbers) -> Option<FieldAgg> {
    let mut values = numbers.kept;
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let exact = numbers.seen as usize == values.len();
    Some(FieldAgg::Numeric(NumericStats {
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
    }))
}

impl FieldAgg {
    /// The aggregate as `analysis_summary.json` writes it.
    pub(super) fn to_json(&self) -> Value {
        match self {
            FieldAgg::Counts { total, top } => {
                let distribution: JsonMap =
                    top.iter().map(|(v, c)| (v.clone(), json!(c))).collect();
                json!({"total": total, "distribution": distribution})
            }
            FieldAgg::Numeric(stats) => json!(stats),
        }
    }
}

/// The aggregated distribution fields of one scope.
pub(super) type ScopeFields = (Scope, Vec<(String, FieldAgg)>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_a_bounded_sample_with_exact_aggregates() {
        let mut numbers = Numbers::default();
        for i in 0..20_000 {
            numbers.add(f64::from(i));
        }
        numbers.add(f64::NAN);
        assert_eq!(numbers.kept.len(), MAX_VALUES);
        let Some(FieldAgg::Numeric(NumericStats {
            count,
            min,
            mean,
            p50,
            max,
            ..
        })) = numeric_agg(numbers)
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
        let Some(FieldAgg::Numeric(NumericStats { p50, mean, .. })) = numeric_agg(small) else {
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
