//! A finished run's directory as spans: its `run_info.json`, every published task's attempts
//! (`result.json` and the ATIF trajectories next to it) and, when present, the times of its
//! `progress.jsonl`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentcompass_results::store::{published_tasks, read_run_info};
use agentcompass_schema::atif::{Trajectory, ATIF_PATH};
use agentcompass_schema::attempt::{AttemptRecord, RESULT_FILE};
use opentelemetry_sdk::trace::SpanData;

use crate::spans::Spans;
use crate::timeline::Timeline;
use crate::tree::{push_attempt, push_run, push_task, AttemptInput, RunMeta, SpanOptions};
use crate::OtelError;

/// The spans of the run at `run_dir`: one trace, the run's span its root.
pub fn run_spans(run_dir: &Path, options: SpanOptions) -> Result<Vec<SpanData>, OtelError> {
    let info = read_run_info(run_dir).map_err(|e| OtelError::Read(e.to_string()))?;
    let run = RunMeta::from_run_info(&info);
    let timeline = Timeline::read(run_dir);
    let mut spans = Spans::new(&run.seed());
    let mut bounds: Vec<(SystemTime, SystemTime)> = Vec::new();
    let mut tasks = published_tasks(run_dir).collect::<Vec<_>>();
    tasks.sort_by(|a, b| a.record.task_id.cmp(&b.record.task_id));
    for task in tasks {
        let task_id = task.record.task_id.clone();
        let mut task_bounds = Vec::new();
        let attempts = task.record.valid_attempts();
        for (n, dir) in &attempts {
            let dir = task.dir.join(dir);
            let record = read_record(&dir.join(RESULT_FILE))?;
            let mut trajectories = read_trajectories(&dir);
            step_order(&record, &mut trajectories);
            let key = (task_id.clone(), *n);
            let input = AttemptInput {
                task_id: &task_id,
                attempt: *n,
                record: &record,
                trajectories: &trajectories,
                times: timeline.attempts.get(&key),
            };
            task_bounds.push(push_attempt(&mut spans, &run, &input, options));
        }
        let recorded = timeline.tasks.get(&task_id).copied().unwrap_or_default();
        let Some(start) = recorded.0.or(task_bounds.iter().map(|b| b.0).min()) else {
            continue;
        };
        let end = recorded
            .1
            .or(task_bounds.iter().map(|b| b.1).max())
            .unwrap_or(start);
        push_task(&mut spans, &task_id, attempts.len() as u64, start, end);
        bounds.push((start, end));
    }
    let start = timeline
        .run_started
        .or(run.started_at)
        .or(bounds.iter().map(|b| b.0).min())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let end = timeline
        .run_finished
        .or(run.finished_at)
        .or(bounds.iter().map(|b| b.1).max())
        .unwrap_or(start);
    push_run(&mut spans, &run, start, end);
    Ok(spans.out)
}

fn read_record(path: &Path) -> Result<AttemptRecord, OtelError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| OtelError::Read(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| OtelError::Read(format!("{}: {e}", path.display())))
}

/// A multi-step attempt's trajectories in the order its steps ran (`meta.benchmark.steps`
/// names them in order), which is the order of its agent phases in `progress.jsonl`.
fn step_order(record: &AttemptRecord, trajectories: &mut [(Option<String>, Trajectory)]) {
    let names: Vec<&str> = record
        .meta
        .benchmark
        .get(agentcompass_schema::attempt::STEPS_META_KEY)
        .and_then(|s| s.as_array())
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s.get("name").and_then(|n| n.as_str()))
                .collect()
        })
        .unwrap_or_default();
    trajectories.sort_by_key(|(step, _)| {
        step.as_deref()
            .and_then(|step| names.iter().position(|n| *n == step))
            .unwrap_or(usize::MAX)
    });
}

/// The attempt's trajectory, or its steps' (`steps/<step>/agent/trajectory.json`, by step
/// name); unreadable ones are left out.
pub(crate) fn read_trajectories(attempt_dir: &Path) -> Vec<(Option<String>, Trajectory)> {
    let read = |path: &Path| -> Option<Trajectory> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    };
    if let Some(t) = read(&attempt_dir.join(ATIF_PATH)) {
        return vec![(None, t)];
    }
    let mut steps: BTreeMap<String, PathBuf> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(attempt_dir.join("steps")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            steps.insert(name, entry.path().join(ATIF_PATH));
        }
    }
    steps
        .into_iter()
        .filter_map(|(name, path)| Some((Some(name), read(&path)?)))
        .collect()
}
