//! Harbor's `uv-script` metric (`metrics/uv_script.py`): a user's script run as
//! `uv run SCRIPT -i rewards.jsonl -o metric.json` — `rewards.jsonl` one JSON object per trial
//! (`null` for a trial without rewards), `metric.json` the metric's JSON object.
//!
//! `uv` itself comes from PyPI, installed on first use into the install cache
//! (`<install cache>/host/uv-<version>`, with the host's `python3 -m pip`, which honours the
//! user's index settings: `PIP_INDEX_URL`, `PIP_FIND_LINKS`, `PIP_NO_INDEX`); its own cache
//! is kept beside it, so a script without dependencies runs offline once cached. `uv` never
//! downloads an interpreter (`UV_PYTHON_DOWNLOADS=never`): it uses the host's Python.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

/// The `uv` release the host installs (PyPI `uv`).
pub const UV_VERSION: &str = "0.9.7";

/// `uv` in the install cache under `root`, installed first when it is not there yet.
pub fn ensure_uv(root: &Path) -> Result<PathBuf, String> {
    let dir = root.join("host").join(format!("uv-{UV_VERSION}"));
    let uv = dir.join("bin").join("uv");
    if uv.is_file() {
        return Ok(uv);
    }
    let staging = root
        .join("host")
        .join(format!(".uv-{UV_VERSION}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&staging)
        .arg(format!("uv=={UV_VERSION}"))
        .output()
        .map_err(|e| format!("cannot run python3 -m pip to install uv: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "installing uv=={UV_VERSION} with pip failed: {}",
            last_line(&out.stderr)
        ));
    }
    if !staging.join("bin/uv").is_file() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!("the uv=={UV_VERSION} wheel installed no bin/uv"));
    }
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(uv),
        // Another run installed it meanwhile: use theirs.
        Err(_) if uv.is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(uv)
        }
        Err(e) => Err(format!("cannot move uv into {}: {e}", dir.display())),
    }
}

/// Runs `script` with `uv` on `rewards` (a `rewards.jsonl`): the object it writes.
pub fn run(uv: &Path, script: &Path, rewards: &Path) -> Result<Map<String, Value>, String> {
    let work = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let output = work.path().join("metric.json");
    let cache = uv
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("cache"))
        .unwrap_or_else(|| work.path().join("cache"));
    let out = Command::new(uv)
        .arg("run")
        .arg("--no-project")
        .arg(script)
        .arg("-i")
        .arg(rewards)
        .arg("-o")
        .arg(&output)
        .env("UV_CACHE_DIR", cache)
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("UV_NO_PROGRESS", "1")
        .env("UV_NO_CONFIG", "1")
        .current_dir(work.path())
        .output()
        .map_err(|e| format!("cannot run uv: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "exited with {}: {}",
            out.status
                .code()
                .map_or("a signal".to_string(), |c| c.to_string()),
            last_line(&out.stderr)
        ));
    }
    let text =
        std::fs::read_to_string(&output).map_err(|e| format!("wrote no metric.json: {e}"))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("metric.json holds {other}, not a JSON object")),
        Err(e) => Err(format!("metric.json is not JSON: {e}")),
    }
}

/// The last non-empty line of a process's output.
fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_string()
}
