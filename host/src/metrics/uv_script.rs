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

/// Why a script metric has no value.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// `uv` could not be installed.
    #[error("installing uv=={UV_VERSION} failed: {0}")]
    Install(String),
    /// A file or process could not be made or run.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The script failed.
    #[error("exited with {code}: {last_line}")]
    Exit {
        /// Its exit code (or `a signal`).
        code: String,
        /// The last line of its error output.
        last_line: String,
    },
    /// The script wrote no JSON object.
    #[error("metric.json {0}")]
    Output(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ScriptError {
    let what = what.into();
    move |source| ScriptError::Io { what, source }
}

/// `uv` in the install cache under `root`, installed first when it is not there yet.
pub fn ensure_uv(root: &Path) -> Result<PathBuf, ScriptError> {
    let dir = root.join("host").join(format!("uv-{UV_VERSION}"));
    let uv = dir.join("bin").join("uv");
    if uv.is_file() {
        return Ok(uv);
    }
    let staging = root
        .join("host")
        .join(format!(".uv-{UV_VERSION}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io(format!("creating {}", staging.display())))?;
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
        .map_err(io("running python3 -m pip to install uv"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(ScriptError::Install(format!(
            "pip: {}",
            last_line(&out.stderr)
        )));
    }
    if !staging.join("bin/uv").is_file() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(ScriptError::Install("the wheel installed no bin/uv".into()));
    }
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(uv),
        // Another run installed it meanwhile: use theirs.
        Err(_) if uv.is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(uv)
        }
        Err(e) => Err(io(format!("moving uv into {}", dir.display()))(e)),
    }
}

/// Runs `script` with `uv` on `rewards` (a `rewards.jsonl`): the object it writes.
pub fn run(uv: &Path, script: &Path, rewards: &Path) -> Result<Map<String, Value>, ScriptError> {
    let work = tempfile::tempdir().map_err(io("making a temp dir"))?;
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
        .map_err(io("running uv"))?;
    if !out.status.success() {
        return Err(ScriptError::Exit {
            code: out
                .status
                .code()
                .map_or("a signal".to_string(), |c| c.to_string()),
            last_line: last_line(&out.stderr),
        });
    }
    let text = std::fs::read_to_string(&output)
        .map_err(|e| ScriptError::Output(format!("was not written: {e}")))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ScriptError::Output(format!(
            "holds {other}, not a JSON object"
        ))),
        Err(e) => Err(ScriptError::Output(format!("is not JSON: {e}"))),
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
