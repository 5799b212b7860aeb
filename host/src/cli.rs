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
    /// Trusted plugin directory (repeatable; loaded after the bundled plugins, in order)
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dirs: Vec<PathBuf>,
    /// Trusted recipe-plugin directory (repeatable; loaded after the plugin directories)
    #[arg(long = "recipe-dir", value_name = "DIR", global = true)]
    pub recipe_dirs: Vec<PathBuf>,
    /// Lock file pinning every plugin's sha256 (`[plugins] name = "<sha256>"`)
    #[arg(long = "plugin-lock", value_name = "FILE", global = true)]
    pub plugin_lock: Option<PathBuf>,
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
    /// Loaded plugins
    Plugin,
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
}

/// `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
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
