//! The optional, user-controlled plugin lock file pinning plugin name -> sha256 of its `.so`.
//!
//! ```toml
//! [plugins]
//! "example-pack" = "<64 lowercase hex>"
//! ```
//!
//! When a lock file is configured, every plugin must be pinned in it with the hash of the library
//! that is about to be loaded (like Cargo.lock checksums): a new or changed plugin needs an explicit
//! review step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{collapse_whitespace, is_sha256_hex, line_column, toml_quote};

/// Why a lock file could not be read or a plugin does not match it. One line each, naming the
/// lock file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The configured lock file does not exist.
    #[error(
        "plugin lock file {} does not exist; create it with a [plugins] table or remove the lock file setting",
        .path.display()
    )]
    Missing {
        /// The lock file.
        path: PathBuf,
    },
    /// The lock file could not be read.
    #[error("cannot read plugin lock file {}: {message}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error, one line.
        message: String,
    },
    /// The lock file is not valid TOML or has unknown keys.
    #[error(
        "invalid plugin lock file {}{location}: {message}; expected a [plugins] table of \"name\" = \"<sha256>\"",
        .path.display()
    )]
    Parse {
        /// The lock file.
        path: PathBuf,
        /// ` at line L, column C` when known, else empty.
        location: String,
        /// The TOML/serde message, one line.
        message: String,
    },
    /// A pinned hash is not 64 lowercase hex digits.
    #[error(
        "plugin lock file {} pins {name} to \"{found}\", expected 64 lowercase hex digits; fix the entry",
        .path.display()
    )]
    BadHash {
        /// The lock file.
        path: PathBuf,
        /// The plugin name.
        name: String,
        /// The value found.
        found: String,
    },
    /// The plugin is not in the lock file.
    #[error(
        "plugin {name} is not pinned in lock file {}; add \"{name}\" = \"{actual}\" after reviewing it",
        .lock.display()
    )]
    NotPinned {
        /// The plugin name.
        name: String,
        /// The lock file.
        lock: PathBuf,
        /// The sha256 of the library found.
        actual: String,
    },
    /// The library's hash differs from the pinned one.
    #[error(
        "plugin {name} has sha256 {actual} but lock file {} pins {pinned}; review the new build and update the pin, or restore the pinned build",
        .lock.display()
    )]
    HashMismatch {
        /// The plugin name.
        name: String,
        /// The lock file.
        lock: PathBuf,
        /// The pinned sha256.
        pinned: String,
        /// The sha256 of the library found.
        actual: String,
    },
}

/// The on-disk shape (unknown top-level keys are errors).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFileToml {
    #[serde(default)]
    plugins: BTreeMap<String, String>,
}

/// A parsed plugin lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginLock {
    path: PathBuf,
    plugins: BTreeMap<String, String>,
}

impl PluginLock {
    /// A lock with the given pins, as if read from `path` (e.g. to create or update one).
    pub fn new(path: impl Into<PathBuf>, plugins: BTreeMap<String, String>) -> PluginLock {
        PluginLock {
            path: path.into(),
            plugins,
        }
    }

    /// Reads a lock file; every pinned hash must be 64 lowercase hex digits.
    pub fn read(path: &Path) -> Result<PluginLock, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(LockError::Missing {
                    path: path.to_path_buf(),
                })
            }
            Err(err) => {
                return Err(LockError::Io {
                    path: path.to_path_buf(),
                    message: collapse_whitespace(&err.to_string()),
                })
            }
        };
        let parsed: LockFileToml = toml::from_str(&text).map_err(|err| LockError::Parse {
            path: path.to_path_buf(),
            location: err
                .span()
                .map(|span| {
                    let (line, column) = line_column(&text, span.start);
                    format!(" at line {line}, column {column}")
                })
                .unwrap_or_default(),
            message: collapse_whitespace(err.message()),
        })?;
        if let Some((name, found)) = parsed.plugins.iter().find(|(_, h)| !is_sha256_hex(h)) {
            return Err(LockError::BadHash {
                path: path.to_path_buf(),
                name: name.clone(),
                found: found.clone(),
            });
        }
        Ok(PluginLock {
            path: path.to_path_buf(),
            plugins: parsed.plugins,
        })
    }

    /// Checks that plugin `name` is pinned to `actual_sha256` (the hash of the library about to be
    /// loaded).
    pub fn check(&self, name: &str, actual_sha256: &str) -> Result<(), LockError> {
        match self.plugins.get(name) {
            None => Err(LockError::NotPinned {
                name: name.to_string(),
                lock: self.path.clone(),
                actual: actual_sha256.to_string(),
            }),
            Some(pinned) if pinned != actual_sha256 => Err(LockError::HashMismatch {
                name: name.to_string(),
                lock: self.path.clone(),
                pinned: pinned.clone(),
                actual: actual_sha256.to_string(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pins, by plugin name.
    pub fn plugins(&self) -> &BTreeMap<String, String> {
        &self.plugins
    }

    /// Pins `name` to `sha256` (replacing any previous pin).
    pub fn pin(&mut self, name: impl Into<String>, sha256: impl Into<String>) {
        self.plugins.insert(name.into(), sha256.into());
    }

    /// Renders the lock file as TOML (sorted by name); [`PluginLock::read`] reads it back.
    pub fn to_toml_string(&self) -> String {
        let mut out = String::from("[plugins]\n");
        for (name, hash) in &self.plugins {
            out.push_str(&toml_quote(name));
            out.push_str(" = ");
            out.push_str(&toml_quote(hash));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("agentcompass.lock");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_and_checks_pins() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(
            tmp.path(),
            &format!("[plugins]\n\"example-pack\" = \"{A}\"\n"),
        );
        let lock = PluginLock::read(&path).unwrap();
        assert_eq!(lock.path(), path);
        lock.check("example-pack", A).unwrap();

        let err = lock.check("other", B).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "plugin other is not pinned in lock file {}; add \"other\" = \"{B}\" after reviewing it",
                path.display()
            )
        );

        let err = lock.check("example-pack", B).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, LockError::HashMismatch { .. }), "{msg}");
        assert!(
            msg.contains(A) && msg.contains(B) && msg.contains(&path.display().to_string()),
            "{msg}"
        );
    }

    #[test]
    fn empty_lock_pins_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let lock = PluginLock::read(&write(tmp.path(), "")).unwrap();
        assert!(matches!(
            lock.check("x", A),
            Err(LockError::NotPinned { .. })
        ));
    }

    #[test]
    fn read_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("none.lock");
        assert_eq!(
            PluginLock::read(&missing).unwrap_err(),
            LockError::Missing {
                path: missing.clone()
            }
        );

        let dir = tmp.path().join("dir.lock");
        std::fs::create_dir(&dir).unwrap();
        assert!(matches!(PluginLock::read(&dir), Err(LockError::Io { .. })));

        for text in [
            "[plugins]\nx = \n",
            "[allow]\nx = \"y\"\n",
            "plugins = 3\n",
            "[plugins]\nx = 3\n",
        ] {
            let path = write(tmp.path(), text);
            let err = PluginLock::read(&path).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, LockError::Parse { .. }), "{text:?}: {msg}");
            assert!(!msg.contains('\n'), "{msg}");
            assert!(msg.contains("line "), "{msg}");
        }

        let path = write(
            tmp.path(),
            &format!("[plugins]\nx = \"{}\"\n", A.to_uppercase()),
        );
        let err = PluginLock::read(&path).unwrap_err();
        assert!(matches!(err, LockError::BadHash { .. }), "{err}");
    }

    #[test]
    fn round_trips() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("agentcompass.lock");
        let mut lock = PluginLock::new(&path, BTreeMap::new());
        lock.pin("example-pack", A);
        lock.pin("we\"ird name", B);
        std::fs::write(&path, lock.to_toml_string()).unwrap();
        let back = PluginLock::read(&path).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.plugins().len(), 2);
    }
}
