//! A per-user cache of what loading an unchanged plugin library already established, so that a
//! run does not establish it again: the library's SHA-256 digest (hashing the bundled plugins
//! was over a third of a one-task run) and abi_stable's verdict on its layout (walking the
//! layout of everything reachable from each root module was ~40 % of `list benchmark`).
//!
//! An entry is keyed by what the kernel reports for the *open descriptor* that is then
//! `dlopen`ed: device, inode, size, modification time and status-change time, in nanoseconds
//! (git's index rule). A write to the file, a truncation, a `chmod` or a replacement at the same
//! path all give a new key, and the status-change time cannot be set from user space, so a hit
//! means the bytes are the bytes that were hashed. Racy entries are never recorded: a file
//! changed less than [`RACY_SECONDS`] before it was hashed could change again within the same
//! timestamp tick, so it is hashed on every load until it has been quiet that long. The stamp
//! is read again after hashing and the entry dropped if it moved.
//!
//! A layout verdict is the pair (stamp of the running host binary, digest of the library):
//! abi_stable accepted the layout of the library with those bytes against the layout this
//! exact host binary expects (both are static data of the two files, so the pair decides the
//! outcome). Only acceptances are recorded, never while the host binary is racy, and a library
//! is checked in full again as soon as either file changes.
//!
//! The cache file (`plugin-digests`, one entry a line) lives in the user's cache directory and
//! is trusted like a plugin: its path must pass [`check_path_trusted`] and the file must be
//! owned by root or the current user and writable by nobody else; otherwise, or if a line does
//! not parse, the cache is ignored (every library is hashed) and rewritten. It is rewritten
//! atomically (a new file renamed over the old one) only when a load added an entry. A load
//! with a lock file (`--plugin-lock`) never uses it: a pinned load hashes every byte.

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::regular::open_regular;
use crate::trust::{check_owner_and_mode, check_path_trusted, current_euid};

/// A file whose modification or status-change time is less than this many seconds old when it
/// is hashed is not recorded.
pub const RACY_SECONDS: i64 = 2;
/// At most this many digests (and as many layout verdicts) are kept; the ones used or added by
/// the latest load come first.
const MAX_ENTRIES: usize = 256;
/// The first line of the file; a file with another first line (or [`HEADER_V1`]) is ignored.
const HEADER: &str = "agentcompass plugin digests v2";
/// The first line written before layout verdicts existed (digest lines only); still read.
const HEADER_V1: &str = "agentcompass plugin digests v1";
/// The first word of a layout-verdict line (the rest is a stamp line).
const LAYOUT_PREFIX: &str = "layout ";
/// The cache file's name in its directory.
pub const FILE_NAME: &str = "plugin-digests";

/// What the kernel says about one open library: the cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileStamp {
    /// The stamp of `meta` (from `fstat` of the open descriptor).
    pub fn of(meta: &Metadata) -> Self {
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file changed less than [`RACY_SECONDS`] before `now_ns`.
    fn is_racy(&self, now_ns: i128) -> bool {
        let changed = self.mtime_ns.max(self.ctime_ns);
        now_ns - changed < i128::from(RACY_SECONDS) * 1_000_000_000
    }

    /// The cache file's line for this stamp and digest.
    pub(crate) fn to_line(self, sha256: &str) -> String {
        format!(
            "{} {} {} {} {} {sha256}",
            self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns
        )
    }

    fn parse_line(line: &str) -> Option<(Self, String)> {
        let mut fields = line.split(' ');
        let stamp = FileStamp {
            dev: fields.next()?.parse().ok()?,
            ino: fields.next()?.parse().ok()?,
            size: fields.next()?.parse().ok()?,
            mtime_ns: fields.next()?.parse().ok()?,
            ctime_ns: fields.next()?.parse().ok()?,
        };
        let sha256 = fields.next()?;
        let hex = sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        (hex && fields.next().is_none()).then(|| (stamp, sha256.to_string()))
    }
}

#[derive(Debug, Default)]
struct Entries {
    /// Every entry read or added, by stamp.
    digests: HashMap<FileStamp, String>,
    /// The stamps in the order to write them: used or added by this load first.
    order: Vec<FileStamp>,
    /// Layout verdicts: (host binary stamp, library digest) pairs abi_stable accepted.
    layouts: HashSet<(FileStamp, String)>,
    /// The verdicts in the order to write them: used or added by this load first.
    layout_order: Vec<(FileStamp, String)>,
    /// Whether this load added an entry (the file is rewritten only then).
    added: bool,
    /// How many lookups hit, for the debug log.
    hits: usize,
}

/// The digest cache of one load. Shared by reference across the libraries of a load.
#[derive(Debug)]
pub struct DigestCache {
    path: PathBuf,
    entries: Mutex<Entries>,
    /// The running host binary's stamp, the key of layout verdicts (none: every layout is
    /// checked in full and nothing is recorded).
    host: Option<FileStamp>,
}

impl DigestCache {
    /// The default location: `$XDG_CACHE_HOME/agentcompass-host/plugin-digests`, else
    /// `$HOME/.cache/agentcompass-host/plugin-digests`; `None` without either variable.
    pub fn default_path() -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let cache = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
        Some(cache.join("agentcompass-host").join(FILE_NAME))
    }

    /// Reads the cache at `path`. A missing, untrusted or unreadable file gives an empty cache
    /// (logged at debug level): a cache can only save work, never refuse a plugin.
    pub fn open(path: PathBuf) -> Self {
        // The trust check wants a canonical path: resolve the directory (every component of
        // the result is then checked), keep the file name.
        let path = match (path.parent().map(std::fs::canonicalize), path.file_name()) {
            (Some(Ok(dir)), Some(name)) => dir.join(name),
            _ => path,
        };
        let entries = match read_entries(&path) {
            Ok(entries) => entries,
            Err(reason) => {
                tracing::debug!(cache = %path.display(), %reason, "plugin digest cache not used");
                Entries::default()
            }
        };
        DigestCache {
            path,
            entries: Mutex::new(entries),
            host: host_binary_stamp(),
        }
    }

    /// The same cache keyed for the host binary whose stamp is `host` (tests).
    #[cfg(test)]
    fn for_host(mut self, host: FileStamp) -> Self {
        self.host = Some(host);
        self
    }

    /// The digest recorded for `stamp`, if any.
    pub fn lookup(&self, stamp: &FileStamp) -> Option<String> {
        let mut entries = self.entries.lock().ok()?;
        let digest = entries.digests.get(stamp).cloned()?;
        entries.hits += 1;
        entries.order.retain(|s| s != stamp);
        entries.order.insert(0, *stamp);
        Some(digest)
    }

    /// Records the digest of a library hashed through a descriptor whose stamp was `before`
    /// when hashing started and `after` when it ended; nothing is recorded if the file moved
    /// meanwhile or changed too recently to be sure (see [`RACY_SECONDS`]).
    pub fn record(&self, before: FileStamp, after: FileStamp, sha256: &str) {
        if before != after || before.is_racy(now_ns()) {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.digests.insert(before, sha256.to_string());
        entries.order.retain(|s| *s != before);
        entries.order.insert(0, before);
        entries.added = true;
    }

    /// Whether abi_stable accepted the layout of the library whose digest is `sha256` against
    /// the running host binary in an earlier load.
    pub fn layout_accepted(&self, sha256: &str) -> bool {
        let (Some(host), Ok(mut entries)) = (self.host, self.entries.lock()) else {
            return false;
        };
        let key = (host, sha256.to_string());
        if !entries.layouts.contains(&key) {
            return false;
        }
        entries.hits += 1;
        entries.layout_order.retain(|k| *k != key);
        entries.layout_order.insert(0, key);
        true
    }

    /// Records that abi_stable accepted the layout of the library whose digest is `sha256`
    /// against the running host binary (not recorded while that binary is racy).
    pub fn record_layout(&self, sha256: &str) {
        let Some(host) = self.host.filter(|host| !host.is_racy(now_ns())) else {
            return;
        };
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let key = (host, sha256.to_string());
        entries.layout_order.retain(|k| *k != key);
        entries.layout_order.insert(0, key.clone());
        entries.layouts.insert(key);
        entries.added = true;
    }

    /// Writes the cache back if entries were added since it was read or last written: a new file, `fsync`ed, renamed over
    /// the old one (concurrent loads each write a whole file; the last rename wins). Failures
    /// are logged at debug level and otherwise ignored.
    pub fn persist(&self) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        tracing::debug!(cache = %self.path.display(), hits = entries.hits, added = entries.added, "plugin digest cache");
        if !entries.added {
            return;
        }
        match write_entries(&self.path, &entries) {
            Ok(()) => entries.added = false,
            Err(err) => {
                tracing::debug!(cache = %self.path.display(), error = %err, "plugin digest cache not written")
            }
        }
    }
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The stamp of the running host binary (`/proc/self/exe`), the key of layout verdicts.
fn host_binary_stamp() -> Option<FileStamp> {
    std::fs::metadata("/proc/self/exe")
        .ok()
        .map(|meta| FileStamp::of(&meta))
}

/// Reads and checks the cache file; an error says why it is not used.
fn read_entries(path: &Path) -> Result<Entries, String> {
    let uid = current_euid().map_err(|e| e.to_string())?;
    let (mut file, meta) = open_regular(path).map_err(|e| format!("{e:?}"))?;
    check_path_trusted(path).map_err(|e| e.to_string())?;
    check_owner_and_mode(&meta, path, path, false, uid).map_err(|e| e.to_string())?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).map_err(|e| e.to_string())?;
    let mut lines = text.lines();
    if !matches!(lines.next(), Some(HEADER | HEADER_V1)) {
        return Err("unknown format".into());
    }
    let mut entries = Entries::default();
    for line in lines {
        let bad = || format!("bad line {line:?}");
        if let Some(verdict) = line.strip_prefix(LAYOUT_PREFIX) {
            let key = FileStamp::parse_line(verdict).ok_or_else(bad)?;
            if entries.layouts.insert(key.clone()) {
                entries.layout_order.push(key);
            }
            continue;
        }
        let (stamp, digest) = FileStamp::parse_line(line).ok_or_else(bad)?;
        if entries.digests.insert(stamp, digest).is_none() {
            entries.order.push(stamp);
        }
    }
    Ok(entries)
}

fn write_entries(path: &Path, entries: &Entries) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut text =
        String::with_capacity(64 + (entries.order.len() + entries.layout_order.len()) * 130);
    text.push_str(HEADER);
    text.push('\n');
    for stamp in entries.order.iter().take(MAX_ENTRIES) {
        if let Some(digest) = entries.digests.get(stamp) {
            text.push_str(&stamp.to_line(digest));
            text.push('\n');
        }
    }
    for (host, digest) in entries.layout_order.iter().take(MAX_ENTRIES) {
        text.push_str(LAYOUT_PREFIX);
        text.push_str(&host.to_line(digest));
        text.push('\n');
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = dir.join(format!(".{FILE_NAME}.{}.{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_data()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn stamp_of(path: &Path) -> FileStamp {
        FileStamp::of(&std::fs::metadata(path).unwrap())
    }

    /// A file whose times are set `age` seconds in the past (ctime stays now: so only tests
    /// that do not need a non-racy stamp use it directly).
    fn old_stamp(path: &Path) -> FileStamp {
        let mut stamp = stamp_of(path);
        stamp.mtime_ns -= 10_000_000_000;
        stamp.ctime_ns -= 10_000_000_000;
        stamp
    }

    #[test]
    fn a_recorded_digest_is_found_after_a_round_trip_through_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("a.so");
        std::fs::write(&lib, b"bytes").unwrap();
        let stamp = old_stamp(&lib);
        let path = tmp.path().join("cache").join(FILE_NAME);
        let cache = DigestCache::open(path.clone());
        assert_eq!(cache.lookup(&stamp), None);
        cache.record(stamp, stamp, &"a".repeat(64));
        cache.persist();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = DigestCache::open(path.clone());
        assert_eq!(again.lookup(&stamp), Some("a".repeat(64)));
        // Another size, inode or time is another file.
        let mut other = stamp;
        other.ctime_ns += 1;
        assert_eq!(again.lookup(&other), None);
        // No temp files are left beside it.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
    }

    #[test]
    fn racy_or_moving_files_are_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("a.so");
        std::fs::write(&lib, b"bytes").unwrap();
        let path = tmp.path().join(FILE_NAME);
        let cache = DigestCache::open(path.clone());
        // Just written: racy.
        let fresh = stamp_of(&lib);
        cache.record(fresh, fresh, &"b".repeat(64));
        // Changed while hashing.
        let old = old_stamp(&lib);
        let mut moved = old;
        moved.size += 1;
        cache.record(old, moved, &"b".repeat(64));
        cache.persist();
        assert!(!path.exists(), "nothing added, nothing written");
        assert_eq!(cache.lookup(&fresh), None);
        assert_eq!(cache.lookup(&old), None);
    }

    #[test]
    fn an_untrusted_or_garbled_cache_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("a.so");
        std::fs::write(&lib, b"bytes").unwrap();
        let stamp = old_stamp(&lib);
        let path = tmp.path().join(FILE_NAME);
        let line = stamp.to_line(&"c".repeat(64));
        std::fs::write(&path, format!("{HEADER}\n{line}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            DigestCache::open(path.clone()).lookup(&stamp),
            Some("c".repeat(64))
        );
        // Writable by the group: not trusted.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert_eq!(DigestCache::open(path.clone()).lookup(&stamp), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A line that does not parse, or another header: ignored as a whole.
        for text in [
            format!("{HEADER}\n{line}\nnot a line\n"),
            format!(
                "{HEADER}\n{}\n",
                line.replace(&"c".repeat(64), &"C".repeat(64))
            ),
            format!("another format\n{line}\n"),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(DigestCache::open(path.clone()).lookup(&stamp), None);
        }
        // A symlink is not followed.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(DigestCache::open(link).lookup(&stamp), None);
    }

    /// A stand-in host binary in `dir`.
    fn host_binary(dir: &Path) -> PathBuf {
        let host_file = dir.join("host");
        std::fs::write(&host_file, b"host").unwrap();
        host_file
    }

    #[test]
    fn a_layout_verdict_holds_for_its_digest_and_host_binary_only() {
        let tmp = tempfile::tempdir().unwrap();
        let host = old_stamp(&host_binary(tmp.path()));
        let path = tmp.path().join(FILE_NAME);
        let cache = DigestCache::open(path.clone()).for_host(host);
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        assert!(!cache.layout_accepted(&a));
        cache.record_layout(&a);
        cache.persist();
        let again = DigestCache::open(path.clone()).for_host(host);
        assert!(again.layout_accepted(&a));
        // Another library, or another host binary (any field of its stamp), walks it again.
        assert!(!again.layout_accepted(&b));
        let mut rebuilt = host;
        rebuilt.ctime_ns += 1;
        assert!(!DigestCache::open(path.clone())
            .for_host(rebuilt)
            .layout_accepted(&a));
        // Digests and verdicts live side by side; a file of the first format is still read.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("{HEADER}\n{LAYOUT_PREFIX}{}\n", host.to_line(&a))
        );
        let digest_line = host.to_line(&b);
        std::fs::write(&path, format!("{HEADER_V1}\n{digest_line}\n")).unwrap();
        assert_eq!(DigestCache::open(path).lookup(&host), Some(b));
    }

    #[test]
    fn a_host_binary_changed_within_the_racy_window_records_no_verdict() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = stamp_of(&host_binary(tmp.path()));
        let path = tmp.path().join(FILE_NAME);
        let cache = DigestCache::open(path.clone()).for_host(fresh);
        cache.record_layout(&"a".repeat(64));
        cache.persist();
        assert!(!path.exists(), "nothing added, nothing written");
        assert!(!cache.layout_accepted(&"a".repeat(64)));
    }

    #[test]
    fn the_running_binary_has_a_stamp() {
        let stamp = host_binary_stamp().unwrap();
        let exe = std::fs::metadata(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(stamp, FileStamp::of(&exe));
    }

    #[test]
    fn lines_round_trip() {
        let stamp = FileStamp {
            dev: 2049,
            ino: 77,
            size: 5,
            mtime_ns: 1_796_542_389_895_636_600,
            ctime_ns: -1,
        };
        let line = stamp.to_line(&"d".repeat(64));
        assert_eq!(FileStamp::parse_line(&line), Some((stamp, "d".repeat(64))));
        assert_eq!(FileStamp::parse_line(&format!("{line} extra")), None);
        assert_eq!(FileStamp::parse_line("1 2 3"), None);
    }
}
