//! The cache against real git repositories made here and served as `file://`.

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
