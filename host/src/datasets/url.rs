//! The `dataset.url` service: one file or archive by URL and SHA-256, through the URL cache
//! under `<data_dir>/datasets`, its bytes reported as they arrive.

use std::path::Path;

use agentcompass_datasets::{ArchiveKind, UrlCache, UrlSource};
use agentcompass_plugin_api::contracts::{UrlDataset, UrlDatasetRequest};

use super::{DatasetError, DownloadProgress, DownloadReporter};

/// The archive kind `archive` names.
fn archive_kind(archive: Option<&str>) -> Result<Option<ArchiveKind>, DatasetError> {
    match archive.map(str::trim) {
        None | Some("") => Ok(None),
        Some("zip") => Ok(Some(ArchiveKind::Zip)),
        Some("tar.gz" | "tgz") => Ok(Some(ArchiveKind::TarGz)),
        Some(other) => Err(DatasetError::Input(format!(
            "archive: expected `zip` or `tar.gz`, found `{other}`"
        ))),
    }
}

/// Fetches `request` into the cache at `root` (or finds it there, verified).
pub(super) async fn fetch(
    root: &Path,
    reporter: &DownloadReporter,
    request: &UrlDatasetRequest,
) -> Result<UrlDataset, DatasetError> {
    let source = UrlSource {
        url: request.url.clone(),
        sha256: request.sha256.clone(),
        archive: archive_kind(request.archive.as_deref())?,
        member: request.member.clone(),
    };
    let shown = agentcompass_datasets::display_url(&request.url);
    let progress = |step: agentcompass_datasets::DownloadProgress| {
        reporter.report(&DownloadProgress {
            what: &shown,
            unit: "files",
            done: 0,
            total: 1,
            bytes: step.bytes,
        });
    };
    let cached = UrlCache::new(root)
        .fetch(&source, &progress)
        .await
        .map_err(|e| DatasetError::Input(e.to_string()))?;
    if !cached.from_cache {
        reporter.report(&DownloadProgress {
            what: &shown,
            unit: "files",
            done: 1,
            total: 1,
            bytes: cached.bytes,
        });
    }
    Ok(UrlDataset {
        path: cached.path.display().to_string(),
        sha256: cached.sha256,
        url: cached.url,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn archive_kinds() {
        assert_eq!(super::archive_kind(None).unwrap(), None);
        assert!(super::archive_kind(Some("rar"))
            .unwrap_err()
            .to_string()
            .contains("expected `zip` or `tar.gz`, found `rar`"));
    }
}
