//! The container environment providers `docker` and `podman`, as a plugin: one keep-alive
//! container per task attempt, driven through the Docker Engine API (bollard) — a Docker
//! Engine's, or Podman's compatible one (module `podman`: a private service when none is
//! named, the differences; module `engine`: which engine a client talks to). Everything below
//! holds for both.
//!
//! - Image (module `config::image_source`): the `build_context` parameter (an absolute host
//!   directory holding a `Dockerfile`) first, then `setup.image`, then `setup.build_context`
//!   (a task's own definition: a Harbor task's `environment/`). A named image missing locally
//!   is pulled (`pull = true`, the default, as Harbor pulls a task's `docker_image`); with
//!   `pull = false` it must exist locally.
//! - Built image: the context is archived (sorted, modes kept, times zeroed) and the image
//!   built from it (classic builder, no pull, on the `network` parameter's network: builds are
//!   never network-restricted, as in Harbor; the task's policy applies from the container's
//!   start), tagged `setup.image` if given with the parameter, else
//!   `agentcompass-build/ctx-<first 16 hex digits of the archive's sha256>:latest` — named by
//!   its content, so identical environments build once per machine — and labelled
//!   `agentcompass.context_sha256=<sha256>`. An image with that tag and label is reused
//!   without building; one build of a context at a time per machine (`build_lock`). A failed
//!   build is an error quoting the failing instruction, the builder's error and the
//!   instruction's last output lines.
//! - Container: named `agentcompass-<task>-<attempt>-<random>`, labelled
//!   `agentcompass.run_id`, `agentcompass.run_dir` (inside a run), `agentcompass.task_id`,
//!   `agentcompass.attempt` and `agentcompass.managed=true`; its command is `keep_alive_command`; its environment the
//!   request's resolved bindings; its working directory `setup.workdir` (else the image's
//!   `WORKDIR` other than `/`, else `/app`).
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
mod build_lock;
mod build_log;
mod close;
mod compose;
mod config;
mod container;
mod egress;
mod engine;
mod exec;
mod forwarder;
mod isolation;
mod mounts;
mod network;
mod open;
mod podman;
mod rt;
mod session;
#[cfg(test)]
mod tests;
mod transfer;

use std::collections::HashMap;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, EnvironmentRole, ExecutionPlan, NetworkMode,
    OpenEnvironmentRequest, ProviderCapabilities, ResourceRequirements, PORT_ENTRY_TYPE,
};
use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, PluginBuilder, SessionRef,
};
use agentcompass_plugin_api::{tracing, ErrorKind, Result};
use bollard::models::{ContainerCreateBody, DeviceRequest, HostConfig};
use serde_json::Value;

use config::{config_schema, image_source, workdir_of, Address, Config};
pub use engine::Engine;
use network::check_phases;

/// What both providers do.
const WHAT: &str = "image from setup.image, or built from a task's Dockerfile context under \
     the build timeout; keep-alive container, exec, archive file transfer, no-network = network \
     none, allowlist through the host's egress proxy, per-phase policies among the non-public \
     modes, host endpoints";

/// Name prefix of the containers this provider creates.
pub(crate) const NAME_PREFIX: &str = "agentcompass-";

/// Label keys.
pub(crate) const LABEL_RUN: &str = "agentcompass.run_id";
/// The run's directory: what tells apart two runs started in the same second (their run ids,
/// `YYYYMMDD_HHMMSS` as upstream's, are then equal).
pub(crate) const LABEL_RUN_DIR: &str = "agentcompass.run_dir";
pub(crate) const LABEL_TASK: &str = "agentcompass.task_id";
pub(crate) const LABEL_ATTEMPT: &str = "agentcompass.attempt";
pub(crate) const LABEL_MANAGED: &str = "agentcompass.managed";
/// Which environment of the attempt (`task` or `evaluation`).
pub(crate) const LABEL_ROLE: &str = "agentcompass.role";

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

fn register(plugin: &mut PluginBuilder) {
    plugin.environment(info(Engine::Docker), || {
        Ok(ContainerProvider::new(Engine::Docker))
    });
    plugin.environment(info(Engine::Podman), || {
        Ok(ContainerProvider::new(Engine::Podman))
    });
}

agentcompass_plugin_api::export_plugin!(register);

/// What a provider says about itself.
pub fn info(engine: Engine) -> ComponentInfo {
    let description = match engine {
        Engine::Docker => format!("Containers through the Docker Engine API: {WHAT}"),
        Engine::Podman => format!(
            "Containers in Podman (rootful or rootless; a private `podman system service` for \
             the run unless one is named): {WHAT}"
        ),
    };
    ComponentInfo::new(ComponentKind::Environment, engine.id(), description)
        .with_schema(config_schema(engine))
}

/// A container provider: `docker` or `podman`, the same code over the engine chosen when it
/// is registered.
pub struct ContainerProvider {
    pub(crate) engine: Engine,
    /// Podman's private services and what each engine can enforce (unused for Docker).
    pub(crate) services: Arc<podman::Services>,
}

impl ContainerProvider {
    /// The provider of `engine`.
    pub fn new(engine: Engine) -> Self {
        ContainerProvider {
            engine,
            services: Arc::new(podman::Services::default()),
        }
    }

    /// The resource fields the engine applies: CPUs and memory, and GPUs in Docker (its
    /// device requests; Podman's compatible API has none, as Harbor finds).
    fn resource_fields(&self) -> Vec<String> {
        let mut fields = vec!["cpu".to_string(), "memory_mb".to_string()];
        if self.engine == Engine::Docker {
            fields.push("gpu".to_string());
        }
        fields
    }

    /// The engine's address for `config`: the given one, or the private Podman service's
    /// (started on first use). Blocking.
    pub(crate) fn address_now(services: &podman::Services, config: &Config) -> Result<String> {
        match &config.address {
            Address::Given(address) => Ok(address.clone()),
            Address::PrivateService { program } => services.private_address(program),
        }
    }

    /// [`ContainerProvider::address_now`] off the async executor.
    pub(crate) async fn address(&self, config: &Config) -> Result<String> {
        if let Address::Given(address) = &config.address {
            return Ok(address.clone());
        }
        let (services, config) = (self.services.clone(), config.clone());
        blocking(self.engine.id(), move || {
            Self::address_now(&services, &config)
        })
        .await?
    }
}

#[async_trait]
impl EnvironmentProvider for ContainerProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: NetworkMode::ALL.to_vec(),
            allowlist_entry_types: ENTRY_TYPES.map(str::to_string).to_vec(),
            dynamic_network_policy: true,
            resource_fields: self.resource_fields(),
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
            host_endpoints: true,
            host_mounts: true,
            // An image built from a context; the daemon's socket, the network and the rest
            // change nothing installed.
            platform_params: Some(vec!["build_context".to_string()]),
            builds_images: true,
            exec_user: true,
            compose: true,
        })
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        let engine = self.engine;
        validate_against_capabilities(&self.capabilities()?, plan)?;
        check_phases(engine, plan)?;
        let environments =
            std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
        for environment in environments {
            let config = Config::parse(engine, &environment.params)?;
            // Refused with the plan, before any task runs, rather than at each open.
            let source = image_source(engine, &config, &environment.setup)?;
            workdir_of(engine, &environment.setup)?;
            if let Some(compose) = &environment.setup.compose {
                let context = source.build_context.as_deref();
                compose::load(
                    engine,
                    compose,
                    context,
                    &|name| std::env::var(name).ok(),
                    None,
                )?;
            }
            // Whether Podman can enforce the limits is the engine's to say (rootless on cgroup
            // v1 cannot): asked once per engine, and only when a plan sets limits.
            let limited = environment
                .resources
                .as_ref()
                .filter(|r| r.cpu.is_some() || r.memory_mb.is_some());
            // Asked where the run is planned; an engine that cannot be reached here (no
            // Podman on a Slurm login node) is left to each open, which asks again.
            if let (Engine::Podman, Some(resources)) = (engine, limited) {
                let checked = Self::address_now(&self.services, &config)
                    .and_then(|address| self.services.check_resources(&address, resources));
                match checked {
                    Err(e) if e.kind == ErrorKind::Unsupported => return Err(e),
                    Err(e) => tracing::debug!(provider = engine.id(), "limits not checked: {e}"),
                    Ok(_) => {}
                }
            }
        }
        Ok(())
    }

    async fn open(&self, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        open::open(self, ctx, request).await
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        close::close(self, close_params).await
    }
}

/// A role's label value.
pub(crate) fn role_name(role: EnvironmentRole) -> &'static str {
    match role {
        EnvironmentRole::Task => "task",
        EnvironmentRole::Evaluation => "evaluation",
    }
}

/// Harbor's GPU request (`gpus > 0`): that many NVIDIA devices with the `gpu` capability, as
/// its Compose `deploy.resources.reservations.devices` asks (the NVIDIA Container Toolkit
/// must be installed; the engine says so when it is not).
fn gpu_request(resources: &ResourceRequirements) -> Option<Vec<DeviceRequest>> {
    let count = resources.gpu.filter(|count| *count > 0)?;
    Some(vec![DeviceRequest {
        driver: Some("nvidia".to_string()),
        count: Some(i64::from(count)),
        capabilities: Some(vec![vec!["gpu".to_string()]]),
        ..Default::default()
    }])
}

/// The create body of a session's container (all but its image): keep-alive command, the
/// request's resolved bindings, working directory, labels, network and resources.
pub(crate) fn container_body(
    request: &OpenEnvironmentRequest,
    resources: &ResourceRequirements,
    config: &Config,
    workdir: &str,
    network: &str,
    binds: Vec<String>,
) -> ContainerCreateBody {
    let mut labels = HashMap::from([
        (LABEL_RUN.to_string(), request.run_id.clone()),
        (LABEL_TASK.to_string(), request.task_id.clone()),
        (LABEL_ATTEMPT.to_string(), request.attempt.to_string()),
        (LABEL_ROLE.to_string(), role_name(request.role).to_string()),
        (LABEL_MANAGED.to_string(), "true".to_string()),
    ]);
    if let Some(dir) = &request.run_dir {
        labels.insert(LABEL_RUN_DIR.to_string(), dir.clone());
    }
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
            device_requests: gpu_request(resources),
            auto_remove: Some(false),
            // Only a service this process started is known to have (at least) its limits.
            ulimits: matches!(config.address, Address::PrivateService { .. }).then(podman::ulimits),
            ..Default::default()
        }),
        ..Default::default()
    }
}
