//! Records the commit the host is built from (`AGENTCOMPASS_BUILD_COMMIT`, shown in each run's
//! provenance); a build outside a git checkout records none. Embeds the plugin API's source
//! (`plugin new` vendors it into a new crate, so the crate builds without this checkout):
//! `OUT_DIR/plugin_api_source.rs` lists every file, the manifest made standalone (the
//! workspace's inherited fields and dependency versions written out, no dev-dependencies or
//! lints).

use std::path::{Path, PathBuf};
use std::process::Command;

use toml::{Table, Value};

/// A build-script failure (cargo prints it and stops the build).
type BuildResult<T> = Result<T, Box<dyn std::error::Error>>;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// The plugin API's manifest with everything it inherits from the workspace written out.
fn standalone_manifest(api: &Path, workspace: &Path) -> BuildResult<String> {
    let read = |path: &Path| -> BuildResult<Table> { Ok(std::fs::read_to_string(path)?.parse()?) };
    let root = read(&workspace.join("Cargo.toml"))?;
    let inherited = &root["workspace"];
    let mut manifest = read(&api.join("Cargo.toml"))?;
    manifest.remove("dev-dependencies");
    manifest.remove("lints");
    if let Some(Value::Table(package)) = manifest.get_mut("package") {
        let fields: Vec<String> = package.keys().cloned().collect();
        for field in fields {
            let from_workspace = package[&field]
                .as_table()
                .is_some_and(|t| t.get("workspace") == Some(&Value::Boolean(true)));
            if !from_workspace {
                continue;
            }
            match inherited["package"].get(&field) {
                Some(value) if field != "publish" => {
                    package.insert(field, value.clone());
                }
                _ => {
                    package.remove(&field);
                }
            }
        }
    }
    if let Some(Value::Table(dependencies)) = manifest.get_mut("dependencies") {
        for (name, spec) in dependencies.iter_mut() {
            let Some(local) = spec.as_table().cloned() else {
                continue;
            };
            if local.get("workspace") != Some(&Value::Boolean(true)) {
                continue;
            }
            let mut resolved = match &inherited["dependencies"][name.as_str()] {
                Value::String(version) => {
                    Table::from_iter([("version".to_string(), Value::from(version.clone()))])
                }
                Value::Table(table) => table.clone(),
                other => return Err(format!("workspace dependency {name}: {other}").into()),
            };
            for (key, value) in local {
                match (key.as_str(), resolved.get_mut("features")) {
                    ("workspace", _) => {}
                    ("features", Some(Value::Array(features))) => {
                        features.extend(value.as_array().cloned().unwrap_or_default());
                    }
                    _ => {
                        resolved.insert(key, value);
                    }
                }
            }
            *spec = Value::Table(resolved);
        }
    }
    Ok(format!(
        "# agentcompass-plugin-api, vendored by `agentcompass-host plugin new` (the exact source\n\
         # the host was built with). Do not edit: `plugin new` records its checksum.\n{}",
        toml::to_string(&manifest)?
    ))
}

/// The `.rs` files under `dir`, sorted.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) -> BuildResult<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    Ok(())
}

/// Writes `OUT_DIR/plugin_api_source.rs`: `PLUGIN_API_SOURCE`, every (relative path, text).
fn embed_plugin_api() -> BuildResult<()> {
    let host = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let workspace = host.parent().ok_or("host/ has no parent directory")?;
    let api = workspace.join("plugin-api");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let manifest = out.join("plugin-api-Cargo.toml");
    std::fs::write(&manifest, standalone_manifest(&api, workspace)?)?;
    let mut files = vec![("Cargo.toml".to_string(), manifest)];
    let mut found = Vec::new();
    sources(&api.join("src"), &mut found)?;
    for path in found {
        let relative = path.strip_prefix(&api)?;
        files.push((relative.display().to_string(), path));
    }
    let mut code = String::from(
        "/// The plugin API's source as this host was built with it: (path, text).\n\
         pub const PLUGIN_API_SOURCE: &[(&str, &str)] = &[\n",
    );
    for (relative, path) in &files {
        code.push_str(&format!(
            "    ({relative:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    std::fs::write(out.join("plugin_api_source.rs"), code)?;
    println!("cargo:rerun-if-changed={}", api.display());
    println!("cargo:rerun-if-changed={}", api.join("src").display());
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.toml").display()
    );
    Ok(())
}

fn main() -> BuildResult<()> {
    embed_plugin_api()?;
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=AGENTCOMPASS_BUILD_COMMIT={commit}");
    }
    // Rebuilt when HEAD moves (a checkout, a commit): the files git updates then.
    for path in [
        git(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]),
        git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "refs/heads",
        ]),
        git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "packed-refs",
        ]),
    ]
    .into_iter()
    .flatten()
    .filter(|p| std::path::Path::new(p).exists())
    {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    Ok(())
}
