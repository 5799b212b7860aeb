//! The words of a simple command: wrappers and keywords stripped, operands picked out,
//! program names and the programs that write their operands.

use super::super::write::Kind;

/// Commands that write their file operands, and how.
pub(super) fn operand_writer(prog: &str) -> Option<Kind> {
    match prog {
        "rm" | "rmdir" | "unlink" | "shred" => Some(Kind::Delete),
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => Some(Kind::Permission),
        "touch" | "truncate" | "mkdir" | "tee" | "patch" => Some(Kind::Modify),
        _ => None,
    }
}

/// Commands `xargs` or `find -exec` may run that write their operands.
pub(super) fn is_writing_prog(prog: &str) -> bool {
    operand_writer(prog).is_some()
        || matches!(
            prog,
            "mv" | "cp" | "ln" | "install" | "sed" | "perl" | "rsync"
        )
}

/// The last path component of a program word (`/bin/rm` → `rm`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The operands of `args` (words not starting with `-`; every word after `--`).
pub(super) fn operands(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
        } else if options_done || !arg.starts_with('-') || arg == "-" {
            out.push(arg.as_str());
        }
    }
    out
}

/// Whether a redirection target is a device rather than a file.
pub(super) fn is_device(target: &str) -> bool {
    target.is_empty()
        || matches!(
            target,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        )
        || target.starts_with("/dev/fd/")
}

/// Whether `word` is a shell variable assignment (`NAME=value`).
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether `word` is a shell keyword that may lead a command (`if`, `then`, `do`, `!`, ...).
fn is_leading_keyword(word: &str) -> bool {
    matches!(
        word,
        "if" | "then"
            | "else"
            | "elif"
            | "do"
            | "while"
            | "until"
            | "!"
            | "{"
            | "}"
            | "fi"
            | "done"
            | "esac"
    )
}

/// The options that take a value of the wrapper `program` runs another command under
/// (`sudo`, `timeout`, `xargs`, ...); `None` when it is not such a wrapper.
fn wrapper_options(program: &str) -> Option<&'static [&'static str]> {
    Some(match program {
        "sudo" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "nice" => &["-n", "--adjustment"],
        "xargs" => &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-L",
            "-E",
            "-a",
            "-s",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
        ],
        "env" => &["-u", "-C", "--unset", "--chdir", "-S"],
        "stdbuf" | "ionice" | "chrt" | "nohup" | "exec" | "command" | "builtin" | "time" => &[],
        _ => return None,
    })
}

/// The words of a command with leading keywords, assignments and wrappers (`sudo`, `env`,
/// `timeout 10`, `nohup`, `xargs -0`, ...) removed, and whether `xargs` ran it.
pub(super) fn strip_prefixes(words: &[String]) -> (&[String], bool) {
    let mut rest = words;
    let mut xargs = false;
    loop {
        let Some((first, tail)) = rest.split_first() else {
            return (rest, xargs);
        };
        let word = first.as_str();
        let Some(takes_value) = wrapper_options(basename(word)) else {
            if is_assignment(word) || is_leading_keyword(word) {
                rest = tail;
                continue;
            }
            return (rest, xargs);
        };
        if basename(word) == "xargs" {
            xargs = true;
        }
        let is_timeout = basename(word) == "timeout";
        rest = tail;
        // The wrapper's own options (and their values), then `timeout`'s duration.
        while let Some((opt, tail)) = rest.split_first() {
            if opt.starts_with('-') {
                rest = tail;
                if takes_value.contains(&opt.as_str()) {
                    rest = rest.get(1..).unwrap_or_default();
                }
            } else if basename(word) == "env" && opt.contains('=') {
                rest = tail;
            } else {
                break;
            }
        }
        if is_timeout {
            rest = rest.get(1..).unwrap_or_default();
        }
    }
}
