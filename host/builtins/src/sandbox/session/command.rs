//! The process a command runs as: a bwrap of its own, or an entry into the shape's prepared
//! namespace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{ExecCommand, ExecRequest};
use agentcompass_plugin_api::{Error, Result};
use tokio::process::Command;

use super::super::egress::{Egress, Forwarding};
use super::super::enter::{self, capability_mask, entry_program, Prepared, Request};
use super::super::template::{started_by_root, ROOT_CAPABILITIES};
use super::super::{DEFAULT_PATH, ID};
use super::{Network, SandboxSession, DEFAULT_HOME};

/// Variables the C library removes from a setuid program's environment (they reach the
/// sandbox only through `--setenv` when bwrap is setuid).
pub(in crate::sandbox) const SECURE_MODE_DROPPED: [&str; 13] = [
    "GCONV_PATH",
    "GETCONF_DIR",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_TRACE",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "TMPDIR",
    "TZDIR",
];

impl SandboxSession {
    /// The bwrap command running `request` in `cwd` on `network` with the environment `env`
    /// and the host sockets `masks` covered, and the program it starts (for messages).
    pub(in crate::sandbox) fn command(
        &self,
        network: &Network,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        cwd: &Path,
        masks: &[PathBuf],
    ) -> (Command, String) {
        let layout = &self.layout;
        let egress = network.egress.as_deref();
        // An isolated command reaches the proxy and the host endpoints only through the
        // forwarder; on the host's network it reaches the endpoints directly.
        let mounts = if network.isolated() {
            egress
                .map(Egress::mount)
                .into_iter()
                .chain(self.endpoints.iter().cloned())
                .collect()
        } else {
            Vec::new()
        };
        let forwarding = Forwarding::new(&self.forwarder, mounts);
        let forwarding_args = forwarding
            .as_ref()
            .map(Forwarding::bwrap_args)
            .unwrap_or_default();
        let mut cmd = layout.command_in(network.isolated(), cwd, masks, &forwarding_args);
        cmd.env_clear()
            .env("PATH", DEFAULT_PATH)
            .env("HOME", DEFAULT_HOME);
        for (key, value) in env {
            if layout.setuid
                && (key.starts_with("LD_") || SECURE_MODE_DROPPED.contains(&key.as_str()))
            {
                cmd.arg("--setenv").arg(key).arg(value);
            }
            cmd.env(key, value);
        }
        cmd.arg("--");
        if let Some(egress) = egress {
            // The session's network: set over any binding of the same names.
            for (key, value) in egress.env() {
                cmd.env(key, value);
            }
        }
        if let Some(forwarding) = &forwarding {
            forwarding.wrap(&mut cmd);
        }
        let program = match &request.command {
            ExecCommand::Shell(line) => {
                cmd.arg("/bin/sh").arg("-c").arg(line);
                "/bin/sh"
            }
            ExecCommand::Argv(argv) => {
                cmd.args(argv);
                argv[0].as_str()
            }
        };
        cmd.stdin(Stdio::null()).process_group(0);
        (cmd, program.to_string())
    }

    /// Whether a command on `network` can enter the shape's prepared namespace: started by
    /// root through a bwrap that is not setuid, with nothing to forward into it (`allowlist`,
    /// `denylist` and host endpoints need the forwarder's binds, so they keep a bwrap each).
    pub(in crate::sandbox) fn can_enter(&self, network: &Network) -> bool {
        let forwards =
            network.isolated() && (network.egress.is_some() || !self.endpoints.is_empty());
        self.prepared_namespace
            && !forwards
            && !self.layout.setuid
            && started_by_root()
            && entry_program().is_some()
    }

    /// The command running `request` in the prepared namespace `prepared` (what
    /// [`SandboxSession::command`] does with a new bwrap), and the program it starts.
    pub(in crate::sandbox) fn entered_command(
        &self,
        prepared: &Arc<Prepared>,
        network: &Network,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        cwd: &Path,
        masks: &[PathBuf],
    ) -> Result<(Command, String)> {
        let layout = &self.layout;
        let mut full_env = BTreeMap::from([
            ("PATH".to_string(), DEFAULT_PATH.to_string()),
            ("HOME".to_string(), DEFAULT_HOME.to_string()),
        ]);
        full_env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let argv: Vec<String> = match &request.command {
            ExecCommand::Shell(line) => vec!["/bin/sh".into(), "-c".into(), line.clone()],
            ExecCommand::Argv(argv) => argv.clone(),
        };
        let program = argv.first().cloned().unwrap_or_default();
        let binds = layout
            .mounts
            .iter()
            .map(|m| (m.host.clone(), m.sandbox.clone(), false))
            .chain(
                layout
                    .host_binds
                    .iter()
                    .map(|b| (b.host.clone(), b.sandbox.clone(), b.read_only)),
            )
            .collect();
        let capabilities = capability_mask(
            ROOT_CAPABILITIES
                .iter()
                .copied()
                .filter(|cap| *cap != "CAP_NET_RAW" || network.isolated()),
        );
        let (mount_ns, root) = prepared.paths();
        let entry = Request {
            mount_ns,
            root,
            last_capability: prepared.last_capability(),
            binds,
            masks: masks.to_vec(),
            cwd: cwd.to_path_buf(),
            argv,
            env: full_env,
            isolated: network.isolated(),
            capabilities,
            cgroups: layout.cgroup.procs(),
        };
        let cmd = enter::command(&entry)
            .map_err(|e| {
                Error::invalid_input(format!("exec: cannot start `{program}` (sandbox): {e}"))
            })?
            .ok_or_else(|| {
                Error::environment(format!(
                    "environment `{ID}`: no binary serves sandbox entries"
                ))
            })?;
        let mut cmd = cmd;
        cmd.stdin(Stdio::null()).process_group(0);
        Ok((cmd, program))
    }
}
