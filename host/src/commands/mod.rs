//! The CLI commands. Each returns the process exit code; printing is done here, not in the
//! library modules. Standard output goes through [`out!`]/[`outln!`], so a reader that stops
//! early (`| head`) ends the process quietly instead of a "failed printing" panic.

/// `print!` to standard output; a closed pipe exits quietly with status 141 (SIGPIPE's).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::commands::write_stdout(format_args!($($arg)*), false)
    };
}

/// `println!` to standard output; a closed pipe exits quietly with status 141 (SIGPIPE's).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::commands::write_stdout(format_args!($($arg)*), true)
    };
}

pub mod agents;
pub mod analysis;
pub mod cluster;
pub mod compare;
pub mod config_docs;
pub mod config_show;
pub mod ctl;
pub mod datasets;
mod dependencies;
pub mod docs;
pub mod env;
mod execute;
pub mod export;
pub mod harbor_cli;
pub mod harbor_input;
pub mod invocation;
pub mod launch;
pub mod list;
mod next_steps;
pub mod plan;
pub mod plugin;
pub mod plugin_new;
pub mod report;
pub mod run;
pub mod summary;
mod table;
pub mod view;

use std::io::Write;

use agentcompass_loader::LoadProblem;

/// Exit status of a process whose standard output was closed by its reader.
const CLOSED_STDOUT_STATUS: i32 = 141;

/// Writes `args` (and a newline) to standard output and flushes. A closed pipe ends the
/// process with status 141 and no message, as a SIGPIPE would; another write error is one
/// line on standard error and status 1.
pub fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(CLOSED_STDOUT_STATUS)
        }
        Err(e) => {
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1)
        }
    }
}

/// Prints refused plugins, one line each (plus the layout report with `--verbose`).
pub fn print_problems(problems: &[LoadProblem], verbose: bool) {
    for problem in problems {
        eprintln!("warning: {problem}");
        if verbose {
            if let Some(detail) = &problem.detail {
                eprintln!("{detail}");
            }
        }
    }
}
