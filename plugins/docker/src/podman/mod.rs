//! What the `podman` provider adds to the shared container code: a private service when no
//! address is given (`service`, with its `containers.conf` from `conf`), the limits its
//! containers get, and the check that the engine can enforce a plan's resources.
//!
//! Podman's Docker-compatible API differs from Docker's in ways the shared code absorbs where
//! it reads them (`exec::START_FAILURE_MARKERS`, the build error's wording, qualified image
//! names); the README lists them.

pub(crate) mod conf;
pub(crate) mod service;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentcompass_plugin_api::contracts::ResourceRequirements;
use agentcompass_plugin_api::{Error, Result};
use bollard::models::ResourcesUlimits;
use nix::sys::resource::{getrlimit, Resource};
use serde_json::Value;

use service::PrivateService;

/// The most open files a container is given (Podman's own default for rootful containers).
const NOFILE_CAP: u64 = 1_048_576;
/// The most processes a container's user is given: Podman starts each container's `conmon`
/// with at most 32,768, which the runtime under it cannot raise without `CAP_SYS_RESOURCE`.
const NPROC_CAP: u64 = 32_768;

/// The limits of a Podman container: open files and processes, soft = hard = the host
/// process's hard limit (capped as above). Podman's rootful default asks the kernel for more
/// than a host without `CAP_SYS_RESOURCE` may grant, and fails every container there; the
/// host's own hard limits are always grantable to a service it started (which inherits them),
/// as a Docker container inherits the daemon's.
pub(crate) fn ulimits() -> Vec<ResourcesUlimits> {
    [
        ("nofile", Resource::RLIMIT_NOFILE, NOFILE_CAP),
        ("nproc", Resource::RLIMIT_NPROC, NPROC_CAP),
    ]
    .into_iter()
    .filter_map(|(name, resource, cap)| {
        let (_, hard) = getrlimit(resource).ok()?;
        let limit = i64::try_from(hard.min(cap)).ok()?;
        Some(ResourcesUlimits {
            name: Some(name.to_string()),
            soft: Some(limit),
            hard: Some(limit),
        })
    })
    .collect()
}

/// The provider's Podman services and what it learned of each engine, for the run.
#[derive(Debug, Default)]
pub(crate) struct Services {
    /// Private services by program, started on first use.
    private: Mutex<HashMap<String, Arc<PrivateService>>>,
    /// The cgroup controllers each engine address can use, read once.
    controllers: Mutex<HashMap<String, Arc<Vec<String>>>>,
}

impl Services {
    /// The address of the private service run with `program`, started if it is not yet
    /// running. Blocking.
    pub(crate) fn private_address(&self, program: &str) -> Result<String> {
        let mut private = self.private.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(service) = private.get(program) {
            return Ok(service.address().to_string());
        }
        let service = Arc::new(PrivateService::start(program)?);
        let address = service.address().to_string();
        private.insert(program.to_string(), service);
        Ok(address)
    }

    /// Refuses `resources` the engine at `address` cannot enforce: a limit needs its cgroup
    /// controller (`cpu`, `memory`) among those Podman can use — none for rootless Podman on
    /// cgroup v1, whose containers would run unlimited. Blocking; read once per address.
    pub(crate) fn check_resources(
        &self,
        address: &str,
        resources: &ResourceRequirements,
    ) -> Result<()> {
        let wanted: Vec<(&str, &str)> = [
            (resources.cpu.is_some(), "cpu", "cpu"),
            (resources.memory_mb.is_some(), "memory_mb", "memory"),
        ]
        .into_iter()
        .filter_map(|(set, field, controller)| set.then_some((field, controller)))
        .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let known = self
            .controllers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
            .cloned();
        let controllers = match known {
            Some(controllers) => controllers,
            None => {
                let read = Arc::new(cgroup_controllers(address)?);
                self.controllers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(address.to_string(), read.clone());
                read
            }
        };
        match wanted
            .iter()
            .find(|(_, controller)| !controllers.iter().any(|c| c == controller))
        {
            None => Ok(()),
            Some((field, controller)) => Err(Error::invalid_input(format!(
                "environment `podman`: resources.{field} cannot be enforced: the Podman service \
                 at `{address}` has no `{controller}` cgroup controller (rootless Podman on \
                 cgroup v1, or a cgroup v2 without delegation; it has: {}); drop the limit or \
                 run Podman where it can enforce it",
                if controllers.is_empty() {
                    "none".to_string()
                } else {
                    controllers.join(", ")
                }
            ))),
        }
    }
}

/// The cgroup controllers of the Podman service at `address` (Podman's own API,
/// `GET /libpod/info` `host.cgroupControllers`). Blocking.
fn cgroup_controllers(address: &str) -> Result<Vec<String>> {
    let failed = |why: String| {
        Error::environment(format!(
            "podman: cannot read the engine's facts from `{address}`: {why}"
        ))
    };
    let body = libpod_get(address, "/v4.0.0/libpod/info").map_err(failed)?;
    let info: Value =
        serde_json::from_slice(&body).map_err(|e| failed(format!("not JSON: {e}")))?;
    let controllers = info
        .pointer("/host/cgroupControllers")
        .and_then(Value::as_array)
        .ok_or_else(|| failed("no host.cgroupControllers (is it Podman?)".to_string()))?;
    Ok(controllers
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect())
}

/// One `GET` of Podman's own API (which the Docker client does not speak): HTTP/1.0 over the
/// socket or TCP address, the body of a 200 answer.
fn libpod_get(address: &str, path: &str) -> std::result::Result<Vec<u8>, String> {
    const TIMEOUT: Duration = Duration::from_secs(30);
    let request = format!("GET {path} HTTP/1.0\r\nHost: podman\r\n\r\n");
    let mut answer = Vec::new();
    let socket = address
        .strip_prefix("unix://")
        .or_else(|| address.strip_prefix("/").map(|_| address));
    if let Some(socket) = socket {
        let mut stream =
            std::os::unix::net::UnixStream::connect(socket).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        stream.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    } else {
        let host = address
            .strip_prefix("tcp://")
            .or_else(|| address.strip_prefix("http://"))
            .ok_or_else(|| "not a unix://, tcp:// or http:// address".to_string())?;
        let mut stream = std::net::TcpStream::connect(host).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        stream.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    }
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| "no HTTP answer".to_string())?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("`GET {path}` answered `{status}`"));
    }
    Ok(answer[split + 4..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_get_the_hosts_hard_limits_capped() {
        let limits = ulimits();
        let (_, nofile) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let found = limits
            .iter()
            .find(|l| l.name.as_deref() == Some("nofile"))
            .unwrap();
        assert_eq!(found.soft, Some(nofile.min(NOFILE_CAP) as i64));
        assert_eq!(found.soft, found.hard);
        assert!(limits.iter().any(|l| l.name.as_deref() == Some("nproc")));
    }

    #[test]
    fn resources_without_their_controller_are_refused_naming_the_field() {
        let services = Services::default();
        services
            .controllers
            .lock()
            .unwrap()
            .insert("unix:///x.sock".into(), Arc::new(vec!["cpu".into()]));
        let cpu = ResourceRequirements {
            cpu: Some(1.0),
            ..ResourceRequirements::default()
        };
        services.check_resources("unix:///x.sock", &cpu).unwrap();
        let memory = ResourceRequirements {
            memory_mb: Some(512),
            ..ResourceRequirements::default()
        };
        let err = services
            .check_resources("unix:///x.sock", &memory)
            .unwrap_err();
        assert!(
            err.message
                .contains("resources.memory_mb cannot be enforced")
                && err.message.contains("it has: cpu"),
            "{}",
            err.message
        );
        // Nothing asked, nothing read (this address does not exist).
        services
            .check_resources("unix:///nonexistent.sock", &ResourceRequirements::default())
            .unwrap();
    }
}
