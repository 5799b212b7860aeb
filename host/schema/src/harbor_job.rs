//! Harbor 0.25's job directory (`<jobs>/<job>/config.json`, `result.json`, one trial
//! directory per attempt with its own `config.json` and `result.json`, and
//! `artifacts/manifest.json`): the records `export harbor` writes and `view`, `report`,
//! `compare` and `summary` read when given a Harbor job. The fields are Harbor's
//! (`models/job/*`, `models/trial/*`); only the ones this host writes or reads are typed, and
//! reading tolerates every field Harbor may add or leave out (all have defaults), since
//! Harbor's own loader is as lenient.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A job's (or trial's) `config.json` file name; `result.json` likewise.
pub const CONFIG_FILE: &str = "config.json";
/// A job's or trial's `result.json`.
pub const RESULT_FILE: &str = "result.json";
/// A trial's artifact manifest, relative to the trial directory.
pub const MANIFEST_PATH: &str = "artifacts/manifest.json";

/// `JobConfig`, as far as it is written and read here (`exclude_defaults`, as Harbor
/// writes it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobConfig {
    /// The job's name (its directory's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub job_name: String,
    /// The directory of the job directories.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jobs_dir: String,
    /// Attempts per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_attempts: Option<u32>,
    /// The environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentConfig>,
    /// The agents (one here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentConfig>,
    /// The task datasets (`{path}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<Map<String, Value>>,
}

/// `EnvironmentConfig` (its type).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentConfig {
    /// One of Harbor's environment types (`docker`, `podman`, ...).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A custom environment's class; an environment Harbor has no type for is written as
    /// `agentcompass-host:<provider id>` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_path: Option<String>,
}

/// The `import_path` prefix naming one of this host's environment providers.
pub const HOST_ENVIRONMENT_PREFIX: &str = "agentcompass-host:";

impl EnvironmentConfig {
    /// The config of the provider `id`: Harbor's type when Harbor has it (`docker`,
    /// `podman`), else this host's `import_path`.
    pub fn of_provider(id: &str) -> EnvironmentConfig {
        match id {
            "" => EnvironmentConfig::default(),
            "docker" | "podman" => EnvironmentConfig {
                kind: Some(id.to_string()),
                import_path: None,
            },
            other => EnvironmentConfig {
                kind: None,
                import_path: Some(format!("{HOST_ENVIRONMENT_PREFIX}{other}")),
            },
        }
    }

    /// The environment's name: its type, else this host's provider id, else the import
    /// path, else Harbor's default (`docker`).
    pub fn name(&self) -> String {
        match (&self.kind, &self.import_path) {
            (Some(kind), _) => kind.clone(),
            (None, Some(path)) => path
                .strip_prefix(HOST_ENVIRONMENT_PREFIX)
                .unwrap_or(path)
                .to_string(),
            (None, None) => "docker".to_string(),
        }
    }
}

/// `AgentConfig` (its name and model).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// The agent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
}

/// `JobResult` (written without `trial_results`, as Harbor writes it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    /// A UUID.
    #[serde(default)]
    pub id: String,
    /// ISO 8601.
    #[serde(default)]
    pub started_at: String,
    /// ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// ISO 8601, once finished.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Trials.
    #[serde(default)]
    pub n_total_trials: u64,
    /// Counts and per-eval statistics.
    #[serde(default)]
    pub stats: JobStats,
}

/// `JobStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobStats {
    /// Finished trials.
    #[serde(default)]
    pub n_completed_trials: u64,
    /// Trials with an exception.
    #[serde(default)]
    pub n_errored_trials: u64,
    /// Running trials.
    #[serde(default)]
    pub n_running_trials: u64,
    /// Pending trials.
    #[serde(default)]
    pub n_pending_trials: u64,
    /// Cancelled trials.
    #[serde(default)]
    pub n_cancelled_trials: u64,
    /// Retries.
    #[serde(default)]
    pub n_retries: u64,
    /// By `<agent>__<model>__<dataset>` (`<agent>__<dataset>` without a model).
    #[serde(default)]
    pub evals: BTreeMap<String, AgentDatasetStats>,
    /// Input tokens (cached included).
    #[serde(default)]
    pub n_input_tokens: Option<u64>,
    /// Cached input tokens.
    #[serde(default)]
    pub n_cache_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub n_output_tokens: Option<u64>,
    /// US dollars.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// `AgentDatasetStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentDatasetStats {
    /// Trials with rewards.
    #[serde(default)]
    pub n_trials: u64,
    /// Trials with an exception.
    #[serde(default)]
    pub n_errors: u64,
    /// One object per metric (`{"reward": mean}`).
    #[serde(default)]
    pub metrics: Vec<Map<String, Value>>,
    /// pass@k by k.
    #[serde(default)]
    pub pass_at_k: BTreeMap<String, f64>,
    /// `{reward key: {value: [trial names]}}`.
    #[serde(default)]
    pub reward_stats: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// `{exception type: [trial names]}`.
    #[serde(default)]
    pub exception_stats: BTreeMap<String, Vec<String>>,
}

/// A trial's `config.json` (`TrialConfig`), as far as it is written and read here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialConfig {
    /// The task (`{path}` or `{name}`, and its dataset as `source`).
    #[serde(default)]
    pub task: Map<String, Value>,
    /// The trial's name (its directory's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trial_name: String,
    /// The job directory.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trials_dir: String,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentConfig>,
    /// The environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentConfig>,
    /// The job's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

/// A trial's `result.json` (`TrialResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialResult {
    /// A UUID.
    #[serde(default)]
    pub id: String,
    /// The task's name (`org/name` from its `task.toml`).
    #[serde(default)]
    pub task_name: String,
    /// The trial's name.
    #[serde(default)]
    pub trial_name: String,
    /// `file://` URI of the trial directory.
    #[serde(default)]
    pub trial_uri: String,
    /// `{path}`, `{git_url, git_commit_id, path}` or `{org, name, ref}`.
    #[serde(default)]
    pub task_id: Map<String, Value>,
    /// The dataset's name.
    #[serde(default)]
    pub source: Option<String>,
    /// The task's checksum.
    #[serde(default)]
    pub task_checksum: String,
    /// The trial's configuration.
    #[serde(default)]
    pub config: TrialConfig,
    /// The agent.
    #[serde(default)]
    pub agent_info: AgentInfo,
    /// Tokens and cost.
    #[serde(default)]
    pub agent_result: Option<AgentContext>,
    /// The rewards.
    #[serde(default)]
    pub verifier_result: Option<VerifierResult>,
    /// What went wrong.
    #[serde(default)]
    pub exception_info: Option<ExceptionInfo>,
    /// ISO 8601.
    #[serde(default)]
    pub started_at: Option<String>,
    /// ISO 8601.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// A multi-step trial's steps.
    #[serde(default)]
    pub step_results: Option<Vec<Value>>,
}

impl TrialResult {
    /// The task directory's name when the task is a path (what this host's Harbor tasks are
    /// named by), else the task's name.
    pub fn task_key(&self) -> String {
        self.task_id
            .get("path")
            .or_else(|| self.config.task.get("path"))
            .and_then(Value::as_str)
            .and_then(|p| p.trim_end_matches('/').rsplit('/').next())
            .filter(|name| !name.is_empty())
            .unwrap_or(&self.task_name)
            .to_string()
    }
}

/// `AgentInfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The agent's name.
    #[serde(default)]
    pub name: String,
    /// Its version (`unknown` when not detected).
    #[serde(default)]
    pub version: String,
    /// The model.
    #[serde(default)]
    pub model_info: Option<ModelInfo>,
}

/// `ModelInfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model's name (provider stripped).
    #[serde(default)]
    pub name: String,
    /// Its provider.
    #[serde(default)]
    pub provider: Option<String>,
}

/// `AgentContext` (its totals).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentContext {
    /// Input tokens (cached included).
    #[serde(default)]
    pub n_input_tokens: Option<u64>,
    /// Cached input tokens.
    #[serde(default)]
    pub n_cache_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub n_output_tokens: Option<u64>,
    /// US dollars.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// `VerifierResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifierResult {
    /// Rewards by key.
    #[serde(default)]
    pub rewards: Option<BTreeMap<String, f64>>,
}

/// `ExceptionInfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExceptionInfo {
    /// The exception's class (ours: the issue code).
    #[serde(default)]
    pub exception_type: String,
    /// Its message.
    #[serde(default)]
    pub exception_message: String,
    /// Its traceback (empty here).
    #[serde(default)]
    pub exception_traceback: String,
    /// ISO 8601.
    #[serde(default)]
    pub occurred_at: String,
}

/// One `artifacts/manifest.json` entry (the file is a JSON array of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Where it came from in the environment.
    pub source: String,
    /// Where it is, relative to the trial directory (`artifacts/...`).
    pub destination: String,
    /// `file` or `directory`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `ok`, `failed`, `empty` or `skipped`.
    pub status: String,
    /// The service it came from (`None`: main).
    pub service: Option<String>,
    /// Excluded patterns.
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_is_keyed_by_its_task_directory() {
        let trial: TrialResult = serde_json::from_str(
            r#"{"task_name": "agentcompass/hello-file", "task_id": {"path": "/t/hello-file"},
                "verifier_result": {"rewards": {"reward": 1.0}}, "unknown": 1}"#,
        )
        .unwrap();
        assert_eq!(trial.task_key(), "hello-file");
        let named: TrialResult = serde_json::from_str(
            r#"{"task_name": "org/x", "task_id": {"org": "org", "name": "x"}}"#,
        )
        .unwrap();
        assert_eq!(named.task_key(), "org/x");
    }
}
