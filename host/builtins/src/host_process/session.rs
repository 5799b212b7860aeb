//! One open `host_process` environment: commands and files on this machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use agentcompass_plugin_api::contracts::{ExecCommand, ExecRequest, ExecResult, SessionInfo};
use agentcompass_plugin_api::sdk::provider::{
    blocking, copy_file, copy_tree, spawn_error, timeout_duration, transfer_error,
};
use agentcompass_plugin_api::sdk::{async_trait, EnvironmentSession};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};
use tokio::process::Command;

use super::workdir::Workdir;
use super::ID;
use crate::files::{probe, read_text_file, remove_owned_dir, write_text_file};
use crate::process::{run_captured, Detached};

/// One open `host_process` environment. Deliberately not `Debug`: it holds resolved secrets.
pub(super) struct HostProcessSession {
    id: String,
    workdir: Workdir,
    env: BTreeMap<String, String>,
    /// Detached commands, killed on close (or when the session is dropped).
    detached: Detached,
}

impl HostProcessSession {
    pub(super) fn new(id: String, workdir: Workdir, env: BTreeMap<String, String>) -> Self {
        HostProcessSession {
            id,
            workdir,
            env,
            detached: Detached::default(),
        }
    }

    /// A session path as a host path: absolute paths as they are (the root is created first
    /// when they lie under it), others under the workspace (created if needed).
    async fn resolve(&self, path: &str) -> Result<PathBuf> {
        if Path::new(path).is_absolute() {
            self.workdir.claim(Path::new(path)).await
        } else if path.is_empty() {
            self.workdir.workspace().await
        } else {
            Ok(self.workdir.workspace().await?.join(path))
        }
    }

    fn spawn_detached(&self, cmd: Command, program: &str, cwd: &Path) -> Result<ExecResult> {
        let child = crate::process::spawn_detached(cmd, |e| spawn_error(program, cwd, e))?;
        self.detached.push(child);
        Ok(ExecResult::new(0, "", ""))
    }
}

#[async_trait]
impl EnvironmentSession for HostProcessSession {
    fn info(&self) -> SessionInfo {
        let dirs = self.workdir.dirs();
        // A root not created yet has nothing to release.
        let close_params = match self.workdir.created() {
            None => Value::Null,
            Some(root) => json!({"workdir": root.to_string_lossy(), "owned": true}),
        };
        SessionInfo {
            id: self.id.clone(),
            provider: ID.to_string(),
            default_workdir: Some(dirs.workspace.clone()),
            close_params,
            dirs,
            build_log: None,
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        if let Some(user) = &request.user {
            return Err(Error::unsupported(format!(
                "environment `host_process` cannot run commands as another user (`{user}`)"
            )));
        }
        let timeout = timeout_duration(request.timeout_seconds)?;
        let mut env = request.effective_env(&self.env)?;
        let tmp = self.workdir.ensure().await?.join("tmp");
        env.entry("TMPDIR".to_string())
            .or_insert_with(|| tmp.to_string_lossy().into_owned());
        let cwd = match &request.cwd {
            Some(cwd) => self.resolve(cwd).await?,
            None => self.workdir.workspace().await?,
        };
        if !tokio::fs::metadata(&cwd).await.is_ok_and(|m| m.is_dir()) {
            return Err(Error::environment(format!(
                "exec: working directory `{}` does not exist or is not a directory",
                cwd.display()
            )));
        }
        let (program, mut cmd) = match &request.command {
            ExecCommand::Shell(line) => {
                let mut cmd = Command::new("/bin/sh");
                cmd.arg("-c").arg(line);
                ("/bin/sh", cmd)
            }
            ExecCommand::Argv(argv) => {
                let mut cmd = Command::new(&argv[0]);
                cmd.args(&argv[1..]);
                (argv[0].as_str(), cmd)
            }
        };
        cmd.current_dir(&cwd)
            .envs(&env)
            .stdin(Stdio::null())
            .process_group(0);
        if request.detach {
            return self.spawn_detached(cmd, program, &cwd);
        }
        run_captured(cmd, program, timeout, |e| spawn_error(program, &cwd, e)).await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        blocking(ID, move || {
            copy_file(&src, &dst)
                .map_err(|e| transfer_error("upload", src.display(), dst.display(), e))
        })
        .await?
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        blocking(ID, move || {
            copy_file(&src, &dst)
                .map_err(|e| transfer_error("download", src.display(), dst.display(), e))
        })
        .await?
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        blocking(ID, move || {
            copy_tree(&src, &dst)
                .map_err(|e| transfer_error("upload_dir", src.display(), dst.display(), e))
        })
        .await?
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        blocking(ID, move || {
            copy_tree(&src, &dst)
                .map_err(|e| transfer_error("download_dir", src.display(), dst.display(), e))
        })
        .await?
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        read_text_file(&self.resolve(path).await?).await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        write_text_file(&self.resolve(path).await?, content).await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        probe(&self.resolve(path).await?, "is_file")
            .await
            .map(|m| m.is_some_and(|m| m.is_file()))
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        probe(&self.resolve(path).await?, "is_dir")
            .await
            .map(|m| m.is_some_and(|m| m.is_dir()))
    }

    async fn close(&self) -> Result<()> {
        self.detached.kill_all().await;
        if let Some(dir) = self.workdir.close().await? {
            remove_owned_dir(dir.clone(), ID).await?;
            tracing::debug!(provider = ID, workdir = %dir.display(), "removed workdir");
        }
        Ok(())
    }
}
