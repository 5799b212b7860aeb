//! The times a run's `progress.jsonl` recorded (run, task and attempt starts and ends, each
//! phase change of an attempt), when the run has that file: they give the phase spans
//! (environment, agent, verification, ...) their real bounds. Without it, spans are timed
//! from the records alone.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;

use crate::spans::from_epoch_seconds;

/// One attempt's recorded times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptTimes {
    /// `attempt_started`.
    pub started: Option<SystemTime>,
    /// `attempt_finished`.
    pub finished: Option<SystemTime>,
    /// Each phase (`plan`, `open_environment`, `run_harness`, `evaluate`, ...) and when it
    /// began, in order; a phase ends where the next one (or the attempt) does.
    pub phases: Vec<(String, SystemTime)>,
}

/// A run's recorded times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// `run_started`.
    pub run_started: Option<SystemTime>,
    /// `run_finished`.
    pub run_finished: Option<SystemTime>,
    /// Each task's `task_started` and `task_finished`.
    pub tasks: BTreeMap<String, (Option<SystemTime>, Option<SystemTime>)>,
    /// Each attempt's times, by task id and attempt number.
    pub attempts: BTreeMap<(String, u32), AttemptTimes>,
}

/// The fields of a `progress.jsonl` line read here.
#[derive(Deserialize)]
struct Line {
    event: String,
    timestamp: f64,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default)]
    phase: Option<String>,
}

impl Timeline {
    /// The timeline of the run at `run_dir` (empty when it has no readable `progress.jsonl`;
    /// unreadable lines are skipped).
    pub fn read(run_dir: &Path) -> Timeline {
        let mut timeline = Timeline::default();
        let Ok(file) =
            File::open(run_dir.join(agentcompass_schema::progress::PROGRESS_EVENTS_FILE))
        else {
            return timeline;
        };
        for line in BufReader::new(file).lines().map_while(Result::ok) {
            if let Ok(line) = serde_json::from_str::<Line>(&line) {
                timeline.add(line);
            }
        }
        timeline
    }

    fn add(&mut self, line: Line) {
        let Some(at) = from_epoch_seconds(line.timestamp) else {
            return;
        };
        let task = line.task_id.clone().unwrap_or_default();
        match (line.event.as_str(), line.attempt) {
            ("run_started", _) => {
                self.run_started.get_or_insert(at);
            }
            ("run_finished", _) => self.run_finished = Some(at),
            ("task_started", _) => {
                self.tasks.entry(task).or_default().0.get_or_insert(at);
            }
            ("task_finished", _) => self.tasks.entry(task).or_default().1 = Some(at),
            ("attempt_started", Some(n)) => {
                self.attempts.entry((task, n)).or_default().started = Some(at);
            }
            ("attempt_finished", Some(n)) => {
                self.attempts.entry((task, n)).or_default().finished = Some(at);
            }
            ("phase_changed", Some(n)) => {
                if let Some(phase) = line.phase {
                    let times = self.attempts.entry((task, n)).or_default();
                    if times.phases.last().map(|(p, _)| p) != Some(&phase) {
                        times.phases.push((phase, at));
                    }
                }
            }
            _ => {}
        }
    }
}
