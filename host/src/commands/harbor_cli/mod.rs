//! `agentcompass-host harbor run|job start|job resume`: Harbor 0.25's command line as a thin
//! translation into one native `run` (no second runtime). The words are checked for Harbor
//! flags with no equivalent first (refused by name, with what to use instead), then parsed
//! as Harbor parses them (`-c` job configs expanded into the flags they stand for, the
//! command line winning), translated (`translate`), and the native `run` parsed and run;
//! `--dry-run` prints that native command and its resolved request instead.

mod agents;
mod job_config;
mod refusals;
mod resume;
mod translate;

use clap::Parser;

use crate::cli::{
    Cli, Command, GlobalArgs, HarborCli, HarborCmd, HarborCommand, HarborJobCommand, RunCmd,
};

use translate::translate;

/// A refusal of bad input (exit 2).
fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{message}")
}

/// clap's refusal of the words, as its one line (without clap's `error: `, which the CLI's
/// edge adds).
fn clap_refusal(error: &clap::Error) -> anyhow::Error {
    let rendered = error.render().to_string();
    let line = rendered.lines().next().unwrap_or_default();
    usage(format!("harbor: {}", line.trim_start_matches("error: ")))
}

/// The program name in printed commands.
const PROGRAM: &str = "agentcompass-host";

/// `harbor ARGS...`.
pub fn harbor(global: &GlobalArgs, cmd: &HarborCmd) -> anyhow::Result<i32> {
    if let Some(refusal) = refusals::first_refused(&cmd.args) {
        return Err(usage(refusal));
    }
    let words = std::iter::once(format!("{PROGRAM} harbor")).chain(cmd.args.iter().cloned());
    let cli = match HarborCli::try_parse_from(words) {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // `--help`, `--version`.
            error.print()?;
            return Ok(0);
        }
        Err(error) => return Err(clap_refusal(&error)),
    };
    match cli.command {
        HarborCommand::Run(_)
        | HarborCommand::Job {
            command: HarborJobCommand::Start(_),
        } => run(global, &cmd.args),
        HarborCommand::Job {
            command: HarborJobCommand::Resume(resume),
        } => resume::resume(global, &resume),
    }
}

/// `harbor run WORDS` (or `harbor job start WORDS`): the job configs' words first, then the
/// command line's, parsed once more so the flags win.
fn run(global: &GlobalArgs, args: &[String]) -> anyhow::Result<i32> {
    let harbor = parse_run(args)?;
    let mut expanded: Vec<String> = Vec::new();
    for file in &harbor.configs {
        expanded.extend(job_config::words(file).map_err(usage)?);
    }
    if let Some(refusal) = refusals::first_refused(&expanded) {
        return Err(usage(refusal));
    }
    let subcommand = args.iter().take_while(|w| !w.starts_with('-')).count();
    let mut words = args[..subcommand].to_vec();
    words.extend(expanded);
    words.extend(args[subcommand..].iter().cloned());
    let harbor = parse_run(&words)?;
    let native = translate(&harbor).map_err(usage)?;
    for note in &native.notes {
        eprintln!("note: {note}");
    }
    let mut cmd = native_run(&native.words)?;
    if harbor.dry_run {
        crate::outln!("{}", command_line(global, &native.words));
        cmd.dry_run = true;
        // The endpoint is checked when the run starts, not by a dry run.
        cmd.no_endpoint_check = true;
    }
    super::run::run(global, &cmd)
}

/// The Harbor flags of `harbor run WORDS` / `harbor job start WORDS`.
fn parse_run(args: &[String]) -> anyhow::Result<crate::cli::HarborRun> {
    let words = std::iter::once(format!("{PROGRAM} harbor")).chain(args.iter().cloned());
    match HarborCli::try_parse_from(words)
        .map_err(|e| clap_refusal(&e))?
        .command
    {
        HarborCommand::Run(run)
        | HarborCommand::Job {
            command: HarborJobCommand::Start(run),
        } => Ok(*run),
        HarborCommand::Job { .. } => Err(usage("harbor: expected `run` or `job start`")),
    }
}

/// The native `run` of `words` (a translation this module made: a refusal here is a bug in
/// the translation, said as such).
pub(super) fn native_run(words: &[String]) -> anyhow::Result<RunCmd> {
    let argv = [PROGRAM.to_string(), "run".to_string()]
        .into_iter()
        .chain(words.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(cmd),
            ..
        }) => Ok(*cmd),
        Ok(_) => Err(usage("harbor: the translation is not a `run`")),
        Err(error) => Err(usage(format!(
            "harbor: the native command `{}` was refused: {}",
            shell_words(words),
            error
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
        ))),
    }
}

/// `agentcompass-host [global flags] run WORDS`, quoted for a POSIX shell.
fn command_line(global: &GlobalArgs, words: &[String]) -> String {
    let mut all: Vec<String> = vec![PROGRAM.into()];
    for file in &global.configs {
        all.extend(["--config".into(), file.display().to_string()]);
    }
    for dir in &global.plugin_dirs {
        all.extend(["--plugin-dir".into(), dir.display().to_string()]);
    }
    for dir in &global.recipe_dirs {
        all.extend(["--recipe-dir".into(), dir.display().to_string()]);
    }
    if global.no_bundled_plugins {
        all.push("--no-bundled-plugins".into());
    }
    all.push("run".into());
    // A literal agent variable may be a secret (Harbor users pass keys with `--ae`): its value
    // is never printed; a `${VAR}` reference is.
    let mut hide = false;
    for word in words {
        all.push(match word.split_once('=') {
            Some((name, value)) if hide && !value.starts_with("${") => format!("{name}=<hidden>"),
            _ => word.clone(),
        });
        hide = word == "--agent-env";
    }
    shell_words(&all)
}

/// Words joined with the quoting a POSIX shell reads back.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| super::next_steps::quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
