//! The data behind the run page's charts, from the run's index: the score so far of the
//! published tasks (a live run's headline), and histograms of the primary metric's values,
//! the durations and the tokens of the published tasks, and the run's timeline. The front end
//! draws them (inline SVG); only bins travel, never one value per task.

use serde_json::{json, Value};

use crate::index::RunIndex;

/// Bins of a histogram of continuous values.
pub const HISTOGRAM_BINS: usize = 10;

/// The mean primary metric value of the published tasks that have one, as
/// `{metric_id, kind, value, scored, published}` (`value` null when none is scored).
pub fn so_far(index: &RunIndex) -> Value {
    let published = index.entries().iter().filter(|e| e.published()).count();
    let values: Vec<f64> = published_values(index, |e| e.value());
    let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    let metric = index.metric();
    json!({
        "metric_id": (!metric.id.is_empty()).then_some(&metric.id),
        "kind": metric.kind(),
        "value": mean,
        "scored": values.len(),
        "published": published,
    })
}

/// The mean primary metric value per category of the published tasks that have one, as
/// `[{category, value, scored}]` sorted by category.
pub fn categories_so_far(index: &RunIndex) -> Value {
    let mut sums: std::collections::BTreeMap<&str, (f64, u64)> = Default::default();
    for entry in index.entries().iter().filter(|e| e.published()) {
        if let Some(value) = entry.value() {
            let sum = sums.entry(index.category(entry)).or_default();
            sum.0 += value;
            sum.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(category, (sum, n))| {
            json!({"category": category, "value": sum / n as f64, "scored": n})
        })
        .collect()
}

/// `field` of every published task that has it.
fn published_values(
    index: &RunIndex,
    field: impl Fn(&crate::index::Entry) -> Option<f64>,
) -> Vec<f64> {
    index
        .entries()
        .iter()
        .filter(|e| e.published())
        .filter_map(field)
        .filter(|v| v.is_finite())
        .collect()
}

/// A histogram of `values` as `{count, bins: [{lo, hi, n}]}`: no bin without values, one when
/// they are all equal, else `bins` of equal width from the smallest to the largest (the last
/// one includes its upper bound).
pub fn histogram(values: &[f64], bins: usize) -> Value {
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let edges: Vec<(f64, f64)> = match values.len() {
        0 => Vec::new(),
        _ if min == max || bins < 2 => vec![(min, max)],
        _ => {
            let width = (max - min) / bins as f64;
            (0..bins)
                .map(|i| {
                    let hi = if i + 1 == bins {
                        max
                    } else {
                        min + width * (i + 1) as f64
                    };
                    (min + width * i as f64, hi)
                })
                .collect()
        }
    };
    let mut counts = vec![0u64; edges.len()];
    for v in values {
        let at = match edges.len() {
            0 => continue,
            1 => 0,
            n => (((v - min) / (max - min) * n as f64) as usize).min(n - 1),
        };
        counts[at] += 1;
    }
    let bins: Vec<Value> = edges
        .iter()
        .zip(&counts)
        .map(|((lo, hi), n)| json!({"lo": lo, "hi": hi, "n": n}))
        .collect();
    json!({"count": values.len(), "bins": bins})
}

/// A histogram of binary values: the bins 0 and 1 (both present even when empty).
pub fn binary_histogram(values: &[f64]) -> Value {
    let ones = values.iter().filter(|v| **v >= 0.5).count();
    json!({"count": values.len(), "binary": true, "bins": [
        {"lo": 0.0, "hi": 0.0, "n": values.len() - ones},
        {"lo": 1.0, "hi": 1.0, "n": ones},
    ]})
}

/// Every chart's data of the run whose index is `index`.
pub fn run_charts(index: &RunIndex) -> Value {
    let values = published_values(index, |e| e.value());
    let metric = index.metric();
    let rewards = match (values.is_empty(), metric.binary) {
        (true, _) => histogram(&values, HISTOGRAM_BINS),
        (false, true) => binary_histogram(&values),
        (false, false) => histogram(&values, HISTOGRAM_BINS),
    };
    let durations = published_values(index, |e| Some(f64::from(e.duration)));
    let tokens = published_values(index, |e| Some(f64::from(e.tokens)));
    json!({
        "metric_id": (!metric.id.is_empty()).then_some(&metric.id),
        "kind": metric.kind(),
        "so_far": so_far(index),
        "categories": categories_so_far(index),
        "rewards": rewards,
        "durations": histogram(&durations, HISTOGRAM_BINS),
        "tokens": histogram(&tokens, HISTOGRAM_BINS),
        "timeline": index.timeline().map(|t| t.to_json()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::write_task;

    fn counts(h: &Value) -> Vec<u64> {
        h["bins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["n"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn histograms_bin_every_value() {
        let h = histogram(&[0.0, 0.05, 0.5, 1.0, 1.0], 10);
        assert_eq!(counts(&h), [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(h["bins"][9]["hi"], 1.0);
        assert_eq!(counts(&histogram(&[3.0, 3.0], 10)), [2]);
        assert_eq!(counts(&histogram(&[], 10)), Vec::<u64>::new());
        assert_eq!(counts(&binary_histogram(&[1.0, 0.0, 1.0])), [1, 2]);
    }

    #[test]
    fn charts_of_a_run() {
        let run = tempfile::tempdir().unwrap();
        let result = |correct: bool, seconds: f64| {
            format!(
                r#"{{"status":"completed","metrics":{{"correct":{correct}}},
                "meta":{{"harness":{{"telemetry":{{"duration_seconds":{seconds},
                "model_usage":{{"prompt_tokens":10,"completion_tokens":5}}}}}}}}}}"#
            )
        };
        write_task(run.path(), "normal", "a", "x", &result(true, 1.0));
        write_task(run.path(), "normal", "b", "x", &result(false, 3.0));
        write_task(run.path(), "normal", "c", "y", &result(true, 2.0));
        std::fs::create_dir_all(run.path().join("details/running/d--00")).unwrap();
        let index = RunIndex::build(run.path());
        let charts = run_charts(&index);
        assert_eq!(charts["metric_id"], "correct");
        assert_eq!(charts["kind"], "binary_success");
        assert_eq!(charts["so_far"]["value"], json!(2.0 / 3.0));
        assert_eq!(charts["so_far"]["published"], 3);
        assert_eq!(
            charts["categories"],
            json!([{"category": "x", "value": 0.5, "scored": 2}, {"category": "y", "value": 1.0, "scored": 1}])
        );
        assert_eq!(counts(&charts["rewards"]), [1, 2]);
        assert_eq!(charts["durations"]["count"], 3);
        assert_eq!(charts["durations"]["bins"].as_array().unwrap().len(), 10);
        assert_eq!(counts(&charts["tokens"]), [3]);
        assert!(charts["timeline"].is_null());
    }
}
