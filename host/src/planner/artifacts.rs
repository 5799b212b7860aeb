//! Submission-artifact resolution (seed 004): the conventional `/logs/artifacts/` directory for
//! collecting benchmarks, request overrides, and path validation.

use std::path::{Component, Path};

use super::PlanDefect;
use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, ArtifactSpec, MAIN_ARTIFACTS_DIR,
};

/// The artifact paths before recipes: an explicit request list replaces the task's extra
/// paths (`[]` = only the conventional directory); the conventional directory always comes
/// first for a collecting benchmark unless the list names it itself (with its own exclusions).
pub fn initial_paths(
    supported: bool,
    request: Option<&Vec<ArtifactSpec>>,
    task: Option<&Vec<ArtifactSpec>>,
) -> Result<Vec<ArtifactSpec>, PlanDefect> {
    if !supported {
        if request.is_some() {
            return Err(PlanDefect::ArtifactsNotCollected { field: "artifacts" });
        }
        return Ok(Vec::new());
    }
    Ok(with_main_dir(request.or(task).cloned().unwrap_or_default()))
}

/// Puts the conventional directory first unless an entry already names it.
pub fn with_main_dir(extras: Vec<ArtifactSpec>) -> Vec<ArtifactSpec> {
    let main = MAIN_ARTIFACTS_DIR.trim_end_matches('/');
    if extras
        .iter()
        .any(|a| a.source.trim_end_matches('/') == main)
    {
        return extras;
    }
    let mut out = vec![ArtifactSpec::main_dir()];
    out.extend(extras);
    out
}

/// The commands before recipes: an explicit request list replaces the task's (`[]` clears).
pub fn initial_commands(
    supported: bool,
    request: Option<&Vec<ArtifactCollectCommand>>,
    task: &[ArtifactCollectCommand],
) -> Result<Vec<ArtifactCollectCommand>, PlanDefect> {
    if !supported {
        if request.is_some() {
            return Err(PlanDefect::ArtifactsNotCollected {
                field: "artifact_collect",
            });
        }
        return Ok(Vec::new());
    }
    Ok(request.cloned().unwrap_or_else(|| task.to_vec()))
}

fn clean_relative(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn overlaps(a: &str, b: &str) -> bool {
    let a: Vec<_> = Path::new(a)
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    let b: Vec<_> = Path::new(b)
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    a.starts_with(&b) || b.starts_with(&a)
}

/// Validates the final lists: absolute sources (not `/`, no `..`), relative destinations
/// without `..`, service `main`, no overlapping destinations; positive command timeouts.
pub fn validate(
    paths: &[ArtifactSpec],
    commands: &[ArtifactCollectCommand],
) -> Result<(), PlanDefect> {
    validate_paths(paths)?;
    validate_commands(commands)
}

/// A defect of field `field` of entry `index` of `list`.
fn entry(list: &'static str, index: usize, field: &'static str, problem: String) -> PlanDefect {
    PlanDefect::ArtifactEntry {
        list,
        index,
        field,
        problem,
    }
}

fn validate_paths(paths: &[ArtifactSpec]) -> Result<(), PlanDefect> {
    for (i, spec) in paths.iter().enumerate() {
        let source = spec.source.trim();
        let escaping = Path::new(source)
            .components()
            .any(|c| c == Component::ParentDir);
        if !source.starts_with('/')
            || source.trim_end_matches('/').is_empty()
            || escaping
            || source.contains('\0')
        {
            return Err(entry(
                "artifacts",
                i,
                "source",
                format!(
                    "`{source}` must be an absolute path inside the sandbox (not `/`, no `..`)"
                ),
            ));
        }
        let destination = spec.destination_or_default();
        if !clean_relative(&destination) {
            return Err(entry(
                "artifacts",
                i,
                "destination",
                format!("`{destination}` must be a relative path without `..`"),
            ));
        }
        if spec.service != "main" {
            return Err(entry(
                "artifacts",
                i,
                "service",
                format!("`{}`: only the main service is supported", spec.service),
            ));
        }
        if let Some(pattern) = spec.exclude.iter().find(|p| p.trim().is_empty()) {
            return Err(entry(
                "artifacts",
                i,
                "exclude",
                format!("has an empty pattern `{pattern}`"),
            ));
        }
        for (j, other) in paths.iter().enumerate().take(i) {
            let theirs = other.destination_or_default();
            if overlaps(&destination, &theirs) {
                return Err(PlanDefect::OverlappingArtifacts {
                    first: j,
                    second: i,
                    theirs,
                    ours: destination,
                });
            }
        }
    }
    Ok(())
}

fn validate_commands(commands: &[ArtifactCollectCommand]) -> Result<(), PlanDefect> {
    // An empty command is allowed: it runs as `bash -c ""`, a no-op, as Harbor runs it.
    for (i, command) in commands.iter().enumerate() {
        if !(command.timeout_seconds.is_finite() && command.timeout_seconds > 0.0) {
            return Err(entry(
                "artifact_collect",
                i,
                "timeout_seconds",
                format!("must be positive, found {}", command.timeout_seconds),
            ));
        }
        if command.service != "main" {
            return Err(entry(
                "artifact_collect",
                i,
                "service",
                format!("`{}`: only the main service is supported", command.service),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: &str, destination: Option<&str>) -> ArtifactSpec {
        ArtifactSpec {
            destination: destination.map(str::to_string),
            ..ArtifactSpec::new(source)
        }
    }

    #[test]
    fn request_list_replaces_task_extras_and_keeps_the_main_dir() {
        let task = vec![spec("/app/out", None)];
        let request = vec![spec("/app/result.json", Some("result.json"))];
        let paths = initial_paths(true, Some(&request), Some(&task)).unwrap();
        let sources: Vec<&str> = paths.iter().map(|a| a.source.as_str()).collect();
        assert_eq!(sources, [MAIN_ARTIFACTS_DIR, "/app/result.json"]);
        let only_main = initial_paths(true, Some(&vec![]), Some(&task)).unwrap();
        assert_eq!(only_main.len(), 1);
        let inherited = initial_paths(true, None, Some(&task)).unwrap();
        assert_eq!(inherited.len(), 2);
        assert!(initial_paths(false, Some(&vec![]), None)
            .unwrap_err()
            .to_string()
            .starts_with("unsupported"));
        assert_eq!(initial_paths(false, None, Some(&task)).unwrap(), vec![]);
        assert!(initial_commands(false, Some(&vec![]), &[]).is_err());
        assert!(
            initial_commands(true, Some(&vec![]), &[ArtifactCollectCommand::new("x")])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn bad_paths_and_overlaps_are_rejected() {
        let ok = with_main_dir(vec![spec("/app/submission", Some("submission"))]);
        assert_eq!(validate(&ok, &[]), Ok(()));
        for (paths, expected) in [
            (vec![spec("app/x", None)], "must be an absolute path"),
            (vec![spec("/", None)], "must be an absolute path"),
            (vec![spec("/app/../etc", None)], "must be an absolute path"),
            (vec![spec("/a", Some("../up"))], "relative path without"),
            (vec![spec("/a", Some("/abs"))], "relative path without"),
            (
                vec![spec("/a", Some("out")), spec("/b", Some("out/inner"))],
                "overlapping destinations",
            ),
        ] {
            let err = validate(&paths, &[]).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
        }
        let mut command = ArtifactCollectCommand::new("true");
        command.timeout_seconds = 0.0;
        assert!(validate(&[], &[command])
            .unwrap_err()
            .to_string()
            .contains("timeout_seconds"));
    }
}
