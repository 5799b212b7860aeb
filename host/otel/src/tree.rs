//! The span tree of a run: run → task → attempt → phase → model call / tool call (module
//! doc of the crate). This module builds the run, task and attempt spans and the phases;
//! `agent` builds an agent phase's model and tool calls from its ATIF trajectory.

use std::time::SystemTime;

use agentcompass_plugin_api::contracts::{MetricValue, TokenUsage};
use agentcompass_schema::atif::Trajectory;
use agentcompass_schema::attempt::AttemptRecord;
use agentcompass_schema::run_info::RunInfo;
use opentelemetry::trace::SpanId;

use crate::agent::{agent_phase, trajectory_bounds};
use crate::attr;
use crate::spans::{parse_time, Attrs, NewSpan, Spans};
use crate::timeline::AttemptTimes;

/// What the spans say of a run (from its `run_info.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeta {
    /// The run id.
    pub run_id: String,
    /// The benchmark's id.
    pub benchmark: String,
    /// The harness's id.
    pub harness: String,
    /// The model's id.
    pub model: String,
    /// The environment's id.
    pub environment: String,
    /// When the run started (`run_info.json` `started_at`).
    pub started_at: Option<SystemTime>,
    /// When it finished.
    pub finished_at: Option<SystemTime>,
    /// Its status (`completed`, ...).
    pub status: String,
}

impl RunMeta {
    /// The run of a (redacted) `run_info.json`.
    pub fn from_run_info(info: &RunInfo) -> RunMeta {
        let head = info.request_head();
        RunMeta {
            run_id: info.run_id.clone(),
            benchmark: head.benchmark.id,
            harness: head.harness.id,
            model: head.model.id,
            environment: head.environment.id,
            started_at: parse_time(Some(&info.started_at)),
            finished_at: parse_time(info.finished_at.as_deref()),
            status: serde_json::to_value(info.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        }
    }

    /// The trace's seed: the run's identity (two runs with one id but other components or
    /// start times get different traces).
    pub(crate) fn seed(&self) -> String {
        let started = self
            .started_at
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!(
            "{}|{}|{}|{}|{started}",
            self.run_id, self.benchmark, self.harness, self.model
        )
    }
}

/// One attempt to turn into spans.
#[derive(Debug, Clone, Copy)]
pub struct AttemptInput<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// The attempt's number.
    pub attempt: u32,
    /// Its `result.json`.
    pub record: &'a AttemptRecord,
    /// Its ATIF trajectories: one, or one per step of a multi-step task (with the step's name).
    pub trajectories: &'a [(Option<String>, Trajectory)],
    /// Its recorded times, when the run has them.
    pub times: Option<&'a AttemptTimes>,
}

/// Options of the conversion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanOptions {
    /// Export prompt and completion contents, tool arguments and results (`input.value`,
    /// `output.value`, `tool.parameters`); off by default.
    pub content: bool,
}

pub(crate) fn run_key() -> String {
    "run".to_string()
}

pub(crate) fn task_key(task: &str) -> String {
    format!("task:{task}")
}

/// The run's root span.
pub(crate) fn push_run(spans: &mut Spans, run: &RunMeta, start: SystemTime, end: SystemTime) {
    let mut attrs = Attrs::default();
    attrs
        .str(attr::SPAN_KIND, attr::CHAIN)
        .str(attr::RUN_ID, run.run_id.clone())
        .opt_str(attr::BENCHMARK, Some(&run.benchmark))
        .opt_str(attr::HARNESS, Some(&run.harness))
        .opt_str(attr::ENVIRONMENT, Some(&run.environment))
        .opt_str(attr::LLM_MODEL, Some(&run.model))
        .opt_str(attr::GEN_AI_REQUEST_MODEL, Some(&run.model))
        .opt_str(attr::STATUS, Some(&run.status));
    let failed = matches!(run.status.as_str(), "failed" | "error" | "interrupted");
    spans.push(NewSpan {
        key: run_key(),
        parent: None,
        name: format!("run {}", run.run_id),
        start,
        end,
        attrs,
        error: failed.then(|| format!("run {}", run.status)),
    });
}

/// A task's span (a child of the run's).
pub(crate) fn push_task(
    spans: &mut Spans,
    task: &str,
    attempts: u64,
    start: SystemTime,
    end: SystemTime,
) {
    let mut attrs = Attrs::default();
    attrs
        .str(attr::SPAN_KIND, attr::CHAIN)
        .str(attr::TASK_ID, task)
        .int(attr::ATTEMPTS, Some(attempts));
    let parent = Some(spans.id(&run_key()));
    spans.push(NewSpan {
        key: task_key(task),
        parent,
        name: format!("task {task}"),
        start,
        end,
        attrs,
        error: None,
    });
}

/// An attempt's span with its phases and their model and tool calls; returns the attempt's
/// start and end (for its task's span).
pub(crate) fn push_attempt(
    spans: &mut Spans,
    run: &RunMeta,
    input: &AttemptInput<'_>,
    options: SpanOptions,
) -> (SystemTime, SystemTime) {
    let key = format!("attempt:{}:{}", input.task_id, input.attempt);
    let attempt_id = spans.id(&key);
    let bounds: Vec<(SystemTime, SystemTime)> = input
        .trajectories
        .iter()
        .filter_map(|(_, t)| trajectory_bounds(t))
        .collect();
    let recorded = record_bounds(input.record);
    let times = input.times.cloned().unwrap_or_default();
    let fallback = run.started_at.unwrap_or(SystemTime::UNIX_EPOCH);
    let start = times
        .started
        .or(times.phases.first().map(|p| p.1))
        .or(recorded.map(|r| r.0))
        .or(bounds.iter().map(|b| b.0).min())
        .unwrap_or(fallback);
    let end = times
        .finished
        .or(recorded.map(|r| r.1))
        .or(bounds.iter().map(|b| b.1).max())
        .unwrap_or(start);
    let agent_segments = phase_spans(spans, &key, attempt_id, &times, end);
    for (i, (step, recorded_trajectory)) in input.trajectories.iter().enumerate() {
        // An agent that did not name its model ran the run's.
        let mut named;
        let mut trajectory = recorded_trajectory;
        if trajectory.agent.model_name.is_none() && !run.model.is_empty() {
            named = recorded_trajectory.clone();
            named.agent.model_name = Some(run.model.clone());
            trajectory = &named;
        }
        let window = if agent_segments.len() == input.trajectories.len() {
            Some(agent_segments[i])
        } else if input.trajectories.len() == 1 {
            recorded.or(bounds.first().copied())
        } else {
            None
        };
        let phase_key = format!("{key}:agent:{i}");
        agent_phase(
            spans,
            attempt_id,
            &phase_key,
            step.as_deref(),
            trajectory,
            window,
            options,
        );
    }
    let attrs = attempt_attrs(input);
    let status = serde_json::to_value(input.record.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let parent = Some(spans.id(&task_key(input.task_id)));
    spans.push(NewSpan {
        key,
        parent,
        name: format!("attempt {}", input.attempt),
        start,
        end,
        attrs,
        error: (status != "completed").then(|| format!("attempt {status}")),
    });
    (start, end.max(start))
}

/// The phases the run recorded, as spans under the attempt; returns the agent phases'
/// (`run_harness`) bounds, which the trajectories' spans take. `evaluate` is named
/// `verification`.
fn phase_spans(
    spans: &mut Spans,
    key: &str,
    attempt_id: SpanId,
    times: &AttemptTimes,
    attempt_end: SystemTime,
) -> Vec<(SystemTime, SystemTime)> {
    let mut agent = Vec::new();
    for (i, (phase, start)) in times.phases.iter().enumerate() {
        let end = times.phases.get(i + 1).map(|p| p.1).unwrap_or(attempt_end);
        if phase == "run_harness" {
            agent.push((*start, end));
            continue;
        }
        let name = if phase == "evaluate" {
            "verification"
        } else {
            phase.as_str()
        };
        let mut attrs = Attrs::default();
        attrs
            .str(attr::SPAN_KIND, attr::CHAIN)
            .str(attr::PHASE, phase.clone());
        spans.push(NewSpan {
            key: format!("{key}:phase:{i}"),
            parent: Some(attempt_id),
            name: name.to_string(),
            start: *start,
            end,
            attrs,
            error: None,
        });
    }
    agent
}

/// The record's own trajectory times (`trajectory.started_at`/`finished_at`).
fn record_bounds(record: &AttemptRecord) -> Option<(SystemTime, SystemTime)> {
    let start = parse_time(record.trajectory.get("started_at").and_then(|v| v.as_str()))?;
    let end = parse_time(
        record
            .trajectory
            .get("finished_at")
            .and_then(|v| v.as_str()),
    )
    .unwrap_or(start);
    Some((start, end.max(start)))
}

/// The attempt's outcome: status, reward and every metric, its recorded usage.
fn attempt_attrs(input: &AttemptInput<'_>) -> Attrs {
    let record = input.record;
    let usage: TokenUsage = record
        .meta
        .harness
        .telemetry
        .get("model_usage")
        .and_then(|u| serde_json::from_value(u.clone()).ok())
        .unwrap_or_default();
    let mut attrs = Attrs::default();
    attrs
        .str(attr::SPAN_KIND, attr::CHAIN)
        .str(attr::TASK_ID, input.task_id)
        .int(attr::ATTEMPT, Some(u64::from(input.attempt)))
        .int(attr::RETRY_COUNT, Some(u64::from(record.retry_count)))
        .int(
            attr::ISSUES,
            Some(record.issues.as_array().map_or(0, |a| a.len() as u64)),
        );
    if let Ok(serde_json::Value::String(status)) = serde_json::to_value(record.status) {
        attrs.str(attr::STATUS, status);
    }
    attrs
        .float(
            attr::REWARD,
            record.metrics.get("reward").map(|m| m.as_f64()),
        )
        .int(attr::LLM_PROMPT_TOKENS, Some(usage.prompt_tokens))
        .int(attr::LLM_COMPLETION_TOKENS, Some(usage.completion_tokens))
        .int(
            attr::LLM_TOTAL_TOKENS,
            Some(usage.prompt_tokens + usage.completion_tokens),
        )
        .int(attr::LLM_CACHE_READ, Some(usage.cached_tokens))
        .float(attr::LLM_COST, usage.cost_usd)
        .int(attr::GEN_AI_INPUT_TOKENS, Some(usage.prompt_tokens))
        .int(attr::GEN_AI_OUTPUT_TOKENS, Some(usage.completion_tokens))
        .int(attr::GEN_AI_CACHE_READ, Some(usage.cached_tokens))
        .int(attr::REQUESTS, Some(usage.requests));
    for (id, value) in &record.metrics {
        let value = match *value {
            MetricValue::Bool(b) => opentelemetry::Value::Bool(b),
            MetricValue::Int(i) => opentelemetry::Value::I64(i),
            MetricValue::Float(f) => opentelemetry::Value::F64(f),
        };
        attrs.dynamic(format!("{}{id}", attr::METRIC_PREFIX), value);
    }
    attrs
}
