//! The in-sandbox forwarder of an `allowlist` session: the host binary re-executed inside
//! each command's sandbox (see the module docs, "Networks"). It binds the proxy's TCP address
//! on the namespace's own loopback, starts itself again as the relay serving that listener,
//! then replaces itself with the command (same process, so exit codes and signals are the
//! command's). The relay forwards each connection to the session proxy's Unix socket and dies
//! with the sandbox when the command's main process exits.
//!
//! Only `std` is used: blocking sockets and a thread per direction of each connection.

use std::ffi::OsString;
use std::io::{self, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::Duration;

/// The first argument that makes the binary the forwarder: `ENTRY SOCKET PORT -- ARGV...`.
pub(super) const ENTRY: &str = "__agentcompass-egress-forward";

/// The first argument of the relay the forwarder starts: `RELAY SOCKET PID` (the
/// forwarder's, which becomes the command), the listener on standard input.
const RELAY: &str = "__agentcompass-egress-relay";

/// Stack of each relay thread (it only copies through an 8 KiB buffer).
const RELAY_STACK: usize = 64 * 1024;

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

/// `SOCKET PORT -- PROGRAM ARGS...`: listen, start the relay, exec the command. Fails as
/// bwrap does (`bwrap: ...`, exit code 1), so the session reports it the same way.
fn forward(args: &[OsString]) -> ExitCode {
    let [socket, port, dashes, program, command_args @ ..] = args else {
        return fail("Can't start the egress forwarder: usage: SOCKET PORT -- PROGRAM [ARGS...]");
    };
    let port = port.to_str().and_then(|p| p.parse::<u16>().ok());
    let (Some(port), true) = (port, dashes == "--") else {
        return fail("Can't start the egress forwarder: bad arguments");
    };
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
        Ok(listener) => listener,
        Err(e) => {
            return fail(&format!(
                "Can't listen on 127.0.0.1:{port} for the egress proxy: {e}"
            ))
        }
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(&format!("Can't find the egress forwarder itself: {e}")),
    };
    let relay = Command::new(exe)
        .arg(RELAY)
        .arg(socket)
        .arg(std::process::id().to_string())
        .stdin(Stdio::from(OwnedFd::from(listener)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if let Err(e) = relay {
        return fail(&format!("Can't start the egress relay: {e}"));
    }
    // The listener is the relay's now (the kernel queues connections until it accepts).
    let error = Command::new(program).args(command_args).exec();
    let reason = error
        .raw_os_error()
        .map(|code| nix::errno::Errno::from_raw(code).desc().to_string())
        .unwrap_or_else(|| error.to_string());
    fail(&format!("execvp {}: {reason}", program.to_string_lossy()))
}

/// One `bwrap: ` line on stderr and exit code 1.
fn fail(detail: &str) -> ExitCode {
    let _ = writeln!(io::stderr(), "bwrap: {detail}");
    ExitCode::from(1)
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
    loop {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(_) => {
                // Out of descriptors or an aborted handshake: wait instead of spinning.
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let socket = socket.clone();
        let started = thread::Builder::new()
            .stack_size(RELAY_STACK)
            .spawn(move || pipe(client, &socket));
        if started.is_err() {
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Copies both ways between a client and a fresh connection to the proxy, passing each
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
