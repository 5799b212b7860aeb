//! Time: per-step model latency (`LLMInferLatencyAnalyzer`), per-step environment action
//! latency (`ToolExecutionLatencyAnalyzer`) and the trajectory's wall time
//! (`TrajectoryTimeCostAnalyzer`).

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo, JsonMap};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{ratio_badcase, skipped, Number, Options};
use crate::py::{percentile, py_str, round};
use crate::trajectory::{all_steps, trajectory, Step, Trajectory, NO_TRAJECTORY};

/// The options shared by both latency analyzers (upstream's `LatencyAnalyzerBase.conf`).
fn latency_defaults() -> Value {
    json!({
        "threshold": 0.0,
        "only_incorrect": false,
        "p90_threshold": null,
        "p95_threshold": null,
        "max_threshold": null,
        "step_threshold": null,
    })
}

/// The distribution fields of both latency analyzers.
const LATENCY_DISTRIBUTION: &[(&str, &str)] = &[
    ("p90_ms", "numeric_stats"),
    ("p95_ms", "numeric_stats"),
    ("max_ms", "numeric_stats"),
];

/// Statistics of one per-step metric over the model steps (steps with an assistant turn,
/// as upstream): `total_steps` (the count), `mean_ms`, `p50_ms`, `p90_ms`, `p95_ms`,
/// `max_ms`. Score: `mean_ms`. Thresholds (all `null` by default): `p90_threshold`,
/// `p95_threshold`, `max_threshold` (a statistic above it is a trigger) and
/// `step_threshold` (steps above it are counted; with `threshold` `0` any such step is a
/// bad case, otherwise an exceeded share `>= threshold`). With no threshold set the
/// analyzer only measures (`is_badcase: null`, as upstream always answers).
fn latency(input: &AnalysisInput, field: &str) -> Result<AnalysisOutcome> {
    let options = LatencyOptions::parse(&input.options)?;
    let Some(traj) = trajectory(&input.result) else {
        return Ok(skipped(NO_TRAJECTORY));
    };
    let mut values: Vec<f64> = all_steps(traj)
        .iter()
        .filter(|step| step.assistant().is_some())
        .filter_map(|step| step.metric_f64(field))
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return Ok(skipped(&format!("no {field} data in trajectory")));
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let p50 = percentile(&values, 50.0);
    let p90 = percentile(&values, 90.0);
    let p95 = percentile(&values, 95.0);
    let max = values[n - 1];
    let mean = values.iter().sum::<f64>() / n as f64;

    let mut triggers = Vec::new();
    for (name, stat, limit) in [
        ("p90", p90, options.p90),
        ("p95", p95, options.p95),
        ("max", max, options.max),
    ] {
        if let Some(limit) = limit {
            if stat > limit.value {
                triggers.push(format!(
                    "{name}={stat:.1}ms > threshold={}ms",
                    py_str(limit.raw)
                ));
            }
        }
    }
    let step = options.step.map(|t| {
        let exceeded = values.iter().filter(|v| **v > t.value).count();
        (t.raw, exceeded)
    });
    let step_badcase =
        step.is_some_and(|(_, e)| ratio_badcase(e as f64 / n as f64, e, options.threshold));
    let any_threshold = options.p90.is_some()
        || options.p95.is_some()
        || options.max.is_some()
        || options.step.is_some();
    let is_badcase = any_threshold.then_some(!triggers.is_empty() || step_badcase);
    let details = LatencyDetails {
        metric: field,
        total_steps: n,
        mean_ms: round(mean, 1),
        p50_ms: round(p50, 1),
        p90_ms: round(p90, 1),
        p95_ms: round(p95, 1),
        max_ms: round(max, 1),
        triggers,
        step_threshold_ms: step.map(|(raw, _)| raw),
        exceeded_steps: step.map(|(_, e)| e),
        exceeded_ratio: step.map(|(_, e)| round(e as f64 / n as f64, 4)),
    };
    Ok(AnalysisOutcome {
        is_badcase,
        details: json!(details),
        score: Some(round(mean, 1)),
        extra: None,
    })
}

/// The options of a latency analyzer, read once (in upstream's order, which decides which
/// wrongly typed option an error names).
struct LatencyOptions<'a> {
    /// `threshold`: the exceeded-step share that is a bad case (`0`: any).
    threshold: f64,
    /// `p90_threshold`.
    p90: Option<Number<'a>>,
    /// `p95_threshold`.
    p95: Option<Number<'a>>,
    /// `max_threshold`.
    max: Option<Number<'a>>,
    /// `step_threshold`.
    step: Option<Number<'a>>,
}

impl<'a> LatencyOptions<'a> {
    /// Reads the options.
    fn parse(options: &'a JsonMap) -> Result<Self> {
        let options = Options(options);
        let step = options.number("step_threshold")?;
        let threshold = options.f64_or("threshold", 0.0)?;
        Ok(LatencyOptions {
            threshold,
            p90: options.number("p90_threshold")?,
            p95: options.number("p95_threshold")?,
            max: options.number("max_threshold")?,
            step,
        })
    }
}

/// The details of a latency analyzer.
#[derive(Serialize)]
struct LatencyDetails<'a> {
    /// The metric field read.
    metric: &'a str,
    /// How many steps had it.
    total_steps: usize,
    /// The mean.
    mean_ms: f64,
    /// The median.
    p50_ms: f64,
    /// The 90th percentile.
    p90_ms: f64,
    /// The 95th percentile.
    p95_ms: f64,
    /// The maximum.
    max_ms: f64,
    /// The statistics above their thresholds (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    triggers: Vec<String>,
    /// `step_threshold` as written (with it set).
    #[serde(skip_serializing_if = "Option::is_none")]
    step_threshold_ms: Option<&'a Value>,
    /// The steps above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    exceeded_steps: Option<usize>,
    /// Their share.
    #[serde(skip_serializing_if = "Option::is_none")]
    exceeded_ratio: Option<f64>,
}

/// Model inference latency per step (`metric.llm_infer_ms`).
#[derive(Debug, Clone, Copy, Default)]
pub struct LlmInferLatencyAnalyzer;

impl LlmInferLatencyAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "LLMInferLatencyAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect abnormal LLM inference latency from per-step llm_infer_ms against \
             p90/p95/max thresholds.",
            category::EFFICIENCY,
            latency_defaults(),
            LATENCY_DISTRIBUTION,
        )
    }
}

impl Analyzer for LlmInferLatencyAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        latency(input, "llm_infer_ms")
    }
}

/// Environment (tool) action latency per step (`metric.env_action_ms`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolExecutionLatencyAnalyzer;

impl ToolExecutionLatencyAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "ToolExecutionLatencyAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Detect abnormal environment/tool action latency from per-step env_action_ms \
             against p90/p95/max thresholds.",
            category::ENV_FRAMEWORK_ERROR,
            latency_defaults(),
            LATENCY_DISTRIBUTION,
        )
    }
}

impl Analyzer for ToolExecutionLatencyAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        latency(input, "env_action_ms")
    }
}

/// The trajectory's wall time, from its `started_at`/`finished_at` (upstream), else from
/// the first step's `started_at` and the last step's `finished_at`. Timestamps are ISO 8601:
/// RFC 3339 with `Z` or an offset, a space instead of `T`, or both without an offset
/// (Python's `fromisoformat`). Details: `started_at`, `finished_at`, `duration_seconds`,
/// `total_steps` (+ `timestamps_from: "steps"` when the steps gave them). Option
/// `max_seconds` (default `null`): a longer run is a bad case; without it the analyzer only
/// measures (`is_badcase: null`, as upstream). No score, as upstream.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrajectoryTimeCostAnalyzer;

impl TrajectoryTimeCostAnalyzer {
    /// The analyzer id.
    pub const ID: &'static str = "TrajectoryTimeCostAnalyzer";

    /// Its description.
    pub fn info() -> ComponentInfo {
        info(
            Self::ID,
            "Measure total trajectory wall-clock duration from started_at/finished_at and flag \
             runs exceeding max_seconds.",
            category::EFFICIENCY,
            json!({"only_incorrect": false, "max_seconds": null}),
            &[
                ("duration_seconds", "numeric_stats"),
                ("total_steps", "numeric_stats"),
            ],
        )
    }
}

/// A parsed timestamp: an instant (it had an offset) or a naive civil time.
#[derive(Debug, Clone, Copy)]
enum Instant {
    Absolute(jiff::Timestamp),
    Naive(jiff::civil::DateTime),
}

/// Parses an ISO 8601 timestamp as Python's `fromisoformat` does (space or `T`).
fn parse_ts(text: &str) -> Option<Instant> {
    let normalized = text.trim().replacen(' ', "T", 1);
    if let Ok(ts) = normalized.parse::<jiff::Timestamp>() {
        return Some(Instant::Absolute(ts));
    }
    normalized
        .parse::<jiff::civil::DateTime>()
        .ok()
        .map(Instant::Naive)
}

/// Seconds from `start` to `end`; `None` when one has an offset and the other has not
/// (Python refuses to subtract those).
fn seconds_between(start: Instant, end: Instant) -> Option<f64> {
    match (start, end) {
        (Instant::Absolute(a), Instant::Absolute(b)) => {
            Some((b.as_nanosecond() - a.as_nanosecond()) as f64 / 1e9)
        }
        (Instant::Naive(a), Instant::Naive(b)) => Some(b.duration_since(a).as_secs_f64()),
        _ => None,
    }
}

/// Why the wall time is unknown.
const NO_TIMESTAMPS: &str = "trajectory missing or unparseable started_at / finished_at";

/// The trajectory's `started_at` and `finished_at`, each from the trajectory or else from
/// the first / last step that has one, and whether a step gave one.
fn endpoints<'a>(traj: Trajectory<'a>, steps: &[Step<'a>]) -> Option<(&'a str, &'a str, bool)> {
    match (traj.started_at_str(), traj.finished_at_str()) {
        (Some(s), Some(f)) => Some((s, f, false)),
        (own_start, own_finish) => {
            let first = || steps.iter().find_map(Step::started_at);
            let last = || steps.iter().rev().find_map(Step::finished_at);
            let start = own_start.or_else(first)?;
            let finish = own_finish.or_else(last)?;
            Some((start, finish, true))
        }
    }
}

/// The details of [`TrajectoryTimeCostAnalyzer`].
#[derive(Serialize)]
struct TimeCostDetails<'a> {
    /// The start, as written.
    started_at: &'a str,
    /// The end, as written.
    finished_at: &'a str,
    /// The wall time.
    duration_seconds: f64,
    /// The step count.
    total_steps: usize,
    /// `"steps"` when the steps gave a timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamps_from: Option<&'static str>,
    /// Why it is a bad case (omitted when it is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    triggers: Option<[String; 1]>,
}

impl Analyzer for TrajectoryTimeCostAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let max_seconds = Options(&input.options).number("max_seconds")?;
        let Some(traj) = trajectory(&input.result) else {
            return Ok(skipped(NO_TRAJECTORY));
        };
        let steps = all_steps(traj);
        let Some((started, finished, from_steps)) = endpoints(Trajectory::from(traj), &steps)
        else {
            return Ok(skipped(NO_TIMESTAMPS));
        };
        let Some(duration) = parse_ts(started)
            .zip(parse_ts(finished))
            .and_then(|(s, f)| seconds_between(s, f))
        else {
            return Ok(skipped(NO_TIMESTAMPS));
        };
        let over = max_seconds.map(|max| (duration > max.value, max.raw));
        let triggers = over.and_then(|(over, raw)| {
            over.then(|| {
                [format!(
                    "duration={duration:.1}s > max_seconds={}s",
                    py_str(raw)
                )]
            })
        });
        let details = TimeCostDetails {
            started_at: started,
            finished_at: finished,
            duration_seconds: round(duration, 2),
            total_steps: steps.len(),
            timestamps_from: from_steps.then_some("steps"),
            triggers,
        };
        Ok(AnalysisOutcome {
            is_badcase: over.map(|(over, _)| over),
            details: json!(details),
            score: None,
            extra: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::testkit::{result, run, run_with, step, survives_odd_json};

    fn timed(id: u64, llm: f64, env: Option<f64>) -> Value {
        let mut s = step(id, "x", &[]);
        s["metric"]["llm_infer_ms"] = json!(llm);
        if let Some(env) = env {
            s["metric"]["env_action_ms"] = json!(env);
        }
        s
    }

    #[test]
    fn llm_latency_statistics_and_thresholds() {
        let info = LlmInferLatencyAnalyzer::info();
        let steps: Vec<Value> = (1..=5).map(|i| timed(i, i as f64 * 100.0, None)).collect();
        let out = run(&LlmInferLatencyAnalyzer, &info, result(steps.clone()));
        assert_eq!(out.is_badcase, None);
        assert_eq!(out.score, Some(300.0));
        assert_eq!(
            out.details,
            json!({"metric": "llm_infer_ms", "total_steps": 5, "mean_ms": 300.0, "p50_ms": 300.0,
                   "p90_ms": 460.0, "p95_ms": 480.0, "max_ms": 500.0})
        );
        let out = run_with(
            &LlmInferLatencyAnalyzer,
            &info,
            result(steps.clone()),
            json!({"p90_threshold": 400, "max_threshold": 1000}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(
            out.details["triggers"],
            json!(["p90=460.0ms > threshold=400ms"])
        );
        let out = run_with(
            &LlmInferLatencyAnalyzer,
            &info,
            result(steps.clone()),
            json!({"max_threshold": 1000}),
        );
        assert_eq!(out.is_badcase, Some(false));
        let out = run_with(
            &LlmInferLatencyAnalyzer,
            &info,
            result(steps),
            json!({"step_threshold": 350}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(out.details["exceeded_steps"], 2);
        assert_eq!(out.details["exceeded_ratio"], 0.4);
        assert_eq!(out.details["step_threshold_ms"], 350);
    }

    #[test]
    fn tool_latency_reads_env_action_ms() {
        let info = ToolExecutionLatencyAnalyzer::info();
        let steps = vec![
            timed(1, 1.0, Some(10.0)),
            timed(2, 1.0, Some(30.0)),
            timed(3, 1.0, None),
        ];
        let out = run(&ToolExecutionLatencyAnalyzer, &info, result(steps));
        assert_eq!(out.score, Some(20.0));
        assert_eq!(out.details["total_steps"], 2);
        assert_eq!(out.details["metric"], "env_action_ms");
        let out = run(
            &ToolExecutionLatencyAnalyzer,
            &info,
            result(vec![timed(1, 1.0, None)]),
        );
        assert_eq!(out.is_badcase, None);
        assert_eq!(
            out.details,
            json!({"skipped": "no env_action_ms data in trajectory"})
        );
        survives_odd_json(&LlmInferLatencyAnalyzer, &LlmInferLatencyAnalyzer::info());
        survives_odd_json(&ToolExecutionLatencyAnalyzer, &info);
    }

    #[test]
    fn wall_time_from_the_trajectory_or_its_steps() {
        let info = TrajectoryTimeCostAnalyzer::info();
        let mut r = result(vec![step(1, "x", &[])]);
        r["trajectory"]["started_at"] = json!("2026-06-10 09:22:31.500000+00:00");
        r["trajectory"]["finished_at"] = json!("2026-06-10T11:22:32.750+02:00");
        let out = run(&TrajectoryTimeCostAnalyzer, &info, r.clone());
        assert_eq!(out.is_badcase, None);
        assert_eq!(out.score, None);
        assert_eq!(out.details["duration_seconds"], 1.25);
        assert_eq!(out.details["total_steps"], 1);
        let out = run_with(
            &TrajectoryTimeCostAnalyzer,
            &info,
            r,
            json!({"max_seconds": 1}),
        );
        assert_eq!(out.is_badcase, Some(true));
        assert_eq!(
            out.details["triggers"],
            json!(["duration=1.2s > max_seconds=1s"])
        );

        let mut a = step(1, "x", &[]);
        a["started_at"] = json!("2026-01-01T00:00:00Z");
        let mut b = step(2, "y", &[]);
        b["finished_at"] = json!("2026-01-01T00:01:30.5Z");
        let out = run_with(
            &TrajectoryTimeCostAnalyzer,
            &info,
            result(vec![a, b]),
            json!({"max_seconds": 600}),
        );
        assert_eq!(out.is_badcase, Some(false));
        assert_eq!(out.details["duration_seconds"], 90.5);
        assert_eq!(out.details["timestamps_from"], "steps");

        let mut naive = result(vec![]);
        naive["trajectory"]["started_at"] = json!("2026-01-01T00:00:00");
        naive["trajectory"]["finished_at"] = json!("2026-01-01T00:00:10");
        assert_eq!(
            run(&TrajectoryTimeCostAnalyzer, &info, naive.clone()).details["duration_seconds"],
            10.0
        );
        naive["trajectory"]["finished_at"] = json!("2026-01-01T00:00:10Z");
        assert_eq!(
            run(&TrajectoryTimeCostAnalyzer, &info, naive).is_badcase,
            None
        );
        survives_odd_json(&TrajectoryTimeCostAnalyzer, &info);
    }
}
