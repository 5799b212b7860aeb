//! A Harbor registry dataset's declared metrics (`metrics: [{"type", "kwargs"}]`), computed
//! as Harbor 0.25 computes its built-in kinds (`metrics/base.py::aggregate_reward_dicts`):
//! over every trial (attempt) of the run, its verifier's reward dict (`None` when it was not
//! evaluated, counted as 0); with at most one reward key the value is named after the metric
//! (`{"mean": 0.5}`), with more each key is aggregated on its own (`{"reward": 1, "coverage":
//! 0.5}`). A declared `uv-script` (a user script run by `uv`, module `uv_script`) runs with the
//! run's own scripts (module `harbor`); one without a `script_path`, or a kind Harbor does
//! not have, is one warning naming it.
//!
//! Read back from the published tasks after the run in one streaming pass (running sums,
//! minima and maxima per key: memory flat in the task count).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use agentcompass_results::store::published_tasks;
use serde_json::{json, Map, Value};

/// Harbor's built-in metric kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinMetric {
    /// `sum(values) / len(values)`.
    Mean,
    /// `sum(values)`.
    Sum,
    /// `min(values)`.
    Min,
    /// `max(values)`.
    Max,
}

impl BuiltinMetric {
    /// The kind named `name`, if Harbor has it built in.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "mean" => Some(BuiltinMetric::Mean),
            "sum" => Some(BuiltinMetric::Sum),
            "min" => Some(BuiltinMetric::Min),
            "max" => Some(BuiltinMetric::Max),
            _ => None,
        }
    }

    /// Its name in registries and reports.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinMetric::Mean => "mean",
            BuiltinMetric::Sum => "sum",
            BuiltinMetric::Min => "min",
            BuiltinMetric::Max => "max",
        }
    }
}

/// The metrics one dataset declares.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredMetrics {
    /// `NAME@VERSION`.
    pub dataset: String,
    /// The declared kinds this host computes, in order.
    pub metrics: Vec<BuiltinMetric>,
    /// The declared `uv-script`s (`kwargs.script_path`, as Harbor resolves it: against the
    /// working directory).
    pub scripts: Vec<String>,
}

impl DeclaredMetrics {
    /// The harbor-registry datasets of a run's `provenance.dataset_sources`, each with the
    /// built-in kinds and `uv-script`s it declares (a dataset declaring none gets Harbor's
    /// `mean`); the names of the other kinds (and of scripts without a `script_path`), for a
    /// warning.
    pub fn from_provenance(provenance: &Value) -> (Vec<DeclaredMetrics>, Vec<String>) {
        let mut declared = Vec::new();
        let mut unsupported = Vec::new();
        let sources = provenance["dataset_sources"].as_array();
        for source in sources.into_iter().flatten() {
            if source["kind"] != "harbor_registry" {
                continue;
            }
            let dataset = source["dataset"].as_str().unwrap_or_default().to_string();
            let (mut metrics, mut scripts) = (Vec::new(), Vec::new());
            let listed = source["metrics"].as_array().cloned().unwrap_or_default();
            for metric in &listed {
                let kind = metric["type"].as_str().unwrap_or("mean");
                let script = metric
                    .pointer("/kwargs/script_path")
                    .and_then(Value::as_str);
                match (BuiltinMetric::parse(kind), kind, script) {
                    (Some(builtin), _, _) => metrics.push(builtin),
                    (None, "uv-script", Some(script)) => scripts.push(script.to_string()),
                    _ => unsupported.push(format!("{dataset}: {kind}")),
                }
            }
            if listed.is_empty() {
                metrics.push(BuiltinMetric::Mean);
            }
            if !metrics.is_empty() || !scripts.is_empty() {
                declared.push(DeclaredMetrics {
                    dataset,
                    metrics,
                    scripts,
                });
            }
        }
        (declared, unsupported)
    }
}

/// One key's running aggregates.
#[derive(Debug, Clone, Copy)]
struct KeyStats {
    sum: f64,
    min: f64,
    max: f64,
    /// Trials that had the key.
    present: u64,
}

/// Harbor's reward dicts, folded trial by trial.
#[derive(Debug, Default)]
pub struct RewardFold {
    trials: u64,
    /// Trials with a reward dict.
    rewarded: u64,
    keys: BTreeMap<String, KeyStats>,
    /// The first value of each single-key dict, Harbor's value when the union has one key.
    first_values: KeyStats0,
}

/// Running aggregates of the first value of each dict (0 for an empty or missing one).
#[derive(Debug, Default)]
struct KeyStats0 {
    sum: f64,
    min: Option<f64>,
    max: Option<f64>,
}

impl KeyStats0 {
    fn add(&mut self, value: f64) {
        self.sum += value;
        self.min = Some(self.min.map_or(value, |m| m.min(value)));
        self.max = Some(self.max.map_or(value, |m| m.max(value)));
    }
}

impl RewardFold {
    /// Adds one trial: its reward dict, `None` when it has none.
    pub fn add(&mut self, rewards: Option<&BTreeMap<String, f64>>) {
        self.trials += 1;
        self.rewarded += u64::from(rewards.is_some());
        let first = rewards
            .and_then(|r| r.values().next().copied())
            .unwrap_or(0.0);
        self.first_values.add(first);
        for (key, value) in rewards.into_iter().flatten() {
            let stats = self.keys.entry(key.clone()).or_insert(KeyStats {
                sum: 0.0,
                min: *value,
                max: *value,
                present: 0,
            });
            stats.sum += value;
            stats.min = stats.min.min(*value);
            stats.max = stats.max.max(*value);
            stats.present += 1;
        }
    }

    /// How many trials had a reward dict.
    pub fn rewarded(&self) -> u64 {
        self.rewarded
    }

    /// The metric's values, Harbor's dict (`None` without a trial: Harbor divides by zero).
    pub fn value(&self, metric: BuiltinMetric) -> Option<Map<String, Value>> {
        if self.trials == 0 {
            return None;
        }
        let n = self.trials as f64;
        let mut out = Map::new();
        if self.keys.len() <= 1 {
            let first = &self.first_values;
            let value = match metric {
                BuiltinMetric::Mean => first.sum / n,
                BuiltinMetric::Sum => first.sum,
                BuiltinMetric::Min => first.min.unwrap_or(0.0),
                BuiltinMetric::Max => first.max.unwrap_or(0.0),
            };
            out.insert(metric.name().to_string(), json!(value));
            return Some(out);
        }
        for (key, stats) in &self.keys {
            // A trial without the key counts 0 for it.
            let missing = stats.present < self.trials;
            let value = match metric {
                BuiltinMetric::Mean => stats.sum / n,
                BuiltinMetric::Sum => stats.sum,
                BuiltinMetric::Min if missing => stats.min.min(0.0),
                BuiltinMetric::Min => stats.min,
                BuiltinMetric::Max if missing => stats.max.max(0.0),
                BuiltinMetric::Max => stats.max,
            };
            out.insert(key.clone(), json!(value));
        }
        Some(out)
    }
}

/// The reward dict of one attempt's `result.json`: the Harbor benchmark's
/// `meta.benchmark.harbor.rewards` (every key of `reward.json`, or `reward` of `reward.txt`).
fn rewards_of(result: &Value) -> Option<BTreeMap<String, f64>> {
    let rewards = result
        .pointer("/meta/benchmark/harbor/rewards")?
        .as_object()?;
    let dict: BTreeMap<String, f64> = rewards
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect();
    Some(dict)
}

/// Every trial of the run at `run_dir` folded (each valid attempt of each published task),
/// with Harbor's pass@k over them; each trial's reward dict is also written to `jsonl` (one
/// JSON object a line, `null` without one: a `uv-script` metric's `rewards.jsonl`).
pub fn fold_run(
    run_dir: &Path,
    mut jsonl: Option<&mut dyn std::io::Write>,
) -> (RewardFold, super::pass_at_k::PassAtK) {
    let mut fold = RewardFold::default();
    let mut pass = super::pass_at_k::PassAtK::default();
    for task in published_tasks(run_dir) {
        let mut trials = Vec::new();
        for (_, attempt) in task.record.valid_attempts() {
            let path = task.dir.join(attempt).join("result.json");
            let result: Option<Value> = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            let rewards = result.as_ref().and_then(rewards_of);
            fold.add(rewards.as_ref());
            if let Some(out) = jsonl.as_mut() {
                let line = rewards.as_ref().map_or(Value::Null, |r| json!(r));
                let _ = writeln!(out, "{line}");
            }
            trials.push(rewards);
        }
        pass.add_task(trials.iter().map(Option::as_ref));
    }
    (fold, pass)
}

/// The `extra.dataset_metrics` rows of `declared` over `fold`.
pub fn report(
    declared: &[DeclaredMetrics],
    fold: &RewardFold,
) -> Vec<agentcompass_schema::metrics::DatasetMetric> {
    let mut out = Vec::new();
    for dataset in declared {
        for metric in &dataset.metrics {
            if let Some(value) = fold.value(*metric) {
                out.push(agentcompass_schema::metrics::DatasetMetric {
                    dataset: dataset.dataset.clone(),
                    kind: metric.name().to_string(),
                    script: None,
                    value,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn values(fold: &RewardFold, metric: BuiltinMetric) -> Value {
        Value::Object(fold.value(metric).unwrap())
    }

    /// Reference values from Harbor 0.25's `aggregate_reward_dicts` (Mean/Sum/Min/Max) on the
    /// same inputs.
    #[test]
    fn single_key_dicts_are_named_after_the_metric_and_none_counts_zero() {
        let mut fold = RewardFold::default();
        fold.add(Some(&dict(&[("reward", 1.0)])));
        fold.add(None);
        fold.add(Some(&dict(&[("reward", 0.5)])));
        fold.add(Some(&dict(&[])));
        assert_eq!(values(&fold, BuiltinMetric::Mean), json!({"mean": 0.375}));
        assert_eq!(values(&fold, BuiltinMetric::Sum), json!({"sum": 1.5}));
        assert_eq!(values(&fold, BuiltinMetric::Min), json!({"min": 0.0}));
        assert_eq!(values(&fold, BuiltinMetric::Max), json!({"max": 1.0}));
    }

    #[test]
    fn several_keys_are_aggregated_each_with_missing_ones_zero() {
        let mut fold = RewardFold::default();
        fold.add(Some(&dict(&[("reward", 1.0), ("coverage", 0.5)])));
        fold.add(Some(&dict(&[("reward", 2.0)])));
        fold.add(None);
        assert_eq!(
            values(&fold, BuiltinMetric::Mean),
            json!({"coverage": 0.5 / 3.0, "reward": 1.0})
        );
        assert_eq!(
            values(&fold, BuiltinMetric::Min),
            json!({"coverage": 0.0, "reward": 0.0})
        );
        assert_eq!(
            values(&fold, BuiltinMetric::Max),
            json!({"coverage": 0.5, "reward": 2.0})
        );
        assert_eq!(
            values(&fold, BuiltinMetric::Sum),
            json!({"coverage": 0.5, "reward": 3.0})
        );
    }

    #[test]
    fn no_trial_no_value() {
        assert_eq!(RewardFold::default().value(BuiltinMetric::Mean), None);
    }

    #[test]
    fn declared_kinds_from_provenance() {
        let provenance = json!({"dataset_sources": [
            {"kind": "harbor_registry", "dataset": "a@1", "metrics": [{"type": "max"}, {"type": "uv-script"},
                {"type": "uv-script", "kwargs": {"script_path": "metrics/score.py"}}]},
            {"kind": "harbor_registry", "dataset": "b@2", "metrics": []},
            {"kind": "url", "url": "http://x"},
        ]});
        let (declared, unsupported) = DeclaredMetrics::from_provenance(&provenance);
        assert_eq!(
            declared,
            vec![
                DeclaredMetrics {
                    dataset: "a@1".into(),
                    metrics: vec![BuiltinMetric::Max],
                    scripts: vec!["metrics/score.py".into()],
                },
                DeclaredMetrics {
                    dataset: "b@2".into(),
                    metrics: vec![BuiltinMetric::Mean],
                    scripts: Vec::new(),
                },
            ]
        );
        assert_eq!(unsupported, ["a@1: uv-script"]);
    }
}
