//! Command-line definitions (clap). Parsing only; `main.rs` wires commands to the library.

use std::path::PathBuf;

mod export_args;
mod export_otel;
mod harbor_args;
mod help;
mod run_args;
mod values;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use export_args::{EpisodesArg, ExportCommand, ExportTracesCmd, OutcomeArg};
pub use export_otel::ExportOtelCmd;
pub use harbor_args::{
    HarborCli, HarborCmd, HarborCommand, HarborJobCommand, HarborResume, HarborRun,
};
pub use help::exit_status_roff;
pub use run_args::{
    ExecutorArg, LaunchCmd, PlanCmd, ResourceFlags, ResourceModeArg, RunCmd, RuntimeFlags,
};
use values::json_object;

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
    #[command(after_help = help::run_after_help())]
    Run(Box<RunCmd>),
    /// Run an orchestration file (TOML, YAML or JSON) of named requests
    #[command(after_help = help::launch_after_help())]
    Launch(Box<LaunchCmd>),
    /// Print the resolved plan of one task (audit view) without opening anything
    Plan(Box<PlanCmd>),
    /// Harbor's command line: `harbor run [Harbor's flags]` (and `harbor job start|resume`)
    /// runs as one native `run`; `--dry-run` prints that command
    Harbor(HarborCmd),
    /// Harbor registry datasets: list, download (and export), verify the cache
    Datasets {
        /// What to do
        #[command(subcommand)]
        command: DatasetsCommand,
    },
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
    /// Steer a running run: its status, the task concurrency, pause and resume, cancel
    /// tasks (through its control socket, which only its owner can use)
    Ctl(CtlCmd),
    /// Serve a web viewer over a results directory (loopback by default; it writes nothing,
    /// and steers a live run only with the secret in the URL it prints)
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
    /// Write a run in the formats other tools read: a Harbor job directory
    Export {
        /// What to export
        #[command(subcommand)]
        command: ExportCommand,
    },
    /// List registered components or loaded plugins (with no KIND: the kinds)
    List {
        /// What to list
        kind: Option<ListKind>,
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
    /// Print a shell completion script (for example `agentcompass-host completions bash >
    /// ~/.local/share/bash-completion/completions/agentcompass-host`)
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff; `agentcompass-host man | man -l -`), or a subcommand's
    Man {
        /// A subcommand (`run`, `config docs`, ...) whose page to print
        command: Vec<String>,
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
    /// Offer no controls of live runs (pause, concurrency, cancel); without it, the printed
    /// URL carries the secret control requests need
    #[arg(long)]
    pub read_only: bool,
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

/// A benchmark template of `plugin new --template`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TemplateArg {
    /// Questions scored by exact match on the host
    Qa,
    /// Task directories scored in the environment by hidden tests
    Verifier,
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
    /// Show a component's parameters (name, type, default, description); with no ID, the ids
    /// of that kind, with no KIND the kinds
    Docs {
        /// Component kind
        kind: Option<KindArg>,
        /// Component id
        id: Option<String>,
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
        /// The component's registry id (default: the name)
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// Benchmarks: `qa` (questions scored by exact match on the host) or `verifier` (task
        /// directories scored in the environment by hidden tests, with reference solutions).
        /// A pack of Harbor tasks needs no code: run the bundled `harbor` benchmark on it.
        #[arg(long, value_enum, default_value_t = TemplateArg::Qa)]
        template: TemplateArg,
        /// Depend on agentcompass-plugin-api at this path (default: the source this host was
        /// built with, vendored into the crate)
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

/// `ctl RUN_DIR ACTION`.
#[derive(Debug, Args, Clone)]
pub struct CtlCmd {
    /// The run directory of a running run (`<results>/<namespace>/<run_id>`)
    pub run_dir: PathBuf,
    /// What to do
    #[command(subcommand)]
    pub action: CtlAction,
}

/// What `ctl` does to a running run.
#[derive(Debug, Subcommand, Clone)]
pub enum CtlAction {
    /// Print the running tasks with their phase and age, the counts and the current limits
    Status {
        /// Print the status as JSON
        #[arg(long)]
        json: bool,
    },
    /// Set the task concurrency from now on (running tasks are not stopped)
    Concurrency {
        /// Attempts at once (at least 1)
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        n: u32,
    },
    /// Start no new task and no new model call (running commands finish, or wait at their
    /// next model call; a paused task's timeouts stand still)
    Pause,
    /// Undo `pause`
    Resume,
    /// Cancel tasks: a pending one is skipped, a running one is stopped; neither is scored
    /// (`cancelled_by_user`) and the run goes on
    Cancel {
        /// Task ids
        #[arg(required = true)]
        tasks: Vec<String>,
    },
}

/// Where a `datasets` command reads its registry and keeps its cache.
#[derive(Debug, Args, Clone)]
pub struct DatasetArgs {
    /// A Harbor `registry.json`, or the directory holding one
    #[arg(long, value_name = "PATH", conflicts_with = "registry_url")]
    pub registry_path: Option<PathBuf>,
    /// An http(s) URL of a Harbor `registry.json` (default: Harbor's public registry)
    #[arg(long, value_name = "URL")]
    pub registry_url: Option<String>,
    /// Root directory of downloaded data; the cache is `DIR/datasets` (`runtime.data_dir`,
    /// default `~/.cache/agentcompass-host/data`)
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<String>,
}

/// `datasets` subcommands.
#[derive(Debug, Subcommand)]
pub enum DatasetsCommand {
    /// List the datasets of a registry: name, version, task count, description
    List {
        /// Registry and data directory
        #[command(flatten)]
        args: DatasetArgs,
    },
    /// Fetch a dataset's tasks into the cache; with --output-dir, also export them as
    /// `harbor download NAME@VERSION --export` does (`DIR/<dataset>/<task>/`)
    Download {
        /// `NAME@VERSION`, or `NAME` for its latest version
        dataset: String,
        /// Export the tasks under this directory
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Registry and data directory
        #[command(flatten)]
        args: DatasetArgs,
    },
    /// Re-hash every cached task; report and drop the entries that changed
    Verify {
        /// Root directory of downloaded data (the cache is `DIR/datasets`)
        #[arg(long, value_name = "DIR")]
        data_dir: Option<String>,
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
