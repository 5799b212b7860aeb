//! Our task digest against Harbor 0.25's own `Packager.compute_content_hash` on the bundled
//! examples and on task trees built to hit each of its rules (root files, trees, order,
//! default and task ignores, `.harborignore` scopes and negation, links, empty files).
//!
//! The oracle's Python is `AGENTCOMPASS_HARBOR_PYTHON` (a venv with `harbor==0.25.0`), which
//! `./dev.sh test` installs into a cache and exports; without it the test fails, saying so.
// Test helpers outside `#[test]` functions panic on a failed set-up, as the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_datasets::content_hash;

const ORACLE: &str = r#"
import json, sys
from pathlib import Path
from harbor.publisher.packager import Packager
out = {}
for task in sys.argv[1:]:
    digest, files = Packager.compute_content_hash(Path(task))
    root = Path(task).resolve()
    out[task] = [digest, [f.relative_to(root).as_posix() for f in files]]
print(json.dumps(out))
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

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// A minimal task with `changes` applied.
fn task(parent: &Path, name: &str, changes: impl FnOnce(&Path)) -> PathBuf {
    let root = parent.join(name);
    write(&root, "task.toml", b"version = \"1.0\"\n");
    write(&root, "instruction.md", b"Do it.\n");
    write(&root, "tests/test.sh", b"#!/bin/sh\nexit 0\n");
    write(&root, "solution/solve.sh", b"#!/bin/sh\ntrue\n");
    changes(&root);
    root
}

#[test]
fn digests_equal_harbors_on_every_rule() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor");
    let mut tasks: Vec<PathBuf> = ["fizzbuzz", "hello-file", "primes"]
        .iter()
        .map(|t| examples.join(t))
        .collect();
    tasks.push(task(w, "plain", |_| {}));
    tasks.push(task(w, "roots-and-trees", |r| {
        write(r, "README.md", b"r\n");
        write(r, "trajectory.json", b"[]");
        write(r, "NOTES.txt", b"not hashed");
        write(r, "environment/Dockerfile", b"FROM x\n");
        write(r, "environment/files/a b.txt", b"space");
        write(r, "steps/one/instruction.md", b"one");
        write(r, "steps/one/tests/test.sh", b"t");
        write(r, "steps/one/solution/solve.sh", b"s");
        write(r, "other/x", b"not hashed");
    }));
    tasks.push(task(w, "order", |r| {
        for rel in [
            "tests/B.txt",
            "tests/a.txt",
            "tests/a/z",
            "tests/a-b",
            "tests/é",
            "tests/Z",
        ] {
            write(r, rel, rel.as_bytes());
        }
    }));
    tasks.push(task(w, "default-ignores", |r| {
        for rel in [
            "tests/a.log",
            "tests/x.pyc",
            "tests/__pycache__/q.py",
            "tests/b~",
            "tests/.DS_Store",
            "tests/c.swp",
            "environment/__pycache__/m.pyc",
        ] {
            write(r, rel, b"x");
        }
    }));
    tasks.push(task(w, "gitignore", |r| {
        write(
            r,
            ".gitignore",
            b"*.log\n!keep.log\nbuild/\n/tests/only-root.txt\n",
        );
        for rel in [
            "tests/a.log",
            "tests/keep.log",
            "tests/x.pyc",
            "tests/build/out",
            "environment/build/out",
            "tests/only-root.txt",
        ] {
            write(r, rel, b"x");
        }
    }));
    tasks.push(task(w, "harborignore", |r| {
        write(
            r,
            "tests/.harborignore",
            b"secret*\n!secret-kept.txt\nprivate/\n",
        );
        write(r, "tests/secret.txt", b"s");
        write(r, "tests/secret-kept.txt", b"k");
        write(r, "tests/private/a", b"a");
        write(r, "tests/sub/.harborignore", b"!secret-deep.txt\n*.tmp\n");
        write(r, "tests/sub/secret-deep.txt", b"d");
        write(r, "tests/sub/secret-other.txt", b"o");
        write(r, "tests/sub/x.tmp", b"t");
        write(r, "solution/.harborignore", b"answer.txt\n");
        write(r, "solution/answer.txt", b"42");
        write(r, "steps/one/tests/.harborignore", b"hidden\n");
        write(r, "steps/one/tests/hidden", b"h");
        write(r, "steps/one/tests/shown", b"s");
        write(r, "environment/.harborignore", b"*\n");
        write(r, "environment/Dockerfile", b"FROM x\n");
        write(r, ".harborignore", b"task.toml\n");
    }));
    tasks.push(task(w, "links", |r| {
        symlink("test.sh", r.join("tests/l.sh")).unwrap();
        write(r, "tests/sub/f", b"f");
        symlink("sub", r.join("tests/linkdir")).unwrap();
        write(r, "tests/zero", b"");
        fs::create_dir_all(r.join("tests/emptydir")).unwrap();
        write(r, "tests/.harborignore", b"secret\n");
        write(r, "tests/secret", b"s");
        // A link kept by its own name but whose target is left out.
        symlink("secret", r.join("tests/alias")).unwrap();
    }));
    let out = Command::new(python())
        .arg("-c")
        .arg(ORACLE)
        .args(&tasks)
        .output()
        .expect("the oracle's python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap();
    for task in &tasks {
        let ours = content_hash(task).unwrap();
        let expected = &theirs[task.to_str().unwrap()];
        assert_eq!(
            serde_json::json!([ours.digest, ours.files]),
            *expected,
            "{}",
            task.display()
        );
        println!(
            "{}: {} ({} files)",
            task.display(),
            ours.digest,
            ours.files.len()
        );
    }
}

const ENVIRONMENT_ORACLE: &str = r#"
import json, sys
from pathlib import Path
from harbor.environments.definition import environment_content_hash
print(json.dumps({d: environment_content_hash(Path(d)) for d in sys.argv[1:]}))
"#;

#[test]
fn environment_digests_equal_harbors() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let mut dirs = Vec::new();
    let mut env = |name: &str, files: &[(&str, &[u8])]| {
        let dir = w.join(name);
        fs::create_dir_all(&dir).unwrap();
        for (rel, bytes) in files {
            write(&dir, rel, bytes);
        }
        dirs.push(dir);
    };
    env(
        "plain",
        &[("Dockerfile", b"FROM ubuntu:24.04\nWORKDIR /app\n")],
    );
    env("empty", &[]);
    env(
        "nested",
        &[
            ("Dockerfile", b"FROM x\nCOPY tools /t\n"),
            ("tools/a.sh", b"echo a\n"),
            ("tools/B.sh", b""),
            ("tools/sub/c", b"c"),
            ("tools/__pycache__/x.pyc", b"skipped"),
            (".git/HEAD", b"ref"),
            ("z.txt", b"last"),
        ],
    );
    let features = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/harbor-features/dockerfile-build/environment");
    dirs.push(features.canonicalize().unwrap());
    let out = Command::new(python())
        .arg("-c")
        .arg(ENVIRONMENT_ORACLE)
        .args(&dirs)
        .output()
        .expect("the oracle's python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap();
    for dir in &dirs {
        let ours = agentcompass_datasets::environment_hash(dir).unwrap();
        assert_eq!(
            theirs[dir.to_str().unwrap()],
            serde_json::json!(ours),
            "{}",
            dir.display()
        );
    }
}
