//! `export harbor RUN_DIR --out DIR`: a run as a Harbor 0.25 job directory, which Harbor's
//! own tools read (`harbor view`, `harbor traces export`): the job's `config.json` and
//! `result.json`, and per attempt a trial directory `<task[:32]>__<7 characters>` with its
//! `config.json`, `result.json`, `agent/trajectory.json` (the attempt's ATIF; each step's
//! under `steps/<step>/agent/`), `verifier/reward.txt` (`reward.json` for several rewards,
//! `test-stdout.txt`) and, when the attempt kept artifacts, `artifacts/` with its
//! `manifest.json`.
//!
//! The directory is built under a hidden temp name beside `DIR` and renamed into place at the
//! end: an interrupted export leaves no half job, and an existing non-empty `DIR` is refused
//! (nothing is overwritten). Names and ids derive from the run (`uuid_from`), so exporting
//! the same run twice writes the same files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssueSeverity, MetricValue, TaskStatus};
use agentcompass_results::atif::{attempt_trajectory, AtifAgent};
use agentcompass_results::store::{copy_tree, published_tasks, read_run_info};
use agentcompass_schema::atif::ATIF_PATH;
use agentcompass_schema::attempt::AttemptRecord;
use agentcompass_schema::harbor_job::{
    AgentConfig, AgentContext, AgentInfo, EnvironmentConfig, ExceptionInfo, JobConfig, JobResult,
    ManifestEntry, ModelInfo, TrialConfig, TrialResult, VerifierResult, CONFIG_FILE, MANIFEST_PATH,
    RESULT_FILE,
};
use agentcompass_schema::run_info::RunInfo;
use serde_json::{Map, Value};

use super::harbor_stats::{eval_key, job_stats};
use super::{uuid_from, write_json, InterchangeError};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The job directory.
    pub job_dir: PathBuf,
    /// Its trials (one per attempt).
    pub trials: usize,
}

/// What every trial of the job shares.
struct Job {
    id: String,
    run_id: String,
    dir: PathBuf,
    agent: AtifAgent,
    environment: String,
    dataset: String,
    tasks_path: Option<String>,
}

impl Job {
    fn of(info: &RunInfo, dir: &Path) -> Job {
        let head = info.request_head();
        let provenance = info.provenance.clone().unwrap_or(Value::Null);
        let tasks_path = head
            .benchmark
            .params
            .get("path")
            .and_then(Value::as_str)
            .map(str::to_string);
        let dataset = tasks_path
            .as_deref()
            .and_then(|p| p.trim_end_matches('/').rsplit('/').next())
            .filter(|name| !name.is_empty())
            .unwrap_or(&head.benchmark.id)
            .to_string();
        Job {
            id: uuid_from(&format!("job {}", info.run_id)),
            run_id: info.run_id.clone(),
            dir: dir.to_path_buf(),
            agent: AtifAgent::from_provenance(&provenance, &head.harness.params),
            environment: head.environment.id,
            dataset,
            tasks_path,
        }
    }

    fn agent_config(&self) -> AgentConfig {
        AgentConfig {
            name: Some(self.agent.name.clone()),
            model_name: self.agent.model_name.clone(),
        }
    }

    fn environment_config(&self) -> EnvironmentConfig {
        EnvironmentConfig::of_provider(&self.environment)
    }

    /// `{path}` of a task: under the benchmark's `path` when it has one.
    fn task_path(&self, task_id: &str) -> String {
        match &self.tasks_path {
            Some(root) => format!("{}/{task_id}", root.trim_end_matches('/')),
            None => task_id.to_string(),
        }
    }
}

/// Exports the run at `run_dir` as the Harbor job directory `out`.
pub fn export(run_dir: &Path, out: &Path) -> Result<Exported, InterchangeError> {
    let info = read_run_info(run_dir)?;
    let out = std::path::absolute(out).map_err(|e| InterchangeError::io("resolve", out, e))?;
    let not_empty = fs::read_dir(&out).is_ok_and(|mut entries| entries.next().is_some());
    if not_empty || out.is_file() {
        return Err(InterchangeError::invalid(
            &out,
            "--out: expected a new or empty directory, found one with contents (nothing is overwritten)",
        ));
    }
    let parent = out.parent().filter(|p| p.is_dir()).ok_or_else(|| {
        InterchangeError::invalid(&out, "--out: its parent directory does not exist")
    })?;
    let staging = tempfile::Builder::new()
        .prefix(".harbor-export.")
        .tempdir_in(parent)
        .map_err(|e| InterchangeError::io("create a directory in", parent, e))?;
    let job = Job::of(&info, &out);
    let mut trials = Vec::new();
    for task in published_tasks(run_dir) {
        for (number, name) in task.record.numbered_attempts().unwrap_or_default() {
            let attempt = task.dir.join(name);
            trials.push(write_trial(
                &job,
                &task.task_id,
                number,
                &attempt,
                staging.path(),
            )?);
        }
    }
    trials.sort_by(|a, b| a.trial_name.cmp(&b.trial_name));
    write_job(&job, &info, &trials, staging.path())?;
    if out.is_dir() {
        fs::remove_dir(&out).map_err(|e| InterchangeError::io("replace", &out, e))?;
    }
    let staged = staging.keep();
    fs::rename(&staged, &out).map_err(|e| InterchangeError::io("rename into", &out, e))?;
    Ok(Exported {
        job_dir: out,
        trials: trials.len(),
    })
}

/// The job's `config.json` and `result.json`.
fn write_job(
    job: &Job,
    info: &RunInfo,
    trials: &[TrialResult],
    dir: &Path,
) -> Result<(), InterchangeError> {
    let config = JobConfig {
        job_name: dir_name(&job.dir),
        jobs_dir: job
            .dir
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        n_attempts: Some(info.request_head().execution.attempts.k.max(1)),
        environment: Some(job.environment_config()),
        agents: vec![job.agent_config()],
        datasets: job
            .tasks_path
            .iter()
            .map(|p| Map::from_iter([("path".to_string(), Value::from(p.as_str()))]))
            .collect(),
    };
    write_json(&dir.join(CONFIG_FILE), &config)?;
    let key = eval_key(
        &job.agent.name,
        job.agent.model_name.as_deref(),
        &job.dataset,
    );
    let result = JobResult {
        id: job.id.clone(),
        started_at: info.started_at.clone(),
        updated_at: info.finished_at.clone(),
        finished_at: info.finished_at.clone(),
        n_total_trials: trials.len() as u64,
        stats: job_stats(&key, trials),
    };
    write_json(&dir.join(RESULT_FILE), &result)
}

fn dir_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A trial's name: the task's first 32 characters (`_` and `-` trimmed from their end, `/`
/// as `-`), `__`, and 7 letters and digits from the run, task and attempt.
fn trial_name(run_id: &str, task_id: &str, attempt: u32) -> String {
    use sha2::Digest;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let head: String = task_id
        .chars()
        .take(32)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let digest = sha2::Sha256::digest(format!("{run_id}\0{task_id}\0{attempt}").as_bytes());
    let suffix: String = digest[..7]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("{}__{suffix}", head.trim_end_matches(['_', '-']))
}

/// Writes one attempt's trial directory under `root`; returns its result.
fn write_trial(
    job: &Job,
    task_id: &str,
    number: u32,
    attempt: &Path,
    root: &Path,
) -> Result<TrialResult, InterchangeError> {
    let raw: Value = super::read_json(&attempt.join(RESULT_FILE))?;
    let record: AttemptRecord = serde_json::from_value(raw.clone())
        .map_err(|e| InterchangeError::invalid(&attempt.join(RESULT_FILE), e.to_string()))?;
    let name = trial_name(&job.run_id, task_id, number);
    let dir = root.join(&name);
    let rewards = rewards_of(&raw, &record);
    let config = TrialConfig {
        task: Map::from_iter([
            ("path".to_string(), Value::from(job.task_path(task_id))),
            ("source".to_string(), Value::from(job.dataset.as_str())),
        ]),
        trial_name: name.clone(),
        trials_dir: job.dir.display().to_string(),
        agent: Some(job.agent_config()),
        environment: Some(job.environment_config()),
        job_id: Some(job.id.clone()),
    };
    write_json(&dir.join(CONFIG_FILE), &config)?;
    let result = TrialResult {
        id: uuid_from(&format!("trial {} {task_id} {number}", job.run_id)),
        task_name: task_id.to_string(),
        trial_name: name.clone(),
        trial_uri: format!("file://{}", job.dir.join(&name).display()),
        task_id: Map::from_iter([("path".to_string(), Value::from(job.task_path(task_id)))]),
        source: Some(job.dataset.clone()),
        task_checksum: task_checksum(&raw, task_id),
        config,
        agent_info: AgentInfo {
            name: job.agent.name.clone(),
            version: job.agent.version.clone(),
            model_info: job.agent.model_name.as_ref().map(|model| ModelInfo {
                name: model.rsplit('/').next().unwrap_or(model).to_string(),
                provider: model.split_once('/').map(|(p, _)| p.to_string()),
            }),
        },
        agent_result: Some(agent_context(&raw)),
        verifier_result: Some(VerifierResult {
            rewards: Some(rewards.clone()),
        }),
        exception_info: exception_of(&raw, &record),
        started_at: text_at(&raw, "/trajectory/started_at"),
        finished_at: text_at(&raw, "/trajectory/finished_at"),
        step_results: None,
    };
    write_json(&dir.join(RESULT_FILE), &result)?;
    write_trajectories(job, &raw, attempt, &dir, &format!("{}__{name}", job.run_id))?;
    write_verifier(&raw, &rewards, &dir)?;
    write_artifacts(attempt, &dir)?;
    Ok(result)
}

fn text_at(raw: &Value, pointer: &str) -> Option<String> {
    raw.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The task's content digest when the benchmark recorded one, else a digest of its id.
fn task_checksum(raw: &Value, task_id: &str) -> String {
    use sha2::Digest;
    text_at(raw, "/meta/benchmark/task_content_digest")
        .unwrap_or_else(|| hex::encode(sha2::Sha256::digest(task_id.as_bytes())))
}

/// The verifier's rewards (a Harbor task's `meta.benchmark.harbor.rewards`), else the
/// attempt's numeric metrics (a boolean as 1 or 0).
fn rewards_of(raw: &Value, record: &AttemptRecord) -> BTreeMap<String, f64> {
    if let Some(rewards) = raw
        .pointer("/meta/benchmark/harbor/rewards")
        .and_then(Value::as_object)
    {
        let found: BTreeMap<String, f64> = rewards
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    record
        .metrics
        .iter()
        .map(|(k, v)| (k.clone(), MetricValue::as_f64(*v)))
        .collect()
}

/// The attempt's model usage as Harbor's agent context.
fn agent_context(raw: &Value) -> AgentContext {
    let usage = raw.pointer("/meta/harness/telemetry/model_usage");
    let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
    AgentContext {
        n_input_tokens: count("prompt_tokens"),
        n_cache_tokens: count("cached_tokens"),
        n_output_tokens: count("completion_tokens"),
        cost_usd: usage
            .and_then(|u| u.get("cost_usd"))
            .and_then(Value::as_f64),
    }
}

/// An attempt that did not complete, or that has an ERROR or FATAL issue, as an exception
/// named by its first such issue's code.
fn exception_of(raw: &Value, record: &AttemptRecord) -> Option<ExceptionInfo> {
    let issues: Vec<ExecutionIssue> =
        serde_json::from_value(record.issues.clone()).unwrap_or_default();
    let issue = issues
        .iter()
        .find(|i| matches!(i.severity, IssueSeverity::Error | IssueSeverity::Fatal));
    if record.status == TaskStatus::Completed && issue.is_none() {
        return None;
    }
    Some(ExceptionInfo {
        exception_type: issue
            .map_or_else(|| record.status.as_str().to_string(), |i| i.code.clone()),
        exception_message: issue.map(|i| i.message.clone()).unwrap_or_default(),
        exception_traceback: String::new(),
        occurred_at: text_at(raw, "/trajectory/finished_at").unwrap_or_default(),
    })
}

/// The attempt's ATIF (the one it wrote, else converted from its record) and each step's.
fn write_trajectories(
    job: &Job,
    raw: &Value,
    attempt: &Path,
    dir: &Path,
    session: &str,
) -> Result<(), InterchangeError> {
    let written = attempt.join(ATIF_PATH);
    if written.is_file() {
        copy_file(&written, &dir.join(ATIF_PATH))?;
    } else if let Some(doc) = attempt_trajectory(raw, &job.agent, session) {
        write_json(&dir.join(ATIF_PATH), &doc)?;
    }
    let steps = attempt.join("steps");
    for entry in fs::read_dir(&steps).into_iter().flatten().flatten() {
        let file = entry.path().join(ATIF_PATH);
        if file.is_file() {
            copy_file(
                &file,
                &dir.join("steps").join(entry.file_name()).join(ATIF_PATH),
            )?;
        }
    }
    Ok(())
}

fn copy_file(from: &Path, to: &Path) -> Result<(), InterchangeError> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| InterchangeError::io("create directory", parent, e))?;
    }
    fs::copy(from, to).map_err(|e| InterchangeError::io("copy", from, e))?;
    Ok(())
}

/// `verifier/reward.txt` (one `reward`) or `reward.json`, and the test's output.
fn write_verifier(
    raw: &Value,
    rewards: &BTreeMap<String, f64>,
    dir: &Path,
) -> Result<(), InterchangeError> {
    let verifier = dir.join("verifier");
    fs::create_dir_all(&verifier)
        .map_err(|e| InterchangeError::io("create directory", &verifier, e))?;
    let write = |name: &str, text: String| {
        let path = verifier.join(name);
        fs::write(&path, text).map_err(|e| InterchangeError::io("write", &path, e))
    };
    match (rewards.len(), rewards.get("reward")) {
        (0, _) => {}
        (1, Some(reward)) => write("reward.txt", format!("{reward}\n"))?,
        _ => write_json(&verifier.join("reward.json"), rewards)?,
    }
    for (key, file) in [
        ("test_stdout_tail", "test-stdout.txt"),
        ("test_stderr_tail", "test-stderr.txt"),
    ] {
        if let Some(text) = raw
            .pointer(&format!("/meta/benchmark/harbor/{key}"))
            .and_then(Value::as_str)
        {
            write(file, text.to_string())?;
        }
    }
    Ok(())
}

/// The attempt's artifacts under `artifacts/`, listed in `artifacts/manifest.json`.
fn write_artifacts(attempt: &Path, dir: &Path) -> Result<(), InterchangeError> {
    let source = attempt.join("artifacts");
    let has_files = fs::read_dir(&source).is_ok_and(|mut entries| entries.next().is_some());
    if !has_files {
        return Ok(());
    }
    copy_tree(&source, &dir.join("artifacts"), &mut |_| Ok(()))?;
    let manifest = [ManifestEntry {
        source: "/logs/artifacts".to_string(),
        destination: "artifacts".to_string(),
        kind: "directory".to_string(),
        status: "ok".to_string(),
        service: None,
        exclude: Vec::new(),
    }];
    write_json(&dir.join(MANIFEST_PATH), &manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_names_are_harbors_shape_and_stable() {
        let name = trial_name("20261207_101010", "hello-file", 1);
        let (head, tail) = name.split_once("__").unwrap();
        assert_eq!(head, "hello-file");
        assert_eq!(tail.len(), 7);
        assert!(tail.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(name, trial_name("20261207_101010", "hello-file", 1));
        assert_ne!(name, trial_name("20261207_101010", "hello-file", 2));
        let long = trial_name("r", "org/a-very-long-task-name-that-goes-on-and-on", 1);
        assert!(
            long.starts_with("org-a-very-long-task-name-that-g__"),
            "{long}"
        );
    }
}
