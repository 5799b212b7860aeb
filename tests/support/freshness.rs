//! Refuses stale build outputs: a binary or plugin library older than a source file it is
//! built from (its crate's directory and, transitively, its path dependencies'), so a test
//! never runs yesterday's code after an edit without a rebuild.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
}

/// Every package of the workspace by name, with its directory.
fn packages() -> &'static HashMap<String, PathBuf> {
    static PACKAGES: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    PACKAGES.get_or_init(|| {
        let mut found = HashMap::new();
        for top in ["host", "plugin-api", "plugins", "recipes"] {
            collect_manifests(&workspace_root().join(top), &mut found);
        }
        found
    })
}

fn collect_manifests(dir: &Path, found: &mut HashMap<String, PathBuf>) {
    let manifest = dir.join("Cargo.toml");
    if let Some(name) = fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| package_name(&text))
    {
        found.insert(name, dir.to_path_buf());
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let skip = path
            .file_name()
            .is_some_and(|n| n == "target" || n == "src" || n == "templates");
        if path.is_dir() && !skip {
            collect_manifests(&path, found);
        }
    }
}

/// `name = "..."` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let package = manifest.split("[package]").nth(1)?;
    let line = package
        .lines()
        .take_while(|l| !l.starts_with('['))
        .find(|l| l.trim_start().starts_with("name"))?;
    Some(line.split('"').nth(1)?.to_string())
}

/// The workspace packages `dir`'s manifest depends on (by path or through the workspace).
fn path_dependencies(dir: &Path) -> Vec<PathBuf> {
    let Ok(manifest) = fs::read_to_string(dir.join("Cargo.toml")) else {
        return Vec::new();
    };
    let mut deps = Vec::new();
    for line in manifest.lines() {
        if let Some(rest) = line.split("path = \"").nth(1) {
            if let Some(path) = rest.split('"').next() {
                deps.push(dir.join(path));
            }
        }
        let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
        if line.contains("workspace = true") {
            if let Some(package) = packages().get(name) {
                deps.push(package.clone());
            }
        }
    }
    deps
}

/// The newest modification time of the sources of `dir` and its path dependencies.
fn newest_source(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    while let Some(dir) = pending.pop() {
        let Ok(dir) = dir.canonicalize() else {
            continue;
        };
        if !seen.insert(dir.clone()) {
            continue;
        }
        for file in std::iter::once(dir.join("Cargo.toml")).chain(rust_files(&dir.join("src"))) {
            if let Ok(modified) = fs::metadata(&file).and_then(|m| m.modified()) {
                if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                    newest = Some((modified, file));
                }
            }
        }
        pending.extend(path_dependencies(&dir));
    }
    newest
}

/// The `.rs` files below `dir` that a normal (non-test) build compiles: test-only modules
/// (`tests.rs`, `tests/`) are left out, since editing them rebuilds nothing the tests run.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let test_only = path
            .file_name()
            .is_some_and(|n| n == "tests" || n == "tests.rs");
        if test_only {
            continue;
        }
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Panics, naming the build command, when `artifact` is older than a source of `package`.
pub(crate) fn ensure_fresh(artifact: &Path, package: &str) {
    static CHECKED: OnceLock<std::sync::Mutex<BTreeSet<PathBuf>>> = OnceLock::new();
    let checked = CHECKED.get_or_init(Default::default);
    if !checked
        .lock()
        .map(|mut set| set.insert(artifact.to_path_buf()))
        .unwrap_or(true)
    {
        return;
    }
    let Some(dir) = packages().get(package) else {
        return;
    };
    let built = fs::metadata(artifact)
        .and_then(|m| m.modified())
        .expect("the artifact's modification time");
    if let Some((modified, source)) = newest_source(dir) {
        assert!(
            modified <= built,
            "{} is older than {}: run `cargo build --workspace` (or `./dev.sh test`) before the tests",
            artifact.display(),
            source.display()
        );
    }
}
