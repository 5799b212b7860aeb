//! A session's Compose project in the engine: its network, volumes and sidecar containers,
//! started in dependency order and waited for as `docker compose up --wait` waits, and
//! removed again (module doc of `compose`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentcompass_egress::forward::Forward;
use agentcompass_plugin_api::{tracing, Error, Result};
use bollard::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, NetworkCreateRequest, NetworkingConfig,
    ResourcesUlimits, RestartPolicy, RestartPolicyNameEnum, VolumeCreateRequest,
};
use bollard::query_parameters::CreateContainerOptionsBuilder;

use super::health::{check_of, wait_completed, wait_for};
use super::hosts;
use super::model::{
    Condition, Dependency, Health, HealthSource, Image, Mount, Project, Service, MAIN,
};
use crate::container::{build_image, pull_if_missing, Recipe};
use crate::engine::{remove_container, status_of, Daemon, Engine};
use crate::forwarder::{self, Bundle, Running};

/// The label naming a container's service.
pub(crate) const LABEL_SERVICE: &str = "agentcompass.service";

/// How a session's project is started: names, labels and what its network policy adds.
pub(crate) struct StackSpec {
    pub(crate) engine: Engine,
    /// The main container's name: the project's network and the prefix of every name.
    pub(crate) name: String,
    /// The Compose file (for messages).
    pub(crate) file: String,
    /// The session's labels (run, task, attempt, managed).
    pub(crate) labels: HashMap<String, String>,
    /// The network admits nothing outside the project (every non-public baseline).
    pub(crate) internal: bool,
    /// Whether a missing named image is pulled (the provider's `pull`, unless the service
    /// says `pull_policy`).
    pub(crate) pull: bool,
    /// The network images are built on.
    pub(crate) build_network: String,
    /// Under a non-public baseline: the forwarder's and the proxy's binds, the proxy
    /// variables, the forwarder and its proxy port (every sidecar reaches out through it).
    pub(crate) egress: Option<SidecarEgress>,
    /// The containers' ulimits (a private Podman service's).
    pub(crate) ulimits: Option<Vec<ResourcesUlimits>>,
    /// For the sidecars that need a model: the forwarder's binds and the model endpoint's
    /// socket directory, and its forward (`env` unused: the variables are the service's).
    pub(crate) model: Option<SidecarEgress>,
}

/// What a sidecar gets under a non-public baseline.
pub(crate) struct SidecarEgress {
    pub(crate) binds: Vec<String>,
    pub(crate) env: Vec<String>,
    pub(crate) bundle: Arc<Bundle>,
    pub(crate) forwards: Vec<Forward>,
}

/// A started (or partly started) project.
pub(crate) struct Stack {
    /// The project's network.
    pub(crate) network: String,
    /// Sidecar containers by service, in start order.
    pub(crate) containers: Vec<(String, String)>,
    /// The project's volumes (named and anonymous).
    pub(crate) volumes: Vec<String>,
    /// The private copies of writable bind sources.
    pub(crate) copies: Option<PathBuf>,
    /// Each started service's health check (`None`: it has none).
    checks: BTreeMap<String, Option<Health>>,
    healthy: BTreeSet<String>,
    /// The sidecars' forwarders (held for their output tasks).
    forwarders: Vec<Running>,
    /// Started services' addresses that later containers get as hosts entries (module
    /// `hosts`: Podman only).
    pub(crate) addresses: Vec<(String, String)>,
}

impl Stack {
    /// A project with nothing in it (what a closed session keeps).
    pub(crate) fn empty() -> Stack {
        Stack {
            network: String::new(),
            containers: Vec::new(),
            volumes: Vec::new(),
            copies: None,
            checks: BTreeMap::new(),
            healthy: BTreeSet::new(),
            forwarders: Vec::new(),
            addresses: Vec::new(),
        }
    }

    /// Creates the project's network and named volumes; nothing runs yet.
    pub(crate) async fn create(
        docker: &Daemon,
        spec: &StackSpec,
        project: &Project,
    ) -> Result<Stack> {
        let network = spec.name.clone();
        let labels = spec.labels.clone();
        docker
            .create_network(NetworkCreateRequest {
                name: network.clone(),
                driver: Some("bridge".to_string()),
                internal: Some(spec.internal),
                labels: Some(labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(|e| {
                docker
                    .engine
                    .error(&format!("creating network `{network}`"), e)
            })?;
        let mut stack = Stack {
            network,
            ..Stack::empty()
        };
        for volume in &project.volumes {
            stack
                .volume(docker, spec, &format!("{}-{volume}", spec.name))
                .await?;
        }
        Ok(stack)
    }

    /// Creates the project volume `name`.
    async fn volume(&mut self, docker: &Daemon, spec: &StackSpec, name: &str) -> Result<()> {
        docker
            .create_volume(VolumeCreateRequest {
                name: Some(name.to_string()),
                labels: Some(spec.labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(|e| docker.engine.error(&format!("creating volume `{name}`"), e))?;
        self.volumes.push(name.to_string());
        Ok(())
    }

    /// Starts every sidecar in order, each after its dependencies' conditions hold.
    pub(crate) async fn start_sidecars(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        project: &Project,
    ) -> Result<()> {
        for service in &project.sidecars {
            self.await_dependencies(docker, spec, &service.depends_on)
                .await?;
            self.start_sidecar(docker, spec, service).await?;
        }
        Ok(())
    }

    /// Waits until each dependency's condition holds.
    pub(crate) async fn await_dependencies(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        dependencies: &[Dependency],
    ) -> Result<()> {
        for dependency in dependencies {
            let service = dependency.service.as_str();
            match dependency.condition {
                Condition::Started => {}
                Condition::Healthy => self.await_healthy(docker, spec, service).await?,
                Condition::CompletedSuccessfully => {
                    let container = self.container_of(service)?;
                    wait_completed(docker, &container, service, &spec.file).await?;
                }
            }
        }
        Ok(())
    }

    /// Waits until `service` is healthy (once); an error when it has no health check.
    async fn await_healthy(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        service: &str,
    ) -> Result<()> {
        if self.healthy.contains(service) {
            return Ok(());
        }
        let container = self.container_of(service)?;
        let Some(check) = self.checks.get(service).cloned().flatten() else {
            return Err(Error::invalid_input(format!(
                "{}: {}: a service waits for `{service}` to be healthy (`service_healthy`), \
                 but it has no health check",
                docker.engine, spec.file
            )));
        };
        wait_for(docker, &container, service, &spec.file, &check).await?;
        self.healthy.insert(service.to_string());
        Ok(())
    }

    /// The container of a started service.
    fn container_of(&self, service: &str) -> Result<String> {
        self.containers
            .iter()
            .find(|(s, _)| s == service)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| Error::environment(format!("service `{service}` was not started")))
    }

    /// As `up --wait`: every service with a health check (sidecars, and `main` in the
    /// container `main_container` when the file gives it one) healthy.
    pub(crate) async fn settle(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        main: &Service,
        main_container: &str,
    ) -> Result<()> {
        let services: Vec<String> = self.containers.iter().map(|(s, _)| s.clone()).collect();
        for service in services {
            if self.checks.get(&service).is_some_and(Option::is_some) {
                self.await_healthy(docker, spec, &service).await?;
            }
        }
        if let HealthSource::Declared(check) = &main.health {
            wait_for(docker, main_container, MAIN, &spec.file, check).await?;
        }
        Ok(())
    }

    /// Builds or finds one sidecar's image, creates and starts its container (and, under a
    /// non-public baseline, its forwarder).
    async fn start_sidecar(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        service: &Service,
    ) -> Result<()> {
        let image = match &service.image {
            Some(Image::Build(build)) => {
                let recipe = Recipe {
                    context: build.context.clone(),
                    dockerfile: build.dockerfile.clone(),
                    args: build.args.clone(),
                };
                build_image(docker, &recipe, None, &spec.build_network)
                    .await?
                    .tag
            }
            Some(Image::Named(image)) => {
                pull_if_missing(docker, image, service.pull.unwrap_or(spec.pull)).await?;
                image.clone()
            }
            None => {
                return Err(Error::environment(format!(
                    "service `{}` has no image",
                    service.name
                )))
            }
        };
        let binds = self.binds(docker, spec, service).await?;
        let body = self.sidecar_body(spec, service, &image, binds);
        let container = format!("{}-{}", spec.name, service.name);
        let options = CreateContainerOptionsBuilder::new()
            .name(&container)
            .build();
        docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| {
                docker.engine.error(
                    &format!("creating the container of service `{}`", service.name),
                    e,
                )
            })?;
        self.containers
            .push((service.name.clone(), container.clone()));
        docker
            .start_container(&container, None)
            .await
            .map_err(|e| {
                docker.engine.error(
                    &format!("starting the container of service `{}`", service.name),
                    e,
                )
            })?;
        if let Some(ip) = hosts::address_of(docker, &container, &self.network).await {
            self.addresses.push((service.name.clone(), ip));
        }
        let check = check_of(docker, &image, &service.health).await?;
        self.checks.insert(service.name.clone(), check);
        let model = spec.model.as_ref().filter(|_| service.needs_model);
        let bundle = spec.egress.as_ref().or(model).map(|e| &e.bundle);
        let forwards: Vec<Forward> = spec
            .egress
            .iter()
            .chain(model)
            .flat_map(|e| e.forwards.iter().cloned())
            .collect();
        if let (Some(bundle), false) = (bundle, forwards.is_empty()) {
            let running = forwarder::start(docker, &container, bundle, &forwards).await?;
            self.forwarders.push(running);
        }
        tracing::debug!(provider = docker.engine.id(), service = %service.name, container = %container, "started a service");
        Ok(())
    }

    /// A sidecar's create body.
    fn sidecar_body(
        &self,
        spec: &StackSpec,
        service: &Service,
        image: &str,
        mut binds: Vec<String>,
    ) -> ContainerCreateBody {
        let mut labels = spec.labels.clone();
        labels.extend(service.labels.clone());
        labels.insert(LABEL_SERVICE.to_string(), service.name.clone());
        let mut env: Vec<String> = service
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if let Some(egress) = &spec.egress {
            binds.extend(egress.binds.iter().cloned());
            env.extend(egress.env.iter().cloned());
        }
        if let (true, Some(model)) = (service.needs_model, &spec.model) {
            let new: Vec<String> = model
                .binds
                .iter()
                .filter(|b| !binds.contains(b))
                .cloned()
                .collect();
            binds.extend(new);
        }
        ContainerCreateBody {
            image: Some(image.to_string()),
            cmd: service.command.clone(),
            entrypoint: service.entrypoint.clone(),
            env: Some(env),
            working_dir: service.working_dir.clone(),
            user: service.user.clone(),
            labels: Some(labels),
            hostname: service.hostname.clone(),
            tty: Some(service.tty),
            open_stdin: Some(service.stdin_open),
            host_config: Some(HostConfig {
                network_mode: Some(self.network.clone()),
                binds: (!binds.is_empty()).then_some(binds),
                init: service.init.then_some(true),
                shm_size: service.shm_size,
                restart_policy: service.restart.as_deref().map(restart_policy),
                ulimits: spec.ulimits.clone(),
                extra_hosts: hosts::extra_hosts(&self.addresses),
                auto_remove: Some(false),
                ..Default::default()
            }),
            networking_config: Some(self.aliases(&service.name)),
            ..Default::default()
        }
    }

    /// The endpoint of a service on the project network: reached by its name.
    pub(crate) fn aliases(&self, service: &str) -> NetworkingConfig {
        NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                self.network.clone(),
                EndpointSettings {
                    aliases: Some(vec![service.to_string()]),
                    ..Default::default()
                },
            )])),
        }
    }

    /// The binds of a service's mounts: project volumes by their session name, read-only
    /// bind sources as they are, writable ones as private copies (so concurrent tasks never
    /// share a file, and the task directory is never written).
    pub(crate) async fn binds(
        &mut self,
        docker: &Daemon,
        spec: &StackSpec,
        service: &Service,
    ) -> Result<Vec<String>> {
        let mut binds = Vec::new();
        for (i, mount) in service.mounts.iter().enumerate() {
            match mount {
                Mount::Volume {
                    name,
                    target,
                    read_only,
                } => {
                    binds.push(bind(&format!("{}-{name}", spec.name), target, *read_only));
                }
                Mount::Anonymous { target } => {
                    let name = format!("{}-{}-{i}", spec.name, service.name);
                    self.volume(docker, spec, &name).await?;
                    binds.push(bind(&name, target, false));
                }
                Mount::Bind {
                    source,
                    target,
                    read_only: true,
                } => {
                    binds.push(bind(&source.display().to_string(), target, true));
                }
                Mount::Bind {
                    source,
                    target,
                    read_only: false,
                } => {
                    let copy = self.copy(spec, source, &format!("{}-{i}", service.name))?;
                    binds.push(bind(&copy.display().to_string(), target, false));
                }
            }
        }
        Ok(binds)
    }

    /// A private copy of `source` named `name` under the session's copies directory.
    fn copy(&mut self, spec: &StackSpec, source: &Path, name: &str) -> Result<PathBuf> {
        let dir = match &self.copies {
            Some(dir) => dir.clone(),
            None => {
                let dir = std::env::temp_dir().join(format!("{}-binds", spec.name));
                std::fs::create_dir_all(&dir).map_err(|e| {
                    Error::environment(format!(
                        "{}: cannot create `{}`: {e}",
                        spec.engine,
                        dir.display()
                    ))
                })?;
                self.copies = Some(dir.clone());
                dir
            }
        };
        let copy = dir.join(name);
        copy_tree(source, &copy).map_err(|e| {
            Error::environment(format!(
                "{}: cannot copy the bind source `{}`: {e}",
                spec.engine,
                source.display()
            ))
        })?;
        Ok(copy)
    }

    /// Removes every container, volume and copy of the project, then its network; every
    /// step is tried, the first failure returned.
    pub(crate) async fn down(&mut self, docker: &Daemon) -> Result<()> {
        self.forwarders.clear();
        let containers: Vec<String> = self.containers.drain(..).map(|(_, c)| c).collect();
        let volumes: Vec<String> = self.volumes.drain(..).collect();
        let network = std::mem::take(&mut self.network);
        let network = (!network.is_empty()).then_some(network);
        let outcome = remove_all(docker, &containers, &volumes, network.as_deref()).await;
        if let Some(dir) = self.copies.take() {
            remove_copies(&dir)?;
        }
        outcome
    }
}

/// Removes containers, then volumes, then a network (each missing one is fine); the first
/// failure after trying them all.
pub(crate) async fn remove_all(
    docker: &Daemon,
    containers: &[String],
    volumes: &[String],
    network: Option<&str>,
) -> Result<()> {
    let mut first = None;
    for container in containers {
        if let Err(e) = remove_container(docker, container).await {
            tracing::warn!(container = %container, "cleanup failed: {e}");
            first.get_or_insert(e);
        }
    }
    for volume in volumes {
        let removed = docker
            .remove_volume(
                volume,
                Some(
                    bollard::query_parameters::RemoveVolumeOptionsBuilder::new()
                        .force(true)
                        .build(),
                ),
            )
            .await;
        match removed {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => {
                first.get_or_insert(
                    docker
                        .engine
                        .error(&format!("removing volume `{volume}`"), e),
                );
            }
        }
    }
    if let Some(network) = network {
        match docker.remove_network(network).await {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => {
                first.get_or_insert(
                    docker
                        .engine
                        .error(&format!("removing network `{network}`"), e),
                );
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// Removes a session's bind copies (a directory this provider names only).
pub(crate) fn remove_copies(dir: &Path) -> Result<()> {
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(crate::NAME_PREFIX) && n.ends_with("-binds"));
    if !named || dir.parent() != Some(std::env::temp_dir().as_path()) {
        return Err(Error::invalid_input(format!(
            "refusing to remove `{}`: not a directory this provider creates",
            dir.display()
        )));
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::environment(format!(
            "cannot remove `{}`: {e}",
            dir.display()
        ))),
    }
}

/// `SOURCE:TARGET[:ro]`.
fn bind(source: &str, target: &str, read_only: bool) -> String {
    if read_only {
        format!("{source}:{target}:ro")
    } else {
        format!("{source}:{target}")
    }
}

/// Compose's `restart` as Docker's policy (`on-failure[:N]`).
fn restart_policy(restart: &str) -> RestartPolicy {
    let (name, count) = match restart.split_once(':') {
        Some((name, count)) => (name, count.parse().ok()),
        None => (restart, None),
    };
    let name = match name {
        "always" => RestartPolicyNameEnum::ALWAYS,
        "unless-stopped" => RestartPolicyNameEnum::UNLESS_STOPPED,
        "on-failure" => RestartPolicyNameEnum::ON_FAILURE,
        _ => RestartPolicyNameEnum::NO,
    };
    RestartPolicy {
        name: Some(name),
        maximum_retry_count: count,
    }
}

/// Copies a file or directory tree (modes kept, symlinks as symlinks).
fn copy_tree(source: &Path, dest: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(source)?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(source)?, dest)
    } else if meta.is_dir() {
        std::fs::create_dir_all(dest)?;
        for entry in std::fs::read_dir(source)? {
            let entry = entry?;
            copy_tree(&entry.path(), &dest.join(entry.file_name()))?;
        }
        std::fs::set_permissions(dest, meta.permissions())
    } else {
        std::fs::copy(source, dest).map(|_| ())
    }
}
