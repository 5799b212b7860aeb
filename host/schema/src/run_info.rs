//! `run_info.json`: a run's identity, request, status and provenance, and the head of it a
//! reader needs (the ids of what ran, the attempt plan) as [`RequestHead`].

use agentcompass_plugin_api::contracts::AttemptSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::RunStatus;

/// The file name of a run's record.
pub const RUN_INFO_FILE: &str = "run_info.json";

/// `schema_version` of `run_info.json`.
pub const RUN_INFO_SCHEMA: &str = "agentcompass.run_info.v3";

/// The contents of `run_info.json` (without `resolved_execution_plans`, which only
/// `RunStore::finalize_run_info` (agentcompass-results) writes, streaming it from `resolved_plans.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Always [`RUN_INFO_SCHEMA`] when written by this host.
    #[serde(default = "default_schema")]
    pub schema_version: String,
    /// The run id (the run directory's name).
    #[serde(default)]
    pub run_id: String,
    /// Start time, RFC 3339 .
    #[serde(default)]
    pub started_at: String,
    /// End time, RFC 3339; `None` while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Where the run is (`running` until it ends).
    #[serde(default)]
    pub status: RunStatus,
    /// Why the run failed, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run request, already redacted by the caller.
    #[serde(default)]
    pub request: Value,
    /// `{run_id, path}` of the reuse source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<Value>,
    /// Where a `--reuse` run's import of earlier results is (absent: no reuse was asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_import: Option<ReuseImport>,
    /// `{generated_at, source, report{...}, ...}` of the metric files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_artifacts: Option<Value>,
    /// `{id, key, name}` of the orchestration this run belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestration: Option<Value>,
    /// Why the run stopped starting tasks before its stream ended (a budget, the error rate):
    /// `{"reason", "message", "spent"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Value>,
    /// What ran: the host, plugins, components, model endpoint, datasets, machine, seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Value>,
}

/// How far a `--reuse` run got importing its source's finished tasks. A run whose import is
/// still `pending` (it was killed while copying) holds only part of what its source holds, so
/// it is never chosen as a reuse source itself: the lookup skips it, or, when it is named,
/// follows its `reused_from` back to a run whose import completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReuseImport {
    /// The import has not finished (or was interrupted).
    Pending,
    /// Every reusable task of the source was imported (or there was nothing to reuse).
    Complete,
}

fn default_schema() -> String {
    RUN_INFO_SCHEMA.to_string()
}

impl RunInfo {
    /// A `running` run started at `started_at` (RFC 3339) with the redacted `request`.
    pub fn new(run_id: impl Into<String>, started_at: impl Into<String>, request: Value) -> Self {
        RunInfo {
            schema_version: default_schema(),
            run_id: run_id.into(),
            started_at: started_at.into(),
            finished_at: None,
            status: RunStatus::Running,
            error: None,
            request,
            reused_from: None,
            reuse_import: None,
            metric_artifacts: None,
            orchestration: None,
            stopped: None,
            provenance: None,
        }
    }
}

/// What a reader of `run_info.json` needs of the (redacted) run request: the ids of the
/// benchmark, harness and model, the benchmark's params and the attempt plan. Missing parts
/// read as empty, so a run of another tool still summarises.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RequestHead {
    /// `request.benchmark`.
    pub benchmark: ComponentHead,
    /// `request.harness`.
    pub harness: ComponentHead,
    /// `request.model`.
    pub model: ComponentHead,
    /// `request.environment`.
    pub environment: ComponentHead,
    /// `request.execution`.
    pub execution: ExecutionHead,
}

/// A component of the request: its id and params.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ComponentHead {
    /// The id (`""` when absent).
    #[serde(deserialize_with = "lenient_string")]
    pub id: String,
    /// Its params.
    pub params: Map<String, Value>,
}

/// The request's execution settings a reader needs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ExecutionHead {
    /// The attempt plan (k and strategy).
    #[serde(deserialize_with = "lenient")]
    pub attempts: AttemptSpec,
    /// The analyzers' params.
    #[serde(deserialize_with = "lenient")]
    pub analysis_params: Map<String, Value>,
}

/// A string field that reads as `""` when it holds anything else.
fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        _ => String::new(),
    })
}

/// A field that reads as its default when it does not parse.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).unwrap_or_default())
}

impl RunInfo {
    /// The head of the recorded request.
    pub fn request_head(&self) -> RequestHead {
        RequestHead::deserialize(&self.request).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_reads_the_request_head() {
        let mut info = RunInfo::new(
            "20260101_000000",
            "2026-01-01T00:00:00Z",
            json!({
                "benchmark": {"id": "qa", "params": {"split": "dev"}},
                "harness": {"id": "oracle"},
                "model": {"id": 7},
                "execution": {"attempts": {"k": 4, "strategy": "pass"}},
            }),
        );
        info.status = RunStatus::Completed;
        let text = serde_json::to_string(&info).unwrap();
        let back: RunInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back, info);
        let head = back.request_head();
        assert_eq!(head.benchmark.id, "qa");
        assert_eq!(head.benchmark.params["split"], "dev");
        assert_eq!(head.harness.id, "oracle");
        assert_eq!(head.model.id, "", "a non-string id reads as empty");
        assert_eq!(head.execution.attempts.k, 4);
    }

    #[test]
    fn another_tools_run_info_reads_with_defaults() {
        let info: RunInfo = serde_json::from_str("{\"status\": \"paused\"}").unwrap();
        assert_eq!(info.schema_version, RUN_INFO_SCHEMA);
        assert_eq!(info.status, RunStatus::Unknown);
        assert_eq!(info.request_head(), RequestHead::default());
    }
}
