//! Our export of a registry dataset against Harbor 0.25's own `harbor download NAME@VERSION
//! --registry-path P --output-dir D --export`, from one `file://` repository: the same tree
//! (paths, file types, bytes, permission bits) with every rule of the copy exercised (files
//! outside the hashed ones, ignored names, executables, links to files, a link to a directory
//! inside a hashed tree and one at the root, a link out of the task and back in); and our
//! cached digest equal to Harbor's `Packager.compute_content_hash` of both exports.
//!
//! The oracle's Python is `AGENTCOMPASS_HARBOR_PYTHON` (a venv with `harbor==0.25.0`), which
//! `./dev.sh test` installs into a cache and exports; without it the test fails, saying so.
// Test helpers outside `#[test]` functions panic on a failed set-up, as the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_datasets::{
    export_dataset, CachedTask, DatasetRef, Registry, TaskCache, TaskSource,
};

/// Harbor's CLI, as its `harbor` script starts it.
const HARBOR: &str = "import sys\nfrom harbor.cli.main import app\nsys.argv[0] = 'harbor'\n\
                      sys.exit(app())";

/// Harbor's digest of each directory given, as JSON `{dir: hex}`.
const HASH: &str = r#"
import json, sys
from pathlib import Path
from harbor.publisher.packager import Packager
print(json.dumps({d: Packager.compute_content_hash(Path(d))[0] for d in sys.argv[1:]}))
"#;

fn python() -> PathBuf {
    match std::env::var_os("AGENTCOMPASS_HARBOR_PYTHON") {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "AGENTCOMPASS_HARBOR_PYTHON is not set: run this test through `./dev.sh test` (it \
             installs Harbor 0.25.0 into a cached venv and exports it)"
        ),
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(root: &Path, rel: &str, bytes: &str, mode: u32) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Copies the example task `from` (files and their modes) to `to`.
fn copy_example(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dest) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_example(&src, &dest);
        } else {
            fs::copy(&src, &dest).unwrap();
        }
    }
}

/// Every entry below `root`: `(type, permission bits, bytes or link target)`.
fn tree(root: &Path) -> BTreeMap<String, (char, String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, String, Vec<u8>)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = format!("{:04o}", meta.permissions().mode() & 0o7777);
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(
                    rel,
                    ('l', mode, target.into_os_string().into_encoded_bytes()),
                );
            } else if kind.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                walk(root, &path, out);
            } else if kind.is_file() {
                out.insert(rel, ('f', mode, fs::read(&path).unwrap()));
            } else {
                out.insert(rel, ('?', mode, Vec::new()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Tasks with a link Harbor refuses: the task, the link, its target.
const REFUSED: [(&str, &str, &str); 3] = [
    // Out of the task and back in: Harbor resolves links in a copy of the task alone.
    ("back-in", "tests/t.sh", "../../back-in/tests/test.sh"),
    ("absolute", "tests/abs", "/etc/hostname"),
    ("dangling", "tests/gone", "nope"),
];

/// `harbor ARGS…` in `dir`, with a home of its own and its telemetry off.
fn harbor(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let home = dir.join("home");
    fs::create_dir_all(&home).unwrap();
    Command::new(python())
        .current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("HARBOR_TELEMETRY", "0")
        .arg("-c")
        .arg(HARBOR)
        .args(args)
        .output()
        .expect("the oracle's python runs")
}

/// The repository: three example tasks in one commit, with what each rule of the export
/// needs; returns it and the commit.
fn repository(parent: &Path) -> (PathBuf, String) {
    let repo = parent.join("repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet"]);
    write(&repo, "README.md", "The demo repository.\n", 0o644);
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor");
    for (example, path) in [
        ("fizzbuzz", "tasks/fizzbuzz"),
        ("hello-file", "tasks/hello-file"),
        ("primes", "tasks/primes-task"),
    ] {
        copy_example(&examples.join(example), &repo.join(path));
    }
    let primes = repo.join("tasks/primes-task");
    write(&primes, "NOTES.txt", "notes\n", 0o644);
    write(&primes, "tests/__pycache__/a.pyc", "c\n", 0o644);
    symlink("test.sh", primes.join("tests/link.sh")).unwrap();
    symlink(
        "../instruction.md",
        primes.join("solution/instruction-copy.md"),
    )
    .unwrap();
    let fizzbuzz = repo.join("tasks/fizzbuzz");
    write(&fizzbuzz, "tools/run.sh", "#!/bin/sh\necho run\n", 0o755);
    write(&fizzbuzz, "tests/helper.py", "print('help')\n", 0o755);
    // A linked directory at the root (not hashed) and one inside `tests/` (hashed, once real).
    symlink("solution", fizzbuzz.join("sol2")).unwrap();
    let hello = repo.join("tasks/hello-file");
    write(&hello, "tests/data/expected.txt", "hello\n", 0o644);
    symlink("data", hello.join("tests/data-link")).unwrap();
    symlink("../solution", hello.join("tests/solution-link")).unwrap();
    // Tasks Harbor refuses (each the only task of its own dataset).
    for (task, link, target) in REFUSED {
        let dir = repo.join("tasks").join(task);
        copy_example(&examples.join("fizzbuzz"), &dir);
        symlink(target, dir.join(link)).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "demo"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    (repo, commit)
}

#[test]
fn our_export_equals_harbors_file_for_file_and_our_digest_is_harbors() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (repo, commit) = repository(w);
    let url = format!("file://{}", repo.display());
    let registry_path = w.join("registry.json");
    let registry = serde_json::json!([
        {
            "name": "demo",
            "version": "1.0",
            "description": "Demo dataset",
            "tasks": [
                {"name": "fizzbuzz", "git_url": url, "git_commit_id": commit,
                 "path": "tasks/fizzbuzz"},
                {"name": "hello", "git_url": url, "git_commit_id": commit,
                 "path": "tasks/hello-file"},
                {"name": "primes", "git_url": url, "git_commit_id": commit,
                 "path": "tasks/primes-task"},
            ],
            "metrics": [{"type": "mean"}],
        },
        {
            "name": "demo",
            "version": "0.9",
            "description": "older",
            "tasks": [{"name": "fizzbuzz", "git_url": url, "git_commit_id": null,
                       "path": "tasks/fizzbuzz"}],
        },
    ]);
    fs::write(
        &registry_path,
        serde_json::to_vec_pretty(&registry).unwrap(),
    )
    .unwrap();

    // Harbor's.
    let theirs_dir = w.join("theirs");
    let out = harbor(
        w,
        &[
            "download".as_ref(),
            "demo@1.0".as_ref(),
            "--registry-path".as_ref(),
            registry_path.as_os_str(),
            "--output-dir".as_ref(),
            theirs_dir.as_os_str(),
            "--export".as_ref(),
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("Successfully downloaded 3 task(s)"),
        "harbor download: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Ours: the registry read, each task from the cache, the dataset exported.
    let reference = DatasetRef::parse("demo@1.0").unwrap();
    let (name, version) = reference.into_registry().unwrap();
    let registry = Registry::parse(
        &registry_path.display().to_string(),
        &fs::read(&registry_path).unwrap(),
    )
    .unwrap();
    let spec = registry.dataset(&name, version.as_deref()).unwrap();
    let cache = TaskCache::new(w.join("cache"));
    let tasks: Vec<CachedTask> = spec
        .tasks
        .iter()
        .map(|t| {
            cache
                .get(&TaskSource {
                    name: t.name.clone(),
                    git_url: t.git_url.clone().unwrap(),
                    commit: t.git_commit_id.clone(),
                    path: t.path.clone(),
                })
                .unwrap()
        })
        .collect();
    let ours_dir = w.join("ours");
    let written = export_dataset(&name, &tasks, &ours_dir).unwrap();
    assert_eq!(
        written,
        ["fizzbuzz", "hello-file", "primes-task"].map(|t| ours_dir.join("demo").join(t))
    );

    // The same tree, entry for entry.
    let (theirs, ours) = (tree(&theirs_dir), tree(&ours_dir));
    let keys = |t: &BTreeMap<String, _>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&ours), keys(&theirs), "the same paths");
    for (rel, entry) in &theirs {
        let (kind, mode, bytes) = &ours[rel];
        assert_eq!(
            (kind, mode),
            (&entry.0, &entry.1),
            "{rel}: type and permission bits"
        );
        assert!(*bytes == entry.2, "{rel}: bytes differ");
    }
    // What the case was about is in it: no links, the linked directories real, the
    // executables executable (as the checkout made them, under the same umask).
    assert!(theirs
        .values()
        .all(|(kind, ..)| *kind == 'd' || *kind == 'f'));
    for rel in [
        "demo/fizzbuzz/sol2/solve.sh",
        "demo/fizzbuzz/tools/run.sh",
        "demo/fizzbuzz/tests/helper.py",
        "demo/hello-file/tests/solution-link/solve.sh",
        "demo/primes-task/tests/link.sh",
    ] {
        let mode = u32::from_str_radix(&theirs[rel].1, 8).unwrap();
        assert_ne!(mode & 0o100, 0, "{rel} executable");
    }
    for rel in [
        "demo/hello-file/tests/data-link/expected.txt",
        "demo/primes-task/NOTES.txt",
        "demo/primes-task/tests/__pycache__/a.pyc",
        "demo/primes-task/solution/instruction-copy.md",
    ] {
        assert_eq!(theirs[rel].0, 'f', "{rel}");
    }

    // Our digest is Harbor's of its own export and of ours.
    let dirs: Vec<PathBuf> = ["fizzbuzz", "hello-file", "primes-task"]
        .iter()
        .flat_map(|t| {
            [
                theirs_dir.join("demo").join(t),
                ours_dir.join("demo").join(t),
            ]
        })
        .collect();
    let out = Command::new(python())
        .env("HARBOR_TELEMETRY", "0")
        .arg("-c")
        .arg(HASH)
        .args(&dirs)
        .output()
        .expect("the oracle's python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hashes: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap();
    for (task, pair) in tasks.iter().zip(dirs.chunks(2)) {
        for dir in pair {
            assert_eq!(
                hashes[dir.to_str().unwrap()],
                task.digest.as_str(),
                "{}: Harbor's digest of {}",
                task.path,
                dir.display()
            );
        }
        println!("{}: {} ({} bytes)", task.path, task.digest, task.bytes);
    }
}

#[test]
fn the_links_harbor_refuses_are_refused_by_both() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (repo, commit) = repository(w);
    let url = format!("file://{}", repo.display());
    let cache = TaskCache::new(w.join("cache"));
    for (task, link, target) in REFUSED {
        let registry_path = w.join(format!("{task}.json"));
        let registry = serde_json::json!([{
            "name": task,
            "version": "1.0",
            "description": "refused",
            "tasks": [{"name": task, "git_url": url, "git_commit_id": commit,
                       "path": format!("tasks/{task}")}],
        }]);
        fs::write(&registry_path, serde_json::to_vec(&registry).unwrap()).unwrap();
        let out_dir = w.join(format!("theirs-{task}"));
        let reference = format!("{task}@1.0");
        let out = harbor(
            w,
            &[
                "download".as_ref(),
                reference.as_ref(),
                "--registry-path".as_ref(),
                registry_path.as_os_str(),
                "--output-dir".as_ref(),
                out_dir.as_os_str(),
                "--export".as_ref(),
            ],
        );
        // Harbor's CLI shows every refusal of a download as this one message.
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success()
                && said.contains(&format!(
                    "Error: Dataset '{task}' (version: '1.0') not found"
                )),
            "{task}: harbor said {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out_dir.join(task).join(task).exists(),
            "{task}: Harbor wrote the task"
        );
        // Ours: refused when fetched, in one line naming the task and the link.
        let err = cache
            .get(&TaskSource {
                name: task.to_string(),
                git_url: url.clone(),
                commit: Some(commit.clone()),
                path: format!("tasks/{task}"),
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("task `{task}`: link `{link}` ")) && err.contains(target),
            "{task}: {err}"
        );
        assert!(!err.contains('\n'), "{err}");
        println!("{task}: {err}");
    }
}
