//! A sandbox session's resource limits (issue 54): a task's `cpu` and `memory_mb` as a cgroup
//! of the session's own, as a container's — every command of the session joins it before it
//! starts anything, so the limits hold for the session's processes together.
//!
//! Where: under this process's own cgroup (`/proc/self/cgroup`), in the `cpu` and `memory`
//! hierarchies of cgroup v1 (`cpu.cfs_quota_us` over a 100 ms period, `memory.limit_in_bytes`)
//! or in the unified hierarchy of cgroup v2 when its `cpu` and `memory` controllers are
//! delegated to children (`cpu.max`, `memory.max`). Whether the machine lets this process do
//! so is probed once (a directory made and removed); where it does not (a user without
//! delegation), the sandbox declares no resource fields and the planner records the limits as
//! not enforced (`auto`) or refuses them (`limit`).
//!
//! A session's cgroup directories are named like its private directory
//! (`agentcompass-sandbox-…`), recorded in its close parameters, and removed at close (or, after
//! a crash, by `close` from those parameters).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use agentcompass_plugin_api::{Error, Result};

use super::{ID, OWNED_PREFIX};

/// Where cgroup file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The CPU period of a v1 quota and of `cpu.max`, in microseconds.
const PERIOD_US: u64 = 100_000;

/// The smallest CPU quota the kernel takes, in microseconds.
const MIN_QUOTA_US: u64 = 1_000;

/// The cgroup directories under which this process makes its sessions' cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Hierarchy {
    /// cgroup v1: this process's cgroup in the `cpu` and in the `memory` hierarchy.
    V1 { cpu: PathBuf, memory: PathBuf },
    /// cgroup v2: this process's cgroup, its `cpu` and `memory` controllers delegated.
    V2 { dir: PathBuf },
}

/// The hierarchy this process may make session cgroups in, probed once.
pub(super) fn hierarchy() -> Option<&'static Hierarchy> {
    static PROBED: OnceLock<Option<Hierarchy>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            let own = fs::read_to_string("/proc/self/cgroup").ok()?;
            let found = parse(&own, Path::new(CGROUP_ROOT))?;
            found.writable().then_some(found)
        })
        .as_ref()
}

/// The hierarchy `/proc/self/cgroup`'s text `own` names under `root`: v1 when it lists the
/// `cpu` and `memory` controllers (and their directories exist), else v2 when the unified
/// cgroup delegates both.
fn parse(own: &str, root: &Path) -> Option<Hierarchy> {
    let mut cpu = None;
    let mut memory = None;
    let mut unified = None;
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        let dir = |mount: &str| root.join(mount).join(relative);
        if controllers.is_empty() {
            unified = Some(root.join(relative));
        }
        let listed: Vec<&str> = controllers.split(',').collect();
        if listed.contains(&"cpu") {
            cpu = Some(dir(controllers));
        }
        if listed.contains(&"memory") {
            memory = Some(dir(controllers));
        }
    }
    if let (Some(cpu), Some(memory)) = (cpu, memory) {
        return (cpu.is_dir() && memory.is_dir()).then_some(Hierarchy::V1 { cpu, memory });
    }
    let dir = unified?;
    let delegated = fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let delegated: Vec<&str> = delegated.split_whitespace().collect();
    (delegated.contains(&"cpu") && delegated.contains(&"memory")).then_some(Hierarchy::V2 { dir })
}

impl Hierarchy {
    /// The directories a session cgroup is made in.
    fn parents(&self) -> Vec<&Path> {
        match self {
            Hierarchy::V1 { cpu, memory } => vec![cpu, memory],
            Hierarchy::V2 { dir } => vec![dir],
        }
    }

    /// Whether this process may make a cgroup in each parent (one made and removed).
    fn writable(&self) -> bool {
        let probe = format!("{OWNED_PREFIX}probe-{}", std::process::id());
        self.parents().iter().all(|parent| {
            let dir = parent.join(&probe);
            fs::create_dir(&dir).is_ok() && fs::remove_dir(&dir).is_ok()
        })
    }
}

/// One session's cgroup directories (one per v1 hierarchy it limits, or one v2 directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SessionCgroup {
    pub(super) dirs: Vec<PathBuf>,
}

impl SessionCgroup {
    /// Makes the cgroup `name` in `hierarchy` limiting its processes to `cpu` CPUs and
    /// `memory_mb` MiB (each when given); nothing when neither is.
    pub(super) fn create(
        hierarchy: &Hierarchy,
        name: &str,
        cpu: Option<f64>,
        memory_mb: Option<u64>,
    ) -> Result<SessionCgroup> {
        let quota = cpu.map(|cpus| ((cpus * PERIOD_US as f64).round() as u64).max(MIN_QUOTA_US));
        let bytes = memory_mb.map(|mb| mb.saturating_mul(1024 * 1024));
        let mut made = SessionCgroup::default();
        let files: Vec<(&Path, Vec<(&str, String)>)> = match hierarchy {
            Hierarchy::V1 { cpu, memory } => {
                let mut files = Vec::new();
                if let Some(quota) = quota {
                    let set = vec![
                        ("cpu.cfs_period_us", PERIOD_US.to_string()),
                        ("cpu.cfs_quota_us", quota.to_string()),
                    ];
                    files.push((cpu.as_path(), set));
                }
                if let Some(bytes) = bytes {
                    files.push((
                        memory.as_path(),
                        vec![("memory.limit_in_bytes", bytes.to_string())],
                    ));
                }
                files
            }
            Hierarchy::V2 { dir } => {
                let mut set = Vec::new();
                if let Some(quota) = quota {
                    set.push(("cpu.max", format!("{quota} {PERIOD_US}")));
                }
                if let Some(bytes) = bytes {
                    set.push(("memory.max", bytes.to_string()));
                }
                if set.is_empty() {
                    Vec::new()
                } else {
                    vec![(dir.as_path(), set)]
                }
            }
        };
        for (parent, set) in files {
            let dir = parent.join(name);
            let written = fs::create_dir(&dir).and_then(|()| {
                made.dirs.push(dir.clone());
                set.iter()
                    .try_for_each(|(file, value)| fs::write(dir.join(file), value))
            });
            if let Err(e) = written {
                made.remove();
                return Err(Error::environment(format!(
                    "environment `{ID}`: cannot limit the session's resources in `{}`: {e}",
                    dir.display()
                )));
            }
        }
        Ok(made)
    }

    /// The `cgroup.procs` files a command writes its process id to.
    pub(super) fn procs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Removes the directories (retrying for a second while the last processes exit).
    pub(super) fn remove(&self) {
        for dir in &self.dirs {
            if let Err(e) = remove_dir(dir) {
                tracing::warn!(
                    provider = ID,
                    "cannot remove cgroup `{}`: {e}",
                    dir.display()
                );
            }
        }
    }

    /// The cgroup directories `close` may remove: this provider's, under the cgroup file
    /// systems.
    pub(super) fn owned(dirs: impl IntoIterator<Item = PathBuf>) -> SessionCgroup {
        let dirs = dirs
            .into_iter()
            .filter(|d| {
                d.starts_with(CGROUP_ROOT)
                    && d.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(OWNED_PREFIX))
            })
            .collect();
        SessionCgroup { dirs }
    }
}

/// `rmdir` of a cgroup, retried while it is busy; gone already is fine.
fn remove_dir(dir: &Path) -> io::Result<()> {
    for _ in 0..20 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EBUSY as i32) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
    fs::remove_dir(dir)
}

/// Moves this process into the cgroups whose `cgroup.procs` files are `procs` (what every
/// command does first).
pub(super) fn join(procs: &[PathBuf]) -> io::Result<()> {
    let pid = std::process::id().to_string();
    for file in procs {
        fs::write(file, &pid).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("Can't join the cgroup {}: {e}", file.display()),
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hierarchy_is_read_from_the_processs_own_cgroups() {
        let root = tempfile::tempdir().unwrap();
        for dir in ["cpu,cpuacct/jobs/a", "memory/jobs/a"] {
            fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        let v1 = "12:memory:/jobs/a\n4:cpu,cpuacct:/jobs/a\n0::/x\n";
        assert_eq!(
            parse(v1, root.path()),
            Some(Hierarchy::V1 {
                cpu: root.path().join("cpu,cpuacct/jobs/a"),
                memory: root.path().join("memory/jobs/a"),
            })
        );
        // v2: only when the unified cgroup delegates cpu and memory.
        let v2 = "0::/x\n";
        fs::create_dir_all(root.path().join("x")).unwrap();
        fs::write(
            root.path().join("x/cgroup.subtree_control"),
            "pids memory\n",
        )
        .unwrap();
        assert_eq!(parse(v2, root.path()), None);
        fs::write(
            root.path().join("x/cgroup.subtree_control"),
            "cpu memory pids\n",
        )
        .unwrap();
        assert_eq!(
            parse(v2, root.path()),
            Some(Hierarchy::V2 {
                dir: root.path().join("x")
            })
        );
    }

    #[test]
    fn a_session_cgroup_writes_the_limits_it_is_given() {
        let root = tempfile::tempdir().unwrap();
        let (cpu, memory) = (root.path().join("cpu"), root.path().join("memory"));
        fs::create_dir_all(&cpu).unwrap();
        fs::create_dir_all(&memory).unwrap();
        let v1 = Hierarchy::V1 {
            cpu: cpu.clone(),
            memory: memory.clone(),
        };
        let name = "agentcompass-sandbox-t-1-abc";
        let made = SessionCgroup::create(&v1, name, Some(1.5), Some(64)).unwrap();
        assert_eq!(made.dirs, vec![cpu.join(name), memory.join(name)]);
        let read = |p: PathBuf| fs::read_to_string(p).unwrap();
        assert_eq!(read(cpu.join(name).join("cpu.cfs_quota_us")), "150000");
        assert_eq!(read(cpu.join(name).join("cpu.cfs_period_us")), "100000");
        assert_eq!(
            read(memory.join(name).join("memory.limit_in_bytes")),
            "67108864"
        );
        assert_eq!(made.procs()[1], memory.join(name).join("cgroup.procs"));
        // Only the memory limit: one directory; v2: one file per limit.
        let other = SessionCgroup::create(&v1, "agentcompass-sandbox-b", None, Some(1)).unwrap();
        assert_eq!(other.dirs, vec![memory.join("agentcompass-sandbox-b")]);
        let v2 = Hierarchy::V2 {
            dir: root.path().to_path_buf(),
        };
        let unified =
            SessionCgroup::create(&v2, "agentcompass-sandbox-c", Some(0.001), None).unwrap();
        let max = read(root.path().join("agentcompass-sandbox-c/cpu.max"));
        assert_eq!(max, "1000 100000", "the kernel's smallest quota");
        // `close` removes only this provider's cgroups.
        let owned = SessionCgroup::owned([
            PathBuf::from("/sys/fs/cgroup/memory/agentcompass-sandbox-x"),
            PathBuf::from("/sys/fs/cgroup/memory/user.slice"),
            PathBuf::from("/tmp/agentcompass-sandbox-y"),
        ]);
        assert_eq!(
            owned.dirs,
            vec![PathBuf::from(
                "/sys/fs/cgroup/memory/agentcompass-sandbox-x"
            )]
        );
        drop(unified);
    }
}
