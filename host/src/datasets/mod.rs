//! Datasets the host fetches for benchmarks (issue 35): the `dataset.harbor` and
//! `dataset.url` host services, and what the `datasets` commands share with them. Everything
//! lives under `<data_dir>/datasets` (`agentcompass-datasets`'s caches); the host owns the
//! network, the progress shown while downloading and the error lines.

pub mod harbor;
pub mod registry_source;
mod url;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agentcompass_datasets::{ReferenceError, RegistryError, TaskCache};
use agentcompass_plugin_api::contracts::{
    HarborDataset, HarborDatasetRequest, UrlDataset, UrlDatasetRequest,
};
use serde_json::{json, Value};

use crate::exit_code::{ExitStatus, USAGE};

/// Why a dataset cannot be had: one line naming the dataset, task, file or URL.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// Bad input or an unreachable source (exit 2).
    #[error("{0}")]
    Input(String),
    /// A dataset reference that is not one (or a hosted-registry package).
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// A registry that is not Harbor's JSON, or lacks the dataset.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl ExitStatus for DatasetError {
    fn exit_code(&self) -> i32 {
        USAGE
    }
}

/// Adds the credentials of `url` (`https://user:token@host/…`, or a long token alone as the
/// user of an http(s) URL) to the host's secrets, so no record, log line or message holds them.
pub fn register_url_credentials(url: &str) {
    let Ok(parsed) = ::url::Url::parse(url) else {
        return;
    };
    if let Some(password) = parsed.password().filter(|p| !p.is_empty()) {
        agentcompass_redact::register_secret(password);
        // A password in a URL is percent-encoded; git and messages may show either form.
        if let Ok(decoded) = percent_encoding::percent_decode_str(password).decode_utf8() {
            agentcompass_redact::register_secret(&decoded);
        }
    } else if matches!(parsed.scheme(), "http" | "https") && parsed.username().len() >= 16 {
        agentcompass_redact::register_secret(parsed.username());
    }
}

/// One step of a download, as shown on the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadProgress<'a> {
    /// What is downloading (`demo@1.0`, a URL without credentials).
    pub what: &'a str,
    /// What is counted: `tasks`, `files`.
    pub unit: &'static str,
    /// Items done (tasks; 0 or 1 for a file).
    pub done: usize,
    /// Items in all.
    pub total: usize,
    /// Bytes so far.
    pub bytes: u64,
}

/// Where download progress goes (the binary prints it; the library never does).
pub trait DownloadObserver: Send + Sync {
    /// One step.
    fn progress(&self, step: &DownloadProgress<'_>);
}

/// An optional observer.
#[derive(Clone, Default)]
pub struct DownloadReporter(Option<Arc<dyn DownloadObserver>>);

impl DownloadReporter {
    /// Reports to `observer`.
    pub fn to(observer: Arc<dyn DownloadObserver>) -> Self {
        DownloadReporter(Some(observer))
    }

    /// Reports one step (nothing without an observer).
    pub fn report(&self, step: &DownloadProgress<'_>) {
        if let Some(observer) = &self.0 {
            observer.progress(step);
        }
    }
}

/// The datasets of one data directory, as host services and for the `datasets` commands.
pub struct DatasetService {
    root: PathBuf,
    reporter: DownloadReporter,
    /// What the services answered, for `run_info.json` (taken by [`Self::take_provenance`]).
    served: Mutex<Vec<Value>>,
}

impl DatasetService {
    /// The datasets under `<data_dir>/datasets`.
    pub fn new(data_dir: &Path, reporter: DownloadReporter) -> Self {
        DatasetService {
            root: data_dir.join("datasets"),
            reporter,
            served: Mutex::new(Vec::new()),
        }
    }

    /// The cache root (`<data_dir>/datasets`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The git task cache.
    pub fn task_cache(&self) -> TaskCache {
        TaskCache::new(&self.root)
    }

    /// The progress reporter.
    pub fn reporter(&self) -> &DownloadReporter {
        &self.reporter
    }

    /// A Harbor registry dataset, every task fetched and verified.
    pub async fn harbor(
        &self,
        request: &HarborDatasetRequest,
    ) -> Result<HarborDataset, DatasetError> {
        for url in request.registry_url.iter() {
            register_url_credentials(url);
        }
        let source = harbor::request_source(request)?;
        let chosen = harbor::choose(&request.dataset, &source).await?;
        let cache = self.task_cache();
        let reporter = self.reporter.clone();
        let dataset =
            tokio::task::spawn_blocking(move || harbor::fetch_tasks(&cache, &chosen, &reporter))
                .await
                .map_err(|e| {
                    DatasetError::Input(format!(
                        "dataset `{}`: the fetch stopped: {e}",
                        request.dataset
                    ))
                })??;
        self.note(json!({
            "kind": "harbor_registry",
            "dataset": format!("{}@{}", dataset.name, dataset.version),
            "registry": dataset.registry,
            "metrics": dataset.metrics,
            "tasks": dataset.tasks.iter().map(|t| json!({
                "name": t.name,
                "git_url": t.git_url,
                "commit": t.commit,
                "path": t.path,
                "digest": t.digest,
            })).collect::<Vec<_>>(),
        }));
        Ok(dataset)
    }

    /// One file or archive by URL, verified against its digest.
    pub async fn url(&self, request: &UrlDatasetRequest) -> Result<UrlDataset, DatasetError> {
        register_url_credentials(&request.url);
        let answer = url::fetch(&self.root, &self.reporter, request).await?;
        self.note(json!({"kind": "url", "url": answer.url, "sha256": answer.sha256}));
        Ok(answer)
    }

    fn note(&self, record: Value) {
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        if !served.contains(&record) {
            served.push(record);
        }
    }

    /// What was served since the last call (`run_info.json` `provenance.dataset_sources`).
    pub fn take_provenance(&self) -> Vec<Value> {
        std::mem::take(&mut *self.served.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
