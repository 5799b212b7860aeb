//! `completions SHELL`, `man [COMMAND...]`, and what a bare `list` or `config docs` prints:
//! the documentation generated from the command-line definitions themselves.

use clap::{CommandFactory, ValueEnum};

use crate::cli::{exit_status_roff, Cli};

/// The binary's name in generated scripts and pages.
const BIN: &str = "agentcompass-host";

/// Prints the completion script of `shell`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}

/// Prints the man page of the binary, or of the subcommand `path` names (`["config",
/// "docs"]`), with an EXIT STATUS section.
pub fn man(path: &[String]) -> anyhow::Result<i32> {
    let mut command = Cli::command();
    command.build();
    let mut page = &command;
    for (depth, name) in path.iter().enumerate() {
        page = page
            .get_subcommands()
            .find(|sub| sub.get_name() == name && !sub.is_hide_set())
            .ok_or_else(|| {
                let known: Vec<&str> = page
                    .get_subcommands()
                    .filter(|sub| !sub.is_hide_set())
                    .map(|sub| sub.get_name())
                    .collect();
                anyhow::anyhow!(
                    "man: `{}` is not a command (expected one of: {})",
                    path[..=depth].join(" "),
                    known.join(", ")
                )
            })?;
    }
    // A subcommand's page carries the binary's version too.
    let page = page.clone().version(env!("CARGO_PKG_VERSION"));
    let man =
        clap_mangen::Man::new(page.clone()).source(format!("{BIN} {}", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    man.render_title(&mut roff)?;
    man.render_name_section(&mut roff)?;
    man.render_synopsis_section(&mut roff)?;
    man.render_description_section(&mut roff)?;
    if page.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut roff)?;
    }
    if page.has_subcommands() {
        man.render_subcommands_section(&mut roff)?;
    }
    roff.extend_from_slice(exit_status_roff().as_bytes());
    man.render_version_section(&mut roff)?;
    crate::out!("{}", String::from_utf8_lossy(&roff));
    Ok(0)
}

/// What a command that takes a KIND prints without one: the kinds, one a line with what
/// each is, after `intro`.
pub fn kinds<T: ValueEnum>(intro: &str) -> String {
    let kinds: Vec<(String, String)> = T::value_variants()
        .iter()
        .filter_map(T::to_possible_value)
        .map(|value| {
            let help = value
                .get_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            (value.get_name().to_string(), help)
        })
        .collect();
    let width = kinds.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let indent = " ".repeat(width + 4);
    let options = super::table::wrapping(super::table::output_width())
        .initial_indent(&indent)
        .subsequent_indent(&indent);
    let mut out = format!("{intro}\n");
    for (name, help) in kinds {
        let help = help.lines().collect::<Vec<_>>().join(" ");
        let wrapped = textwrap::fill(&help, &options);
        out.push_str(&format!("  {name:<width$}  {}\n", wrapped.trim_start()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_lists_every_value_with_its_help() {
        let out = kinds::<crate::cli::KindArg>("config docs takes a KIND:");
        assert_eq!(
            out,
            "config docs takes a KIND:\n  benchmark  A benchmark\n  harness    A harness\n  \
             env        An environment provider\n  recipe     A recipe\n  analyzer   An analyzer\n"
        );
    }
}
