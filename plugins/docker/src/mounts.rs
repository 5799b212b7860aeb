//! The open request's host mounts as container binds (`host:container[:ro]`): the daemon is
//! local (see the crate docs), so a host directory is bound as it is.

use std::path::{Component, Path};

use agentcompass_plugin_api::contracts::HostMount;
use agentcompass_plugin_api::{Error, Result};

use crate::engine::Engine;

/// Container paths the provider uses itself (the forwarder's bundle, the egress directory).
const RESERVED: [&str; 1] = [crate::forwarder::EGRESS_DIR];

/// The binds of `mounts`: each an existing host directory at an absolute, clean container
/// path (not `/`, not under `/proc`, `/dev`, `/sys` or the provider's own directory, not
/// nested in another mount).
pub(crate) fn host_mount_binds(engine: Engine, mounts: &[HostMount]) -> Result<Vec<String>> {
    let mut binds = Vec::with_capacity(mounts.len());
    for (i, mount) in mounts.iter().enumerate() {
        let bad = |why: String| {
            Error::invalid_input(format!(
                "environment `{engine}`: host_mounts[{i}] `{}`: {why}",
                mount.target
            ))
        };
        let target = Path::new(&mount.target);
        let clean = target
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !target.is_absolute() || !clean || target == Path::new("/") {
            return Err(bad("must be an absolute path (not `/`, no `..`)".into()));
        }
        if let Some(kernel) = ["/proc", "/dev", "/sys"]
            .iter()
            .chain(RESERVED.iter())
            .find(|k| target.starts_with(k))
        {
            return Err(bad(format!("must not be under `{kernel}`")));
        }
        if let Some(other) = mounts[..i].iter().find(|o| {
            let o = Path::new(&o.target);
            o.starts_with(target) || target.starts_with(o)
        }) {
            return Err(bad(format!("overlaps `{}`", other.target)));
        }
        let source = Path::new(&mount.source);
        if !source.is_absolute() || !source.is_dir() {
            return Err(bad(format!(
                "the host directory `{}` does not exist",
                mount.source
            )));
        }
        let mode = if mount.read_only { ":ro" } else { "" };
        binds.push(format!("{}:{}{mode}", source.display(), target.display()));
    }
    Ok(binds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(source: &str, target: &str, read_only: bool) -> HostMount {
        HostMount {
            source: source.into(),
            target: target.into(),
            read_only,
        }
    }

    #[test]
    fn mounts_become_binds_and_bad_targets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().display().to_string();
        let binds = host_mount_binds(
            Engine::Docker,
            &[
                mount(&source, "/opt/agentcompass/claude_code", true),
                mount(&source, "/var/cache/downloads", false),
            ],
        )
        .unwrap();
        assert_eq!(
            binds,
            [
                format!("{source}:/opt/agentcompass/claude_code:ro"),
                format!("{source}:/var/cache/downloads"),
            ]
        );
        for (target, why) in [
            ("opt", "must be an absolute path"),
            ("/", "must be an absolute path"),
            ("/opt/../etc", "must be an absolute path"),
            ("/proc/x", "must not be under `/proc`"),
            (
                "/.agentcompass-egress/x",
                "must not be under `/.agentcompass-egress`",
            ),
        ] {
            let err =
                host_mount_binds(Engine::Docker, &[mount(&source, target, true)]).unwrap_err();
            assert!(err.message.contains(why), "{target}: {}", err.message);
        }
        let nested = [
            mount(&source, "/opt/a", true),
            mount(&source, "/opt/a/b", true),
        ];
        assert!(host_mount_binds(Engine::Docker, &nested)
            .unwrap_err()
            .message
            .contains("overlaps `/opt/a`"));
        let missing =
            host_mount_binds(Engine::Docker, &[mount("/nonexistent-dir", "/opt/a", true)])
                .unwrap_err();
        assert!(
            missing.message.contains("does not exist"),
            "{}",
            missing.message
        );
    }
}
