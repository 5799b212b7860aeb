//! The root `artifacts` list and `[[verifier.collect]]` commands of a `task.toml`.

use std::path::{Component, Path};

use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, ArtifactSpec, MAIN_ARTIFACTS_DIR,
};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::{describe, Section, Warnings};

/// Default timeout of one `[[verifier.collect]]` command, in seconds.
const DEFAULT_COLLECT_TIMEOUT_SECONDS: f64 = 60.0;

/// Whether `path` is absolute and has no `..` component.
fn clean_absolute(path: &str) -> bool {
    path.starts_with('/')
        && !path.trim_end_matches('/').is_empty()
        && !Path::new(path)
            .components()
            .any(|c| c == Component::ParentDir)
}

/// Harbor's destination rules (`ArtifactConfig._validate_destination`): forward slashes
/// only, relative, naming something (not `.`), no `..` part, not the manifest. Returns the
/// destination normalised as a POSIX path (`out/` is `out`, `./a//b` is `a/b`), or what was
/// expected.
fn harbor_destination(destination: &str) -> std::result::Result<String, &'static str> {
    if destination.contains('\\') {
        return Err("a destination with forward slashes only");
    }
    if destination.starts_with('/') {
        return Err("a relative destination");
    }
    let parts: Vec<&str> = destination
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() {
        return Err("a destination naming a file or directory");
    }
    if parts.contains(&"..") {
        return Err("a destination without `..`");
    }
    if destination.trim_end_matches('/') == "manifest.json" {
        return Err("a destination other than manifest.json (reserved for the manifest)");
    }
    Ok(parts.join("/"))
}

/// Harbor's compose service name rule: trimmed, `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.
pub(crate) fn service_name(service: &str) -> Option<String> {
    let service = service.trim();
    let mut chars = service.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    valid.then(|| service.to_string())
}

/// A `service` field: a valid compose service name, and `main` (seed 004: sidecar services
/// are not supported).
fn main_service(entry: &Section) -> Result<()> {
    let Some(service) = entry.string("service")? else {
        return Ok(());
    };
    match service_name(&service) {
        Some(name) if name == "main" => Ok(()),
        Some(_) => Err(entry.error(
            "service",
            format!("expected \"main\" (sidecar services are not supported), found {service:?}"),
        )),
        None => Err(entry.error(
            "service",
            format!("expected a Docker Compose service name, found {service:?}"),
        )),
    }
}

/// Whether two artifact destinations overlap (one is the other or inside it).
fn overlaps(a: &str, b: &str) -> bool {
    let parts = |p: &str| -> Vec<String> {
        Path::new(p)
            .components()
            .filter(|c| *c != Component::CurDir)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    a.starts_with(&b) || b.starts_with(&a)
}

/// The root `artifacts` list: the `/logs/artifacts` convention directory (unless declared
/// explicitly with its own exclusions) followed by the declared entries; a later entry whose
/// destination overlaps an earlier one is dropped with a warning.
pub(crate) fn artifacts(root: &Section, warnings: &mut Warnings) -> Result<Vec<ArtifactSpec>> {
    let declared = declared_artifacts(root, warnings)?;
    let main = MAIN_ARTIFACTS_DIR.trim_end_matches('/');
    let mut candidates = Vec::new();
    if !declared
        .iter()
        .any(|(_, spec)| spec.source.trim_end_matches('/') == main)
    {
        candidates.push((
            format!("{MAIN_ARTIFACTS_DIR} (convention)"),
            ArtifactSpec::main_dir(),
        ));
    }
    candidates.extend(declared);
    Ok(without_overlaps(candidates, warnings))
}

/// The `artifacts` of one `[[steps]]` entry (validated by the task-level rules), each with its
/// key.
pub(crate) fn step_artifacts(
    step: &Section,
    warnings: &mut Warnings,
) -> Result<Vec<(String, ArtifactSpec)>> {
    declared_artifacts(step, warnings)
}

/// A step's artifacts that the task's (`task`, kept) leave room for: one whose destination
/// overlaps an earlier entry is dropped with a warning, as Harbor skips it.
pub(crate) fn appended(
    task: &[ArtifactSpec],
    step: &[(String, ArtifactSpec)],
    warnings: &mut Warnings,
) -> Vec<ArtifactSpec> {
    let mut candidates: Vec<(String, ArtifactSpec)> = task
        .iter()
        .map(|spec| (format!("artifacts ({})", spec.source), spec.clone()))
        .collect();
    candidates.extend(step.iter().cloned());
    without_overlaps(candidates, warnings)
        .into_iter()
        .skip(task.len())
        .collect()
}

fn declared_artifacts(
    root: &Section,
    warnings: &mut Warnings,
) -> Result<Vec<(String, ArtifactSpec)>> {
    let items = match root.get("artifacts") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(root.expected("artifacts", "an array", other)),
    };
    let mut declared = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = format!("artifacts[{i}]");
        let spec = artifact_entry(root, &key, item, warnings)?;
        check_artifact_paths(root, &key, &spec)?;
        declared.push((key, spec));
    }
    Ok(declared)
}

/// One `artifacts` entry: a source path, or a table with `source`, `destination`, `exclude`
/// and `service` (main only).
fn artifact_entry(
    root: &Section,
    key: &str,
    item: &Value,
    warnings: &mut Warnings,
) -> Result<ArtifactSpec> {
    match item {
        Value::String(source) => Ok(ArtifactSpec::new(source.clone())),
        Value::Table(table) => {
            let entry = root.child(key.to_string(), table);
            let Some(source) = entry.string("source")? else {
                return Err(root.error(key, "expected a `source` path, found none"));
            };
            let destination = match entry.string("destination")? {
                // Harbor: an empty destination is the default one.
                None => None,
                Some(d) if d.is_empty() => None,
                Some(d) => Some(harbor_destination(&d).map_err(|expected| {
                    entry.error("destination", format!("expected {expected}, found {d:?}"))
                })?),
            };
            let exclude = entry.string_list("exclude")?.unwrap_or_default();
            main_service(&entry)?;
            let spec = ArtifactSpec {
                destination,
                exclude,
                ..ArtifactSpec::new(source)
            };
            warnings.unknown(&entry);
            Ok(spec)
        }
        other => Err(root.expected(key, "a path string or a table with `source`", other)),
    }
}

/// An absolute source without `..` (seed 004: a source is an absolute sandbox path; Harbor
/// refuses `..` too).
fn check_artifact_paths(root: &Section, key: &str, spec: &ArtifactSpec) -> Result<()> {
    if !clean_absolute(&spec.source) {
        return Err(root.error(
            key,
            format!(
                "expected an absolute source path without `..`, found {:?}",
                spec.source
            ),
        ));
    }
    Ok(())
}

/// The candidates in order, each dropped (with a warning) when its destination overlaps an
/// earlier kept one.
fn without_overlaps(
    candidates: Vec<(String, ArtifactSpec)>,
    warnings: &mut Warnings,
) -> Vec<ArtifactSpec> {
    let mut kept: Vec<(String, ArtifactSpec)> = Vec::new();
    for (key, spec) in candidates {
        let destination = spec.destination_or_default();
        if let Some((earlier, _)) = kept
            .iter()
            .find(|(_, other)| overlaps(&other.destination_or_default(), &destination))
        {
            warnings.note(format!(
                "artifact `{key}` ({}) is dropped: its destination overlaps {earlier}",
                spec.source
            ));
            continue;
        }
        kept.push((key, spec));
    }
    kept.into_iter().map(|(_, spec)| spec).collect()
}

/// `[[verifier.collect]]`: `command`, `timeout_sec` (default 60 s), `service` (main only);
/// `user` and unknown fields are errors. An empty command is kept, as Harbor keeps it: it runs
/// as `bash -c ""`, which does nothing and succeeds.
pub(crate) fn collect_commands(verifier: &Section) -> Result<Vec<ArtifactCollectCommand>> {
    let items = match verifier.get("collect") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(verifier.expected("collect", "an array of tables", other)),
    };
    let mut commands = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = format!("collect[{i}]");
        let Value::Table(table) = item else {
            return Err(verifier.expected(&key, "a table with `command`", item));
        };
        let entry = verifier.child(verifier.key(&key), table);
        let Some(command) = entry.string("command")? else {
            return Err(verifier.error(&key, "expected a `command` string, found none"));
        };
        let timeout_seconds = entry
            .positive_seconds("timeout_sec")?
            .unwrap_or(DEFAULT_COLLECT_TIMEOUT_SECONDS);
        main_service(&entry)?;
        if let Some(user) = entry.get("user") {
            return Err(entry.error(
                "user",
                format!(
                    "expected no value (command-level user overrides are not supported), found {}",
                    describe(user)
                ),
            ));
        }
        if let Some(unknown) = entry.unread().first() {
            return Err(entry.error(
                unknown,
                "expected one of command, timeout_sec, service; found an unknown field",
            ));
        }
        commands.push(ArtifactCollectCommand {
            command,
            timeout_seconds,
            service: "main".to_string(),
        });
    }
    Ok(commands)
}
