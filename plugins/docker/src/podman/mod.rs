//! What the `podman` provider adds to the shared container code: a private service when no
//! address is given (`service`, with its `containers.conf` from `conf`), the limits its
//! containers get, and the check that the engine can enforce a plan's resources.
//!
//! Podman's Docker-compatible API differs from Docker's in ways the shared code absorbs where
//! it reads them (`exec::START_FAILURE_MARKERS`, the build error's wording, qualified image
//! names); the README lists them.

pub(crate) mod conf;
pub(crate) mod libpod;
pub(crate) mod service;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agentcompass_plugin_api::contracts::ResourceRequirements;
use agentcompass_plugin_api::{Error, Result};
use bollard::models::ResourcesUlimits;
use nix::sys::resource::{getrlimit, Resource};

use crate::engine::{self, Engine};
use libpod::{engine_facts, EngineFacts};
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
    /// What each engine address is (its cgroup controllers, its store), read once.
    facts: Mutex<HashMap<String, Arc<EngineFacts>>>,
}

impl Services {
    /// The facts of the engine at `address`, read once. Blocking the first time.
    pub(crate) fn facts(&self, address: &str) -> Result<Arc<EngineFacts>> {
        let known = self
            .facts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
            .cloned();
        if let Some(facts) = known {
            return Ok(facts);
        }
        let read = Arc::new(engine_facts(address)?);
        self.facts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(address.to_string(), read.clone());
        Ok(read)
    }

    /// The address of the private service run with `program`, started if it is not yet
    /// running. Blocking.
    pub(crate) fn private_address(&self, program: &str) -> Result<String> {
        let mut private = self.private.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(service) = private.get(program) {
            match service.exited() {
                None => return Ok(service.address().to_string()),
                // Replaced, and its client forgotten: the next open starts a new one.
                Some(why) => {
                    agentcompass_plugin_api::tracing::warn!(
                        provider = "podman",
                        "the private Podman service ended ({why}); starting another"
                    );
                    engine::forget(Engine::Podman, service.address());
                    private.remove(program);
                }
            }
        }
        let service = Arc::new(PrivateService::start(program)?);
        let address = service.address().to_string();
        private.insert(program.to_string(), service);
        Ok(address)
    }

    /// Refuses `resources` the engine at `address` cannot enforce: a limit needs its cgroup
    /// controller (`cpu`, `memory`) among those Podman can use — none for rootless Podman on
    /// cgroup v1, whose containers would run unlimited — unless its mode is `auto` (Harbor's
    /// default), which leaves it unenforced: the fields to drop. Blocking; read once per
    /// address.
    pub(crate) fn check_resources(
        &self,
        address: &str,
        resources: &ResourceRequirements,
    ) -> Result<Vec<&'static str>> {
        let wanted: Vec<(&'static str, &str)> = [
            (resources.cpu.is_some(), "cpu", "cpu"),
            (resources.memory_mb.is_some(), "memory_mb", "memory"),
        ]
        .into_iter()
        .filter_map(|(set, field, controller)| set.then_some((field, controller)))
        .collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let controllers = &self.facts(address)?.cgroup_controllers;
        let mut unenforced = Vec::new();
        for (field, controller) in wanted {
            if controllers.iter().any(|c| c == controller) {
                continue;
            }
            // Harbor's `auto`: a limit the engine cannot enforce is left unenforced.
            if resources.best_effort(field) {
                unenforced.push(field);
                continue;
            }
            return Err(Error::unsupported(format!(
                "environment `podman`: resources.{field} cannot be enforced: the Podman service \
                 at `{address}` has no `{controller}` cgroup controller (rootless Podman on \
                 cgroup v1, or a cgroup v2 without delegation; it has: {}); drop the limit, \
                 use --{}-mode auto, or run Podman where it can enforce it",
                if controllers.is_empty() {
                    "none".to_string()
                } else {
                    controllers.join(", ")
                },
                if field == "cpu" { "cpus" } else { "memory" }
            )));
        }
        Ok(unenforced)
    }
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
        services.facts.lock().unwrap().insert(
            "unix:///x.sock".into(),
            Arc::new(EngineFacts {
                cgroup_controllers: vec!["cpu".into()],
                graph_root: "/var/lib/containers/storage".into(),
            }),
        );
        let cpu = ResourceRequirements {
            cpu: Some(1.0),
            ..ResourceRequirements::default()
        };
        services.check_resources("unix:///x.sock", &cpu).unwrap();
        let mut memory = ResourceRequirements {
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
        // Under Harbor's `auto` it is left unenforced instead.
        memory.memory_mode = Some(agentcompass_plugin_api::contracts::ResourceMode::Auto);
        assert_eq!(
            services.check_resources("unix:///x.sock", &memory).unwrap(),
            ["memory_mb"]
        );
        // Nothing asked, nothing read (this address does not exist).
        services
            .check_resources("unix:///nonexistent.sock", &ResourceRequirements::default())
            .unwrap();
    }
}
