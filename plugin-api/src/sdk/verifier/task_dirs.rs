//! Task directories, the layout verifier-style packs share with Harbor: `ID/instruction.md`
//! (the question), `ID/tests/` (hidden, `test.sh` at least) and optionally `ID/solution/`
//! (the reference solution, `solve.sh`).

use std::path::{Path, PathBuf};

use crate::contracts::{ReferenceSolution, TaskSpec};
use crate::{Error, Result};

/// The metadata key holding a task's directory.
const DIR_KEY: &str = "task_dir";

/// One [`TaskSpec`] per task directory under `root` (relative to the current directory), in
/// name order: the directory's name is the id, `instruction.md` the question, and the
/// directory is kept in the task's metadata for [`task_dir`]. A directory without
/// `instruction.md` or `tests/test.sh` is an error naming it.
pub fn load_task_dirs(root: impl AsRef<Path>) -> Result<Vec<TaskSpec>> {
    let root = std::path::absolute(root.as_ref())
        .map_err(|e| Error::invalid_input(format!("{}: {e}", root.as_ref().display())))?;
    let entries = std::fs::read_dir(&root)
        .map_err(|e| Error::invalid_input(format!("tasks directory {}: {e}", root.display())))?;
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.retain(|dir| dir.is_dir());
    dirs.sort();
    dirs.iter().map(|dir| load_task_dir(dir)).collect()
}

fn load_task_dir(dir: &Path) -> Result<TaskSpec> {
    let id = dir.file_name().unwrap_or_default().to_string_lossy();
    let instruction = std::fs::read_to_string(dir.join("instruction.md"))
        .map_err(|e| Error::invalid_input(format!("{}/instruction.md: {e}", dir.display())))?;
    if !dir.join("tests/test.sh").is_file() {
        let missing = format!("{}/tests/test.sh is missing", dir.display());
        return Err(Error::invalid_input(missing));
    }
    let mut task = TaskSpec::new(id.as_ref(), instruction.trim());
    task.metadata
        .insert(DIR_KEY.into(), dir.display().to_string().into());
    Ok(task)
}

/// The directory [`load_task_dirs`] loaded `task` from.
pub fn task_dir(task: &TaskSpec) -> Result<PathBuf> {
    match task.metadata.get(DIR_KEY).and_then(|dir| dir.as_str()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Err(Error::msg(format!(
            "task `{}` was not loaded from a task directory",
            task.task_id
        ))),
    }
}

/// The task's `solution/` as its reference solution (`bash solve.sh`), if it has one.
pub fn reference_solution(task: &TaskSpec) -> Result<Option<ReferenceSolution>> {
    let solution = task_dir(task)?.join("solution");
    Ok(solution
        .is_dir()
        .then(|| ReferenceSolution::new(solution.display().to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_sorted_task_dirs_and_their_solutions() {
        let root = std::env::temp_dir().join(format!("sdk-task-dirs-{}", std::process::id()));
        for (id, solution) in [("b", true), ("a", false)] {
            let dir = root.join(id);
            std::fs::create_dir_all(dir.join("tests")).unwrap();
            std::fs::write(dir.join("instruction.md"), format!("Do {id}.\n")).unwrap();
            std::fs::write(dir.join("tests/test.sh"), "exit 0").unwrap();
            if solution {
                std::fs::create_dir_all(dir.join("solution")).unwrap();
            }
        }
        let tasks = load_task_dirs(&root).unwrap();
        let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(tasks[0].question, "Do a.");
        assert_eq!(task_dir(&tasks[1]).unwrap(), root.join("b"));
        assert!(reference_solution(&tasks[0]).unwrap().is_none());
        let offered = reference_solution(&tasks[1]).unwrap().unwrap();
        assert!(offered.dir.ends_with("/b/solution") && offered.script == "solve.sh");
        std::fs::remove_file(root.join("a/tests/test.sh")).unwrap();
        let err = load_task_dirs(&root).unwrap_err();
        assert!(
            err.message.ends_with("/a/tests/test.sh is missing"),
            "{err}"
        );
        assert!(task_dir(&TaskSpec::new("x", "q")).is_err());
        std::fs::remove_dir_all(root).unwrap();
    }
}
