//! The file cache: a file a benchmark names by URL and SHA-256 (`http://`, `https://` or
//! `file://`), downloaded once into `<root>/files/`, unpacked when it is an archive, and
//! verified again on every use.
//!
//! Layout under the root (`<data_dir>/datasets`, shared with the task cache): the entry of a
//! plain file is `files/<sha256>/`, that of an archive `files/<sha256>.zip/` or
//! `files/<sha256>.tar.gz/` (the same bytes asked for as a file and as an archive are two
//! entries). An entry holds the downloaded file (named after the URL's last path segment,
//! sanitised, else `download`), for an archive its tree unpacked in `extracted/`, and
//! `entry.json` (the URL without credentials, the SHA-256, the size, the archive kind, the
//! file's name and, for an archive, the digest of the unpacked tree). An entry is built in a
//! temporary directory of `staging/` and published by one `rename`: a download killed at any
//! instant leaves at most a staging directory, which no lookup reads.
//!
//! No lock: two processes (or tasks) filling the same entry at once both download it; the
//! first `rename` publishes, the other finds the entry published and uses it (its own copy
//! goes). Every lookup re-hashes the stored file and, for an archive, the unpacked tree; an
//! altered entry is downloaded again and replaced, or refused ([`UrlError::Altered`]) when
//! that download fails.

mod archive;
mod download;
mod entry;
mod request;
#[cfg(test)]
mod tests;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use entry::{lookup, read_record, Lookup, Record};
use request::Request;

/// What a benchmark asks for: a file by URL and digest, possibly an archive to unpack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlSource {
    /// `http://`, `https://` or `file://` (possibly with credentials, which never reach a
    /// record or a message).
    pub url: String,
    /// The SHA-256 of the downloaded bytes: 64 hex digits, either case, optionally after
    /// `sha256:`.
    pub sha256: String,
    /// The archive to unpack (`"zip"` or `"tar.gz"`); `None`: a plain file.
    #[serde(default)]
    pub archive: Option<ArchiveKind>,
    /// A relative path inside the unpacked archive to return instead of its root.
    #[serde(default)]
    pub member: Option<String>,
}

/// The kinds of archive unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArchiveKind {
    /// A `.zip` (stored or deflated members).
    #[serde(rename = "zip")]
    Zip,
    /// A gzipped tar (`.tar.gz`, `.tgz`).
    #[serde(rename = "tar.gz", alias = "tgz")]
    TarGz,
}

impl ArchiveKind {
    /// The name in sources and records (`zip`, `tar.gz`).
    pub fn name(self) -> &'static str {
        match self {
            ArchiveKind::Zip => "zip",
            ArchiveKind::TarGz => "tar.gz",
        }
    }
}

/// How far a download is, reported as its bytes arrive (once per chunk received).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownloadProgress {
    /// Bytes received so far.
    pub bytes: u64,
    /// The size the server announced, if it did.
    pub total: Option<u64>,
}

/// A verified local copy of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedFile {
    /// The file, the unpacked directory, or the member inside it (inside the cache: read
    /// it, never write it).
    pub path: PathBuf,
    /// The source's URL, credentials removed.
    pub url: String,
    /// The SHA-256 of the downloaded bytes (lowercase hex).
    pub sha256: String,
    /// The size of the downloaded file.
    pub bytes: u64,
    /// Whether it was already cached (nothing downloaded).
    pub from_cache: bool,
}

/// Why a source could not be had. Every message is one line naming the URL without its
/// credentials.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// `sha256` is not 64 hex digits (nothing was downloaded).
    #[error("{url}: sha256 `{text}` is not 64 hex digits (optionally after `sha256:`)")]
    BadSha256 {
        /// The URL, credentials removed.
        url: String,
        /// What was given.
        text: String,
    },
    /// The URL cannot be parsed or has a scheme other than `http`, `https` or `file`.
    #[error("`{url}`: {reason}")]
    BadUrl {
        /// The URL, credentials removed.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `member` is absolute, leaves the archive, names nothing, or is given for a plain
    /// file.
    #[error("{url}: member `{member}` {reason}")]
    BadMember {
        /// The URL, credentials removed.
        url: String,
        /// The member asked for.
        member: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The server answered with an error status.
    #[error("{url}: the server answered HTTP {status}")]
    Http {
        /// The URL, credentials removed.
        url: String,
        /// The status (`404 Not Found`).
        status: String,
    },
    /// The download failed: no connection, a read stalled, the connection dropped.
    #[error("cannot download {url}: {message}")]
    Download {
        /// The URL, credentials removed.
        url: String,
        /// What failed, credentials removed.
        message: String,
    },
    /// The downloaded bytes have another SHA-256 than the source says (nothing was kept).
    /// Bad input, like a bad source: the benchmark's digest or its URL is wrong.
    #[error("{url}: the downloaded bytes have sha256 {found}, expected {expected}")]
    Digest {
        /// The URL, credentials removed.
        url: String,
        /// The source's SHA-256 (lowercase).
        expected: String,
        /// The download's.
        found: String,
    },
    /// The archive cannot be read.
    #[error("{url}: cannot unpack the {kind} archive: {message}")]
    Archive {
        /// The URL, credentials removed.
        url: String,
        /// The archive kind.
        kind: &'static str,
        /// What failed.
        message: String,
    },
    /// An archive member would land outside the unpacked directory or is not a regular file
    /// or directory (nothing was kept).
    #[error("{url}: archive member `{member}` refused: {reason}")]
    UnsafeMember {
        /// The URL, credentials removed.
        url: String,
        /// The member's name in the archive (escaped).
        member: String,
        /// Why it is refused.
        reason: String,
    },
    /// The unpacked archive has no `member`.
    #[error("{url}: the archive has no member `{member}`")]
    MissingMember {
        /// The URL, credentials removed.
        url: String,
        /// The member asked for.
        member: String,
    },
    /// A cached copy no longer matches what was recorded and could not be downloaded again.
    #[error(
        "{url}: the cached copy {} was altered and downloading it again failed: {refetch}",
        path.display()
    )]
    Altered {
        /// The URL, credentials removed.
        url: String,
        /// What was found altered (the file, the unpacked directory or the record).
        path: PathBuf,
        /// Why the new download failed.
        refetch: Box<UrlError>,
    },
    /// The cache directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// What was read or written.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> UrlError + '_ {
    move |source| UrlError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How long a download may receive nothing before it fails.
const READ_STALL: Duration = Duration::from_secs(60);

/// The file cache at a root directory.
#[derive(Debug, Clone)]
pub struct UrlCache {
    root: PathBuf,
    read_stall: Duration,
}

impl UrlCache {
    /// The cache under `root` (`<data_dir>/datasets`; its entries go to `files/`, created on
    /// first use).
    pub fn new(root: impl Into<PathBuf>) -> UrlCache {
        UrlCache {
            root: root.into(),
            read_stall: READ_STALL,
        }
    }

    /// The same cache, failing a download after `stall` without a byte (tests).
    #[cfg(test)]
    fn with_read_stall(mut self, stall: Duration) -> UrlCache {
        self.read_stall = stall;
        self
    }

    /// A verified local path for `source`: the file itself, the unpacked directory, or
    /// `member` inside it; from the cache when it still matches its record, else downloaded
    /// (again). `progress` is called as the bytes of a download arrive.
    pub async fn fetch(
        &self,
        source: &UrlSource,
        progress: &(dyn Fn(DownloadProgress) + Send + Sync),
    ) -> Result<CachedFile, UrlError> {
        let request = Request::parse(source)?;
        let entry = self.root.join("files").join(request.key());
        match lookup(&request, &entry).await? {
            Lookup::Intact(file) => Ok(file),
            Lookup::Missing => self.download(&request, &entry, false, progress).await,
            Lookup::Altered(path) => self
                .download(&request, &entry, true, progress)
                .await
                .map_err(|refetch| UrlError::Altered {
                    url: request.shown.clone(),
                    path,
                    refetch: Box::new(refetch),
                }),
        }
    }

    /// Downloads the source into a staging directory, unpacks it, and publishes it at
    /// `entry` (replacing an altered entry when `replace`).
    async fn download(
        &self,
        request: &Request<'_>,
        entry: &Path,
        replace: bool,
        progress: &(dyn Fn(DownloadProgress) + Send + Sync),
    ) -> Result<CachedFile, UrlError> {
        let staging_root = self.root.join("staging");
        fs::create_dir_all(&staging_root).map_err(io_error(&staging_root))?;
        let staging = tempfile::Builder::new()
            .prefix("url-")
            .tempdir_in(&staging_root)
            .map_err(io_error(&staging_root))?;
        let file = staging.path().join(&request.file_name);
        let (bytes, found) = download::to_file(request, &file, self.read_stall, progress).await?;
        if found != request.sha256 {
            return Err(UrlError::Digest {
                url: request.shown.clone(),
                expected: request.sha256.clone(),
                found,
            });
        }
        let tree = match request.source.archive {
            None => None,
            Some(kind) => {
                let extracted = staging.path().join("extracted");
                let url = request.shown.clone();
                let tree = blocking(&extracted.clone(), move || {
                    archive::extract(kind, &file, &extracted, &url)?;
                    archive::tree_digest(&extracted).map_err(io_error(&extracted))
                })
                .await?;
                Some(tree)
            }
        };
        if let Some(member) = &request.member {
            if fs::symlink_metadata(staging.path().join("extracted").join(member)).is_err() {
                return Err(request.missing_member());
            }
        }
        let record = Record {
            url: request.shown.clone(),
            sha256: found,
            bytes,
            archive: request.source.archive,
            file: request.file_name.clone(),
            tree,
        };
        let failed = |(path, e): (PathBuf, io::Error)| UrlError::Io { path, source: e };
        crate::publish::write_record(staging.path(), &record).map_err(failed)?;
        let record = match crate::publish::publish(staging, entry, replace).map_err(failed)? {
            crate::publish::Published::Ours => record,
            // Another process published the same entry first: use theirs.
            crate::publish::Published::Theirs => read_record(entry)?.ok_or_else(|| {
                io_error(&entry.join("entry.json"))(io::ErrorKind::NotFound.into())
            })?,
        };
        Ok(request.cached(entry, &record, false))
    }
}

/// Runs `work` on tokio's blocking threads (hashing and unpacking read and write whole
/// trees); `path` names what it works on should the thread be lost.
async fn blocking<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T, UrlError> + Send + 'static,
) -> Result<T, UrlError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| io_error(path)(io::Error::other(e.to_string())))?
}
