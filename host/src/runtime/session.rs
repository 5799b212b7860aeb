//! Phase-scoped sessions: during the agent run and during evaluation, every command a
//! component runs through the environment gets that phase's bindings (`run_env_variables` or
//! `evaluation_env_variables` over the common ones) in [`ExecRequest::scope_env`], which
//! overrides the call's defaults and the session's common bindings, and runs as that phase's
//! user (`run_user` / `evaluation_user`) every command that names none. The scope is a wrapper
//! handed to the phase's calls only, so it ends with the phase whatever way the phase ends;
//! preparation, artifact commands, result recovery and cleanup see the bare session.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    ExecRequest, ExecResult, ExecutionPlan, NetworkPolicy, SessionInfo,
};
use agentcompass_plugin_api::sdk::{async_trait, EnvironmentSession, SessionRef};
use agentcompass_plugin_api::{Error, Result};

use crate::planner::{phase_bindings, resolve_secret_bindings, Phase};

/// `session` with the bindings and user of `phase` in `plan` applied to every command, or the
/// session itself when the phase adds nothing to what the session already has.
pub fn scoped_session(
    session: &SessionRef,
    plan: &ExecutionPlan,
    phase: Phase,
) -> Result<SessionRef> {
    let (phase_only, user) = match phase {
        Phase::Run => (&plan.environment.run_env_variables, &plan.run_user),
        Phase::Evaluation => (
            &plan.environment.evaluation_env_variables,
            &plan.evaluation_user,
        ),
        Phase::Common | Phase::FreshStartup => return Ok(session.clone()),
    };
    if phase_only.is_empty() && user.is_none() {
        return Ok(session.clone());
    }
    let bindings = if phase_only.is_empty() {
        BTreeMap::new()
    } else {
        let templates = phase_bindings(plan, phase);
        resolve_secret_bindings(&templates, &crate::config::process_env)
            .map_err(|e| Error::invalid_input(e.to_string()))?
    };
    Ok(Arc::new(PhaseScopedSession {
        inner: session.clone(),
        bindings,
        user: user.clone(),
    }))
}

/// A session whose commands carry the phase's bindings, as the phase's user.
struct PhaseScopedSession {
    inner: SessionRef,
    bindings: BTreeMap<String, String>,
    user: Option<String>,
}

#[async_trait]
impl EnvironmentSession for PhaseScopedSession {
    fn info(&self) -> SessionInfo {
        self.inner.info()
    }

    async fn exec(&self, mut request: ExecRequest) -> Result<ExecResult> {
        let mut scope = self.bindings.clone();
        scope.append(&mut request.scope_env);
        request.scope_env = scope;
        if request.user.is_none() {
            request.user = self.user.clone();
        }
        self.inner.exec(request).await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        self.inner.upload(src, dst).await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        self.inner.download(src, dst).await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        self.inner.upload_dir(src, dst).await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        self.inner.download_dir(src, dst).await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        self.inner.read_text(path).await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        self.inner.write_text(path, content).await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        self.inner.is_file(path).await
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        self.inner.is_dir(path).await
    }

    async fn endpoint(&self) -> Result<Option<String>> {
        self.inner.endpoint().await
    }

    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        self.inner.set_network_policy(policy).await
    }

    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}
