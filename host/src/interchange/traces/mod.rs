//! `export traces RUN_DIR --out FILE`: a run as training data, the rows Harbor's `harbor
//! traces export` writes (module `episodes` builds them from each attempt's ATIF trajectory
//! exactly as Harbor does), as JSON Lines (`.jsonl`) or Parquet (`.parquet`, module
//! `parquet_file`), both loadable by Hugging Face `datasets`. Filters: the attempts that
//! succeeded (reward > 0, Harbor's rule) or failed, a minimum reward, and every episode or
//! only each attempt's last.
//!
//! The file is written under a temporary name beside `FILE` and renamed into place.

mod episodes;
mod parquet_file;

use std::io::Write;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssueSeverity, TaskStatus};
use agentcompass_results::atif::{attempt_trajectory, AtifAgent};
use agentcompass_results::store::{published_tasks, read_run_info};
use agentcompass_schema::atif::{Trajectory, ATIF_PATH};
use agentcompass_schema::attempt::AttemptRecord;
use agentcompass_schema::traces::TraceRow;
use serde_json::Value;

use super::{python_float, read_json, InterchangeError};

/// Which episodes of an attempt become rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Episodes {
    /// One row per agent turn (Harbor's default).
    #[default]
    All,
    /// Only the attempt's last turn (one row per attempt).
    Last,
}

/// Which attempts are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    /// Every attempt.
    #[default]
    All,
    /// Attempts with a reward above 0.
    Success,
    /// The others.
    Failure,
}

/// What `export traces` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TraceFilter {
    /// Episodes per attempt.
    pub episodes: Episodes,
    /// Succeeded or failed attempts.
    pub outcome: Outcome,
    /// Attempts whose reward is at least this.
    pub min_reward: Option<f64>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedTraces {
    /// The file.
    pub file: PathBuf,
    /// Its rows.
    pub rows: usize,
    /// The attempts they came from.
    pub attempts: usize,
}

/// One attempt, as the rows read it.
struct Attempt {
    task: String,
    trial_name: String,
    record: AttemptRecord,
    trajectory: Trajectory,
}

impl Attempt {
    fn reward(&self) -> Option<f64> {
        self.record.metrics.get("reward").map(|v| v.as_f64())
    }

    /// Harbor's `result`: the failure, else the reward as Python prints a float.
    fn result(&self) -> Option<String> {
        let issues: Vec<ExecutionIssue> =
            serde_json::from_value(self.record.issues.clone()).unwrap_or_default();
        let failure = issues
            .iter()
            .find(|i| matches!(i.severity, IssueSeverity::Error | IssueSeverity::Fatal));
        match (failure, self.record.status) {
            (Some(issue), _) => Some(issue.code.clone()),
            (None, TaskStatus::Completed) => self.reward().map(python_float),
            (None, status) => Some(status.as_str().to_string()),
        }
    }

    fn kept(&self, filter: &TraceFilter) -> bool {
        let reward = self.reward();
        let success = reward.is_some_and(|r| r > 0.0);
        let outcome = match filter.outcome {
            Outcome::All => true,
            Outcome::Success => success,
            Outcome::Failure => !success,
        };
        outcome
            && filter
                .min_reward
                .is_none_or(|min| reward.is_some_and(|r| r >= min))
    }
}

/// Writes the rows of the run at `run_dir` that `filter` keeps to `out` (`.jsonl` or
/// `.parquet`).
pub fn export(
    run_dir: &Path,
    out: &Path,
    filter: &TraceFilter,
) -> Result<ExportedTraces, InterchangeError> {
    let parquet = match out.extension().and_then(|e| e.to_str()) {
        Some("jsonl") => false,
        Some("parquet") => true,
        _ => {
            return Err(InterchangeError::invalid(
                out,
                "--out: expected a file ending in .jsonl or .parquet",
            ))
        }
    };
    let info = read_run_info(run_dir)?;
    let head = info.request_head();
    let provenance = info.provenance.clone().unwrap_or(Value::Null);
    let agent = AtifAgent::from_provenance(&provenance, &head.harness.params);
    let attempts = attempts_of(run_dir, &agent, &info.run_id)?;
    let kept: Vec<&Attempt> = attempts.iter().filter(|a| a.kept(filter)).collect();
    let mut rows: Vec<TraceRow> = Vec::new();
    for attempt in &kept {
        let meta = episodes::Meta {
            run_id: &info.run_id,
            task: &attempt.task,
            trial_name: &attempt.trial_name,
            date: attempt.record.trajectory["started_at"]
                .as_str()
                .unwrap_or(&info.started_at),
            result: attempt.result(),
            reward: attempt.reward(),
            model: agent.model_name.as_deref(),
        };
        let mut episodes = episodes::rows(&attempt.trajectory, &meta);
        if filter.episodes == Episodes::Last {
            episodes = episodes.pop().into_iter().collect();
        }
        rows.extend(episodes);
    }
    let parent = out
        .parent()
        .filter(|p| p.as_os_str().is_empty() || p.is_dir())
        .ok_or_else(|| InterchangeError::invalid(out, "--out: its directory does not exist"))?;
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".traces.")
        .tempfile_in(parent)
        .map_err(|e| InterchangeError::io("write in", parent, e))?;
    if parquet {
        parquet_file::write(temp.as_file_mut(), &rows)
            .map_err(|e| InterchangeError::invalid(out, e.to_string()))?;
    } else {
        let mut writer = std::io::BufWriter::new(temp.as_file_mut());
        for row in &rows {
            serde_json::to_writer(&mut writer, row)
                .map_err(|e| InterchangeError::invalid(out, e.to_string()))?;
            writer
                .write_all(b"\n")
                .map_err(|e| InterchangeError::io("write", out, e))?;
        }
        writer
            .flush()
            .map_err(|e| InterchangeError::io("write", out, e))?;
    }
    temp.persist(out)
        .map_err(|e| InterchangeError::io("write", out, e.error))?;
    Ok(ExportedTraces {
        file: out.to_path_buf(),
        rows: rows.len(),
        attempts: kept.len(),
    })
}

/// Every published attempt with a trajectory (its ATIF file, else converted from its record;
/// a multi-step attempt's steps each as an attempt of their own).
fn attempts_of(
    run_dir: &Path,
    agent: &AtifAgent,
    run_id: &str,
) -> Result<Vec<Attempt>, InterchangeError> {
    let mut found = Vec::new();
    for task in published_tasks(run_dir) {
        for (number, name) in task.record.numbered_attempts().unwrap_or_default() {
            let dir = task.dir.join(name);
            let raw: Value = read_json(&dir.join("result.json"))?;
            let record: AttemptRecord = serde_json::from_value(raw.clone())
                .map_err(|e| InterchangeError::invalid(&dir.join("result.json"), e.to_string()))?;
            let trial_name = format!("{}__attempt-{number}", task.task_id);
            let mut files: Vec<(String, PathBuf)> = Vec::new();
            for step in std::fs::read_dir(dir.join("steps"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let step_name = step.file_name().to_string_lossy().into_owned();
                let file = step.path().join(ATIF_PATH);
                if file.is_file() {
                    files.push((format!("{trial_name}__{step_name}"), file));
                }
            }
            files.sort();
            if files.is_empty() {
                files.push((trial_name.clone(), dir.join(ATIF_PATH)));
            }
            for (trial_name, file) in files {
                let trajectory = if file.is_file() {
                    Some(read_json(&file)?)
                } else {
                    attempt_trajectory(&raw, agent, &format!("{run_id}__{trial_name}"))
                };
                if let Some(trajectory) = trajectory {
                    found.push(Attempt {
                        task: task.task_id.clone(),
                        trial_name,
                        record: record.clone(),
                        trajectory,
                    });
                }
            }
        }
    }
    Ok(found)
}
