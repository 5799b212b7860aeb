//! The arguments of `export`: a run in the formats other tools read.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::ExportOtelCmd;

/// `export ...`: a run in other tools' formats.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A Harbor job directory (config.json, result.json, a trial per attempt with its ATIF
    /// trajectory, rewards and artifacts) that `harbor view` and `harbor traces export` read
    Harbor(ExportHarborCmd),
    /// Training data: the rows `harbor traces export` writes (each episode's conversation
    /// with its tool calls, the reward, task and model), as JSON Lines or Parquet
    Traces(ExportTracesCmd),
    /// OpenTelemetry spans over OTLP/HTTP: run, task, attempt, phase, model call and tool
    /// call, with OpenInference and GenAI attributes (contents only with `--otel-content`)
    Otel(ExportOtelCmd),
}

/// `export traces RUN_DIR --out FILE [--episodes all|last] [--filter ...] [--min-reward X]`.
#[derive(Debug, Args)]
pub struct ExportTracesCmd {
    /// The run directory (`<results>/<namespace>/<run_id>`)
    pub run_dir: PathBuf,
    /// The file to write: `.jsonl` (JSON Lines) or `.parquet`
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Every agent turn of an attempt as a row (`all`), or only its last (`last`: one row
    /// per attempt)
    #[arg(long, value_enum, default_value_t = EpisodesArg::All)]
    pub episodes: EpisodesArg,
    /// Only the attempts that succeeded (reward > 0) or failed
    #[arg(long, value_enum, default_value_t = OutcomeArg::All)]
    pub filter: OutcomeArg,
    /// Only the attempts whose reward is at least this
    #[arg(long, value_name = "REWARD")]
    pub min_reward: Option<f64>,
}

/// `--episodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EpisodesArg {
    /// Every agent turn
    All,
    /// Each attempt's last turn
    Last,
}

/// `--filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutcomeArg {
    /// Every attempt
    All,
    /// Attempts with a reward above 0
    Success,
    /// The others
    Failure,
}

/// `export harbor RUN_DIR --out DIR`.
#[derive(Debug, Args)]
pub struct ExportHarborCmd {
    /// The run directory (`<results>/<namespace>/<run_id>`)
    pub run_dir: PathBuf,
    /// The job directory to write (new, or empty; its parent is the jobs directory
    /// `harbor view` opens)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}
