//! `agentcompass-host view [RESULTS_DIR] [--host H] [--port P] [--open] [--read-only]`: the
//! web viewer (`agentcompass_viewer`) over a results directory, until Ctrl-C. Unless
//! `--read-only`, it offers the controls of live runs to requests carrying a secret made
//! for this viewer, which the URL it prints carries (`?token=...`, as Jupyter does): loopback
//! HTTP is reachable by every local user, the terminal only by its owner.

use std::path::Path;

use anyhow::{bail, Context};

use crate::cli::ViewCmd;

/// The compare page's paired statistics as `compare A B --json` computes them (the host's
/// scoring rules, the first k attempts of each task), with the task lists the page shows as
/// counts (`only_a`, `only_b`, `unscored`).
fn cli_paired() -> agentcompass_viewer::paired::PairedStats {
    std::sync::Arc::new(|a: &Path, b: &Path| {
        let comparison = agentcompass_host::compare::compare(a, b, None).ok()?;
        let mut value = serde_json::to_value(comparison).ok()?;
        for key in ["only_a", "only_b", "unscored"] {
            let count = value[key].as_array().map_or(0, Vec::len);
            value[key] = serde_json::json!(count);
        }
        Some(value)
    })
}

/// How many ports from `--port` on are tried.
const PORT_ATTEMPTS: u16 = 100;

/// Serves the viewer over `results_dir` (or the Harbor jobs it is or holds, read as runs);
/// prints its URL on stdout (one line) first.
pub fn view(results_dir: &Path, cmd: &ViewCmd) -> anyhow::Result<i32> {
    let (imported, _jobs) = super::harbor_input::results_dir(results_dir)?;
    let results_dir = imported.as_path();
    if !results_dir.is_dir() {
        bail!(
            "results directory {} does not exist or is not a directory",
            results_dir.display()
        );
    }
    let root = agentcompass_viewer::paths::Root::new(results_dir)
        .with_context(|| format!("cannot open results directory {}", results_dir.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the viewer's runtime")?;
    runtime.block_on(async {
        let listener = bind(&cmd.host, cmd.port).await?;
        let mut app = agentcompass_viewer::App::new(root).with_paired(cli_paired());
        let mut secret = None;
        if !cmd.read_only {
            let token = agentcompass_egress::EgressToken::random()
                .context("cannot make the viewer's control secret")?;
            secret = Some(token.expose().to_string());
            app = app.with_control_token(token.expose().to_string());
        }
        let handle =
            agentcompass_viewer::serve_app(app, listener).context("cannot start the viewer")?;
        let addr = handle.addr();
        let host = if addr.is_ipv6() {
            format!("[{}]", addr.ip())
        } else {
            addr.ip().to_string()
        };
        let url = match &secret {
            Some(secret) => format!("http://{host}:{}/?token={secret}", addr.port()),
            None => format!("http://{host}:{}/", addr.port()),
        };
        crate::outln!("agentcompass viewer: {url}");
        if cmd.open {
            // Best effort: no browser opener is not an error.
            let _ = std::process::Command::new("xdg-open")
                .arg(&url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")?;
        handle.shutdown().await;
        Ok(0)
    })
}

/// The first free port from `port` on (up to [`PORT_ATTEMPTS`]; port 0 asks for any).
async fn bind(host: &str, port: u16) -> anyhow::Result<tokio::net::TcpListener> {
    let mut last = None;
    for offset in 0..PORT_ATTEMPTS {
        let Some(candidate) = port.checked_add(offset) else {
            break;
        };
        match tokio::net::TcpListener::bind((host, candidate)).await {
            Ok(listener) => return Ok(listener),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && port != 0 => last = Some(e),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot listen on {host}:{candidate}"))
            }
        }
    }
    match last {
        Some(e) => Err(e).with_context(|| {
            format!(
                "cannot listen on {host}: ports {port} to {} are taken",
                port.saturating_add(PORT_ATTEMPTS - 1)
            )
        }),
        None => bail!("cannot listen on {host}:{port}"),
    }
}
