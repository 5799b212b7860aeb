//! Releasing a session from its persisted close parameters (crash recovery, `env close`):
//! its container, the Compose project around it (sidecars, network, volumes, bind copies)
//! and its egress directory — only what this provider named and labelled
//! `agentcompass.managed=true`.

use agentcompass_plugin_api::contracts::{EnvironmentRole, JsonMap, OPENING_CLOSE_KEY};
use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

use crate::compose::stack::{remove_all, remove_copies};
use crate::config::Config;
use crate::engine::{self, status_of, Daemon, Engine};
use crate::{
    egress, role_name, ContainerProvider, LABEL_ATTEMPT, LABEL_MANAGED, LABEL_ROLE, LABEL_RUN,
    LABEL_RUN_DIR, LABEL_TASK, NAME_PREFIX,
};

/// The Compose project a session recorded.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Recorded {
    sidecars: Vec<String>,
    network: Option<String>,
    volumes: Vec<String>,
    copies: Option<String>,
}

/// An open that did not finish ([`OPENING_CLOSE_KEY`]): what it created carries these labels.
#[derive(Debug, serde::Deserialize)]
struct Opening {
    run_id: String,
    task_id: String,
    attempt: u32,
    role: EnvironmentRole,
    /// Absent in records of older hosts.
    #[serde(default)]
    run_dir: Option<String>,
    #[serde(default)]
    params: JsonMap,
}

/// Releases what `close_params` names.
pub(crate) async fn close(provider: &ContainerProvider, close_params: &Value) -> Result<()> {
    let engine = provider.engine;
    if let Some(opening) = close_params.get(OPENING_CLOSE_KEY) {
        let opening: Opening = serde_json::from_value(opening.clone()).map_err(|e| {
            Error::invalid_input(format!(
                "environment `{engine}`: `{OPENING_CLOSE_KEY}`: {e}"
            ))
        })?;
        return sweep(provider, opening).await;
    }
    if let Some(dir) = close_params.get("egress_dir").and_then(Value::as_str) {
        egress::remove_dir(engine, std::path::Path::new(dir))?;
    }
    let compose: Recorded = close_params
        .get("compose")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| Error::invalid_input(format!("environment `{engine}`: `compose`: {e}")))?
        .unwrap_or_default();
    if let Some(dir) = &compose.copies {
        remove_copies(std::path::Path::new(dir))?;
    }
    let Some(container) = close_params.get("container").and_then(Value::as_str) else {
        return Ok(());
    };
    let names = std::iter::once(container)
        .chain(compose.sidecars.iter().map(String::as_str))
        .chain(compose.network.as_deref())
        .chain(compose.volumes.iter().map(String::as_str));
    for name in names {
        if !name.starts_with(NAME_PREFIX) {
            return Err(Error::invalid_input(format!(
                "environment `{engine}`: refusing to remove `{name}`: not a name this provider \
                 gives"
            )));
        }
    }
    let docker = connect(provider, close_params).await?;
    let container = container.to_string();
    crate::rt::spawn(async move {
        let docker = docker.connect(&container).await?;
        let mut containers = Vec::new();
        for name in std::iter::once(&container).chain(&compose.sidecars) {
            if managed_container(&docker, name).await? {
                containers.push(name.clone());
            }
        }
        let mut volumes = Vec::new();
        for volume in &compose.volumes {
            if managed_volume(&docker, volume).await? {
                volumes.push(volume.clone());
            }
        }
        let network = match &compose.network {
            Some(network) if managed_network(&docker, network).await? => Some(network.as_str()),
            _ => None,
        };
        remove_all(&docker, &containers, &volumes, network).await
    })
    .await?
}

/// Removes every container, volume and network an unfinished open labelled (its run, run
/// directory, task, attempt and role, and the managed label), in the engine its parameters name. The engine's
/// label filters narrow the listings; every item's labels are checked here again (rootless
/// Podman's compatible API has been seen to return volumes its filter does not match).
async fn sweep(provider: &ContainerProvider, opening: Opening) -> Result<()> {
    let engine = provider.engine;
    // Parameters redacted when recorded (a socket path is not a secret) fall back to the
    // default address.
    let config = Config::parse(engine, &opening.params)
        .or_else(|_| Config::parse(engine, &JsonMap::new()))?;
    let address = provider.address(&config).await?;
    let mut wanted = vec![
        (LABEL_MANAGED, "true".to_string()),
        (LABEL_RUN, opening.run_id.clone()),
        (LABEL_TASK, opening.task_id.clone()),
        (LABEL_ATTEMPT, opening.attempt.to_string()),
        (LABEL_ROLE, role_name(opening.role).to_string()),
    ];
    if let Some(dir) = opening.run_dir.clone() {
        wanted.push((LABEL_RUN_DIR, dir));
    }
    crate::rt::spawn(async move {
        let docker = Daemon::connect(engine, &address).await?;
        let (containers, volumes, networks) = labelled(&docker, &wanted).await?;
        remove_all(&docker, &containers, &volumes, None).await?;
        // A project's bind copies are named after its main container.
        for container in &containers {
            let copies = std::env::temp_dir().join(format!("{container}-binds"));
            if copies.exists() {
                remove_copies(&copies)?;
            }
        }
        for network in networks {
            remove_all(&docker, &[], &[], Some(&network)).await?;
        }
        Ok(())
    })
    .await?
}

/// The containers, volumes and networks carrying every label of `wanted`.
async fn labelled(
    docker: &Daemon,
    wanted: &[(&str, String)],
) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
    let engine = docker.engine;
    let filter: Vec<String> = wanted.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let filters = std::collections::HashMap::from([("label".to_string(), filter)]);
    let carries = |labels: Option<&std::collections::HashMap<String, String>>| {
        labels.is_some_and(|l| wanted.iter().all(|(k, v)| l.get(*k) == Some(v)))
    };
    let containers = docker
        .list_containers(Some(
            bollard::query_parameters::ListContainersOptionsBuilder::new()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| engine.error("listing containers", e))?
        .into_iter()
        .filter(|c| carries(c.labels.as_ref()))
        .filter_map(|c| {
            c.names?
                .first()
                .map(|n| n.trim_start_matches('/').to_string())
        })
        .collect();
    let volumes = docker
        .list_volumes(Some(
            bollard::query_parameters::ListVolumesOptionsBuilder::new()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| engine.error("listing volumes", e))?
        .volumes
        .unwrap_or_default()
        .into_iter()
        .filter(|v| carries(Some(&v.labels)))
        .map(|v| v.name)
        .collect();
    let networks = docker
        .list_networks(Some(
            bollard::query_parameters::ListNetworksOptionsBuilder::new()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| engine.error("listing networks", e))?
        .into_iter()
        .filter(|n| carries(n.labels.as_ref()))
        .filter_map(|n| n.name)
        .collect();
    Ok((containers, volumes, networks))
}

/// Where the recorded session's engine is, checked: its address (a private Podman service
/// that ended is replaced by this process's own, on the same store).
struct Reached {
    engine: Engine,
    address: String,
    store: Option<String>,
    services: std::sync::Arc<crate::podman::Services>,
}

impl Reached {
    /// Connects (on the provider runtime) and checks that Podman's store is the recorded one.
    async fn connect(self, container: &str) -> Result<Daemon> {
        let (engine, address) = (self.engine, self.address);
        let docker = Daemon::connect(engine, &address).await?;
        if let Some(store) = self.store {
            let (at, services) = (address.clone(), self.services);
            let facts = blocking(engine.id(), move || services.facts(&at)).await??;
            if facts.graph_root != store {
                return Err(Error::invalid_input(format!(
                    "environment `{engine}`: container `{container}` is in the store \
                     `{store}`, but the Podman at `{address}` uses `{}`: run `env close` as the \
                     run's user, with its CONTAINERS_STORAGE_CONF",
                    facts.graph_root
                )));
            }
        }
        Ok(docker)
    }
}

/// The engine of a recorded session. A private service ends with the run that started it;
/// its containers outlive it (their `conmon`s keep them), and this process's own Podman
/// reaches them — if it uses the same store, which the record names. (The recorded program
/// is only a sign that the service was private: a record never chooses what runs.)
async fn connect(provider: &ContainerProvider, close_params: &Value) -> Result<Reached> {
    let engine = provider.engine;
    let recorded = close_params
        .get(engine.address_param())
        .and_then(Value::as_str)
        .map(str::to_string);
    let was_private = engine == Engine::Podman && close_params.get("podman").is_some();
    let store = close_params
        .get("store")
        .and_then(Value::as_str)
        .map(str::to_string);
    let address = match recorded {
        Some(address) => address,
        None => {
            provider
                .address(&Config::parse(engine, &JsonMap::new())?)
                .await?
        }
    };
    let at = address.clone();
    let live = blocking(engine.id(), move || engine::reachable(&at)).await?;
    let address = if !live && was_private {
        engine::forget(engine, &address);
        let config = Config::parse(engine, &JsonMap::new())?;
        let services = provider.services.clone();
        blocking(engine.id(), move || {
            ContainerProvider::address_now(&services, &config)
        })
        .await??
    } else {
        address
    };
    Ok(Reached {
        engine,
        address,
        store,
        services: provider.services.clone(),
    })
}

/// Whether container `name` exists and carries the managed label (a missing one: `false`);
/// an error when it exists without it.
async fn managed_container(docker: &Daemon, name: &str) -> Result<bool> {
    match docker.inspect_container(name, None).await {
        Ok(found) => check_label(docker.engine, name, found.config.and_then(|c| c.labels)),
        Err(e) if status_of(&e) == Some(404) => Ok(false),
        Err(e) => Err(docker.engine.error(&format!("inspecting `{name}`"), e)),
    }
}

/// [`managed_container`] for a volume.
async fn managed_volume(docker: &Daemon, name: &str) -> Result<bool> {
    match docker.inspect_volume(name).await {
        Ok(found) => check_label(docker.engine, name, Some(found.labels)),
        Err(e) if status_of(&e) == Some(404) => Ok(false),
        Err(e) => Err(docker
            .engine
            .error(&format!("inspecting volume `{name}`"), e)),
    }
}

/// [`managed_container`] for a network.
async fn managed_network(docker: &Daemon, name: &str) -> Result<bool> {
    let options = bollard::query_parameters::InspectNetworkOptions::default();
    match docker.inspect_network(name, Some(options)).await {
        Ok(found) => check_label(docker.engine, name, found.labels),
        Err(e) if status_of(&e) == Some(404) => Ok(false),
        Err(e) => Err(docker
            .engine
            .error(&format!("inspecting network `{name}`"), e)),
    }
}

/// `true` when `labels` carry the managed label, else the refusal to remove `name`.
fn check_label(
    engine: Engine,
    name: &str,
    labels: Option<std::collections::HashMap<String, String>>,
) -> Result<bool> {
    let managed = labels.and_then(|l| l.get(LABEL_MANAGED).cloned());
    if managed.as_deref() == Some("true") {
        Ok(true)
    } else {
        Err(Error::invalid_input(format!(
            "environment `{engine}`: refusing to remove `{name}`: it has no \
             `{LABEL_MANAGED}=true` label"
        )))
    }
}
