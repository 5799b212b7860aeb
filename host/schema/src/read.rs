//! Reading one record from its file, with an error that names the file.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file does not exist.
    #[error("{}: no such file", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file exists but cannot be read.
    #[error("{}: cannot read: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// The file is not a record of the expected shape.
    #[error("{}: not a valid {what}: {cause}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What it should hold (`run_info.json`, ...).
        what: &'static str,
        /// The parse error (line, column and the field).
        cause: serde_json::Error,
    },
}

impl ReadError {
    /// Whether the file was simply absent.
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing { .. })
    }
}

/// The record of type `T` in the JSON file at `path`; `what` names it in the error.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &'static str) -> Result<T, ReadError> {
    let bytes = std::fs::read(path).map_err(|cause| match cause.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing {
            path: path.to_path_buf(),
        },
        _ => ReadError::Io {
            path: path.to_path_buf(),
            cause,
        },
    })?;
    serde_json::from_slice(&bytes).map_err(|cause| ReadError::Invalid {
        path: path.to_path_buf(),
        what,
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_the_shape() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let missing =
            read_json::<crate::run_info::RunInfo>(&dir.join("none.json"), "run_info.json")
                .unwrap_err();
        assert!(missing.is_missing());
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"run_id\": 3}").unwrap();
        let invalid = read_json::<crate::run_info::RunInfo>(&bad, "run_info.json").unwrap_err();
        let text = invalid.to_string();
        assert!(text.starts_with(&format!("{}: not a valid run_info.json: ", bad.display())));
        assert!(text.contains("expected a string"), "{text}");
    }
}
