//! Podman's own API (`/libpod/…`), which the Docker client does not speak: one `GET` over
//! HTTP/1.0, and the engine facts the provider reads from `/libpod/info`.

use std::io::{Read, Write};
use std::time::Duration;

use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

/// What the provider needs to know of a Podman engine, read once per address.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EngineFacts {
    /// The cgroup controllers its containers can be limited with (`host.cgroupControllers`).
    pub(crate) cgroup_controllers: Vec<String>,
    /// Its image and container store (`store.graphRoot`).
    pub(crate) graph_root: String,
}

/// The facts of the Podman service at `address` (`GET /libpod/info`). Blocking.
pub(crate) fn engine_facts(address: &str) -> Result<EngineFacts> {
    let failed = |why: String| {
        Error::environment(format!(
            "podman: cannot read the engine's facts from `{address}`: {why}"
        ))
    };
    let body = libpod_get(address, "/v4.0.0/libpod/info").map_err(failed)?;
    let info: Value =
        serde_json::from_slice(&body).map_err(|e| failed(format!("not JSON: {e}")))?;
    let controllers = info
        .pointer("/host/cgroupControllers")
        .and_then(Value::as_array)
        .ok_or_else(|| failed("no host.cgroupControllers (is it Podman?)".to_string()))?;
    let graph_root = info
        .pointer("/store/graphRoot")
        .and_then(Value::as_str)
        .ok_or_else(|| failed("no store.graphRoot (is it Podman?)".to_string()))?;
    Ok(EngineFacts {
        cgroup_controllers: controllers
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        graph_root: graph_root.to_string(),
    })
}

/// One `GET` of Podman's own API (which the Docker client does not speak): HTTP/1.0 over the
/// socket or TCP address, the body of a 200 answer.
fn libpod_get(address: &str, path: &str) -> std::result::Result<Vec<u8>, String> {
    const TIMEOUT: Duration = Duration::from_secs(30);
    let request = format!("GET {path} HTTP/1.0\r\nHost: podman\r\n\r\n");
    let socket = address
        .strip_prefix("unix://")
        .or_else(|| address.strip_prefix("/").map(|_| address));
    let answer = match socket {
        Some(socket) => exchange(
            std::os::unix::net::UnixStream::connect(socket),
            |stream| stream.set_read_timeout(Some(TIMEOUT)),
            &request,
        )?,
        None => {
            let host = address
                .strip_prefix("tcp://")
                .or_else(|| address.strip_prefix("http://"))
                .ok_or_else(|| "not a unix://, tcp:// or http:// address".to_string())?;
            exchange(
                std::net::TcpStream::connect(host),
                |stream| stream.set_read_timeout(Some(TIMEOUT)),
                &request,
            )?
        }
    };
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| "no HTTP answer".to_string())?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("`GET {path}` answered `{status}`"));
    }
    Ok(answer[split + 4..].to_vec())
}

/// Sends `request` on a connected stream (its read timeout set by `timeout`) and reads the
/// whole answer (HTTP/1.0: the server closes the connection after it).
fn exchange<S: Read + Write>(
    connected: std::io::Result<S>,
    timeout: impl FnOnce(&S) -> std::io::Result<()>,
    request: &str,
) -> std::result::Result<Vec<u8>, String> {
    let mut stream = connected.map_err(|e| e.to_string())?;
    timeout(&stream).map_err(|e| e.to_string())?;
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    Ok(answer)
}
