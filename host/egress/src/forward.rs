//! The in-environment forwarder: what makes host Unix sockets (the egress proxy's, the model
//! endpoint's) reachable as TCP ports on the loopback of an isolated network namespace. The
//! host binary is re-executed inside the environment with the hidden entry point [`ENTRY`]:
//!
//! - `ENTRY PORT=SOCKET... -- PROGRAM ARGS...` (a sandbox command) binds every
//!   `127.0.0.1:PORT`, starts itself again once per listener as the relay serving it, then
//!   replaces itself with the command (same process, so exit codes and signals are the
//!   command's). A relay forwards each connection to its `SOCKET` and ends when the command's
//!   process is gone (or with the sandbox's PID namespace).
//! - `ENTRY PORT=SOCKET... --serve` (a container, started detached) binds every listener and
//!   relays in the foreground until it is killed.
//!
//! Failures before the command starts are one `bwrap: ...` line on stderr and exit code 1, as
//! bubblewrap reports its own, so a session reports both the same way. Only `std` is used:
//! blocking sockets and a thread per direction of each connection.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::Duration;

/// The first argument that makes the binary the forwarder.
pub const ENTRY: &str = "__agentcompass-egress-forward";

/// The argument that keeps the forwarder in the foreground instead of running a command.
pub const SERVE: &str = "--serve";

/// The first argument of a relay the forwarder starts: `RELAY SOCKET PID` (the forwarder's,
/// which becomes the command), the listener on standard input.
const RELAY: &str = "__agentcompass-egress-relay";

/// Stack of each relay thread (it only copies through an 8 KiB buffer).
const RELAY_STACK: usize = 64 * 1024;

/// One host socket made reachable at `127.0.0.1:port` in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// The TCP port on the environment's loopback.
    pub port: u16,
    /// The Unix socket's path as the environment sees it.
    pub socket: PathBuf,
}

impl Forward {
    /// The `PORT=SOCKET` argument.
    pub fn arg(&self) -> OsString {
        let mut arg = OsString::from(format!("{}=", self.port));
        arg.push(self.socket.as_os_str());
        arg
    }

    fn parse(arg: &OsStr) -> Option<Forward> {
        let bytes = arg.as_bytes();
        let eq = bytes.iter().position(|&b| b == b'=')?;
        let port = std::str::from_utf8(&bytes[..eq])
            .ok()?
            .parse::<u16>()
            .ok()?;
        let socket = PathBuf::from(OsStr::from_bytes(&bytes[eq + 1..]));
        (port != 0 && !socket.as_os_str().is_empty()).then_some(Forward { port, socket })
    }
}

/// The arguments after the program (the forwarder binary) for `forwards` in front of a
/// command: `ENTRY PORT=SOCKET... --` (the command's argv follows).
pub fn command_args(forwards: &[Forward]) -> Vec<OsString> {
    let mut args = vec![OsString::from(ENTRY)];
    args.extend(forwards.iter().map(Forward::arg));
    args.push("--".into());
    args
}

/// The arguments after the program for a forwarder that serves `forwards` in the
/// foreground: `ENTRY PORT=SOCKET... --serve`.
pub fn serve_args(forwards: &[Forward]) -> Vec<OsString> {
    let mut args = vec![OsString::from(ENTRY)];
    args.extend(forwards.iter().map(Forward::arg));
    args.push(SERVE.into());
    args
}

/// If this process was started as the forwarder or its relay (its first argument is one of
/// the hidden entry points), runs it and returns the exit code; otherwise `None`. A binary
/// that can serve as the forwarder (the host's, a test harness) calls this first in `main`.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let first = args.next()?;
    let rest: Vec<OsString> = args.collect();
    if first == ENTRY {
        Some(forward(&rest))
    } else if first == RELAY {
        Some(relay(&rest))
    } else {
        None
    }
}

/// `PORT=SOCKET... (-- PROGRAM ARGS... | --serve)`.
fn forward(args: &[OsString]) -> ExitCode {
    const USAGE: &str =
        "Can't start the egress forwarder: usage: PORT=SOCKET... (-- PROGRAM [ARGS...] | --serve)";
    let Some(split) = args.iter().position(|a| a == "--" || a == SERVE) else {
        return fail(USAGE);
    };
    let Some(forwards) = args[..split]
        .iter()
        .map(|a| Forward::parse(a))
        .collect::<Option<Vec<_>>>()
    else {
        return fail("Can't start the egress forwarder: bad arguments");
    };
    let mut listeners = Vec::with_capacity(forwards.len());
    for forward in &forwards {
        match TcpListener::bind((Ipv4Addr::LOCALHOST, forward.port)) {
            Ok(listener) => listeners.push((listener, forward.socket.clone())),
            Err(e) => {
                return fail(&format!(
                    "Can't listen on 127.0.0.1:{} for {}: {e}",
                    forward.port,
                    forward.socket.display()
                ))
            }
        }
    }
    if args[split] == SERVE {
        if split + 1 != args.len() {
            return fail(USAGE);
        }
        return serve(listeners);
    }
    let [program, command_args @ ..] = &args[split + 1..] else {
        return fail(USAGE);
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(&format!("Can't find the egress forwarder itself: {e}")),
    };
    for (listener, socket) in listeners {
        let relay = Command::new(&exe)
            .arg(RELAY)
            .arg(&socket)
            .arg(std::process::id().to_string())
            .stdin(Stdio::from(OwnedFd::from(listener)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Err(e) = relay {
            return fail(&format!("Can't start the egress relay: {e}"));
        }
    }
    // The listeners are the relays' now (the kernel queues connections until they accept).
    let error = Command::new(program).args(command_args).exec();
    fail(&format!(
        "execvp {}: {}",
        program.to_string_lossy(),
        os_reason(&error)
    ))
}

/// The error's text without Rust's ` (os error N)` suffix, as C tools print it.
fn os_reason(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// One `bwrap: ` line on stderr and exit code 1.
fn fail(detail: &str) -> ExitCode {
    let _ = writeln!(io::stderr(), "bwrap: {detail}");
    ExitCode::from(1)
}

/// Relays every listener in this process until it is killed.
fn serve(listeners: Vec<(TcpListener, PathBuf)>) -> ExitCode {
    let mut threads = Vec::new();
    for (listener, socket) in listeners {
        match thread::Builder::new()
            .stack_size(RELAY_STACK)
            .spawn(move || accept_loop(&listener, &socket))
        {
            Ok(thread) => threads.push(thread),
            Err(e) => return fail(&format!("Can't start the egress relay: {e}")),
        }
    }
    for thread in threads {
        let _ = thread.join();
    }
    ExitCode::SUCCESS
}

/// `SOCKET PID`, the listener on standard input: relays every connection to `SOCKET` while
/// its parent is `PID`.
fn relay(args: &[OsString]) -> ExitCode {
    let [socket, parent] = args else {
        return ExitCode::from(2);
    };
    let Some(parent) = parent.to_str().and_then(|p| p.parse::<u32>().ok()) else {
        return ExitCode::from(2);
    };
    let socket = PathBuf::from(socket);
    let listener = match io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => TcpListener::from(fd),
        Err(_) => return ExitCode::from(1),
    };
    // In a sandbox the PID namespace ends the relay with the command; anywhere else it ends
    // once its parent (the command) is gone and it was handed to another.
    let _ = thread::Builder::new()
        .stack_size(RELAY_STACK)
        .spawn(move || loop {
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(0);
            }
            thread::sleep(Duration::from_secs(1));
        });
    accept_loop(&listener, &socket);
    ExitCode::SUCCESS
}

/// Accepts connections for ever, each piped to a fresh connection to `socket`.
fn accept_loop(listener: &TcpListener, socket: &Path) {
    loop {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(_) => {
                // Out of descriptors or an aborted handshake: wait instead of spinning.
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let socket = socket.to_path_buf();
        let started = thread::Builder::new()
            .stack_size(RELAY_STACK)
            .spawn(move || pipe(client, &socket));
        if started.is_err() {
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Copies both ways between a client and a fresh connection to the socket, passing each
/// end-of-stream on as a half close.
fn pipe(client: TcpStream, socket: &Path) {
    let Ok(upstream) = UnixStream::connect(socket) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let (Ok(mut client_in), Ok(mut upstream_out)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let up = thread::Builder::new()
        .stack_size(RELAY_STACK)
        .spawn(move || {
            let _ = io::copy(&mut client_in, &mut upstream_out);
            let _ = upstream_out.shutdown(Shutdown::Write);
        });
    let (mut upstream_in, mut client_out) = (upstream, client);
    let _ = io::copy(&mut upstream_in, &mut client_out);
    let _ = client_out.shutdown(Shutdown::Write);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_arguments_round_trip() {
        let forward = Forward {
            port: 3128,
            socket: PathBuf::from("/.agentcompass-egress/proxy/s"),
        };
        assert_eq!(forward.arg(), "3128=/.agentcompass-egress/proxy/s");
        assert_eq!(Forward::parse(&forward.arg()), Some(forward.clone()));
        assert_eq!(
            command_args(std::slice::from_ref(&forward)),
            [ENTRY, "3128=/.agentcompass-egress/proxy/s", "--"]
        );
        assert_eq!(
            serve_args(&[forward]),
            [ENTRY, "3128=/.agentcompass-egress/proxy/s", SERVE]
        );
        for bad in ["3128", "0=/s", "x=/s", "70000=/s", "3128="] {
            assert_eq!(Forward::parse(OsStr::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn os_reasons_lose_the_rust_suffix() {
        let error = io::Error::from_raw_os_error(2);
        assert_eq!(os_reason(&error), "No such file or directory");
    }
}
