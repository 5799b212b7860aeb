//! Where a Harbor registry is read from: a `registry.json` file (or the directory holding
//! one), an `http(s)` URL, or Harbor's public legacy registry when neither is given.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_datasets::{display_url, Registry};

use super::DatasetError;

/// Harbor's public legacy registry (`harbor/constants.py::DEFAULT_REGISTRY_URL`), read when a
/// request names neither `registry_path` nor `registry_url`.
pub const DEFAULT_REGISTRY_URL: &str =
    "https://raw.githubusercontent.com/laude-institute/harbor/main/registry.json";

/// How long reading a registry by URL may take.
const REGISTRY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a registry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrySource {
    /// A `registry.json` file, or the directory holding one.
    Path(PathBuf),
    /// An `http(s)://` URL of a `registry.json`.
    Url(String),
    /// Harbor's public legacy registry ([`DEFAULT_REGISTRY_URL`]).
    Default,
}

impl RegistrySource {
    /// The source named by the two optional parameters (`what` names them in messages:
    /// `registry_path`/`registry_url` or the command-line flags).
    pub fn from_options(
        path: Option<&str>,
        url: Option<&str>,
        names: (&str, &str),
    ) -> Result<RegistrySource, DatasetError> {
        match (path, url) {
            (Some(_), Some(_)) => Err(DatasetError::Input(format!(
                "give one of {} and {}, found both",
                names.0, names.1
            ))),
            (Some(path), None) => Ok(RegistrySource::Path(PathBuf::from(path))),
            (None, Some(url)) => {
                if url.starts_with("http://") || url.starts_with("https://") {
                    Ok(RegistrySource::Url(url.to_string()))
                } else {
                    Err(DatasetError::Input(format!(
                        "{}: expected an http:// or https:// URL of a registry.json, found `{}` (a local file is {})",
                        names.1,
                        display_url(url),
                        names.0
                    )))
                }
            }
            (None, None) => Ok(RegistrySource::Default),
        }
    }

    /// Reads and parses the registry.
    pub async fn load(&self) -> Result<Registry, DatasetError> {
        match self {
            RegistrySource::Path(path) => {
                let file = registry_file(path)?;
                let bytes = std::fs::read(&file).map_err(|e| {
                    DatasetError::Input(format!("registry {}: cannot read: {e}", file.display()))
                })?;
                Ok(Registry::parse(&file.display().to_string(), &bytes)?)
            }
            RegistrySource::Url(url) => fetch(url, false).await,
            RegistrySource::Default => fetch(DEFAULT_REGISTRY_URL, true).await,
        }
    }
}

/// `path` itself when it is a file, else its `registry.json`.
fn registry_file(path: &Path) -> Result<PathBuf, DatasetError> {
    let file = if path.is_dir() {
        path.join("registry.json")
    } else {
        path.to_path_buf()
    };
    if file.is_file() {
        return Ok(file);
    }
    Err(DatasetError::Input(if path.is_dir() {
        format!(
            "registry {}: expected a registry.json in this directory, found none",
            path.display()
        )
    } else {
        format!(
            "registry {}: expected a registry.json file or the directory holding one, found nothing there",
            path.display()
        )
    }))
}

/// Reads a registry over HTTP (the user's proxy variables apply).
async fn fetch(url: &str, default: bool) -> Result<Registry, DatasetError> {
    let shown = display_url(url);
    let hint = if default {
        " (Harbor's public registry, the default; without a network give registry_path, or --registry-path, of a registry.json)"
    } else {
        ""
    };
    let failed =
        |message: String| DatasetError::Input(format!("registry {shown}: {message}{hint}"));
    let client = reqwest::Client::builder()
        .timeout(REGISTRY_TIMEOUT)
        .build()
        .map_err(|e| failed(format!("cannot start an HTTP client: {e}")))?;
    let response = client.get(url).send().await.map_err(|e| {
        // reqwest's own line repeats the URL: its causes say what went wrong.
        let cause = std::error::Error::source(&e).map_or_else(|| error_chain(&e), error_chain);
        failed(format!("cannot fetch: {cause}"))
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("expected 200 OK, found HTTP {status}")));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| failed(format!("cannot read the body: {}", error_chain(&e))))?;
    Ok(Registry::parse(&shown, &bytes)?)
}

/// `error` and its sources on one line, credentials scrubbed.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let line = inner.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = inner.source();
    }
    agentcompass_redact::scrub_text(&text.replace('\n', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_path_and_url() {
        let names = ("registry_path", "registry_url");
        assert!(matches!(
            RegistrySource::from_options(Some("a"), Some("http://b"), names),
            Err(DatasetError::Input(m)) if m.contains("found both")
        ));
        assert!(matches!(
            RegistrySource::from_options(None, Some("file:///x"), names),
            Err(DatasetError::Input(m)) if m.contains("registry_url: expected an http")
        ));
        assert_eq!(
            RegistrySource::from_options(None, None, names).ok(),
            Some(RegistrySource::Default)
        );
    }

    #[test]
    fn a_directory_means_its_registry_json() {
        let dir = tempfile::tempdir().unwrap();
        let missing = registry_file(dir.path()).unwrap_err().to_string();
        assert!(
            missing.contains("expected a registry.json in this directory"),
            "{missing}"
        );
        std::fs::write(dir.path().join("registry.json"), "[]").unwrap();
        assert_eq!(
            registry_file(dir.path()).unwrap(),
            dir.path().join("registry.json")
        );
    }
}
