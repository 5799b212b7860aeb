//! The `docker` environment provider, as a plugin: one keep-alive container per task attempt,
//! driven through the Docker Engine API (bollard).
//!
//! - Image: `setup.image` (required without `build_context`). With `pull = false` (the
//!   default) it must exist locally; with `pull = true` a missing image is pulled first.
//! - Built image: with the `build_context` parameter (an absolute host directory holding a
//!   `Dockerfile`) the directory is archived (sorted, modes kept, times zeroed) and the image
//!   built from it (classic builder, no pull, network `none`), tagged `setup.image` if given,
//!   else `agentcompass-build/ctx-<first 16 hex digits of the archive's sha256>:latest`, and
//!   labelled `agentcompass.context_sha256=<sha256>`. An image with that tag and label is
//!   reused without building. A failed build is an error carrying the builder's last error
//!   line and the failing step.
//! - Container: named `agentcompass-<task>-<attempt>-<random>`, labelled
//!   `agentcompass.run_id`, `agentcompass.task_id`, `agentcompass.attempt` and
//!   `agentcompass.managed=true`; its command is `keep_alive_command`; its environment the
//!   request's resolved bindings; its working directory `setup.workdir` (default `/app`).
//!   `cpu` becomes `NanoCpus`, `memory_mb` becomes `Memory`. Everything is done within
//!   `setup.build_timeout_seconds` when given.
//! - Network (module `network`): a `public` baseline runs on the `network` parameter
//!   (default `host`); every other baseline (`no-network`, `allowlist`, `denylist`) on
//!   `none`. A container's network is fixed when it starts, so its phases must be all public
//!   or all non-public: a plan that mixes them in one container is refused when it is
//!   validated (one line naming the policy and the provider), and so is such a switch at run
//!   time. Among the non-public policies the session switches freely
//!   (`dynamic_network_policy`).
//! - Egress (modules `egress`, `forwarder`, `isolation`): a `none` container gets, read-only
//!   under `/.agentcompass-egress/`, the host binary (`forward`), the host's dynamic loader
//!   and the libraries it resolves for it (`lib/`), and the session's socket directory
//!   (`proxy/`, a 0700 host directory `<temp>/agentcompass-docker-<random>/proxy`). An
//!   `allowlist`/`denylist` policy is served by the host's egress proxy
//!   (`agentcompass-egress`: `CONNECT` and absolute-URI HTTP, the session's random token,
//!   names resolved by the proxy — the `egress_hosts` parameter first —, addresses checked
//!   after resolving) on `proxy/s`; the forwarder (`agentcompass_egress::forward`, the host
//!   binary re-executed through the loader: `lib/ld-linux-x86-64.so.2 --library-path lib
//!   forward __agentcompass-egress-forward 3128=/.agentcompass-egress/proxy/s --serve`),
//!   started with a Docker exec (as root) when first needed, binds `127.0.0.1:3128` in the
//!   container and relays each connection to the socket; the open waits until it listens
//!   (at most 10 s, else one line with the forwarder's own message). Commands started under
//!   such a policy get `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` =
//!   `http://agent:TOKEN@127.0.0.1:3128` and `NO_PROXY=localhost,127.0.0.1,::1`, upper and
//!   lower case; the token is registered with the host's secrets. A switch binds the new
//!   policy's proxy beside the socket, renames it over the socket and shuts the old proxy
//!   down with every tunnel it had open (~2 ms); `no-network` removes the socket, so the
//!   forwarder's port relays to nothing and commands get no proxy variables.
//! - Host endpoints (`OpenEnvironmentRequest.host_endpoints`): on `host` nothing is needed
//!   (the host listens on `127.0.0.1:PORT` itself); on `none` (or another network) each
//!   socket's directory is bound read-only at `/.agentcompass-egress/endpoint-N/` and the
//!   forwarder serves `PORT=` that socket too, under every policy, `no-network` included.
//!   Limits: the daemon must be local (it binds host paths, and readiness is read from the
//!   host's `/proc/<container pid>/net/tcp`), and its container root must be able to use a
//!   root-owned 0700 directory (no user-namespace remapping); the host binary must run with
//!   the host's loader (it does: the loader and libraries are the host's).
//! - Host mounts (`OpenEnvironmentRequest.host_mounts`: the harness's installed tools,
//!   read-only, and an install's staging directory, writable): bind mounts of the host
//!   directories (the daemon is local), checked first (absolute clean targets, not under
//!   `/proc`, `/dev`, `/sys` or `/.agentcompass-egress`, not nested, existing sources).
//! - Commands: Docker execs (argv, or `/bin/sh -c <string>`); cwd default = the working
//!   directory, relative cwd resolved against it. Environment: the call's `env` defaults, then
//!   the session's resolved bindings, then `required_env` (the precedence of `host_process`).
//!   Every exec carries a marker variable `AGENTCOMPASS_EXEC_ID`; on a timeout (or when the
//!   `exec` future is dropped) every process of the container carrying that marker is killed
//!   with SIGKILL (best effort: it needs `/bin/sh` and `cat` in the image), and the result is
//!   return code 124 with `timed_out`. A command that cannot start (missing program or
//!   working directory) is an error, not an exit code. Detached execs return 0 at once.
//! - Files: tar archives through the archive endpoint (modes and symlinks preserved; missing
//!   parent directories are created by the daemon, mode 0755). Files written into the
//!   container are owned by the container's user (`copyUIDGID`). `is_file`/`is_dir` run
//!   `test -f`/`test -d` (the `/bin/sh` builtin).
//! - `close` force-removes the container (a missing container is fine), stops the proxy and
//!   removes the private directory; the provider's `close(close_params)` does the same after
//!   a crash, for containers it labelled and directories it named only.
//! - All Docker I/O runs on the provider's own runtime (module `rt`): the SDK's helper
//!   runtime has no I/O driver.

mod archive;
mod config;
mod container;
mod egress;
mod exec;
mod forwarder;
mod isolation;
mod mounts;
mod network;
mod rt;
mod session;
#[cfg(test)]
mod tests;
mod transfer;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ExecutionPlan, JsonMap, NetworkMode, OpenEnvironmentRequest,
    ProviderCapabilities, PORT_ENTRY_TYPE,
};
use agentcompass_plugin_api::sdk::provider::{blocking, random_suffix, sanitise};
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, PluginBuilder, SessionRef,
};
use agentcompass_plugin_api::{tracing, Error, Result};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::RemoveContainerOptionsBuilder;
use bollard::{Docker, API_DEFAULT_VERSION};
use serde_json::Value;

use config::{check_build_context, config_schema, workdir_of, Config};
use container::Launch;
use egress::Egress;
use forwarder::Bundle;
use isolation::{endpoint_mounts, Isolation, SessionNetwork};
use network::{check_phases, egress_of, Attachment};
use session::DockerSession;

/// Provider id.
pub const ID: &str = "docker";

/// One-line description.
pub const DESCRIPTION: &str = "Containers through the Docker Engine API: image from setup.image, \
     or built from a task's Dockerfile context under the build timeout; keep-alive container, exec, archive file transfer, no-network = network none, allowlist through the host's egress proxy, per-phase policies among the non-public modes, host endpoints";

/// Name prefix of the containers this provider creates.
const NAME_PREFIX: &str = "agentcompass-";

/// Label keys.
const LABEL_RUN: &str = "agentcompass.run_id";
const LABEL_TASK: &str = "agentcompass.task_id";
const LABEL_ATTEMPT: &str = "agentcompass.attempt";
const LABEL_MANAGED: &str = "agentcompass.managed";
/// The error of an open without an image to run.
const IMAGE_REQUIRED: &str = "docker: setup.image is required (e.g. --env-params '{\"setup\": \
                              {\"image\": \"debian:bookworm\"}}')";

/// The `allowlist`/`denylist` entries the egress proxy matches (every host pattern of the
/// contract, with or without a port).
const ENTRY_TYPES: [&str; 7] = [
    "hostname",
    "wildcard",
    "ipv4",
    "ipv6",
    "ipv4_cidr",
    "ipv6_cidr",
    PORT_ENTRY_TYPE,
];

/// Timeout of each Docker API request (until its response headers arrive).
const REQUEST_TIMEOUT_SECONDS: u64 = 300;

fn register(plugin: &mut PluginBuilder) {
    plugin.environment(info(), || Ok(DockerProvider));
}

agentcompass_plugin_api::export_plugin!(register);

/// What the provider says about itself.
pub fn info() -> ComponentInfo {
    ComponentInfo::new(ComponentKind::Environment, ID, DESCRIPTION).with_schema(config_schema())
}
/// A Docker error as an environment error.
pub(crate) fn docker_error(op: &str, err: bollard::errors::Error) -> Error {
    Error::environment(format!("docker: {op}: {err}"))
}

/// The HTTP status of a Docker server error.
pub(crate) fn status_of(err: &bollard::errors::Error) -> Option<u16> {
    match err {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Connects to the daemon at `host` and negotiates the API version. Must run on the provider
/// runtime (the client's connections belong to the runtime they are made on).
pub(crate) async fn connect(host: &str) -> Result<Docker> {
    let docker = if host.starts_with('/') || host.starts_with("unix://") {
        Docker::connect_with_unix(host, REQUEST_TIMEOUT_SECONDS, API_DEFAULT_VERSION)
    } else {
        Docker::connect_with_host(host)
            .map(|d| d.with_timeout(Duration::from_secs(REQUEST_TIMEOUT_SECONDS)))
    }
    .map_err(|e| Error::environment(format!("docker: cannot connect to `{host}`: {e}")))?;
    docker.negotiate_version().await.map_err(|e| {
        Error::environment(format!("docker: cannot reach the daemon at `{host}`: {e}"))
    })
}

/// Force-removes a container; a missing one (or one already being removed) is fine.
pub(crate) async fn remove_container(docker: &Docker, name: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(options)).await {
        Ok(()) => Ok(()),
        Err(e) if matches!(status_of(&e), Some(404 | 409)) => Ok(()),
        Err(e) => Err(docker_error(&format!("removing container `{name}`"), e)),
    }
}

/// The `docker` provider.
pub struct DockerProvider;

#[async_trait]
impl EnvironmentProvider for DockerProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: NetworkMode::ALL.to_vec(),
            allowlist_entry_types: ENTRY_TYPES.map(str::to_string).to_vec(),
            dynamic_network_policy: true,
            resource_fields: vec!["cpu".to_string(), "memory_mb".to_string()],
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
            host_endpoints: true,
            host_mounts: true,
            // An image built from a context; the daemon's socket, the network and the rest
            // change nothing installed.
            platform_params: Some(vec!["build_context".to_string()]),
        })
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        validate_against_capabilities(&self.capabilities()?, plan)?;
        check_phases(plan)?;
        let environments =
            std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
        for environment in environments {
            let config = Config::parse(&environment.params)?;
            if let Some(context) = &config.build_context {
                check_build_context(context)?;
            }
            // Refused with the plan, before any task runs, rather than at each open.
            let image = environment.setup.image.as_deref().map(str::trim);
            if image.is_none_or(str::is_empty) && config.build_context.is_none() {
                return Err(Error::invalid_input(IMAGE_REQUIRED));
            }
            workdir_of(&environment.setup)?;
        }
        Ok(())
    }

    async fn open(&self, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let config = Config::parse(&request.environment.params)?;
        let setup = &request.environment.setup;
        let workdir = workdir_of(setup)?;
        if let Some(context) = &config.build_context {
            check_build_context(context)?;
        }
        let image = match setup.image.as_deref().map(str::trim) {
            Some(image) if !image.is_empty() => Some(image.to_string()),
            _ if config.build_context.is_some() => None,
            _ => return Err(Error::invalid_input(IMAGE_REQUIRED)),
        };
        let baseline = request
            .baseline_network_policy
            .normalized()
            .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?;
        egress_of(&baseline)?;
        let attachment = Attachment::of(&baseline);
        let network = match attachment {
            Attachment::Shared => config.network.clone(),
            Attachment::Isolated => "none".to_string(),
        };
        let name = format!(
            "{NAME_PREFIX}{}-{}-{}",
            sanitise(&request.task_id),
            request.attempt,
            random_suffix()
        );
        // A container with its own loopback needs the forwarder: for the proxy (`none`) and
        // for host endpoints (any network but the host's, where the host listens itself).
        let forwarding = attachment == Attachment::Isolated
            || (!request.host_endpoints.is_empty() && network != "host");
        let (mut binds, endpoints) = if forwarding {
            endpoint_mounts(&request.host_endpoints)?
        } else {
            (Vec::new(), Vec::new())
        };
        let bundle = if forwarding {
            let bundle = blocking(ID, Bundle::current).await??;
            binds.extend(bundle.binds());
            Some(bundle)
        } else {
            None
        };
        binds.extend(mounts::host_mount_binds(&request.host_mounts)?);
        let egress = match attachment {
            Attachment::Isolated => {
                let host_map = config.host_map(&request.egress_hosts)?;
                let egress = Egress::create(&random_suffix(), host_map, &name)?;
                binds.push(egress.bind());
                Some(egress)
            }
            Attachment::Shared => None,
        };
        let launch = Launch {
            host: config.docker_host.clone(),
            image,
            build_context: config.build_context.clone(),
            pull: config.pull,
            container: name.clone(),
            body: container_body(request, &config, &workdir, &network, binds),
            workdir: workdir.clone(),
            deadline: setup
                .build_timeout_seconds
                .filter(|s| s.is_finite() && *s >= 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok()),
        };
        let docker = match crate::rt::spawn(launch.run()).await.and_then(|r| r) {
            Ok(docker) => docker,
            Err(e) => {
                if let Some(egress) = &egress {
                    if let Err(cleanup) = egress::remove_dir(egress.dir()) {
                        tracing::warn!(container = %name, "cleanup failed: {cleanup}");
                    }
                }
                return Err(e);
            }
        };
        let session_network = match (egress, bundle) {
            (Some(egress), Some(bundle)) => {
                ctx.register_secret(egress.token()).await;
                let dir = egress.dir().to_path_buf();
                let state = Arc::new(tokio::sync::Mutex::new(Isolation::new(
                    baseline, egress, bundle, endpoints,
                )));
                let started = crate::rt::spawn({
                    let (state, docker, name) = (state.clone(), docker.clone(), name.clone());
                    async move { state.lock().await.start(&docker, &name).await }
                })
                .await
                .and_then(|r| r);
                if let Err(e) = started {
                    let (docker, name) = (docker.clone(), name.clone());
                    crate::rt::spawn(async move {
                        if let Err(cleanup) = remove_container(&docker, &name).await {
                            tracing::warn!(container = %name, "cleanup failed: {cleanup}");
                        }
                        if let Err(cleanup) = state.lock().await.stop().await {
                            tracing::warn!(container = %name, "cleanup failed: {cleanup}");
                        }
                    })
                    .await?;
                    return Err(e);
                }
                SessionNetwork::Isolated { state, dir }
            }
            (None, Some(bundle)) => {
                let started = crate::rt::spawn({
                    let (docker, name) = (docker.clone(), name.clone());
                    async move { forwarder::start(&docker, &name, &bundle, &endpoints).await }
                })
                .await
                .and_then(|r| r);
                match started {
                    Ok(running) => SessionNetwork::Shared {
                        _forwarder: Some(running),
                    },
                    Err(e) => {
                        let (docker, name) = (docker.clone(), name.clone());
                        crate::rt::spawn(async move { remove_container(&docker, &name).await })
                            .await??;
                        return Err(e);
                    }
                }
            }
            _ => SessionNetwork::Shared { _forwarder: None },
        };
        tracing::debug!(provider = ID, container = %name, network = %network, "opened environment");
        Ok(Arc::new(DockerSession::new(
            docker,
            name,
            config.docker_host,
            workdir,
            request.resolved_env.clone(),
            session_network,
        )))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        if let Some(dir) = close_params.get("egress_dir").and_then(Value::as_str) {
            egress::remove_dir(std::path::Path::new(dir))?;
        }
        let Some(container) = close_params.get("container").and_then(Value::as_str) else {
            return Ok(());
        };
        if !container.starts_with(NAME_PREFIX) {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: refusing to remove `{container}`: not a container this \
                 provider creates"
            )));
        }
        let host = match close_params.get("docker_host").and_then(Value::as_str) {
            Some(host) => host.to_string(),
            None => Config::parse(&JsonMap::new())?.docker_host,
        };
        let container = container.to_string();
        crate::rt::spawn(async move {
            let docker = connect(&host).await?;
            match docker.inspect_container(&container, None).await {
                Ok(found) => {
                    let managed = found
                        .config
                        .and_then(|c| c.labels)
                        .and_then(|l| l.get(LABEL_MANAGED).cloned());
                    if managed.as_deref() != Some("true") {
                        return Err(Error::invalid_input(format!(
                            "environment `{ID}`: refusing to remove `{container}`: it has no \
                             `{LABEL_MANAGED}=true` label"
                        )));
                    }
                }
                Err(e) if status_of(&e) == Some(404) => return Ok(()),
                Err(e) => return Err(docker_error(&format!("inspecting `{container}`"), e)),
            }
            remove_container(&docker, &container).await
        })
        .await?
    }
}

/// The create body of a session's container (all but its image): keep-alive command, the
/// request's resolved bindings, working directory, labels, network and resources.
fn container_body(
    request: &OpenEnvironmentRequest,
    config: &Config,
    workdir: &str,
    network: &str,
    binds: Vec<String>,
) -> ContainerCreateBody {
    let resources = request.environment.resources.clone().unwrap_or_default();
    let labels = HashMap::from([
        (LABEL_RUN.to_string(), request.run_id.clone()),
        (LABEL_TASK.to_string(), request.task_id.clone()),
        (LABEL_ATTEMPT.to_string(), request.attempt.to_string()),
        (LABEL_MANAGED.to_string(), "true".to_string()),
    ]);
    ContainerCreateBody {
        cmd: Some(config.keep_alive_command.clone()),
        env: Some(
            request
                .resolved_env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        ),
        working_dir: Some(workdir.to_string()),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some(network.to_string()),
            binds: (!binds.is_empty()).then_some(binds),
            nano_cpus: resources.cpu.map(|cpu| (cpu * 1e9).round() as i64),
            memory: resources
                .memory_mb
                .map(|mb| i64::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)),
            auto_remove: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}
