//! `.env-resources/<id>.json`: a persisted record of an open environment, so a later run (or
//! `env cleanup`) can close what a crashed one left open.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Schema of environment-resource records.
pub const ENV_RECORD_SCHEMA: &str = "agentcompass.environment_resource.v1";

/// The contents of an environment-resource record (fields in the file's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvRecord {
    /// The attempt that opened it.
    #[serde(default)]
    pub attempt: u32,
    /// The provider's close params, redacted.
    #[serde(default)]
    pub close_params: Value,
    /// When it opened (RFC 3339).
    #[serde(default)]
    pub created_at: String,
    /// Why `env close` could not release it (with `state` `release_failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The session id.
    #[serde(default)]
    pub id: String,
    /// The provider id.
    #[serde(default)]
    pub provider: String,
    /// [`ENV_RECORD_SCHEMA`].
    #[serde(default)]
    pub schema_version: String,
    /// `active` while open.
    #[serde(default)]
    pub state: String,
    /// The task that opened it.
    #[serde(default)]
    pub task_id: String,
}
