//! Datasets the host fetches for a benchmark (issue 35): the two named host services a
//! benchmark calls from `load_tasks`, their requests and answers. The host owns the network,
//! the cache under `<data_dir>/datasets`, the download progress and the error messages; a
//! benchmark gets local, verified paths back.
//!
//! They ride the frozen [`crate::abi`] skeleton's named-service call (`HostServicesAbi::call`),
//! so adding them changed no layout: a plugin built before them never calls them, and a host
//! without them answers `unsupported`.

use serde::{Deserialize, Serialize};

/// The service resolving a Harbor registry dataset to local task directories:
/// [`HarborDatasetRequest`] → [`HarborDataset`].
pub const HARBOR_DATASET_SERVICE: &str = "dataset.harbor";

/// The service fetching one file (or archive) by URL and digest: [`UrlDatasetRequest`] →
/// [`UrlDataset`].
pub const URL_DATASET_SERVICE: &str = "dataset.url";

/// The `TaskSpec.metadata` key under which a benchmark reports a task's content digest
/// (Harbor's content hash for Harbor tasks). The host copies it into `task.json`
/// (`content_digest`) and a `--reuse` run imports a task only while it is unchanged.
pub const TASK_CONTENT_DIGEST_KEY: &str = "content_digest";

/// A Harbor registry dataset to resolve.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarborDatasetRequest {
    /// `NAME@VERSION`, or `NAME` for the latest version by Harbor's rule.
    pub dataset: String,
    /// A `registry.json` file, or the directory holding one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_path: Option<String>,
    /// An `http(s)://` URL of a `registry.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_url: Option<String>,
}

/// A resolved Harbor registry dataset: every task fetched, cached and verified.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarborDataset {
    /// The dataset's name.
    pub name: String,
    /// The version resolved (the latest when none was asked for).
    pub version: String,
    /// Where the registry was read (a path, or a URL without credentials).
    pub registry: String,
    /// The tasks in registry order.
    pub tasks: Vec<DatasetTask>,
    /// The dataset's declared metrics (`{"type", "kwargs"}` as the registry has them).
    #[serde(default)]
    pub metrics: Vec<serde_json::Value>,
}

/// One task of a resolved dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetTask {
    /// The registry's name of the task.
    pub name: String,
    /// The local task directory (read it, never write it).
    pub dir: String,
    /// The repository, credentials removed (`None` for a local task).
    #[serde(default)]
    pub git_url: Option<String>,
    /// The commit the files are from.
    #[serde(default)]
    pub commit: Option<String>,
    /// The task's path in the repository (or the local path).
    pub path: String,
    /// The content digest of the files (Harbor's content hash, bare hex).
    pub digest: String,
}

/// A file (or archive) to fetch by URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlDatasetRequest {
    /// `http(s)://` (or `file://`) URL.
    pub url: String,
    /// The SHA-256 of the bytes at the URL (64 hex digits, optionally `sha256:`-prefixed).
    pub sha256: String,
    /// `zip` or `tar.gz` to extract the download; absent for a plain file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// A relative path inside the extracted archive to answer instead of its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
}

/// A fetched, verified file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlDataset {
    /// The local path: the file, the extracted directory or the member in it.
    pub path: String,
    /// The verified SHA-256 (bare hex).
    pub sha256: String,
    /// The URL, credentials removed.
    pub url: String,
}
