//! Declared submission artifacts (files/directories downloaded from the agent sandbox).

use serde::{Deserialize, Serialize};

use super::request::default_service;

/// The conventional main artifacts directory, always collected by a collecting benchmark.
pub const MAIN_ARTIFACTS_DIR: &str = "/logs/artifacts";

/// One declared artifact. Deserialises from a bare string (the source path) or an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ArtifactRepr")]
pub struct ArtifactSpec {
    /// Absolute path of a file or directory in the sandbox.
    pub source: String,
    /// Path relative to the attempt's `artifacts/` directory (`None`: source without leading `/`).
    pub destination: Option<String>,
    /// GNU tar exclusion patterns.
    pub exclude: Vec<String>,
    /// Service the source lives in (only `main` is supported).
    pub service: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ArtifactRepr {
    Source(String),
    Full {
        source: String,
        #[serde(default)]
        destination: Option<String>,
        #[serde(default)]
        exclude: Vec<String>,
        #[serde(default = "default_service")]
        service: String,
    },
}

impl From<ArtifactRepr> for ArtifactSpec {
    fn from(repr: ArtifactRepr) -> Self {
        match repr {
            ArtifactRepr::Source(source) => ArtifactSpec::new(source),
            ArtifactRepr::Full {
                source,
                destination,
                exclude,
                service,
            } => ArtifactSpec {
                source,
                destination,
                exclude,
                service,
            },
        }
    }
}

impl ArtifactSpec {
    /// An artifact with the default destination, no exclusions, on the main service.
    pub fn new(source: impl Into<String>) -> Self {
        ArtifactSpec {
            source: source.into(),
            destination: None,
            exclude: Vec::new(),
            service: default_service(),
        }
    }

    /// The conventional [`MAIN_ARTIFACTS_DIR`] entry.
    pub fn main_dir() -> Self {
        ArtifactSpec::new(MAIN_ARTIFACTS_DIR)
    }

    /// The destination, defaulting to the source without its leading `/`.
    pub fn destination_or_default(&self) -> String {
        match self.destination.as_deref() {
            Some(dest) if !dest.is_empty() => dest.to_string(),
            _ => self.source.trim_start_matches('/').to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_and_object_forms() {
        let specs: Vec<ArtifactSpec> = serde_json::from_value(json!([
            "/app/result.json",
            {"source": "/app/submission", "destination": "submission", "exclude": ["*.tmp"], "x": 1},
        ]))
        .unwrap();
        assert_eq!(specs[0], ArtifactSpec::new("/app/result.json"));
        assert_eq!(specs[0].destination_or_default(), "app/result.json");
        assert_eq!(specs[1].destination_or_default(), "submission");
        assert_eq!(specs[1].exclude, ["*.tmp"]);
        assert_eq!(specs[1].service, "main");
        let back: Vec<ArtifactSpec> =
            serde_json::from_value(serde_json::to_value(&specs).unwrap()).unwrap();
        assert_eq!(back, specs);
        assert_eq!(
            ArtifactSpec::main_dir().destination_or_default(),
            "logs/artifacts"
        );
        assert!(serde_json::from_value::<ArtifactSpec>(json!({"destination": "x"})).is_err());
    }
}
