//! Which container engine a provider drives, and the connected client that carries it.
//!
//! The plugin registers two environment providers over the same code: `docker` (a Docker
//! Engine) and `podman` (Podman's Docker-compatible API, `podman system service`). What the
//! engine changes is named here: the provider id that messages and records carry, the
//! parameter and variable naming the engine's address, and the defaults of each.

use std::fmt;
use std::ops::Deref;
use std::sync::Mutex;
use std::time::Duration;

use agentcompass_plugin_api::{Error, Result};
use bollard::query_parameters::RemoveContainerOptionsBuilder;
use bollard::{Docker, API_DEFAULT_VERSION};

/// Timeout of each engine API request (until its response headers arrive).
const REQUEST_TIMEOUT_SECONDS: u64 = 300;

/// A container engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// A Docker Engine (`dockerd`), through its API.
    Docker,
    /// Podman, through the Docker-compatible API of `podman system service`.
    Podman,
}

impl Engine {
    /// The provider id (`docker`, `podman`), which every message and record carries.
    pub const fn id(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }

    /// The provider parameter naming the engine's address.
    pub const fn address_param(self) -> &'static str {
        match self {
            Engine::Docker => "docker_host",
            Engine::Podman => "container_host",
        }
    }

    /// The environment variable naming the engine's address when the parameter is not given
    /// (the engine's own CLI reads the same one).
    pub const fn address_env(self) -> &'static str {
        match self {
            Engine::Docker => "DOCKER_HOST",
            Engine::Podman => "CONTAINER_HOST",
        }
    }

    /// An API error as an environment error naming the engine and the operation.
    pub(crate) fn error(self, op: &str, err: bollard::errors::Error) -> Error {
        Error::environment(format!("{self}: {op}: {err}"))
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A connected engine client and the engine it talks to (derefs to the client).
#[derive(Debug, Clone)]
pub(crate) struct Daemon {
    api: Docker,
    /// The engine behind the client.
    pub(crate) engine: Engine,
}

impl Deref for Daemon {
    type Target = Docker;

    fn deref(&self) -> &Docker {
        &self.api
    }
}

/// The clients connected so far, by engine and address: one per engine for the process.
/// Negotiating the API version is one `GET /version`, which Podman answers in ~0.3 s (it asks
/// the package manager for its components' versions) — per open and close, that was most of
/// a Podman task's overhead.
static CLIENTS: Mutex<Vec<(Engine, String, Daemon)>> = Mutex::new(Vec::new());

/// Whether something listens at `address` (a Unix socket accepts a connection; any other
/// address is taken to). Blocking, and quick: a local connect.
pub(crate) fn reachable(address: &str) -> bool {
    let socket = address
        .strip_prefix("unix://")
        .or_else(|| address.starts_with('/').then_some(address));
    socket.is_none_or(|path| std::os::unix::net::UnixStream::connect(path).is_ok())
}

/// Forgets the client of the engine at `address` (its service ended): the next connect
/// negotiates anew.
pub(crate) fn forget(engine: Engine, address: &str) {
    CLIENTS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(e, a, _)| !(*e == engine && a == address));
}

impl Daemon {
    /// The client of the engine at `address` (`unix://PATH`, an absolute socket path, or
    /// `tcp://`/`http://HOST:PORT`): connected and its API version negotiated the first time,
    /// the same client (and its pooled connections) after that. Must run on the provider
    /// runtime (the client's connections belong to the runtime they are made on).
    pub(crate) async fn connect(engine: Engine, address: &str) -> Result<Daemon> {
        let known = CLIENTS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(e, a, _)| *e == engine && a == address)
            .map(|(_, _, daemon)| daemon.clone());
        if let Some(daemon) = known {
            return Ok(daemon);
        }
        let daemon = Self::connect_new(engine, address).await?;
        let mut clients = CLIENTS.lock().unwrap_or_else(|p| p.into_inner());
        if !clients.iter().any(|(e, a, _)| *e == engine && a == address) {
            clients.push((engine, address.to_string(), daemon.clone()));
        }
        Ok(daemon)
    }

    /// A new client of the engine at `address`, its API version negotiated.
    async fn connect_new(engine: Engine, address: &str) -> Result<Daemon> {
        let api = if address.starts_with('/') || address.starts_with("unix://") {
            Docker::connect_with_unix(address, REQUEST_TIMEOUT_SECONDS, API_DEFAULT_VERSION)
        } else {
            Docker::connect_with_host(address)
                .map(|d| d.with_timeout(Duration::from_secs(REQUEST_TIMEOUT_SECONDS)))
        }
        .map_err(|e| Error::environment(format!("{engine}: cannot connect to `{address}`: {e}")))?;
        let api = api.negotiate_version().await.map_err(|e| {
            let what = match engine {
                Engine::Docker => "the daemon",
                Engine::Podman => "the Podman service",
            };
            Error::environment(format!("{engine}: cannot reach {what} at `{address}`: {e}"))
        })?;
        Ok(Daemon { api, engine })
    }
}

/// The HTTP status of a Docker server error.
pub(crate) fn status_of(err: &bollard::errors::Error) -> Option<u16> {
    match err {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Force-removes a container; a missing one (or one already being removed) is fine.
pub(crate) async fn remove_container(docker: &Daemon, name: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(options)).await {
        Ok(()) => Ok(()),
        Err(e) if matches!(status_of(&e), Some(404 | 409)) => Ok(()),
        Err(e) => Err(docker
            .engine
            .error(&format!("removing container `{name}`"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_names_itself_its_parameter_and_its_variable() {
        assert_eq!(Engine::Docker.to_string(), "docker");
        assert_eq!(Engine::Podman.to_string(), "podman");
        assert_eq!(Engine::Docker.address_param(), "docker_host");
        assert_eq!(Engine::Podman.address_param(), "container_host");
        assert_eq!(Engine::Docker.address_env(), "DOCKER_HOST");
        assert_eq!(Engine::Podman.address_env(), "CONTAINER_HOST");
    }
}
