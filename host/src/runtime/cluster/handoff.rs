//! The request handed to the nodes: `.cluster/request.json` holds the request as persisted
//! (`${VAR}` references kept, every secret-looking literal masked, exactly what
//! [`agentcompass_redact::redact_value`] masks) with the per-job limits; the masked literals
//! travel in the jobs' environment as [`SECRETS_VAR`] (JSON: `[[path, value], ...]`) and are
//! put back on the node. References resolve on the node against the job's environment, which
//! `sbatch --export=ALL` copies from the coordinator's.

use std::path::Path;

use agentcompass_plugin_api::contracts::RunRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::ResolvedRuntimeOptions;
use crate::runtime::cluster_error::ClusterRunError;

/// `schema_version` of the handoff file.
pub const HANDOFF_SCHEMA: &str = "agentcompass.cluster.request.v1";

/// The job environment variable holding the request's secret literals.
pub const SECRETS_VAR: &str = "AGENTCOMPASS_CLUSTER_SECRETS";

/// `.cluster/request.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Handoff {
    /// [`HANDOFF_SCHEMA`].
    pub schema_version: String,
    /// The request, secret literals masked.
    pub request: Value,
    /// The request's name in its orchestration (empty for a direct run).
    pub request_name: String,
    /// Its orchestration key.
    pub request_key: String,
    /// Orchestration id and name.
    pub orchestration: (String, String),
    /// The runtime options a job runs with (provider limits and open rates already this
    /// job's share).
    pub runtime: ResolvedRuntimeOptions,
    /// Tasks one job runs at once.
    pub job_concurrency: u32,
    /// Whether the jobs load the plugins bundled next to the binary.
    pub bundled_plugins: bool,
}

/// One secret leaf: its path in the request (object keys and array indices) and value.
type SecretLeaf = (Vec<Value>, Value);

/// Splits `request` into its masked form and the literals masking removed.
pub fn split_secrets(request: &RunRequest) -> (Value, Vec<SecretLeaf>) {
    let original = serde_json::to_value(request).unwrap_or(Value::Null);
    let masked = agentcompass_redact::redact_value(&original);
    let mut leaves = Vec::new();
    collect(&original, &masked, &mut Vec::new(), &mut leaves);
    (masked, leaves)
}

fn collect(original: &Value, masked: &Value, path: &mut Vec<Value>, out: &mut Vec<SecretLeaf>) {
    match (original, masked) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, child) in a {
                if let Some(other) = b.get(key) {
                    path.push(Value::String(key.clone()));
                    collect(child, other, path, out);
                    path.pop();
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (child, other)) in a.iter().zip(b).enumerate() {
                path.push(Value::from(i));
                collect(child, other, path, out);
                path.pop();
            }
        }
        (a, b) if a != b => out.push((path.clone(), a.clone())),
        _ => {}
    }
}

/// The masked request with the literals of `secrets` (the [`SECRETS_VAR`] text) put back.
pub fn restore_secrets(masked: &Value, secrets: Option<&str>) -> Result<Value, ClusterRunError> {
    let mut request = masked.clone();
    let Some(text) = secrets.filter(|t| !t.trim().is_empty()) else {
        return Ok(request);
    };
    let problem = |problem: String| ClusterRunError::Secrets {
        variable: SECRETS_VAR,
        problem,
    };
    let leaves: Vec<SecretLeaf> = serde_json::from_str(text)
        .map_err(|_| problem("expected a JSON list of [path, value] pairs".to_string()))?;
    for (path, value) in leaves {
        let mut at = &mut request;
        for step in &path {
            at = match step {
                Value::String(key) => at.get_mut(key.as_str()),
                Value::Number(n) => n.as_u64().and_then(|i| at.get_mut(i as usize)),
                _ => None,
            }
            .ok_or_else(|| problem(format!("no field at {path:?} in the request")))?;
        }
        if let Some(text) = value.as_str() {
            agentcompass_redact::register_secret(text);
        }
        *at = value;
    }
    Ok(request)
}

impl Handoff {
    /// Writes the handoff atomically to `path`.
    pub fn write(&self, path: &Path) -> Result<(), agentcompass_results::store::StoreError> {
        super::layout::write_file(path, self, false)
    }

    /// Reads the handoff at `path`.
    pub fn read(path: &Path) -> Result<Handoff, ClusterRunError> {
        super::layout::read_file(path, "cluster request", HANDOFF_SCHEMA)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_leave_the_file_and_come_back_from_the_environment() {
        let mut request = RunRequest::default();
        request.model.api_key = "sk-literal-key-123".into();
        request.model.base_url = "http://127.0.0.1:9/v1".into();
        request
            .environment
            .env_variables
            .insert("TOKEN".into(), "tok-literal-456".into());
        request
            .environment
            .env_variables
            .insert("HOME_REF".into(), "${HOME}".into());
        let (masked, leaves) = split_secrets(&request);
        let file = masked.to_string();
        assert!(!file.contains("sk-literal-key-123"), "{file}");
        assert!(!file.contains("tok-literal-456"), "{file}");
        assert!(file.contains("${HOME}"), "{file}");
        assert_eq!(leaves.len(), 2, "{leaves:?}");
        let env = serde_json::to_string(&leaves).unwrap();
        let restored = restore_secrets(&masked, Some(&env)).unwrap();
        assert_eq!(restored, serde_json::to_value(&request).unwrap());
        assert_eq!(restore_secrets(&masked, None).unwrap(), masked);
        let err = restore_secrets(&masked, Some(r#"[[["model","nope","x"],"v"]]"#)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("AGENTCOMPASS_CLUSTER_SECRETS: no field"),
            "{err}"
        );
        assert!(restore_secrets(&json!({}), Some("{")).is_err());
    }
}
