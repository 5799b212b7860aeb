//! A Podman service of the provider's own: `podman system service` on a private socket, for as
//! long as the provider lives, and never longer than the host process.
//!
//! The service runs under a small `/bin/sh` watchdog in its own process group (a Ctrl-C at the
//! terminal reaches the host, which still needs the service to remove its containers). The
//! watchdog's standard input is a pipe whose only writer is the provider: when the provider
//! drops it, or the host process ends in any way (a SIGKILL included), the watchdog reads end
//! of file, stops the service (SIGTERM; Podman leaves running containers to their `conmon`)
//! and removes the private directory. The directory (`agentcompass-podman-<random>`, 0700,
//! under `$XDG_RUNTIME_DIR` or the temp dir) holds the socket, the service's log and its
//! `containers.conf` (module `conf`).

use std::io::Read;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentcompass_plugin_api::sdk::provider::random_suffix;
use agentcompass_plugin_api::{tracing, Error, Result};

use super::conf::{podman_version, service_conf, ConfSources, ServiceConf};

/// How long the service may take to listen (its first start initialises the storage).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long dropping the service waits for the watchdog to stop it and clean up.
const STOP_WITHIN: Duration = Duration::from_secs(15);

/// The watchdog: `sh -c WATCHDOG PODMAN DIR`, its standard input the provider's pipe.
const WATCHDOG: &str = r#"exec 3<&0 </dev/null
"$0" system service --time=0 "unix://$1/podman.sock" >"$1/service.log" 2>&1 &
pid=$!
{ cat <&3 >/dev/null; kill "$pid"; } 2>/dev/null &
watcher=$!
exec 3<&-
wait "$pid"
kill "$watcher" 2>/dev/null
tail -n 5 "$1/service.log" >&2
rm -rf "$1"
"#;

/// A running private service.
#[derive(Debug)]
pub(crate) struct PrivateService {
    address: String,
    dir: PathBuf,
    /// The watchdog, and the write end of its standard input (dropped to stop it).
    watchdog: Mutex<(Child, Option<ChildStdin>)>,
}

impl PrivateService {
    /// Starts `podman system service` (the program `podman`, looked up on `PATH` unless it is
    /// a path) and waits until its socket accepts connections. Blocking.
    pub(crate) fn start(podman: &str) -> Result<PrivateService> {
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        Self::start_in(podman, &base)
    }

    /// [`PrivateService::start`] with the private directory under `base`.
    fn start_in(podman: &str, base: &Path) -> Result<PrivateService> {
        let program = find_program(podman)?;
        let dir = base.join(format!("agentcompass-podman-{}", random_suffix()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| failed(&format!("cannot create `{}`: {e}", dir.display())))?;
        match Self::spawn(&program, &dir) {
            Ok(service) => Ok(service),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    fn spawn(program: &Path, dir: &Path) -> Result<PrivateService> {
        let conf = service_conf(&ConfSources::of_process(), podman_version(program))
            .map_err(|e| failed(&e))?;
        let mut command = Command::new("/bin/sh");
        let written = match &conf {
            ServiceConf::Replace(text) => Some(("CONTAINERS_CONF", text)),
            ServiceConf::Override(text) => Some(("CONTAINERS_CONF_OVERRIDE", text)),
            ServiceConf::Unchanged => None,
        };
        if let Some((variable, text)) = written {
            let path = dir.join("containers.conf");
            std::fs::write(&path, text)
                .map_err(|e| failed(&format!("cannot write `{}`: {e}", path.display())))?;
            command.env(variable, &path);
        }
        let mut child = command
            .arg("-c")
            .arg(WATCHDOG)
            .arg(program)
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| failed(&format!("cannot run /bin/sh: {e}")))?;
        let stdin = child.stdin.take();
        let socket = dir.join("podman.sock");
        let service = PrivateService {
            address: format!("unix://{}", socket.display()),
            dir: dir.to_path_buf(),
            watchdog: Mutex::new((child, stdin)),
        };
        let started = Instant::now();
        loop {
            if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                tracing::debug!(provider = "podman", socket = %socket.display(), "started a private Podman service");
                return Ok(service);
            }
            if let Some(why) = service.exited() {
                return Err(failed(&why));
            }
            if started.elapsed() > READY_WITHIN {
                return Err(failed(&format!(
                    "its socket `{}` did not accept connections within {} s",
                    socket.display(),
                    READY_WITHIN.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Why the service ended, if it did (its last log lines).
    pub(crate) fn exited(&self) -> Option<String> {
        let mut guard = self.watchdog.lock().unwrap_or_else(|p| p.into_inner());
        let (child, _) = &mut *guard;
        match child.try_wait() {
            Ok(Some(_)) => {
                let mut log = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = stderr.read_to_string(&mut log);
                }
                let last = log.lines().rev().find(|l| !l.trim().is_empty());
                Some(format!(
                    "it exited: {}",
                    last.unwrap_or("(no output)").trim()
                ))
            }
            _ => None,
        }
    }

    /// The service's address (`unix://…/podman.sock`).
    pub(crate) fn address(&self) -> &str {
        &self.address
    }
}

impl Drop for PrivateService {
    fn drop(&mut self) {
        let mut guard = self.watchdog.lock().unwrap_or_else(|p| p.into_inner());
        let (child, stdin) = &mut *guard;
        drop(stdin.take());
        let started = Instant::now();
        while started.elapsed() < STOP_WITHIN {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        tracing::warn!(
            provider = "podman",
            dir = %self.dir.display(),
            "the private Podman service did not stop within {} s",
            STOP_WITHIN.as_secs()
        );
    }
}

/// `podman` as an executable path: itself when it names a path, else the first match on `PATH`.
fn find_program(podman: &str) -> Result<PathBuf> {
    let executable = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if podman.contains('/') {
        let path = PathBuf::from(podman);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(failed(&format!("`{podman}` is not an executable file")))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(podman))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| {
            failed(&format!(
                "`{podman}` is not on PATH (install Podman, set parameter `podman` to its path, \
                 or name a running service with parameter `container_host` or CONTAINER_HOST)"
            ))
        })
}

fn failed(why: &str) -> Error {
    Error::environment(format!(
        "podman: cannot start a private Podman service: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_a_clear_error() {
        let err = PrivateService::start("agentcompass-no-such-podman").unwrap_err();
        assert!(
            err.message
                .contains("`agentcompass-no-such-podman` is not on PATH"),
            "{}",
            err.message
        );
        let err = PrivateService::start("/nonexistent/podman").unwrap_err();
        assert!(
            err.message.contains("is not an executable file"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_service_that_exits_is_an_error_with_its_last_line_and_leaves_nothing() {
        // A "podman" that prints a line and fails, as a bad configuration would.
        let base = tempfile::tempdir().unwrap();
        let program = base.path().join("podman");
        std::fs::write(
            &program,
            "#!/bin/sh\necho 'Error: bad config' >&2\nexit 125\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = PrivateService::start_in(program.to_str().unwrap(), base.path()).unwrap_err();
        assert!(
            err.message.contains("it exited: Error: bad config"),
            "{}",
            err.message
        );
        let left: Vec<_> = std::fs::read_dir(base.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("podman")]);
    }
}
