//! What every task of one request shares.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentcompass_plugin_api::contracts::{RunRequest, TaskSpec};
use agentcompass_plugin_api::sdk::Ctx;
use regex::Regex;

use super::limits::Limits;
use crate::host_services::CancelToken;
use crate::metrics::MetricAggregator;
use crate::planner::Planner;
use crate::progress::{ProgressRecorder, TaskRef};
use crate::store::RunStore;

/// The shared state of one request's run.
pub struct RequestContext {
    /// The request as persisted: `${VAR}` references kept.
    pub request: RunRequest,
    /// The request with references resolved: handed to components, never persisted.
    pub resolved: RunRequest,
    /// Components and recipes.
    pub planner: Planner,
    /// The results directory.
    pub store: RunStore,
    /// Progress events and snapshot.
    pub progress: ProgressRecorder,
    /// Global and per-provider limits.
    pub limits: Arc<Limits>,
    /// Cancellation of the whole orchestration.
    pub cancel: CancelToken,
    /// Compiled `retry_pattern_list`.
    pub patterns: Vec<Regex>,
    /// Budget for cleanup after cancellation.
    pub cleanup_grace: Duration,
    /// Host services for component calls.
    pub ctx: Ctx,
    /// Content hash deciding which earlier results may be reused.
    pub reuse_key: String,
    /// Streaming metric aggregation.
    pub metrics: Mutex<crate::metrics::MetricAggregator>,
    /// The benchmark's primary metric id.
    pub primary_metric: Option<String>,
    /// This run's `run.log`, held for its lifetime (closed when the request finishes).
    #[allow(dead_code)]
    pub run_log: Option<crate::logging::RunLogGuard>,
    /// Interrupted tasks of the reuse source, by task directory name (evaluation resume).
    pub resumable: std::collections::HashMap<String, std::path::PathBuf>,
}

impl RequestContext {
    /// Emits a progress event about one task.
    pub fn task_event(
        &self,
        event: &str,
        task: &TaskSpec,
        attempt: Option<u32>,
        phase: Option<&str>,
        status: Option<&str>,
        payload: serde_json::Value,
    ) {
        self.progress.emit(
            event,
            Some(TaskRef {
                task_id: &task.task_id,
                category: &task.category,
                attempt,
            }),
            phase,
            status,
            payload,
        );
    }

    /// A usable evaluation checkpoint of an interrupted earlier run for this attempt: same reuse
    /// key, same evaluation mode and evaluation network policy (none/fresh modes only).
    pub fn resumable_checkpoint(
        &self,
        task: &TaskSpec,
        attempt: u32,
        plan: &agentcompass_plugin_api::contracts::ExecutionPlan,
    ) -> Option<(serde_json::Value, std::path::PathBuf)> {
        use agentcompass_plugin_api::contracts::EvaluationEnvironmentMode;
        if plan.evaluation_environment_mode == EvaluationEnvironmentMode::Reuse {
            return None;
        }
        let dir = self
            .resumable
            .get(&crate::store::task_dir_name(&task.task_id))?;
        let attempt_dir = dir.join(format!("attempt-{attempt}"));
        let text = std::fs::read_to_string(attempt_dir.join("checkpoint.json")).ok()?;
        let checkpoint: serde_json::Value = serde_json::from_str(&text).ok()?;
        let same = checkpoint["reuse_key"].as_str() == Some(self.reuse_key.as_str())
            && checkpoint["task_id"].as_str() == Some(task.task_id.as_str())
            && checkpoint["evaluation_environment_mode"]
                == serde_json::json!(plan.evaluation_environment_mode)
            && checkpoint["evaluation_network_policy"]
                == serde_json::json!(plan.evaluation_network_policy);
        same.then_some((checkpoint, attempt_dir))
    }

    /// Adds a finished task to the metrics.
    pub fn record_metrics(&self, category: &str, outcomes: &[crate::metrics::AttemptOutcome]) {
        let mut metrics: std::sync::MutexGuard<'_, MetricAggregator> = match self.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.add_task(category, outcomes);
    }
}
