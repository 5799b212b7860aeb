//! Harbor's health checks (`[environment.healthcheck]`, `[steps.healthcheck]`): a command run
//! in the task environment until it succeeds, with Harbor's loop (`BaseEnvironment
//! .run_healthcheck`), the SDK's one loop (`sdk::health`, which a Compose service's check
//! runs too): one success passes; failures during `start_period_sec` (measured from the
//! first attempt) are not counted and retried every `start_interval_sec`; afterwards
//! `retries` consecutive failures fail, retried every `interval_sec`. Each attempt is bounded
//! by `timeout_sec` truncated to whole seconds (below 1: no bound, as Harbor's `int()`); an
//! attempt that times out fails the check at once (Harbor's exec raises). The environment's
//! check runs once, before the agent (before the first step of a multi-step task); a step's
//! after its workdir and `setup.sh`, before its agent. A separate verifier environment runs
//! none (as in Harbor).

use std::time::Duration;

use agentcompass_plugin_api::contracts::ExecRequest;
use agentcompass_plugin_api::sdk::health::{wait_healthy, HealthPolicy, Probe, Unhealthy};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::fields::Section;
use crate::names::ID;

/// One `HealthcheckConfig`, with Harbor's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Healthcheck {
    /// The shell command.
    pub(crate) command: String,
    /// Seconds between attempts after the start period.
    pub(crate) interval_sec: f64,
    /// The bound of one attempt.
    pub(crate) timeout_sec: f64,
    /// Seconds from the first attempt during which failures are not counted.
    pub(crate) start_period_sec: f64,
    /// Seconds between attempts during the start period.
    pub(crate) start_interval_sec: f64,
    /// Consecutive failures after the start period that fail the check.
    pub(crate) retries: i64,
}

/// Reads a `healthcheck` table as Harbor validates it: a `command`, numeric intervals and
/// integer retries.
pub(crate) fn parse(section: &Section) -> Result<Healthcheck> {
    let Some(command) = section.string("command")? else {
        return Err(section.file_error(format!(
            "field `{}`: expected a string, found none",
            section.key("command")
        )));
    };
    let seconds = |key: &str, default: f64| -> Result<f64> {
        Ok(section
            .number(key, "a number of seconds")?
            .unwrap_or(default))
    };
    Ok(Healthcheck {
        command,
        interval_sec: seconds("interval_sec", 5.0)?,
        timeout_sec: seconds("timeout_sec", 30.0)?,
        start_period_sec: seconds("start_period_sec", 0.0)?,
        start_interval_sec: seconds("start_interval_sec", 5.0)?,
        retries: section.integer("retries", "an integer")?.unwrap_or(3),
    })
}

/// A duration of `seconds` (negative and NaN values: none).
fn pause(seconds: f64) -> Duration {
    agentcompass_plugin_api::wait::duration_from_seconds(seconds)
}

impl Healthcheck {
    /// When its probes run, as the shared loop takes it.
    fn policy(&self) -> HealthPolicy {
        HealthPolicy {
            interval: pause(self.interval_sec),
            start_interval: pause(self.start_interval_sec),
            start_period: pause(self.start_period_sec),
            retries: u32::try_from(self.retries.max(0)).unwrap_or(u32::MAX),
        }
    }

    /// Runs the check in `env` (in `cwd`); `whose` names it in errors (`the environment's`,
    /// `step `x`'s`). An environment error when it fails.
    pub(crate) async fn run(
        &self,
        ctx: &Ctx,
        env: &SessionRef,
        cwd: Option<&str>,
        whose: &str,
        user: Option<&str>,
    ) -> Result<()> {
        let bound = self.timeout_sec.trunc();
        let probe = || async move {
            let mut request = ExecRequest::argv(["bash", "-c", self.command.as_str()]);
            request.user = user.map(str::to_string);
            request.cwd = cwd.map(str::to_string);
            if bound >= 1.0 {
                request.timeout_seconds = Some(bound);
            }
            let out = env.exec(request).await?;
            if out.success() {
                return Ok(Probe::Passed);
            }
            if out.timed_out {
                return Ok(Probe::TimedOut);
            }
            let text = format!("{}{}", out.stdout, out.stderr);
            let text = ctx.scrub(text.trim()).await;
            let tail: String = text.chars().rev().take(300).collect();
            Ok(Probe::Failed {
                code: i64::from(out.returncode),
                output: tail.chars().rev().collect(),
            })
        };
        match wait_healthy(self.policy(), probe).await? {
            Ok(()) => Ok(()),
            Err(Unhealthy::TimedOut) => Err(Error::environment(format!(
                "{ID}: {whose} healthcheck `{}` timed out after {bound}s",
                self.command
            ))),
            Err(failed) => Err(Error::environment(format!(
                "{ID}: {whose} healthcheck `{}` {failed}",
                self.command
            ))),
        }
    }
}
