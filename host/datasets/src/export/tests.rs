//! Export of task trees made here (as the cache holds them); `tests/harbor_export_oracle.rs`
//! compares with Harbor's own export.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;

use super::*;

/// The process's umask, from `/proc/self/status` (what `mkdir` and `open` take off).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

fn write(root: &Path, rel: &str, bytes: &str, mode: u32) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A task at `parent/<path>` with `changes` applied, as a cached task of that path.
fn task(parent: &Path, path: &str, changes: impl FnOnce(&Path)) -> CachedTask {
    let dir = parent.join(path);
    write(&dir, "task.toml", "version = \"1.0\"\n", 0o644);
    write(&dir, "instruction.md", "Do it.\n", 0o644);
    write(&dir, "tests/test.sh", "#!/bin/sh\nexit 0\n", 0o755);
    write(&dir, "solution/solve.sh", "#!/bin/sh\ntrue\n", 0o755);
    changes(&dir);
    let digest = content_hash(&dir).unwrap().digest;
    CachedTask {
        dir,
        git_url: "file:///nowhere".into(),
        commit: "0".repeat(40),
        path: path.into(),
        digest,
        bytes: 0,
    }
}

/// Every entry below `root`: its type (`d`, `f`, `l`), permission bits and bytes.
fn tree(root: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, u32, Vec<u8>)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                out.insert(rel, ('l', 0, Vec::new()));
            } else if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                walk(root, &path, out);
            } else {
                out.insert(rel, ('f', mode, fs::read(&path).unwrap()));
            }
        }
    }
    walk(root, root, &mut out);
    out
}

#[test]
fn a_dataset_lands_in_harbors_layout_with_every_file_and_gits_modes() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let mask = umask();
    let one = task(&src, "tasks/one", |r| {
        write(r, "NOTES.txt", "notes", 0o644);
        write(r, "tests/__pycache__/a.pyc", "c", 0o644);
        write(r, ".gitignore", "*.log\n", 0o644);
        write(r, "tests/x.log", "log", 0o644);
        write(r, "environment/run", "run", 0o700);
        write(r, "tests/data.bin", "d", 0o600);
        fs::create_dir_all(r.join("tests/empty")).unwrap();
        fs::set_permissions(r.join("tests"), fs::Permissions::from_mode(0o700)).unwrap();
    });
    let two = task(&src, "other/deep/two", |_| {});
    let out = work.path().join("out");
    let written = export_dataset("org/demo", &[one.clone(), two], &out).unwrap();
    assert_eq!(
        written,
        [out.join("demo/one"), out.join("demo/two")],
        "named by the dataset after its last `/` and each path's last part"
    );
    // Only the dataset directory in the output, only the tasks in it.
    let top: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, ["demo"]);
    let got = tree(&out.join("demo/one"));
    let file = 0o666 & !mask;
    let exec = 0o777 & !mask;
    let dir = 0o777 & !mask;
    let mut expected = BTreeMap::new();
    for (rel, bytes, mode) in [
        ("task.toml", "version = \"1.0\"\n", file),
        ("instruction.md", "Do it.\n", file),
        ("NOTES.txt", "notes", file),
        (".gitignore", "*.log\n", file),
        ("tests/test.sh", "#!/bin/sh\nexit 0\n", exec),
        ("tests/__pycache__/a.pyc", "c", file),
        ("tests/x.log", "log", file),
        ("tests/data.bin", "d", file),
        ("environment/run", "run", exec),
        ("solution/solve.sh", "#!/bin/sh\ntrue\n", exec),
    ] {
        expected.insert(rel.to_string(), ('f', mode, bytes.as_bytes().to_vec()));
    }
    for rel in [
        "tests",
        "tests/__pycache__",
        "tests/empty",
        "environment",
        "solution",
    ] {
        expected.insert(rel.to_string(), ('d', dir, Vec::new()));
    }
    assert_eq!(got, expected);
    let meta = fs::metadata(out.join("demo/one")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, dir);
    assert_eq!(
        content_hash(&out.join("demo/one")).unwrap().digest,
        one.digest
    );
}

#[test]
fn links_become_what_they_point_to() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let mask = umask();
    let linked = task(&src, "tasks/linked", |r| {
        symlink("test.sh", r.join("tests/link.sh")).unwrap();
        write(r, "tests/sub/f", "f", 0o644);
        write(r, "tests/sub/x.sh", "x", 0o755);
        symlink("sub", r.join("tests/linkdir")).unwrap();
        // A link inside a linked directory, resolved where it really is.
        symlink("f", r.join("tests/sub/g")).unwrap();
        symlink("../solution", r.join("tests/sol")).unwrap();
        symlink("tests/linkdir", r.join("chain")).unwrap();
    });
    // As the cache holds it: made into files by the same copy when fetched. Its digest is
    // not the linked tree's (a linked directory counts once it is real), as Harbor's digest
    // of its own copy is not.
    let cached = work.path().join("cached");
    materialise("tasks/linked", &linked.dir, &cached).unwrap();
    assert!(has_links(&linked.dir).unwrap() && !has_links(&cached).unwrap());
    let as_cached = CachedTask {
        dir: cached.clone(),
        digest: content_hash(&cached).unwrap().digest,
        ..linked.clone()
    };
    assert_ne!(as_cached.digest, linked.digest);
    let out = work.path().join("out");
    export_dataset("demo", std::slice::from_ref(&as_cached), &out).unwrap();
    let got = tree(&out.join("demo/linked"));
    assert_eq!(tree(&cached), got);
    let (file, exec, dir) = (0o666 & !mask, 0o777 & !mask, 0o777 & !mask);
    assert!(got.values().all(|(kind, ..)| *kind != 'l'), "{got:?}");
    assert_eq!(
        got["tests/link.sh"],
        ('f', exec, b"#!/bin/sh\nexit 0\n".to_vec())
    );
    for base in ["tests/sub", "tests/linkdir", "chain"] {
        assert_eq!(got[base], ('d', dir, Vec::new()), "{base}");
        assert_eq!(
            got[&format!("{base}/f")],
            ('f', file, b"f".to_vec()),
            "{base}"
        );
        assert_eq!(
            got[&format!("{base}/g")],
            ('f', file, b"f".to_vec()),
            "{base}"
        );
        assert_eq!(
            got[&format!("{base}/x.sh")],
            ('f', exec, b"x".to_vec()),
            "{base}"
        );
    }
    assert_eq!(got["tests/sol/solve.sh"].1, exec);
}

#[test]
fn links_harbor_refuses_are_refused_in_one_line_naming_the_task_and_the_link() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write(&src, "outside.md", "out", 0o644);
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 8] = [
        (
            "back-in",
            |r| symlink("../../back-in/task.toml", r.join("tests/t.toml")).unwrap(),
            "task `tasks/back-in`: link `tests/t.toml` -> `../../back-in/task.toml` leads out \
             of the task directory; a task's links must stay inside it",
        ),
        (
            "through-a-file",
            |r| symlink("test.sh/../test.sh", r.join("tests/t")).unwrap(),
            "task `tasks/through-a-file`: link `tests/t` -> `test.sh/../test.sh` points to \
             nothing (dangling or a loop)",
        ),
        (
            "absolute",
            |r| symlink("/etc/hostname", r.join("tests/abs")).unwrap(),
            "task `tasks/absolute`: link `tests/abs` points to the absolute path \
             `/etc/hostname`; a task's links must be relative",
        ),
        (
            "escaping",
            |r| symlink("../../../outside.md", r.join("tests/esc.md")).unwrap(),
            "task `tasks/escaping`: link `tests/esc.md` -> `../../../outside.md` leads out of \
             the task directory; a task's links must stay inside it",
        ),
        (
            "escaping-dir",
            |r| symlink("..", r.join("up")).unwrap(),
            "task `tasks/escaping-dir`: link `up` -> `..` leads out of the task directory; a \
             task's links must stay inside it",
        ),
        (
            "dangling",
            |r| symlink("nope", r.join("tests/gone")).unwrap(),
            "task `tasks/dangling`: link `tests/gone` -> `nope` points to nothing (dangling \
             or a loop)",
        ),
        (
            "loop",
            |r| {
                symlink("b", r.join("tests/a")).unwrap();
                symlink("a", r.join("tests/b")).unwrap();
            },
            "task `tasks/loop`: link `tests/a` -> `b` points to nothing (dangling or a loop)",
        ),
        (
            "cyclic",
            |r| symlink("..", r.join("tests/back")).unwrap(),
            "task `tasks/cyclic`: link `tests/back` -> `..` leads back into a directory that \
             holds it",
        ),
    ];
    for (name, change, message) in cases {
        let t = task(&src, &format!("tasks/{name}"), change);
        let out = work.path().join(format!("out-{name}"));
        let err = export_dataset("demo", &[t], &out).unwrap_err();
        assert_eq!(err.to_string(), message, "{name}");
        // Nothing of the task is left behind (the dataset directory, as Harbor leaves it).
        assert_eq!(fs::read_dir(out.join("demo")).unwrap().count(), 0, "{name}");
    }
}

#[test]
fn tasks_whose_paths_end_alike_are_refused_before_anything_is_written() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let a = task(&src, "a/fizzbuzz", |_| {});
    let b = task(&src, "b/fizzbuzz", |_| {});
    let out = work.path().join("out");
    let err = export_dataset("demo", &[a.clone(), b], &out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tasks `a/fizzbuzz` and `b/fizzbuzz` would both be exported as `fizzbuzz`; an \
         export needs tasks whose paths end differently"
    );
    assert!(!out.exists());
    // The same task twice too, as Harbor refuses it.
    assert!(matches!(
        export_dataset("demo", &[a.clone(), a], &out),
        Err(ExportError::DuplicateName { .. })
    ));
    for name in ["", "org/", "..", "org/."] {
        let err = export_dataset(name, &[], &out).unwrap_err();
        assert!(
            matches!(err, ExportError::BadDatasetName { .. }),
            "{name}: {err}"
        );
    }
    assert!(!out.exists());
    // No tasks: nothing written.
    assert_eq!(
        export_dataset("demo", &[], &out).unwrap(),
        Vec::<PathBuf>::new()
    );
    assert!(!out.exists());
}

#[test]
fn an_existing_export_is_replaced_whole() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let t = task(&src, "tasks/t", |_| {});
    let dataset = work.path().join("out/demo");
    write(&dataset, "t/stray.txt", "stray", 0o644);
    write(&dataset, "t/task.toml", "old", 0o644);
    write(&dataset, "keep/x", "other task", 0o644);
    let dir = export_task(&t, &dataset).unwrap();
    assert!(!dir.join("stray.txt").exists());
    assert_eq!(
        fs::read_to_string(dir.join("task.toml")).unwrap(),
        "version = \"1.0\"\n"
    );
    assert_eq!(
        fs::read_to_string(dataset.join("keep/x")).unwrap(),
        "other task"
    );
    // A link in the target's place is replaced, what it pointed to untouched.
    let elsewhere = work.path().join("elsewhere");
    write(&elsewhere, "file", "mine", 0o644);
    fs::remove_dir_all(&dir).unwrap();
    symlink(&elsewhere, &dir).unwrap();
    export_task(&t, &dataset).unwrap();
    assert!(fs::symlink_metadata(&dir).unwrap().is_dir());
    assert_eq!(fs::read_to_string(elsewhere.join("file")).unwrap(), "mine");
    let mut names: Vec<_> = fs::read_dir(&dataset)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keep", "t"], "no staging left");
}

#[test]
fn cached_files_changed_after_verification_are_not_exported() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let t = task(&src, "tasks/t", |_| {});
    fs::write(t.dir.join("tests/test.sh"), "exit 0\n").unwrap();
    let dataset = work.path().join("out/demo");
    let err = export_task(&t, &dataset).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "task `tasks/t`: a copy of {} has digest ",
            t.dir.display()
        )) && err.ends_with(&format!(
            ", expected {} (the cached files changed after they were verified)",
            t.digest
        )),
        "{err}"
    );
    assert_eq!(fs::read_dir(&dataset).unwrap().count(), 0);
    // A task directory that is not one.
    let file = CachedTask {
        dir: src.join("tasks/t/task.toml"),
        ..t.clone()
    };
    let err = export_task(&file, &dataset).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "task `tasks/t`: {} is a file, expected the task's directory",
            file.dir.display()
        )
    );
}
