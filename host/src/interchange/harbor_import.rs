//! A Harbor job directory read as a run, so that `view`, `report`, `compare` and `summary`
//! take one where they take a run directory. The job is written, through the results store
//! as any run is, into a private temporary directory (the job's own directory is only read):
//! `run_info.json` (Harbor's agent as the harness, its model, its environment; the benchmark
//! `harbor`), one task per task of the job — keyed by its directory's name, as this host's
//! Harbor tasks are, so a job and a run of the same tasks pair task by task — with one attempt
//! per trial in start order: the verifier's rewards as `reward` (and `correct` = reward ≥ 1,
//! Harbor's benchmark metrics here), the rest under `meta.benchmark.harbor.rewards`, the
//! trial's exception as an ERROR issue named by its type, its tokens and cost as the model
//! usage, and its ATIF trajectory both as is (`agent/trajectory.json`) and as this host's
//! trajectory; then `metrics.json` and `summary.md` computed as `summary` computes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{
    AttemptSpec, ExecutionIssue, IssuePhase, MetricContract, MetricKind, MetricSpec, MetricValue,
    RunRequest, TaskSpec, TaskStatus,
};
use agentcompass_results::atif::to_actf;
use agentcompass_results::records::task_payload;
use agentcompass_results::store::{published_tasks, RunInfo, RunStore, TaskState, TaskWriter};
use agentcompass_schema::atif::{Trajectory, ATIF_PATH};
use agentcompass_schema::attempt::{AttemptMeta, AttemptRecord, HarnessMeta};
use agentcompass_schema::harbor_job::{
    JobConfig, JobResult, TrialResult, CONFIG_FILE, RESULT_FILE,
};
use agentcompass_schema::progress::SnapshotHead;
use agentcompass_schema::task::DEFAULT_CATEGORY;
use agentcompass_schema::RunStatus;
use serde_json::{Map, Value};

use super::{read_json, InterchangeError};
use crate::metrics::{outcomes_from_results, render_summary, MetricAggregator, SummaryTitle};

/// Harbor jobs read as runs, in a temporary results directory removed when this is dropped.
#[derive(Debug)]
pub struct ImportedJobs {
    root: tempfile::TempDir,
    /// Each job's run directory (`run_info.json`, `details/`, `metrics.json`,
    /// `summary.md`), in the order the jobs were given.
    pub run_dirs: Vec<PathBuf>,
}

impl ImportedJobs {
    /// The results directory holding the runs (`<root>/harbor/<job name>/`).
    pub fn results_dir(&self) -> &Path {
        self.root.path()
    }
}

/// The Harbor jobs directory `dir` holds: `dir` itself when it is one, else its
/// subdirectories that are (a jobs directory, as `harbor view` opens), sorted by name.
pub fn harbor_jobs_in(dir: &Path) -> Vec<PathBuf> {
    if is_harbor_job(dir) {
        return vec![dir.to_path_buf()];
    }
    if dir.join("run_info.json").exists() {
        return Vec::new();
    }
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_harbor_job(p))
        .collect();
    jobs.sort();
    jobs
}

/// Whether `dir` is a Harbor job directory (a `config.json` and trial directories holding a
/// `result.json` or `config.json`; no `run_info.json`).
pub fn is_harbor_job(dir: &Path) -> bool {
    if !dir.join(CONFIG_FILE).is_file() || dir.join("run_info.json").exists() {
        return false;
    }
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let path = entry.path();
            path.is_dir() && (path.join(RESULT_FILE).is_file() || path.join(CONFIG_FILE).is_file())
        })
}

/// Harbor's benchmark metrics: the verifier's `reward` (primary) and `correct` (reward ≥ 1).
fn contract() -> MetricContract {
    MetricContract {
        metrics: vec![
            MetricSpec {
                primary: true,
                label: "Reward".to_string(),
                ..MetricSpec::new("reward", MetricKind::Scalar)
            },
            MetricSpec {
                label: "Correct".to_string(),
                ..MetricSpec::new("correct", MetricKind::BinarySuccess)
            },
        ],
    }
}

/// Reads the Harbor jobs `job_dirs` as runs in a private temporary results directory.
pub fn import(job_dirs: &[PathBuf]) -> Result<ImportedJobs, InterchangeError> {
    let root = tempfile::Builder::new()
        .prefix("agentcompass-harbor-jobs.")
        .tempdir()
        .map_err(|e| {
            InterchangeError::io("create a temporary directory in", &std::env::temp_dir(), e)
        })?;
    let mut run_dirs = Vec::new();
    for job_dir in job_dirs {
        run_dirs.push(import_one(job_dir, root.path())?);
    }
    Ok(ImportedJobs { root, run_dirs })
}

/// Writes the job at `job_dir` as a run under `root`; returns its run directory.
fn import_one(job_dir: &Path, root: &Path) -> Result<PathBuf, InterchangeError> {
    let config: JobConfig = read_json(&job_dir.join(CONFIG_FILE))?;
    let result: JobResult = read_json(&job_dir.join(RESULT_FILE)).unwrap_or_default();
    let trials = read_trials(job_dir)?;
    let job_name = job_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "harbor-job".to_string());
    let store = RunStore::create(root, &["harbor".to_string()], Some(&job_name))?;
    let request = request_of(&config, &trials);
    let mut info = RunInfo::new(
        store.run_id(),
        result.started_at.clone(),
        serde_json::to_value(&request).unwrap_or(Value::Null),
    );
    info.finished_at = result.finished_at.clone();
    info.status = RunStatus::Completed;
    info.provenance = Some(Value::Object(Map::from_iter([(
        "harbor_job".to_string(),
        Value::Object(Map::from_iter([
            (
                "path".to_string(),
                Value::from(job_dir.display().to_string()),
            ),
            ("id".to_string(), Value::from(result.id.clone())),
        ])),
    )])));
    store.write_run_info(&info)?;
    let mut by_task: BTreeMap<String, Vec<(PathBuf, TrialResult)>> = BTreeMap::new();
    for (dir, trial) in trials {
        by_task
            .entry(trial.task_key())
            .or_default()
            .push((dir, trial));
    }
    let mut snapshot = SnapshotHead {
        status: RunStatus::Completed,
        running_tasks: Some(0),
        failed_tasks: Some(0),
        ..SnapshotHead::default()
    };
    for (task_id, mut trials) in by_task {
        trials.sort_by(|a, b| {
            (&a.1.started_at, &a.1.trial_name).cmp(&(&b.1.started_at, &b.1.trial_name))
        });
        let state = write_task(&store, &task_id, &trials)?;
        let counter = match state {
            TaskState::Normal => &mut snapshot.completed_tasks,
            _ => &mut snapshot.error_tasks,
        };
        *counter = Some(counter.unwrap_or(0) + 1);
    }
    let finished = snapshot.completed_tasks.unwrap_or(0) + snapshot.error_tasks.unwrap_or(0);
    snapshot.total_tasks = Some(finished);
    snapshot.finished_tasks = Some(finished);
    agentcompass_results::store::write_json_atomic(&store.progress_json_path(), &snapshot)?;
    write_metrics(&store, &request, &job_name)?;
    Ok(store.run_dir().to_path_buf())
}

/// Every trial directory's `result.json` (a trial still running, with none, is left out).
fn read_trials(job_dir: &Path) -> Result<Vec<(PathBuf, TrialResult)>, InterchangeError> {
    let entries =
        std::fs::read_dir(job_dir).map_err(|e| InterchangeError::io("list", job_dir, e))?;
    let mut trials = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        if dir.is_dir() && dir.join(RESULT_FILE).is_file() {
            let trial: TrialResult = read_json(&dir.join(RESULT_FILE))?;
            trials.push((dir, trial));
        }
    }
    Ok(trials)
}

/// The run request a job stands for: Harbor's agent and model, the job's environment, the
/// `harbor` benchmark over its dataset, as many attempts as the most any task has.
fn request_of(config: &JobConfig, trials: &[(PathBuf, TrialResult)]) -> RunRequest {
    let mut request = RunRequest::default();
    let agent = config.agents.first();
    let first = trials.first().map(|(_, t)| t);
    request.harness.id = agent
        .and_then(|a| a.name.clone())
        .or_else(|| first.map(|t| t.agent_info.name.clone()))
        .unwrap_or_else(|| "oracle".to_string());
    request.model.id = agent
        .and_then(|a| a.model_name.clone())
        .or_else(|| first.and_then(|t| t.agent_info.model_info.as_ref().map(|m| m.name.clone())))
        .unwrap_or_default();
    request.environment.id = config.environment.clone().unwrap_or_default().name();
    request.benchmark.id = "harbor".to_string();
    if let Some(path) = config.datasets.first().and_then(|d| d.get("path")) {
        request
            .benchmark
            .params
            .insert("path".to_string(), path.clone());
    }
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for (_, trial) in trials {
        *counts.entry(trial.task_key()).or_default() += 1;
    }
    request.execution.attempts = AttemptSpec {
        k: counts.values().copied().max().unwrap_or(1),
        ..AttemptSpec::default()
    };
    request
}

/// One task: an attempt per trial, then `task.json`, published; returns its state.
fn write_task(
    store: &RunStore,
    task_id: &str,
    trials: &[(PathBuf, TrialResult)],
) -> Result<TaskState, InterchangeError> {
    let writer = store.begin_task(task_id)?;
    let mut worst = TaskState::Normal;
    let mut numbers = Vec::new();
    for (index, (dir, trial)) in trials.iter().enumerate() {
        let number = index as u32 + 1;
        let record = attempt_record(dir, trial);
        if record.status != TaskStatus::Completed {
            worst = TaskState::Error;
        }
        writer.write_attempt_result(
            number,
            &serde_json::to_value(&record).unwrap_or(Value::Null),
        )?;
        copy_trajectory(&writer, number, dir)?;
        numbers.push(number);
    }
    let task = TaskSpec {
        category: DEFAULT_CATEGORY.to_string(),
        ..TaskSpec::new(task_id, "")
    };
    let plan = AttemptSpec {
        k: numbers.len() as u32,
        ..AttemptSpec::default()
    };
    let payload = task_payload(&task, &numbers, &plan, "harbor-job", &Map::new());
    writer.publish(&payload, worst)?;
    Ok(worst)
}

/// The trial's ATIF file as the attempt's.
fn copy_trajectory(
    writer: &TaskWriter,
    attempt: u32,
    trial: &Path,
) -> Result<(), InterchangeError> {
    let Some(doc) = trajectory_of(trial) else {
        return Ok(());
    };
    writer.write_trajectory(attempt, None, &doc)?;
    Ok(())
}

fn trajectory_of(trial: &Path) -> Option<Trajectory> {
    read_json(&trial.join(ATIF_PATH)).ok()
}

/// One trial as an attempt record.
fn attempt_record(dir: &Path, trial: &TrialResult) -> AttemptRecord {
    let rewards = trial
        .verifier_result
        .as_ref()
        .and_then(|v| v.rewards.clone())
        .unwrap_or_default();
    let mut metrics = BTreeMap::new();
    if let Some(reward) = rewards.get("reward") {
        metrics.insert("reward".to_string(), MetricValue::Float(*reward));
        metrics.insert("correct".to_string(), MetricValue::Bool(*reward >= 1.0));
    }
    let issues: Vec<ExecutionIssue> = trial
        .exception_info
        .iter()
        .map(|e| {
            ExecutionIssue::error(
                IssuePhase::Run,
                e.exception_type.clone(),
                e.exception_message.clone(),
            )
        })
        .collect();
    let status = if issues.is_empty() {
        TaskStatus::Completed
    } else {
        TaskStatus::RunError
    };
    let trajectory = trajectory_of(dir)
        .map(|doc| serde_json::to_value(to_actf(&doc)).unwrap_or(Value::Null))
        .unwrap_or(Value::Null);
    let benchmark = benchmark_meta(dir, trial, &rewards);
    let telemetry = telemetry_of(trial);
    AttemptRecord {
        analysis_result: Value::Object(Map::new()),
        artifacts: Value::Object(Map::new()),
        final_answer: None,
        issues: serde_json::to_value(&issues).unwrap_or_default(),
        meta: AttemptMeta {
            benchmark,
            harness: HarnessMeta { telemetry },
        },
        metrics,
        retry_count: 0,
        status,
        trajectory,
    }
}

/// `meta.benchmark`: the rewards as the Harbor benchmark records them, the trial's name and
/// its test output.
fn benchmark_meta(dir: &Path, trial: &TrialResult, rewards: &BTreeMap<String, f64>) -> Value {
    let mut harbor = Map::new();
    harbor.insert(
        "rewards".to_string(),
        serde_json::to_value(rewards).unwrap_or_default(),
    );
    harbor.insert(
        "trial_name".to_string(),
        Value::from(trial.trial_name.clone()),
    );
    if let Ok(stdout) = std::fs::read_to_string(dir.join("verifier/test-stdout.txt")) {
        harbor.insert("test_stdout_tail".to_string(), Value::from(stdout));
    }
    Value::Object(Map::from_iter([(
        "harbor".to_string(),
        Value::Object(harbor),
    )]))
}

/// `meta.harness.telemetry`: the agent and its model usage.
fn telemetry_of(trial: &TrialResult) -> Value {
    let mut telemetry = Map::new();
    telemetry.insert(
        "agent".to_string(),
        Value::from(trial.agent_info.name.clone()),
    );
    if let Some(context) = &trial.agent_result {
        let usage = [
            ("prompt_tokens", context.n_input_tokens.map(Value::from)),
            ("cached_tokens", context.n_cache_tokens.map(Value::from)),
            (
                "completion_tokens",
                context.n_output_tokens.map(Value::from),
            ),
            ("cost_usd", context.cost_usd.map(Value::from)),
        ];
        let usage: Map<String, Value> = usage
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?)))
            .collect();
        if !usage.is_empty() {
            telemetry.insert("model_usage".to_string(), Value::Object(usage));
        }
    }
    Value::Object(telemetry)
}

/// `metrics.json` and `summary.md`, as `summary` computes them with Harbor's metrics.
fn write_metrics(
    store: &RunStore,
    request: &RunRequest,
    job_name: &str,
) -> Result<(), InterchangeError> {
    let attempts = request.execution.attempts;
    let mut aggregator = MetricAggregator::new(contract(), attempts.k.max(1), attempts.strategy);
    for task in published_tasks(store.run_dir()) {
        aggregator.add_task(
            &task.record.category,
            &outcomes_from_results(&task.dir, &task.record),
        );
    }
    let report = aggregator.report();
    let title = SummaryTitle {
        benchmark: request.benchmark.id.clone(),
        model: request.model.id.clone(),
        harness: request.harness.id.clone(),
        run_id: job_name.to_string(),
    };
    store.write_metrics(&serde_json::to_value(&report).unwrap_or(Value::Null))?;
    store.write_summary(&render_summary(&report, &title))?;
    Ok(())
}
