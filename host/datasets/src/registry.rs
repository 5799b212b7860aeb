//! Harbor's legacy dataset registry, a `registry.json` (`docs/design/harbor-datasets.md`,
//! "Legacy registry JSON"): an array of datasets, each a name, a version, a description, its
//! tasks (a git URL, a pinned commit and a path in the repository, or a local path) and the
//! metrics it declares. A name with a later entry of the same version is that entry.

mod reference;
#[cfg(test)]
mod tests;
mod version;

use serde::Deserialize;

pub use reference::{DatasetRef, ReferenceError};
pub use version::latest_version;

/// One dataset of a registry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DatasetSpec {
    /// The dataset's name (`terminal-bench`).
    pub name: String,
    /// Its version (`2.0`, `head`).
    pub version: String,
    /// What it is (required, may be empty, as Harbor's model has it).
    pub description: String,
    /// Its tasks, in order.
    pub tasks: Vec<RegistryTask>,
    /// The metrics it declares (default: none, which Harbor reads as `mean`).
    #[serde(default)]
    pub metrics: Vec<MetricConfig>,
}

/// One task of a registry dataset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RegistryTask {
    /// The registry's name for the task (Harbor itself names a task by its path's last part).
    pub name: String,
    /// The repository holding the task (`None`: `path` is a local directory).
    #[serde(default)]
    pub git_url: Option<String>,
    /// The commit the task is pinned to (`None`: the repository's default branch).
    #[serde(default)]
    pub git_commit_id: Option<String>,
    /// The task's directory in the repository (or on disk without `git_url`).
    pub path: String,
}

/// A metric a dataset declares.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MetricConfig {
    /// `mean` (the default), `sum`, `min`, `max` or `uv-script`.
    #[serde(rename = "type", default = "mean")]
    pub kind: String,
    /// The metric's arguments.
    #[serde(default)]
    pub kwargs: serde_json::Map<String, serde_json::Value>,
}

fn mean() -> String {
    "mean".to_string()
}

/// Why a registry or a dataset in it cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry is not the JSON Harbor reads.
    #[error("{source_name}: {path}: {message}")]
    Malformed {
        /// Where the registry came from (a path or URL).
        source_name: String,
        /// The JSON path of the defect (`[2].tasks[0].path`, `.` for the whole file).
        path: String,
        /// What was expected and found.
        message: String,
    },
    /// No dataset of that name.
    #[error("{source_name}: no dataset `{name}` (the registry has {known})")]
    UnknownDataset {
        /// Where the registry came from.
        source_name: String,
        /// The name asked for.
        name: String,
        /// The names it has, or `no datasets`.
        known: String,
    },
    /// The dataset has no such version.
    #[error("{source_name}: dataset `{name}` has no version `{version}` (it has {known})")]
    UnknownVersion {
        /// Where the registry came from.
        source_name: String,
        /// The dataset.
        name: String,
        /// The version asked for.
        version: String,
        /// The versions it has.
        known: String,
    },
}

/// A parsed registry.
#[derive(Debug, Clone)]
pub struct Registry {
    source_name: String,
    datasets: Vec<DatasetSpec>,
}

impl Registry {
    /// Reads the registry JSON `bytes`, from `source_name` (a path or URL, for messages).
    pub fn parse(source_name: &str, bytes: &[u8]) -> Result<Registry, RegistryError> {
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let datasets: Vec<DatasetSpec> = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| RegistryError::Malformed {
                source_name: source_name.to_string(),
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        Ok(Registry {
            source_name: source_name.to_string(),
            datasets,
        })
    }

    /// Where the registry came from.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Every dataset version, in the file's order; of a repeated name and version, the later
    /// entry in the place of the first.
    pub fn datasets(&self) -> Vec<&DatasetSpec> {
        let mut out: Vec<&DatasetSpec> = Vec::new();
        for spec in &self.datasets {
            match out
                .iter_mut()
                .find(|d| d.name == spec.name && d.version == spec.version)
            {
                Some(slot) => *slot = spec,
                None => out.push(spec),
            }
        }
        out
    }

    /// The dataset `name` at `version`, or at its latest version ([`latest_version`]).
    pub fn dataset(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<&DatasetSpec, RegistryError> {
        let all = self.datasets();
        let versions: Vec<&DatasetSpec> = all.into_iter().filter(|d| d.name == name).collect();
        if versions.is_empty() {
            let mut names: Vec<&str> = Vec::new();
            for spec in &self.datasets {
                if !names.contains(&spec.name.as_str()) {
                    names.push(&spec.name);
                }
            }
            return Err(RegistryError::UnknownDataset {
                source_name: self.source_name.clone(),
                name: name.to_string(),
                known: list_or(&names, "no datasets"),
            });
        }
        let listed: Vec<&str> = versions.iter().map(|d| d.version.as_str()).collect();
        let wanted = match version {
            Some(v) => v,
            None => latest_version(&listed).unwrap_or_default(),
        };
        versions
            .into_iter()
            .find(|d| d.version == wanted)
            .ok_or_else(|| RegistryError::UnknownVersion {
                source_name: self.source_name.clone(),
                name: name.to_string(),
                version: wanted.to_string(),
                known: list_or(&listed, "none"),
            })
    }
}

/// `a`, `b`, `c` in backquotes, or `empty` when there is nothing.
fn list_or(items: &[&str], empty: &str) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
