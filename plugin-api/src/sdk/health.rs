//! One health-check loop for every check that gates a task: Harbor's
//! `[environment.healthcheck]` and `[steps.healthcheck]` (run by its benchmark pack through
//! the session) and a Compose service's `healthcheck` (run by a container provider in the
//! service's container). They share Harbor's semantics (`BaseEnvironment.run_healthcheck`),
//! which are Docker's for a container's check too:
//!
//! - the first probe runs at once; one success passes;
//! - a failure during the start period (measured from the first probe) is not counted, and
//!   the next probe follows after `start_interval`;
//! - afterwards `retries` consecutive failures fail the check (`0` and `1` both fail at the
//!   first), probes `interval` apart;
//! - a probe that times out fails the check at once (Harbor's exec raises; Docker counts it,
//!   but a check that times out rarely recovers, and failing fast names the cause).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::Result;

/// When probes run and how many failures fail the check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthPolicy {
    /// Between probes after the start period.
    pub interval: Duration,
    /// Between probes during the start period.
    pub start_interval: Duration,
    /// From the first probe, failures not counted.
    pub start_period: Duration,
    /// Consecutive failures after the start period that fail the check.
    pub retries: u32,
}

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It passed.
    Passed,
    /// It failed: the exit code and the end of its output.
    Failed {
        /// The probe's exit code.
        code: i64,
        /// Its output's end (already scrubbed of secrets).
        output: String,
    },
    /// It did not finish within its own bound.
    TimedOut,
}

/// Why a check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unhealthy {
    /// `retries` consecutive probes failed after the start period; the last one's result.
    Retries {
        /// How many consecutive failures failed it.
        retries: u32,
        /// The last probe's exit code.
        code: i64,
        /// The last probe's output.
        output: String,
    },
    /// A probe timed out.
    TimedOut,
}

impl std::fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unhealthy::Retries {
                retries,
                code,
                output,
            } => {
                write!(
                    f,
                    "failed after {retries} consecutive retries (exit {code})"
                )?;
                if !output.is_empty() {
                    write!(f, ": {output}")?;
                }
                Ok(())
            }
            Unhealthy::TimedOut => write!(f, "timed out"),
        }
    }
}

/// Probes with `probe` until the check passes (`Ok(Ok(()))`) or fails (`Ok(Err(why))`);
/// `Err` when a probe could not run at all (the environment is gone). Sleeps on the plugin
/// runtime, so it can run on any executor.
pub async fn wait_healthy<F, Fut>(
    policy: HealthPolicy,
    mut probe: F,
) -> Result<std::result::Result<(), Unhealthy>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Probe>>,
{
    let started = Instant::now();
    let mut failures = 0;
    loop {
        let in_start = started.elapsed() < policy.start_period;
        let (code, output) = match probe().await? {
            Probe::Passed => return Ok(Ok(())),
            Probe::TimedOut => return Ok(Err(Unhealthy::TimedOut)),
            Probe::Failed { code, output } => (code, output),
        };
        if in_start {
            super::runtime::sleep(policy.start_interval).await?;
            continue;
        }
        failures += 1;
        if failures >= policy.retries {
            return Ok(Err(Unhealthy::Retries {
                retries: policy.retries.max(1),
                code,
                output,
            }));
        }
        super::runtime::sleep(policy.interval).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn policy(retries: u32, start_period_ms: u64) -> HealthPolicy {
        HealthPolicy {
            interval: Duration::from_millis(1),
            start_interval: Duration::from_millis(1),
            start_period: Duration::from_millis(start_period_ms),
            retries,
        }
    }

    fn failed() -> Probe {
        Probe::Failed {
            code: 1,
            output: "no".into(),
        }
    }

    fn run(
        policy: HealthPolicy,
        outcomes: Vec<Probe>,
    ) -> (usize, std::result::Result<(), Unhealthy>) {
        let calls = Cell::new(0);
        let result = block_on(wait_healthy(policy, || {
            let n = calls.get();
            calls.set(n + 1);
            let outcome = outcomes.get(n).cloned().unwrap_or(Probe::Passed);
            async move { Ok(outcome) }
        }))
        .unwrap();
        (calls.get(), result)
    }

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn one_success_passes_and_retries_count_consecutive_failures() {
        assert_eq!(run(policy(3, 0), vec![Probe::Passed]), (1, Ok(())));
        assert_eq!(run(policy(3, 0), vec![failed(), failed()]), (3, Ok(())));
        let (calls, result) = run(policy(3, 0), vec![failed(), failed(), failed()]);
        assert_eq!(calls, 3);
        assert_eq!(
            result.unwrap_err().to_string(),
            "failed after 3 consecutive retries (exit 1): no"
        );
        // 0 and 1 both fail at the first failure.
        assert_eq!(run(policy(0, 0), vec![failed()]).0, 1);
        assert_eq!(run(policy(1, 0), vec![failed()]).0, 1);
    }

    #[test]
    fn failures_in_the_start_period_are_not_counted_and_a_timeout_fails_at_once() {
        let (calls, result) = run(policy(1, 10_000), vec![failed(); 5]);
        assert_eq!((calls, result), (6, Ok(())));
        let (calls, result) = run(policy(3, 0), vec![Probe::TimedOut]);
        assert_eq!((calls, result), (1, Err(Unhealthy::TimedOut)));
    }
}
