//! A source checked before any network access: its URL, digest, member and the name its
//! file is stored under.

use std::path::{Component, Path, PathBuf};

use super::entry::Record;
use super::{CachedFile, UrlError, UrlSource};
use crate::display_url;

/// A source checked before any network access.
pub(super) struct Request<'a> {
    /// As given.
    pub(super) source: &'a UrlSource,
    /// Parsed (with its credentials, for the download only).
    pub(super) url: reqwest::Url,
    /// The URL without credentials.
    pub(super) shown: String,
    /// The expected SHA-256, lowercase hex.
    pub(super) sha256: String,
    /// The member, normalised.
    pub(super) member: Option<PathBuf>,
    /// The name the downloaded file is stored under.
    pub(super) file_name: String,
}

impl<'a> Request<'a> {
    pub(super) fn parse(source: &'a UrlSource) -> Result<Request<'a>, UrlError> {
        let shown = display_url(&source.url);
        let text = source.sha256.trim();
        let digits = match text.get(..7) {
            Some(prefix) if prefix.eq_ignore_ascii_case("sha256:") => &text[7..],
            _ => text,
        };
        if digits.len() != 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(UrlError::BadSha256 {
                url: shown,
                text: source.sha256.escape_debug().to_string(),
            });
        }
        let bad_url = |reason: String| UrlError::BadUrl {
            url: shown.escape_debug().to_string(),
            reason,
        };
        let url = reqwest::Url::parse(&source.url).map_err(|e| bad_url(e.to_string()))?;
        match url.scheme() {
            "http" | "https" => {}
            "file" => {
                url.to_file_path()
                    .map_err(|()| bad_url("a file:// URL must name a local path".into()))?;
            }
            other => {
                return Err(bad_url(format!(
                    "scheme `{other}` is not fetched (http://, https:// or file:// only)"
                )))
            }
        }
        let member = match &source.member {
            None => None,
            Some(member) => Some(normal_member(&shown, member, source.archive.is_some())?),
        };
        let file_name = file_name(&url);
        Ok(Request {
            source,
            url,
            shown,
            sha256: digits.to_ascii_lowercase(),
            member,
            file_name,
        })
    }

    /// The entry's directory name under `files/`.
    pub(super) fn key(&self) -> String {
        match self.source.archive {
            None => self.sha256.clone(),
            Some(kind) => format!("{}.{}", self.sha256, kind.name()),
        }
    }

    /// What the caller gets for the entry at `entry` recorded as `record`.
    pub(super) fn cached(&self, entry: &Path, record: &Record, from_cache: bool) -> CachedFile {
        let path = match (&self.source.archive, &self.member) {
            (None, _) => entry.join(&record.file),
            (Some(_), None) => entry.join("extracted"),
            (Some(_), Some(member)) => entry.join("extracted").join(member),
        };
        CachedFile {
            path,
            url: self.shown.clone(),
            sha256: self.sha256.clone(),
            bytes: record.bytes,
            from_cache,
        }
    }

    pub(super) fn missing_member(&self) -> UrlError {
        UrlError::MissingMember {
            url: self.shown.clone(),
            member: self.source.member.clone().unwrap_or_default(),
        }
    }
}

/// `member` normalised (`a/./b` → `a/b`); refused when absolute, with `..`, empty, or given
/// for a plain file.
fn normal_member(url: &str, member: &str, archive: bool) -> Result<PathBuf, UrlError> {
    let bad = |reason| UrlError::BadMember {
        url: url.to_string(),
        member: member.escape_debug().to_string(),
        reason,
    };
    if !archive {
        return Err(bad("is only taken from an archive (no `archive` given)"));
    }
    let mut path = PathBuf::new();
    for component in Path::new(member).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(bad("must be relative, without `..`"))
            }
        }
    }
    if path.as_os_str().is_empty() {
        return Err(bad("names nothing inside the archive"));
    }
    Ok(path)
}

/// The URL's last path segment, sanitised (`[A-Za-z0-9._+-]`, no leading dot, at most 100
/// bytes), else `download`; never a name the entry itself uses.
fn file_name(url: &reqwest::Url) -> String {
    let last = url
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .unwrap_or("");
    let clean: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let clean = clean.trim_start_matches('.');
    match clean {
        "" | "entry.json" | "extracted" => "download".to_string(),
        name => name.to_string(),
    }
}
