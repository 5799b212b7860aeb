//! The provider's parameters, the build context and the working directory.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use agentcompass_egress::{egress_hosts_param, HostMap};
use agentcompass_plugin_api::contracts::{
    ConfigField, ConfigSchema, ConfigType, EnvironmentSetup, JsonMap,
};
use agentcompass_plugin_api::sdk::provider::{check_params, string_table};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

use crate::engine::Engine;

/// The socket used when neither the `docker_host` parameter nor `DOCKER_HOST` is set.
const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// The program that serves a private Podman service when `podman` is not given.
const DEFAULT_PODMAN: &str = "podman";

/// The working directory when `setup.workdir` is not given.
const DEFAULT_WORKDIR: &str = "/app";

pub(crate) fn config_schema(engine: Engine) -> ConfigSchema {
    let schema = match engine {
        Engine::Docker => ConfigSchema::empty().field(ConfigField::new(
            "docker_host",
            ConfigType::String,
            Value::Null,
            "Docker Engine address (default: the DOCKER_HOST environment variable, else \
             unix:///var/run/docker.sock)",
        )),
        Engine::Podman => ConfigSchema::empty()
            .field(ConfigField::new(
                "container_host",
                ConfigType::String,
                Value::Null,
                "Address of a running Podman service (`unix:///run/podman/podman.sock`, \
                 `unix://$XDG_RUNTIME_DIR/podman/podman.sock`; default: the CONTAINER_HOST \
                 environment variable, else a private `podman system service` the provider \
                 starts for the run and stops after it)",
            ))
            .field(ConfigField::new(
                "podman",
                ConfigType::String,
                json!(DEFAULT_PODMAN),
                "The podman program that serves the private service (looked up on PATH unless \
                 it is a path)",
            )),
    };
    schema
        .field(ConfigField::new(
            "network",
            ConfigType::String,
            json!("host"),
            "Network mode of `public` containers: `host`, `bridge` or another existing network \
             (`no-network` always uses `none`)",
        ))
        .field(ConfigField::new(
            "keep_alive_command",
            ConfigType::Array,
            json!(["sleep", "2147483647"]),
            "The container's main command, keeping it alive between execs",
        ))
        .field(ConfigField::new(
            "pull",
            ConfigType::Boolean,
            json!(true),
            "Pull setup.image when it is missing locally, as Harbor does for a task's \
             `docker_image` (false: the image must exist locally)",
        ))
        .field(ConfigField::new(
            "build_context",
            ConfigType::String,
            Value::Null,
            "Absolute host directory holding a `Dockerfile`: the image is built from it (tagged \
             setup.image if given, else agentcompass-build/ctx-<sha256 prefix>:latest) and reused \
             while the context is unchanged; it wins over a task's own `setup.build_context` \
             (a Harbor task's `environment/`), which is built the same way",
        ))
        .field(egress_hosts_param())
}

/// Where the engine is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Address {
    /// A running engine's address (`unix://…`, `tcp://…`).
    Given(String),
    /// A private Podman service the provider starts with this program (module `podman`).
    PrivateService { program: String },
}

/// The provider's parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    /// The engine the parameters are for.
    pub(crate) engine: Engine,
    pub(crate) address: Address,
    pub(crate) network: String,
    pub(crate) keep_alive_command: Vec<String>,
    pub(crate) pull: bool,
    pub(crate) build_context: Option<PathBuf>,
    /// The egress proxy's static names (`allowlist`, `denylist`), validated.
    pub(crate) egress_hosts: BTreeMap<String, String>,
}

impl Config {
    pub(crate) fn parse(engine: Engine, params: &JsonMap) -> Result<Config> {
        check_params(&config_schema(engine), params, engine.id())?;
        let text = |key: &str| -> Result<Option<String>> {
            match params.get(key).and_then(Value::as_str) {
                Some(s) if s.trim().is_empty() => Err(Error::invalid_input(format!(
                    "environment `{engine}`: parameter `{key}` must not be empty"
                ))),
                other => Ok(other.map(str::to_string)),
            }
        };
        let from_env = std::env::var(engine.address_env())
            .ok()
            .filter(|h| !h.trim().is_empty());
        let address = match (text(engine.address_param())?.or(from_env), engine) {
            (Some(address), _) => Address::Given(address),
            (None, Engine::Docker) => Address::Given(DEFAULT_DOCKER_HOST.to_string()),
            (None, Engine::Podman) => Address::PrivateService {
                program: text("podman")?.unwrap_or_else(|| DEFAULT_PODMAN.to_string()),
            },
        };
        if let (Address::Given(address), Engine::Podman) = (&address, engine) {
            check_address(engine, address)?;
        }
        let keep_alive_command = match params.get("keep_alive_command") {
            None | Some(Value::Null) => vec!["sleep".to_string(), "2147483647".to_string()],
            Some(Value::Array(items)) => {
                let argv: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                match argv {
                    Some(argv) if !argv.is_empty() => argv,
                    _ => {
                        return Err(Error::invalid_input(format!(
                            "environment `{engine}`: parameter `keep_alive_command` must be a \
                             non-empty array of strings"
                        )))
                    }
                }
            }
            Some(_) => unreachable!("checked by the schema"),
        };
        let egress_hosts = string_table(params, "egress_hosts", engine.id())?;
        HostMap::from_pairs(&egress_hosts).map_err(|e| {
            Error::invalid_input(format!(
                "environment `{engine}`: parameter `egress_hosts`: {e}"
            ))
        })?;
        Ok(Config {
            engine,
            egress_hosts,
            address,
            network: text("network")?.unwrap_or_else(|| "host".to_string()),
            keep_alive_command,
            pull: params.get("pull").and_then(Value::as_bool).unwrap_or(true),
            build_context: text("build_context")?.map(PathBuf::from),
        })
    }
}

impl Config {
    /// The egress proxy's host map: the `egress_hosts` parameter, then `runtime` (the open
    /// request's `egress_hosts`, from the runtime option `runtime.egress.hosts`), whose
    /// address replaces the parameter's for the same name (compared lowercase, without a
    /// trailing dot), as in `sandbox`.
    pub(crate) fn host_map(&self, runtime: &BTreeMap<String, String>) -> Result<HostMap> {
        let own = HostMap::from_pairs(&self.egress_hosts);
        own.and_then(|own| Ok(own.overridden_by(HostMap::from_pairs(runtime)?)))
            .map_err(|e| {
                Error::invalid_input(format!(
                    "environment `{}`: egress hosts (`egress_hosts`, `runtime.egress.hosts`): {e}",
                    self.engine
                ))
            })
    }
}

/// The error of an open without an image to run.
pub(crate) fn image_required(engine: Engine) -> Error {
    Error::invalid_input(format!(
        "{engine}: setup.image is required (e.g. --env-params '{{\"setup\": {{\"image\": \
         \"debian:bookworm\"}}}}')"
    ))
}

/// What a session's container runs: an image, built from a context when one is given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImageSource {
    /// The image to run, or the tag of the built image (`None`: tagged by the context).
    pub(crate) image: Option<String>,
    /// The context the image is built from.
    pub(crate) build_context: Option<PathBuf>,
}

/// The image source of `setup` under `config`, checked: the `build_context` parameter (the
/// user's) first, then `setup.image` (the user's, or a task's declared image), then
/// `setup.build_context` (a task's own definition, built and tagged by its content).
pub(crate) fn image_source(
    engine: Engine,
    config: &Config,
    setup: &EnvironmentSetup,
) -> Result<ImageSource> {
    let image = setup
        .image
        .as_deref()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(str::to_string);
    let build_context = match (&config.build_context, &image, &setup.build_context) {
        (Some(param), _, _) => Some((param.clone(), "parameter `build_context`")),
        (None, Some(_), _) => None,
        (None, None, Some(task)) => Some((PathBuf::from(task), "setup.build_context")),
        (None, None, None) => return Err(image_required(engine)),
    };
    if let Some((context, field)) = &build_context {
        check_build_context(engine, context, field)?;
    }
    let build_context = build_context.map(|(context, _)| context);
    Ok(ImageSource {
        image,
        build_context,
    })
}

/// Checks that a build context (named `field` in errors) is an absolute directory holding a
/// `Dockerfile`.
fn check_build_context(engine: Engine, context: &Path, field: &str) -> Result<()> {
    let shown = context.display();
    let problem = if !context.is_absolute() {
        "must be an absolute path"
    } else if !context.is_dir() {
        "is not an existing directory"
    } else if !context.join("Dockerfile").is_file() {
        "holds no `Dockerfile`"
    } else {
        return Ok(());
    };
    Err(Error::invalid_input(format!(
        "environment `{engine}`: {field} `{shown}` {problem}"
    )))
}

/// The container path of the working directory: absolute and normalised, not `/`.
pub(crate) fn workdir_of(engine: Engine, setup: &EnvironmentSetup) -> Result<String> {
    let given = setup.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR);
    if !given.starts_with('/') {
        return Err(Error::invalid_input(format!(
            "environment `{engine}`: setup.workdir `{given}` must be an absolute path"
        )));
    }
    let normal = normalize(Path::new("/"), given);
    if normal == "/" {
        return Err(Error::invalid_input(format!(
            "environment `{engine}`: setup.workdir `{given}` must not be the root directory"
        )));
    }
    Ok(normal)
}

/// Refuses a Podman address the provider cannot use (`ssh://`, as `podman machine` and remote
/// clients set CONTAINER_HOST, or another host): it binds host paths and reads the engine's
/// processes from `/proc`, so the engine must be on this host (`unix://`, an absolute socket
/// path, or `tcp://`/`http://` on loopback).
fn check_address(engine: Engine, address: &str) -> Result<()> {
    let param = engine.address_param();
    let env = engine.address_env();
    let local_tcp = |rest: &str| {
        let host = rest.rsplit_once(':').map_or(rest, |(host, _)| host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let ok = if let Some(path) = address.strip_prefix("unix://") {
        path.starts_with('/')
    } else if let Some(rest) = address
        .strip_prefix("tcp://")
        .or_else(|| address.strip_prefix("http://"))
    {
        local_tcp(rest)
    } else {
        address.starts_with('/')
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "environment `{engine}`: parameter `{param}` (or {env}) `{address}`: expected a \
             local engine (`unix:///PATH`, or `tcp://` on loopback): the provider binds host \
             directories into its containers"
        )))
    }
}

/// `path` as an absolute, lexically normalised container path (relative paths against `base`).
pub(crate) fn normalize(base: &Path, path: &str) -> String {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        base.join(path)
    };
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn podman(params: serde_json::Value) -> Result<Config> {
        let serde_json::Value::Object(params) = params else {
            unreachable!("an object")
        };
        Config::parse(Engine::Podman, &params)
    }

    #[test]
    fn podman_takes_local_addresses_and_refuses_remote_ones_in_one_line() {
        for local in [
            "unix:///run/podman/podman.sock",
            "/run/podman/podman.sock",
            "tcp://127.0.0.1:8080",
            "http://localhost:8080",
            "tcp://[::1]:8080",
        ] {
            let config = podman(json!({"container_host": local})).unwrap();
            assert_eq!(config.address, Address::Given(local.to_string()));
        }
        for remote in [
            "ssh://core@127.0.0.1:2222/run/podman.sock",
            "tcp://10.0.0.5:8080",
        ] {
            let err = podman(json!({"container_host": remote})).unwrap_err();
            assert_eq!(err.kind, agentcompass_plugin_api::ErrorKind::InvalidInput);
            assert!(!err.message.contains('\n'), "{}", err.message);
            assert!(
                err.message
                    .starts_with("environment `podman`: parameter `container_host`")
                    && err.message.contains(remote)
                    && err.message.contains("expected a local engine"),
                "{}",
                err.message
            );
        }
        // Without an address (and CONTAINER_HOST unset, as under `./dev.sh check`): a private
        // service with the program given.
        if std::env::var_os("CONTAINER_HOST").is_none() {
            let config = podman(json!({"podman": "/opt/podman/bin/podman"})).unwrap();
            assert_eq!(
                config.address,
                Address::PrivateService {
                    program: "/opt/podman/bin/podman".to_string()
                }
            );
        }
        // `docker` has no such parameter.
        let mut params = JsonMap::new();
        params.insert("container_host".into(), json!("unix:///x.sock"));
        assert!(Config::parse(Engine::Docker, &params)
            .unwrap_err()
            .message
            .contains("container_host"));
    }
}
