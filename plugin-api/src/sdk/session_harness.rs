//! Harnesses with a typed session: [`SessionHarness`] names the state it keeps between
//! `start` and `close` as an associated type, and takes one input struct per call; every
//! `SessionHarness` is a [`Harness`] (a blanket impl stores the session behind the host's
//! opaque handle and gets it back), so the host and the ABI see no difference.

use std::sync::Arc;

use async_trait::async_trait;

use super::traits::{downcast_session, Harness, HarnessSession, SessionRef};
use super::Ctx;
use crate::contracts::{
    EnvironmentSpec, HarnessPlan, ModelSpec, PreparedTask, RunRequest, RunResult,
};
use crate::Result;

/// What [`SessionHarness::start`] gets: the task environment, the request and the plan.
pub struct StartInput<'a> {
    /// The task environment.
    pub env: &'a SessionRef,
    /// The resolved run request.
    pub req: &'a RunRequest,
    /// The harness plan.
    pub plan: &'a HarnessPlan,
}

/// What [`SessionHarness::execute`] and [`SessionHarness::collect`] get: the prepared task,
/// the request and the plan.
pub struct TaskCall<'a> {
    /// What the benchmark prepared (the instruction, the workspace).
    pub prepared: &'a PreparedTask,
    /// The resolved run request.
    pub req: &'a RunRequest,
    /// The harness plan.
    pub plan: &'a HarnessPlan,
}

/// The agent under test, with a typed session (the form to implement; see the module docs).
///
/// ```
/// use agentcompass_plugin_api::contracts::{ExecRequest, RunResult};
/// use agentcompass_plugin_api::sdk::{async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall};
/// use agentcompass_plugin_api::Result;
///
/// struct Echo;
///
/// #[async_trait]
/// impl SessionHarness for Echo {
///     type Session = SessionRef;
///
///     async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<SessionRef> {
///         Ok(input.env.clone())
///     }
///
///     async fn execute(&self, _ctx: &Ctx, env: &SessionRef, call: TaskCall<'_>) -> Result<RunResult> {
///         let out = env.exec(ExecRequest::argv(["echo", call.prepared.input.prompt.as_str()])).await?;
///         let mut result = RunResult::for_task(call.prepared);
///         result.final_answer = Some(out.stdout.trim().to_string());
///         Ok(result)
///     }
/// }
/// ```
#[async_trait]
pub trait SessionHarness: Send + Sync + 'static {
    /// The state kept between [`SessionHarness::start`] and [`SessionHarness::close`].
    type Session: Send + Sync + 'static;

    /// Whether this harness can run in `environment` with `model`.
    fn supports(&self, _environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(true)
    }

    /// Builds the harness plan after config validation. No I/O.
    fn build_plan(&self, _req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Ok(HarnessPlan::default())
    }

    /// Starts a session in the task environment.
    async fn start(&self, ctx: &Ctx, input: StartInput<'_>) -> Result<Self::Session>;

    /// Runs the task; returns status, answer, trajectory, artifacts and execution errors.
    async fn execute(
        &self,
        ctx: &Ctx,
        session: &Self::Session,
        call: TaskCall<'_>,
    ) -> Result<RunResult>;

    /// Read-only recovery of saved output after execution (default: keep the result).
    async fn collect(
        &self,
        _ctx: &Ctx,
        _session: &Self::Session,
        _call: TaskCall<'_>,
        result: RunResult,
    ) -> Result<RunResult> {
        Ok(result)
    }

    /// Releases the session.
    async fn close(&self, _ctx: &Ctx, _session: Self::Session) -> Result<()> {
        Ok(())
    }

    /// The harness's id, named when the host hands back a session another harness started.
    fn label(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

/// The typed session `harness` started (behind the host's opaque handle), with `call`.
fn typed<'a, 'c, H: SessionHarness>(
    harness: &H,
    session: &'a HarnessSession,
    call: TaskCall<'c>,
) -> Result<(&'a H::Session, TaskCall<'c>)> {
    Ok((
        downcast_session::<H::Session>(session, harness.label())?,
        call,
    ))
}

#[async_trait]
impl<H: SessionHarness> Harness for H {
    fn supports(&self, environment: &EnvironmentSpec, model: &ModelSpec) -> Result<bool> {
        SessionHarness::supports(self, environment, model)
    }

    fn build_plan(&self, req: &RunRequest, environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        SessionHarness::build_plan(self, req, environment)
    }

    async fn start_session(
        &self,
        ctx: &Ctx,
        env: &SessionRef,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<HarnessSession> {
        let session = self.start(ctx, StartInput { env, req, plan }).await?;
        Ok(Arc::new(session))
    }

    async fn execute_task(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let (session, call) = typed(
            self,
            session,
            TaskCall {
                prepared,
                req,
                plan,
            },
        )?;
        self.execute(ctx, session, call).await
    }

    async fn collect_result(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        req: &RunRequest,
        plan: &HarnessPlan,
        result: RunResult,
    ) -> Result<RunResult> {
        let (session, call) = typed(
            self,
            session,
            TaskCall {
                prepared,
                req,
                plan,
            },
        )?;
        self.collect(ctx, session, call, result).await
    }

    async fn close_session(&self, ctx: &Ctx, session: HarnessSession) -> Result<()> {
        match Arc::downcast::<H::Session>(session) {
            Ok(session) => match Arc::try_unwrap(session) {
                Ok(session) => self.close(ctx, session).await,
                // Still shared (a call the host abandoned holds it): dropped when that ends.
                Err(_) => Ok(()),
            },
            Err(_) => Err(crate::Error::msg(format!(
                "{}: foreign harness session",
                self.label()
            ))),
        }
    }
}
