//! `agentcompass-host`: the command-line edge. Argument parsing (`cli`), the commands
//! (`commands`), printing, exit codes and `anyhow` live here; everything else is the
//! `agentcompass_host` library and the crates below it.

mod cli;
mod commands;
mod fd_limit;

use std::process::ExitCode;

use cli::{
    AgentsCommand, Cli, ClusterCommand, Command, ConfigCommand, EnvCommand, GlobalArgs, KindArg,
    PluginCommand,
};

use agentcompass_host::setup::Setup;
use agentcompass_loader::lockfile::PluginLock;
use agentcompass_plugin_api::contracts::ComponentKind;
use anyhow::Context;
use clap::Parser;

fn main() -> ExitCode {
    agentcompass_host::malloc_arenas::limit();
    fd_limit::raise();
    if let Some(code) = agentcompass_builtins::sandbox::run_egress_forwarder() {
        return code;
    }
    agentcompass_builtins::sandbox::enter_if_requested();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    agentcompass_host::logging::init(cli.global.verbose);
    match run(cli) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            // Scrubbed of every registered secret (resolved `${VAR}` values, keys): a
            // plugin's error may quote a parameter's value.
            let message = agentcompass_redact::scrub_text(&format!("{err:#}"));
            eprintln!("error: {}", agentcompass_plugin_api::one_line(&message));
            let code = exit_code_of(&err);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}

/// The exit code of the first error of `err`'s chain that knows its own (a machine failure:
/// 1; a cancelled install: 130); a refusal of bad input otherwise (2).
fn exit_code_of(err: &anyhow::Error) -> i32 {
    use agentcompass_host::exit_code::{ExitStatus, USAGE};
    err.chain()
        .find_map(|cause| {
            None.or_else(|| {
                cause
                    .downcast_ref::<agentcompass_host::runtime::RunError>()
                    .map(ExitStatus::exit_code)
            })
            .or_else(|| {
                cause
                    .downcast_ref::<agentcompass_results::store::StoreError>()
                    .map(ExitStatus::exit_code)
            })
            .or_else(|| {
                cause
                    .downcast_ref::<agentcompass_host::install::InstallError>()
                    .map(ExitStatus::exit_code)
            })
        })
        .unwrap_or(USAGE)
}

/// Help and version print as clap renders them; a usage error is one `error: ` line on stderr
/// (the message and any tip or possible values, without the usage block) and exit code 2.
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    // `Display` renders without colours.
    let rendered = err.to_string();
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    let mut message = String::new();
    for part in parts {
        if !message.is_empty() {
            message.push_str(if message.ends_with(':') { " " } else { "; " });
        }
        message.push_str(part);
    }
    eprintln!(
        "error: {}",
        message.strip_prefix("error: ").unwrap_or(&message)
    );
    ExitCode::from(2)
}

fn load(global: &GlobalArgs) -> anyhow::Result<Setup> {
    let (_, _, setup) = commands::invocation::load_registry(global)?;
    Ok(setup)
}

fn kind(arg: KindArg) -> ComponentKind {
    match arg {
        KindArg::Benchmark => ComponentKind::Benchmark,
        KindArg::Harness => ComponentKind::Harness,
        KindArg::Env => ComponentKind::Environment,
        KindArg::Recipe => ComponentKind::Recipe,
        KindArg::Analyzer => ComponentKind::Analyzer,
    }
}

/// How `k` is spelled on the command line.
fn kind_name(k: KindArg) -> String {
    use clap::ValueEnum;
    k.to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default()
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let global = &cli.global;
    match cli.command {
        Command::Run(cmd) => commands::run::run(global, &cmd),
        Command::Launch(cmd) => commands::launch::launch(global, &cmd),
        Command::Plan(cmd) => commands::plan::plan(global, &cmd),
        Command::Harbor(cmd) => commands::harbor_cli::harbor(global, &cmd),
        Command::Env { command } => env(global, command),
        Command::Datasets { command } => commands::datasets::datasets(global, command),
        Command::Cluster { command } => cluster(global, command),
        Command::Ctl(cmd) => commands::ctl::ctl(&cmd),
        Command::Agents {
            command: AgentsCommand::Install(cmd),
        } => commands::agents::install(global, &cmd),
        Command::View(cmd) => {
            let results_dir = match &cmd.results_dir {
                Some(dir) => dir.clone(),
                None => {
                    let config = commands::invocation::load_config(global)?;
                    let overlay = commands::invocation::runtime_overlay(global, None)?;
                    let runtime =
                        agentcompass_host::request::resolve_runtime(&config, None, &overlay)?;
                    std::path::PathBuf::from(&runtime.results_dir)
                }
            };
            commands::view::view(&results_dir, &cmd)
        }
        Command::Report(cmd) => commands::report::report(&cmd),
        Command::Compare(cmd) => commands::compare::compare(&cmd),
        Command::Export { command } => commands::export::export(&command),
        Command::Analysis(cmd) => {
            let setup = load(global)?;
            commands::analysis::analysis(&setup.registry, &cmd)
        }
        Command::Summary {
            run_dir,
            dry_run,
            benchmark_params,
        } => {
            if agentcompass_host::interchange::harbor_import::is_harbor_job(&run_dir) {
                return commands::summary::harbor_job(&run_dir);
            }
            let setup = load(global)?;
            let options = commands::summary::SummaryOptions {
                dry_run,
                benchmark_params,
            };
            commands::summary::summary(&setup.registry, &run_dir, &options)
        }
        Command::List { kind: None, .. } => {
            crate::out!(
                "{}",
                commands::docs::kinds::<cli::ListKind>(
                    "list takes one of these kinds (`agentcompass-host list KIND [--json]`):"
                )
            );
            Ok(0)
        }
        Command::List {
            kind: Some(kind),
            json,
        } => {
            let setup = load(global)?;
            commands::list::run(&setup.registry, kind, json)
        }
        Command::Completions { shell } => commands::docs::completions(shell),
        Command::Man { command } => commands::docs::man(&command),
        Command::Config { command } => config(global, command),
        Command::Plugin { command } => plugin(global, command),
    }
}

/// `env list` and `env close`.
fn env(global: &GlobalArgs, command: EnvCommand) -> anyhow::Result<i32> {
    let (_, runtime, setup) = commands::invocation::load_registry(global)?;
    let default_root = std::path::PathBuf::from(&runtime.results_dir);
    match command {
        EnvCommand::List { results_dir } => {
            commands::env::list(results_dir.as_deref().unwrap_or(&default_root))
        }
        EnvCommand::Close {
            results_dir,
            ids,
            all,
        } => commands::env::close(
            &setup.registry,
            results_dir.as_deref().unwrap_or(&default_root),
            &ids,
            all,
        ),
    }
}

/// `cluster work`, `cluster jobs` and `cluster cancel`.
fn cluster(global: &GlobalArgs, command: ClusterCommand) -> anyhow::Result<i32> {
    match command {
        ClusterCommand::Work { run_dir, unit } => commands::cluster::work(run_dir, unit),
        ClusterCommand::Jobs { results_dir } => {
            let (_, runtime, _) = commands::invocation::load_registry(global)?;
            let root = std::path::PathBuf::from(&runtime.results_dir);
            commands::cluster::jobs(results_dir.as_deref().unwrap_or(&root))
        }
        ClusterCommand::Cancel { run_dirs } => commands::cluster::cancel(&run_dirs),
    }
}

/// `config show` and `config docs`.
fn config(global: &GlobalArgs, command: ConfigCommand) -> anyhow::Result<i32> {
    match command {
        ConfigCommand::Show {
            format,
            benchmark,
            harness,
            env,
        } => {
            let selected = commands::config_show::Selected {
                benchmarks: benchmark,
                harnesses: harness,
                environments: env,
            };
            commands::config_show::config_show(global, format, &selected)
        }
        ConfigCommand::Docs { kind: None, .. } => {
            crate::out!(
                "{}",
                commands::docs::kinds::<KindArg>(
                    "config docs takes one of these kinds (`agentcompass-host config docs KIND ID`):"
                )
            );
            Ok(0)
        }
        ConfigCommand::Docs {
            kind: Some(k),
            id: None,
        } => {
            let setup = load(global)?;
            let ids: Vec<String> = setup
                .registry
                .list(kind(k))
                .map(|entry| format!("  {}\n", entry.info.id))
                .collect();
            crate::out!(
                "config docs {} takes one of these ids:\n{}",
                kind_name(k),
                ids.concat()
            );
            Ok(0)
        }
        ConfigCommand::Docs {
            kind: Some(k),
            id: Some(id),
        } => {
            let setup = load(global)?;
            crate::out!(
                "{}",
                commands::config_docs::render(&setup.registry, kind(k), &id)?
            );
            Ok(0)
        }
    }
}

/// `plugin verify`, `plugin package` and `plugin new`.
fn plugin(global: &GlobalArgs, command: PluginCommand) -> anyhow::Result<i32> {
    match command {
        PluginCommand::Verify { paths } => {
            let lock = match &global.plugin_lock {
                Some(path) => Some(PluginLock::read(
                    &std::path::absolute(path).context("--plugin-lock")?,
                )?),
                None => None,
            };
            Ok(commands::plugin::verify(&paths, lock))
        }
        PluginCommand::Package {
            libraries,
            out,
            host_api,
        } => commands::plugin::package(&libraries, &out, host_api.as_deref()),
        PluginCommand::New {
            name,
            kind: k,
            id,
            template,
            path,
            api_path,
        } => {
            let template = match template {
                cli::TemplateArg::Qa => commands::plugin_new::Template::Qa,
                cli::TemplateArg::Verifier => commands::plugin_new::Template::Verifier,
            };
            let new = commands::plugin_new::NewPlugin {
                name: &name,
                id: id.as_deref().unwrap_or(&name),
                kind: kind(k),
                template,
            };
            Ok(commands::plugin_new::run(
                &new,
                path.as_deref(),
                api_path.as_deref(),
            )?)
        }
    }
}
