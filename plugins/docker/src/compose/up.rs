//! A session's Compose project while the session opens (module `open`): started before
//! `main`, settled after it, removed when the open fails.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentcompass_plugin_api::{tracing, Error, Result};
use bollard::models::ContainerCreateBody;

use super::stack::{Stack, StackSpec};
use super::Project;
use crate::engine::{Daemon, Engine};

/// Creates the project and starts its sidecars, then waits for `main`'s dependencies,
/// within `deadline`; on failure everything it started is removed. The project and
/// `main`'s binds.
pub(crate) async fn up(
    engine: Engine,
    address: String,
    spec: Arc<StackSpec>,
    project: Arc<Project>,
    deadline: Option<Duration>,
) -> Result<(Stack, Vec<String>)> {
    let (spec, project) = (spec.as_ref(), project.as_ref());
    let docker = Daemon::connect(engine, &address).await?;
    let mut stack = Stack::create(&docker, spec, project).await;
    let mut main_binds = Vec::new();
    let started = match &mut stack {
        Ok(stack) => {
            let work = async {
                stack.start_sidecars(&docker, spec, project).await?;
                main_binds = stack.binds(&docker, spec, &project.main).await?;
                stack
                    .await_dependencies(&docker, spec, &project.main.depends_on)
                    .await
            };
            within(engine, deadline, work).await
        }
        Err(_) => Ok(()),
    };
    match (stack, started) {
        (Ok(stack), Ok(())) => Ok((stack, main_binds)),
        (Ok(mut stack), Err(e)) => {
            if let Err(cleanup) = stack.down(&docker).await {
                tracing::warn!("cleanup failed: {cleanup}");
            }
            Err(e)
        }
        (Err(e), _) => {
            // A network created before the failure (a volume that could not be made).
            let _ = crate::compose::stack::remove_all(&docker, &[], &[], Some(&spec.name)).await;
            Err(e)
        }
    }
}

/// As `up --wait`: every health check of the project passes, within `deadline`; on failure
/// the project is removed (the caller removes `main`).
pub(crate) async fn settle(
    docker: Daemon,
    stack: Stack,
    spec: Arc<StackSpec>,
    project: Arc<Project>,
    main: String,
    deadline: Option<Duration>,
) -> Result<Stack> {
    let mut stack = stack;
    let outcome = within(
        docker.engine,
        deadline,
        stack.settle(&docker, &spec, &project.main, &main),
    )
    .await;
    match outcome {
        Ok(()) => Ok(stack),
        Err(e) => {
            if let Err(cleanup) = stack.down(&docker).await {
                tracing::warn!("cleanup failed: {cleanup}");
            }
            Err(e)
        }
    }
}

/// `work` within `deadline` (`setup.build_timeout_seconds`).
async fn within<F: std::future::Future<Output = Result<()>>>(
    engine: Engine,
    deadline: Option<Duration>,
    work: F,
) -> Result<()> {
    match deadline {
        None => work.await,
        Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(Error::new(
                agentcompass_plugin_api::ErrorKind::Timeout,
                format!(
                    "{engine}: starting the task's services took longer than \
                     setup.build_timeout_seconds ({}s)",
                    limit.as_secs_f64()
                ),
            ))
        }),
    }
}

/// What the file adds to `main`: its name on the project network, its `environment` (the
/// session's bindings win, as Harbor's environment override does), labels, hostname,
/// shared memory, and the services' hosts entries (module `hosts`).
pub(crate) fn main_overrides(
    body: &mut ContainerCreateBody,
    stack: &Stack,
    project: &Project,
    resolved: &std::collections::BTreeMap<String, String>,
) {
    let main = &project.main;
    body.networking_config = Some(stack.aliases(&main.name));
    let added = main
        .env
        .iter()
        .filter(|(k, _)| !resolved.contains_key(k))
        .map(|(k, v)| format!("{k}={v}"));
    body.env.get_or_insert_with(Vec::new).extend(added);
    let labels = body.labels.get_or_insert_with(HashMap::new);
    for (key, value) in &main.labels {
        labels.entry(key.clone()).or_insert_with(|| value.clone());
    }
    if main.hostname.is_some() {
        body.hostname = main.hostname.clone();
    }
    if let Some(host) = body.host_config.as_mut() {
        host.shm_size = main.shm_size.or(host.shm_size);
        if let Some(entries) = super::hosts::extra_hosts(&stack.addresses) {
            host.extra_hosts
                .get_or_insert_with(Vec::new)
                .extend(entries);
        }
    }
}

/// Removes a project whose `main` did not start.
pub(crate) async fn abandon_stack(engine: Engine, address: &str, stack: Option<Stack>) {
    let Some(mut stack) = stack else { return };
    let address = address.to_string();
    let removed = crate::rt::spawn(async move {
        let docker = Daemon::connect(engine, &address).await?;
        stack.down(&docker).await
    })
    .await;
    if let Err(e) = removed.and_then(|r| r) {
        tracing::warn!("cleanup failed: {e}");
    }
}
