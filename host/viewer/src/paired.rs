//! The paired statistics of a comparison, as `agentcompass-host compare A B` prints them: over
//! the tasks both runs published and scored, on run A's primary metric, the difference of the
//! means with its percentile bootstrap interval, McNemar's exact test for a binary metric (the
//! tasks fixed and broken), and per-category paired means. The math is `agentcompass-stats`
//! with the CLI's defaults (resamples, confidence, seed) over the tasks in task-id order, so
//! the numbers are the CLI's.
//!
//! This is the viewer's own reading, used when no [`PairedStats`] is given: the per-task value
//! is the final attempt's (the CLI averages the first k attempts: the same for k = 1), and a
//! task whose final attempt has no value for the metric is not scored (the CLI scores an
//! agent's failure without a value as 0). `agentcompass-host view` gives the CLI's own
//! comparison as the [`PairedStats`], so the page's numbers are the CLI's for every run.

use std::collections::BTreeMap;

use agentcompass_schema::task::DEFAULT_CATEGORY;
use agentcompass_stats::{
    mcnemar, paired_difference, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
};
use serde_json::{json, Value};

use crate::index::RunIndex;

/// The paired statistics of run B against run A (their directories), computed elsewhere — by
/// the host, with its scoring rules — in the shape [`paired`] returns; `None` falls back to
/// [`paired`].
pub type PairedStats =
    std::sync::Arc<dyn Fn(&std::path::Path, &std::path::Path) -> Option<Value> + Send + Sync>;

/// A run's published tasks by task id: (primary metric value, category).
fn published(index: &RunIndex) -> BTreeMap<&str, (Option<f64>, &str)> {
    index
        .entries()
        .iter()
        .filter(|e| e.published())
        .map(|e| (index.task_id(e), (e.value(), index.category(e))))
        .collect()
}

/// The tasks of A matched by id with B's.
#[derive(Default)]
struct Pairs<'a> {
    a: Vec<f64>,
    b: Vec<f64>,
    only_a: usize,
    unscored: usize,
    /// Category → (paired tasks, sum of A's values, sum of B's).
    categories: BTreeMap<&'a str, (usize, f64, f64)>,
}

impl<'a> Pairs<'a> {
    fn of(
        a: &BTreeMap<&'a str, (Option<f64>, &'a str)>,
        b: &BTreeMap<&str, (Option<f64>, &str)>,
    ) -> Pairs<'a> {
        let mut pairs = Pairs::default();
        for (id, (va, category)) in a {
            let Some((vb, _)) = b.get(id) else {
                pairs.only_a += 1;
                continue;
            };
            let (Some(x), Some(y)) = (va, vb) else {
                pairs.unscored += 1;
                continue;
            };
            pairs.a.push(*x);
            pairs.b.push(*y);
            let category = if category.is_empty() {
                DEFAULT_CATEGORY
            } else {
                category
            };
            let sums = pairs.categories.entry(category).or_default();
            sums.0 += 1;
            sums.1 += x;
            sums.2 += y;
        }
        pairs
    }
}

/// The paired statistics of run B against run A (their indexes), as the CLI's `compare
/// --json` names them: `metric`, `kind`, `shared`, `only_a`, `only_b`, `unscored` (counts),
/// `mean_a`, `mean_b`, `difference`, `interval`, `mcnemar` and `categories`.
pub fn paired(a: &RunIndex, b: &RunIndex) -> Value {
    let (ta, tb) = (published(a), published(b));
    let pairs = Pairs::of(&ta, &tb);
    let only_b = tb.keys().filter(|id| !ta.contains_key(*id)).count();
    let metric = a.metric();
    let difference = paired_difference(
        &pairs.a,
        &pairs.b,
        DEFAULT_RESAMPLES,
        DEFAULT_CONFIDENCE,
        DEFAULT_SEED,
    );
    let solved = |values: &[f64]| values.iter().map(|v| *v >= 0.5).collect::<Vec<bool>>();
    let test = metric
        .binary
        .then(|| mcnemar(&solved(&pairs.a), &solved(&pairs.b)))
        .flatten();
    let categories: Vec<Value> = pairs
        .categories
        .iter()
        .map(|(category, (n, sa, sb))| {
            let (mean_a, mean_b) = (sa / *n as f64, sb / *n as f64);
            json!({"category": category, "tasks": n, "mean_a": mean_a, "mean_b": mean_b,
                   "difference": mean_b - mean_a})
        })
        .collect();
    json!({
        "metric": metric.id,
        "kind": metric.kind(),
        "shared": pairs.a.len(),
        "only_a": pairs.only_a,
        "only_b": only_b,
        "unscored": pairs.unscored,
        "mean_a": difference.map(|d| d.mean_a),
        "mean_b": difference.map(|d| d.mean_b),
        "difference": difference.map(|d| d.difference),
        "interval": difference.and_then(|d| d.interval).map(|i| json!({
            "low": i.low, "high": i.high, "confidence": DEFAULT_CONFIDENCE,
            "resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED,
        })),
        "mcnemar": test.map(|m| json!({"fixed": m.fixed, "broken": m.broken, "p_value": m.p_value})),
        "categories": categories,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::write_task;

    use crate::index::write_correct_task as task;

    #[test]
    fn paired_statistics_of_two_runs() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for (id, category, ra, rb) in [
            ("t1", "x", false, true),
            ("t2", "x", false, true),
            ("t3", "", true, true),
            ("t4", "", true, false),
        ] {
            task(a.path(), id, category, ra);
            task(b.path(), id, category, rb);
        }
        task(a.path(), "t5", "x", true);
        write_task(
            b.path(),
            "normal",
            "t6",
            "x",
            r#"{"status":"completed","metrics":{}}"#,
        );
        write_task(
            a.path(),
            "normal",
            "t6",
            "x",
            r#"{"status":"completed","metrics":{"correct":true}}"#,
        );
        let p = paired(&RunIndex::build(a.path()), &RunIndex::build(b.path()));
        assert_eq!(p["metric"], "correct");
        assert_eq!(p["kind"], "binary_success");
        assert_eq!(
            (
                p["shared"].clone(),
                p["only_a"].clone(),
                p["only_b"].clone(),
                p["unscored"].clone()
            ),
            (json!(4), json!(1), json!(0), json!(1))
        );
        assert_eq!(p["mean_a"], 0.5);
        assert_eq!(p["mean_b"], 0.75);
        assert_eq!(p["difference"], 0.25);
        assert_eq!(p["mcnemar"]["fixed"], 2);
        assert_eq!(p["mcnemar"]["broken"], 1);
        assert_eq!(p["mcnemar"]["p_value"], 1.0);
        let low = p["interval"]["low"].as_f64().unwrap();
        let high = p["interval"]["high"].as_f64().unwrap();
        assert!(low <= 0.25 && 0.25 <= high, "{p}");
        assert_eq!(p["categories"][0]["category"], "default");
        assert_eq!(p["categories"][1]["difference"], 1.0);
    }
}
