//! How the orchestration's limits are shared out over a run's jobs, so the cluster as a whole
//! never exceeds them: jobs in flight ≤ the attempt concurrency and the provider's limit;
//! each job opens at most `provider_limit / jobs` environments (≥ 1), paces opens at
//! `qps / jobs`, and runs at most `min(cpus_per_job, concurrency / jobs)` tasks at once.

use crate::request::{ResolvedRuntimeOptions, SlurmOptions};

/// The run's jobs and what each may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shares {
    /// Jobs in flight, at most.
    pub(super) max_jobs: usize,
    /// Tasks one job runs at once.
    pub(super) job_concurrency: u32,
}

/// The shares of a run with `to_run` tasks under the orchestration's `concurrency` and the
/// request provider's limit (`None`: unlimited).
pub(super) fn shares(
    options: &SlurmOptions,
    to_run: usize,
    concurrency: u32,
    provider_limit: Option<u32>,
) -> Shares {
    let per_job = options.attempts_per_job.max(1) as usize;
    let concurrency = concurrency.max(1) as usize;
    let mut max_jobs = (options.max_jobs_in_flight.max(1) as usize)
        .min(to_run.max(1).div_ceil(per_job))
        .min(concurrency);
    if let Some(limit) = provider_limit.filter(|&l| l > 0) {
        max_jobs = max_jobs.min(limit as usize);
    }
    let max_jobs = max_jobs.max(1);
    let job_concurrency =
        (options.cpus_per_job.max(1) as usize).min((concurrency / max_jobs).max(1));
    Shares {
        max_jobs,
        job_concurrency: job_concurrency as u32,
    }
}

/// The runtime options one job runs with: every provider limit and open rate divided by the
/// jobs in flight.
pub(super) fn job_runtime(
    runtime: &ResolvedRuntimeOptions,
    max_jobs: usize,
) -> ResolvedRuntimeOptions {
    let mut job = runtime.clone();
    let jobs = max_jobs.max(1);
    for limit in job.provider_limits.values_mut() {
        if *limit > 0 {
            *limit = (*limit / jobs as u32).max(1);
        }
    }
    for qps in job.env_open_qps.values_mut() {
        *qps /= jobs as f64;
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(attempts_per_job: u32, cpus_per_job: u32, max_jobs_in_flight: u32) -> SlurmOptions {
        SlurmOptions {
            attempts_per_job,
            cpus_per_job,
            max_jobs_in_flight,
            ..SlurmOptions::default()
        }
    }

    #[test]
    fn the_cluster_never_exceeds_the_orchestrations_limits() {
        let mut runtime = ResolvedRuntimeOptions::default();
        runtime.provider_limits.insert("sandbox".into(), 10);
        runtime.env_open_qps.insert("sandbox".into(), 6.0);
        for (to_run, concurrency, limit, per_job, cpus, max) in [
            (1000, 32, Some(10), 1, 1, 64),
            (1000, 12, None, 50, 4, 3),
            (7, 32, Some(3), 1, 2, 64),
            (100_000, 8, Some(128), 500, 8, 64),
            (1, 32, None, 10, 4, 64),
        ] {
            let shares = shares(&options(per_job, cpus, max), to_run, concurrency, limit);
            let total = shares.max_jobs as u32 * shares.job_concurrency;
            assert!(total <= concurrency.max(cpus), "{shares:?}");
            assert!(shares.max_jobs as u32 <= concurrency, "{shares:?}");
            if let Some(limit) = limit {
                assert!(shares.max_jobs as u32 <= limit, "{shares:?}");
            }
            let job = job_runtime(&runtime, shares.max_jobs);
            let opened = job.provider_limits["sandbox"] * shares.max_jobs as u32;
            assert!(opened <= 10 || shares.max_jobs > 10, "{shares:?}: {opened}");
            let qps = job.env_open_qps["sandbox"] * shares.max_jobs as f64;
            assert!((qps - 6.0).abs() < 1e-9, "{qps}");
        }
        assert_eq!(
            shares(&options(50, 4, 3), 1000, 12, None),
            Shares {
                max_jobs: 3,
                job_concurrency: 4
            }
        );
        // Fewer jobs than the provider's limit: each job opens its share.
        let few = shares(&options(1, 1, 64), 1000, 32, Some(3));
        assert_eq!(few.max_jobs, 3);
        assert_eq!(
            job_runtime(&runtime, few.max_jobs).provider_limits["sandbox"],
            3
        );
    }
}
