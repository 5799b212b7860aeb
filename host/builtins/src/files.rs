//! File helpers of the built-in environment providers: private directories, text files,
//! probes and removal of the directories a provider created. Names, blocking work and the
//! mode-keeping copies are the SDK's (`agentcompass_plugin_api::sdk::provider`), shared with
//! every other provider.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::sdk::provider::{blocking, make_writable, random_suffix};
use agentcompass_plugin_api::{Error, Result};

/// How many random names [`create_private_dir`] tries before giving up (a name is only
/// retried when the path already exists).
const CREATE_ATTEMPTS: usize = 64;

/// Creates a private (mode 0700) directory at `reserved`, or, if that path already exists,
/// under a fresh random name with the same `prefix` next to it. Never reuses an existing path.
pub(crate) fn create_private_dir(reserved: &Path, prefix: &str, provider: &str) -> Result<PathBuf> {
    let base = reserved.parent().unwrap_or(Path::new("/"));
    let mut path = reserved.to_path_buf();
    for _ in 0..CREATE_ATTEMPTS {
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // The umask may have removed bits, never added: make the mode exact anyway.
                fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).map_err(|e| {
                    let _ = fs::remove_dir(&path);
                    Error::environment(format!(
                        "environment `{provider}`: cannot restrict `{}`: {e}",
                        path.display()
                    ))
                })?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                path = base.join(format!("{prefix}{}", random_suffix()));
            }
            Err(e) => {
                return Err(Error::environment(format!(
                    "environment `{provider}`: cannot create a working directory in `{}`: {e}",
                    base.display()
                )))
            }
        }
    }
    Err(Error::environment(format!(
        "environment `{provider}`: cannot create a working directory in `{}`: every name tried \
         already exists",
        base.display()
    )))
}

/// The metadata of `path`, or `None` when it does not exist (a missing parent or a file used
/// as a directory included).
pub(crate) async fn probe(path: &Path, op: &str) -> Result<Option<fs::Metadata>> {
    existing(tokio::fs::metadata(path).await, op, path.display())
}

/// The metadata of a probed path, or `None` when it does not exist (a missing parent or a
/// file used as a directory included); `shown` names the path in the error.
pub(crate) fn existing(
    probed: io::Result<fs::Metadata>,
    op: &str,
    shown: impl std::fmt::Display,
) -> Result<Option<fs::Metadata>> {
    match probed {
        Ok(meta) => Ok(Some(meta)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::environment(format!(
            "{op}: cannot inspect `{shown}`: {e}"
        ))),
    }
}

/// Reads a UTF-8 file (`read_text`).
pub(crate) async fn read_text_file(path: &Path) -> Result<String> {
    let bytes = tokio::fs::read(path).await.map_err(|e| {
        Error::environment(format!("read_text: cannot read `{}`: {e}", path.display()))
    })?;
    String::from_utf8(bytes).map_err(|_| {
        Error::environment(format!(
            "read_text: `{}` is not valid UTF-8",
            path.display()
        ))
    })
}

/// Writes a UTF-8 file, creating its parent directories (`write_text`).
pub(crate) async fn write_text_file(path: &Path, content: &str) -> Result<()> {
    let fail = |e: io::Error| {
        Error::environment(format!(
            "write_text: cannot write `{}`: {e}",
            path.display()
        ))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(parent).await.map_err(fail)?;
    }
    tokio::fs::write(path, content).await.map_err(fail)
}

/// Removes a directory a provider created; a missing directory is fine. Retries once after
/// making every directory in it writable (tools such as Go leave read-only trees).
pub(crate) async fn remove_owned_dir(path: PathBuf, provider: &'static str) -> Result<()> {
    blocking(provider, move || {
        let attempt = |path: &Path| match fs::remove_dir_all(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        attempt(&path)
            .or_else(|_| {
                make_writable(&path);
                attempt(&path)
            })
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{provider}`: cannot remove `{}`: {e}",
                    path.display()
                ))
            })
    })
    .await?
}

/// Removes `dir`, a directory named by persisted `close_params`, if it is one the provider
/// creates (an absolute path whose name starts with `prefix`); anything else is refused.
pub(crate) async fn remove_created_dir(
    dir: &str,
    prefix: &str,
    provider: &'static str,
) -> Result<()> {
    let path = PathBuf::from(dir);
    let created_here = path.is_absolute()
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix));
    if !created_here {
        return Err(Error::invalid_input(format!(
            "environment `{provider}`: refusing to remove `{dir}`: not a directory this provider \
             creates"
        )));
    }
    remove_owned_dir(path, provider).await
}
