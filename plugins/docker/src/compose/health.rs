//! Waiting for a service: its health check (the file's, else its image's `HEALTHCHECK`) run
//! as execs in its container through the SDK's one loop, or its completion.

use std::time::Duration;

use agentcompass_plugin_api::sdk::health::{wait_healthy, HealthPolicy, Probe, Unhealthy};
use agentcompass_plugin_api::{Error, Result};
use bollard::models::HealthConfig;

use super::model::{Health, HealthSource, HealthTest};
use crate::engine::Daemon;
use crate::exec::exec_captured;

/// The most of a probe's output kept for a message.
const OUTPUT_TAIL: usize = 300;

/// The check a service runs: the file's, else (`HealthSource::Image`) the image's
/// `HEALTHCHECK` when it has one; `None` when it has none.
pub(crate) async fn check_of(
    docker: &Daemon,
    image: &str,
    source: &HealthSource,
) -> Result<Option<Health>> {
    match source {
        HealthSource::Declared(health) => Ok(Some(health.clone())),
        HealthSource::Disabled => Ok(None),
        HealthSource::Image => {
            let inspected = docker.inspect_image(image).await.map_err(|e| {
                docker
                    .engine
                    .error(&format!("inspecting image `{image}`"), e)
            })?;
            Ok(inspected
                .config
                .and_then(|c| c.healthcheck)
                .and_then(from_image))
        }
    }
}

/// An image's `HEALTHCHECK` (durations in nanoseconds, 0 = Docker's default).
fn from_image(config: HealthConfig) -> Option<Health> {
    let test = config.test?;
    let test = match test.split_first() {
        Some((first, rest)) if first == "CMD" && !rest.is_empty() => {
            HealthTest::Argv(rest.to_vec())
        }
        Some((first, [cmd])) if first == "CMD-SHELL" => HealthTest::Shell(cmd.clone()),
        _ => return None,
    };
    let nanos = |value: Option<i64>, default: u64| match value {
        Some(n) if n > 0 => Duration::from_nanos(n.unsigned_abs()),
        _ => Duration::from_secs(default),
    };
    Some(Health {
        test,
        timeout: Some(nanos(config.timeout, 30)),
        policy: HealthPolicy {
            interval: nanos(config.interval, 30),
            start_interval: nanos(config.start_interval, 5),
            start_period: nanos(config.start_period, 0),
            retries: config
                .retries
                .filter(|r| *r > 0)
                .and_then(|r| u32::try_from(r).ok())
                .unwrap_or(3),
        },
    })
}

/// Waits until `check` passes in `container` (service `service` of `file`); an environment
/// error naming the service, the check and its last output when it fails, or when the
/// container exits first.
pub(crate) async fn wait_for(
    docker: &Daemon,
    container: &str,
    service: &str,
    file: &str,
    check: &Health,
) -> Result<()> {
    let argv = match &check.test {
        HealthTest::Argv(argv) => argv.clone(),
        HealthTest::Shell(cmd) => vec!["/bin/sh".into(), "-c".into(), cmd.clone()],
    };
    let shown = match &check.test {
        HealthTest::Argv(argv) => argv.join(" "),
        HealthTest::Shell(cmd) => cmd.clone(),
    };
    let probe = || {
        let (argv, shown) = (argv.clone(), shown.clone());
        async move {
            let out = exec_captured(docker, container, argv, Vec::new(), "/", check.timeout).await;
            let out = match out {
                Ok(out) => out,
                // Module `exec` says so when the container is gone or stopped.
                Err(e)
                    if !(e.message.contains("is not running")
                        || e.message.contains("does not exist")) =>
                {
                    return Err(Error::environment(format!(
                        "{}: service `{service}` of {file}: its health check `{shown}` cannot \
                         run: {}",
                        docker.engine, e.message
                    )))
                }
                Err(_) => return Err(exited(docker, container, service, file).await),
            };
            if out.timed_out {
                return Ok(Probe::TimedOut);
            }
            if out.returncode == 0 {
                return Ok(Probe::Passed);
            }
            Ok(Probe::Failed {
                code: i64::from(out.returncode),
                output: tail(&format!("{}{}", out.stdout, out.stderr)),
            })
        }
    };
    match wait_healthy(check.policy, probe).await? {
        Ok(()) => Ok(()),
        Err(why) => {
            let why = match why {
                Unhealthy::TimedOut => format!(
                    "timed out after {}s",
                    check.timeout.unwrap_or_default().as_secs_f64()
                ),
                other => other.to_string(),
            };
            Err(Error::environment(format!(
                "{}: service `{service}` of {file} never became healthy: its health check \
                 `{shown}` {why}",
                docker.engine
            )))
        }
    }
}

/// Waits until `container` (a one-shot service) exits; an error unless it exits with 0.
pub(crate) async fn wait_completed(
    docker: &Daemon,
    container: &str,
    service: &str,
    file: &str,
) -> Result<()> {
    match exit_code(docker, container).await? {
        0 => Ok(()),
        code => Err(Error::environment(format!(
            "{}: service `{service}` of {file} did not complete successfully (exit {code}): {}",
            docker.engine,
            last_logs(docker, container).await
        ))),
    }
}

/// The exit code of `container`, once it is not running (the wait endpoint: Podman's
/// inspect reports a `stopped` state the Docker API's model does not have).
async fn exit_code(docker: &Daemon, container: &str) -> Result<i64> {
    use futures_util::StreamExt;
    let options = bollard::query_parameters::WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let mut waited = docker.wait_container(container, Some(options));
    match waited.next().await {
        Some(Ok(done)) => Ok(done.status_code),
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
        Some(Err(e)) => Err(docker
            .engine
            .error(&format!("waiting for `{container}`"), e)),
        None => Err(Error::environment(format!(
            "{}: waiting for `{container}` ended without its exit code",
            docker.engine
        ))),
    }
}

/// The error of a service whose container is no longer running, with its exit code and
/// its last output lines.
async fn exited(docker: &Daemon, container: &str, service: &str, file: &str) -> Error {
    let code = exit_code(docker, container).await.ok();
    Error::environment(format!(
        "{}: service `{service}` of {file} exited (code {}) before it was healthy: {}",
        docker.engine,
        code.map_or_else(|| "unknown".to_string(), |c| c.to_string()),
        last_logs(docker, container).await
    ))
}

/// The end of a container's output (both streams), for a message.
pub(crate) async fn last_logs(docker: &Daemon, container: &str) -> String {
    use futures_util::StreamExt;
    let options = bollard::query_parameters::LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .tail("20")
        .build();
    let mut stream = docker.logs(container, Some(options));
    let mut text = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
    }
    tail(&text)
}

/// The last [`OUTPUT_TAIL`] characters of `text`, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim();
    let skip = text.chars().count().saturating_sub(OUTPUT_TAIL);
    text.chars().skip(skip).collect()
}
