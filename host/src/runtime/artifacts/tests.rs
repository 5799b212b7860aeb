//! Tests of capturing and verifying artifacts.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{ArtifactLimits, ArtifactSpec, ExecRequest};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Error;
use agentcompass_results::artifacts::*;
use sha2::{Digest, Sha256};

use super::exclude::*;
use super::measure::*;
use super::transfer::*;

fn spec(source: &str, destination: &str, exclude: &[&str]) -> ArtifactSpec {
    ArtifactSpec {
        destination: Some(destination.into()),
        exclude: exclude.iter().map(|s| s.to_string()).collect(),
        ..ArtifactSpec::new(source)
    }
}

fn write(path: &Path, content: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn sha(content: &[u8]) -> String {
    hex::encode(Sha256::digest(content))
}

fn budget() -> Budget {
    Budget::new(&ArtifactLimits::default())
}

#[test]
fn globs_cover_star_question_and_classes() {
    assert!(glob_match("*.tmp", "a.tmp"));
    assert!(glob_match("*.tmp", "dir/a.tmp"), "`*` matches `/`");
    assert!(!glob_match("*.tmp", "a.tmpx"));
    assert!(glob_match("a?c", "abc"));
    assert!(!glob_match("a?c", "ac"));
    assert!(glob_match("[abc]x", "bx"));
    assert!(!glob_match("[!abc]x", "bx"));
    assert!(glob_match("[^abc]x", "dx"));
    assert!(glob_match("file[0-9]", "file7"));
    assert!(!glob_match("file[0-9]", "filex"));
    assert!(glob_match("[]]", "]"));
    assert!(glob_match("[", "["), "an unclosed bracket is literal");
    assert!(glob_match("\\*", "*"));
    assert!(!glob_match("\\*", "a"));
    assert!(glob_match("*", ""));
    assert!(glob_match("a*b*c", "aXXbYYc"));
    assert!(!glob_match("a*b*c", "aXXbYY"));
    assert!(glob_match("**", "a/b"));
}

#[test]
fn exclusions_are_unanchored_unless_rooted() {
    let rules = exclusions(&[
        "*.tmp".into(),
        "cache".into(),
        "/top".into(),
        "./b/c/".into(),
    ]);
    assert!(is_excluded(&rules, "sub", "x.tmp"));
    assert!(is_excluded(&rules, "sub", "deep/x.tmp"));
    assert!(is_excluded(&rules, "sub", "cache"));
    assert!(is_excluded(&rules, "sub", "a/cache"));
    assert!(!is_excluded(&rules, "sub", "cached"));
    assert!(is_excluded(&rules, "sub", "top"));
    assert!(!is_excluded(&rules, "sub", "a/top"));
    assert!(is_excluded(&rules, "sub", "a/b/c"));
    assert!(!is_excluded(&rules, "sub", "b"));
    // The source's basename is the member prefix, as in tar.
    let rules = exclusions(&["sub/keep.txt".into()]);
    assert!(is_excluded(&rules, "sub", "keep.txt"));
    assert!(exclusions(&["".into(), "/".into()]).is_empty());
}

#[test]
fn a_file_entry_is_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("result.json");
    write(&local, b"{\"ok\": true}");
    let entry = measure_entry(
        &spec("/app/result.json", "result.json", &[]),
        &local,
        &mut budget(),
    )
    .unwrap();
    assert_eq!(entry.kind, Some(EntryKind::File));
    assert_eq!(entry.status, EntryStatus::Collected);
    assert_eq!(entry.bytes, 12);
    assert_eq!(entry.entries, 1);
    assert_eq!(
        entry.sha256.as_deref(),
        Some(sha(b"{\"ok\": true}").as_str())
    );
    assert!(entry.mode.is_some());
    assert!(entry.files.is_empty());
}

#[test]
fn a_directory_entry_lists_files_dirs_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sub");
    write(&local.join("a.txt"), b"hello");
    write(&local.join("nested/b.bin"), &[0, 1, 2, 255]);
    fs::create_dir_all(local.join("empty")).unwrap();
    std::os::unix::fs::symlink("nested/b.bin", local.join("link")).unwrap();
    let entry = measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap();
    assert_eq!(entry.kind, Some(EntryKind::Directory));
    assert_eq!(entry.bytes, 9);
    assert_eq!(entry.entries, 3);
    let paths: Vec<&str> = entry.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "nested/b.bin"]);
    assert_eq!(entry.files[0].sha256, sha(b"hello"));
    assert_eq!(entry.dirs, ["empty", "nested"]);
    assert_eq!(entry.links[0].target, "nested/b.bin");
    assert_eq!(
        entry.sha256.as_deref(),
        Some(directory_digest(&entry.files, &entry.links).as_str())
    );
    // The digest depends on content and mode.
    let mut changed = entry.files.clone();
    changed[0].mode = "0600".into();
    assert_ne!(
        directory_digest(&changed, &entry.links),
        entry.sha256.clone().unwrap()
    );
}

#[test]
fn an_empty_directory_is_collected_with_zero_bytes_and_a_missing_one_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("empty");
    fs::create_dir(&local).unwrap();
    let entry = measure_entry(
        &spec("/logs/artifacts", "logs/artifacts", &[]),
        &local,
        &mut budget(),
    )
    .unwrap();
    assert_eq!(entry.status, EntryStatus::Collected);
    assert_eq!((entry.bytes, entry.entries), (0, 0));
    assert_eq!(entry.sha256.as_deref(), Some(sha(b"").as_str()));
    let missing = measure_entry(
        &spec("/nope", "nope", &[]),
        &dir.path().join("nope"),
        &mut budget(),
    )
    .unwrap();
    assert_eq!(missing.status, EntryStatus::Missing);
    assert_eq!(missing.kind, None);
    let manifest = ArtifactManifest::new(vec![entry, missing]);
    assert!(manifest.complete);
    assert_eq!(manifest.total_bytes, 0);
}

#[test]
fn exclusions_delete_matches_before_hashing() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sub");
    write(&local.join("keep.txt"), b"keep");
    write(&local.join("drop.tmp"), b"drop");
    write(&local.join("deep/x.tmp"), b"x");
    write(&local.join("cache/big.bin"), b"big");
    let entry = measure_entry(
        &spec("/app/sub", "sub", &["*.tmp", "cache"]),
        &local,
        &mut budget(),
    )
    .unwrap();
    let paths: Vec<&str> = entry.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["keep.txt"]);
    assert_eq!(entry.excluded, 3);
    assert_eq!(entry.dirs, ["deep"]);
    assert!(!local.join("drop.tmp").exists());
    assert!(!local.join("cache").exists());
    // A file source matching its own pattern is recorded as excluded.
    let file = dir.path().join("f.log");
    write(&file, b"log");
    let entry = measure_entry(
        &spec("/app/f.log", "f.log", &["*.log"]),
        &file,
        &mut budget(),
    )
    .unwrap();
    assert_eq!(entry.status, EntryStatus::Excluded);
    assert!(!file.exists());
}

#[test]
fn limits_on_bytes_and_entries_are_capture_errors() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sub");
    write(&local.join("a"), &vec![7u8; 600 * 1024]);
    write(&local.join("b"), &vec![7u8; 600 * 1024]);
    let limits = ArtifactLimits {
        max_mb: 1,
        ..ArtifactLimits::default()
    };
    let err = measure_entry(
        &spec("/app/sub", "sub", &[]),
        &local,
        &mut Budget::new(&limits),
    )
    .unwrap_err();
    let message = err.to_string();
    assert_eq!(capture_code(&err).code, "artifact_limit_exceeded");
    assert!(
        message.contains("max_mb")
            && message.contains("1228800 bytes")
            && message.contains("1048576"),
        "{message}"
    );
    let limits = ArtifactLimits {
        max_files: 2,
        ..ArtifactLimits::default()
    };
    let err = measure_entry(
        &spec("/app/sub", "sub", &[]),
        &local,
        &mut Budget::new(&limits),
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("max_files")
            && message.contains("3 filesystem entries")
            && message.contains("/app/sub"),
        "{message}"
    );
    // The budget is shared by the entries of an attempt.
    let limits = ArtifactLimits {
        max_files: 4,
        ..ArtifactLimits::default()
    };
    let mut shared = Budget::new(&limits);
    measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut shared).unwrap();
    assert_eq!((shared.entries(), shared.bytes()), (3, 1_228_800));
    write(&dir.path().join("c"), b"c");
    measure_entry(
        &spec("/app/c", "c", &[]),
        &dir.path().join("c"),
        &mut shared,
    )
    .unwrap();
    write(&dir.path().join("d"), b"d");
    assert!(measure_entry(
        &spec("/app/d", "d", &[]),
        &dir.path().join("d"),
        &mut shared
    )
    .is_err());
}

#[test]
fn escaping_links_and_special_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sub");
    fs::create_dir_all(local.join("in")).unwrap();
    std::os::unix::fs::symlink("../../outside", local.join("in/up")).unwrap();
    let err = measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap_err();
    assert!(matches!(err, ArtifactError::EscapingLink { .. }), "{err}");
    assert_eq!(capture_code(&err).code, "artifact_capture_failed");
    fs::remove_file(local.join("in/up")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", local.join("abs")).unwrap();
    assert!(measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).is_err());
    fs::remove_file(local.join("abs")).unwrap();
    std::os::unix::fs::symlink("../sub/in", local.join("fine")).unwrap();
    // `../sub/in` from the root leaves the root: refused as well.
    assert!(measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).is_err());
    fs::remove_file(local.join("fine")).unwrap();
    std::os::unix::fs::symlink("in/../in", local.join("fine")).unwrap();
    measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap();
    fs::remove_file(local.join("fine")).unwrap();
    let fifo = local.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let err = measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap_err();
        assert!(matches!(err, ArtifactError::SpecialFile { .. }), "{err}");
    }
}

fn collected(root: &Path) -> ArtifactManifest {
    write(&root.join("sub/a.txt"), b"hello");
    write(&root.join("sub/n/b.txt"), b"world");
    fs::create_dir_all(root.join("sub/empty")).unwrap();
    write(&root.join("result.json"), b"{}");
    let mut b = budget();
    let entries = vec![
        measure_entry(&spec("/app/sub", "sub", &[]), &root.join("sub"), &mut b).unwrap(),
        measure_entry(
            &spec("/app/result.json", "result.json", &[]),
            &root.join("result.json"),
            &mut b,
        )
        .unwrap(),
        measure_entry(&spec("/app/none", "none", &[]), &root.join("none"), &mut b).unwrap(),
    ];
    ArtifactManifest::new(entries)
}

#[test]
fn verification_accepts_intact_copies_and_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(ARTIFACTS_DIR);
    let manifest = collected(&root);
    assert_eq!(manifest.total_bytes, 12);
    verify_manifest(&manifest, &root).unwrap();
    write_manifest(&dir.path().join(MANIFEST_FILE), &manifest).unwrap();
    assert_eq!(
        read_manifest(&dir.path().join(MANIFEST_FILE)).unwrap(),
        Some(manifest)
    );
    assert!(verify_attempt_dir(dir.path()).unwrap());
    assert!(!verify_attempt_dir(&dir.path().join("elsewhere")).unwrap());
    let value = read_manifest(&dir.path().join(MANIFEST_FILE))
        .unwrap()
        .unwrap()
        .to_value();
    assert_eq!(value["schema_version"], 1);
    assert_eq!(value["entries"][0]["kind"], "directory");
    assert_eq!(value["entries"][2]["status"], "missing");
}

#[test]
fn verification_catches_a_flipped_byte_a_missing_file_and_an_extra_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(ARTIFACTS_DIR);
    let manifest = collected(&root);
    // Flipped byte, same size.
    fs::write(root.join("sub/n/b.txt"), b"worle").unwrap();
    let err = verify_manifest(&manifest, &root).unwrap_err();
    assert!(
        err.to_string().contains("sub/n/b.txt") && err.to_string().contains("sha256"),
        "{err}"
    );
    fs::write(root.join("sub/n/b.txt"), b"world").unwrap();
    verify_manifest(&manifest, &root).unwrap();
    // A file entry changed.
    fs::write(root.join("result.json"), b"{ }").unwrap();
    let err = verify_manifest(&manifest, &root).unwrap_err();
    assert!(
        err.to_string().contains("size 3 bytes, recorded 2"),
        "{err}"
    );
    fs::write(root.join("result.json"), b"{}").unwrap();
    // Missing file.
    fs::remove_file(root.join("sub/a.txt")).unwrap();
    let err = verify_manifest(&manifest, &root).unwrap_err();
    assert!(
        err.to_string().contains("sub/a.txt") && err.to_string().contains("missing"),
        "{err}"
    );
    fs::write(root.join("sub/a.txt"), b"hello").unwrap();
    // Extra file.
    fs::write(root.join("sub/extra"), b"").unwrap();
    let err = verify_manifest(&manifest, &root).unwrap_err();
    assert!(err.to_string().contains("not recorded"), "{err}");
    fs::remove_file(root.join("sub/extra")).unwrap();
    // Removed empty directory.
    fs::remove_dir(root.join("sub/empty")).unwrap();
    assert!(verify_manifest(&manifest, &root).is_err());
    fs::create_dir(root.join("sub/empty")).unwrap();
    verify_manifest(&manifest, &root).unwrap();
    // Incomplete manifests and unsafe destinations are refused.
    let mut incomplete = manifest.clone();
    incomplete.complete = false;
    assert!(verify_manifest(&incomplete, &root).is_err());
    let mut escaping = manifest.clone();
    escaping.entries[1].destination = "../result.json".into();
    assert!(verify_manifest(&escaping, &root).is_err());
    let mut forged = manifest;
    forged.entries[0].files[0].path = "../../etc/passwd".into();
    assert!(verify_manifest(&forged, &root).is_err());
}

#[test]
fn restore_puts_parents_first_dedupes_and_skips_missing() {
    let entry = |source: &str, dest: &str, kind, status, sha: &str| ManifestEntry {
        kind,
        sha256: Some(sha.into()),
        ..ManifestEntry::empty(&spec(source, dest, &[]), status)
    };
    let d = Some(EntryKind::Directory);
    let f = Some(EntryKind::File);
    let manifest = ArtifactManifest::new(vec![
        entry(
            "/app/sub/deep/x.log",
            "x.log",
            f,
            EntryStatus::Collected,
            "1",
        ),
        entry("/app/sub", "sub", d, EntryStatus::Collected, "2"),
        entry("/logs/artifacts", "logs", d, EntryStatus::Collected, "3"),
        entry("/app", "app", d, EntryStatus::Collected, "4"),
        entry("/gone", "gone", None, EntryStatus::Missing, ""),
        entry("/app/sub/", "sub-again", d, EntryStatus::Collected, "2"),
    ]);
    let order: Vec<String> = restore_plan(&manifest)
        .unwrap()
        .into_iter()
        .map(|s| s.source)
        .collect();
    assert_eq!(
        order,
        ["/app", "/app/sub", "/logs/artifacts", "/app/sub/deep/x.log"]
    );
    let conflicting = ArtifactManifest::new(vec![
        entry("/app/sub", "a", d, EntryStatus::Collected, "1"),
        entry("/app/sub", "b", d, EntryStatus::Collected, "2"),
    ]);
    let err = restore_plan(&conflicting).unwrap_err();
    assert!(
        err.to_string().contains("conflicting copies of /app/sub"),
        "{err}"
    );
}

/// A session over a host directory standing in for the sandbox root; `exec` runs the
/// real `sh` scripts on the mapped paths and every call is recorded.
struct DirSession {
    root: PathBuf,
    calls: std::sync::Mutex<Vec<String>>,
}

impl DirSession {
    fn new(root: &Path) -> std::sync::Arc<DirSession> {
        std::sync::Arc::new(DirSession {
            root: root.to_path_buf(),
            calls: Default::default(),
        })
    }
    fn map(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
    fn log(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

fn copy_all(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    if meta.is_dir() {
        fs::create_dir_all(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_all(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from)?, to)
    } else {
        fs::copy(from, to).map(|_| ())
    }
}

#[agentcompass_plugin_api::sdk::async_trait]
impl agentcompass_plugin_api::sdk::EnvironmentSession for DirSession {
    fn info(&self) -> agentcompass_plugin_api::contracts::SessionInfo {
        agentcompass_plugin_api::contracts::SessionInfo {
            id: "dir".into(),
            provider: "dir".into(),
            default_workdir: None,
            close_params: serde_json::Value::Null,
            ..Default::default()
        }
    }
    async fn exec(
        &self,
        request: ExecRequest,
    ) -> agentcompass_plugin_api::Result<agentcompass_plugin_api::contracts::ExecResult> {
        let agentcompass_plugin_api::contracts::ExecCommand::Argv(argv) = &request.command else {
            return Err(Error::msg("shell commands are not expected"));
        };
        let kind = if argv[2] == CLEAR_DIR_SCRIPT {
            "clear"
        } else {
            "mkparent"
        };
        self.log(format!("{kind} {}", argv[4]));
        let out = std::process::Command::new(&argv[0])
            .args([&argv[1], &argv[2], &argv[3]])
            .arg(self.map(&argv[4]))
            .output()
            .map_err(|e| Error::msg(e.to_string()))?;
        Ok(agentcompass_plugin_api::contracts::ExecResult::new(
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        ))
    }
    async fn upload(&self, src: &Path, dst: &str) -> agentcompass_plugin_api::Result<()> {
        self.log(format!("upload {dst}"));
        copy_all(src, &self.map(dst)).map_err(|e| Error::msg(e.to_string()))
    }
    async fn download(&self, src: &str, dst: &Path) -> agentcompass_plugin_api::Result<()> {
        copy_all(&self.map(src), dst).map_err(|e| Error::msg(e.to_string()))
    }
    async fn upload_dir(&self, src: &Path, dst: &str) -> agentcompass_plugin_api::Result<()> {
        self.log(format!("upload_dir {dst}"));
        copy_all(src, &self.map(dst)).map_err(|e| Error::msg(e.to_string()))
    }
    async fn download_dir(&self, src: &str, dst: &Path) -> agentcompass_plugin_api::Result<()> {
        copy_all(&self.map(src), dst).map_err(|e| Error::msg(e.to_string()))
    }
    async fn read_text(&self, path: &str) -> agentcompass_plugin_api::Result<String> {
        fs::read_to_string(self.map(path)).map_err(|e| Error::msg(e.to_string()))
    }
    async fn write_text(&self, path: &str, content: &str) -> agentcompass_plugin_api::Result<()> {
        fs::write(self.map(path), content).map_err(|e| Error::msg(e.to_string()))
    }
    async fn is_file(&self, path: &str) -> agentcompass_plugin_api::Result<bool> {
        Ok(self.map(path).is_file())
    }
    async fn is_dir(&self, path: &str) -> agentcompass_plugin_api::Result<bool> {
        Ok(self.map(path).is_dir())
    }
    async fn close(&self) -> agentcompass_plugin_api::Result<()> {
        Ok(())
    }
}

/// Declares `/app` (excluding `*.log`), its child `/app/keep.log` and a file, in child-first
/// order, plus a missing source.
fn replay_specs() -> Vec<ArtifactSpec> {
    vec![
        spec("/app/keep.log", "keep.log", &[]),
        spec("/app", "app", &["*.log"]),
        spec("/app/result.json", "result.json", &[]),
        spec("/gone", "gone", &[]),
    ]
}

async fn collect(sandbox: &Path, attempt: &Path) -> ArtifactManifest {
    write(&sandbox.join("app/src/main.rs"), b"fn main() {}");
    write(&sandbox.join("app/keep.log"), b"kept");
    write(&sandbox.join("app/noise.log"), b"noise");
    write(&sandbox.join("app/.hidden"), b"h");
    fs::create_dir_all(sandbox.join("app/empty")).unwrap();
    write(&sandbox.join("app/result.json"), b"{}");
    let session: SessionRef = DirSession::new(sandbox);
    let root = attempt.join(ARTIFACTS_DIR);
    reset_destination(&root, &attempt.join(MANIFEST_FILE)).unwrap();
    let mut entries = Vec::new();
    download_all(
        &session,
        &replay_specs(),
        &root,
        &ArtifactLimits::default(),
        &mut entries,
    )
    .await
    .unwrap();
    let manifest = ArtifactManifest::new(entries);
    write_manifest(&attempt.join(MANIFEST_FILE), &manifest).unwrap();
    manifest
}

#[tokio::test]
async fn download_then_restore_replays_the_submission() {
    let dir = tempfile::tempdir().unwrap();
    let (sandbox, attempt, fresh) = (
        dir.path().join("sandbox"),
        dir.path().join("attempt-1"),
        dir.path().join("fresh"),
    );
    let manifest = collect(&sandbox, &attempt).await;
    assert!(manifest.complete);
    let statuses: Vec<EntryStatus> = manifest.entries.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [
            EntryStatus::Collected,
            EntryStatus::Collected,
            EntryStatus::Collected,
            EntryStatus::Missing
        ]
    );
    let app = &manifest.entries[1];
    let files: Vec<&str> = app.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, [".hidden", "result.json", "src/main.rs"]);
    assert_eq!(app.dirs, ["empty", "src"]);
    assert!(!attempt.join("artifacts/app/noise.log").exists());

    // The fresh sandbox has stale content in /app, including hidden entries.
    write(&fresh.join("app/stale.txt"), b"stale");
    write(&fresh.join("app/.stale"), b"stale");
    write(&fresh.join("app/..odd"), b"stale");
    let fresh_session = DirSession::new(&fresh);
    let session: SessionRef = fresh_session.clone();
    let restored = restore_all(&session, &attempt, &replay_specs(), 60.0)
        .await
        .unwrap();
    assert_eq!(restored, 3);
    assert_eq!(
        fresh_session.calls(),
        [
            "clear /app",
            "upload_dir /app",
            "mkparent /app/keep.log",
            "upload /app/keep.log",
            "mkparent /app/result.json",
            "upload /app/result.json",
        ],
        "parents first, the missing source uploads nothing"
    );
    assert!(!fresh.join("app/stale.txt").exists());
    assert!(!fresh.join("app/.stale").exists());
    assert!(!fresh.join("app/..odd").exists());
    assert!(fresh.join("app").is_dir());
    assert!(
        fresh.join("app/empty").is_dir(),
        "empty directories survive"
    );
    assert_eq!(fs::read(fresh.join("app/keep.log")).unwrap(), b"kept");
    assert_eq!(
        fs::read(fresh.join("app/src/main.rs")).unwrap(),
        b"fn main() {}"
    );
    assert!(!fresh.join("gone").exists());
}

#[tokio::test]
async fn restore_refuses_a_corrupt_copy_before_uploading() {
    let dir = tempfile::tempdir().unwrap();
    let (sandbox, attempt, fresh) = (
        dir.path().join("sandbox"),
        dir.path().join("attempt-1"),
        dir.path().join("fresh"),
    );
    collect(&sandbox, &attempt).await;
    let corrupt = attempt.join("artifacts/app/src/main.rs");
    fs::write(&corrupt, b"fn main() {!").unwrap();
    let fresh_session = DirSession::new(&fresh);
    let session: SessionRef = fresh_session.clone();
    let (code, message) = restore_all(&session, &attempt, &replay_specs(), 60.0)
        .await
        .unwrap_err();
    assert_eq!(code.code, "artifact_verification_failed");
    assert!(
        message.contains(&corrupt.display().to_string()),
        "{message}"
    );
    assert!(fresh_session.calls().is_empty(), "nothing was touched");
    // A removed file fails the same way.
    fs::write(&corrupt, b"fn main() {}").unwrap();
    fs::remove_file(attempt.join("artifacts/keep.log")).unwrap();
    let (code, message) = restore_all(&session, &attempt, &replay_specs(), 60.0)
        .await
        .unwrap_err();
    assert_eq!(code.code, "artifact_verification_failed");
    assert!(
        message.contains("keep.log") && message.contains("missing"),
        "{message}"
    );
}

#[tokio::test]
async fn a_limit_violation_fails_the_entry_and_removes_its_copy() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = dir.path().join("sandbox");
    for i in 0..5 {
        write(&sandbox.join(format!("app/f{i}")), b"x");
    }
    let session: SessionRef = DirSession::new(&sandbox);
    let root = dir.path().join("artifacts");
    let limits = ArtifactLimits {
        max_files: 3,
        ..ArtifactLimits::default()
    };
    let mut entries = Vec::new();
    let specs = [spec("/app", "app", &[]), spec("/other", "other", &[])];
    let (code, message) = download_all(&session, &specs, &root, &limits, &mut entries)
        .await
        .unwrap_err();
    assert_eq!(code.code, "artifact_limit_exceeded");
    assert!(message.contains("max_files"), "{message}");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].status, EntryStatus::Failed);
    assert!(
        !root.join("app").exists(),
        "the unvalidated copy is removed"
    );
    let manifest = ArtifactManifest::new(entries);
    assert!(!manifest.complete);
}
