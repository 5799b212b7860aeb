//! Results the ecosystem reads (issue 57): a run as a Harbor job directory (`export harbor`,
//! module `harbor_export`), and a Harbor job read as a run (module `harbor_import`: `view`,
//! `report`, `compare` and `summary` accept one), and a run as training data (`export traces`,
//! module `traces`). Both go through the schema crate's records
//! (`agentcompass_schema::harbor_job`, `agentcompass_schema::atif`); the attempt's ATIF
//! trajectory is `agentcompass_results::atif`'s.

pub mod harbor_export;
pub mod harbor_import;
mod harbor_stats;
pub mod traces;

use std::io;
use std::path::{Path, PathBuf};

use agentcompass_results::store::StoreError;

/// Why an export or an import failed (each names the file or directory).
#[derive(Debug, thiserror::Error)]
pub enum InterchangeError {
    /// Reading or writing a results directory.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file or directory that is not what it should be.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or directory.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A file-system call.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl InterchangeError {
    fn invalid(path: &Path, message: impl Into<String>) -> Self {
        InterchangeError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        InterchangeError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Writes `value` as pretty JSON at `path` (its parent created), as Harbor writes its files.
fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), InterchangeError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| InterchangeError::io("create directory", parent, e))?;
    }
    agentcompass_results::store::write_json_atomic(path, value)?;
    Ok(())
}

/// A float as Python's `str(float)` prints it (`1.0`, `0.5`): how Harbor writes rewards in
/// its statistics' keys and its training rows' `result`.
fn python_float(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.1}")
    } else {
        value.to_string()
    }
}

/// Reads `path` as a `T`.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, InterchangeError> {
    let bytes = std::fs::read(path).map_err(|e| InterchangeError::io("read", path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| InterchangeError::invalid(path, format!("not the expected JSON: {e}")))
}

/// A UUID-shaped id (8-4-4-4-12 lowercase hex, version 4 and RFC 4122 variant bits) derived
/// from `seed`: the same run exports to the same ids.
fn uuid_from(seed: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(seed.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_uuid_shaped_and_stable() {
        let id = super::uuid_from("run-1");
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_eq!(id, super::uuid_from("run-1"));
        assert_ne!(id, super::uuid_from("run-2"));
    }
}
