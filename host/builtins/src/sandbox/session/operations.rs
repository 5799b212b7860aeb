//! The plugin API's session operations on a sandbox: commands, files, the network policy,
//! close.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use agentcompass_plugin_api::contracts::{
    ExecRequest, ExecResult, NetworkMode, NetworkPolicy, SessionDirs, SessionInfo,
};
use agentcompass_plugin_api::sdk::provider::{
    copy_file, copy_tree, timeout_duration, transfer_error,
};
use agentcompass_plugin_api::sdk::{async_trait, EnvironmentSession};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use super::super::provision::discard;
use super::super::{bwrap_start_error, ID};
use super::{cover_failed, setup_failure, Network, SandboxSession};
use crate::process::run_captured;

#[async_trait]
impl EnvironmentSession for SandboxSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            provider: ID.to_string(),
            default_workdir: Some(self.layout.workdir.to_string_lossy().into_owned()),
            close_params: match self.layout.cgroup.dirs.as_slice() {
                [] => json!({"dir": self.dir.to_string_lossy()}),
                cgroups => json!({"dir": self.dir.to_string_lossy(), "cgroups": cgroups}),
            },
            dirs: SessionDirs::default().with_workspace(self.layout.workdir.to_string_lossy()),
            build_log: self.build_log.as_ref().map(|l| l.display().to_string()),
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        if let Some(user) = &request.user {
            return Err(Error::unsupported(format!(
                "environment `{ID}` cannot run commands as another user (`{user}`)"
            )));
        }
        let timeout = timeout_duration(request.timeout_seconds)?;
        // Checked now; merged again for each command built, so that the merged environment
        // is not held while the command runs (an agent's whole run).
        request.effective_env(&self.env)?;
        // Chosen when the command starts: a later switch does not change it.
        let network = self.current_network();
        let cwd = match &request.cwd {
            Some(cwd) => self.layout.absolute(cwd),
            None => self.layout.workdir.clone(),
        };
        let shown = cwd.to_string_lossy().into_owned();
        let can_enter = self.can_enter(&network);
        let (is_dir, masks, prepared) = self
            .with_layout(move |layout| {
                let is_dir = match layout.resolve("exec", &shown) {
                    Ok(resolved) => fs::metadata(resolved.host).is_ok_and(|m| m.is_dir()),
                    // /proc, /dev: bwrap says whether it exists.
                    Err(_) => true,
                };
                let prepared = if can_enter {
                    layout.template.prepared(&layout.bwrap)
                } else {
                    None
                };
                Ok((is_dir, layout.socket_masks()?, prepared))
            })
            .await?;
        if !is_dir {
            return Err(Error::environment(format!(
                "exec: working directory `{}` does not exist or is not a directory",
                cwd.display()
            )));
        }
        let build = |masks: &[PathBuf]| {
            let env = request.effective_env(&self.env)?;
            match &prepared {
                Some(prepared) => {
                    self.entered_command(prepared, &network, &request, &env, &cwd, masks)
                }
                None => Ok(self.command(&network, &request, &env, &cwd, masks)),
            }
        };
        let (cmd, program) = build(&masks)?;
        let bwrap = self.layout.bwrap.clone();
        let start_failed = move |e| bwrap_start_error(&bwrap, e);
        if request.detach {
            let child = crate::process::spawn_detached(cmd, start_failed)?;
            self.detached.push(child);
            if self.closed.load(Ordering::SeqCst) {
                // Closed while starting: close may have missed it.
                self.detached.kill_all().await;
                self.check_open()?;
            }
            return Ok(ExecResult::new(0, "", ""));
        }
        let mut result = run_captured(cmd, &program, timeout, start_failed.clone()).await?;
        if cover_failed(&result, &masks) {
            // A host socket went away between the listing and bwrap's cover of it: nothing
            // ran yet, so list again and start once more.
            let masks = self.with_layout(|layout| layout.socket_masks()).await?;
            let (cmd, _) = build(&masks)?;
            result = run_captured(cmd, &program, timeout, start_failed).await?;
        }
        match setup_failure(&result, &program, &cwd) {
            Some(error) => Err(error),
            None => Ok(result),
        }
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload", &dst)?;
            copy_file(&src, &target.host)
                .map_err(|e| transfer_error("upload", src.display(), &dst, e))
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download", &src)?;
            copy_file(&source.host, &dst)
                .map_err(|e| transfer_error("download", &src, dst.display(), e))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload_dir", &dst)?;
            copy_tree(&src, &target.host)
                .map_err(|e| transfer_error("upload_dir", src.display(), &dst, e))
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download_dir", &src)?;
            copy_tree(&source.host, &dst)
                .map_err(|e| transfer_error("download_dir", &src, dst.display(), e))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        let path = path.to_string();
        self.with_layout(move |layout| {
            let source = layout.resolve("read_text", &path)?;
            let bytes = fs::read(&source.host)
                .map_err(|e| Error::environment(format!("read_text: cannot read `{path}`: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| Error::environment(format!("read_text: `{path}` is not valid UTF-8")))
        })
        .await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        let (path, content) = (path.to_string(), content.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("write_text", &path)?;
            let fail = |e: io::Error| {
                Error::environment(format!("write_text: cannot write `{path}`: {e}"))
            };
            if let Some(parent) = target.host.parent() {
                fs::create_dir_all(parent).map_err(fail)?;
            }
            fs::write(&target.host, content).map_err(fail)
        })
        .await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        Ok(self
            .probe("is_file", path)
            .await?
            .is_some_and(|m| m.is_file()))
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        Ok(self
            .probe("is_dir", path)
            .await?
            .is_some_and(|m| m.is_dir()))
    }

    /// Makes `policy` the network of every command started from now on (commands already
    /// running keep theirs): the host's network, an empty namespace, or an empty namespace
    /// behind this allowlist's or denylist's egress proxy (started on its first use). Nothing is started
    /// or probed otherwise. A policy that does not normalize, or a proxy that cannot start,
    /// is an error and leaves the current policy in place.
    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        self.check_open()?;
        let policy = policy
            .normalized()
            .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?;
        let egress = match policy.network_mode {
            NetworkMode::Allowlist | NetworkMode::Denylist => {
                let (egress, started) = self.proxy_for(&policy)?;
                if let Some(ctx) = self.ctx.as_ref().filter(|_| started) {
                    ctx.register_secret(egress.token()).await;
                }
                Some(egress)
            }
            NetworkMode::Public | NetworkMode::NoNetwork => None,
        };
        if self.closed.load(Ordering::SeqCst) {
            // Closed while the proxy started: close may have missed it.
            self.stop_proxies().await;
            self.check_open()?;
        }
        tracing::debug!(provider = ID, session = %self.id, mode = %policy.network_mode, "network policy set");
        *self.network.lock().unwrap_or_else(PoisonError::into_inner) = Network { policy, egress };
        Ok(())
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        self.detached.kill_all().await;
        self.stop_proxies().await;
        discard(self.dir.clone(), &self.layout).await?;
        tracing::debug!(provider = ID, dir = %self.dir.display(), "removed sandbox directory");
        Ok(())
    }
}
