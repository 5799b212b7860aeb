//! The CLI commands. Each returns the process exit code; printing is done here, not in the
//! library modules.

pub mod config_docs;
pub mod env;
pub mod list;
pub mod plan;
pub mod plugin;
pub mod resolve;
pub mod summary;
mod table;

use crate::loader::LoadProblem;

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
