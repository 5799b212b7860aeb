//! A session's container: its image (checked, pulled or built from a context), its create
//! body, and starting it within the build timeout.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::{tracing, Error, ErrorKind, Result};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, CreateImageOptionsBuilder,
};
use futures_util::StreamExt;

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

impl Launch {
    /// Connects, then (within the deadline) builds or checks the image, creates and starts the
    /// container; on failure the container is removed again. The connected client and the
    /// container's working directory.
    pub(crate) async fn run(self) -> Result<(Daemon, String)> {
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
            Ok(workdir) => Ok((docker, workdir)),
            Err(e) => {
                if let Err(cleanup) = remove_container(&docker, &container).await {
                    tracing::warn!(container = %container, "cleanup failed: {cleanup}");
                }
                Err(e)
            }
        }
    }

    async fn start(self, docker: &Daemon) -> Result<String> {
        let image = match self.build_context {
            Some(context) => build_image(docker, &context, self.image, &self.build_network).await?,
            None => self.image.ok_or_else(|| image_required(docker.engine))?,
        };
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            ..self.body
        };
        let workdir = (self.workdir, self.image_workdir);
        create_and_start(docker, &self.container, &image, self.pull, body, workdir).await
    }
}

/// How many of a failed build's last output lines its error quotes.
const FAILED_BUILD_LINES: usize = 8;

/// The built image of the host directory `context`: tagged `tag` (default: by the context's
/// sha256), reused when an image with that tag and the context's sha256 label exists. Built on
/// `network`.
async fn build_image(
    docker: &Daemon,
    context: &Path,
    tag: Option<String>,
    network: &str,
) -> Result<String> {
    use sha2::{Digest, Sha256};
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
    let sha = hex::encode(Sha256::digest(&tar));
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
                return Ok(tag);
            }
        }
        Err(e) if status_of(&e) == Some(404) => {}
        Err(e) => return Err(docker.engine.error(&format!("inspecting image `{tag}`"), e)),
    }
    tracing::debug!(provider = docker.engine.id(), image = %tag, context = %shown, "building the image");
    let labels = HashMap::from([(LABEL_CONTEXT, sha.as_str())]);
    let options = BuildImageOptionsBuilder::new()
        .dockerfile("Dockerfile")
        .t(&tag)
        .labels(&labels)
        .pull("false")
        .rm(true)
        .forcerm(true)
        .networkmode(network)
        .build();
    let mut output = docker.build_image(options, None, Some(bollard::body_full(tar.into())));
    let mut log = BuildLog::default();
    while let Some(item) = output.next().await {
        let error = match item {
            Ok(info) => {
                log.push(info.stream.as_deref().unwrap_or_default());
                continue;
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => error,
            Err(e) => e.to_string(),
        };
        return Err(Error::environment(format!(
            "{}: building image `{tag}` from `{shown}` failed{}",
            docker.engine,
            log.failure(&error)
        )));
    }
    match docker.inspect_image(&tag).await {
        Ok(_) => Ok(tag),
        Err(e) => Err(docker
            .engine
            .error(&format!("inspecting the built image `{tag}`"), e)),
    }
}

/// What a build printed: the instruction it was at and its last output lines.
#[derive(Default)]
struct BuildLog {
    /// The last `Step n/m : ...` (Docker) or `STEP n/m: ...` (Podman) line.
    step: Option<String>,
    /// The last non-empty output lines, at most [`FAILED_BUILD_LINES`].
    tail: std::collections::VecDeque<String>,
}

impl BuildLog {
    /// Takes a chunk of the build's output (the builder's own bookkeeping lines and terminal
    /// colours left out).
    fn push(&mut self, chunk: &str) {
        let lines = chunk.lines().map(strip_colours);
        for line in lines.map(|l| l.trim_end().to_string()) {
            let bookkeeping = ["--->", "Removing intermediate container", "Running in "]
                .iter()
                .any(|p| line.trim_start().starts_with(p));
            if line.trim().is_empty() || bookkeeping {
                continue;
            }
            if line.starts_with("Step ") || line.starts_with("STEP ") {
                self.step = Some(line);
                self.tail.clear();
                continue;
            }
            if self.tail.len() == FAILED_BUILD_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
    }

    /// The failure's description: ` at `<instruction>`: <error>` and the instruction's last
    /// output lines.
    fn failure(&self, error: &str) -> String {
        let error = error
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("the build failed");
        let at = self
            .step
            .as_deref()
            .map(|s| format!(" at `{s}`"))
            .unwrap_or_default();
        let tail: Vec<&str> = self
            .tail
            .iter()
            .map(String::as_str)
            .filter(|l| l.trim() != error)
            .collect();
        if tail.is_empty() {
            format!("{at}: {error}")
        } else {
            format!("{at}: {error}; its last output: {}", tail.join(" | "))
        }
    }
}

/// `line` without terminal colour sequences (`ESC [ ... m`; the classic builder colours a
/// step's standard error).
fn strip_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Checks (or pulls) the image, then creates and starts the container and its working
/// directory (`workdir`, or the image's `WORKDIR` when `image_workdir` and it names one other
/// than `/`), which it returns.
async fn create_and_start(
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
async fn pull_if_missing(docker: &Daemon, image: &str, pull: bool) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_build_quotes_its_instruction_and_last_output() {
        let mut log = BuildLog::default();
        // Docker's classic builder, as it streams (Podman's steps read `STEP 2/2: ...`).
        for chunk in [
            "Step 1/2 : FROM ubuntu:24.04\n ---> 7c4012406af9\n",
            "Step 2/2 : RUN make && exit 3\n ---> Running in 54ceabd208f5\n",
            "\u{1b}[91mmake: toolchain 9.9 is not available\n\u{1b}[0m",
            "building\nRemoving intermediate container 54ceabd208f5\n",
        ] {
            log.push(chunk);
        }
        assert_eq!(
            log.failure("The command '/bin/sh -c make && exit 3' returned a non-zero code: 3"),
            " at `Step 2/2 : RUN make && exit 3`: The command '/bin/sh -c make && exit 3' \
             returned a non-zero code: 3; its last output: make: toolchain 9.9 is not \
             available | building"
        );
        let mut podman = BuildLog::default();
        podman.push("STEP 1/1: RUN false\nError: building at STEP \"RUN false\": exit status 1\n");
        assert_eq!(
            podman.failure("building at STEP \"RUN false\": exit status 1"),
            " at `STEP 1/1: RUN false`: building at STEP \"RUN false\": exit status 1; its last \
             output: Error: building at STEP \"RUN false\": exit status 1"
        );
    }
}
