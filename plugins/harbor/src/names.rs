//! Names every other module shares, in a leaf module (it imports nothing from the crate, so
//! no module cycle can form around them): the registry id, which prefixes every error
//! message, and the files and directories of a Harbor task directory.

use std::path::Path;

use agentcompass_plugin_api::{Error, Result};

/// Registry id.
pub const ID: &str = "harbor";

/// File name of the task configuration.
pub const TASK_TOML: &str = "task.toml";
/// File name of the agent instruction.
pub const INSTRUCTION_MD: &str = "instruction.md";
/// Directory of the verifier (uploaded to `/tests`).
pub const TESTS_DIR: &str = "tests";
/// Entry point of the verifier inside [`TESTS_DIR`].
pub const TEST_SCRIPT: &str = "test.sh";
/// Directory of the reference solution (uploaded to `/solution` by the oracle harness).
pub const SOLUTION_DIR: &str = "solution";
/// Directory of the steps of a multi-step task (`steps/<name>/`).
pub const STEPS_DIR: &str = "steps";
/// Directory of a step's files staged into the working directory before it runs.
pub const WORKDIR_DIR: &str = "workdir";
/// The optional script of a step's [`WORKDIR_DIR`], run after the upload.
pub const SETUP_SCRIPT: &str = "setup.sh";

/// The task directory's name (the task id).
pub fn task_id_of(dir: &Path) -> Result<String> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::invalid_input(format!(
                "{ID}: {}: a task directory needs a UTF-8 name (it is the task id)",
                dir.display()
            ))
        })
}
