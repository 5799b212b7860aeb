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
//!   `cpu` becomes `NanoCpus`, `memory_mb` becomes `Memory`. Network: `none` for the
//!   `no-network` baseline, else the `network` parameter (default `host`). `allowlist` is not
//!   supported (refused when the plan is validated). Everything is done within
//!   `setup.build_timeout_seconds` when given.
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
//! - `close` force-removes the container (a missing container is fine); the provider's
//!   `close(close_params)` does the same after a crash, for containers it labelled only.
//! - All Docker I/O runs on the provider's own runtime (module `rt`): the SDK's helper
//!   runtime has no I/O driver.

mod archive;
mod rt;
mod session;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, EnvironmentSetup,
    ExecutionPlan, JsonMap, NetworkMode, OpenEnvironmentRequest, ProviderCapabilities,
};
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, PluginBuilder, SessionRef,
};
use agentcompass_plugin_api::{tracing, Error, ErrorKind, Result};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, CreateImageOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use bollard::{Docker, API_DEFAULT_VERSION};
use futures_util::StreamExt;
use serde_json::{json, Value};

use session::DockerSession;

/// Provider id.
pub const ID: &str = "docker";

/// One-line description.
pub const DESCRIPTION: &str = "Containers through the Docker Engine API: image from setup.image, \
     or built from a task's Dockerfile context under the build timeout; keep-alive container, exec, archive file transfer, no-network = network none";

/// The socket used when neither the `docker_host` parameter nor `DOCKER_HOST` is set.
const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// The working directory when `setup.workdir` is not given.
const DEFAULT_WORKDIR: &str = "/app";

/// Name prefix of the containers this provider creates.
const NAME_PREFIX: &str = "agentcompass-";

/// Label keys.
const LABEL_RUN: &str = "agentcompass.run_id";
const LABEL_TASK: &str = "agentcompass.task_id";
const LABEL_ATTEMPT: &str = "agentcompass.attempt";
const LABEL_MANAGED: &str = "agentcompass.managed";
/// Label of a built image: the sha256 of its build context archive.
const LABEL_CONTEXT: &str = "agentcompass.context_sha256";

/// Repository of built images tagged by their context.
const BUILD_REPOSITORY: &str = "agentcompass-build";

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

fn config_schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "docker_host",
            ConfigType::String,
            Value::Null,
            "Docker Engine address (default: the DOCKER_HOST environment variable, else \
             unix:///var/run/docker.sock)",
        ))
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
            json!(false),
            "Pull setup.image when it is missing locally (false: the image must exist locally)",
        ))
        .field(ConfigField::new(
            "build_context",
            ConfigType::String,
            Value::Null,
            "Absolute host directory holding a `Dockerfile`: the image is built from it (tagged \
             setup.image if given, else agentcompass-build/ctx-<sha256 prefix>:latest), without \
             network, and reused while the context is unchanged",
        ))
}

/// The provider's parameters.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    docker_host: String,
    network: String,
    keep_alive_command: Vec<String>,
    pull: bool,
    build_context: Option<PathBuf>,
}

impl Config {
    fn parse(params: &JsonMap) -> Result<Config> {
        let problems = config_schema().validate(params);
        if !problems.is_empty() {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: {}",
                problems.join("; ")
            )));
        }
        let text = |key: &str| -> Result<Option<String>> {
            match params.get(key).and_then(Value::as_str) {
                Some(s) if s.trim().is_empty() => Err(Error::invalid_input(format!(
                    "environment `{ID}`: parameter `{key}` must not be empty"
                ))),
                other => Ok(other.map(str::to_string)),
            }
        };
        let docker_host = match text("docker_host")? {
            Some(host) => host,
            None => std::env::var("DOCKER_HOST")
                .ok()
                .filter(|h| !h.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_DOCKER_HOST.to_string()),
        };
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
                            "environment `{ID}`: parameter `keep_alive_command` must be a \
                             non-empty array of strings"
                        )))
                    }
                }
            }
            Some(_) => unreachable!("checked by the schema"),
        };
        Ok(Config {
            docker_host,
            network: text("network")?.unwrap_or_else(|| "host".to_string()),
            keep_alive_command,
            pull: params.get("pull").and_then(Value::as_bool).unwrap_or(false),
            build_context: text("build_context")?.map(PathBuf::from),
        })
    }
}

/// Checks that a build context is an absolute directory holding a `Dockerfile`.
fn check_build_context(context: &Path) -> Result<()> {
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
        "environment `{ID}`: parameter `build_context` `{shown}` {problem}"
    )))
}

/// The container path of the working directory: absolute and normalised, not `/`.
fn workdir_of(setup: &EnvironmentSetup) -> Result<String> {
    let given = setup.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR);
    if !given.starts_with('/') {
        return Err(Error::invalid_input(format!(
            "environment `{ID}`: setup.workdir `{given}` must be an absolute path"
        )));
    }
    let normal = normalize(Path::new("/"), given);
    if normal == "/" {
        return Err(Error::invalid_input(format!(
            "environment `{ID}`: setup.workdir `{given}` must not be the root directory"
        )));
    }
    Ok(normal)
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

/// A task id reduced to a short, container-name-safe string.
fn sanitise(task_id: &str) -> String {
    let cleaned: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if cleaned.is_empty() {
        "task".to_string()
    } else {
        cleaned
    }
}

/// A random, name-safe suffix (16 hex digits).
pub(crate) fn random_suffix() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.write_u128(nanos);
    format!("{:016x}", hasher.finish())
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
            network_modes: vec![NetworkMode::Public, NetworkMode::NoNetwork],
            allowlist_entry_types: Vec::new(),
            dynamic_network_policy: false,
            resource_fields: vec!["cpu".to_string(), "memory_mb".to_string()],
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
        })
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        validate_against_capabilities(&self.capabilities()?, plan)?;
        let environments =
            std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
        for environment in environments {
            if let Some(context) = Config::parse(&environment.params)?.build_context {
                check_build_context(&context)?;
            }
            workdir_of(&environment.setup)?;
        }
        Ok(())
    }

    async fn open(&self, _ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let config = Config::parse(&request.environment.params)?;
        let setup = &request.environment.setup;
        let workdir = workdir_of(setup)?;
        if let Some(context) = &config.build_context {
            check_build_context(context)?;
        }
        let image =
            match setup.image.as_deref().map(str::trim) {
                Some(image) if !image.is_empty() => Some(image.to_string()),
                _ if config.build_context.is_some() => None,
                _ => return Err(Error::invalid_input(
                    "docker: setup.image is required (e.g. --env-params '{\"setup\": {\"image\": \
                 \"debian:bookworm\"}}')",
                )),
            };
        let network = match request.baseline_network_policy.network_mode {
            NetworkMode::Public => config.network.clone(),
            NetworkMode::NoNetwork => "none".to_string(),
            NetworkMode::Allowlist => {
                return Err(Error::unsupported(format!(
                    "environment `{ID}` cannot enforce network mode `allowlist` (it supports: \
                     public, no-network)"
                )))
            }
        };
        let resources = request.environment.resources.clone().unwrap_or_default();
        let name = format!(
            "{NAME_PREFIX}{}-{}-{}",
            sanitise(&request.task_id),
            request.attempt,
            random_suffix()
        );
        let labels = HashMap::from([
            (LABEL_RUN.to_string(), request.run_id.clone()),
            (LABEL_TASK.to_string(), request.task_id.clone()),
            (LABEL_ATTEMPT.to_string(), request.attempt.to_string()),
            (LABEL_MANAGED.to_string(), "true".to_string()),
        ]);
        let body = ContainerCreateBody {
            cmd: Some(config.keep_alive_command.clone()),
            env: Some(
                request
                    .resolved_env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
            ),
            working_dir: Some(workdir.clone()),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some(network.clone()),
                nano_cpus: resources.cpu.map(|cpu| (cpu * 1e9).round() as i64),
                memory: resources
                    .memory_mb
                    .map(|mb| i64::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)),
                auto_remove: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        };
        let deadline = setup
            .build_timeout_seconds
            .filter(|s| s.is_finite() && *s >= 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        let host = config.docker_host.clone();
        let pull = config.pull;
        let build_context = config.build_context.clone();
        let container = name.clone();
        let session_workdir = workdir.clone();
        let docker = crate::rt::spawn(async move {
            let docker = connect(&host).await?;
            let work = async {
                let image = match build_context {
                    Some(context) => build_image(&docker, &context, image).await?,
                    None => image.ok_or_else(|| {
                        Error::invalid_input(
                            "docker: setup.image is required (e.g. --env-params '{\"setup\": {\"image\": \"debian:bookworm\"}}')",
                        )
                    })?,
                };
                let body = ContainerCreateBody {
                    image: Some(image.clone()),
                    ..body
                };
                create_and_start(&docker, &container, &image, pull, body, &workdir).await
            };
            let outcome = match deadline {
                Some(limit) => match tokio::time::timeout(limit, work).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "docker: opening the environment took longer than \
                             setup.build_timeout_seconds ({}s)",
                            limit.as_secs_f64()
                        ),
                    )),
                },
                None => work.await,
            };
            match outcome {
                Ok(()) => Ok(docker),
                Err(e) => {
                    if let Err(cleanup) = remove_container(&docker, &container).await {
                        tracing::warn!(container = %container, "cleanup failed: {cleanup}");
                    }
                    Err(e)
                }
            }
        })
        .await??;
        tracing::debug!(provider = ID, container = %name, network = %network, "opened environment");
        Ok(Arc::new(DockerSession::new(
            docker,
            name,
            config.docker_host,
            session_workdir,
            request.resolved_env.clone(),
        )))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
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

/// The built image of the host directory `context`: tagged `tag` (default: by the context's
/// sha256), reused when an image with that tag and the context's sha256 label exists.
async fn build_image(docker: &Docker, context: &Path, tag: Option<String>) -> Result<String> {
    use sha2::{Digest, Sha256};
    let shown = context.display().to_string();
    let from = context.to_path_buf();
    let tar = tokio::task::spawn_blocking(move || archive::context_tar(&from))
        .await
        .map_err(|e| Error::environment(format!("docker: archiving `{shown}` failed: {e}")))?
        .map_err(|e| {
            Error::environment(format!(
                "docker: cannot archive the build context `{shown}`: {e}"
            ))
        })?;
    let sha: String = Sha256::digest(&tar)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tag = tag.unwrap_or_else(|| format!("{BUILD_REPOSITORY}/ctx-{}:latest", &sha[..16]));
    match docker.inspect_image(&tag).await {
        Ok(found) => {
            let labels = found.config.and_then(|c| c.labels).unwrap_or_default();
            if labels.get(LABEL_CONTEXT) == Some(&sha) {
                tracing::debug!(provider = ID, image = %tag, "reusing the built image");
                return Ok(tag);
            }
        }
        Err(e) if status_of(&e) == Some(404) => {}
        Err(e) => return Err(docker_error(&format!("inspecting image `{tag}`"), e)),
    }
    tracing::debug!(provider = ID, image = %tag, context = %shown, "building the image");
    let labels = HashMap::from([(LABEL_CONTEXT, sha.as_str())]);
    let options = BuildImageOptionsBuilder::new()
        .dockerfile("Dockerfile")
        .t(&tag)
        .labels(&labels)
        .pull("false")
        .rm(true)
        .forcerm(true)
        .networkmode("none")
        .build();
    let mut output = docker.build_image(options, None, Some(bollard::body_full(tar.into())));
    let mut step = None;
    let failure = |step: &Option<String>, message: &str| {
        let line = message
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("the build failed");
        let at = step
            .as_deref()
            .map(|s| format!(" at `{s}`"))
            .unwrap_or_default();
        Error::environment(format!(
            "docker: building image `{tag}` from `{shown}` failed{at}: {line}"
        ))
    };
    while let Some(item) = output.next().await {
        match item {
            Ok(info) => {
                let lines = info.stream.as_deref().unwrap_or_default().lines();
                if let Some(last) = lines.map(str::trim).rfind(|l| l.starts_with("Step ")) {
                    step = Some(last.to_string());
                }
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => {
                return Err(failure(&step, &error))
            }
            Err(e) => return Err(failure(&step, &e.to_string())),
        }
    }
    match docker.inspect_image(&tag).await {
        Ok(_) => Ok(tag),
        Err(e) => Err(docker_error(
            &format!("inspecting the built image `{tag}`"),
            e,
        )),
    }
}

/// Checks (or pulls) the image, then creates and starts the container and its working
/// directory.
async fn create_and_start(
    docker: &Docker,
    name: &str,
    image: &str,
    pull: bool,
    body: ContainerCreateBody,
    workdir: &str,
) -> Result<()> {
    match docker.inspect_image(image).await {
        Ok(_) => {}
        Err(e) if status_of(&e) == Some(404) => {
            if !pull {
                return Err(Error::environment(format!(
                    "docker: image `{image}` does not exist locally and pulling is disabled \
                     (parameter `pull` = false); build or pull it first, or set `pull` to true"
                )));
            }
            let options = CreateImageOptionsBuilder::new().from_image(image).build();
            let mut progress = docker.create_image(Some(options), None, None);
            while let Some(step) = progress.next().await {
                step.map_err(|e| docker_error(&format!("pulling image `{image}`"), e))?;
            }
        }
        Err(e) => return Err(docker_error(&format!("inspecting image `{image}`"), e)),
    }
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| docker_error(&format!("creating a container from `{image}`"), e))?;
    docker
        .start_container(name, None)
        .await
        .map_err(|e| docker_error(&format!("starting container `{name}`"), e))?;
    // Docker creates the working directory itself; this makes sure of it (best effort: an
    // image without `mkdir` still works).
    let argv = vec!["mkdir".to_string(), "-p".to_string(), workdir.to_string()];
    match session::exec_captured(docker, name, argv, Vec::new(), "/", None).await {
        Ok(r) if r.returncode == 0 => {}
        Ok(r) => tracing::warn!(
            container = %name,
            "mkdir -p {workdir} failed ({}): {}",
            r.returncode,
            r.stderr.trim()
        ),
        Err(e) => tracing::warn!(container = %name, "mkdir -p {workdir} failed: {e}"),
    }
    Ok(())
}
