//! Digests against the values Harbor 0.25 gives (docs/design/harbor-datasets.md), and which
//! files each rule keeps; `tests/harbor_hash_oracle.rs` compares with Harbor itself.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor")
}

/// A copy of the `fizzbuzz` example in a temporary directory.
fn fizzbuzz_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "task.toml",
        "instruction.md",
        "solution/solve.sh",
        "tests/test.sh",
    ] {
        write(
            dir.path(),
            rel,
            &fs::read(examples().join("fizzbuzz").join(rel)).unwrap(),
        );
    }
    dir
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn files(root: &Path) -> Vec<String> {
    content_hash(root).unwrap().files
}

/// The hashed files under `tests/`.
fn tests_files(root: &Path) -> Vec<String> {
    files(root)
        .into_iter()
        .filter(|f| f.starts_with("tests/"))
        .collect()
}

const BASE: [&str; 4] = [
    "instruction.md",
    "solution/solve.sh",
    "task.toml",
    "tests/test.sh",
];

#[test]
fn the_examples_hash_as_harbor_hashes_them() {
    for (task, digest) in [
        (
            "fizzbuzz",
            "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01",
        ),
        (
            "hello-file",
            "afa6a31bc9ec4e10716d8324eff7eb90c8b3f72c360840ee1379d9adff8de62c",
        ),
        (
            "primes",
            "7fd72628955ae24254261a05e26c5041271fa723dd9772d03087092adef01c65",
        ),
    ] {
        let hash = content_hash(&examples().join(task)).unwrap();
        assert_eq!(hash.digest, digest, "{task}");
        assert_eq!(hash.files, BASE, "{task}");
    }
}

#[test]
fn modes_do_not_count() {
    let dir = fizzbuzz_copy();
    let before = content_hash(dir.path()).unwrap().digest;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(
        dir.path().join("task.toml"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(content_hash(dir.path()).unwrap().digest, before);
    assert_eq!(
        before,
        "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01"
    );
}

#[test]
fn only_the_four_root_files_and_the_four_trees_count() {
    let dir = fizzbuzz_copy();
    write(dir.path(), "environment/Dockerfile", b"FROM x\n");
    write(dir.path(), "README.md", b"r\n");
    write(dir.path(), "other.txt", b"o");
    write(dir.path(), "notes/n.txt", b"n");
    write(dir.path(), "steps/one/tests/test.sh", b"s");
    let mut want = vec!["README.md", "environment/Dockerfile"];
    want.extend(BASE);
    want.push("steps/one/tests/test.sh");
    want.sort();
    assert_eq!(files(dir.path()), want);
}

#[test]
fn paths_sort_as_bytes_not_as_a_tree() {
    let dir = fizzbuzz_copy();
    for rel in [
        "tests/B.txt",
        "tests/a.txt",
        "tests/a/z",
        "tests/a-b",
        "tests/é",
    ] {
        write(dir.path(), rel, b"1");
    }
    assert_eq!(
        tests_files(dir.path()),
        [
            "tests/B.txt",
            "tests/a-b",
            "tests/a.txt",
            "tests/a/z",
            "tests/test.sh",
            "tests/é"
        ]
    );
}

#[test]
fn default_ignores_apply_without_a_gitignore_and_a_gitignore_replaces_them() {
    let dir = fizzbuzz_copy();
    for rel in [
        "tests/a.log",
        "tests/x.pyc",
        "tests/__pycache__/q.py",
        "tests/b~",
        "tests/.DS_Store",
    ] {
        write(dir.path(), rel, b"x");
    }
    assert_eq!(tests_files(dir.path()), ["tests/a.log", "tests/test.sh"]);
    write(dir.path(), ".gitignore", b"*.log\n");
    assert_eq!(
        tests_files(dir.path()),
        [
            "tests/.DS_Store",
            "tests/__pycache__/q.py",
            "tests/b~",
            "tests/test.sh",
            "tests/x.pyc"
        ]
    );
}

#[test]
fn harborignore_files_are_never_hashed_and_exclude_inside_their_scopes() {
    let dir = fizzbuzz_copy();
    write(
        dir.path(),
        "tests/.harborignore",
        b"secret*\n!secret-kept.txt\n",
    );
    write(dir.path(), "tests/secret.txt", b"s");
    write(dir.path(), "tests/secret-kept.txt", b"k");
    write(dir.path(), "tests/sub/.harborignore", b"!secret-deep.txt\n");
    write(dir.path(), "tests/sub/secret-deep.txt", b"d");
    write(dir.path(), "tests/sub/secret-other.txt", b"o");
    write(dir.path(), "solution/.harborignore", b"");
    // Outside the scopes a `.harborignore` excludes nothing (but is not hashed).
    write(dir.path(), "environment/.harborignore", b"*\n");
    write(dir.path(), "environment/Dockerfile", b"FROM x\n");
    let listed = files(dir.path());
    assert_eq!(
        listed,
        [
            "environment/Dockerfile",
            "instruction.md",
            "solution/solve.sh",
            "task.toml",
            "tests/secret-kept.txt",
            "tests/sub/secret-deep.txt",
            "tests/test.sh"
        ]
    );
}

#[test]
fn a_directory_left_out_takes_its_files_with_it() {
    let dir = fizzbuzz_copy();
    write(dir.path(), "tests/.harborignore", b"private/\n");
    write(dir.path(), "tests/private/a", b"a");
    write(dir.path(), "tests/public/a", b"a");
    let listed = files(dir.path());
    assert!(listed.contains(&"tests/public/a".to_string()), "{listed:?}");
    assert!(!listed.iter().any(|f| f.contains("private")), "{listed:?}");
}

#[test]
fn file_links_count_with_their_target_and_linked_directories_are_not_entered() {
    let dir = fizzbuzz_copy();
    symlink("test.sh", dir.path().join("tests/l.sh")).unwrap();
    write(dir.path(), "tests/sub/f", b"f");
    symlink("sub", dir.path().join("tests/linkdir")).unwrap();
    write(dir.path(), "tests/zero", b"");
    fs::create_dir_all(dir.path().join("tests/emptydir")).unwrap();
    assert_eq!(
        tests_files(dir.path()),
        ["tests/l.sh", "tests/sub/f", "tests/test.sh", "tests/zero"]
    );
}

#[test]
fn a_harborignore_linked_out_of_the_task_is_refused() {
    let dir = fizzbuzz_copy();
    let outside = tempfile::NamedTempFile::new().unwrap();
    symlink(outside.path(), dir.path().join("tests/.harborignore")).unwrap();
    let err = content_hash(dir.path()).unwrap_err().to_string();
    assert!(err.ends_with("links outside the task directory"), "{err}");
}

#[test]
fn the_digest_is_the_sha256_of_one_line_a_file() {
    // As `for f in …; do printf '%s\0%s\n' "$f" "$(sha256sum $f)"; done | sha256sum`.
    let dir = fizzbuzz_copy();
    let mut lines = Vec::new();
    for rel in BASE {
        let bytes = fs::read(dir.path().join(rel)).unwrap();
        lines.extend_from_slice(
            format!("{rel}\0{}\n", hex::encode(Sha256::digest(&bytes))).as_bytes(),
        );
    }
    assert_eq!(
        content_hash(dir.path()).unwrap().digest,
        hex::encode(Sha256::digest(&lines))
    );
}
