//! The dataset cache: each task of a git source (URL, commit, path in the repository)
//! fetched once with the user's own `git` into `<root>/tasks/<key>/`, and its content digest
//! verified on every use.
//!
//! Layout under the root (`<data_dir>/datasets`): `repos/<url key>.git`, one bare repository
//! per URL holding the commits fetched so far (`--depth 1`, under an exclusive `flock` of
//! `repos/<url key>.lock`); `tasks/<key>/task/` with `tasks/<key>/entry.json` (the source
//! without credentials, the commit, the path, the digest); `staging/`, where an entry is
//! built before one `rename` publishes it. A fetch killed at any instant leaves at most a
//! staging directory, which no lookup reads; two processes filling the same entry at once
//! both finish, one publishes, the other uses what it published. [`TaskCache::verify`] checks
//! every published entry and takes out the bad ones (and a killed fetch's leftovers) the same
//! way round: out of `tasks/` in one rename, then deleted.
//!
//! The links inside a task are made into what they point to when it is fetched, as Harbor's
//! download makes them (`crate::export`): the cached files, and so their digest, are those of
//! Harbor's own copy (a linked directory counts with its files, as in Harbor's copy), and a
//! link Harbor refuses (absolute, out of the task, dangling, cyclic) refuses the fetch.

#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::export::{has_links, materialise};
use crate::{content_hash, publish, ExportError, HashError};

/// Where one task comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSource {
    /// The task's name (for messages).
    pub name: String,
    /// The repository (`file://`, `https://`, `ssh://` or scp-style), possibly with
    /// credentials, which never reach a record or a message.
    pub git_url: String,
    /// The pinned commit (`None`: the repository's `HEAD` now).
    pub commit: Option<String>,
    /// The task's directory in the repository.
    pub path: String,
}

/// A task ready to use: its files and what they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedTask {
    /// The task directory (inside the cache; read it, never write it).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The repository, credentials removed.
    pub git_url: String,
    /// The commit the files are from.
    pub commit: String,
    /// The task's directory in the repository.
    pub path: String,
    /// Harbor's content digest of the files (bare hex).
    pub digest: String,
    /// The total size of the task's files, in bytes (for progress: tasks done of all, bytes).
    #[serde(default)]
    pub bytes: u64,
}

/// How long a directory in `staging/` may go untouched before [`TaskCache::verify`] takes it
/// for the leftover of a killed fetch.
pub const STALE_STAGING: Duration = Duration::from_secs(60 * 60);

/// What [`TaskCache::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// The published entries looked at.
    pub checked: usize,
    /// Those whose files still have their recorded digest (kept).
    pub intact: usize,
    /// Those taken out of the cache, and why.
    pub dropped: Vec<DroppedEntry>,
    /// The leftovers of killed fetches removed from `staging/` (untouched for
    /// [`STALE_STAGING`]).
    pub stale_staging: usize,
}

/// A cache entry [`TaskCache::verify`] removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedEntry {
    /// The entry's directory name under `tasks/`.
    pub key: String,
    /// The repository, credentials removed (`None`: its `entry.json` could not be read).
    pub git_url: Option<String>,
    /// The commit (`None`: its `entry.json` could not be read).
    pub commit: Option<String>,
    /// The task's directory in the repository (`None`: its `entry.json` could not be read).
    pub path: Option<String>,
    /// Why it was removed (one line).
    pub reason: String,
}

impl fmt::Display for DroppedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.git_url, &self.commit, &self.path) {
            (Some(url), Some(commit), Some(path)) => {
                write!(f, "`{path}` of {url} at {commit}: {}", self.reason)
            }
            _ => write!(f, "cache entry {}: {}", self.key, self.reason),
        }
    }
}

/// Why a task could not be had from the cache or its source.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// `path` is absolute or leaves the repository.
    #[error("task `{task}`: path `{path}` must be relative and stay inside the repository")]
    BadPath {
        /// The task.
        task: String,
        /// Its path.
        path: String,
    },
    /// `git` failed (the message is git's, credentials removed).
    #[error("task `{task}`: {what} {url}: {message}")]
    Git {
        /// The task.
        task: String,
        /// What was attempted.
        what: &'static str,
        /// The repository, credentials removed.
        url: String,
        /// git's last line.
        message: String,
    },
    /// The commit has no such path.
    #[error("task `{task}`: `{path}` does not exist at commit {commit} of {url}")]
    MissingPath {
        /// The task.
        task: String,
        /// Its path.
        path: String,
        /// The commit.
        commit: String,
        /// The repository, credentials removed.
        url: String,
    },
    /// A cached copy no longer matches its digest and could not be fetched again.
    #[error(
        "task `{task}`: the cached copy {} was altered (digest {found}, recorded {recorded}) \
         and fetching it again failed: {refetch}",
        dir.display()
    )]
    Altered {
        /// The task.
        task: String,
        /// The cached directory.
        dir: PathBuf,
        /// The digest the files have now.
        found: String,
        /// The digest recorded when they were fetched.
        recorded: String,
        /// Why the fetch failed.
        refetch: Box<CacheError>,
    },
    /// The cache directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// What was read or written.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// A link in the task is one Harbor refuses (or could not be made into a copy).
    #[error("{0}")]
    Links(ExportError),
    /// The digest could not be computed.
    #[error("task `{task}`: {source}")]
    Hash {
        /// The task.
        task: String,
        /// Why.
        source: HashError,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The cache at a root directory.
#[derive(Debug, Clone)]
pub struct TaskCache {
    root: PathBuf,
}

impl TaskCache {
    /// The cache under `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> TaskCache {
        TaskCache { root: root.into() }
    }

    /// The task of `source`: from the cache when its files still have their digest, else
    /// fetched (again).
    pub fn get(&self, source: &TaskSource) -> Result<CachedTask, CacheError> {
        let path = normal_path(source)?;
        let commit = match &source.commit {
            Some(commit) => commit.clone(),
            None => self.remote_head(source)?,
        };
        let key = digest_hex(&[
            source.git_url.as_bytes(),
            commit.as_bytes(),
            path.as_bytes(),
        ]);
        let entry = self.root.join("tasks").join(&key);
        if let Some(cached) = verified(&entry)? {
            return match cached {
                Verified::Intact(task) => Ok(task),
                Verified::Altered { found, record, .. } => {
                    let recorded = record.map_or_else(|| "unknown".to_string(), |r| r.digest);
                    // Fetch again; the altered entry goes only once a good copy exists.
                    self.fetch(source, &commit, &path, &entry, true)
                        .map_err(|refetch| CacheError::Altered {
                            task: source.name.clone(),
                            dir: entry.join("task"),
                            found,
                            recorded,
                            refetch: Box::new(refetch),
                        })
                }
            };
        }
        self.fetch(source, &commit, &path, &entry, false)
    }

    /// Checks every published entry against its digest and removes the bad ones (files
    /// altered, `entry.json` missing or unreadable, task directory missing), each moved out of
    /// `tasks/` in one rename before it is deleted, so a concurrent [`TaskCache::get`] sees
    /// either the whole entry or none (and fetches it again). Also removes what killed fetches
    /// left in `staging/` (untouched for [`STALE_STAGING`]).
    pub fn verify(&self) -> Result<VerifyReport, CacheError> {
        self.verify_with(STALE_STAGING)
    }

    /// [`TaskCache::verify`], with staging leftovers stale after `stale_after`.
    fn verify_with(&self, stale_after: Duration) -> Result<VerifyReport, CacheError> {
        let mut report = VerifyReport::default();
        let tasks = self.root.join("tasks");
        let mut keys: Vec<std::ffi::OsString> = match fs::read_dir(&tasks) {
            Ok(dir) => dir
                .map(|e| e.map(|e| e.file_name()))
                .collect::<Result<_, _>>()
                .map_err(io_error(&tasks))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(&tasks)(e)),
        };
        keys.sort();
        for key in keys {
            let entry = tasks.join(&key);
            report.checked += 1;
            let (record, reason) = match examine(&entry) {
                Verified::Intact(_) => {
                    report.intact += 1;
                    continue;
                }
                Verified::Altered { record, reason, .. } => (record, reason),
            };
            if self.take_out(&entry)? {
                report.dropped.push(DroppedEntry {
                    key: key.to_string_lossy().into_owned(),
                    git_url: record.as_ref().map(|r| r.git_url.clone()),
                    commit: record.as_ref().map(|r| r.commit.clone()),
                    path: record.as_ref().map(|r| r.path.clone()),
                    reason,
                });
            } else {
                // Replaced by a good copy while it was being looked at.
                report.intact += 1;
            }
        }
        report.stale_staging = self.clear_staging(stale_after)?;
        Ok(report)
    }

    /// Moves the entry out of `tasks/` into staging and deletes it there; `false` when the
    /// moved entry turns out intact (a concurrent fetch replaced the bad one in between), in
    /// which case it goes back.
    fn take_out(&self, entry: &Path) -> Result<bool, CacheError> {
        let staging_root = self.root.join("staging");
        fs::create_dir_all(&staging_root).map_err(io_error(&staging_root))?;
        let aside = tempfile::Builder::new()
            .prefix("dropped-")
            .tempdir_in(&staging_root)
            .map_err(io_error(&staging_root))?;
        let moved = aside.path().join("entry");
        match fs::rename(entry, &moved) {
            Ok(()) => {}
            // Gone already (another verify, or a fetch replacing it).
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(io_error(entry)(e)),
        }
        if matches!(examine(&moved), Verified::Intact(_)) && fs::rename(&moved, entry).is_ok() {
            return Ok(false);
        }
        let dir = aside.path().to_path_buf();
        aside.close().map_err(io_error(&dir))?;
        Ok(true)
    }

    /// Removes what fetches killed mid-way left in `staging/`: every directory there whose
    /// own and direct children's modification times are all older than `stale_after`.
    fn clear_staging(&self, stale_after: Duration) -> Result<usize, CacheError> {
        let staging_root = self.root.join("staging");
        let entries = match fs::read_dir(&staging_root) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io_error(&staging_root)(e)),
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries {
            let path = entry.map_err(io_error(&staging_root))?.path();
            let Some(touched) = last_touched(&path) else {
                continue;
            };
            if now.duration_since(touched).unwrap_or_default() < stale_after {
                continue;
            }
            let gone = if path.is_dir() && !path.is_symlink() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            match gone {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error(&path)(e)),
            }
        }
        Ok(removed)
    }

    /// Fetches the task into a staging directory and publishes it at `entry` (replacing an
    /// altered copy when `replace`).
    fn fetch(
        &self,
        source: &TaskSource,
        commit: &str,
        path: &str,
        entry: &Path,
        replace: bool,
    ) -> Result<CachedTask, CacheError> {
        let staging_root = self.root.join("staging");
        fs::create_dir_all(&staging_root).map_err(io_error(&staging_root))?;
        let staging = tempfile::Builder::new()
            .prefix("entry-")
            .tempdir_in(&staging_root)
            .map_err(io_error(&staging_root))?;
        let checkout = staging.path().join("checkout");
        self.checkout(source, commit, path, &checkout)?;
        let task_dir = staging.path().join("task");
        let from = checkout.join(path);
        if !from.is_dir() {
            return Err(CacheError::MissingPath {
                task: source.name.clone(),
                path: path.to_string(),
                commit: commit.to_string(),
                url: display_url(&source.git_url),
            });
        }
        // Links resolved in the task alone, as Harbor resolves them (in a copy of the task).
        if has_links(&from).map_err(io_error(&from))? {
            materialise(&source.name, &from, &task_dir).map_err(CacheError::Links)?;
        } else {
            fs::rename(&from, &task_dir).map_err(io_error(&from))?;
        }
        let digest = content_hash(&task_dir)
            .map_err(|source_error| CacheError::Hash {
                task: source.name.clone(),
                source: source_error,
            })?
            .digest;
        let bytes = tree_bytes(&task_dir).map_err(io_error(&task_dir))?;
        let mut task = CachedTask {
            dir: PathBuf::new(),
            git_url: display_url(&source.git_url),
            commit: commit.to_string(),
            path: path.to_string(),
            digest,
            bytes,
        };
        let failed = |(path, e): (PathBuf, io::Error)| CacheError::Io { path, source: e };
        publish::write_record(staging.path(), &task).map_err(failed)?;
        fs::remove_dir_all(&checkout).map_err(io_error(&checkout))?;
        // Another process that published the same entry first published the same files.
        publish::publish(staging, entry, replace).map_err(failed)?;
        task.dir = entry.join("task");
        Ok(task)
    }

    /// Checks `path` of `commit` out into `dest`, fetching the commit into the URL's bare
    /// repository first when it is not there yet (under the repository's lock).
    fn checkout(
        &self,
        source: &TaskSource,
        commit: &str,
        path: &str,
        dest: &Path,
    ) -> Result<(), CacheError> {
        let repos = self.root.join("repos");
        fs::create_dir_all(&repos).map_err(io_error(&repos))?;
        let url_key = digest_hex(&[source.git_url.as_bytes()]);
        let lock_path = repos.join(format!("{url_key}.lock"));
        let lock_file = File::create(&lock_path).map_err(io_error(&lock_path))?;
        let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io_error(&lock_path)(errno.into()))?;
        let repo = repos.join(format!("{url_key}.git"));
        if !repo.join("HEAD").is_file() {
            let _ = fs::remove_dir_all(&repo);
            self.git(source, "cannot create a cache repository for", |c| {
                c.args(["init", "--quiet", "--bare"]).arg(&repo)
            })?;
        }
        let have = git_command(Some(&repo))
            .args(["cat-file", "-e"])
            .arg(format!("{commit}^{{commit}}"))
            .output()
            .is_ok_and(|o| o.status.success());
        if !have {
            self.git(source, "cannot fetch the pinned commit from", |c| {
                c.arg("-C")
                    .arg(&repo)
                    .args(["fetch", "--quiet", "--depth", "1", "--no-tags"])
                    .arg(&source.git_url)
                    .arg(commit)
            })?;
        }
        fs::create_dir_all(dest).map_err(io_error(dest))?;
        let index = dest.with_extension("index");
        let out = git_command(Some(&repo))
            .env("GIT_INDEX_FILE", &index)
            .arg("--work-tree")
            .arg(dest)
            .args(["checkout", "--quiet"])
            .arg(commit)
            .arg("--")
            .arg(path)
            .output()
            .map_err(io_error(dest))?;
        let _ = fs::remove_file(&index);
        if !out.status.success() {
            return Err(CacheError::MissingPath {
                task: source.name.clone(),
                path: path.to_string(),
                commit: commit.to_string(),
                url: display_url(&source.git_url),
            });
        }
        Ok(())
    }

    /// The commit the repository's `HEAD` names now.
    fn remote_head(&self, source: &TaskSource) -> Result<String, CacheError> {
        let out = self.git(source, "cannot read HEAD of", |c| {
            c.args(["ls-remote", "--quiet"])
                .arg(&source.git_url)
                .arg("HEAD")
        })?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .next()
            .map(str::to_string)
            .ok_or_else(|| CacheError::Git {
                task: source.name.clone(),
                what: "cannot read HEAD of",
                url: display_url(&source.git_url),
                message: "no HEAD".into(),
            })
    }

    /// Runs git as `build` sets it up; a failure is `what` with git's last line.
    fn git(
        &self,
        source: &TaskSource,
        what: &'static str,
        build: impl FnOnce(&mut Command) -> &mut Command,
    ) -> Result<Output, CacheError> {
        let mut command = git_command(None);
        build(&mut command);
        let failed = |message: String| CacheError::Git {
            task: source.name.clone(),
            what,
            url: display_url(&source.git_url),
            message: scrub(&message, &source.git_url),
        };
        let out = command.output().map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(failed(git_reason(&stderr)));
        }
        Ok(out)
    }
}

/// The line of git's stderr that says why: its first `fatal:`/`error:` line (git adds
/// advice after it, such as "Please make sure you have the correct access rights"), else its
/// last non-empty line.
fn git_reason(stderr: &str) -> String {
    let lines = || stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| lines().next_back())
        .unwrap_or("")
        .to_string()
}

/// The published entry at `entry`, checked against its digest (`None`: not cached).
fn verified(entry: &Path) -> Result<Option<Verified>, CacheError> {
    let record = entry.join("entry.json");
    match fs::symlink_metadata(&record) {
        Ok(_) => Ok(Some(examine(entry))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&record)(e)),
    }
}

/// What the entry at `entry` is: intact, or why not.
fn examine(entry: &Path) -> Verified {
    let altered = |record: Option<CachedTask>, found: &str, reason: String| Verified::Altered {
        record,
        found: found.to_string(),
        reason,
    };
    if !fs::symlink_metadata(entry).is_ok_and(|m| m.is_dir()) {
        return altered(None, "not a directory", "not a directory".into());
    }
    let record = entry.join("entry.json");
    let text = match fs::read(&record) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return altered(None, "no entry.json", "no entry.json".into())
        }
        Err(e) => {
            return altered(
                None,
                "unreadable entry.json",
                format!("entry.json unreadable: {e}"),
            )
        }
    };
    let mut task = match serde_json::from_slice::<CachedTask>(&text) {
        Ok(task) => task,
        // Not ours to read: fetched again and replaced.
        Err(e) => {
            return altered(
                None,
                "unreadable entry.json",
                format!("entry.json unreadable: {e}"),
            )
        }
    };
    task.dir = entry.join("task");
    if !fs::symlink_metadata(&task.dir).is_ok_and(|m| m.is_dir()) {
        return altered(Some(task), "no task directory", "no task directory".into());
    }
    if has_links(&task.dir).unwrap_or(true) {
        // Cached before links were made into files: its digest is not Harbor's.
        let reason = "holds links (cached before they were made into files)".to_string();
        return altered(Some(task), "links", reason);
    }
    let found = match content_hash(&task.dir) {
        Ok(hash) => hash.digest,
        Err(e) => {
            let reason = format!("task directory unreadable: {e}");
            return altered(Some(task), "unreadable", reason);
        }
    };
    if found != task.digest {
        let reason = format!("files altered (digest {found}, recorded {})", task.digest);
        return altered(Some(task), &found, reason);
    }
    if task.bytes == 0 {
        // Recorded before sizes were: counted now.
        task.bytes = tree_bytes(&task.dir).unwrap_or(0);
    }
    Verified::Intact(task)
}

/// What a published entry turned out to be.
enum Verified {
    /// Its files have the recorded digest.
    Intact(CachedTask),
    /// They do not, or its record or its files are missing or unreadable.
    Altered {
        /// Its record, when readable.
        record: Option<CachedTask>,
        /// The digest the files have (or what prevented computing it).
        found: String,
        /// Why it is not intact (one line).
        reason: String,
    },
}

/// The total size of the regular files under `dir` (links not followed).
fn tree_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += tree_bytes(&entry.path())?;
        } else if kind.is_file() {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

/// The latest modification time of `path` and of its direct children (`None`: gone).
fn last_touched(path: &Path) -> Option<SystemTime> {
    let mut latest = fs::symlink_metadata(path).ok()?.modified().ok()?;
    if let Ok(children) = fs::read_dir(path) {
        for child in children.flatten() {
            if let Ok(time) = child.metadata().and_then(|m| m.modified()) {
                latest = latest.max(time);
            }
        }
    }
    Some(latest)
}

/// `git`, never prompting (no terminal questions in a run), in `repo` when given.
fn git_command(repo: Option<&Path>) -> Command {
    let mut command = Command::new("git");
    command.env("GIT_TERMINAL_PROMPT", "0");
    if let Some(repo) = repo {
        command.arg("-C").arg(repo);
    }
    command
}

/// The task's path, normalised (`a/./b` → `a/b`, `a/../b` → `b`); refused when absolute or
/// leaving the repository.
fn normal_path(source: &TaskSource) -> Result<String, CacheError> {
    let bad = || CacheError::BadPath {
        task: source.name.clone(),
        path: source.path.clone(),
    };
    let mut parts: Vec<String> = Vec::new();
    for component in Path::new(&source.path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop().ok_or_else(bad)?;
            }
            Component::RootDir | Component::Prefix(_) => return Err(bad()),
        }
    }
    if parts.is_empty() {
        return Err(bad());
    }
    Ok(parts.join("/"))
}

/// The SHA-256 of the parts, NUL-separated, in hex (32 digits: a directory name).
fn digest_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
        hasher.update(b"\0");
    }
    hex::encode(&hasher.finalize()[..16])
}

/// `url` without the user information of an `scheme://user:secret@host/…` URL.
pub fn display_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// `text` with the URL's credentials (and the URL with them) replaced by the bare URL.
pub(crate) fn scrub(text: &str, url: &str) -> String {
    let shown = display_url(url);
    let mut out = text.replace(url, &shown);
    if let Some((_, rest)) = url.split_once("://") {
        let authority_end = rest.find('/').unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            let userinfo = &rest[..at];
            if !userinfo.is_empty() {
                out = out.replace(userinfo, "***");
            }
        }
    }
    out
}
