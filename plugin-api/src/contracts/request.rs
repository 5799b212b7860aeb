//! `RunRequest`: the complete input of one run, in eight sections.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{ArtifactSpec, EnvironmentSetup, JsonMap, NetworkPolicy, REDACTED};

/// The harness id that selects a harness-free benchmark.
pub const HARNESS_NONE: &str = "none";

/// The API protocol(s) a model endpoint speaks: one name or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ApiProtocolSpec {
    /// A single protocol name (`""` or `auto` = detect).
    One(String),
    /// Several protocol names.
    Many(Vec<String>),
}

impl Default for ApiProtocolSpec {
    fn default() -> Self {
        ApiProtocolSpec::One(String::new())
    }
}

impl ApiProtocolSpec {
    /// The explicit protocols, trimmed and de-duplicated in order; empty means "auto".
    pub fn protocols(&self) -> Vec<String> {
        let names: &[String] = match self {
            ApiProtocolSpec::One(name) => std::slice::from_ref(name),
            ApiProtocolSpec::Many(names) => names,
        };
        let mut out: Vec<String> = Vec::new();
        for name in names.iter().map(|n| n.trim()) {
            if !name.is_empty() && name != "auto" && !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
        out
    }
}

/// The model under evaluation (a value object, not a registered component).
///
/// `Debug` never prints the API key.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Model id sent to the endpoint.
    pub id: String,
    /// Endpoint base URL.
    #[serde(default)]
    pub base_url: String,
    /// A literal API key or a `${VAR}` reference.
    #[serde(default)]
    pub api_key: String,
    /// API protocol(s).
    #[serde(default)]
    pub api_protocol: ApiProtocolSpec,
    /// Generation parameters.
    #[serde(default)]
    pub params: JsonMap,
    /// Whether the key is wrapped with the run session id before use.
    #[serde(default)]
    pub wrap_api_key: bool,
}

impl ModelSpec {
    /// A model with the given id and no endpoint settings.
    pub fn new(id: impl Into<String>) -> Self {
        ModelSpec {
            id: id.into(),
            ..ModelSpec::default()
        }
    }
}

impl fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = if self.api_key.is_empty() {
            ""
        } else {
            REDACTED
        };
        f.debug_struct("ModelSpec")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key", &key)
            .field("api_protocol", &self.api_protocol)
            .field("params", &self.params)
            .field("wrap_api_key", &self.wrap_api_key)
            .finish()
    }
}

/// The selected benchmark and its params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSpec {
    /// Registry id.
    pub id: String,
    /// Benchmark-specific params.
    #[serde(default)]
    pub params: JsonMap,
}

/// The selected harness and its params (`id == "none"`: harness-free benchmark).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessSpec {
    /// Registry id, or [`HARNESS_NONE`].
    pub id: String,
    /// Harness-specific params.
    #[serde(default)]
    pub params: JsonMap,
    /// MCP servers for the agent of every task (Harbor's `--mcp-config`): they replace task
    /// servers of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<super::McpServer>,
    /// Skills for the agent (Harbor's `--skill`): host directories (a skill directory holding
    /// `SKILL.md`, or a root of such directories) or git sources, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Variables for the agent's processes (Harbor's `--ae`): values may be `${VAR}`
    /// references, resolved by the host and treated as secrets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Text appended to every task's instruction, each part after a blank line (Harbor's
    /// `--extra-instruction-path` files, read when the request is resolved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_instructions: Vec<String>,
}

impl BenchmarkSpec {
    /// A spec with the given id and no params.
    pub fn new(id: impl Into<String>) -> Self {
        BenchmarkSpec {
            id: id.into(),
            params: JsonMap::new(),
        }
    }
}

impl HarnessSpec {
    /// A spec with the given id and no params.
    pub fn new(id: impl Into<String>) -> Self {
        HarnessSpec {
            id: id.into(),
            ..HarnessSpec::default()
        }
    }
}

/// Compute resources requested for an environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceRequirements {
    /// CPU cores.
    pub cpu: Option<f64>,
    /// Memory in MiB.
    pub memory_mb: Option<u64>,
    /// Disk in MiB.
    pub storage_mb: Option<u64>,
    /// GPU count.
    pub gpu: Option<u32>,
    /// GPU model.
    pub gpu_type: Option<String>,
    /// Drop `gpu_type` silently on providers that cannot select one.
    pub ignore_gpu_type: bool,
    /// How `cpu` is enforced (Harbor's `--cpus` mode; `None`: a hard limit, refused where it
    /// cannot be applied — the host's planner sets `auto` unless the user chose).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_mode: Option<ResourceMode>,
    /// How `memory_mb` is enforced (Harbor's `--memory` mode), as `cpu_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mode: Option<ResourceMode>,
}

/// How a declared resource is enforced (Harbor's `ResourceMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceMode {
    /// A hard limit where the environment can set one; otherwise not enforced (recorded).
    #[default]
    Auto,
    /// A hard limit; refused where the environment cannot set one.
    Limit,
    /// A reservation (no provider here reserves: refused).
    Request,
    /// A reservation and a limit (refused, as `request`).
    Guarantee,
    /// Not applied at all.
    Ignore,
}

impl ResourceMode {
    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceMode::Auto => "auto",
            ResourceMode::Limit => "limit",
            ResourceMode::Request => "request",
            ResourceMode::Guarantee => "guarantee",
            ResourceMode::Ignore => "ignore",
        }
    }
}

impl ResourceRequirements {
    /// Field-wise overlay: `over`'s `Some` values win; `ignore_gpu_type` is or-ed.
    pub fn merge(&self, over: &Self) -> Self {
        ResourceRequirements {
            cpu: over.cpu.or(self.cpu),
            memory_mb: over.memory_mb.or(self.memory_mb),
            storage_mb: over.storage_mb.or(self.storage_mb),
            gpu: over.gpu.or(self.gpu),
            gpu_type: over.gpu_type.clone().or_else(|| self.gpu_type.clone()),
            ignore_gpu_type: self.ignore_gpu_type || over.ignore_gpu_type,
            cpu_mode: over.cpu_mode.or(self.cpu_mode),
            memory_mode: over.memory_mode.or(self.memory_mode),
        }
    }

    /// Whether `field` (`cpu` or `memory_mb`) may go unenforced where the environment cannot
    /// apply it (`auto`), rather than be refused.
    pub fn best_effort(&self, field: &str) -> bool {
        let mode = match field {
            "cpu" => self.cpu_mode,
            "memory_mb" => self.memory_mode,
            _ => None,
        };
        matches!(mode, Some(ResourceMode::Auto | ResourceMode::Ignore))
    }
}

/// Where evaluation runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvaluationEnvironmentMode {
    /// No environment for evaluation (serialised `none`).
    #[default]
    #[serde(rename = "none")]
    NoEnvironment,
    /// Evaluate inside the task environment.
    Reuse,
    /// Evaluate in a fresh environment with artifacts restored.
    Fresh,
}

impl EvaluationEnvironmentMode {
    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            EvaluationEnvironmentMode::NoEnvironment => "none",
            EvaluationEnvironmentMode::Reuse => "reuse",
            EvaluationEnvironmentMode::Fresh => "fresh",
        }
    }
}

impl fmt::Display for EvaluationEnvironmentMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The selected environment provider, its native params and the shared environment fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentSpec {
    /// Provider id.
    pub id: String,
    /// Provider-native options only (shared fields are separate).
    pub params: JsonMap,
    /// Resources for every environment.
    pub resources: Option<ResourceRequirements>,
    /// Resource overrides for the task (run) environment.
    pub run_resources: Option<ResourceRequirements>,
    /// Resource overrides for the evaluation environment.
    pub evaluation_resources: Option<ResourceRequirements>,
    /// Policy applied when the environment is created.
    pub baseline_network_policy: Option<NetworkPolicy>,
    /// Startup policy of a fresh evaluation environment.
    pub evaluation_baseline_network_policy: Option<NetworkPolicy>,
    /// Policy during the agent phase.
    pub run_network_policy: Option<NetworkPolicy>,
    /// Policy during evaluation.
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// Evaluation mode override.
    pub evaluation_environment_mode: Option<EvaluationEnvironmentMode>,
    /// Common bindings (values may be `${VAR}` references).
    pub env_variables: BTreeMap<String, String>,
    /// Agent-phase bindings.
    pub run_env_variables: BTreeMap<String, String>,
    /// Evaluation-command bindings.
    pub evaluation_env_variables: BTreeMap<String, String>,
    /// Fresh-verifier startup bindings (`None` = inherit).
    pub evaluation_environment_env_variables: Option<BTreeMap<String, String>>,
    /// Require bindings to be injected at environment startup.
    pub require_startup_env: Option<bool>,
    /// Build/start settings of the task environment.
    pub setup: EnvironmentSetup,
    /// Build/start settings of a fresh evaluation environment.
    pub evaluation_setup: EnvironmentSetup,
}

/// Every [`EnvironmentSpec`] field except `id` and `params` (config loading splits these
/// shared fields from provider params).
pub const ENVIRONMENT_SHARED_FIELDS: &[&str] = &[
    "resources",
    "run_resources",
    "evaluation_resources",
    "baseline_network_policy",
    "evaluation_baseline_network_policy",
    "run_network_policy",
    "evaluation_network_policy",
    "evaluation_environment_mode",
    "env_variables",
    "run_env_variables",
    "evaluation_env_variables",
    "evaluation_environment_env_variables",
    "require_startup_env",
    "setup",
    "evaluation_setup",
];

impl EnvironmentSpec {
    /// A spec for the given provider with every shared field unset.
    pub fn new(id: impl Into<String>) -> Self {
        EnvironmentSpec {
            id: id.into(),
            ..EnvironmentSpec::default()
        }
    }
}

/// How semantic attempts are reduced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptStrategy {
    /// Mean over the k attempts.
    #[default]
    Avg,
    /// pass@k.
    Pass,
}

impl AttemptStrategy {
    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStrategy::Avg => "avg",
            AttemptStrategy::Pass => "pass",
        }
    }
}

impl fmt::Display for AttemptStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The semantic attempt plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct AttemptSpec {
    /// Number of semantic attempts per task (≥ 1).
    pub k: u32,
    /// Reduction strategy.
    pub strategy: AttemptStrategy,
}

impl Default for AttemptSpec {
    fn default() -> Self {
        AttemptSpec {
            k: 1,
            strategy: AttemptStrategy::Avg,
        }
    }
}

/// Limits of one artifact collection/restore operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArtifactLimits {
    /// Maximum total size in MiB.
    pub max_mb: u64,
    /// Maximum number of filesystem entries.
    pub max_files: u64,
    /// Time budget per operation, in seconds.
    pub timeout_seconds: f64,
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        ArtifactLimits {
            max_mb: 16384,
            max_files: 100_000,
            timeout_seconds: 600.0,
        }
    }
}

/// A submission-preparation command run (with `bash -c`) in the agent sandbox before collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactCollectCommand {
    /// The shell command.
    pub command: String,
    /// Per-command timeout in seconds.
    #[serde(default = "default_collect_command_timeout")]
    pub timeout_seconds: f64,
    /// Target service (only `main` is supported).
    #[serde(default = "default_service")]
    pub service: String,
}

impl ArtifactCollectCommand {
    /// A command with the default timeout on the main service.
    pub fn new(command: impl Into<String>) -> Self {
        ArtifactCollectCommand {
            command: command.into(),
            timeout_seconds: default_collect_command_timeout(),
            service: default_service(),
        }
    }
}

fn default_collect_command_timeout() -> f64 {
    60.0
}

pub(crate) fn default_service() -> String {
    "main".to_string()
}

/// Execution settings of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecutionSpec {
    /// Maximum concurrent physical attempts.
    pub task_concurrency: u32,
    /// Semantic attempts.
    pub attempts: AttemptSpec,
    /// Recipe whitelist (empty = all eligible).
    pub enabled_recipes: Vec<String>,
    /// Never close task/evaluation environments.
    pub keep_environment: bool,
    /// Run analyzers per attempt.
    pub enable_analysis: bool,
    /// Analyzer configuration.
    pub analysis_params: JsonMap,
    /// Runtime retries per logical attempt.
    pub max_retries: u32,
    /// Regexes matched against ERROR issues to make them retryable (`None`/empty: only FATAL).
    pub retry_pattern_list: Option<Vec<String>>,
    /// Initial retry backoff, in seconds.
    pub retry_min_delay_seconds: f64,
    /// Maximum retry backoff, in seconds.
    pub retry_max_delay_seconds: f64,
    /// Run-phase timeout override.
    pub run_timeout_seconds: Option<f64>,
    /// Added to the harness watchdog only.
    pub run_timer_compensation_seconds: f64,
    /// Evaluation-phase timeout override.
    pub evaluation_timeout_seconds: Option<f64>,
    /// Multiplier applied to both phase timeouts.
    pub timeout_multiplier: f64,
    /// Replaces `timeout_multiplier` for the run phase.
    pub run_timeout_multiplier: Option<f64>,
    /// Replaces `timeout_multiplier` for evaluation.
    pub evaluation_timeout_multiplier: Option<f64>,
    /// Budget of the harness `collect_result` step, in seconds.
    pub runresult_collect_timeout_seconds: f64,
    /// Total budget of the artifact_collect commands.
    pub artifact_collect_timeout_seconds: Option<f64>,
    /// Artifact transfer limits.
    pub artifact_limits: ArtifactLimits,
    /// Persist artifacts locally (`None`: only for fresh evaluation).
    pub save_artifacts: Option<bool>,
    /// Replaces the task's extra artifact paths (`None` = inherit).
    pub artifacts: Option<Vec<ArtifactSpec>>,
    /// Replaces the task's collect commands (`None` = inherit).
    pub artifact_collect: Option<Vec<ArtifactCollectCommand>>,
    /// Limits of every attempt (unset = none).
    pub limits: AttemptLimits,
    /// The request's budget (`None` = none).
    pub budget: Option<Budget>,
    /// Harbor `uv-script` metrics of the run: scripts run as `uv run SCRIPT -i rewards.jsonl
    /// -o metric.json` over every attempt's rewards when the run ends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metric_scripts: Vec<String>,
    /// Keep only the tasks whose id matches one of these shell globs (Harbor's `-i`;
    /// Python's `fnmatch`: `*` also matches `/`; empty: every task).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include_tasks: Vec<String>,
    /// Then drop the tasks whose id matches one of these globs (Harbor's `-x`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_tasks: Vec<String>,
    /// Then keep the first N tasks (Harbor's `-l`; `None`: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_tasks: Option<u32>,
    /// Replaces `timeout_multiplier` for the harness's installs (Harbor's agent setup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_timeout_multiplier: Option<f64>,
    /// Replaces `timeout_multiplier` for building and opening the environment (Harbor's
    /// environment build; its 600 s default when the task names no build timeout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_timeout_multiplier: Option<f64>,
}

/// Limits of one attempt (`execution.limits`); each unset one is no limit. A harness that
/// runs an agent loop reads `max_turns`; the host enforces the others for every harness.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttemptLimits {
    /// Input plus output tokens of the attempt's model calls.
    pub max_tokens: Option<u64>,
    /// Cost of the attempt's model calls, in US dollars (needs the model's `pricing`).
    pub max_cost_usd: Option<f64>,
    /// Model calls of the attempt.
    pub max_model_calls: Option<u64>,
    /// Turns of an agent loop (enforced by the harness).
    pub max_turns: Option<u64>,
    /// Wall time of the run phase spent outside model calls, in seconds.
    pub working_seconds: Option<f64>,
}

impl AttemptLimits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == AttemptLimits::default()
    }
}

/// What happens to running attempts once a budget is used up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExhausted {
    /// They finish (their cost is spent on top of the budget).
    #[default]
    Finish,
    /// They are cancelled (not published).
    Cancel,
}

/// A budget (`execution.budget` per request, `runtime.budget` per orchestration): once spent,
/// no new attempt starts and the tasks not run are `skipped`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Cost of every model call, in US dollars (needs the model's `pricing`).
    pub max_cost_usd: Option<f64>,
    /// Input plus output tokens of every model call.
    pub max_tokens: Option<u64>,
    /// What happens to the running attempts when it is reached.
    pub on_exhausted: OnExhausted,
}

impl Default for ExecutionSpec {
    fn default() -> Self {
        ExecutionSpec {
            task_concurrency: 32,
            attempts: AttemptSpec::default(),
            enabled_recipes: Vec::new(),
            keep_environment: false,
            enable_analysis: true,
            analysis_params: JsonMap::new(),
            max_retries: 0,
            retry_pattern_list: None,
            retry_min_delay_seconds: 5.0,
            retry_max_delay_seconds: 60.0,
            run_timeout_seconds: None,
            run_timer_compensation_seconds: 120.0,
            evaluation_timeout_seconds: None,
            timeout_multiplier: 1.0,
            run_timeout_multiplier: None,
            evaluation_timeout_multiplier: None,
            runresult_collect_timeout_seconds: 60.0,
            artifact_collect_timeout_seconds: None,
            artifact_limits: ArtifactLimits::default(),
            save_artifacts: None,
            artifacts: None,
            artifact_collect: None,
            limits: AttemptLimits::default(),
            budget: None,
            metric_scripts: Vec::new(),
            include_tasks: Vec::new(),
            exclude_tasks: Vec::new(),
            n_tasks: None,
            setup_timeout_multiplier: None,
            build_timeout_multiplier: None,
        }
    }
}

/// Every [`ExecutionSpec`] field name.
pub const EXECUTION_FIELDS: &[&str] = &[
    "task_concurrency",
    "attempts",
    "enabled_recipes",
    "keep_environment",
    "enable_analysis",
    "analysis_params",
    "max_retries",
    "retry_pattern_list",
    "retry_min_delay_seconds",
    "retry_max_delay_seconds",
    "run_timeout_seconds",
    "run_timer_compensation_seconds",
    "evaluation_timeout_seconds",
    "timeout_multiplier",
    "run_timeout_multiplier",
    "evaluation_timeout_multiplier",
    "runresult_collect_timeout_seconds",
    "artifact_collect_timeout_seconds",
    "artifact_limits",
    "save_artifacts",
    "artifacts",
    "artifact_collect",
    "limits",
    "budget",
    "metric_scripts",
    "include_tasks",
    "exclude_tasks",
    "n_tasks",
    "setup_timeout_multiplier",
    "build_timeout_multiplier",
];

/// The [`ExecutionSpec`] fields written only when set, so that earlier requests read and hash
/// as they did.
pub const EXECUTION_FIELDS_WRITTEN_WHEN_SET: &[&str] = &[
    "metric_scripts",
    "include_tasks",
    "exclude_tasks",
    "n_tasks",
    "setup_timeout_multiplier",
    "build_timeout_multiplier",
];

/// Per-request result-reuse controls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRuntimeSpec {
    /// Reuse results of a previous run (`None` = configured default).
    pub reuse: Option<bool>,
    /// Run id to reuse (non-empty forces reuse).
    pub reuse_run_id: String,
    /// Resume evaluation from checkpoints (`None` = default).
    pub checkpoint_resume: Option<bool>,
    /// With reuse, rerun the tasks whose final outcome has one of these failure classes or
    /// issue codes instead of reusing them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerun: Vec<String>,
    /// With reuse, rerun the invalidated tasks (a final FATAL attempt).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rerun_invalid: bool,
}

/// Result namespace and requested run id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OutputSpec {
    /// Run name (may contain `/` for nested directories).
    pub run_name: String,
    /// Requested run id (empty = generated).
    pub run_id: String,
}

/// Provenance of the request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMetadata {
    /// Loaded config file.
    pub config_path: String,
    /// Trusted external recipe directories.
    pub recipe_dirs: Option<Vec<String>>,
    /// Name of the request in an orchestration.
    pub request_name: String,
}

/// The complete input of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Model under test.
    pub model: ModelSpec,
    /// Benchmark selection.
    pub benchmark: BenchmarkSpec,
    /// Harness selection.
    pub harness: HarnessSpec,
    /// Environment selection.
    pub environment: EnvironmentSpec,
    /// Execution settings.
    #[serde(default)]
    pub execution: ExecutionSpec,
    /// Reuse controls.
    #[serde(default)]
    pub runtime: RunRuntimeSpec,
    /// Output naming.
    #[serde(default)]
    pub output: OutputSpec,
    /// Provenance.
    #[serde(default)]
    pub metadata: RunMetadata,
}

impl RunRequest {
    /// Whether the harness id is [`HARNESS_NONE`] (a harness-free benchmark runs the task).
    pub fn is_harness_free(&self) -> bool {
        self.harness.id.trim() == HARNESS_NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(value: serde_json::Value) -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }

    fn sorted(fields: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn execution_spec_defaults() {
        let spec: ExecutionSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, ExecutionSpec::default());
        assert_eq!(spec.task_concurrency, 32);
        assert_eq!(
            spec.attempts,
            AttemptSpec {
                k: 1,
                strategy: AttemptStrategy::Avg
            }
        );
        assert!(spec.enable_analysis);
        assert_eq!(spec.artifact_limits.max_mb, 16384);
        assert_eq!(spec.artifact_limits.max_files, 100_000);
        assert_eq!(spec.artifact_limits.timeout_seconds, 600.0);
        assert_eq!(spec.run_timer_compensation_seconds, 120.0);
        let value = serde_json::to_value(&spec).unwrap();
        // Every field but the ones written only when set (so earlier requests read and
        // hash as they did).
        let written: Vec<&str> = EXECUTION_FIELDS
            .iter()
            .copied()
            .filter(|f| !EXECUTION_FIELDS_WRITTEN_WHEN_SET.contains(f))
            .collect();
        assert_eq!(keys(value.clone()), sorted(&written));
        assert_eq!(value["run_timeout_seconds"], serde_json::Value::Null);
        let partial: ExecutionSpec = serde_json::from_value(
            json!({"attempts": {"k": 3}, "artifact_limits": {"max_mb": 1}, "future": 1}),
        )
        .unwrap();
        assert_eq!(partial.attempts.k, 3);
        assert_eq!(partial.attempts.strategy, AttemptStrategy::Avg);
        assert_eq!(partial.artifact_limits.max_files, 100_000);
    }

    #[test]
    fn environment_spec_defaults_and_shared_fields() {
        let spec: EnvironmentSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, EnvironmentSpec::default());
        let spec: EnvironmentSpec = serde_json::from_str(r#"{"id":"docker"}"#).unwrap();
        assert_eq!(spec, EnvironmentSpec::new("docker"));
        let mut expected = sorted(ENVIRONMENT_SHARED_FIELDS);
        expected.extend(["id".to_string(), "params".to_string()]);
        expected.sort();
        assert_eq!(keys(serde_json::to_value(&spec).unwrap()), expected);
        let spec: EnvironmentSpec = serde_json::from_value(json!({
            "id": "docker",
            "run_network_policy": "no-network",
            "evaluation_environment_mode": "none",
            "setup": {"image": "python:3.12"},
            "env_variables": {"B": "2", "A": "1"},
        }))
        .unwrap();
        assert_eq!(spec.run_network_policy, Some(NetworkPolicy::no_network()));
        assert_eq!(
            spec.evaluation_environment_mode,
            Some(EvaluationEnvironmentMode::NoEnvironment)
        );
        assert_eq!(spec.setup.image.as_deref(), Some("python:3.12"));
        let back: EnvironmentSpec =
            serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn model_debug_hides_key() {
        let mut model = ModelSpec::new("m");
        model.api_key = "sk-secret-value".into();
        let printed = format!("{model:?}");
        assert!(!printed.contains("sk-secret-value"), "{printed}");
        assert!(printed.contains(REDACTED));
        let empty = format!("{:?}", ModelSpec::new("m"));
        assert!(!empty.contains(REDACTED));
        let request = RunRequest {
            model,
            benchmark: BenchmarkSpec::new("b"),
            harness: HarnessSpec::new("h"),
            environment: EnvironmentSpec::new("host_process"),
            execution: ExecutionSpec::default(),
            runtime: RunRuntimeSpec::default(),
            output: OutputSpec::default(),
            metadata: RunMetadata::default(),
        };
        assert!(!format!("{request:?}").contains("sk-secret-value"));
        assert!(!format!("{request:#?}").contains("sk-secret-value"));
    }

    #[test]
    fn api_protocols() {
        let one = |s: &str| ApiProtocolSpec::One(s.into()).protocols();
        assert!(one("").is_empty());
        assert!(one("auto").is_empty());
        assert_eq!(one("anthropic"), ["anthropic"]);
        let many = ApiProtocolSpec::Many(vec![
            "openai-chat".into(),
            "anthropic".into(),
            "openai-chat".into(),
        ]);
        assert_eq!(many.protocols(), ["openai-chat", "anthropic"]);
        let m: ModelSpec =
            serde_json::from_value(json!({"id": "m", "api_protocol": ["anthropic"]})).unwrap();
        assert_eq!(
            m.api_protocol,
            ApiProtocolSpec::Many(vec!["anthropic".into()])
        );
        let m: ModelSpec = serde_json::from_value(json!({"id": "m"})).unwrap();
        assert_eq!(m, ModelSpec::new("m"));
    }

    #[test]
    fn run_request_round_trip() {
        let value = json!({
            "model": {"id": "gpt", "base_url": "http://x", "api_key": "${OPENAI_API_KEY}", "api_protocol": "openai-chat"},
            "benchmark": {"id": "spc", "params": {"version": "v1"}},
            "harness": {"id": "none"},
            "environment": {"id": "host_process"},
            "execution": {"max_retries": 2, "artifacts": ["/app/out.txt"],
                          "artifact_collect": [{"command": "true"}]},
            "runtime": {"reuse": true},
            "output": {"run_name": "exp/1"},
        });
        let req: RunRequest = serde_json::from_value(value).unwrap();
        assert!(req.is_harness_free());
        assert_eq!(req.execution.max_retries, 2);
        let collect = &req.execution.artifact_collect.as_ref().unwrap()[0];
        assert_eq!(collect, &ArtifactCollectCommand::new("true"));
        assert_eq!(
            req.execution.artifacts.as_ref().unwrap()[0].source,
            "/app/out.txt"
        );
        let back: RunRequest = serde_json::from_value(serde_json::to_value(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        assert!(serde_json::from_value::<RunRequest>(json!({"model": {"id": "m"}})).is_err());
    }

    #[test]
    fn merges() {
        let base = ResourceRequirements {
            cpu: Some(2.0),
            memory_mb: Some(1024),
            ..Default::default()
        };
        let over = ResourceRequirements {
            memory_mb: Some(4096),
            gpu: Some(1),
            ..Default::default()
        };
        let merged = base.merge(&over);
        assert_eq!(merged.cpu, Some(2.0));
        assert_eq!(merged.memory_mb, Some(4096));
        assert_eq!(merged.gpu, Some(1));
    }
}
