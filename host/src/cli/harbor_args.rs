//! `agentcompass-host harbor …`: Harbor 0.25's command line (`harbor run`, `harbor job start`,
//! `harbor job resume`), parsed as Harbor parses it. The outer command takes the words as
//! they are, so that a Harbor flag with no equivalent here is refused by name (with what to
//! use instead) rather than by clap as unknown; [`HarborCli`] then parses them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `agentcompass-host harbor ARGS...`: the words after `harbor`, parsed by [`HarborCli`].
#[derive(Debug, Args, Clone)]
#[command(disable_help_flag = true)]
pub struct HarborCmd {
    /// `run [FLAGS]`, `job start [FLAGS]` or `job resume -p RUN_DIR [-f TYPE]`, with Harbor
    /// 0.25's flags (`agentcompass-host harbor run --help`)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// Harbor's command line.
#[derive(Debug, Parser)]
#[command(name = "agentcompass-host harbor", max_term_width = 100)]
pub struct HarborCli {
    /// Harbor's command
    #[command(subcommand)]
    pub command: HarborCommand,
}

/// Harbor's commands this host understands.
#[derive(Debug, Subcommand)]
pub enum HarborCommand {
    /// Run a job: Harbor's flags become one `agentcompass-host run` (`--dry-run` prints it)
    Run(Box<HarborRun>),
    /// Jobs: `start` (as `run`), `resume`
    Job {
        /// The job command
        #[command(subcommand)]
        command: HarborJobCommand,
    },
}

/// `harbor job …`.
#[derive(Debug, Subcommand)]
pub enum HarborJobCommand {
    /// Start a job (the same as `harbor run`)
    Start(Box<HarborRun>),
    /// Resume a run: its unfinished tasks run, and those whose failure `-f` names run again
    Resume(HarborResume),
}

/// `harbor job resume -p DIR [-f TYPE]...`.
#[derive(Debug, Args)]
pub struct HarborResume {
    /// The run directory (what `harbor run` printed)
    #[arg(short = 'p', long = "job-path", value_name = "RUN_DIR")]
    pub job_path: PathBuf,
    /// Rerun the tasks that failed with this Harbor exception type or failure class
    /// (repeatable) [default: CancelledError, which rerun already does]
    #[arg(short = 'f', long = "filter-error-type", value_name = "TYPE")]
    pub filter_error_types: Vec<String>,
    /// Accepted: nothing here asks for confirmation
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
}

/// `harbor run` / `harbor job start`: the flags with an equivalent here (the others are
/// refused by name before parsing).
#[derive(Debug, Args, Clone, Default)]
#[command(args_override_self = true)]
pub struct HarborRun {
    /// A Harbor `JobConfig` (YAML or JSON; repeatable: later files win, lists append);
    /// the flags win over it
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// The run id (Harbor's job directory name)
    #[arg(long, value_name = "NAME")]
    pub job_name: Option<String>,
    /// The results directory (Harbor's jobs directory)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub jobs_dir: Option<PathBuf>,
    /// Attempts per task
    #[arg(short = 'k', long, value_name = "K")]
    pub n_attempts: Option<u32>,
    /// Multiplies every timeout
    #[arg(long, value_name = "X")]
    pub timeout_multiplier: Option<f64>,
    /// Multiplies the agent's timeout instead
    #[arg(long, value_name = "X")]
    pub agent_timeout_multiplier: Option<f64>,
    /// Multiplies the verifier's timeout instead
    #[arg(long, value_name = "X")]
    pub verifier_timeout_multiplier: Option<f64>,
    /// Multiplies the agent's setup (install) timeout instead
    #[arg(long, value_name = "X")]
    pub agent_setup_timeout_multiplier: Option<f64>,
    /// Multiplies the environment's build timeout instead
    #[arg(long, value_name = "X")]
    pub environment_build_timeout_multiplier: Option<f64>,
    /// No progress display
    #[arg(short = 'q', long, visible_alias = "silent")]
    pub quiet: bool,
    /// Debug logging
    #[arg(long)]
    pub debug: bool,
    /// Concurrent tasks
    #[arg(short = 'n', long, value_name = "N")]
    pub n_concurrent: Option<u32>,
    /// Retries of a failed task
    #[arg(short = 'r', long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Retry only these exception types (repeatable)
    #[arg(long, value_name = "TYPE")]
    pub retry_include: Vec<String>,
    /// Never retry these exception types (repeatable; replaces Harbor's default set)
    #[arg(long, value_name = "TYPE")]
    pub retry_exclude: Vec<String>,
    /// The agent: a Harbor name (claude-code, codex, mini-swe-agent, qwen-coder, terminus-2,
    /// oracle) or a harness id of this host
    #[arg(short = 'a', long, value_name = "NAME")]
    pub agent: Option<String>,
    /// The model, `provider/name` (once: one request per model)
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// The model endpoint's base URL
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key
    #[arg(long, value_name = "VAR")]
    pub api_key_name: Option<String>,
    /// The endpoint's API (openai_chat_completions, openai_responses, anthropic_messages)
    #[arg(long, value_name = "FORMAT")]
    pub api_format: Option<String>,
    /// An agent option, KEY=VALUE (value read as JSON when it parses; repeatable)
    #[arg(long = "ak", visible_alias = "agent-kwarg", value_name = "KEY=VALUE")]
    pub agent_kwargs: Vec<String>,
    /// The agent's reasoning effort (an agent option, `reasoning_effort`)
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// A variable of the agent's processes, KEY=VALUE (repeatable)
    #[arg(long = "ae", visible_alias = "agent-env", value_name = "KEY=VALUE")]
    pub agent_env: Vec<String>,
    /// MCP servers for the agent (repeatable)
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_configs: Vec<PathBuf>,
    /// A skill for the agent (repeatable)
    #[arg(long = "skill", visible_alias = "skills", value_name = "SOURCE")]
    pub skills: Vec<String>,
    /// The environment type (docker, podman; this host's too: sandbox, host_process)
    #[arg(short = 'e', long = "env", value_name = "TYPE")]
    pub env: Option<String>,
    /// Keep environments after the run (`--no-delete`)
    #[arg(long = "no-delete", overrides_with = "delete")]
    pub no_delete: bool,
    /// Remove environments after the run (the default)
    #[arg(long = "delete")]
    pub delete: bool,
    /// Accepted: images are built when missing (`--force-build` is refused)
    #[arg(long = "no-force-build")]
    pub no_force_build: bool,
    /// How task CPUs are enforced (auto, limit, request, guarantee, ignore)
    #[arg(long, value_name = "MODE")]
    pub cpus: Option<String>,
    /// How task memory is enforced (auto, limit, request, guarantee, ignore)
    #[arg(long, value_name = "MODE")]
    pub memory: Option<String>,
    /// CPUs of every task
    #[arg(long, value_name = "N")]
    pub override_cpus: Option<f64>,
    /// Memory of every task, MiB
    #[arg(long, value_name = "MB")]
    pub override_memory_mb: Option<u32>,
    /// Disk of every task, MiB
    #[arg(long, value_name = "MB")]
    pub override_storage_mb: Option<u32>,
    /// GPUs of every task
    #[arg(long, value_name = "N")]
    pub override_gpus: Option<u32>,
    /// An environment parameter, KEY=VALUE (value read as JSON when it parses; repeatable)
    #[arg(
        long = "ek",
        visible_alias = "environment-kwarg",
        value_name = "KEY=VALUE"
    )]
    pub environment_kwargs: Vec<String>,
    /// Accepted: nothing here asks for confirmation
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// A task directory, or a directory of task directories
    #[arg(short = 'p', long, value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// A registry dataset, `NAME[@VERSION]`
    #[arg(short = 'd', long, value_name = "NAME@VERSION")]
    pub dataset: Option<String>,
    /// The registry.json of `-d`
    #[arg(long, value_name = "PATH")]
    pub registry_path: Option<PathBuf>,
    /// The URL of the registry.json of `-d`
    #[arg(long, value_name = "URL")]
    pub registry_url: Option<String>,
    /// Keep the tasks whose name matches this glob (repeatable)
    #[arg(short = 'i', long = "include-task-name", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Drop the tasks whose name matches this glob (repeatable)
    #[arg(short = 'x', long = "exclude-task-name", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// The first N tasks after the filters
    #[arg(short = 'l', long, value_name = "N")]
    pub n_tasks: Option<u32>,
    /// A file appended to every instruction (repeatable)
    #[arg(long, value_name = "FILE")]
    pub extra_instruction_path: Vec<PathBuf>,
    /// Print the `agentcompass-host run` command that does the same and the resolved
    /// request (JSON), and run nothing
    #[arg(long)]
    pub dry_run: bool,
}
