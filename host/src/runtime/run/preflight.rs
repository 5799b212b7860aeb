//! Checking a request before anything is written: its output paths, its references, its
//! components, the harness's support for the environment and model, the retry patterns and
//! the model gateway's settings; then its task stream's first page.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{RunRequest, TaskSpec};
use agentcompass_results::naming::sanitize_component;

use crate::datasets::DatasetService;
use crate::host_services::{CancelToken, HostServices};
use crate::metrics::dataset::DeclaredMetrics;
use crate::planner::Planner;
use crate::registry::Registry;
use crate::request::{output_namespace, resolve_request_references, OrchestratedRun};
use crate::runtime::error::RunError;
use crate::runtime::retry::compile_patterns;
use crate::runtime::task_source::TaskSource;

/// A request checked and ready to run (nothing written yet).
pub struct PreparedRequest {
    pub(in crate::runtime) run: OrchestratedRun,
    pub(in crate::runtime) resolved: RunRequest,
    pub(super) planner: Planner,
    pub(super) patterns: Vec<regex::Regex>,
    /// The selected tasks (first page read), once opened by [`PreparedRequest::load_tasks`].
    pub(super) tasks: Option<TaskSource>,
    /// What will run (`run_info.json` `provenance`), as far as it is known before the run.
    pub(super) provenance: serde_json::Value,
    /// The run's analyzers (`execution.enable_analysis`).
    pub(super) analysis: Option<std::sync::Arc<crate::analysis::RunAnalysis>>,
    /// The datasets the benchmark may ask the host for (`dataset.*` services).
    pub(in crate::runtime) datasets: Option<Arc<DatasetService>>,
    /// The declared metrics of the registry datasets the tasks came from.
    pub(super) dataset_metrics: Vec<DeclaredMetrics>,
    /// The harness declares that it calls the model ([`ModelUse::Required`]).
    ///
    /// [`ModelUse::Required`]: agentcompass_plugin_api::contracts::ModelUse::Required
    pub(super) calls_model: bool,
    /// The run's own agent inputs (`--agent-env`, `--skill`, extra instructions), resolved.
    pub(super) agent_inputs: Arc<crate::runtime::agent_inputs::RunAgentInputs>,
}

/// The model endpoint a request will call, for the check before its first task.
pub struct EndpointToCheck<'a> {
    /// The resolved model spec (a `${VAR}` resolved: never print it).
    pub model: &'a agentcompass_plugin_api::contracts::ModelSpec,
    /// How errors name the endpoint: the base URL as written (a `${VAR}` reference stays a
    /// reference), or the protocol's public default when only a key is set.
    pub label: String,
}

impl PreparedRequest {
    /// Opens the request's task stream and reads its first page before anything is written,
    /// so a dataset or task directory the benchmark rejects is refused like any other bad
    /// input (no results directory). The run goes on reading the same stream.
    pub async fn load_tasks(&mut self) -> Result<(), RunError> {
        let ctx = self.benchmark_services(CancelToken::new()).into_ctx();
        let tasks = TaskSource::open(&self.planner, &ctx, &self.resolved).await;
        let tasks = tasks.map_err(|e| e.in_request(&self.run.name))?;
        self.note_dataset_sources();
        self.check_enforceable(tasks.buffered(), tasks.total())
            .map_err(|e| e.in_request(&self.run.name))?;
        self.tasks = Some(tasks);
        Ok(())
    }

    /// The request's name in its orchestration (empty for a single `run`).
    pub fn name(&self) -> &str {
        &self.run.name
    }

    /// The benchmark's id.
    pub fn benchmark_id(&self) -> &str {
        &self.resolved.benchmark.id
    }

    /// What a run would say before and while starting the tasks of the first page (all of
    /// them when the benchmark's selection fits one): each task's load warnings, the tasks
    /// the environment refuses (their `unsupported` issue in a run), and which tasks build
    /// their image from their own definition — for `--dry-run`.
    pub fn preview(&self) -> TaskPreview {
        let mut preview = TaskPreview::default();
        let Some(tasks) = &self.tasks else {
            return preview;
        };
        for task in tasks.buffered() {
            preview.previewed += 1;
            preview.task_ids.push(task.task_id.clone());
            for warning in &task.load_warnings {
                preview
                    .warnings
                    .push(format!("task {}: {warning}", task.task_id));
            }
            if let Some(refusal) = self.refusal(task) {
                preview.warnings.push(format!(
                    "task {}: refused before the first task (its `unsupported` issue): {refusal}",
                    task.task_id
                ));
            }
            let builds = self.planner.image_builds(task, &self.resolved);
            if !builds.is_empty() {
                preview.building += 1;
                let contexts = builds.into_iter().filter_map(|env| env.setup.build_context);
                preview.images.extend(contexts);
            }
        }
        preview
    }

    /// Why the environment refuses `task`'s plan, if it does (bindings are not resolved
    /// here: a missing variable is the run's own refusal).
    fn refusal(&self, task: &TaskSpec) -> Option<String> {
        let plan = match self.planner.plan(task, &self.resolved, 1) {
            Ok(plan) => plan,
            Err(e) if e.is_unsupported() => return Some(e.to_string()),
            Err(_) => return None,
        };
        let any = |_: &str| Some(String::new());
        match self.planner.check(&plan, &any) {
            Err(crate::planner::PlanError::Unsupported { message, .. }) => Some(message),
            _ => None,
        }
    }

    /// How many tasks the benchmark selected, once [`PreparedRequest::load_tasks`] opened them.
    pub fn task_count(&self) -> Option<usize> {
        self.tasks.as_ref().map(TaskSource::total)
    }

    /// The ids of the metrics the benchmark declares (its metric contract), primary first.
    pub fn declared_metrics(&self) -> Vec<String> {
        let contract = self
            .planner
            .benchmark()
            .benchmark
            .metric_contract()
            .unwrap_or_else(|_| agentcompass_plugin_api::contracts::MetricContract::correct());
        let mut ids: Vec<String> = contract
            .primary()
            .map(|m| m.id.clone())
            .into_iter()
            .collect();
        for metric in &contract.metrics {
            if !ids.contains(&metric.id) {
                ids.push(metric.id.clone());
            }
        }
        ids
    }

    /// The endpoint the request's harness will call, when it declares that it calls one.
    pub fn endpoint_to_check(&self) -> Option<EndpointToCheck<'_>> {
        if !self.calls_model {
            return None;
        }
        let written = self.run.request.model.base_url.trim();
        let label = if written.is_empty() {
            agentcompass_gateway::Protocol::choose(&self.resolved.model)
                .map(|p| p.default_base_url().to_string())
                .unwrap_or_default()
        } else {
            agentcompass_redact::scrub_text(written)
        };
        Some(EndpointToCheck {
            model: &self.resolved.model,
            label,
        })
    }

    /// The host services of the benchmark's task loading: its name, `cancel`, and the
    /// datasets it may ask for.
    pub(in crate::runtime) fn benchmark_services(&self, cancel: CancelToken) -> HostServices {
        let services = HostServices::for_component(&self.resolved.benchmark.id, cancel, None);
        match &self.datasets {
            Some(datasets) => services.with_datasets(datasets.clone()),
            None => services,
        }
    }

    /// Adds what the dataset services served while the tasks loaded to the provenance
    /// (`dataset_sources`: registry datasets with every task's source and digest, URL files).
    fn note_dataset_sources(&mut self) {
        let Some(datasets) = &self.datasets else {
            return;
        };
        let served = datasets.take_provenance();
        if served.is_empty() {
            return;
        }
        let sources = serde_json::json!({"dataset_sources": served});
        let (declared, unsupported) = DeclaredMetrics::from_provenance(&sources);
        self.dataset_metrics = declared;
        for metric in unsupported {
            tracing::warn!(
                "dataset metric {metric} is not computed: this host computes Harbor's built-in kinds mean, sum, min and max, and uv-script with a script_path"
            );
        }
        let served = sources["dataset_sources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(provenance) = self.provenance.as_object_mut() {
            provenance.insert("dataset_sources".into(), serde_json::Value::Array(served));
        }
    }

    /// When the environment cannot do what any task of the first page needs (a network
    /// policy the request or the tasks set, a harness's host endpoint or mounts, a provider's
    /// own requirement such as docker's `setup.image`), the request is refused before a
    /// results directory exists — one line naming what and where, with what to try instead —
    /// instead of publishing a FATAL `unsupported` task for each. A page where some task can
    /// run goes on: the others are their tasks' `unsupported` issues. Planning does no I/O.
    fn check_enforceable(&self, first_page: &[TaskSpec], total: usize) -> Result<(), RunError> {
        let Some(first) = first_page.first() else {
            return Ok(());
        };
        // The harness is the request's: one that runs its agent inside the environment needs
        // the model endpoint there whatever the task.
        if let Ok(plan) = self.planner.plan(first, &self.resolved, 1) {
            if let Err(crate::planner::PlanError::Unsupported { message, .. }) =
                self.planner.check_host_endpoints(&plan)
            {
                return Err(RunError::Refused(format!(
                    "{message} (harness `{}`)",
                    self.resolved.harness.id
                )));
            }
        }
        let env = &self.resolved.environment;
        let requested = env.baseline_network_policy.is_some()
            || env.run_network_policy.is_some()
            || env.evaluation_network_policy.is_some();
        let mut refusal = None;
        for task in first_page {
            let plan = match self.planner.plan(task, &self.resolved, 1) {
                Ok(plan) => plan,
                Err(e) if e.is_unsupported() => {
                    refusal.get_or_insert(e.to_string());
                    continue;
                }
                Err(_) => return Ok(()),
            };
            let any = |_: &str| Some(String::new());
            let checked = self
                .planner
                .check(&plan, &any)
                .and_then(|()| self.planner.check_steps(&plan, task, &self.resolved, &any));
            match checked {
                Err(crate::planner::PlanError::Unsupported { message, .. }) => {
                    refusal.get_or_insert(message);
                }
                _ => return Ok(()),
            }
        }
        let Some(message) = refusal else {
            return Ok(());
        };
        // Every task of the first page needs what the environment cannot do: the run could
        // only publish an `unsupported` task for each, so it is refused now.
        let why = if requested {
            "the request's network policy applies to every task, so none can run".to_string()
        } else {
            match first_page.len() {
                n if n == total => format!("none of the request's {n} tasks can run there"),
                n => format!("none of the first {n} of its {total} tasks can run there"),
            }
        };
        Err(RunError::Refused(format!(
            "{message}; {why}{}",
            environment_hint(&env.id, &message)
        )))
    }
}

/// What `--dry-run` shows of a request's tasks ([`PreparedRequest::preview`]).
#[derive(Debug, Default)]
pub struct TaskPreview {
    /// The tasks previewed (the first page of the selection).
    pub previewed: usize,
    /// Their ids, in the order they would run.
    pub task_ids: Vec<String>,
    /// Their load warnings, `task ID: ...`, as a run prints them.
    pub warnings: Vec<String>,
    /// How many of them build their image from their own definition.
    pub building: usize,
    /// The distinct build contexts (each built once per machine).
    pub images: std::collections::BTreeSet<String>,
}

/// What to try instead when no task can run on environment `id` for `reason`.
fn environment_hint(id: &str, reason: &str) -> &'static str {
    if id == "host_process" && reason.contains("network_policy") {
        " (--env sandbox isolates each task and enforces network policies)"
    } else {
        " (`agentcompass-host config docs env ID` lists what each environment provides)"
    }
}

/// Checks a request before anything is written: components instantiate, references resolve,
/// retry patterns compile, the harness supports the environment and model.
pub fn preflight(
    registry: &Registry,
    results_dir: &Path,
    run: OrchestratedRun,
    datasets: Option<Arc<DatasetService>>,
) -> Result<PreparedRequest, RunError> {
    let checked = check(registry, results_dir, &run);
    let (resolved, planner, patterns) = checked.map_err(|e| e.in_request(&run.name))?;
    let analysis = resolved
        .execution
        .enable_analysis
        .then(|| {
            crate::analysis::RunAnalysis::new(
                registry,
                &resolved.execution.analysis_params,
                "execution.analysis_params",
                &resolved.benchmark.id,
            )
            .map(std::sync::Arc::new)
            .map_err(|e| RunError::Refused(e.to_string()).in_request(&run.name))
        })
        .transpose()?;
    let cache = datasets.as_ref().map(|d| d.task_cache());
    let agent_inputs =
        crate::runtime::agent_inputs::RunAgentInputs::resolve(&resolved, cache.as_ref())
            .map_err(|e| RunError::Refused(e.to_string()).in_request(&run.name))?;
    let mut provenance = crate::runtime::provenance::before_run(registry, &run.request, &resolved);
    provenance["resources"] = planner.resource_provenance(&resolved);
    if !agent_inputs.skills.is_empty() {
        provenance["skills"] = serde_json::to_value(&agent_inputs.skills).unwrap_or_default();
    }
    let calls_model = registry
        .get(
            agentcompass_plugin_api::contracts::ComponentKind::Harness,
            &resolved.harness.id,
        )
        .is_ok_and(|entry| {
            entry.info.model_use == agentcompass_plugin_api::contracts::ModelUse::Required
        });
    Ok(PreparedRequest {
        run,
        resolved,
        planner,
        patterns,
        tasks: None,
        provenance,
        analysis,
        datasets,
        dataset_metrics: Vec::new(),
        calls_model,
        agent_inputs: Arc::new(agent_inputs),
    })
}

/// The checks of [`preflight`], in order; their result is the resolved request, its planner
/// and its compiled retry patterns.
fn check(
    registry: &Registry,
    results_dir: &Path,
    run: &OrchestratedRun,
) -> Result<(RunRequest, Planner, Vec<regex::Regex>), RunError> {
    check_output(results_dir, run)?;
    let resolved = resolve_request(registry, &run.request)?;
    crate::request::sections::check_resolved_base_url(
        &run.request.model.base_url,
        &resolved.model.base_url,
    )
    .map_err(RunError::Refused)?;
    check_model_configured(registry, &resolved)?;
    let planner = Planner::new(registry, &resolved)?;
    check_harness(&planner, &resolved)?;
    let refused = |e: &dyn std::fmt::Display| RunError::Refused(e.to_string());
    let patterns = compile_patterns(resolved.execution.retry_pattern_list.as_ref())
        .map_err(|e| refused(&e))?;
    agentcompass_gateway::Protocol::choose(&resolved.model).map_err(|e| refused(&e))?;
    let settings = agentcompass_gateway::GatewaySettings::from_params(&resolved.model.params)
        .map_err(|e| refused(&e))?;
    check_prices(&resolved, settings.pricing.is_some(), None)?;
    Ok((resolved, planner, patterns))
}

/// A cost limit or budget needs the model's prices: `model.params.pricing` (`priced`), else
/// the pinned price table's entry for the model (the table is parsed only when a cost limit
/// is set); with neither nothing could be counted against it. `orchestration_budget` is
/// `runtime.budget`.
pub(in crate::runtime) fn check_prices(
    resolved: &RunRequest,
    priced: bool,
    orchestration_budget: Option<&agentcompass_plugin_api::contracts::Budget>,
) -> Result<(), RunError> {
    if priced {
        return Ok(());
    }
    let execution = &resolved.execution;
    let field = if execution.limits.max_cost_usd.is_some() {
        "execution.limits.max_cost_usd"
    } else if execution
        .budget
        .as_ref()
        .is_some_and(|b| b.max_cost_usd.is_some())
    {
        "execution.budget.max_cost_usd"
    } else if orchestration_budget.is_some_and(|b| b.max_cost_usd.is_some()) {
        "runtime.budget.max_cost_usd"
    } else {
        return Ok(());
    };
    let model = &resolved.model;
    if agentcompass_gateway::spec_price(model).is_some() {
        return Ok(());
    }
    let table = agentcompass_gateway::PriceTable::pinned()
        .map(|t| format!("LiteLLM {}'s", t.version()))
        .unwrap_or_else(|| "the".to_string());
    Err(RunError::Refused(format!(
        "{field}: a cost limit needs the prices of model `{}`, found none: it is not in {table} price table ({}) and model.params.pricing is not set (US dollars per million tokens: {{\"input\": 3.0, \"output\": 15.0}})",
        model.id,
        agentcompass_gateway::TABLE_PATH,
    )))
}

/// The results directory can be created: a directory made and removed at once in the
/// nearest existing ancestor of `dir` (nothing is left behind) — a read-only file system, a
/// directory the user cannot write or a pseudo file system such as `/proc` is refused now.
fn check_creatable(dir: &Path) -> Result<(), RunError> {
    let Some(existing) = dir
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
    else {
        return Ok(());
    };
    tempfile::Builder::new()
        .prefix(".agentcompass-write-check-")
        .tempdir_in(&existing)
        .map(drop)
        .map_err(|e| {
            // The OS's reason, without the probe's own name (`... at path "..."`).
            let text = e.to_string();
            let reason = text.split(" at path ").next().unwrap_or(&text).to_string();
            RunError::Refused(format!(
                "results directory {}: cannot create it in {}: {reason}",
                dir.display(),
                existing.display(),
            ))
        })
}

/// The results directory can be created, an explicit run id must be new, a reuse source must
/// exist.
pub(crate) fn check_output(results_dir: &Path, run: &OrchestratedRun) -> Result<(), RunError> {
    let namespace_dir: PathBuf = output_namespace(&run.request)
        .iter()
        .fold(results_dir.to_path_buf(), |dir, part| dir.join(part));
    check_creatable(&namespace_dir)?;
    let run_id = &run.request.output.run_id;
    if !run_id.is_empty() {
        let dir = namespace_dir.join(sanitize_component(run_id));
        if dir.exists() {
            return Err(RunError::Refused(format!(
                "output.run_id: run directory {} already exists; choose a different --run-id or use --reuse",
                dir.display()
            )));
        }
    }
    let reuse_id = &run.request.runtime.reuse_run_id;
    if !reuse_id.is_empty() && !namespace_dir.join(reuse_id).join("run_info.json").is_file() {
        let hint = if run.name.is_empty() {
            "--reuse takes the name of a run directory there"
        } else {
            "reuse_run_id names a run directory there"
        };
        return Err(RunError::Refused(format!(
            "runtime.reuse_run_id: run `{reuse_id}` not found under {} ({hint})",
            namespace_dir.display()
        )));
    }
    Ok(())
}

/// The request with its `${VAR}` references resolved and converted by their fields' types
/// (in memory only); every resolved value and the model key are registered as secrets.
fn resolve_request(registry: &Registry, request: &RunRequest) -> Result<RunRequest, RunError> {
    let resolved = resolve_request_references(registry, request, &crate::config::process_env)?;
    for value in &resolved.values {
        agentcompass_redact::register_secret(value);
    }
    agentcompass_redact::register_secret(&request.model.api_key);
    Ok(resolved.request)
}

/// A harness that declares it calls the model ([`ModelUse::Required`]) needs an endpoint: with
/// neither a base URL nor a key from a flag, a configuration, an orchestration file or the
/// SDKs' `OPENAI_*`/`ANTHROPIC_*` variables, the run is refused before the first task instead
/// of every task failing on a public endpoint it never meant to use.
fn check_model_configured(registry: &Registry, resolved: &RunRequest) -> Result<(), RunError> {
    use agentcompass_plugin_api::contracts::{ComponentKind, ModelUse};
    // A harness-free benchmark (`none`) has no harness entry.
    let Ok(entry) = registry.get(ComponentKind::Harness, &resolved.harness.id) else {
        return Ok(());
    };
    let model = &resolved.model;
    if entry.info.model_use != ModelUse::Required
        || !model.base_url.trim().is_empty()
        || !model.api_key.trim().is_empty()
    {
        return Ok(());
    }
    Err(RunError::Refused(format!(
        "harness `{}` calls model `{}`, but no model endpoint is configured: pass \
         --model-base-url URL (and --model-api-key '${{VAR}}'), set model.base_url in the \
         orchestration file, or export OPENAI_BASE_URL and OPENAI_API_KEY (ANTHROPIC_* for \
         the anthropic protocol)",
        resolved.harness.id, model.id
    )))
}

/// The harness supports the request's environment and model protocol.
fn check_harness(planner: &Planner, resolved: &RunRequest) -> Result<(), RunError> {
    let Some(harness) = planner.harness() else {
        return Ok(());
    };
    let supported = harness
        .supports(&resolved.environment, &resolved.model)
        .map_err(|e| RunError::Refused(format!("harness {}: {e}", resolved.harness.id)))?;
    if !supported {
        return Err(RunError::Refused(format!(
            "harness `{}` does not support environment `{}` with model protocol {:?}",
            resolved.harness.id,
            resolved.environment.id,
            resolved.model.api_protocol.protocols()
        )));
    }
    // Planning does no I/O: a harness that refuses the request's own parameters (its plan
    // for the request's environment) refuses them for every task, so before the first.
    if let Err(e) = harness.build_plan(resolved, &resolved.environment) {
        if e.kind == agentcompass_plugin_api::ErrorKind::InvalidInput {
            return Err(RunError::Refused(e.message));
        }
    }
    // What the run itself hands the agent (`--mcp-config`, `--skill`) applies to every task.
    let run_level = crate::planner::agent_inputs::needs(
        &agentcompass_plugin_api::contracts::TaskSpec::default(),
        resolved,
    );
    match crate::planner::agent_inputs::lacking(planner.harness_agent_inputs(), run_level) {
        Some(why) => Err(RunError::Refused(format!(
            "harness `{}` {why}, but the run gives it {} (--mcp-config/--skill)",
            resolved.harness.id,
            if run_level.skills {
                "skills"
            } else {
                "MCP servers"
            }
        ))),
        None => Ok(()),
    }
}
