//! What an open provisions for a session besides its private directories: the task's own
//! image (`image`) and its resource limits (`cgroup`), and their removal when the open fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::contracts::{EnvironmentSetup, OpenEnvironmentRequest};
use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::{Error, Result};

use super::cgroup::{self, SessionCgroup};
use super::config::Config;
use super::enter;
use super::image::TaskImage;
use super::layout::Layout;
use super::{DEFAULT_BUILD_SECONDS, ID};
use crate::files::remove_owned_dir;

/// The task's own image (see `image`) from the sandbox's store, built or pulled now if need
/// be; refused when it sets a `USER` other than root (the sandbox runs every command as the
/// user that starts it).
pub(super) async fn task_image(
    config: &Config,
    setup: &EnvironmentSetup,
) -> Result<Option<TaskImage>> {
    let (builder, source) = match config.task_image(setup) {
        None => return Ok(None),
        Some((None, _)) => return config.check_image(setup).map(|()| None),
        Some((Some(builder), source)) => (builder, source),
    };
    let limit = setup.build_timeout_seconds.unwrap_or(DEFAULT_BUILD_SECONDS);
    let image = builder
        .image_of(source, Duration::from_secs_f64(limit.max(1.0)))
        .await?;
    if let Some(user) = image.user.as_deref().filter(|u| !is_root_user(u)) {
        return Err(Error::unsupported(format!(
            "environment `{ID}`: the image {} sets `USER {user}`, and the sandbox runs every \
                 command as the user that starts it; run the task with --env docker or --env \
                 podman",
            source.shown()
        )));
    }
    Ok(Some(image))
}

/// Gives the session of `layout` (private directory `dir`) the resource limits `request` asks
/// for (`cpu`, `memory_mb`): its own cgroup, named like `dir`. Refused when this machine does
/// not let the sandbox limit them (the planner drops them under `auto` and refuses them under
/// `limit` before that).
pub(super) async fn limit_session(
    request: &OpenEnvironmentRequest,
    dir: &Path,
    layout: &mut Layout,
) -> Result<()> {
    let resources = request.environment.resources.as_ref();
    let cpu = resources.and_then(|r| r.cpu);
    let memory_mb = resources.and_then(|r| r.memory_mb);
    if cpu.is_none() && memory_mb.is_none() {
        return Ok(());
    }
    let name = dir
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    match (cgroup::hierarchy(), enter::entry_program()) {
        (Some(hierarchy), Some(_)) => {
            layout.cgroup = blocking(ID, move || {
                SessionCgroup::create(hierarchy, &name, cpu, memory_mb)
            })
            .await??;
            Ok(())
        }
        _ => Err(Error::unsupported(format!(
            "environment `{ID}` cannot limit `cpu` or `memory_mb` here (no cgroup this process \
             may make, or no entry binary for commands to join it); run with --cpus-mode \
             ignore --memory-mode ignore, or with --env docker or --env podman"
        ))),
    }
}

/// Removes what an open made for a session (when the open fails, or the session closes):
/// its cgroup and its private directory.
pub(super) async fn discard(dir: PathBuf, layout: &Layout) -> Result<()> {
    let cgroup = layout.cgroup.clone();
    if !cgroup.dirs.is_empty() {
        blocking(ID, move || cgroup.remove()).await?;
    }
    remove_owned_dir(dir, ID).await
}

/// Whether an image's `USER` (`user[:group]`, by name or id) is root.
fn is_root_user(user: &str) -> bool {
    user.split(':')
        .all(|part| matches!(part.trim(), "root" | "0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_root_user_runs_in_the_sandbox() {
        for user in ["root", "0", "0:0", "root:root"] {
            assert!(is_root_user(user), "{user}");
        }
        for user in ["1000", "agent", "0:1000", "root:staff"] {
            assert!(!is_root_user(user), "{user}");
        }
    }
}
