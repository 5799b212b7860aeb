//! A Harbor registry dataset resolved to local task directories: the registry read, the
//! dataset and version chosen by Harbor's rules, every git task fetched once into the task
//! cache and verified by its digest, every local task hashed where it is.

use std::path::{Path, PathBuf};

use agentcompass_datasets::{
    content_hash, DatasetRef, DatasetSpec, TaskCache, TaskSource as GitTask,
};
use agentcompass_plugin_api::contracts::{DatasetTask, HarborDataset, HarborDatasetRequest};

use super::registry_source::RegistrySource;
use super::{DatasetError, DownloadProgress, DownloadReporter};

/// A dataset chosen in a registry, before its tasks are fetched.
pub struct ChosenDataset {
    /// The dataset entry.
    pub spec: DatasetSpec,
    /// Where the registry was read (path or URL without credentials).
    pub registry: String,
    /// The directory local tasks are relative to (the registry file's), if any.
    pub base: Option<PathBuf>,
}

impl ChosenDataset {
    /// `NAME@VERSION` of the chosen dataset.
    pub fn reference(&self) -> String {
        format!("{}@{}", self.spec.name, self.spec.version)
    }
}

/// The registry a benchmark's request names (its params' names in messages).
pub fn request_source(request: &HarborDatasetRequest) -> Result<RegistrySource, DatasetError> {
    RegistrySource::from_options(
        request.registry_path.as_deref(),
        request.registry_url.as_deref(),
        ("registry_path", "registry_url"),
    )
}

/// Reads the registry at `source` and chooses the dataset `asked` (`NAME[@VERSION]`) in it;
/// nothing is fetched yet.
pub async fn choose(asked: &str, source: &RegistrySource) -> Result<ChosenDataset, DatasetError> {
    let asked = asked.trim();
    let (name, version) = DatasetRef::parse(asked)?.into_registry()?;
    let registry = source.load().await?;
    let spec = registry
        .dataset(&name, version.as_deref())
        .map_err(|e| DatasetError::Input(format!("dataset `{asked}`: {e}")))?
        .clone();
    let base = match source {
        RegistrySource::Path(path) if path.is_dir() => Some(path.clone()),
        RegistrySource::Path(path) => path.parent().map(Path::to_path_buf),
        _ => None,
    };
    Ok(ChosenDataset {
        spec,
        registry: registry.source_name().to_string(),
        base,
    })
}

/// Fetches (or finds in `cache`) every task of `chosen`, reporting each one done. Blocking:
/// run it off the async threads.
pub fn fetch_tasks(
    cache: &TaskCache,
    chosen: &ChosenDataset,
    reporter: &DownloadReporter,
) -> Result<HarborDataset, DatasetError> {
    let reference = chosen.reference();
    let total = chosen.spec.tasks.len();
    let mut tasks = Vec::with_capacity(total);
    let mut bytes = 0u64;
    reporter.report(&DownloadProgress {
        what: &reference,
        unit: "tasks",
        done: 0,
        total,
        bytes,
    });
    for entry in &chosen.spec.tasks {
        let task = match &entry.git_url {
            Some(git_url) => {
                super::register_url_credentials(git_url);
                let cached = cache
                    .get(&GitTask {
                        name: entry.name.clone(),
                        git_url: git_url.clone(),
                        commit: entry.git_commit_id.clone(),
                        path: entry.path.clone(),
                    })
                    .map_err(|error| {
                        DatasetError::Input(format!("dataset `{reference}`: {error}"))
                    })?;
                bytes += cached.bytes;
                DatasetTask {
                    name: entry.name.clone(),
                    dir: cached.dir.display().to_string(),
                    git_url: Some(cached.git_url),
                    commit: Some(cached.commit),
                    path: cached.path,
                    digest: cached.digest,
                }
            }
            None => local_task(chosen, &reference, &entry.name, &entry.path)?,
        };
        tasks.push(task);
        reporter.report(&DownloadProgress {
            what: &reference,
            unit: "tasks",
            done: tasks.len(),
            total,
            bytes,
        });
    }
    Ok(HarborDataset {
        name: chosen.spec.name.clone(),
        version: chosen.spec.version.clone(),
        registry: chosen.registry.clone(),
        tasks,
        metrics: chosen
            .spec
            .metrics
            .iter()
            .map(|m| serde_json::json!({"type": m.kind, "kwargs": m.kwargs}))
            .collect(),
    })
}

/// A task without `git_url`: a directory on disk, relative to the registry file's directory
/// (Harbor resolves it against the working directory; a registry's meaning should not depend
/// on where it is run from). Hashed where it is, never copied.
fn local_task(
    chosen: &ChosenDataset,
    reference: &str,
    name: &str,
    path: &str,
) -> Result<DatasetTask, DatasetError> {
    let dir = match &chosen.base {
        Some(base) => base.join(path),
        None => PathBuf::from(path),
    };
    if !dir.is_dir() {
        return Err(DatasetError::Input(format!(
            "dataset `{reference}`: local task `{name}`: expected a task directory at {}, found none",
            dir.display()
        )));
    }
    let hashed = content_hash(&dir).map_err(|e| {
        DatasetError::Input(format!("dataset `{reference}`: local task `{name}`: {e}"))
    })?;
    Ok(DatasetTask {
        name: name.to_string(),
        dir: dir.display().to_string(),
        git_url: None,
        commit: None,
        path: path.to_string(),
        digest: hashed.digest,
    })
}
