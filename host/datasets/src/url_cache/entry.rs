//! A published entry: its record (`entry.json`) and its verification on every lookup.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{archive, blocking, io_error, ArchiveKind, CachedFile, Request, UrlError};

/// What `entry.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The URL, credentials removed.
    pub(super) url: String,
    /// The SHA-256 of the file (lowercase hex).
    pub(super) sha256: String,
    /// Its size.
    pub(super) bytes: u64,
    /// The archive kind, if unpacked.
    pub(super) archive: Option<ArchiveKind>,
    /// The file's name in the entry.
    pub(super) file: String,
    /// For an archive, the digest of the unpacked tree ([`archive::tree_digest`]).
    #[serde(default)]
    pub(super) tree: Option<String>,
}

/// What a lookup found at an entry.
pub(super) enum Lookup {
    /// Nothing published.
    Missing,
    /// An entry matching its record.
    Intact(CachedFile),
    /// An entry that does not (the path found altered).
    Altered(PathBuf),
}

/// The record of the entry at `entry` (`None`: not published; an unreadable record is an
/// error).
pub(super) fn read_record(entry: &Path) -> Result<Option<Record>, UrlError> {
    let path = entry.join("entry.json");
    match fs::read(&path) {
        Ok(text) => serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| io_error(&path)(e.into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// The published entry at `entry`, checked against its record: the file's SHA-256 and size,
/// the unpacked tree's digest, the member's presence.
pub(super) async fn lookup(request: &Request<'_>, entry: &Path) -> Result<Lookup, UrlError> {
    let record_path = entry.join("entry.json");
    let record = match read_record(entry) {
        Ok(Some(record)) => record,
        Ok(None) if fs::symlink_metadata(entry).is_err() => return Ok(Lookup::Missing),
        // A directory without a readable record: not ours to use, replaced.
        Ok(None) | Err(UrlError::Io { .. }) => return Ok(Lookup::Altered(record_path)),
        Err(e) => return Err(e),
    };
    let stored_name_ok = Path::new(&record.file)
        .components()
        .eq([Component::Normal(record.file.as_ref())]);
    if record.sha256 != request.sha256
        || record.archive != request.source.archive
        || !stored_name_ok
        || record.archive.is_some() != record.tree.is_some()
    {
        return Ok(Lookup::Altered(record_path));
    }
    let file = entry.join(&record.file);
    let hashed = {
        let file = file.clone();
        blocking(&file.clone(), move || Ok(hash_file(&file).ok())).await?
    };
    if hashed != Some((record.bytes, record.sha256.clone())) {
        return Ok(Lookup::Altered(file));
    }
    if let Some(recorded) = &record.tree {
        let extracted = entry.join("extracted");
        let found = {
            let extracted = extracted.clone();
            blocking(&extracted.clone(), move || {
                Ok(archive::tree_digest(&extracted).ok())
            })
            .await?
        };
        if found.as_ref() != Some(recorded) {
            return Ok(Lookup::Altered(extracted));
        }
        if let Some(member) = &request.member {
            if fs::symlink_metadata(extracted.join(member)).is_err() {
                return Err(request.missing_member());
            }
        }
    }
    Ok(Lookup::Intact(request.cached(entry, &record, true)))
}

/// The size and SHA-256 (lowercase hex) of the file at `path`.
pub(super) fn hash_file(path: &Path) -> io::Result<(u64, String)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    Ok((bytes, hex::encode(hasher.finalize())))
}
