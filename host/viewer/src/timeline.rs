//! Tasks finished and the score over time, from a run's `progress.jsonl`: each `task_finished`
//! event's time, joined by task id with the task's primary metric value. Read with the run's
//! index (so a live run's is as fresh as its index) and only when the file is at most
//! [`MAX_PROGRESS_BYTES`]: lines are matched as text before any is parsed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use agentcompass_schema::progress::PROGRESS_EVENTS_FILE;
use serde::Deserialize;
use serde_json::{json, Value};

/// A larger `progress.jsonl` is not read for a timeline.
pub const MAX_PROGRESS_BYTES: u64 = 64 << 20;
/// At most this many points are kept (evenly spaced over the finished tasks, the last kept).
pub const MAX_POINTS: usize = 200;

/// What a timeline needs of an event line.
#[derive(Deserialize)]
struct EventHead {
    event: String,
    timestamp: f64,
    #[serde(default)]
    task_id: Option<String>,
}

/// One point: seconds since the run started, tasks finished, and the mean primary metric value
/// of those finished so far that have one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Seconds since the run started.
    pub at: f64,
    /// Tasks finished.
    pub done: u64,
    /// The score so far (`None`: no finished task has a value yet).
    pub score: Option<f64>,
}

/// Tasks finished and the score over time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// When the run started (Unix seconds): its `run_started` event, else its first event.
    pub start: f64,
    /// The points, in time order.
    pub points: Vec<Point>,
}

impl Timeline {
    /// The timeline of the run at `run_dir`; `values` maps a task id to its primary metric
    /// value. `None` when there is no `progress.jsonl`, it is larger than
    /// [`MAX_PROGRESS_BYTES`], or no task finished.
    pub fn read(run_dir: &Path, values: &HashMap<&str, Option<f64>>) -> Option<Timeline> {
        let file = File::open(run_dir.join(PROGRESS_EVENTS_FILE)).ok()?;
        if file.metadata().ok()?.len() > MAX_PROGRESS_BYTES {
            return None;
        }
        let (start, mut finished) = finished_events(BufReader::new(file))?;
        finished.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut points = Vec::with_capacity(finished.len());
        let (mut sum, mut scored) = (0.0, 0u64);
        for (done, (at, task_id)) in finished.iter().enumerate() {
            if let Some(Some(value)) = values.get(task_id.as_str()) {
                sum += value;
                scored += 1;
            }
            points.push(Point {
                at: (at - start).max(0.0),
                done: done as u64 + 1,
                score: (scored > 0).then(|| sum / scored as f64),
            });
        }
        Some(Timeline {
            start,
            points: thin(points, MAX_POINTS),
        })
    }

    /// `{start, points: [[seconds, done, score], ...]}`.
    pub fn to_json(&self) -> Value {
        let points: Vec<Value> = self
            .points
            .iter()
            .map(|p| json!([p.at, p.done, p.score]))
            .collect();
        json!({"start": self.start, "points": points})
    }
}

/// The run's start and its `task_finished` events as (time, task id); `None` when no task
/// finished.
fn finished_events(reader: impl BufRead) -> Option<(f64, Vec<(f64, String)>)> {
    let mut start: Option<f64> = None;
    let mut started: Option<f64> = None;
    let mut finished = Vec::new();
    for line in reader.lines() {
        let Ok(line) = line else { break };
        let wanted = line.contains("\"task_finished\"") || line.contains("\"run_started\"");
        if start.is_some() && !wanted {
            continue;
        }
        let Ok(event) = serde_json::from_str::<EventHead>(&line) else {
            continue;
        };
        start.get_or_insert(event.timestamp);
        match (event.event.as_str(), event.task_id) {
            ("run_started", _) => {
                started.get_or_insert(event.timestamp);
            }
            ("task_finished", Some(task_id)) => finished.push((event.timestamp, task_id)),
            _ => {}
        }
    }
    if finished.is_empty() {
        return None;
    }
    Some((started.or(start).unwrap_or_default(), finished))
}

/// At most `max` of `points`, evenly spaced, the last one kept.
fn thin(points: Vec<Point>, max: usize) -> Vec<Point> {
    if points.len() <= max || max < 2 {
        return points;
    }
    let last = points.len() - 1;
    (0..max)
        .filter_map(|i| points.get(i * last / (max - 1)).copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: &str, t: f64, task: Option<&str>) -> String {
        format!(
            "{}\n",
            json!({"run_id": "r", "event": event, "timestamp": t, "task_id": task, "payload": {}})
        )
    }

    #[test]
    fn finished_tasks_and_the_score_over_time() {
        let dir = tempfile::tempdir().unwrap();
        let text = [
            line("run_started", 100.0, None),
            line("task_started", 100.5, Some("a")),
            line("task_finished", 103.0, Some("b")),
            line("task_finished", 101.0, Some("a")),
            line("task_finished", 104.0, Some("c")),
            "not json\n".to_string(),
        ]
        .concat();
        std::fs::write(dir.path().join(PROGRESS_EVENTS_FILE), text).unwrap();
        let values = HashMap::from([("a", Some(1.0)), ("b", Some(0.0)), ("c", None)]);
        let timeline = Timeline::read(dir.path(), &values).unwrap();
        assert_eq!(timeline.start, 100.0);
        let points: Vec<(f64, u64, Option<f64>)> = timeline
            .points
            .iter()
            .map(|p| (p.at, p.done, p.score))
            .collect();
        assert_eq!(
            points,
            [
                (1.0, 1, Some(1.0)),
                (3.0, 2, Some(0.5)),
                (4.0, 3, Some(0.5))
            ]
        );
        assert_eq!(timeline.to_json()["points"][0], json!([1.0, 1, 1.0]));
    }

    #[test]
    fn no_timeline_without_finished_tasks() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Timeline::read(dir.path(), &HashMap::new()).is_none());
        std::fs::write(
            dir.path().join(PROGRESS_EVENTS_FILE),
            line("run_started", 1.0, None),
        )
        .unwrap();
        assert!(Timeline::read(dir.path(), &HashMap::new()).is_none());
    }

    #[test]
    fn long_timelines_are_thinned() {
        let points: Vec<Point> = (0..1000)
            .map(|i| Point {
                at: f64::from(i),
                done: i as u64 + 1,
                score: None,
            })
            .collect();
        let thinned = thin(points, MAX_POINTS);
        assert_eq!(thinned.len(), MAX_POINTS);
        assert_eq!(thinned[0].done, 1);
        assert_eq!(thinned[MAX_POINTS - 1].done, 1000);
    }
}
