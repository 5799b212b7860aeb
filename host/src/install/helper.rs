//! Running an installer in a helper environment: the task's provider and image with a public
//! network, the staging directory mounted writable at the install's mount path and the
//! download cache at [`installer::DOWNLOADS_MOUNT`].

use std::path::Path;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    HostMount, NetworkPolicy, OpenEnvironmentRequest, ToolInstall,
};
use agentcompass_plugin_api::sdk::{Ctx, EnvironmentProvider};
use agentcompass_results::naming::sanitize_component;

use super::installer::{self, DOWNLOADS_MOUNT, TRUST_FILE, TRUST_MOUNT};
use super::InstallError;

/// The helper environment's open request.
fn helper_request(
    spec: &agentcompass_plugin_api::contracts::EnvironmentSpec,
    install: &ToolInstall,
    staging: &Path,
    downloads: &Path,
    trust: Option<&Path>,
) -> OpenEnvironmentRequest {
    let mut spec = spec.clone();
    spec.baseline_network_policy = None;
    spec.run_network_policy = None;
    spec.evaluation_network_policy = None;
    spec.env_variables.clear();
    spec.run_env_variables.clear();
    let task = format!("install-{}", sanitize_component(&install.package));
    let mut request = OpenEnvironmentRequest::new("agentcompass-install", task, spec);
    request.baseline_network_policy = NetworkPolicy::public();
    request.host_mounts = vec![
        HostMount {
            source: staging.display().to_string(),
            target: install.mount_path.clone(),
            read_only: false,
        },
        HostMount {
            source: downloads.display().to_string(),
            target: DOWNLOADS_MOUNT.to_string(),
            read_only: false,
        },
    ];
    if let Some(trust) = trust {
        request.host_mounts.push(HostMount {
            source: trust.display().to_string(),
            target: TRUST_MOUNT.to_string(),
            read_only: true,
        });
    }
    request
}

/// Makes `install` into `staging` with its installer, in a helper environment it opens and
/// closes (a close failure is only logged: the install itself is done).
pub(super) async fn install_in_helper(
    provider: &Arc<dyn EnvironmentProvider>,
    ctx: &Ctx,
    spec: &agentcompass_plugin_api::contracts::EnvironmentSpec,
    install: &ToolInstall,
    staging: &Path,
    downloads: &Path,
) -> Result<(), InstallError> {
    let what = format!(
        "`{}` ({})",
        install.requirement(),
        install.installer.as_str()
    );
    let trust = copy_trust(staging);
    let request = helper_request(spec, install, staging, downloads, trust.as_deref());
    let session = provider.open(ctx, &request).await.map_err(|e| {
        InstallError::Failed(format!(
            "installing {what}: the helper environment `{}` did not open: {}",
            spec.id, e.message
        ))
    })?;
    let started = std::time::Instant::now();
    let mut outcome = Ok(());
    for mut command in installer::commands(install, trust.is_some()) {
        let left = install.timeout_seconds - started.elapsed().as_secs_f64();
        if ctx.is_cancelled() {
            outcome = Err(InstallError::Cancelled);
            break;
        }
        command.timeout_seconds = Some(left.max(1.0));
        match session.exec(command).await {
            Err(e) => {
                outcome = Err(InstallError::Failed(format!(
                    "installing {what} failed: {}",
                    e.message
                )));
            }
            Ok(out) if out.timed_out => {
                outcome = Err(InstallError::TimedOut {
                    requirement: install.requirement(),
                    installer: install.installer.as_str(),
                    seconds: install.timeout_seconds.round() as u64,
                });
            }
            Ok(out) if out.returncode != 0 => {
                let line = installer::last_error_line(&out.stderr, &out.stdout);
                outcome = Err(InstallError::Failed(format!(
                    "installing {what} failed (exit {}): {}",
                    out.returncode,
                    agentcompass_redact::scrub_and_truncate(&line, 400)
                )));
            }
            Ok(_) => continue,
        }
        break;
    }
    if let Err(e) = session.close().await {
        tracing::warn!("closing the install helper environment: {}", e.message);
    }
    if let Some(trust) = trust {
        let _ = std::fs::remove_dir_all(trust);
    }
    outcome
}

/// A copy of the host's CA bundle beside the staging directory (the helper environment may
/// not see the host's file), or `None` when the host has none.
fn copy_trust(staging: &Path) -> Option<std::path::PathBuf> {
    let source = installer::trust_file()?;
    let mut dir = staging.as_os_str().to_owned();
    dir.push(".trust");
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::copy(&source, dir.join(TRUST_FILE)).ok()?;
    Some(dir)
}
