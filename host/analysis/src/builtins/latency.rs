//! Time: per-step model latency (`LLMInferLatencyAnalyzer`), per-step environment action
//! latency (`ToolExecutionLatencyAnalyzer`) and the trajectory's wall time
//! (`TrajectoryTimeCostAnalyzer`).

use agentcompass_plugin_api::contracts::{AnalysisInput, AnalysisOutcome, ComponentInfo};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Result;
use serde_json::{json, Value};

use super::{category, info};
use crate::options::{ratio_badcase, skipped, Options};
use crate::py::{percentile, py_str, round};
use crate::trajectory::{all_steps, trajectory, NO_TRAJECTORY};

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
    let options = Options(&input.options);
    let p90_t = options.get("p90_threshold");
    let p95_t = options.get("p95_threshold");
    let max_t = options.get("max_threshold");
    let step_t = options.opt_f64("step_threshold")?;
    let threshold = options.f64_or("threshold", 0.0)?;
    let p90_limit = options.opt_f64("p90_threshold")?;
    let p95_limit = options.opt_f64("p95_threshold")?;
    let max_limit = options.opt_f64("max_threshold")?;
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
    for (name, stat, limit, raw) in [
        ("p90", p90, p90_limit, p90_t),
        ("p95", p95, p95_limit, p95_t),
        ("max", max, max_limit, max_t),
    ] {
        if let (Some(limit), Some(raw)) = (limit, raw) {
            if stat > limit {
                triggers.push(format!("{name}={stat:.1}ms > threshold={}ms", py_str(raw)));
            }
        }
    }
    let exceeded = step_t.map(|t| values.iter().filter(|v| **v > t).count());
    let step_badcase = exceeded.is_some_and(|e| ratio_badcase(e as f64 / n as f64, e, threshold));
    let any_threshold =
        p90_limit.is_some() || p95_limit.is_some() || max_limit.is_some() || step_t.is_some();

    let mut details = json!({
        "metric": field,
        "total_steps": n,
        "mean_ms": round(mean, 1),
        "p50_ms": round(p50, 1),
        "p90_ms": round(p90, 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(max, 1),
    });
    if !triggers.is_empty() {
        details["triggers"] = json!(triggers);
    }
    if let (Some(t), Some(e)) = (options.get("step_threshold"), exceeded) {
        details["step_threshold_ms"] = t.clone();
        details["exceeded_steps"] = json!(e);
        details["exceeded_ratio"] = json!(round(e as f64 / n as f64, 4));
    }
    Ok(AnalysisOutcome {
        is_badcase: any_threshold.then_some(!triggers.is_empty() || step_badcase),
        details,
        score: Some(round(mean, 1)),
        extra: None,
    })
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

impl Analyzer for TrajectoryTimeCostAnalyzer {
    fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
        let options = Options(&input.options);
        let max_seconds = options.opt_f64("max_seconds")?;
        let Some(traj) = trajectory(&input.result) else {
            return Ok(skipped(NO_TRAJECTORY));
        };
        let steps = all_steps(traj);
        let own = (
            traj.get("started_at").and_then(Value::as_str),
            traj.get("finished_at").and_then(Value::as_str),
        );
        let (started, finished, from_steps) = match own {
            (Some(s), Some(f)) => (s, f, false),
            _ => {
                let first = steps.iter().find_map(|s| s.str_field("started_at"));
                let last = steps.iter().rev().find_map(|s| s.str_field("finished_at"));
                match (own.0.or(first), own.1.or(last)) {
                    (Some(s), Some(f)) => (s, f, true),
                    _ => {
                        return Ok(skipped(
                            "trajectory missing or unparseable started_at / finished_at",
                        ))
                    }
                }
            }
        };
        let Some(duration) = parse_ts(started)
            .zip(parse_ts(finished))
            .and_then(|(s, f)| seconds_between(s, f))
        else {
            return Ok(skipped(
                "trajectory missing or unparseable started_at / finished_at",
            ));
        };
        let mut details = json!({
            "started_at": started,
            "finished_at": finished,
            "duration_seconds": round(duration, 2),
            "total_steps": steps.len(),
        });
        if from_steps {
            details["timestamps_from"] = json!("steps");
        }
        let mut is_badcase = None;
        if let Some(max) = max_seconds {
            let over = duration > max;
            if over {
                let raw = options.get("max_seconds").map(py_str).unwrap_or_default();
                details["triggers"] =
                    json!([format!("duration={duration:.1}s > max_seconds={raw}s")]);
            }
            is_badcase = Some(over);
        }
        Ok(AnalysisOutcome {
            is_badcase,
            details,
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
