//! What every task of one request shares.

use agentcompass_schema::checkpoint::{
    Checkpoint, EvaluationCheckpoint, StepsCheckpoint, CHECKPOINT_FILE, STEPS_CHECKPOINT_SCHEMA,
};
use agentcompass_schema::read_json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentcompass_plugin_api::contracts::{RunRequest, TaskSpec};
use agentcompass_plugin_api::sdk::Ctx;
use regex::Regex;

use super::limits::Limits;
use crate::host_services::CancelToken;
use crate::metrics::MetricAggregator;
use crate::planner::Planner;
use crate::progress::{ProgressEvent, ProgressRecorder, TaskPhase, TaskRef};
use agentcompass_results::store::RunStore;

/// The shared state of one request's run.
pub struct RequestContext {
    /// The run's analyzers (`execution.enable_analysis`): each attempt's `analysis_result`.
    pub analysis: Option<Arc<crate::analysis::RunAnalysis>>,
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
    /// Cancellation of this request's attempts: the orchestration's (Ctrl-C, the deadline),
    /// or a budget's with `on_exhausted = "cancel"`.
    pub cancel: CancelToken,
    /// The budgets and `--fail-on-error` that stop the request from starting tasks.
    pub breaker: super::breaker::Breaker,
    /// Compiled `retry_pattern_list`.
    pub patterns: Vec<Regex>,
    /// Budget for cleanup after cancellation.
    pub cleanup_grace: Duration,
    /// When an evaluation still running saves its checkpoint (see
    /// `ResolvedRuntimeOptions::checkpoint_after_seconds`).
    pub checkpoint_after: Duration,
    /// Host services for request-level component calls (task loading, metrics).
    pub ctx: Ctx,
    /// The model gateway shared by every task of the request.
    pub model: Arc<agentcompass_gateway::ModelGateway>,
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
    /// The final attempts' FATAL and ERROR issues by code (the terminal summary).
    pub issues: super::issue_tally::IssueTally,
    /// `runtime.egress.hosts`, passed to every environment opened
    /// (`OpenEnvironmentRequest::egress_hosts`).
    pub egress_hosts: std::collections::BTreeMap<String, String>,
    /// Who the run's ATIF trajectories name as their agent.
    pub atif_agent: agentcompass_results::atif::AtifAgent,
    /// The run's OpenTelemetry exporter (`runtime.otel`, `--otel-endpoint`), when set.
    pub otel: Option<super::otel::LiveOtel>,
    /// Where the tools harnesses run inside environments are installed.
    pub install_cache: crate::install::InstallCache,
    /// The datasets the tasks came from (`run_info.json` `provenance.datasets`).
    pub datasets: super::provenance::Datasets,
    /// The declared metrics of the registry datasets the tasks came from.
    pub dataset_metrics: Vec<crate::metrics::dataset::DeclaredMetrics>,
    /// When this process runs a copy of a cluster unit: its token (tasks publish fenced,
    /// and record where they ran); `None` for a local run.
    pub copy: Option<super::cluster_copy::ClusterCopy>,
    /// The running tasks, the ones `ctl cancel` dropped, the control actions taken.
    pub live: super::live::LiveTasks,
    /// The run's own agent inputs (`--agent-env`, `--skill`, extra instructions), resolved.
    pub agent_inputs: Arc<super::agent_inputs::RunAgentInputs>,
}

/// The scope of one physical attempt: the request's context plus host services whose model
/// calls are metered for this attempt. Dereferences to the [`RequestContext`]; its own `ctx`
/// (the metered one) is what every component call of the attempt receives.
pub struct AttemptScope<'a> {
    request: &'a RequestContext,
    /// Host services for this attempt's component calls.
    pub ctx: Ctx,
    /// Usage of this attempt's model calls.
    pub usage: Arc<agentcompass_gateway::UsageMeter>,
    /// Usage recorded before this scope (a resumed evaluation's agent run).
    usage_base: agentcompass_plugin_api::contracts::TokenUsage,
    /// The model endpoint served inside the task environment (for a harness whose agent
    /// runs there); it ends with the scope.
    relay: Option<agentcompass_gateway::ModelRelay>,
    /// The task's MCP servers on the host's loopback served inside the environment (for a
    /// harness whose agent runs there), with the names they are relayed for, in route order.
    tools: Option<(agentcompass_gateway::ToolRelay, Vec<String>)>,
}

impl std::ops::Deref for AttemptScope<'_> {
    type Target = RequestContext;

    fn deref(&self) -> &RequestContext {
        self.request
    }
}

impl AttemptScope<'_> {
    /// What the task environment must make reachable inside it (the model endpoint).
    pub fn host_endpoints(&self) -> Vec<agentcompass_plugin_api::contracts::HostEndpoint> {
        let model = self
            .relay
            .iter()
            .map(agentcompass_gateway::ModelRelay::host_endpoint);
        let tools = self.tools.iter().map(|(relay, _)| relay.host_endpoint());
        model.chain(tools).collect()
    }

    /// The model endpoint as served inside the task environment (the relay's address and
    /// placeholder token), when the attempt serves one.
    pub fn model_endpoint_inside(
        &self,
    ) -> Option<agentcompass_plugin_api::contracts::ModelEndpoint> {
        self.relay
            .as_ref()
            .map(agentcompass_gateway::ModelRelay::endpoint)
    }

    /// The tool relay of the attempt and the servers it serves (in route order).
    pub fn tool_relay(&self) -> Option<(&agentcompass_gateway::ToolRelay, &[String])> {
        self.tools
            .as_ref()
            .map(|(relay, names)| (relay, names.as_slice()))
    }

    /// How the agent's last call to the model endpoint inside the environment ended, when it
    /// failed after the gateway's retries, as the attempt's `model_failed` issue
    /// (`model_rate_limited` when the endpoint kept rate-limiting it).
    pub fn model_failure(&self) -> Option<agentcompass_plugin_api::contracts::ExecutionIssue> {
        let failure = self.relay.as_ref()?.last_failure()?;
        let code = match failure.rate_limited {
            true => crate::issue_codes::MODEL_RATE_LIMITED,
            false => crate::issue_codes::MODEL_FAILED,
        };
        Some(code.error(
            agentcompass_plugin_api::contracts::IssuePhase::Run,
            format!("the model endpoint failed: {}", failure.message),
        ))
    }

    /// Records this attempt's model usage in `telemetry.model_usage` (when there was any),
    /// over the usage the result already carried when the scope began (an evaluation resumed
    /// from a checkpoint keeps the agent run's usage).
    pub fn record_usage(&self, result: &mut agentcompass_plugin_api::contracts::RunResult) {
        let mut usage = self.usage_base;
        usage.add(&self.usage.total());
        if !usage.is_empty() {
            if let Ok(value) = serde_json::to_value(usage) {
                result.telemetry.insert("model_usage".into(), value);
            }
        }
    }
}

impl RequestContext {
    /// A new attempt scope: host services for the attempt's calls with a fresh usage meter,
    /// and, when `plan`'s harness runs its agent inside the environment or the task has
    /// services beside it, the model endpoint served there (its failure to start is the
    /// attempt's issue).
    pub async fn attempt_scope(
        &self,
        plan: &agentcompass_plugin_api::contracts::ExecutionPlan,
        task: &TaskSpec,
    ) -> Result<AttemptScope<'_>, agentcompass_gateway::RelayError> {
        let usage = Arc::new(self.usage_meter());
        let inside = plan.harness_plan.model_endpoint_in_environment;
        // A task's services may need the model too (a simulated user): they get it through
        // the relay, metered with the attempt, never with the key.
        let services = plan.environment.setup.compose.is_some();
        let relay = if inside || services {
            let relay = agentcompass_gateway::ModelRelay::start(
                self.model.clone(),
                usage.clone(),
                &plan.task_id,
            )
            .await?;
            Some(relay)
        } else {
            None
        };
        let mut scope = self.scope(usage, Default::default(), relay);
        if inside {
            scope.tools = self.tool_relay_for(task).await?;
        }
        Ok(scope)
    }

    /// The tool relay for `task`'s MCP servers on the host's loopback (none without such
    /// servers; a header that cannot be resolved shows when the agent's inputs are made).
    async fn tool_relay_for(
        &self,
        task: &TaskSpec,
    ) -> Result<
        Option<(agentcompass_gateway::ToolRelay, Vec<String>)>,
        agentcompass_gateway::RelayError,
    > {
        let Ok(inputs) = self.agent_inputs.for_task(task, &self.resolved) else {
            return Ok(None);
        };
        let routes = super::agent_inputs::loopback_routes(&inputs);
        if routes.is_empty() {
            return Ok(None);
        }
        let (names, routes): (Vec<String>, Vec<_>) = routes.into_iter().unzip();
        let relay = agentcompass_gateway::ToolRelay::start(routes).await?;
        Ok(Some((relay, names)))
    }

    /// An attempt scope resuming `earlier` (a result an interrupted run recorded): its usage
    /// adds to the model usage `earlier` recorded.
    pub fn attempt_scope_resuming(
        &self,
        earlier: &agentcompass_plugin_api::contracts::RunResult,
    ) -> AttemptScope<'_> {
        let recorded = earlier
            .telemetry
            .get("model_usage")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        self.scope(Arc::new(self.usage_meter()), recorded, None)
    }

    /// A meter for one attempt's model calls: the request's `execution.limits`, spending
    /// from its budgets.
    fn usage_meter(&self) -> agentcompass_gateway::UsageMeter {
        agentcompass_gateway::UsageMeter::with_limits(
            self.resolved.execution.limits.clone(),
            self.breaker.budgets().to_vec(),
        )
    }

    /// An attempt scope metering into `usage`, over `base`, with the model endpoint `relay`.
    fn scope(
        &self,
        usage: Arc<agentcompass_gateway::UsageMeter>,
        base: agentcompass_plugin_api::contracts::TokenUsage,
        relay: Option<agentcompass_gateway::ModelRelay>,
    ) -> AttemptScope<'_> {
        // The attempt's calls end with the task (`ctl cancel`) as with the request.
        let cancel = super::task_scope::TaskScope::current()
            .map_or_else(|| self.cancel.clone(), |scope| scope.cancel);
        let mut services = crate::host_services::HostServices::for_component(
            &self.request.harness.id,
            cancel,
            None,
        )
        .with_model(self.model.clone(), usage.clone());
        if let Some(relay) = &relay {
            services = services.with_model_endpoint(relay.endpoint());
        }
        AttemptScope {
            request: self,
            ctx: services.into_ctx(),
            usage,
            usage_base: base,
            tools: None,
            relay,
        }
    }

    /// Emits a progress event.
    pub fn emit(&self, event: ProgressEvent<'_>) {
        self.progress.emit(event);
    }

    /// Records that `task`'s attempt `attempt` entered `phase`.
    pub fn phase(&self, task: &TaskSpec, attempt: u32, phase: TaskPhase) {
        self.phase_with(task, attempt, phase, serde_json::Value::Null);
    }

    /// Records that `task`'s attempt `attempt` entered `phase`, with the phase's budgets.
    pub fn phase_with(
        &self,
        task: &TaskSpec,
        attempt: u32,
        phase: TaskPhase,
        detail: serde_json::Value,
    ) {
        #[cfg(test)]
        super::failpoint::hit(phase, &task.task_id);
        self.emit(ProgressEvent::PhaseChanged {
            task: task_ref(task, Some(attempt)),
            phase,
            detail,
        });
    }

    /// A usable evaluation checkpoint of an interrupted earlier run for this attempt: same reuse
    /// key, same evaluation mode and evaluation network policy (none/fresh modes only).
    pub fn resumable_checkpoint(
        &self,
        task: &TaskSpec,
        attempt: u32,
        plan: &agentcompass_plugin_api::contracts::ExecutionPlan,
    ) -> Option<(Checkpoint, std::path::PathBuf)> {
        use agentcompass_plugin_api::contracts::EvaluationEnvironmentMode;
        if !task.steps.is_empty() {
            return self.resumable_steps(task, attempt);
        }
        if plan.evaluation_environment_mode == EvaluationEnvironmentMode::Reuse {
            return None;
        }
        let dir = self
            .resumable
            .get(&agentcompass_results::naming::task_dir_name(&task.task_id))?;
        let attempt_dir = dir.join(format!("attempt-{attempt}"));
        let checkpoint: EvaluationCheckpoint =
            read_json(&attempt_dir.join(CHECKPOINT_FILE), "evaluation checkpoint").ok()?;
        let same = checkpoint.reuse_key == self.reuse_key
            && checkpoint.task_id == task.task_id
            && checkpoint.evaluation_environment_mode == plan.evaluation_environment_mode
            && checkpoint.evaluation_network_policy == plan.evaluation_network_policy;
        same.then(|| (Checkpoint::Evaluation(Box::new(checkpoint)), attempt_dir))
    }

    /// The step checkpoint of an interrupted earlier run for this multi-step attempt (same
    /// reuse key and task); whether its steps can be resumed is decided when it is used.
    fn resumable_steps(
        &self,
        task: &TaskSpec,
        attempt: u32,
    ) -> Option<(Checkpoint, std::path::PathBuf)> {
        use agentcompass_results::store::{STEPS_CHECKPOINT_FILE, STEPS_DIR};
        let dir = self
            .resumable
            .get(&agentcompass_results::naming::task_dir_name(&task.task_id))?;
        let attempt_dir = dir.join(format!("attempt-{attempt}"));
        let path = attempt_dir.join(STEPS_DIR).join(STEPS_CHECKPOINT_FILE);
        let checkpoint: StepsCheckpoint = read_json(&path, "step checkpoint").ok()?;
        let same = checkpoint.schema_version == STEPS_CHECKPOINT_SCHEMA
            && checkpoint.reuse_key == self.reuse_key
            && checkpoint.task_id == task.task_id;
        same.then(|| (Checkpoint::Steps(Box::new(checkpoint)), attempt_dir))
    }

    /// Records a task not run (`reason`: the breaker's trip): a progress event and a count in
    /// the metrics; nothing is published.
    pub fn record_skipped(
        &self,
        task: &TaskSpec,
        reason: &'static str,
        index: usize,
        total: usize,
    ) {
        self.emit(ProgressEvent::TaskSkipped {
            task: task_ref(task, None),
            reason,
            index,
            total,
        });
        let mut metrics = match self.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.add_skipped(reason);
    }

    /// Adds a finished task to the metrics (and to the breaker's error rate).
    pub fn record_metrics(&self, category: &str, outcomes: &[crate::metrics::AttemptOutcome]) {
        self.breaker.record_task(outcomes);
        let mut metrics: std::sync::MutexGuard<'_, MetricAggregator> = match self.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.add_task(category, outcomes);
        let score = metrics.headline_so_far();
        drop(metrics);
        self.progress.set_score(score);
    }
}

/// The progress reference of `task` (and one of its attempts).
pub fn task_ref(task: &TaskSpec, attempt: Option<u32>) -> TaskRef<'_> {
    TaskRef {
        task_id: &task.task_id,
        category: &task.category,
        attempt,
    }
}
