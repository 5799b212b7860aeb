//! `datasets download --output-dir` against Harbor 0.25 itself: the same three-task registry
//! exported by `harbor download NAME@VERSION --registry-path P --output-dir D --export` and by
//! us must be the same tree, file for file, byte for byte and mode for mode.
//!
//! Harbor's Python is `AGENTCOMPASS_HARBOR_PYTHON` (the venv `./dev.sh test` installs; its
//! `harbor` command sits beside it); without it the test fails, saying so.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::datasets::Dataset;

fn harbor() -> PathBuf {
    let python = std::env::var_os("AGENTCOMPASS_HARBOR_PYTHON").unwrap_or_else(|| {
        panic!("AGENTCOMPASS_HARBOR_PYTHON is not set: run this test through `./dev.sh test`")
    });
    Path::new(&python).with_file_name("harbor")
}

/// Every entry under `root`: kind, permission bits, bytes (links read, not followed).
fn tree(root: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let (kind, bytes) = if meta.file_type().is_symlink() {
                (
                    'l',
                    fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if meta.is_dir() {
                stack.push(path.clone());
                ('d', Vec::new())
            } else {
                ('f', fs::read(&path).unwrap())
            };
            out.insert(rel, (kind, mode, bytes));
        }
    }
    out
}

#[test]
fn our_download_equals_harbors_export_file_for_file() {
    let d = Dataset::new();
    let theirs = d.ws.root().join("harbor-out");
    let home = d.ws.root().join("harbor-home");
    fs::create_dir_all(&home).unwrap();
    let harbor_run = Command::new(harbor())
        .args(["download", "demo@1.0", "--registry-path"])
        .arg(&d.registry)
        .arg("--output-dir")
        .arg(&theirs)
        .arg("--export")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("HARBOR_TELEMETRY", "0")
        .output()
        .unwrap();
    assert!(
        harbor_run.status.success(),
        "harbor download: {}",
        String::from_utf8_lossy(&harbor_run.stderr)
    );
    let ours = d.ws.root().join("our-out");
    d.ws.run_ok(
        &[
            "datasets",
            "download",
            "demo@1.0",
            "--registry-path",
            d.registry.to_str().unwrap(),
            "--data-dir",
            d.data.to_str().unwrap(),
            "--output-dir",
            ours.to_str().unwrap(),
        ],
        &[],
    );
    let (theirs, ours) = (tree(&theirs), tree(&ours));
    assert_eq!(theirs.len(), 22, "{:?}", theirs.keys().collect::<Vec<_>>());
    assert_eq!(
        theirs.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>()
    );
    for (path, entry) in &theirs {
        assert_eq!(Some(entry), ours.get(path), "{path} differs");
    }
}
