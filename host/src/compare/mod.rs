//! `compare RUN_A RUN_B`: two runs of one benchmark on the tasks they share (a paired design):
//! per metric the difference with a paired bootstrap interval, an exact McNemar test for binary
//! metrics, per-category deltas, the tasks fixed and broken, and with k > 1 pass@k, pass^k and
//! the tasks whose attempts disagree.
//!
//! Reading is streaming per run (one pass over the published tasks, one small record per task);
//! the statistics are `agentcompass-stats`.

mod read;
mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::MetricKind;
use agentcompass_stats::{
    mcnemar, paired_difference, pass_at_k, pass_hat_k, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES,
    DEFAULT_SEED,
};
use serde::Serialize;

pub use read::{read_run, RunTasks, TaskOutcome};
pub use render::render_text;

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run directory could not be read.
    #[error("{path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The runs evaluate different benchmarks.
    #[error(
        "{a} is a run of benchmark `{benchmark_a}`, {b} of `{benchmark_b}`: compare runs of one benchmark"
    )]
    DifferentBenchmarks {
        /// Run A.
        a: PathBuf,
        /// Its benchmark.
        benchmark_a: String,
        /// Run B.
        b: PathBuf,
        /// Its benchmark.
        benchmark_b: String,
    },
    /// The metric asked for is not one of the run's.
    #[error("--metric `{metric}`: run {run} has no such metric (its metrics: {known})")]
    UnknownMetric {
        /// The metric asked for.
        metric: String,
        /// The run.
        run: PathBuf,
        /// Its metric ids.
        known: String,
    },
}

/// One side of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RunSide {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Its run id.
    pub run_id: String,
    /// The model id.
    pub model: String,
    /// The harness id.
    pub harness: String,
    /// Attempts per task.
    pub k: u32,
    /// Published tasks.
    pub tasks: usize,
}

/// The statistical test behind "significantly different".
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Interval {
    /// Lower bound of the difference (B − A).
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level.
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// The resampling seed.
    pub seed: u64,
}

/// McNemar's exact test on the tasks solved by one run only.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct McNemarTest {
    /// Solved by B, not by A.
    pub fixed: u64,
    /// Solved by A, not by B.
    pub broken: u64,
    /// Two-sided exact p-value.
    pub p_value: f64,
}

/// One category's paired difference.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryDelta {
    /// The category.
    pub category: String,
    /// Shared tasks scored in both runs.
    pub tasks: usize,
    /// Mean of run A.
    pub mean_a: f64,
    /// Mean of run B.
    pub mean_b: f64,
    /// B − A.
    pub difference: f64,
}

/// pass@k and pass^k of one run (k > 1), with the unbiased estimators over each task's
/// attempts.
#[derive(Debug, Clone, Serialize)]
pub struct PassK {
    /// Attempts per task.
    pub k: u32,
    /// Mean over tasks of pass@k (at least one of k attempts solves it).
    pub pass_at_k: f64,
    /// Mean over tasks of pass^k (all k attempts solve it).
    pub pass_hat_k: f64,
    /// Tasks whose attempts disagree (some solve it, some do not).
    pub flaky: Vec<String>,
}

/// The comparison of two runs.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The benchmark both runs evaluate.
    pub benchmark: String,
    /// Run A (the baseline).
    pub a: RunSide,
    /// Run B.
    pub b: RunSide,
    /// The metric compared.
    pub metric: String,
    /// Its kind.
    pub kind: MetricKind,
    /// Tasks published in both runs and scored in both.
    pub shared: usize,
    /// Tasks only A published.
    pub only_a: Vec<String>,
    /// Tasks only B published.
    pub only_b: Vec<String>,
    /// Shared tasks without a score in A or B (not scored: model, environment, ... failures).
    pub unscored: Vec<String>,
    /// Mean of A over the shared tasks.
    pub mean_a: Option<f64>,
    /// Mean of B over the shared tasks.
    pub mean_b: Option<f64>,
    /// B − A.
    pub difference: Option<f64>,
    /// Paired bootstrap interval of the difference.
    pub interval: Option<Interval>,
    /// Exact McNemar test (binary metrics).
    pub mcnemar: Option<McNemarTest>,
    /// Per-category differences.
    pub categories: Vec<CategoryDelta>,
    /// Tasks B solves and A does not (binary: solved = at least half the attempts).
    pub fixed: Vec<String>,
    /// Tasks A solves and B does not.
    pub broken: Vec<String>,
    /// pass@k / pass^k of A (k > 1, binary metrics).
    pub pass_k_a: Option<PassK>,
    /// pass@k / pass^k of B.
    pub pass_k_b: Option<PassK>,
}

impl Comparison {
    /// Whether B is significantly worse than A: the difference is below `-max_regression` and
    /// the whole interval lies below zero.
    pub fn significantly_worse(&self, max_regression: f64) -> bool {
        match (self.difference, self.interval) {
            (Some(d), Some(i)) => d < -max_regression && i.high < 0.0,
            _ => false,
        }
    }
}

/// Compares run `b` against run `a` on `metric` (default: the headline metric of `a`).
pub fn compare(a: &Path, b: &Path, metric: Option<&str>) -> Result<Comparison, CompareError> {
    let head_a = read::read_head(a)?;
    let head_b = read::read_head(b)?;
    if head_a.benchmark != head_b.benchmark {
        return Err(CompareError::DifferentBenchmarks {
            a: a.to_path_buf(),
            benchmark_a: head_a.benchmark,
            b: b.to_path_buf(),
            benchmark_b: head_b.benchmark,
        });
    }
    let (metric, kind) = head_a.pick_metric(a, metric)?;
    let runs = [
        read_run(a, &head_a, &metric, kind),
        read_run(b, &head_b, &metric, kind),
    ];
    let [run_a, run_b] = runs;
    Ok(compare_tasks(&head_a, &head_b, run_a, run_b, metric, kind))
}

fn compare_tasks(
    head_a: &read::RunHead,
    head_b: &read::RunHead,
    run_a: RunTasks,
    run_b: RunTasks,
    metric: String,
    kind: MetricKind,
) -> Comparison {
    let pass_k = |run: &RunTasks, k: u32| {
        (kind == MetricKind::BinarySuccess && k > 1).then(|| pass_k_of(run, k))
    };
    let (pass_k_a, pass_k_b) = (pass_k(&run_a, head_a.k), pass_k(&run_b, head_b.k));
    let count_b = run_b.tasks.len();
    let mut b_tasks = run_b.tasks;
    let Pairing {
        only_a,
        unscored,
        va,
        vb,
        solved_a,
        solved_b,
        fixed,
        broken,
        by_category,
    } = Pairing::of(&run_a, &mut b_tasks, kind);
    let only_b: Vec<String> = b_tasks.into_keys().collect();
    let paired = paired_difference(
        &va,
        &vb,
        DEFAULT_RESAMPLES,
        DEFAULT_CONFIDENCE,
        DEFAULT_SEED,
    );
    let mcnemar_test = (kind == MetricKind::BinarySuccess)
        .then(|| mcnemar(&solved_a, &solved_b))
        .flatten()
        .map(|m| McNemarTest {
            fixed: m.fixed,
            broken: m.broken,
            p_value: m.p_value,
        });
    let categories = category_deltas(by_category);
    Comparison {
        benchmark: head_a.benchmark.clone(),
        a: head_a.side(run_a.tasks.len()),
        b: head_b.side(count_b),
        metric,
        kind,
        shared: va.len(),
        only_a,
        only_b,
        unscored,
        mean_a: paired.as_ref().map(|p| p.mean_a),
        mean_b: paired.as_ref().map(|p| p.mean_b),
        difference: paired.as_ref().map(|p| p.difference),
        interval: paired.as_ref().and_then(|p| p.interval).map(|i| Interval {
            low: i.low,
            high: i.high,
            confidence: DEFAULT_CONFIDENCE,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
        }),
        mcnemar: mcnemar_test,
        categories,
        fixed,
        broken,
        pass_k_a,
        pass_k_b,
    }
}

/// Each category's paired means and their difference.
fn category_deltas(by_category: BTreeMap<String, (usize, f64, f64)>) -> Vec<CategoryDelta> {
    by_category
        .into_iter()
        .map(|(category, (n, sa, sb))| {
            let (mean_a, mean_b) = (sa / n as f64, sb / n as f64);
            CategoryDelta {
                category,
                tasks: n,
                mean_a,
                mean_b,
                difference: mean_b - mean_a,
            }
        })
        .collect()
}

/// The tasks of run A matched by id with those of run B.
#[derive(Default)]
struct Pairing {
    /// Only in A.
    only_a: Vec<String>,
    /// In both, unscored in one.
    unscored: Vec<String>,
    /// Paired values of A and B.
    va: Vec<f64>,
    vb: Vec<f64>,
    /// Binary metrics: whether A and B solved each paired task.
    solved_a: Vec<bool>,
    solved_b: Vec<bool>,
    /// Unsolved in A, solved in B; and the reverse.
    fixed: Vec<String>,
    broken: Vec<String>,
    /// Category → (paired tasks, sum of A's values, sum of B's).
    by_category: BTreeMap<String, (usize, f64, f64)>,
}

impl Pairing {
    /// Pairs A's tasks with B's, taking each matched task out of `b_tasks` (what is left there
    /// is only in B).
    fn of(run_a: &RunTasks, b_tasks: &mut BTreeMap<String, TaskOutcome>, kind: MetricKind) -> Self {
        let mut pairing = Pairing::default();
        for (id, ta) in &run_a.tasks {
            let Some(tb) = b_tasks.remove(id) else {
                pairing.only_a.push(id.clone());
                continue;
            };
            let (Some(x), Some(y)) = (ta.value, tb.value) else {
                pairing.unscored.push(id.clone());
                continue;
            };
            pairing.va.push(x);
            pairing.vb.push(y);
            let entry = pairing.by_category.entry(ta.category.clone()).or_default();
            entry.0 += 1;
            entry.1 += x;
            entry.2 += y;
            if kind == MetricKind::BinarySuccess {
                let (sa, sb) = (x >= 0.5, y >= 0.5);
                pairing.solved_a.push(sa);
                pairing.solved_b.push(sb);
                match (sa, sb) {
                    (false, true) => pairing.fixed.push(id.clone()),
                    (true, false) => pairing.broken.push(id.clone()),
                    _ => {}
                }
            }
        }
        pairing
    }
}

/// pass@k, pass^k and the flaky tasks of one run.
fn pass_k_of(run: &RunTasks, k: u32) -> PassK {
    let (mut at, mut hat, mut n) = (0.0, 0.0, 0usize);
    let mut flaky = Vec::new();
    for (id, task) in &run.tasks {
        let attempts = task.attempts.len() as u64;
        let passed = task.attempts.iter().filter(|&&ok| ok).count() as u64;
        if attempts == 0 {
            continue;
        }
        let kk = u64::from(k).min(attempts);
        if let (Some(a), Some(h)) = (
            pass_at_k(attempts, passed, kk),
            pass_hat_k(attempts, passed, kk),
        ) {
            at += a;
            hat += h;
            n += 1;
        }
        if passed > 0 && passed < attempts {
            flaky.push(id.clone());
        }
    }
    let mean = |sum: f64| if n == 0 { 0.0 } else { sum / n as f64 };
    PassK {
        k,
        pass_at_k: mean(at),
        pass_hat_k: mean(hat),
        flaky,
    }
}
