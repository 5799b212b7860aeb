//! The cache against real git repositories made here and served as `file://`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use super::*;

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

/// A repository with the `fizzbuzz` example at `tasks/fizzbuzz` (first commit) and a
/// changed instruction (second commit); returns the directory and both commits.
fn repository(parent: &Path) -> (PathBuf, String, String) {
    let repo = parent.join("source");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet"]);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor/fizzbuzz");
    for rel in [
        "task.toml",
        "instruction.md",
        "solution/solve.sh",
        "tests/test.sh",
    ] {
        let to = repo.join("tasks/fizzbuzz").join(rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(example.join(rel), to).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "one"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);
    fs::write(repo.join("tasks/fizzbuzz/instruction.md"), "Changed.\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "two"]);
    let second = git(&repo, &["rev-parse", "HEAD"]);
    (repo, first, second)
}

fn source(repo: &Path, commit: Option<&str>, path: &str) -> TaskSource {
    TaskSource {
        name: "fizzbuzz".into(),
        git_url: format!("file://{}", repo.display()),
        commit: commit.map(str::to_string),
        path: path.into(),
    }
}

#[test]
fn a_pinned_task_is_fetched_once_then_served_with_the_source_gone() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let cache = TaskCache::new(work.path().join("cache"));
    let task = cache
        .get(&source(&repo, Some(&first), "tasks/./fizzbuzz"))
        .unwrap();
    // The first commit's files: the example's digest, as Harbor computes it.
    assert_eq!(
        task.digest,
        "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01"
    );
    assert_eq!(
        (task.commit.as_str(), task.path.as_str()),
        (first.as_str(), "tasks/fizzbuzz")
    );
    assert!(task.dir.join("tests/test.sh").is_file());
    // Nothing of the fetch is left in staging.
    assert_eq!(
        fs::read_dir(work.path().join("cache/staging"))
            .unwrap()
            .count(),
        0
    );
    // The source moves away: the same task comes from the cache.
    fs::rename(&repo, work.path().join("moved")).unwrap();
    let again = cache
        .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
        .unwrap();
    assert_eq!(again, task);
}

#[test]
fn each_commit_is_its_own_entry_and_head_is_the_latest() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, second) = repository(work.path());
    let cache = TaskCache::new(work.path().join("cache"));
    let one = cache
        .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
        .unwrap();
    let two = cache
        .get(&source(&repo, Some(&second), "tasks/fizzbuzz"))
        .unwrap();
    assert_ne!(one.digest, two.digest);
    assert_eq!(
        fs::read_to_string(two.dir.join("instruction.md")).unwrap(),
        "Changed.\n"
    );
    let head = cache.get(&source(&repo, None, "tasks/fizzbuzz")).unwrap();
    assert_eq!(
        (head.commit.as_str(), head.digest.as_str()),
        (second.as_str(), two.digest.as_str())
    );
}

#[test]
fn an_altered_copy_is_fetched_again_or_refused_without_its_source() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let cache = TaskCache::new(work.path().join("cache"));
    let src = source(&repo, Some(&first), "tasks/fizzbuzz");
    let task = cache.get(&src).unwrap();
    fs::write(task.dir.join("tests/test.sh"), "exit 0\n").unwrap();
    // The source is there: fetched again, the original files back.
    let fixed = cache.get(&src).unwrap();
    assert_eq!(fixed.digest, task.digest);
    assert_ne!(
        fs::read_to_string(fixed.dir.join("tests/test.sh")).unwrap(),
        "exit 0\n"
    );
    // Altered again with the source gone (and its commit not in the cache repository):
    // refused, naming the task.
    fs::write(task.dir.join("tests/test.sh"), "exit 0\n").unwrap();
    fs::remove_dir_all(work.path().join("cache/repos")).unwrap();
    fs::rename(&repo, work.path().join("moved")).unwrap();
    let err = cache.get(&src).unwrap_err().to_string();
    assert!(
        err.starts_with("task `fizzbuzz`: the cached copy ")
            && err.contains(" was altered (digest "),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn a_missing_commit_or_path_and_a_path_out_of_the_repository_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let cache = TaskCache::new(work.path().join("cache"));
    let absent = "0123456789abcdef0123456789abcdef01234567";
    let err = cache
        .get(&source(&repo, Some(absent), "tasks/fizzbuzz"))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "task `fizzbuzz`: cannot fetch the pinned commit from file://{}",
            repo.display()
        )),
        "{err}"
    );
    let err = cache
        .get(&source(&repo, Some(&first), "tasks/nope"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "task `fizzbuzz`: `tasks/nope` does not exist at commit {first} of file://{}",
            repo.display()
        )
    );
    for path in ["/etc", "../x", "tasks/../../x", "."] {
        let err = cache.get(&source(&repo, Some(&first), path)).unwrap_err();
        assert!(matches!(err, CacheError::BadPath { .. }), "{path}: {err}");
    }
    // No entry was published for any of them.
    assert!(
        !work.path().join("cache/tasks").exists()
            || fs::read_dir(work.path().join("cache/tasks"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn concurrent_fills_of_one_entry_all_succeed_and_agree() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let root = work.path().join("cache");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let cache = TaskCache::new(&root);
            let src = source(&repo, Some(&first), "tasks/fizzbuzz");
            std::thread::spawn(move || cache.get(&src).unwrap())
        })
        .collect();
    let tasks: Vec<CachedTask> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(tasks.windows(2).all(|w| w[0] == w[1]), "{tasks:?}");
    assert_eq!(fs::read_dir(root.join("tasks")).unwrap().count(), 1);
    assert_eq!(fs::read_dir(root.join("staging")).unwrap().count(), 0);
}

#[test]
fn a_stale_staging_directory_is_never_used() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let root = work.path().join("cache");
    // What a fetch killed mid-way leaves: a half-built entry in staging.
    fs::create_dir_all(root.join("staging/entry-killed/task")).unwrap();
    fs::write(root.join("staging/entry-killed/task/task.toml"), "half").unwrap();
    let task = TaskCache::new(&root)
        .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
        .unwrap();
    assert_eq!(
        task.digest,
        "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01"
    );
}

#[test]
fn credentials_never_reach_a_record_or_a_message() {
    assert_eq!(
        display_url("https://user:s3cret@git.example.org/a/b.git"),
        "https://git.example.org/a/b.git"
    );
    assert_eq!(
        display_url("git@github.com:a/b.git"),
        "git@github.com:a/b.git"
    );
    assert_eq!(display_url("file:///srv/a.git"), "file:///srv/a.git");
    let url = "https://user:s3cret@127.0.0.1:9/a.git";
    let said = scrub(
        &format!("fatal: unable to access '{url}': refused by user:s3cret"),
        url,
    );
    assert!(!said.contains("s3cret"), "{said}");
    let cache = TaskCache::new(tempfile::tempdir().unwrap().path().join("cache"));
    let err = cache
        .get(&TaskSource {
            name: "t".into(),
            git_url: url.into(),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            path: "t".into(),
        })
        .unwrap_err()
        .to_string();
    assert!(
        !err.contains("s3cret") && err.contains("https://127.0.0.1:9/a.git"),
        "{err}"
    );
}

/// `git daemon` serving `base` on a free loopback port; killed when dropped.
struct Daemon(std::process::Child, u16);

impl Daemon {
    fn serve(base: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The daemon itself, not `git daemon` (which may run it as a child a kill misses).
        let exec_path = Command::new("git")
            .arg("--exec-path")
            .output()
            .unwrap()
            .stdout;
        let exec_path = String::from_utf8(exec_path).unwrap();
        let child = Command::new(Path::new(exec_path.trim()).join("git-daemon"))
            .arg("--reuseaddr")
            .arg("--export-all")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "git daemon did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Daemon(child, port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_task_over_the_network_is_fetched_once_then_served_with_the_server_gone() {
    let work = tempfile::tempdir().unwrap();
    let (_, first, _) = repository(work.path());
    let daemon = Daemon::serve(work.path());
    let src = TaskSource {
        name: "fizzbuzz".into(),
        git_url: format!("git://127.0.0.1:{}/source", daemon.1),
        commit: Some(first.clone()),
        path: "tasks/fizzbuzz".into(),
    };
    let cache = TaskCache::new(work.path().join("cache"));
    let task = cache.get(&src).unwrap();
    assert_eq!(
        task.digest,
        "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01"
    );
    drop(daemon);
    assert_eq!(cache.get(&src).unwrap(), task);
    // Unpinned, with the server gone: its HEAD cannot be read, one line says so.
    let err = cache
        .get(&TaskSource {
            commit: None,
            ..src.clone()
        })
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("task `fizzbuzz`: cannot read HEAD of git://127.0.0.1:"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

/// Sets the modification time of `path` (a file or a directory) `ago` in the past.
fn age(path: &Path, ago: std::time::Duration) {
    let when = SystemTime::now() - ago;
    File::open(path)
        .unwrap()
        .set_times(fs::FileTimes::new().set_modified(when))
        .unwrap();
}

#[test]
fn a_cached_task_records_its_size_and_an_old_record_without_one_is_still_read() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let cache = TaskCache::new(work.path().join("cache"));
    let src = source(&repo, Some(&first), "tasks/fizzbuzz");
    let task = cache.get(&src).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harbor/fizzbuzz");
    let expected: u64 = [
        "task.toml",
        "instruction.md",
        "solution/solve.sh",
        "tests/test.sh",
    ]
    .iter()
    .map(|rel| fs::metadata(example.join(rel)).unwrap().len())
    .sum();
    assert_eq!(task.bytes, expected);
    let record = task.dir.parent().unwrap().join("entry.json");
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    assert_eq!(json["bytes"], expected);
    // An entry.json written before sizes were recorded: read, the size counted.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("bytes");
    fs::write(&record, serde_json::to_vec(&old).unwrap()).unwrap();
    fs::rename(&repo, work.path().join("moved")).unwrap();
    assert_eq!(cache.get(&src).unwrap(), task);
    assert_eq!(cache.verify().unwrap().intact, 1);
}

#[test]
fn verify_keeps_intact_entries_and_takes_out_each_kind_of_bad_one() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, second) = repository(work.path());
    // A third and a fourth commit: four entries of the same task.
    fs::write(repo.join("tasks/fizzbuzz/instruction.md"), "Three.\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "three"]);
    let third = git(&repo, &["rev-parse", "HEAD"]);
    fs::write(repo.join("tasks/fizzbuzz/instruction.md"), "Four.\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "four"]);
    let fourth = git(&repo, &["rev-parse", "HEAD"]);
    let root = work.path().join("cache");
    let cache = TaskCache::new(&root);
    let intact = cache
        .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
        .unwrap();
    let altered = cache
        .get(&source(&repo, Some(&second), "tasks/fizzbuzz"))
        .unwrap();
    let no_task = cache
        .get(&source(&repo, Some(&third), "tasks/fizzbuzz"))
        .unwrap();
    let no_record = cache
        .get(&source(&repo, Some(&fourth), "tasks/fizzbuzz"))
        .unwrap();
    fs::write(altered.dir.join("tests/test.sh"), "exit 0\n").unwrap();
    fs::remove_dir_all(&no_task.dir).unwrap();
    fs::remove_file(no_record.dir.parent().unwrap().join("entry.json")).unwrap();
    // And one whose record is not JSON.
    fs::create_dir_all(root.join("tasks/garbled/task")).unwrap();
    fs::write(root.join("tasks/garbled/entry.json"), "{not json").unwrap();

    let report = cache.verify().unwrap();
    assert_eq!((report.checked, report.intact), (5, 1), "{report:?}");
    let key = |t: &CachedTask| {
        t.dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let url = format!("file://{}", repo.display());
    let find = |k: &str| {
        report
            .dropped
            .iter()
            .find(|d| d.key == k)
            .unwrap_or_else(|| panic!("{k} not dropped: {report:?}"))
    };
    let d = find(&key(&altered));
    assert_eq!(
        (d.git_url.as_deref(), d.commit.as_deref(), d.path.as_deref()),
        (
            Some(url.as_str()),
            Some(second.as_str()),
            Some("tasks/fizzbuzz")
        )
    );
    assert!(
        d.reason.starts_with("files altered (digest ")
            && d.reason
                .ends_with(&format!(", recorded {})", altered.digest)),
        "{}",
        d.reason
    );
    assert_eq!(
        d.to_string(),
        format!("`tasks/fizzbuzz` of {url} at {second}: {}", d.reason)
    );
    let d = find(&key(&no_task));
    assert_eq!(
        (d.commit.as_deref(), d.reason.as_str()),
        (Some(third.as_str()), "no task directory")
    );
    let d = find(&key(&no_record));
    assert_eq!(
        (d.git_url.as_ref(), d.reason.as_str()),
        (None, "no entry.json")
    );
    assert_eq!(
        d.to_string(),
        format!("cache entry {}: no entry.json", key(&no_record))
    );
    let d = find("garbled");
    assert!(d.reason.starts_with("entry.json unreadable: "), "{d}");
    assert!(report.dropped.iter().all(|d| !d.to_string().contains('\n')));
    // Only the intact entry is left, and nothing of the bad ones in staging.
    let left: Vec<_> = fs::read_dir(root.join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [key(&intact)]);
    assert_eq!(fs::read_dir(root.join("staging")).unwrap().count(), 0);
    // The dropped ones are fetched again on use; a second verify finds all intact.
    cache
        .get(&source(&repo, Some(&second), "tasks/fizzbuzz"))
        .unwrap();
    let again = cache.verify().unwrap();
    assert_eq!(
        (again.checked, again.intact, again.dropped.len()),
        (2, 2, 0)
    );
}

#[test]
fn verify_of_an_empty_or_absent_cache_finds_nothing() {
    let work = tempfile::tempdir().unwrap();
    let cache = TaskCache::new(work.path().join("absent"));
    assert_eq!(cache.verify().unwrap(), VerifyReport::default());
    assert!(!work.path().join("absent").exists());
}

#[test]
fn verify_removes_staging_leftovers_older_than_an_hour_only() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("cache");
    let old = root.join("staging/entry-killed");
    fs::create_dir_all(old.join("checkout")).unwrap();
    fs::write(old.join("checkout.index"), "i").unwrap();
    let hours = std::time::Duration::from_secs(2 * 60 * 60);
    age(&old.join("checkout"), hours);
    age(&old.join("checkout.index"), hours);
    age(&old, hours);
    // A fetch under way: its staging directory is recent, or it has a recent child.
    let running = root.join("staging/entry-running");
    fs::create_dir_all(&running).unwrap();
    let busy = root.join("staging/entry-busy");
    fs::create_dir_all(&busy).unwrap();
    fs::write(busy.join("checkout.index"), "i").unwrap();
    age(&busy, hours);
    let aside = root.join("staging/altered-x");
    fs::create_dir_all(aside.join("task")).unwrap();
    age(&aside.join("task"), hours);
    age(&aside, hours);

    let report = TaskCache::new(&root).verify().unwrap();
    assert_eq!(report.stale_staging, 2, "{report:?}");
    assert!(!old.exists() && !aside.exists());
    assert!(running.is_dir() && busy.is_dir());
}

#[test]
fn verify_puts_back_an_entry_replaced_by_a_good_copy_meanwhile() {
    let work = tempfile::tempdir().unwrap();
    let (repo, first, _) = repository(work.path());
    let root = work.path().join("cache");
    let cache = TaskCache::new(&root);
    let task = cache
        .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
        .unwrap();
    // What verify sees of an entry a fetch has just replaced: intact by the time it moves.
    let entry = task.dir.parent().unwrap();
    assert!(!cache.take_out(entry).unwrap());
    assert_eq!(
        cache
            .get(&source(&repo, Some(&first), "tasks/fizzbuzz"))
            .unwrap(),
        task
    );
    assert_eq!(fs::read_dir(root.join("staging")).unwrap().count(), 0);
}

/// A repository with one task `tasks/linked` whose links are made with `links` (relative to
/// the task directory); returns it and its commit.
fn linked_repository(parent: &Path, links: &[(&str, &str)]) -> (PathBuf, String) {
    let repo = parent.join("linked-source");
    let task = repo.join("tasks/linked");
    fs::create_dir_all(task.join("tests/sub")).unwrap();
    fs::create_dir_all(task.join("solution")).unwrap();
    git(&repo, &["init", "--quiet"]);
    fs::write(repo.join("README.md"), "readme\n").unwrap();
    fs::write(task.join("task.toml"), "version = \"1.0\"\n").unwrap();
    fs::write(task.join("instruction.md"), "Do it.\n").unwrap();
    fs::write(task.join("tests/test.sh"), "exit 0\n").unwrap();
    fs::set_permissions(
        task.join("tests/test.sh"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    fs::write(task.join("tests/sub/f"), "f").unwrap();
    fs::write(task.join("solution/solve.sh"), "true\n").unwrap();
    for (link, target) in links {
        std::os::unix::fs::symlink(target, task.join(link)).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "linked"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    (repo, commit)
}

#[test]
fn links_are_made_into_files_when_fetched_so_the_digest_is_that_of_harbors_copy() {
    let work = tempfile::tempdir().unwrap();
    let (repo, commit) = linked_repository(
        work.path(),
        &[
            ("tests/link.sh", "test.sh"),
            ("tests/linkdir", "sub"),
            ("solution/test.sh", "../tests/link.sh"),
        ],
    );
    let cache = TaskCache::new(work.path().join("cache"));
    let mut src = source(&repo, Some(&commit), "tasks/linked");
    src.name = "linked".into();
    let task = cache.get(&src).unwrap();
    assert!(!crate::export::has_links(&task.dir).unwrap());
    let mode = |rel: &str| {
        fs::metadata(task.dir.join(rel))
            .unwrap()
            .permissions()
            .mode()
    };
    assert_eq!(
        fs::read(task.dir.join("tests/link.sh")).unwrap(),
        b"exit 0\n"
    );
    assert_ne!(mode("tests/link.sh") & 0o100, 0);
    assert_ne!(mode("solution/test.sh") & 0o100, 0);
    assert!(fs::symlink_metadata(task.dir.join("tests/linkdir"))
        .unwrap()
        .is_dir());
    // The digest is that of the files as they are now, linked directory included.
    let hash = content_hash(&task.dir).unwrap();
    assert_eq!(task.digest, hash.digest);
    assert!(
        hash.files.contains(&"tests/linkdir/f".to_string()),
        "{hash:?}"
    );
    assert_eq!(cache.get(&src).unwrap(), task);
    assert_eq!(cache.verify().unwrap().intact, 1);
}

#[test]
fn a_link_harbor_refuses_refuses_the_fetch_in_one_line() {
    for (link, target, said) in [
        (
            "tests/abs",
            "/etc/hostname",
            "points to the absolute path `/etc/hostname`",
        ),
        ("tests/up", "../..", "leads out of the task directory"),
        // Out of the task and back in: Harbor resolves links in a copy of the task alone.
        (
            "tests/back.sh",
            "../../linked/tests/test.sh",
            "leads out of the task directory",
        ),
        // Out of the task to a file of the repository.
        (
            "tests/esc.md",
            "../../../README.md",
            "leads out of the task directory",
        ),
        ("tests/gone", "nope", "points to nothing"),
    ] {
        let work = tempfile::tempdir().unwrap();
        let (repo, commit) = linked_repository(work.path(), &[(link, target)]);
        let cache = TaskCache::new(work.path().join("cache"));
        let mut src = source(&repo, Some(&commit), "tasks/linked");
        src.name = "linked".into();
        let err = cache.get(&src).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("task `linked`: link `{link}` ")) && err.contains(said),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        assert!(
            !work.path().join("cache/tasks").exists()
                || fs::read_dir(work.path().join("cache/tasks"))
                    .unwrap()
                    .count()
                    == 0
        );
        assert_eq!(
            fs::read_dir(work.path().join("cache/staging"))
                .unwrap()
                .count(),
            0
        );
    }
}

#[test]
fn an_entry_cached_with_its_links_is_dropped_and_fetched_again() {
    let work = tempfile::tempdir().unwrap();
    let (repo, commit) = linked_repository(work.path(), &[("tests/linkdir", "sub")]);
    let cache = TaskCache::new(work.path().join("cache"));
    let mut src = source(&repo, Some(&commit), "tasks/linked");
    src.name = "linked".into();
    let task = cache.get(&src).unwrap();
    // What an earlier version cached: the link kept, its digest taken over the link.
    fs::remove_dir_all(task.dir.join("tests/linkdir")).unwrap();
    std::os::unix::fs::symlink("sub", task.dir.join("tests/linkdir")).unwrap();
    let record = task.dir.parent().unwrap().join("entry.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    json["digest"] = content_hash(&task.dir).unwrap().digest.into();
    fs::write(&record, serde_json::to_vec(&json).unwrap()).unwrap();
    assert_eq!(cache.get(&src).unwrap(), task, "fetched again");
    fs::remove_dir_all(task.dir.join("tests/linkdir")).unwrap();
    std::os::unix::fs::symlink("sub", task.dir.join("tests/linkdir")).unwrap();
    let report = cache.verify().unwrap();
    assert_eq!(
        report.dropped[0].reason,
        "holds links (cached before they were made into files)"
    );
}

#[test]
fn gits_reason_is_its_fatal_line_not_the_advice_after_it() {
    let stderr = "fatal: '/x/repo' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
    assert_eq!(
        super::git_reason(stderr),
        "fatal: '/x/repo' does not appear to be a git repository"
    );
    assert_eq!(
        super::git_reason("warning: x\nsomething odd\n"),
        "something odd"
    );
}
