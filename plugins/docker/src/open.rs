//! Opening a session: the image, the container and its network (module doc of the crate),
//! and for a Compose task the project around it (module `compose`): its network, volumes
//! and sidecars first, `main` in it, then every health check. Whatever an open started is
//! removed again when it fails.

use std::sync::Arc;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    NetworkPolicy, OpenEnvironmentRequest, ResourceRequirements,
};
use agentcompass_plugin_api::sdk::provider::{blocking, random_suffix, sanitise};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{tracing, Error, Result};
use bollard::models::ContainerCreateBody;

use crate::compose::stack::{SidecarEgress, Stack, StackSpec};
use crate::compose::up::{abandon_stack, main_overrides, settle, up};
use crate::compose::{self, Project};
use crate::config::{image_source, workdir_of, Address, Config, ImageSource};
use crate::container::Launch;
use crate::egress::{self, Egress, PROXY_PORT};
use crate::engine::{remove_container, Daemon, Engine};
use crate::forwarder::{self, Bundle};
use crate::isolation::{endpoint_mounts, start_network, stop_network};
use crate::network::{egress_of, Attachment};
use crate::session::{ContainerSession, EngineAddress};
use crate::{container_body, mounts, ContainerProvider, NAME_PREFIX};

/// What an open settled before anything is created: the container's name, image, network
/// and working directory, and the task's Compose project.
struct Prepared {
    engine: Engine,
    config: Config,
    name: String,
    workdir: String,
    source: ImageSource,
    baseline: NetworkPolicy,
    attachment: Attachment,
    /// The Compose file and its project.
    project: Option<(String, Arc<Project>)>,
    /// The container's network: a project's own, the `network` parameter, or `none`.
    network: String,
    address: String,
    resources: ResourceRequirements,
    store: Option<String>,
    deadline: Option<Duration>,
    /// The task named no working directory: the image's `WORKDIR` is used.
    workdir_from_image: bool,
}

/// What the container's network needs on the host: binds, endpoint forwards, the forwarder
/// bundle and the egress directory.
struct Wiring {
    binds: Vec<String>,
    endpoints: Vec<agentcompass_egress::forward::Forward>,
    bundle: Option<Arc<Bundle>>,
    egress: Option<Egress>,
}

/// Opens a session of `provider` for `request`.
pub(crate) async fn open(
    provider: &ContainerProvider,
    ctx: &Ctx,
    request: &OpenEnvironmentRequest,
) -> Result<SessionRef> {
    let prepared = prepare(provider, ctx, request).await?;
    let wiring = wire(&prepared, ctx, request).await?;
    let (engine, name) = (prepared.engine, prepared.name.clone());
    let Wiring {
        binds,
        endpoints,
        bundle,
        egress,
    } = wiring;
    let mut body = container_body(
        request,
        &prepared.resources,
        &prepared.config,
        &prepared.workdir,
        &prepared.network,
        binds,
    );
    let spec = stack_spec(&prepared, &body, egress.as_ref(), bundle.as_ref(), request)?;
    // The project's network, volumes and sidecars, and `main`'s dependencies.
    let stack = match start_project(&prepared, spec.as_ref(), &mut body, request).await {
        Ok(stack) => stack,
        Err(e) => {
            abandon_egress(engine, egress.as_ref(), &name);
            return Err(e);
        }
    };
    let (docker, started) = match crate::rt::spawn(launch(&prepared, body))
        .await
        .and_then(|r| r)
    {
        Ok(launched) => launched,
        Err(e) => {
            abandon_stack(engine, &prepared.address, stack).await;
            abandon_egress(engine, egress.as_ref(), &name);
            return Err(e);
        }
    };
    let baseline = prepared.baseline.clone();
    let session_network =
        match start_network(&docker, &name, baseline, egress, bundle, endpoints).await {
            Ok(network) => network,
            Err(e) => {
                abandon_stack(engine, &prepared.address, stack).await;
                return Err(e);
            }
        };
    let stack = match settle_project(&prepared, &docker, stack, spec).await {
        Ok(stack) => stack,
        Err(e) => {
            let (docker, container) = (docker.clone(), name.clone());
            crate::rt::spawn(async move { remove_container(&docker, &container).await }).await??;
            stop_network(&session_network).await;
            return Err(e);
        }
    };
    tracing::debug!(provider = engine.id(), container = %name, network = %prepared.network, "opened environment");
    let session = ContainerSession::new(
        docker,
        name,
        origin(&prepared),
        started,
        request.resolved_env.clone(),
        session_network,
    );
    Ok(Arc::new(match stack {
        Some(stack) => session.with_stack(stack),
        None => session,
    }))
}

/// Starts the task's project, if it has one (module `compose::up`), and adds to `main`'s
/// create body what the file gives it; on failure nothing of it is left.
async fn start_project(
    prepared: &Prepared,
    spec: Option<&Arc<StackSpec>>,
    body: &mut ContainerCreateBody,
    request: &OpenEnvironmentRequest,
) -> Result<Option<Stack>> {
    let (Some(spec), Some((_, project))) = (spec, &prepared.project) else {
        return Ok(None);
    };
    let started = up(
        prepared.engine,
        prepared.address.clone(),
        spec.clone(),
        project.clone(),
        prepared.deadline,
    );
    let (stack, main_binds) = crate::rt::spawn(started).await??;
    main_overrides(body, &stack, project, &request.resolved_env);
    if let Some(host) = body.host_config.as_mut() {
        host.binds.get_or_insert_with(Vec::new).extend(main_binds);
    }
    Ok(Some(stack))
}

/// Waits, once `main` runs, for every health check of the project (module `compose::up`);
/// on failure the project is removed (the caller removes `main`).
async fn settle_project(
    prepared: &Prepared,
    docker: &Daemon,
    stack: Option<Stack>,
    spec: Option<Arc<StackSpec>>,
) -> Result<Option<Stack>> {
    let (Some(stack), Some(spec), Some((_, project))) = (stack, spec, &prepared.project) else {
        return Ok(None);
    };
    let settled = settle(
        docker.clone(),
        stack,
        spec,
        project.clone(),
        prepared.name.clone(),
        prepared.deadline,
    );
    crate::rt::spawn(settled).await?.map(Some)
}

/// Settles everything an open decides before creating anything (a Compose file is read,
/// and the values it takes from the host registered as secrets, here).
async fn prepare(
    provider: &ContainerProvider,
    ctx: &Ctx,
    request: &OpenEnvironmentRequest,
) -> Result<Prepared> {
    let engine = provider.engine;
    let config = Config::parse(engine, &request.environment.params)?;
    let setup = &request.environment.setup;
    let workdir = workdir_of(engine, setup)?;
    let source = image_source(engine, &config, setup)?;
    let baseline = request
        .baseline_network_policy
        .normalized()
        .map_err(|e| Error::invalid_input(format!("environment `{engine}`: {e}")))?;
    egress_of(engine, &baseline)?;
    let attachment = Attachment::of(&baseline);
    let name = format!(
        "{NAME_PREFIX}{}-{}-{}",
        sanitise(&request.task_id),
        request.attempt,
        random_suffix()
    );
    let project = match &setup.compose {
        Some(compose) => {
            let model = request.model_endpoint.as_ref();
            let context = source.build_context.as_deref();
            let loaded = compose::load(engine, compose, context, &host_env, model)?;
            let needing = loaded
                .project
                .sidecars
                .iter()
                .chain(std::iter::once(&loaded.project.main))
                .find(|s| s.needs_model);
            if let (Some(service), None) = (needing, model) {
                return Err(Error::unsupported(format!(
                    "{engine}: {}: service `{}` names a model key, but this attempt serves no \
                     model endpoint to hand it",
                    compose.file, service.name
                )));
            }
            for secret in &loaded.secrets {
                ctx.register_secret(secret).await;
            }
            Some((compose.file.clone(), Arc::new(loaded.project)))
        }
        None => None,
    };
    let network = match (&project, attachment) {
        // The project's own network, named as its main container.
        (Some(_), _) => name.clone(),
        (None, Attachment::Shared) => config.network.clone(),
        (None, Attachment::Isolated) => "none".to_string(),
    };
    let address = provider.address(&config).await?;
    let (resources, store) = engine_facts(provider, request, &address).await?;
    let deadline = setup
        .build_timeout_seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok());
    Ok(Prepared {
        engine,
        config,
        name,
        workdir,
        source,
        baseline,
        attachment,
        project,
        network,
        address,
        resources,
        store,
        deadline,
        workdir_from_image: setup.workdir.is_none(),
    })
}

/// The host side of the container's network: a container with its own loopback needs the
/// forwarder — for the proxy (isolated) and for host endpoints (any network but the host's,
/// where the host listens itself); an isolated one its egress directory (whose token is
/// registered as a secret).
async fn wire(prepared: &Prepared, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<Wiring> {
    let engine = prepared.engine;
    let isolated = prepared.attachment == Attachment::Isolated;
    let forwarding = isolated || (!request.host_endpoints.is_empty() && prepared.network != "host");
    let (mut binds, endpoints) = if forwarding {
        endpoint_mounts(engine, &request.host_endpoints)?
    } else {
        (Vec::new(), Vec::new())
    };
    let bundle = if forwarding {
        let bundle = blocking(engine.id(), move || Bundle::current(engine)).await??;
        binds.extend(bundle.binds());
        Some(bundle)
    } else {
        None
    };
    binds.extend(mounts::host_mount_binds(engine, &request.host_mounts)?);
    let egress = if isolated {
        let host_map = prepared.config.host_map(&request.egress_hosts)?;
        let mut egress = Egress::create(engine, &random_suffix(), host_map, &prepared.name)?;
        if let Some((_, project)) = &prepared.project {
            egress.reach_directly(project.service_names());
        }
        binds.push(egress.bind());
        ctx.register_secret(egress.token()).await;
        Some(egress)
    } else {
        None
    };
    Ok(Wiring {
        binds,
        endpoints,
        bundle,
        egress,
    })
}

/// How the project is started, when the task has one. Sidecars reach out through the proxy
/// by its variables, fixed when they start: under a baseline with egress (`allowlist`) only;
/// under `no-network` a service reaches its peers and nothing else, with no proxy in the way.
fn stack_spec(
    prepared: &Prepared,
    body: &ContainerCreateBody,
    egress: Option<&Egress>,
    bundle: Option<&Arc<Bundle>>,
    request: &OpenEnvironmentRequest,
) -> Result<Option<Arc<StackSpec>>> {
    let Some((file, _)) = &prepared.project else {
        return Ok(None);
    };
    let proxied = egress_of(prepared.engine, &prepared.baseline)?.is_some();
    let egress = match (egress, bundle) {
        (Some(egress), Some(bundle)) if proxied => Some(SidecarEgress {
            binds: bundle
                .binds()
                .into_iter()
                .chain(std::iter::once(egress.bind()))
                .collect(),
            env: egress
                .env()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            bundle: bundle.clone(),
            forwards: vec![forwarder::forward(PROXY_PORT, Egress::container_socket())],
        }),
        _ => None,
    };
    Ok(Some(Arc::new(StackSpec {
        engine: prepared.engine,
        name: prepared.name.clone(),
        file: file.clone(),
        labels: body.labels.clone().unwrap_or_default(),
        internal: prepared.attachment == Attachment::Isolated,
        pull: prepared.config.pull,
        build_network: prepared.config.network.clone(),
        egress,
        ulimits: body.host_config.as_ref().and_then(|h| h.ulimits.clone()),
        model: sidecar_model(prepared, bundle, request)?,
    })))
}

/// What a sidecar that needs a model gets: the run's model endpoint (the host endpoint
/// `model`) forwarded to its own loopback.
fn sidecar_model(
    prepared: &Prepared,
    bundle: Option<&Arc<Bundle>>,
    request: &OpenEnvironmentRequest,
) -> Result<Option<SidecarEgress>> {
    let endpoint = request.host_endpoints.iter().find(|e| e.name == "model");
    let (Some(endpoint), Some(bundle)) = (endpoint, bundle) else {
        return Ok(None);
    };
    let (binds, forwards) = endpoint_mounts(prepared.engine, std::slice::from_ref(endpoint))?;
    Ok(Some(SidecarEgress {
        binds: bundle.binds().into_iter().chain(binds).collect(),
        env: Vec::new(),
        bundle: bundle.clone(),
        forwards,
    }))
}

/// Builds or finds `main`'s image and starts it (module `container`), on the provider
/// runtime.
fn launch(
    prepared: &Prepared,
    body: ContainerCreateBody,
) -> impl std::future::Future<Output = Result<(Daemon, crate::container::Started)>> {
    Launch {
        engine: prepared.engine,
        host: prepared.address.clone(),
        image: prepared.source.image.clone(),
        build_context: prepared.source.build_context.clone(),
        pull: prepared.config.pull,
        build_network: prepared.config.network.clone(),
        container: prepared.name.clone(),
        body,
        workdir: prepared.workdir.clone(),
        image_workdir: prepared.workdir_from_image,
        deadline: prepared.deadline,
    }
    .run()
}

/// Where the session's engine is, for its close parameters.
fn origin(prepared: &Prepared) -> EngineAddress {
    EngineAddress {
        address: prepared.address.clone(),
        store: prepared.store.clone(),
        private_program: match &prepared.config.address {
            Address::PrivateService { program } => Some(program.clone()),
            Address::Given(_) => None,
        },
    }
}

/// The host's environment (the interpolation source of a Compose file).
fn host_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The resources the engine applies (Podman's `auto`: what it cannot enforce runs
/// unlimited) and, for Podman, its store (which the close parameters record).
async fn engine_facts(
    provider: &ContainerProvider,
    request: &OpenEnvironmentRequest,
    address: &str,
) -> Result<(ResourceRequirements, Option<String>)> {
    let engine = provider.engine;
    // The plan was checked, but a session may be opened without one (and a limit the
    // engine ignores would run the task unlimited).
    let limited = request
        .environment
        .resources
        .clone()
        .filter(|r| r.cpu.is_some() || r.memory_mb.is_some());
    let mut resources = request.environment.resources.clone().unwrap_or_default();
    let Engine::Podman = engine else {
        return Ok((resources, None));
    };
    let (services, at) = (provider.services.clone(), address.to_string());
    let (facts, unenforced) = blocking(engine.id(), move || {
        let unenforced = match &limited {
            Some(resources) => services.check_resources(&at, resources)?,
            None => Vec::new(),
        };
        Ok::<_, Error>((services.facts(&at)?, unenforced))
    })
    .await??;
    for field in unenforced {
        tracing::debug!(provider = engine.id(), field, "limit not enforced here");
        match field {
            "cpu" => resources.cpu = None,
            _ => resources.memory_mb = None,
        }
    }
    Ok((resources, Some(facts.graph_root.clone())))
}

/// Removes the egress directory of a session that did not open.
fn abandon_egress(engine: Engine, egress: Option<&Egress>, name: &str) {
    if let Some(egress) = egress {
        if let Err(cleanup) = egress::remove_dir(engine, egress.dir()) {
            tracing::warn!(container = %name, "cleanup failed: {cleanup}");
        }
    }
}
