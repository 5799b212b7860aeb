//! Benchmark datasets: what the host needs to know about a dataset's tasks to fetch, cache
//! and verify them (issue 35). For now: Harbor's legacy registry (`registry.json`: datasets,
//! their tasks, the latest-version rule, the `NAME@VERSION` references and the refusal of
//! hosted-registry packages) and a Harbor task's content digest, computed exactly as Harbor
//! 0.25 computes it (`Packager.compute_content_hash`), so a cached task is verified against
//! the digest Harbor itself would give it (the facts are in `docs/design/harbor-datasets.md`).

mod cache;
mod content_hash;
mod environment_hash;
mod export;
mod publish;
mod registry;
mod url_cache;

pub use cache::{
    display_url, CacheError, CachedTask, DroppedEntry, TaskCache, TaskSource, VerifyReport,
    STALE_STAGING,
};
pub use content_hash::{content_hash, ContentHash, HashError};
pub use environment_hash::environment_hash;
pub use export::{export_dataset, export_task, ExportError};
pub use registry::{
    latest_version, DatasetRef, DatasetSpec, MetricConfig, ReferenceError, Registry, RegistryError,
    RegistryTask,
};
pub use url_cache::{ArchiveKind, CachedFile, DownloadProgress, UrlCache, UrlError, UrlSource};
