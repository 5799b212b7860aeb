//! The in-container forwarder (`agentcompass_egress::forward`): the host binary, bound
//! read-only into an isolated container with the host's dynamic loader and the libraries it
//! needs, started with a Docker exec as `LOADER --library-path LIB FORWARD
//! __agentcompass-egress-forward PORT=SOCKET... --serve`. It binds every `127.0.0.1:PORT` in
//! the container's network namespace and relays each connection to its Unix socket (bound
//! into the container read-only), in the foreground until the container goes.
//!
//! - The binary is the process's own executable (`current_exe`: the host binary in a run, a
//!   test binary whose `main` calls `agentcompass_egress::forward::run_if_requested` in
//!   tests). It is dynamically linked against the host's C library while the image may have
//!   another (or none), so it runs through the host's loader (its `PT_INTERP`) with
//!   `--library-path` naming a directory holding exactly the libraries the loader itself
//!   resolves for it (`LOADER --list BINARY`, once per process). A static binary runs as is.
//! - Readiness: the open waits until every port listens in the container's namespace, read
//!   from the host as `/proc/<container pid>/net/tcp` (a local daemon shares the host's PID
//!   namespace), at most [`READY_TIMEOUT`]; a forwarder that exits first fails the open with
//!   its own message.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::engine::Daemon;
use agentcompass_egress::forward::{serve_args, Forward};
use agentcompass_plugin_api::{Error, Result};
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use futures_util::{Stream, StreamExt};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::engine::Engine;

/// The container directory holding everything the forwarder needs (read-only binds).
pub(crate) const EGRESS_DIR: &str = "/.agentcompass-egress";

/// The forwarder binary in the container.
const FORWARDER: &str = "/.agentcompass-egress/forward";

/// The loader's library directory in the container.
const LIB_DIR: &str = "/.agentcompass-egress/lib";

/// How long the forwarder may take to listen on every port.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How often readiness is checked.
const READY_POLL: Duration = Duration::from_millis(5);

/// The most of the forwarder's output kept for an error message.
const OUTPUT_LIMIT: usize = 1024;

/// The host files the forwarder is made of: the binary, its loader (if dynamic) and the
/// libraries by the name the binary asks for.
#[derive(Debug, Clone)]
pub(crate) struct Bundle {
    binary: PathBuf,
    loader: Option<(String, PathBuf)>,
    libraries: BTreeMap<String, PathBuf>,
}

/// The bundle of this process's executable, worked out once per process.
static BUNDLE: Mutex<Option<Arc<Bundle>>> = Mutex::new(None);

impl Bundle {
    /// The bundle of `current_exe` (cached after the first success). Blocking (reads the
    /// binary's header, runs the loader once).
    pub(crate) fn current(engine: Engine) -> Result<Arc<Bundle>> {
        let mut cached = BUNDLE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(bundle) = cached.as_ref() {
            return Ok(bundle.clone());
        }
        let binary = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{engine}`: cannot find the host binary (the egress forwarder): {e}"
                ))
            })?;
        let bundle = Arc::new(Bundle::of(engine, &binary)?);
        *cached = Some(bundle.clone());
        Ok(bundle)
    }

    /// The bundle of `binary`.
    fn of(engine: Engine, binary: &Path) -> Result<Bundle> {
        let fail = |what: String| {
            Error::environment(format!(
                "environment `{engine}`: cannot prepare the egress forwarder `{}`: {what}",
                binary.display()
            ))
        };
        let Some(interp) = interpreter(binary).map_err(|e| fail(e.to_string()))? else {
            return Ok(Bundle {
                binary: binary.to_path_buf(),
                loader: None,
                libraries: BTreeMap::new(),
            });
        };
        let name = interp
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| fail(format!("bad interpreter `{}`", interp.display())))?;
        let loader = std::fs::canonicalize(&interp)
            .map_err(|e| fail(format!("interpreter `{}`: {e}", interp.display())))?;
        let listed = Command::new(&loader)
            .arg("--list")
            .arg(binary)
            .output()
            .map_err(|e| fail(format!("`{} --list`: {e}", loader.display())))?;
        if !listed.status.success() {
            let stderr = String::from_utf8_lossy(&listed.stderr);
            return Err(fail(format!(
                "`{} --list` failed: {}",
                loader.display(),
                stderr.trim()
            )));
        }
        let mut libraries = BTreeMap::new();
        for (needed, path) in parse_list(&String::from_utf8_lossy(&listed.stdout))
            .map_err(|lib| fail(format!("library `{lib}` not found")))?
        {
            let path = std::fs::canonicalize(&path)
                .map_err(|e| fail(format!("library `{}`: {e}", path.display())))?;
            libraries.insert(needed, path);
        }
        Ok(Bundle {
            binary: binary.to_path_buf(),
            loader: Some((name, loader)),
            libraries,
        })
    }

    /// The read-only binds (`host:container:ro`) of the binary, loader and libraries.
    pub(crate) fn binds(&self) -> Vec<String> {
        let mut binds = vec![ro_bind(&self.binary, Path::new(FORWARDER))];
        if let Some((name, loader)) = &self.loader {
            binds.push(ro_bind(loader, &Path::new(LIB_DIR).join(name)));
        }
        for (name, path) in &self.libraries {
            binds.push(ro_bind(path, &Path::new(LIB_DIR).join(name)));
        }
        binds
    }

    /// The container command serving `forwards` in the foreground.
    fn argv(&self, forwards: &[Forward]) -> Vec<String> {
        let mut argv: Vec<String> = match &self.loader {
            Some((name, _)) => vec![
                format!("{LIB_DIR}/{name}"),
                "--library-path".to_string(),
                LIB_DIR.to_string(),
                FORWARDER.to_string(),
            ],
            None => vec![FORWARDER.to_string()],
        };
        argv.extend(
            serve_args(forwards)
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        argv
    }
}

/// A read-only Docker bind.
pub(crate) fn ro_bind(host: &Path, container: &Path) -> String {
    format!("{}:{}:ro", host.display(), container.display())
}

/// `(needed name, resolved path)` of every library in the loader's `--list` output, or the
/// name of one it did not find.
fn parse_list(text: &str) -> std::result::Result<Vec<(String, PathBuf)>, String> {
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((name, rest)) = line.split_once(" => ") else {
            continue;
        };
        if rest.starts_with("not found") {
            return Err(name.to_string());
        }
        let path = rest.split(" (").next().unwrap_or(rest).trim();
        if path.starts_with('/') {
            found.push((name.to_string(), PathBuf::from(path)));
        }
    }
    Ok(found)
}

/// The `PT_INTERP` of an ELF64 little-endian executable (`None` for a static one).
fn interpreter(binary: &Path) -> std::io::Result<Option<PathBuf>> {
    use std::io::{Error as IoError, ErrorKind};
    let bad = |why: &str| IoError::new(ErrorKind::InvalidData, why.to_string());
    let file = File::open(binary)?;
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0)?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return Err(bad("not a 64-bit little-endian ELF file"));
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u64_at = |b: &[u8], at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let phoff = u64_at(&header, 0x20);
    let phentsize = u64::from(u16_at(&header, 0x36));
    let phnum = u64::from(u16_at(&header, 0x38));
    if phentsize < 56 {
        return Err(bad("bad program header size"));
    }
    for index in 0..phnum {
        let mut entry = [0u8; 56];
        file.read_exact_at(&mut entry, phoff + index * phentsize)?;
        const PT_INTERP: u32 = 3;
        if u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]) != PT_INTERP {
            continue;
        }
        let (offset, size) = (u64_at(&entry, 8), u64_at(&entry, 32));
        if size == 0 || size > 4096 {
            return Err(bad("bad interpreter size"));
        }
        let mut path = vec![0u8; usize::try_from(size).map_err(|_| bad("bad size"))?];
        file.read_exact_at(&mut path, offset)?;
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        path.truncate(end);
        return Ok(Some(PathBuf::from(std::ffi::OsStr::from_bytes(&path))));
    }
    Ok(None)
}

/// A forwarder running in a container: its exec and the task keeping its output.
pub(crate) struct Running {
    output: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.output.abort();
    }
}

/// Starts the forwarder of `forwards` in `container` (as root: the socket directories are
/// the host's 0700 ones) and waits until every port listens; one line on failure. Runs on
/// the provider runtime.
pub(crate) async fn start(
    docker: &Daemon,
    container: &str,
    bundle: &Bundle,
    forwards: &[Forward],
) -> Result<Running> {
    let exec_id = create_exec(docker, container, bundle, forwards).await?;
    let started = docker
        .start_exec(&exec_id, None)
        .await
        .map_err(|e| docker.engine.error("starting the egress forwarder", e))?;
    // The rest of `started` (its input half) stays alive until the forwarder is ready.
    let StartExecResults::Attached { output, .. } = started else {
        return Err(start_failure(
            docker.engine,
            container,
            "the daemon did not attach its output".to_string(),
        ));
    };
    let (running, said) = keep_output(output);
    let pid = container_pid(docker, container).await?;
    wait_until_listening(docker, container, &exec_id, pid, forwards, &said).await?;
    Ok(running)
}

/// The one-line error of a forwarder that did not start in `container`.
fn start_failure(engine: Engine, container: &str, why: String) -> Error {
    Error::environment(format!(
        "{engine}: the egress forwarder did not start in container `{container}`: {why}"
    ))
}

/// Creates the forwarder's exec in `container` (root, in `/`, output attached); its id.
async fn create_exec(
    docker: &Daemon,
    container: &str,
    bundle: &Bundle,
    forwards: &[Forward],
) -> Result<String> {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(bundle.argv(forwards)),
                env: Some(Vec::new()),
                user: Some("0".to_string()),
                working_dir: Some("/".to_string()),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| {
            docker
                .engine
                .error("creating the egress forwarder's exec", e)
        })?;
    Ok(created.id)
}

/// The attached output of an exec.
type ExecOutput =
    Pin<Box<dyn Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Keeps the first `OUTPUT_LIMIT` bytes (about) of the forwarder's `output` in the
/// returned text, on a task that lives as long as the returned [`Running`].
fn keep_output(mut output: ExecOutput) -> (Running, Arc<Mutex<String>>) {
    let said = Arc::new(Mutex::new(String::new()));
    let keep = said.clone();
    let output = tokio::spawn(async move {
        while let Some(Ok(chunk)) = output.next().await {
            let mut said = keep.lock().unwrap_or_else(PoisonError::into_inner);
            if said.len() < OUTPUT_LIMIT {
                said.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
        }
    });
    (Running { output }, said)
}

/// The host PID of `container`'s process.
async fn container_pid(docker: &Daemon, container: &str) -> Result<i64> {
    docker
        .inspect_container(container, None)
        .await
        .map_err(|e| {
            docker
                .engine
                .error(&format!("inspecting container `{container}`"), e)
        })?
        .state
        .and_then(|s| s.pid)
        .filter(|pid| *pid > 0)
        .ok_or_else(|| {
            start_failure(
                docker.engine,
                container,
                "the container has no process".to_string(),
            )
        })
}

/// Waits until every port of `forwards` listens in the namespace of process `pid`: an error
/// when the forwarder's exec exits first (with its last words from `said`) or after
/// [`READY_TIMEOUT`].
async fn wait_until_listening(
    docker: &Daemon,
    container: &str,
    exec_id: &str,
    pid: i64,
    forwards: &[Forward],
    said: &Mutex<String>,
) -> Result<()> {
    let fail = |why: String| start_failure(docker.engine, container, why);
    let tcp = PathBuf::from(format!("/proc/{pid}/net/tcp"));
    let ports: Vec<u16> = forwards.iter().map(|f| f.port).collect();
    let until = Instant::now() + READY_TIMEOUT;
    loop {
        let table = tokio::fs::read_to_string(&tcp)
            .await
            .map_err(|e| fail(format!("cannot read `{}`: {e}", tcp.display())))?;
        if ports.iter().all(|&port| listening(&table, port)) {
            return Ok(());
        }
        let exec = docker
            .inspect_exec(exec_id)
            .await
            .map_err(|e| docker.engine.error("inspecting the egress forwarder", e))?;
        if exec.running == Some(false) && exec.exit_code.is_some() {
            // Give the output task a moment to store the last words.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let text = said.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let line = last_line(&text);
            let code = exec.exit_code.unwrap_or(-1);
            return Err(fail(format!("it exited with code {code}: {line}")));
        }
        if Instant::now() >= until {
            return Err(fail(format!(
                "no listener on 127.0.0.1:{ports:?} within {}s",
                READY_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// The forwarder's last non-empty line of output (without bubblewrap's prefix), or
/// `no output`.
fn last_line(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches("bwrap: "))
        .rfind(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}

/// Whether `/proc/net/tcp` text shows a listener on `127.0.0.1:port`.
fn listening(table: &str, port: u16) -> bool {
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|line| {
        let mut fields = line.split_whitespace();
        let (_, address, _, state) = (fields.next(), fields.next(), fields.next(), fields.next());
        address == Some(local.as_str()) && state == Some("0A")
    })
}

/// The forward argument of a socket at `container_path`.
pub(crate) fn forward(port: u16, container_path: impl Into<PathBuf>) -> Forward {
    Forward {
        port,
        socket: container_path.into(),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn lists_and_tables_are_read() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x1)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n\t/lib64/ld-linux-x86-64.so.2 (0x3)\n";
        assert_eq!(
            parse_list(text).unwrap(),
            [
                (
                    "libgcc_s.so.1".to_string(),
                    PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1")
                ),
                (
                    "libc.so.6".to_string(),
                    PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")
                ),
            ]
        );
        assert_eq!(
            parse_list("\tlibx.so => not found\n").unwrap_err(),
            "libx.so"
        );
        let table = "  sl  local_address rem_address   st\n   0: 0100007F:0C38 00000000:0000 0A 0\n   1: 0100007F:1F90 0100007F:9999 01 0\n";
        assert!(listening(table, 3128));
        assert!(!listening(table, 8080));
        let exe = std::env::current_exe().unwrap();
        let interp = interpreter(&exe).unwrap();
        assert!(interp.is_some_and(|p| p.is_absolute()));
    }
}
