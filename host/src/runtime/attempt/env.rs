//! Opening and closing an attempt's environments (the task environment, and the fresh
//! evaluation environment), with their persisted `.env-resources/` records.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use agentcompass_plugin_api::contracts::{
    EnvironmentRole, HostMount, IssuePhase, IssueSeverity, OpenEnvironmentRequest, RunResult,
};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Error;
use agentcompass_results::naming::sanitize_component;
use agentcompass_results::records::{env_record, opening_record};
use agentcompass_results::store::write_json_atomic;
use agentcompass_results::time::rfc3339;

use super::outcome::{whole_seconds, Halt, IssueRule};
use super::stage::Step;
use crate::install::InstallError;
use crate::issue_codes as codes;
use crate::planner::{phase_bindings, resolve_secret_bindings, Phase};
use crate::progress::TaskPhase;
use crate::runtime::context::AttemptScope;
use crate::runtime::phase::{run_phase, watchdog, PhaseOutcome};

/// An open environment and its persisted record.
pub(super) struct OpenEnv {
    pub(super) session: SessionRef,
    record: PathBuf,
}

/// What a failure to open the environment of `role` records.
fn open_rule(role: EnvironmentRole) -> IssueRule {
    match role {
        EnvironmentRole::Task => IssueRule {
            phase: IssuePhase::Setup,
            severity: IssueSeverity::Fatal,
            failed: codes::ENVIRONMENT_FAILED,
            timed_out: codes::ENVIRONMENT_TIMEOUT,
            timeout_message: |limit| {
                format!(
                    "opening the environment took longer than {} s",
                    whole_seconds(limit)
                )
            },
        },
        EnvironmentRole::Evaluation => IssueRule {
            phase: IssuePhase::Evaluate,
            severity: IssueSeverity::Fatal,
            failed: codes::EVALUATION_ENVIRONMENT_FAILED,
            timed_out: codes::EVALUATION_ENVIRONMENT_FAILED,
            timeout_message: |_| "opening the evaluation environment timed out".into(),
        },
    }
}

/// What a failed install of the harness's tools records (before the task environment opens).
const INSTALL_RULE: IssueRule = IssueRule {
    phase: IssuePhase::Setup,
    severity: IssueSeverity::Fatal,
    failed: codes::AGENT_INSTALL_FAILED,
    timed_out: codes::AGENT_INSTALL_TIMEOUT,
    timeout_message: |limit| {
        format!(
            "installing the harness's tools took longer than {} s",
            whole_seconds(limit)
        )
    },
};

/// The read-only mounts of the harness's tools, installed into the install cache first when
/// missing (in a helper environment of the task's provider and image). Each installer runs
/// under its own timeout; the watchdog (their sum and a minute) is the backstop.
async fn tool_mounts(step: &Step<'_>) -> Result<Vec<HostMount>, Halt> {
    let installs = &step.plan.harness_plan.installs;
    if installs.is_empty() {
        return Ok(Vec::new());
    }
    let rc = step.rc;
    rc.phase(step.task, step.attempt, TaskPhase::InstallTools);
    let provider = rc.planner.provider().clone();
    let budget: f64 = installs.iter().map(|i| i.timeout_seconds).sum::<f64>() + 60.0;
    let mounts = async {
        Ok(rc
            .install_cache
            .mounts(&provider, &rc.ctx, &step.plan.environment, installs)
            .await)
    };
    match run_phase(&rc.cancel, watchdog(Some(budget)), mounts)
        .await
        .or_halt(&INSTALL_RULE)?
    {
        Ok(mounts) => Ok(mounts),
        Err(InstallError::Cancelled) => Err(Halt::Cancelled(INSTALL_RULE.phase)),
        Err(e @ InstallError::TimedOut { .. }) => Err(Halt::Issue(
            INSTALL_RULE
                .timed_out
                .fatal(INSTALL_RULE.phase, e.to_string()),
        )),
        Err(InstallError::Failed(message)) => Err(Halt::Issue(
            INSTALL_RULE.failed.fatal(INSTALL_RULE.phase, message),
        )),
    }
}

/// The open request of `role`'s environment: its spec, baseline policy, resolved startup
/// bindings (resolved values are registered as secrets) and the egress proxy's static names
/// (`runtime.egress.hosts`).
fn open_request(step: &Step<'_>, role: EnvironmentRole) -> Result<OpenEnvironmentRequest, Error> {
    let (rc, task, plan) = (step.rc, step.task, step.plan);
    let (spec, baseline, bindings) = match role {
        EnvironmentRole::Task => (
            &plan.environment,
            plan.baseline_network_policy.clone().unwrap_or_default(),
            phase_bindings(plan, Phase::Common),
        ),
        EnvironmentRole::Evaluation => (
            plan.evaluation_environment
                .as_ref()
                .unwrap_or(&plan.environment),
            plan.evaluation_baseline_network_policy
                .clone()
                .unwrap_or_default(),
            phase_bindings(plan, Phase::FreshStartup),
        ),
    };
    let resolved_env = resolve_secret_bindings(&bindings, &crate::config::process_env)
        .map_err(|e| Error::invalid_input(e.to_string()))?;
    let mut request =
        OpenEnvironmentRequest::new(rc.store.run_id(), task.task_id.clone(), spec.clone());
    request.attempt = step.attempt;
    request.role = role;
    request.baseline_network_policy = baseline;
    request.run_dir = Some(rc.store.run_dir().display().to_string());
    request.resolved_env = resolved_env;
    request.egress_hosts = rc.egress_hosts.clone();
    if role == EnvironmentRole::Task {
        request.host_endpoints = step.rc.host_endpoints();
        request.model_endpoint = step.rc.model_endpoint_inside();
    }
    Ok(request)
}

/// Opens the environment of `role` under its build timeout, after the open-rate pacing, and
/// records it in `.env-resources/` (a session with nothing to release leaves no record); the
/// log of its image's build, when the provider reports one, is copied into `dir` (the
/// attempt's, or a step's, directory).
pub(super) async fn open_environment(
    step: &Step<'_>,
    role: EnvironmentRole,
    dir: &Path,
) -> Result<OpenEnv, Halt> {
    let (rc, task, attempt) = (step.rc, step.task, step.attempt);
    let rule = open_rule(role);
    let mut request = open_request(step, role).map_err(|e| rule.failure(e))?;
    if role == EnvironmentRole::Task {
        request.host_mounts = tool_mounts(step).await?;
    }
    rc.limits.pace_open(&request.environment.id).await;
    let phase = match role {
        EnvironmentRole::Task => TaskPhase::OpenEnvironment,
        EnvironmentRole::Evaluation => TaskPhase::EvaluateEnvironment,
    };
    rc.phase(task, attempt, phase);
    let provider = rc.planner.provider().clone();
    let budget = watchdog(request.environment.setup.build_timeout_seconds);
    let opening = Opening::record(step, &request);
    let outcome = run_phase(&rc.cancel, budget, provider.open(&rc.ctx, &request)).await;
    let opening = match outcome {
        PhaseOutcome::Done(_) => Some(opening),
        _ => {
            // Whatever the unfinished (cancelled, timed-out or failed) open created is
            // released.
            opening.release(rc).await;
            None
        }
    };
    let session = outcome.or_halt(&rule)?;
    let info = session.info();
    if let Some(log) = &info.build_log {
        keep_build_log(Path::new(log), role, dir).await;
    }
    let record = rc
        .store
        .env_resources_dir()
        .join(format!("{}.json", sanitize_component(&info.id)));
    if !info.close_params.is_null() {
        let payload = env_record(&info, &task.task_id, attempt, &rfc3339(SystemTime::now()));
        if let Err(e) = write_json_atomic(&record, &payload) {
            tracing::warn!("cannot record environment {}: {e}", info.id);
        }
    }
    // Recorded as opened: the record of its opening goes.
    if let Some(opening) = opening {
        opening.forget();
    }
    Ok(OpenEnv { session, record })
}

/// The `.env-resources/` record of an environment being opened: `env close` (after a crash)
/// and the attempt itself (after a cancel, timeout or failure) release with it what the
/// unfinished open created.
struct Opening {
    path: PathBuf,
    close_params: serde_json::Value,
}

impl Opening {
    /// Writes the record of `request`'s open (a failure to write is a warning).
    fn record(step: &Step<'_>, request: &OpenEnvironmentRequest) -> Opening {
        let role = match request.role {
            EnvironmentRole::Task => "task",
            EnvironmentRole::Evaluation => "evaluation",
        };
        let id = format!("opening-{}-{}-{role}", request.task_id, request.attempt);
        let path = step
            .rc
            .store
            .env_resources_dir()
            .join(format!("{}.json", sanitize_component(&id)));
        let close_params = request.opening_close_params();
        let payload = opening_record(
            &id,
            &request.environment.id,
            &close_params,
            &request.task_id,
            request.attempt,
            &rfc3339(SystemTime::now()),
        );
        if let Err(e) = write_json_atomic(&path, &payload) {
            tracing::warn!("cannot record environment {id}: {e}");
        }
        Opening { path, close_params }
    }

    /// Releases what the open created (within the cleanup grace), then the record.
    async fn release(self, rc: &AttemptScope<'_>) {
        let provider = rc.planner.provider().clone();
        let closing = tokio::time::timeout(
            rc.cleanup_grace.max(Duration::from_secs(1)),
            provider.close(&rc.ctx, &self.close_params),
        )
        .await;
        match closing {
            Ok(Ok(())) => self.forget(),
            Ok(Err(e)) => tracing::warn!("cannot release an unfinished environment: {e}"),
            Err(_) => tracing::warn!("releasing an unfinished environment timed out"),
        }
    }

    /// Removes the record (the open finished, or what it made is released).
    fn forget(self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!("cannot remove {}: {e}", self.path.display());
            }
        }
    }
}

/// Copies the build log `log` of the environment of `role` into `dir`: `build.log` (the
/// task's environment) or `evaluation-build.log`; a failure is a warning.
async fn keep_build_log(log: &Path, role: EnvironmentRole, dir: &Path) {
    let name = match role {
        EnvironmentRole::Task => "build.log",
        EnvironmentRole::Evaluation => "evaluation-build.log",
    };
    let copied = async {
        tokio::fs::create_dir_all(dir).await?;
        tokio::fs::copy(log, dir.join(name)).await
    };
    if let Err(e) = copied.await {
        tracing::warn!("cannot keep the build log {}: {e}", log.display());
    }
}

/// Closes an environment within the cleanup grace (unless kept); failures become warnings.
pub(super) async fn close_environment(rc: &AttemptScope<'_>, env: OpenEnv, result: &mut RunResult) {
    if rc.resolved.execution.keep_environment {
        let info = env.session.info();
        tracing::warn!(
            "keeping environment {} ({}) open; release it with `agentcompass-host env close {} --id {}`",
            info.id,
            info.provider,
            rc.store.run_dir().display(),
            info.id
        );
        return;
    }
    let closing = tokio::time::timeout(
        rc.cleanup_grace.max(Duration::from_secs(1)),
        env.session.close(),
    )
    .await;
    match closing {
        Ok(Ok(())) => {
            if env.record.exists() {
                if let Err(e) = std::fs::remove_file(&env.record) {
                    tracing::warn!("cannot remove {}: {e}", env.record.display());
                }
            }
        }
        Ok(Err(e)) => result
            .push_issue(codes::ENVIRONMENT_CLOSE_FAILED.warning(IssuePhase::Cleanup, e.message)),
        Err(_) => result.push_issue(codes::ENVIRONMENT_CLOSE_TIMEOUT.warning(
            IssuePhase::Cleanup,
            "closing the environment took longer than the cleanup grace",
        )),
    }
}
