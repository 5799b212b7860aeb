//! A Harbor job directory where a command takes a run directory (`view`, `report`, `compare`,
//! `summary`): read as a run into a private temporary directory
//! (`agentcompass_host::interchange::harbor_import`), the job's own files only read.

use std::path::{Path, PathBuf};

use agentcompass_host::interchange::harbor_import::{self, ImportedJobs};

/// `path` as a run directory: itself, or, when it is a Harbor job, the run it reads as (kept
/// while the returned guard lives).
pub fn run_dir(path: &Path) -> anyhow::Result<(PathBuf, Option<ImportedJobs>)> {
    if !harbor_import::is_harbor_job(path) {
        return Ok((path.to_path_buf(), None));
    }
    let imported = harbor_import::import(&[path.to_path_buf()])
        .map_err(|e| anyhow::anyhow!("reading the Harbor job {}: {e}", path.display()))?;
    let run = imported.run_dirs[0].clone();
    Ok((run, Some(imported)))
}

/// `dir` as a results directory: itself, or, when it is a Harbor job or a directory of Harbor
/// jobs, the results directory they read as (kept while the returned guard lives).
pub fn results_dir(dir: &Path) -> anyhow::Result<(PathBuf, Option<ImportedJobs>)> {
    let jobs = harbor_import::harbor_jobs_in(dir);
    if jobs.is_empty() {
        return Ok((dir.to_path_buf(), None));
    }
    let imported = harbor_import::import(&jobs)
        .map_err(|e| anyhow::anyhow!("reading the Harbor jobs in {}: {e}", dir.display()))?;
    Ok((imported.results_dir().to_path_buf(), Some(imported)))
}
