//! Command-line definitions (clap). Parsing only; `main.rs` wires commands to the library.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A fast, plugin-based evaluation host for AI agents.
#[derive(Debug, Parser)]
#[command(name = "agentcompass-host", version, about, max_term_width = 100)]
pub struct Cli {
    /// Options every command understands.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Configuration file (repeatable; loaded after the user and project configs, in order)
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub configs: Vec<PathBuf>,
    /// Trusted plugin directory (repeatable; loaded after the bundled plugins, in order)
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dirs: Vec<PathBuf>,
    /// Trusted recipe-plugin directory (repeatable; loaded after the plugin directories)
    #[arg(long = "recipe-dir", value_name = "DIR", global = true)]
    pub recipe_dirs: Vec<PathBuf>,
    /// Lock file pinning every plugin's sha256 (`[plugins] name = "<sha256>"`)
    #[arg(long = "plugin-lock", value_name = "FILE", global = true)]
    pub plugin_lock: Option<PathBuf>,
    /// The install cache of the agents harnesses run inside environments (default
    /// `~/.cache/agentcompass-host/installs`)
    #[arg(long = "install-cache-dir", value_name = "DIR", global = true)]
    pub install_cache_dir: Option<PathBuf>,
    /// Do not load the plugins bundled next to the binary (`<install dir>/plugins`)
    #[arg(long = "no-bundled-plugins", global = true)]
    pub no_bundled_plugins: bool,
    /// Print details (for example abi_stable layout reports of refused plugins)
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate MODEL with HARNESS on BENCHMARK
    Run(Box<RunCmd>),
    /// Run an orchestration file (TOML, YAML or JSON) of named requests
    Launch(Box<LaunchCmd>),
    /// Print the resolved plan of one task (audit view) without opening anything
    Plan(Box<PlanCmd>),
    /// List or release environments left open (crash, --keep-environment)
    Env {
        /// Environment command
        #[command(subcommand)]
        command: EnvCommand,
    },
    /// List or cancel the Slurm jobs of runs (`runtime.executor = "slurm"`)
    Cluster {
        /// Cluster command
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Install the agents harnesses run inside environments into the install cache
    Agents {
        /// Agents command
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// Serve a read-only web viewer over a results directory (loopback by default)
    View(ViewCmd),
    /// Write one self-contained HTML file of a run (opens from file://, no network)
    Report(ReportCmd),
    /// Recompute metrics.json and summary.md of a run directory from its task details
    Summary {
        /// The run directory (`<results>/<namespace>/<run_id>`)
        run_dir: PathBuf,
        /// Print the recomputed summary.md without writing anything
        #[arg(long)]
        dry_run: bool,
        /// Benchmark parameters merged over the run's (JSON object); `sample_ids` re-scores
        /// only those tasks
        #[arg(long, value_name = "JSON", value_parser = json_object)]
        benchmark_params: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// Run the analyzers over an existing run (every attempt's analysis_result and the run's
    /// analysis_summary.json/.md), into a copy of the run or, with --override, in place
    Analysis(AnalysisCmd),
    /// Compare run B against run A on the tasks both share: paired differences with a
    /// bootstrap interval, McNemar's exact test, per-category deltas, tasks fixed and broken
    Compare(CompareCmd),
    /// List registered components or loaded plugins
    List {
        /// What to list
        kind: ListKind,
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Inspect configuration
    Config {
        /// Configuration command
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Check and package plugins
    Plugin {
        /// Plugin command
        #[command(subcommand)]
        command: PluginCommand,
    },
}

/// `view [RESULTS_DIR] [--host H] [--port P] [--open]`.
#[derive(Debug, Args)]
pub struct ViewCmd {
    /// The results directory (default: the configured results_dir)
    pub results_dir: Option<PathBuf>,
    /// The address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The first port to try (the next 99 are tried if it is taken; 0: any free port)
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Open the viewer in a browser (`xdg-open`)
    #[arg(long)]
    pub open: bool,
}

/// `analysis --input RUN_DIR [--analysis-params JSON] [--override | --output DIR]`.
#[derive(Debug, Args)]
pub struct AnalysisCmd {
    /// The run directory to analyze
    #[arg(long, value_name = "RUN_DIR")]
    pub input: PathBuf,
    /// Analyzer selection and options (JSON object), over the run's execution.analysis_params
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub analysis_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Rewrite the run in place
    #[arg(long = "override", conflicts_with = "output")]
    pub in_place: bool,
    /// Write the analyzed copy here (default: a new sibling run directory named by the time)
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// `compare RUN_A RUN_B [--json] [--metric ID]`.
#[derive(Debug, Args)]
pub struct CompareCmd {
    /// The baseline run directory
    pub run_a: PathBuf,
    /// The run compared against it
    pub run_b: PathBuf,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
    /// The metric to compare (default: the headline metric of RUN_A)
    #[arg(long, value_name = "ID")]
    pub metric: Option<String>,
}

/// `report RUN_DIR [--out FILE] [--max-trajectories N]`.
#[derive(Debug, Args)]
pub struct ReportCmd {
    /// The run directory (`<results>/<namespace>/<run_id>`)
    pub run_dir: PathBuf,
    /// Where to write the report (default: `RUN_DIR/report.html`)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Include the attempts and trajectories of at most N tasks, those that were not correct
    /// first (every task of a smaller run)
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_trajectories: usize,
}

/// What `list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListKind {
    /// Benchmarks
    Benchmark,
    /// Harnesses
    Harness,
    /// Environment providers
    #[value(alias = "environment")]
    Env,
    /// Recipes
    Recipe,
    /// Analyzers (with their category)
    Analyzer,
    /// Loaded plugins
    Plugin,
    /// Write ./agentcompass_components.md (every kind, the model API protocols) and print its
    /// path
    Dump,
}

/// A component kind named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// A benchmark
    Benchmark,
    /// A harness
    Harness,
    /// An environment provider
    #[value(alias = "environment")]
    Env,
    /// A recipe
    Recipe,
    /// An analyzer
    Analyzer,
}

/// `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the merged effective configuration (secrets redacted)
    Show {
        /// Output format
        #[arg(long, value_enum, default_value_t = ShowFormat::Toml)]
        format: ShowFormat,
        /// Also show these benchmarks' effective parameters (their defaults merged with the
        /// configuration; space-separated or repeated)
        #[arg(long, value_name = "ID", num_args = 1..)]
        benchmark: Vec<String>,
        /// Also show these harnesses' effective parameters
        #[arg(long, value_name = "ID", num_args = 1..)]
        harness: Vec<String>,
        /// Also show these environment providers' effective parameters
        #[arg(long, value_name = "ID", num_args = 1..)]
        env: Vec<String>,
    },
    /// Show a component's parameters (name, type, default, description)
    Docs {
        /// Component kind
        kind: KindArg,
        /// Component id
        id: String,
    },
}

/// `plugin` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Write a new plugin crate (Cargo.toml, src/lib.rs with a working component and unit
    /// tests, README.md) into DIR/NAME
    New {
        /// Crate, plugin and component name (lowercase letters, digits, `-`, `_`)
        name: String,
        /// Kind of the component to generate
        #[arg(long, value_enum)]
        kind: KindArg,
        /// Parent directory of the new crate (default: the current directory)
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        /// Depend on agentcompass-plugin-api at this path (default: the host's source tree
        /// when it exists, else version 0.1)
        #[arg(long, value_name = "PATH")]
        api_path: Option<PathBuf>,
    },
    /// Run every trust and compatibility check on plugin files or directories without
    /// registering them (exit 0 when all pass, 1 otherwise)
    Verify {
        /// Plugin libraries (`NAME.so`) or directories of them
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Copy built plugin libraries into a directory as `NAME.so` with their manifest
    /// `NAME.plugin.toml` (name, version, host_api, components, sha256)
    Package {
        /// Built cdylib files (for example target/release/libexample_pack.so)
        #[arg(required = true, value_name = "LIBRARY")]
        libraries: Vec<PathBuf>,
        /// Output directory (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Supported host plugin-API range (default: `^<API version the plugin was built with>`)
        #[arg(long, value_name = "SEMVER_REQ")]
        host_api: Option<String>,
    },
}

/// `config show` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// TOML
    Toml,
    /// JSON
    Json,
    /// YAML (upstream's default)
    #[value(alias = "yml")]
    Yaml,
}

/// Terminal progress modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    /// A live view on a terminal, nothing otherwise
    Auto,
    /// Plain lines
    Plain,
    /// Nothing (progress files only)
    None,
}

/// Semantic-attempt strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Run all k attempts and average
    Avg,
    /// Stop at the first success (pass@k)
    Pass,
}

/// Why a flag's value was refused (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    /// The value is not JSON.
    #[error("invalid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The value is JSON of another type.
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// The value is not a JSON list of strings.
    #[error("expected a JSON array of strings: {0}")]
    NotAStringList(serde_json::Error),
    /// The value has another shape.
    #[error("expected {expected}, found `{found}`")]
    Expected {
        /// What the flag takes.
        expected: String,
        /// The value given.
        found: String,
    },
}

impl ArgError {
    fn expected(expected: impl Into<String>, found: &str) -> Self {
        ArgError::Expected {
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}

fn json_object(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, ArgError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(ArgError::NotAnObject(
            agentcompass_plugin_api::contracts::json_type_name(&other),
        )),
        Err(e) => Err(ArgError::NotJson(e)),
    }
}

fn json_string_list(text: &str) -> Result<Vec<String>, ArgError> {
    serde_json::from_str(text).map_err(ArgError::NotAStringList)
}

/// A whole number ≥ 0 (negative values reach this parser, so the error names the flag instead
/// of clap's "unexpected argument" tip).
fn count(text: &str) -> Result<u32, ArgError> {
    text.trim()
        .parse()
        .map_err(|_| ArgError::expected("a whole number ≥ 0", text))
}

fn provider_count(text: &str) -> Result<(String, u32), ArgError> {
    let (provider, value) = text
        .split_once('=')
        .ok_or_else(|| ArgError::expected("PROVIDER=N", text))?;
    let value = value
        .parse()
        .map_err(|_| ArgError::expected(format!("a whole number after `{provider}=`"), value))?;
    Ok((provider.to_string(), value))
}

fn provider_rate(text: &str) -> Result<(String, f64), ArgError> {
    let (provider, value) = text
        .split_once('=')
        .ok_or_else(|| ArgError::expected("PROVIDER=QPS", text))?;
    let rate: f64 = value
        .parse()
        .map_err(|_| ArgError::expected(format!("a number after `{provider}=`"), value))?;
    if !(rate.is_finite() && rate >= 0.0) {
        return Err(ArgError::expected(
            format!("a rate ≥ 0 after `{provider}=`"),
            &rate.to_string(),
        ));
    }
    Ok((provider.to_string(), rate))
}

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
    /// Terminal progress
    #[arg(long, value_enum)]
    pub progress: Option<ProgressArg>,
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
    /// Maximum attempts running at once
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub task_concurrency: Option<u32>,
    /// Semantic attempts per task
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = count)]
    pub k: Option<u32>,
    /// How semantic attempts are scheduled and scored
    #[arg(long, value_enum)]
    pub attempt_strategy: Option<StrategyArg>,
    /// Runtime retries per attempt
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
    /// Print the resolved request as JSON (secrets redacted) and stop
    #[arg(long)]
    pub dry_run: bool,
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
    /// Maximum attempts running at once, across every request
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
    /// Process-wide runtime options
    #[command(flatten)]
    pub runtime: RuntimeFlags,
    /// CI gates
    #[command(flatten)]
    pub gates: GateFlags,
    /// Print the resolved orchestration as JSON (secrets redacted) and stop
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

/// `agents` subcommands.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Install (prefetch) what each HARNESS runs inside ENV's environments, once per machine
    /// and platform, so that later runs need no network for it
    Install(AgentsInstallCmd),
}

/// `agentcompass-host agents install HARNESS... [--env ENV] [--env-params JSON]`.
#[derive(Debug, Args, Clone)]
pub struct AgentsInstallCmd {
    /// Harness ids (claude_code, codex, mini_swe_agent, qwen_code, ...)
    #[arg(required = true, value_name = "HARNESS")]
    pub harnesses: Vec<String>,
    /// Environment provider the agents will run in (the install is made in one of its
    /// environments, with a public network)
    #[arg(long, default_value = "sandbox")]
    pub env: String,
    /// Environment fields and provider parameters (JSON object; `{"setup": {"image": ...}}`)
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub env_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Harness parameters (JSON object; `{"version": ...}`), for every HARNESS
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub harness_params: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `cluster` subcommands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Print the still-active Slurm jobs of every run under a results directory (JSON)
    Jobs {
        /// Results directory (default: the configured results_dir)
        results_dir: Option<PathBuf>,
    },
    /// Cancel the still-active Slurm jobs of runs (a coordinator that died leaves them running)
    Cancel {
        /// Run directories
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
    },
    /// Run one unit of work of a run (what each Slurm job runs on its node)
    #[command(hide = true)]
    Work {
        /// The run directory (on the shared file system)
        run_dir: PathBuf,
        /// The unit file (`RUN_DIR/.cluster/units/<seq>.json`)
        unit: PathBuf,
    },
}

/// `env` subcommands.
#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Print the recorded environments under a results directory (JSON)
    List {
        /// Results directory (default: the configured results_dir)
        results_dir: Option<PathBuf>,
    },
    /// Release recorded environments through their providers
    Close {
        /// Results directory (default: the configured results_dir)
        results_dir: Option<PathBuf>,
        /// Environment id (repeatable)
        #[arg(long = "id", value_name = "ID", conflicts_with = "all")]
        ids: Vec<String>,
        /// Every recorded environment
        #[arg(long)]
        all: bool,
    },
}
