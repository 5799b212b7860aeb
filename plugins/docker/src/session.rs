//! One open `docker` or `podman` environment: a running container, driven with execs and
//! archives.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::Daemon;
use agentcompass_plugin_api::contracts::{
    ExecCommand, ExecRequest, ExecResult, NetworkPolicy, SessionDirs, SessionInfo,
};
use agentcompass_plugin_api::sdk::provider::{
    blocking, random_suffix, timeout_duration, transfer_error,
};
use agentcompass_plugin_api::sdk::{async_trait, EnvironmentSession};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use crate::archive;
use crate::compose::stack::Stack;
use crate::config::normalize;
use crate::container::Started;
use crate::engine::remove_container;
use crate::exec::{probe, run_exec, start_detached, ExecSpec, EXEC_MARKER};
use crate::isolation::SessionNetwork;
use crate::network::Attachment;
use crate::transfer::{fetch, fetch_file, follow, put, MAX_SYMLINKS};

/// Where a session's engine is, as its close parameters record it.
#[derive(Debug, Clone)]
pub(crate) struct EngineAddress {
    /// The engine's address.
    pub(crate) address: String,
    /// The program of the private Podman service the address belongs to, if it is one.
    pub(crate) private_program: Option<String>,
    /// Podman's store (`store.graphRoot`), which `env close` checks it reaches.
    pub(crate) store: Option<String>,
}

/// An open container session. Deliberately not `Debug`: it holds resolved secrets.
pub(crate) struct ContainerSession {
    docker: Daemon,
    container: String,
    origin: EngineAddress,
    workdir: String,
    env: BTreeMap<String, String>,
    network: SessionNetwork,
    closed: AtomicBool,
    /// The log of the build of the container's image, when it was built from a context.
    build_log: Option<PathBuf>,
    /// The Compose project around the container (its network, volumes and sidecars).
    stack: Option<tokio::sync::Mutex<Stack>>,
    /// What `env close` needs of the project (fixed once it started).
    stack_params: Option<serde_json::Value>,
}

impl ContainerSession {
    pub(crate) fn new(
        docker: Daemon,
        container: String,
        origin: EngineAddress,
        started: Started,
        env: BTreeMap<String, String>,
        network: SessionNetwork,
    ) -> Self {
        ContainerSession {
            docker,
            container,
            origin,
            workdir: started.workdir,
            build_log: started.build_log,
            env,
            network,
            closed: AtomicBool::new(false),
            stack: None,
            stack_params: None,
        }
    }

    /// The session with the Compose project `stack` around its container.
    pub(crate) fn with_stack(mut self, stack: Stack) -> Self {
        self.stack_params = Some(json!({
            "sidecars": stack.containers.iter().map(|(_, c)| c).collect::<Vec<_>>(),
            "network": stack.network,
            "volumes": stack.volumes,
            "copies": stack.copies.as_ref().map(|d| d.display().to_string()),
        }));
        self.stack = Some(tokio::sync::Mutex::new(stack));
        self
    }

    /// What `env close` needs after a crash: the container, the engine's address (and the
    /// program of the private Podman service it belonged to), the egress directory.
    fn close_params(&self) -> serde_json::Value {
        let engine = self.docker.engine;
        let mut params = json!({
            "container": self.container,
            engine.address_param(): self.origin.address,
        });
        if let Some(program) = &self.origin.private_program {
            params["podman"] = json!(program);
        }
        if let Some(store) = &self.origin.store {
            params["store"] = json!(store);
        }
        if let SessionNetwork::Isolated { dir, .. } = &self.network {
            params["egress_dir"] = json!(dir.display().to_string());
        }
        if let Some(stack) = &self.stack_params {
            params["compose"] = stack.clone();
        }
        params
    }

    /// A session path as an absolute container path.
    fn abs(&self, path: &str) -> String {
        normalize(Path::new(&self.workdir), path)
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::environment(format!(
                "environment `{}`: the session is closed (container `{}`)",
                self.docker.engine, self.container
            )))
        } else {
            Ok(())
        }
    }

    /// Runs `work(docker, container)` on the provider runtime.
    async fn call<T, F, Fut>(&self, work: F) -> Result<T>
    where
        F: FnOnce(Daemon, String) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.check_open()?;
        crate::rt::spawn(work(self.docker.clone(), self.container.clone())).await?
    }

    /// `test <flag> <path>` in the container.
    async fn test(&self, flag: &'static str, path: &str) -> Result<bool> {
        let path = self.abs(path);
        self.call(
            move |docker, container| async move { probe(&docker, &container, flag, &path).await },
        )
        .await
    }
}

#[async_trait]
impl EnvironmentSession for ContainerSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.container.clone(),
            provider: self.docker.engine.id().to_string(),
            default_workdir: Some(self.workdir.clone()),
            dirs: SessionDirs::default().with_workspace(self.workdir.clone()),
            close_params: self.close_params(),
            build_log: self.build_log.as_ref().map(|l| l.display().to_string()),
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        let timeout = timeout_duration(request.timeout_seconds)?;
        let mut env = request.effective_env(&self.env)?;
        if let SessionNetwork::Isolated { state, .. } = &self.network {
            // The proxy variables of the policy current now (they override any binding).
            env.extend(state.lock().await.env());
        }
        let cwd = match &request.cwd {
            Some(cwd) => self.abs(cwd),
            None => self.workdir.clone(),
        };
        let argv = match request.command {
            ExecCommand::Shell(line) => vec!["/bin/sh".to_string(), "-c".to_string(), line],
            ExecCommand::Argv(argv) => argv,
        };
        let marker = random_suffix();
        let mut env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        env.push(format!("{EXEC_MARKER}={marker}"));
        let detach = request.detach;
        let spec = ExecSpec {
            argv,
            env,
            cwd,
            user: request.user,
        };
        self.call(move |docker, container| async move {
            if detach {
                start_detached(&docker, &container, spec).await
            } else {
                run_exec(&docker, &container, spec, timeout, Some(marker)).await
            }
        })
        .await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let target = self.abs(dst);
        let src = src.to_path_buf();
        let shown = dst.to_string();
        self.call(move |docker, container| async move {
            let fail = |e: String| transfer_error("upload", src.display(), &shown, e);
            let meta = std::fs::metadata(&src).map_err(|e| fail(e.to_string()))?;
            if meta.is_dir() {
                return Err(fail(
                    "the source is a directory (use the *_dir operation)".to_string(),
                ));
            }
            let target = if probe(&docker, &container, "-d", &target).await? {
                let name = src.file_name().map(|n| n.to_string_lossy().into_owned());
                normalize(Path::new(&target), &name.unwrap_or_default())
            } else {
                target
            };
            let from = src.clone();
            let tar = blocking(docker.engine.id(), move || {
                archive::file_tar_from_host(&from, &target)
            })
            .await?
            .map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let source = self.abs(src);
        let (shown, dst) = (src.to_string(), dst.to_path_buf());
        self.call(move |docker, container| async move {
            let fail = |e: String| transfer_error("download", &shown, dst.display(), e);
            let (data, mode) = fetch_file(&docker, &container, &source)
                .await
                .map_err(fail)?;
            let name = Path::new(&source)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let to = dst.clone();
            blocking(docker.engine.id(), move || {
                archive::write_host_file(&to, &name, &data, mode)
            })
            .await?
            .map_err(|e| fail(e.to_string()))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let target = self.abs(dst);
        let src = src.to_path_buf();
        let shown = dst.to_string();
        self.call(move |docker, container| async move {
            let fail = |e: String| transfer_error("upload_dir", src.display(), &shown, e);
            if target == "/" {
                return Err(fail("cannot replace the root directory".to_string()));
            }
            let from = src.clone();
            let tar = blocking(docker.engine.id(), move || {
                archive::tree_tar_from_host(&from, &target)
            })
            .await?
            .map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let source = self.abs(src);
        let (shown, dst) = (src.to_string(), dst.to_path_buf());
        self.call(move |docker, container| async move {
            let fail = |e: String| transfer_error("download_dir", &shown, dst.display(), e);
            let mut path = source;
            for _ in 0..MAX_SYMLINKS {
                let tar = fetch(&docker, &container, &path).await.map_err(fail)?;
                let to = dst.clone();
                match blocking(docker.engine.id(), move || archive::extract_tree(&tar, &to))
                    .await?
                    .map_err(|e| fail(e.to_string()))?
                {
                    None => return Ok(()),
                    Some(link) => path = follow(&path, &link),
                }
            }
            Err(fail("too many levels of symbolic links".to_string()))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        let source = self.abs(path);
        let shown = path.to_string();
        self.call(move |docker, container| async move {
            let (data, _) = fetch_file(&docker, &container, &source)
                .await
                .map_err(|e| {
                    Error::environment(format!("read_text: cannot read `{shown}`: {e}"))
                })?;
            String::from_utf8(data)
                .map_err(|_| Error::environment(format!("read_text: `{shown}` is not valid UTF-8")))
        })
        .await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        let target = self.abs(path);
        let shown = path.to_string();
        let content = content.as_bytes().to_vec();
        self.call(move |docker, container| async move {
            let fail =
                |e: String| Error::environment(format!("write_text: cannot write `{shown}`: {e}"));
            let tar =
                archive::file_tar(&target, &content, 0o644).map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        self.test("-f", path).await
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        self.test("-d", path).await
    }

    /// Public containers accept only `public`; isolated ones every non-public policy: the
    /// session's proxy is replaced (tunnels of the previous policy closed) or stopped
    /// (`no-network`), and commands started from then on get that policy's proxy variables.
    /// Commands already running keep their variables, but reach only what the new policy
    /// permits. A refused or failed switch leaves the current policy.
    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        self.check_open()?;
        let policy = policy.normalized().map_err(|e| {
            Error::invalid_input(format!("environment `{}`: {e}", self.docker.engine))
        })?;
        match &self.network {
            SessionNetwork::Shared { .. } if policy.is_public() => Ok(()),
            SessionNetwork::Shared { .. } => Err(Attachment::refusal(
                self.docker.engine,
                &NetworkPolicy::public(),
                "requested network policy",
                &policy,
            )),
            SessionNetwork::Isolated { state, .. } => {
                let isolation = state.clone();
                self.call(move |docker, container| async move {
                    isolation
                        .lock()
                        .await
                        .apply(&docker, &container, policy)
                        .await
                })
                .await
            }
        }
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        let removed = crate::rt::spawn({
            let (docker, container) = (self.docker.clone(), self.container.clone());
            async move { remove_container(&docker, &container).await }
        })
        .await?;
        let down = match &self.stack {
            Some(stack) => {
                let mut stack = stack.lock().await;
                let docker = self.docker.clone();
                let taken = std::mem::replace(&mut *stack, Stack::empty());
                crate::rt::spawn(async move {
                    let mut taken = taken;
                    taken.down(&docker).await
                })
                .await?
            }
            None => Ok(()),
        };
        let stopped = match &self.network {
            SessionNetwork::Isolated { state, .. } => {
                let isolation = state.clone();
                crate::rt::spawn(async move { isolation.lock().await.stop().await }).await?
            }
            SessionNetwork::Shared { .. } => Ok(()),
        };
        removed.and(down).and(stopped)
    }
}
