//! A session's container: its image (checked, pulled or built from a context), its create
//! body, and starting it within the build timeout.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use agentcompass_plugin_api::{tracing, Error, ErrorKind, Result};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, CreateImageOptionsBuilder,
};
use futures_util::StreamExt;

use crate::build_log::{self, BuildLog};
use crate::config::image_required;
use crate::engine::{remove_container, status_of};
use crate::engine::{Daemon, Engine};
use crate::{archive, build_lock, exec};

/// Label of a built image: the sha256 of its build context archive.
pub(crate) const LABEL_CONTEXT: &str = "agentcompass.context_sha256";

/// Repository of built images tagged by their context.
const BUILD_REPOSITORY: &str = "agentcompass-build";

/// Everything a session's container is started from, on the provider runtime.
pub(crate) struct Launch {
    /// The engine.
    pub(crate) engine: Engine,
    /// The engine's address.
    pub(crate) host: String,
    /// `setup.image` (the tag of a built image, if a context is given).
    pub(crate) image: Option<String>,
    /// The build context, if the image is built.
    pub(crate) build_context: Option<PathBuf>,
    /// Whether a missing image is pulled.
    pub(crate) pull: bool,
    /// The network an image is built on (Harbor's builds are never network-restricted: the
    /// task's policy applies from the container's start).
    pub(crate) build_network: String,
    /// The container's name.
    pub(crate) container: String,
    /// The create body, but the image.
    pub(crate) body: ContainerCreateBody,
    /// The working directory made sure of after start.
    pub(crate) workdir: String,
    /// Whether the image's `WORKDIR` (other than `/`) replaces `workdir` (the task named
    /// none: a container starts where its image says, as Harbor's do).
    pub(crate) image_workdir: bool,
    /// `setup.build_timeout_seconds`: the limit of everything but connecting.
    pub(crate) deadline: Option<Duration>,
}

/// A started container: its working directory, and its image's build log when it was built.
pub(crate) struct Started {
    pub(crate) workdir: String,
    pub(crate) build_log: Option<PathBuf>,
}

impl Launch {
    /// Connects, then (within the deadline) builds or checks the image, creates and starts the
    /// container; on failure the container is removed again. The connected client and what
    /// was started.
    pub(crate) async fn run(self) -> Result<(Daemon, Started)> {
        let docker = Daemon::connect(self.engine, &self.host).await?;
        let (container, engine) = (self.container.clone(), self.engine);
        let outcome = match self.deadline {
            Some(limit) => match tokio::time::timeout(limit, self.start(&docker)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "{}: opening the environment took longer than \
                         setup.build_timeout_seconds ({}s)",
                        engine,
                        limit.as_secs_f64()
                    ),
                )),
            },
            None => self.start(&docker).await,
        };
        match outcome {
            Ok(started) => Ok((docker, started)),
            Err(e) => {
                if let Err(cleanup) = remove_container(&docker, &container).await {
                    tracing::warn!(container = %container, "cleanup failed: {cleanup}");
                }
                Err(e)
            }
        }
    }

    async fn start(self, docker: &Daemon) -> Result<Started> {
        let (image, build_log) = match self.build_context {
            Some(context) => {
                let recipe = Recipe::dockerfile_in(context);
                let built = build_image(docker, &recipe, self.image, &self.build_network).await?;
                (built.tag, built.log)
            }
            None => (
                self.image.ok_or_else(|| image_required(docker.engine))?,
                None,
            ),
        };
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            ..self.body
        };
        let workdir = (self.workdir, self.image_workdir);
        let workdir =
            create_and_start(docker, &self.container, &image, self.pull, body, workdir).await?;
        Ok(Started { workdir, build_log })
    }
}

/// What an image is built from: a context directory, the Dockerfile in it, build arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recipe {
    pub(crate) context: PathBuf,
    pub(crate) dockerfile: String,
    pub(crate) args: BTreeMap<String, String>,
}

impl Recipe {
    /// The context's `Dockerfile`, no arguments (a task's own definition).
    pub(crate) fn dockerfile_in(context: PathBuf) -> Recipe {
        Recipe {
            context,
            dockerfile: "Dockerfile".to_string(),
            args: BTreeMap::new(),
        }
    }

    /// The image's identity: the sha256 of the context's archive, and of the Dockerfile's
    /// name and the arguments after it when they are not the defaults.
    fn sha256(&self, tar: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(tar);
        if self.dockerfile != "Dockerfile" || !self.args.is_empty() {
            hash.update(b"\0dockerfile\0");
            hash.update(self.dockerfile.as_bytes());
            for (key, value) in &self.args {
                hash.update(format!("\0{key}={value}").as_bytes());
            }
        }
        hex::encode(hash.finalize())
    }
}

/// The image built from `recipe`: tagged `tag` (default: by the recipe's sha256), reused when
/// an image with that tag and the recipe's sha256 label exists. Built on `network`.
pub(crate) async fn build_image(
    docker: &Daemon,
    recipe: &Recipe,
    tag: Option<String>,
    network: &str,
) -> Result<Built> {
    let context = recipe.context.as_path();
    let shown = context.display().to_string();
    let from = context.to_path_buf();
    let tar = tokio::task::spawn_blocking(move || archive::context_tar(&from))
        .await
        .map_err(|e| {
            Error::environment(format!(
                "{}: archiving `{shown}` failed: {e}",
                docker.engine
            ))
        })?
        .map_err(|e| {
            Error::environment(format!(
                "{}: cannot archive the build context `{shown}`: {e}",
                docker.engine
            ))
        })?;
    let sha = recipe.sha256(&tar);
    let tag = tag.unwrap_or_else(|| format!("{BUILD_REPOSITORY}/ctx-{}:latest", &sha[..16]));
    // Held until the image is built or found: another open of the same context (this run's,
    // or another process's on this machine) waits here, then finds the image.
    let (locked, engine) = (sha.clone(), docker.engine);
    let _lock = tokio::task::spawn_blocking(move || build_lock::lock(engine, &locked))
        .await
        .ok()
        .flatten();
    match docker.inspect_image(&tag).await {
        Ok(found) => {
            let labels = found.config.and_then(|c| c.labels).unwrap_or_default();
            if labels.get(LABEL_CONTEXT) == Some(&sha) {
                tracing::debug!(provider = docker.engine.id(), image = %tag, "reusing the built image");
                let log = build_log::path(docker.engine, &tag).filter(|p| p.is_file());
                return Ok(Built { tag, log });
            }
        }
        Err(e) if status_of(&e) == Some(404) => {}
        Err(e) => return Err(docker.engine.error(&format!("inspecting image `{tag}`"), e)),
    }
    tracing::debug!(provider = docker.engine.id(), image = %tag, context = %shown, "building the image");
    let labels = HashMap::from([(LABEL_CONTEXT, sha.as_str())]);
    let args: HashMap<&str, &str> = recipe
        .args
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let options = BuildImageOptionsBuilder::new()
        .dockerfile(&recipe.dockerfile)
        .buildargs(&args)
        .t(&tag)
        .labels(&labels)
        .pull("false")
        .rm(true)
        .forcerm(true)
        .networkmode(network)
        .build();
    let output = docker.build_image(options, None, Some(bollard::body_full(tar.into())));
    let log = follow_build(docker, output, &tag, &shown).await?;
    match docker.inspect_image(&tag).await {
        Ok(_) => Ok(Built { tag, log }),
        Err(e) => Err(docker
            .engine
            .error(&format!("inspecting the built image `{tag}`"), e)),
    }
}

/// Follows a build's output into its log (kept per image): the log's path, or the build's
/// error quoting its failing instruction and naming the log.
async fn follow_build(
    docker: &Daemon,
    mut output: impl futures_util::Stream<
            Item = std::result::Result<bollard::models::BuildInfo, bollard::errors::Error>,
        > + Unpin,
    tag: &str,
    shown: &str,
) -> Result<Option<PathBuf>> {
    let mut log = BuildLog::default();
    let kept = build_log::path(docker.engine, tag);
    while let Some(item) = output.next().await {
        let error = match item {
            Ok(info) => {
                log.push(info.stream.as_deref().unwrap_or_default());
                continue;
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => error,
            Err(e) => e.to_string(),
        };
        let named = match kept.as_deref().filter(|path| log.keep(path, Some(&error))) {
            Some(path) => format!(" (its log: {})", path.display()),
            None => String::new(),
        };
        return Err(Error::environment(format!(
            "{}: building image `{tag}` from `{shown}` failed{}{named}",
            docker.engine,
            log.failure(&error)
        )));
    }
    Ok(kept.filter(|path| log.keep(path, None)))
}

/// A built (or found) image: its tag, and its build's log when there is one.
pub(crate) struct Built {
    pub(crate) tag: String,
    pub(crate) log: Option<PathBuf>,
}

/// Checks (or pulls) the image, then creates and starts the container and its working
/// directory (`workdir`, or the image's `WORKDIR` when `image_workdir` and it names one other
/// than `/`), which it returns.
pub(crate) async fn create_and_start(
    docker: &Daemon,
    name: &str,
    image: &str,
    pull: bool,
    mut body: ContainerCreateBody,
    (mut workdir, image_workdir): (String, bool),
) -> Result<String> {
    pull_if_missing(docker, image, pull).await?;
    if image_workdir {
        let inspected = docker.inspect_image(image).await.map_err(|e| {
            docker
                .engine
                .error(&format!("inspecting image `{image}`"), e)
        })?;
        let own = inspected.config.and_then(|c| c.working_dir);
        if let Some(own) = own.filter(|w| w.starts_with('/') && !w.trim_end_matches('/').is_empty())
        {
            body.working_dir = Some(own.clone());
            workdir = own;
        }
    }
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| {
            docker
                .engine
                .error(&format!("creating a container from `{image}`"), e)
        })?;
    docker.start_container(name, None).await.map_err(|e| {
        docker
            .engine
            .error(&format!("starting container `{name}`"), e)
    })?;
    // Both engines create the working directory themselves; for Docker this makes sure of it
    // (best effort: an image without `mkdir` still works). Podman's exec costs ~80 ms.
    if docker.engine == Engine::Podman {
        return Ok(workdir);
    }
    let argv = vec!["mkdir".to_string(), "-p".to_string(), workdir.clone()];
    match exec::exec_captured(docker, name, argv, Vec::new(), "/", None).await {
        Ok(r) if r.returncode == 0 => {}
        Ok(r) => tracing::warn!(
            container = %name,
            "mkdir -p {workdir} failed ({}): {}",
            r.returncode,
            r.stderr.trim()
        ),
        Err(e) => tracing::warn!(container = %name, "mkdir -p {workdir} failed: {e}"),
    }
    Ok(workdir)
}

/// Makes sure `image` is there, pulling it (once per machine at a time) when it is missing
/// and `pull` allows.
pub(crate) async fn pull_if_missing(docker: &Daemon, image: &str, pull: bool) -> Result<()> {
    match docker.inspect_image(image).await {
        Ok(_) => {}
        Err(e) if status_of(&e) == Some(404) => {
            if !pull {
                return Err(Error::environment(format!(
                    "{}: image `{image}` does not exist locally and pulling is disabled \
                     (parameter `pull` = false); build or pull it first, or set `pull` to true",
                    docker.engine
                )));
            }
            // One pull of an image at a time on this machine: an opener that waited finds it.
            let key = {
                use sha2::{Digest, Sha256};
                hex::encode(Sha256::digest(image.as_bytes()))
            };
            let engine = docker.engine;
            let _lock = tokio::task::spawn_blocking(move || build_lock::lock(engine, &key))
                .await
                .ok()
                .flatten();
            if docker.inspect_image(image).await.is_err() {
                let options = CreateImageOptionsBuilder::new().from_image(image).build();
                let mut progress = docker.create_image(Some(options), None, None);
                while let Some(step) = progress.next().await {
                    step.map_err(|e| docker.engine.error(&format!("pulling image `{image}`"), e))?;
                }
            }
        }
        Err(e) => {
            return Err(docker
                .engine
                .error(&format!("inspecting image `{image}`"), e))
        }
    }
    Ok(())
}
