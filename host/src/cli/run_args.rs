//! The arguments of `run`, `launch` and `plan`: the runtime flags they share, the CI gates,
//! and each command's own.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::{
    count, json_object, json_string_list, positive_number, provider_count, provider_rate,
};
use super::{ProgressArg, StrategyArg};

/// Process-wide runtime flags shared by `run` and `launch`.
#[derive(Debug, Args, Clone, Default)]
pub struct RuntimeFlags {
    /// Root directory of results
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<String>,
    /// Root directory of downloaded data (datasets, caches; `runtime.data_dir`)
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<String>,
    /// Orchestration deadline in seconds (0 disables)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub timeout_seconds: Option<f64>,
    /// How long cleanup may take after cancellation
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub cleanup_grace_seconds: Option<f64>,
    /// Save an evaluation checkpoint once an evaluation has run this long (0: always)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub checkpoint_after_seconds: Option<f64>,
    /// Terminal progress [default: auto]
    #[arg(long, value_enum)]
    pub progress: Option<ProgressArg>,
    /// Seconds between two `--progress plain` lines [default: 10]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub progress_interval_seconds: Option<f64>,
    /// Console log level (DEBUG, INFO, WARNING, ERROR, CRITICAL)
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Level of each run's run.log (DEBUG, INFO, WARNING, ERROR, CRITICAL; default DEBUG)
    #[arg(long, value_name = "LEVEL")]
    pub file_log_level: Option<String>,
    /// Install the harnesses' dependencies (the agent CLIs of installed agents) into the
    /// install cache before the first task, instead of when a task first needs them
    #[arg(long)]
    pub auto_install_dependencies: bool,
    /// Maximum open environments of a provider (repeatable)
    #[arg(long = "provider-limit", value_name = "PROVIDER=N", value_parser = provider_count)]
    pub provider_limits: Vec<(String, u32)>,
    /// Environment opens per second of a provider (repeatable)
    #[arg(long = "env-open-qps", value_name = "PROVIDER=QPS", value_parser = provider_rate)]
    pub env_open_qps: Vec<(String, f64)>,
    /// Where tasks execute: in this process, or as Slurm jobs (`[runtime.slurm]`)
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorArg>,
    /// Stop starting tasks once non-agent failures exceed RATE of the finished tasks (a
    /// count when 1 or more)
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub fail_on_error: Option<f64>,
    /// Export the run's OpenTelemetry spans as it runs to this OTLP/HTTP traces endpoint
    /// (`runtime.otel.endpoint`; a collector that is down is one warning, never a failure)
    #[arg(long, value_name = "URL")]
    pub otel_endpoint: Option<String>,
    /// With the spans, export prompts, completions, tool arguments and results
    /// (`runtime.otel.content`)
    #[arg(long)]
    pub otel_content: bool,
}

/// Executors.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExecutorArg {
    /// In this process
    Local,
    /// As Slurm jobs on the cluster's nodes
    Slurm,
}

/// `agentcompass-host run BENCHMARK HARNESS MODEL [flags]`.
#[derive(Debug, Args, Clone)]
pub struct RunCmd {
    /// Benchmark id
    pub benchmark: String,
    /// Harness id (`none` for a harness-free benchmark)
    pub harness: String,
    /// Model id
    pub model: String,
    /// Environment provider
    #[arg(long, default_value = "host_process")]
    pub env: String,
    /// Benchmark parameters (JSON object, merged over the config entry)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub benchmark_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Harness parameters (JSON object)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub harness_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Environment fields and provider parameters (JSON object)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub env_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Model generation parameters (JSON object)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub model_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// ExecutionSpec fields (JSON object, merged over the config `execution`)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub execution_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Model endpoint base URL (literal or '${VAR}')
    #[arg(long, value_name = "URL")]
    pub model_base_url: Option<String>,
    /// Model API key (literal or '${VAR}'; never printed or persisted)
    #[arg(long, value_name = "KEY")]
    pub model_api_key: Option<String>,
    /// Model API protocol: openai-chat, openai-responses, anthropic, auto, or a JSON list
    #[arg(long, value_name = "PROTOCOL")]
    pub model_api_protocol: Option<String>,
    /// Wrap the API key as upstream does (`model.wrap_api_key`: the key reaches the
    /// environment only through the host's relay, wrapped in a per-run token)
    #[arg(long)]
    pub wrap_api_key: bool,
    /// Keep the model endpoint's concurrency fixed at `model.params.max_connections` (or the
    /// task concurrency) instead of halving it on rate limits and growing it back
    /// (`model.params.adaptive_concurrency = false`)
    #[arg(long)]
    pub no_adaptive_concurrency: bool,
    /// Maximum attempts running at once [default: 32, or `execution.task_concurrency`]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub task_concurrency: Option<u32>,
    /// Semantic attempts per task [default: 1, or `execution.attempts.k`]
    #[arg(short = 'k', long, value_name = "K", allow_negative_numbers = true, value_parser = count)]
    pub k: Option<u32>,
    /// How semantic attempts are scheduled and scored
    #[arg(long, value_enum)]
    pub attempt_strategy: Option<StrategyArg>,
    /// Runtime retries per attempt [default: 0, or `execution.max_retries`]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub max_retries: Option<u32>,
    /// Regexes of retryable error messages (JSON array)
    // The fully qualified `Vec` makes clap treat the list as one value (the parsed JSON array)
    // rather than as repeated occurrences.
    #[arg(long, value_name = "JSON", value_parser = json_string_list)]
    pub retry_pattern_list: Option<::std::vec::Vec<String>>,
    /// Enable only these recipes (repeatable)
    #[arg(long = "recipe", value_name = "ID")]
    pub recipes: Vec<String>,
    /// A Harbor `uv-script` metric of the run: run as `uv run SCRIPT -i rewards.jsonl -o
    /// metric.json` over every attempt's rewards when the run ends (repeatable;
    /// `execution.metric_scripts`)
    #[arg(long = "metric-script", value_name = "FILE")]
    pub metric_scripts: Vec<String>,
    /// Which of the benchmark's tasks run (Harbor's `-i`, `-x`, `-l`)
    #[command(flatten)]
    pub selection: TaskSelectionFlags,
    /// Timeout multipliers (Harbor's)
    #[command(flatten)]
    pub timeouts: TimeoutFlags,
    /// How tasks' declared resources are enforced, and values that replace them
    #[command(flatten)]
    pub resources: ResourceFlags,
    /// What the agent gets besides the instruction (Harbor's flags)
    #[command(flatten)]
    pub agent: AgentFlags,
    /// Process-wide runtime options
    #[command(flatten)]
    pub runtime: RuntimeFlags,
    /// Extra namespace path under the results dir
    #[arg(long, value_name = "NAME")]
    pub run_name: Option<String>,
    /// Run id (default: a timestamp)
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Reuse the latest run of this namespace, or the given run id
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "")]
    pub reuse: Option<String>,
    /// With --reuse, do not resume evaluations from checkpoints
    #[arg(long)]
    pub no_checkpoint_resume: bool,
    /// With --reuse, rerun the tasks whose final outcome has these failure classes (model,
    /// environment, ...) or issue codes, keeping the others
    #[arg(long, value_name = "CLASS_OR_CODE", num_args = 1.., value_delimiter = ',')]
    pub rerun: Vec<String>,
    /// With --reuse, rerun the invalidated tasks (a final FATAL attempt)
    #[arg(long)]
    pub rerun_invalid: bool,
    /// Leave environments open after the run (see `env list`)
    #[arg(long)]
    pub keep_environment: bool,
    /// Run the analyzers on every attempt (the default, as upstream's)
    #[arg(long, overrides_with = "no_enable_analysis")]
    pub enable_analysis: bool,
    /// Do not run the analyzers
    #[arg(long)]
    pub no_enable_analysis: bool,
    /// Analyzer selection and options (JSON object: `analyzers`, `exclude_analyzers`,
    /// `<AnalyzerId>: {...}`)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub analysis_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// CI gates
    #[command(flatten)]
    pub gates: GateFlags,
    /// Do not check the model endpoint before the first task (for gateways that cannot be
    /// probed with a `GET .../models`)
    #[arg(long)]
    pub no_endpoint_check: bool,
    /// Print the resolved request as JSON (secrets redacted) and stop, after the checks a run
    /// makes before its first task (tasks opened and counted: `selected_tasks`)
    #[arg(long)]
    pub dry_run: bool,
}

/// Which of the benchmark's tasks run: include, then exclude, then the first N (Harbor's
/// `-i`, `-x`, `-l`; folded into `execution`, over `--execution-params`).
#[derive(Debug, Args, Clone, Default)]
pub struct TaskSelectionFlags {
    /// Keep only the tasks whose id matches this shell glob (`*` also matches `/`;
    /// repeatable: any of them; `execution.include_tasks`)
    #[arg(long = "include-task", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Then drop the tasks whose id matches this glob (repeatable; `execution.exclude_tasks`)
    #[arg(long = "exclude-task", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Then keep the first N tasks, in the benchmark's order (`execution.n_tasks`)
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub n_tasks: Option<u32>,
}

/// Timeout multipliers: a phase's replaces the common one (folded into `execution`).
#[derive(Debug, Args, Clone, Default)]
pub struct TimeoutFlags {
    /// Multiplies the run and evaluation timeouts (`execution.timeout_multiplier`)
    #[arg(long, value_name = "X", value_parser = positive_number)]
    pub timeout_multiplier: Option<f64>,
    /// Multiplies the agent's (run phase) timeout instead
    /// (`execution.run_timeout_multiplier`)
    #[arg(long, visible_alias = "run-timeout-multiplier", value_name = "X", value_parser = positive_number)]
    pub agent_timeout_multiplier: Option<f64>,
    /// Multiplies the verifier's (evaluation phase) timeout instead
    /// (`execution.evaluation_timeout_multiplier`)
    #[arg(long, visible_alias = "evaluation-timeout-multiplier", value_name = "X", value_parser = positive_number)]
    pub verifier_timeout_multiplier: Option<f64>,
    /// Multiplies the timeouts of the harness's installs
    /// (`execution.setup_timeout_multiplier`)
    #[arg(long, value_name = "X", value_parser = positive_number)]
    pub agent_setup_timeout_multiplier: Option<f64>,
    /// Multiplies the environment's build timeout (the task's, or 600 s;
    /// `execution.build_timeout_multiplier`)
    #[arg(long, value_name = "X", value_parser = positive_number)]
    pub environment_build_timeout_multiplier: Option<f64>,
}

impl TaskSelectionFlags {
    /// The `execution` fields the flags set.
    pub fn fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut fields = Vec::new();
        if !self.include.is_empty() {
            fields.push(("include_tasks", serde_json::json!(self.include)));
        }
        if !self.exclude.is_empty() {
            fields.push(("exclude_tasks", serde_json::json!(self.exclude)));
        }
        if let Some(n) = self.n_tasks {
            fields.push(("n_tasks", n.into()));
        }
        fields
    }
}

impl TimeoutFlags {
    /// The `execution` fields the flags set.
    pub fn fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        [
            ("timeout_multiplier", self.timeout_multiplier),
            ("run_timeout_multiplier", self.agent_timeout_multiplier),
            (
                "evaluation_timeout_multiplier",
                self.verifier_timeout_multiplier,
            ),
            (
                "setup_timeout_multiplier",
                self.agent_setup_timeout_multiplier,
            ),
            (
                "build_timeout_multiplier",
                self.environment_build_timeout_multiplier,
            ),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v.into())))
        .collect()
    }
}

/// How a declared resource is enforced (Harbor's `--cpus` / `--memory` modes).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ResourceModeArg {
    /// A hard limit where the environment sets limits, else not enforced (recorded)
    Auto,
    /// A hard limit; refused where the environment cannot set one
    Limit,
    /// A reservation (refused: no environment here reserves)
    Request,
    /// A reservation and a limit (refused, as request)
    Guarantee,
    /// Not applied
    Ignore,
}

/// Harbor's resource flags, folded into the environment's `resources` (over `--env-params`).
#[derive(Debug, Args, Clone, Default)]
pub struct ResourceFlags {
    /// How `cpus` is enforced [default: auto] (`environment.resources.cpu_mode`)
    #[arg(long, value_enum, value_name = "MODE")]
    pub cpus_mode: Option<ResourceModeArg>,
    /// How `memory_mb` is enforced [default: auto] (`environment.resources.memory_mode`)
    #[arg(long, value_enum, value_name = "MODE")]
    pub memory_mode: Option<ResourceModeArg>,
    /// CPUs of every task, replacing its `cpus` (`environment.resources.cpu`)
    #[arg(long, value_name = "N", value_parser = positive_number)]
    pub override_cpus: Option<f64>,
    /// Memory of every task in MiB, replacing its `memory_mb`
    #[arg(long, value_name = "MB", value_parser = count)]
    pub override_memory_mb: Option<u32>,
    /// Disk of every task in MiB, replacing its `storage_mb`
    #[arg(long, value_name = "MB", value_parser = count)]
    pub override_storage_mb: Option<u32>,
    /// GPUs of every task, replacing its `gpus` (0: none)
    #[arg(long, value_name = "N", value_parser = count)]
    pub override_gpus: Option<u32>,
}

/// CI gates checked after the run (`run` and `launch`).
#[derive(Debug, Args, Clone, Default)]
pub struct GateFlags {
    /// Exit 3 when the series (id such as `correct.avg@2`, or a metric id: its first series) is
    /// below VALUE (repeatable)
    #[arg(long = "fail-under", value_name = "METRIC=VALUE")]
    pub fail_under: Vec<agentcompass_host::gates::Threshold>,
    /// Exit 3 when the run is significantly worse than this run (paired bootstrap interval of
    /// the headline metric entirely below zero, on the tasks both share)
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// With --baseline, the drop tolerated (a difference of at most DELTA does not fail)
    #[arg(
        long,
        value_name = "DELTA",
        requires = "baseline",
        default_value_t = 0.0
    )]
    pub max_regression: f64,
    /// Write JUnit XML (one test case per task) to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

impl GateFlags {
    /// The gates.
    pub fn gates(&self) -> agentcompass_host::gates::Gates {
        agentcompass_host::gates::Gates {
            fail_under: self.fail_under.clone(),
            baseline: self.baseline.clone(),
            max_regression: self.max_regression,
            junit: self.junit.clone(),
        }
    }
}

/// `agentcompass-host launch FILE [flags]`.
#[derive(Debug, Args, Clone)]
pub struct LaunchCmd {
    /// Orchestration file
    pub file: PathBuf,
    /// Maximum attempts running at once, across every request [default: 32, or the
    /// file's `task_concurrency`]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub task_concurrency: Option<u32>,
    /// Run id for every request
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Reuse earlier results (sets defaults.runtime.reuse)
    #[arg(long)]
    pub reuse: bool,
    /// With --reuse, rerun the tasks whose final outcome has these failure classes or issue
    /// codes (sets defaults.runtime.rerun)
    #[arg(long, value_name = "CLASS_OR_CODE", num_args = 1.., value_delimiter = ',')]
    pub rerun: Vec<String>,
    /// With --reuse, rerun the invalidated tasks (sets defaults.runtime.rerun_invalid)
    #[arg(long)]
    pub rerun_invalid: bool,
    /// Which of each request's tasks run (over `defaults.execution`, under a request's own)
    #[command(flatten)]
    pub selection: TaskSelectionFlags,
    /// Timeout multipliers of every request (over `defaults.execution`, under a request's own)
    #[command(flatten)]
    pub timeouts: TimeoutFlags,
    /// Process-wide runtime options
    #[command(flatten)]
    pub runtime: RuntimeFlags,
    /// CI gates
    #[command(flatten)]
    pub gates: GateFlags,
    /// Do not check the requests' model endpoints before the first task (for gateways that
    /// cannot be probed with a `GET .../models`)
    #[arg(long)]
    pub no_endpoint_check: bool,
    /// Print the resolved orchestration as JSON (secrets redacted) and stop, after the checks
    /// a launch makes before its first task (tasks opened and counted: `selected_tasks`)
    #[arg(long)]
    pub dry_run: bool,
}

/// `agentcompass-host plan BENCHMARK HARNESS MODEL --task ID [run flags]`.
#[derive(Debug, Args, Clone)]
pub struct PlanCmd {
    /// The run whose plan to show (same arguments and flags as `run`)
    #[command(flatten)]
    pub run: RunCmd,
    /// Task id
    #[arg(long, value_name = "ID")]
    pub task: String,
    /// Semantic attempt number
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub attempt: u32,
}

/// Harbor's agent flags: tools, skills, variables and options for the agent of every task.
#[derive(Debug, Args, Clone, Default)]
pub struct AgentFlags {
    /// MCP servers for the agent, in Harbor's format (`.json` with `mcpServers`, `.yaml`,
    /// `.toml`; repeatable): they replace the task's servers of the same name
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_configs: Vec<std::path::PathBuf>,
    /// A skill for the agent: a directory holding SKILL.md, a root of such directories, or a
    /// git source (`org/name[@ref]`, `https://host/org/name[/tree/REF/DIR]`; repeatable)
    #[arg(
        long = "skill",
        visible_alias = "skills",
        value_name = "DIR|GIT_SOURCE"
    )]
    pub skills: Vec<String>,
    /// A variable for the agent's processes (`${VAR}` values read from this environment and
    /// kept secret; repeatable; Harbor's `--ae`)
    #[arg(long = "agent-env", visible_alias = "ae", value_name = "KEY=VALUE")]
    pub agent_env: Vec<String>,
    /// A harness parameter, its value read as JSON when it parses (repeatable; Harbor's
    /// `--ak`; over `--harness-params`)
    #[arg(long = "agent-kwarg", visible_alias = "ak", value_name = "KEY=VALUE")]
    pub agent_kwargs: Vec<String>,
    /// A file whose text is appended to every task's instruction after a blank line
    /// (repeatable)
    #[arg(long = "extra-instruction-path", value_name = "FILE")]
    pub extra_instruction_paths: Vec<std::path::PathBuf>,
}

impl AgentFlags {
    /// The flags as the request's agent arguments.
    pub fn to_args(&self) -> agentcompass_host::request::agent_args::AgentArgs {
        agentcompass_host::request::agent_args::AgentArgs {
            mcp_configs: self.mcp_configs.clone(),
            skills: self.skills.clone(),
            env: self.agent_env.clone(),
            kwargs: self.agent_kwargs.clone(),
            extra_instruction_paths: self.extra_instruction_paths.clone(),
        }
    }
}
