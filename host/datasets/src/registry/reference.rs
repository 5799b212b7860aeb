//! What `dataset` names: a dataset of the legacy registry (`NAME`, `NAME@VERSION`), or a
//! package of Harbor's hosted registry (`ORG/NAME[@REF]`), which this host does not read.

/// A parsed `dataset` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetRef {
    /// A dataset of a `registry.json`; without a version, its latest.
    Registry {
        /// The dataset's name.
        name: String,
        /// The version after `@`.
        version: Option<String>,
    },
    /// A package of Harbor's hosted registry (a name with a `/`).
    Package {
        /// `ORG/NAME`.
        name: String,
        /// The tag, revision or `sha256:` digest after the last `@` (`latest` without one).
        reference: String,
    },
}

/// Why a `dataset` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// Empty, or an empty name or version around `@`.
    #[error("`{0}` is not a dataset: expected NAME or NAME@VERSION (a dataset of the registry)")]
    Malformed(String),
    /// A hosted-registry package: parsed, but not supported.
    #[error(
        "`{0}` is a package of Harbor's hosted registry, which this host does not read; \
         export it with `harbor download {0} --export --output-dir DIR` and run it with \
         `{{\"path\": \"DIR/...\"}}`, or name a dataset of a registry.json (NAME@VERSION with \
         `registry_path` or `registry_url`)"
    )]
    HostedPackage(String),
}

impl DatasetRef {
    /// Parses a `dataset` value: a name with a `/` is a hosted package (split at the last
    /// `@`), any other `NAME` or `NAME@VERSION` (split at the first `@`, as Harbor does).
    pub fn parse(text: &str) -> Result<DatasetRef, ReferenceError> {
        let malformed = || ReferenceError::Malformed(text.to_string());
        if text.contains('/') {
            let (name, reference) = match text.rsplit_once('@') {
                Some((name, reference)) => (name, reference),
                None => (text, "latest"),
            };
            if name.is_empty() || reference.is_empty() {
                return Err(malformed());
            }
            return Ok(DatasetRef::Package {
                name: name.to_string(),
                reference: reference.to_string(),
            });
        }
        let (name, version) = match text.split_once('@') {
            Some((name, version)) if !version.is_empty() => (name, Some(version.to_string())),
            Some(_) => return Err(malformed()),
            None => (text, None),
        };
        if name.is_empty() {
            return Err(malformed());
        }
        Ok(DatasetRef::Registry {
            name: name.to_string(),
            version,
        })
    }

    /// The registry dataset's name and version; a hosted package is refused, saying how to
    /// run it instead.
    pub fn into_registry(self) -> Result<(String, Option<String>), ReferenceError> {
        match self {
            DatasetRef::Registry { name, version } => Ok((name, version)),
            DatasetRef::Package { name, reference } => {
                Err(ReferenceError::HostedPackage(format!("{name}@{reference}")))
            }
        }
    }
}
