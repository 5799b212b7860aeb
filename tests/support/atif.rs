//! Harbor 0.25 as the oracle of the ATIF trajectories a run writes: its own validator
//! (`python -m harbor.utils.trajectory_validator FILE`) and its pydantic `Trajectory` model.
//! Harbor's Python is `AGENTCOMPASS_HARBOR_PYTHON` (the venv `./dev.sh test` installs).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Harbor's Python.
pub fn harbor_python() -> PathBuf {
    std::env::var_os("AGENTCOMPASS_HARBOR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("AGENTCOMPASS_HARBOR_PYTHON is not set: run the tests with ./dev.sh test")
        })
}

/// Every ATIF file of the run in `run` (`agent/trajectory.json` next to an attempt's or a
/// step's `result.json`), sorted.
pub fn atif_files(run: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = crate::files_under(run)
        .into_iter()
        .filter(|p| {
            p.ends_with("agent/trajectory.json")
                && p.parent()
                    .and_then(Path::parent)
                    .is_some_and(|d| d.join("result.json").is_file())
        })
        .collect();
    files.sort();
    files
}

/// Asserts that Harbor's validator accepts every ATIF file of the run in `run` and that its
/// `Trajectory` model loads each, and that each attempt's totals are its recorded model usage
/// (`result.json` next to `agent/`); returns the files (at least `at_least` of them).
pub fn assert_harbor_accepts_atif(run: &Path, at_least: usize) -> Vec<PathBuf> {
    let files = atif_files(run);
    assert!(
        files.len() >= at_least,
        "{} ATIF files: {files:?}",
        files.len()
    );
    let python = harbor_python();
    for file in &files {
        let out = Command::new(&python)
            .args(["-m", "harbor.utils.trajectory_validator"])
            .arg(file)
            .output()
            .expect("Harbor's Python");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("Trajectory is valid"),
            "{}: {stdout}{}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_totals_are_recorded(file);
    }
    let load = "import json, sys\n\
        from harbor.models.trajectories import Trajectory\n\
        n = sum(1 for p in sys.argv[1:] if Trajectory.model_validate(json.load(open(p))))\n\
        print('loaded', n)\n";
    let out = Command::new(&python)
        .args(["-c", load])
        .args(&files)
        .output()
        .expect("Harbor's Python");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("loaded {}", files.len()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    files
}

/// The ATIF file's `final_metrics` token totals are the `model_usage` its `result.json`
/// recorded (when it recorded one).
fn assert_totals_are_recorded(file: &Path) {
    let doc = crate::read_json(file);
    let record = crate::read_json(&file.parent().unwrap().parent().unwrap().join("result.json"));
    let usage = &record["meta"]["harness"]["telemetry"]["model_usage"];
    if usage.is_null() {
        return;
    }
    let totals = &doc["final_metrics"];
    for (ours, theirs) in [
        ("prompt_tokens", "total_prompt_tokens"),
        ("completion_tokens", "total_completion_tokens"),
        ("cached_tokens", "total_cached_tokens"),
    ] {
        assert_eq!(
            totals[theirs],
            usage[ours],
            "{}: {theirs} vs model_usage.{ours}",
            file.display()
        );
    }
    let steps = doc["steps"].as_array().map_or(0, Vec::len);
    assert_eq!(totals["total_steps"], Value::from(steps as u64));
}
