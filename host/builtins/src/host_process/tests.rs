//! `host_process` tests: the session contract (the SDK's kit), then what is this provider's
//! own (host paths, the lazily created private directory, crash cleanup of owned directories
//! only, fixed working directories).

use super::*;
use crate::process::PIPE_GRACE;
use crate::BuiltinFactory;
use agentcompass_plugin_api::contract_kit::{run_session_contract, ContractOptions, ProcessProbe};
use agentcompass_plugin_api::contracts::{
    ComponentKind, EnvironmentSpec, ExecRequest, JsonMap, SessionInfo,
};
use agentcompass_plugin_api::ErrorKind;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

fn request(params: JsonMap) -> OpenEnvironmentRequest {
    let mut spec = EnvironmentSpec::new(ID);
    spec.params = params;
    OpenEnvironmentRequest::new("run", "task/1 ü", spec)
}

async fn open_with(params: JsonMap, resolved: &[(&str, &str)]) -> (SessionRef, PathBuf) {
    let mut req = request(params);
    req.resolved_env = resolved
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let session = HostProcessProvider
        .open(&Ctx::detached(), &req)
        .await
        .unwrap();
    let dir = session_root(&session.info());
    (session, dir)
}

/// The session's private root: the parent of its (default) workspace `ROOT/app`.
fn session_root(info: &SessionInfo) -> PathBuf {
    let workspace = PathBuf::from(&info.dirs.workspace);
    assert_eq!(info.default_workdir.as_deref(), workspace.to_str());
    assert_eq!(workspace.file_name().unwrap(), "app");
    workspace.parent().unwrap().to_path_buf()
}

async fn open() -> (SessionRef, PathBuf) {
    open_with(JsonMap::new(), &[]).await
}

/// Gone or a zombie (pid 1 in a container may never reap it).
/// The kit's options for this provider: its processes are this machine's.
fn contract_options() -> ContractOptions {
    ContractOptions::default()
        .processes(ProcessProbe::Host)
        .output_grace(PIPE_GRACE)
}

#[tokio::test(flavor = "multi_thread")]
async fn keeps_the_session_contract() {
    let report = run_session_contract(
        &HostProcessProvider,
        &request(JsonMap::new()),
        &contract_options(),
    )
    .await
    .unwrap();
    assert_eq!(
        report.passed(),
        agentcompass_plugin_api::contract_kit::CHECKS.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn keeps_the_session_contract_in_a_fixed_workdir() {
    let host = tempfile::tempdir().unwrap();
    let mut params = JsonMap::new();
    params.insert(
        "workdir".into(),
        json!(host.path().join("work").to_str().unwrap()),
    );
    // A closed session in a fixed workdir still runs commands there (nothing is released).
    let options = contract_options().skip("close");
    run_session_contract(&HostProcessProvider, &request(params), &options)
        .await
        .unwrap();
    assert!(
        host.path().join("work/crash.txt").is_file(),
        "a fixed workdir is never removed"
    );
}

#[test]
fn registration_and_capabilities() {
    let all = crate::all();
    let entry = all.iter().find(|b| b.info.id == ID).unwrap();
    assert_eq!(entry.info.kind, ComponentKind::Environment);
    assert_eq!(entry.info.description, DESCRIPTION);
    let field = entry.info.config_schema.get("workdir").unwrap();
    assert_eq!(
        (field.kind, &field.default),
        (ConfigType::String, &Value::Null)
    );
    assert!(matches!(entry.factory, BuiltinFactory::Environment(_)));
    let caps = HostProcessProvider.capabilities().unwrap();
    assert_eq!(caps.network_modes, vec![NetworkMode::Public]);
    assert!(caps.task_env && !caps.startup_env && !caps.dynamic_network_policy);
    assert_eq!(caps.operating_systems, vec!["linux".to_string()]);
    assert!(caps.resource_fields.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn first_use_creates_private_owned_dir_and_open_rejects_bad_params() {
    let (session, dir) = open().await;
    let info = session.info();
    assert_eq!(info.provider, ID);
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("agentcompass-task_1__-1-"), "{name}");
    assert_eq!(info.id, name);
    assert!(fs::symlink_metadata(&dir).is_err(), "created at open");
    assert!(session.is_dir("").await.unwrap());
    let info = session.info();
    assert_eq!(session_root(&info), dir);
    for sub in ["app", "tests", "solution", "logs", "tmp"] {
        let mode = fs::metadata(dir.join(sub)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{sub}");
    }
    assert_eq!(info.dirs.tests, dir.join("tests").to_str().unwrap());
    assert_eq!(info.dirs.tmp, dir.join("tmp").to_str().unwrap());
    assert_eq!(info.close_params["owned"], true);
    assert_eq!(info.close_params["workdir"], dir.to_string_lossy().as_ref());
    let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(dir.starts_with(std::env::temp_dir()));
    session.close().await.unwrap();

    let mut bad = JsonMap::new();
    bad.insert("workdir".into(), json!(3));
    let err = HostProcessProvider
        .open(&Ctx::detached(), &request(bad))
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("workdir"), "{}", err.message);
    let mut unknown = JsonMap::new();
    unknown.insert("image".into(), json!("x"));
    assert!(HostProcessProvider
        .open(&Ctx::detached(), &request(unknown))
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_inherit_the_host_environment_under_the_bindings() {
    let (session, _dir) = open_with(JsonMap::new(), &[("AC_SESSION", "session-value")]).await;
    let show = "printf '%s|%s' \"${PATH:+inherited}\" \"$AC_SESSION\"";
    let r = session
        .exec(ExecRequest::shell(show).env("AC_SESSION", "call-value"))
        .await
        .unwrap();
    assert_eq!(r.stdout, "inherited|session-value");
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn transfers_onto_themselves_or_into_their_source_are_handled() {
    let (session, dir) = open().await;
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("tool.sh");
    fs::write(&src, "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();
    session.upload(&src, "bin/tool.sh").await.unwrap();
    let inside = dir.join("app/bin/tool.sh");
    assert_eq!(
        fs::metadata(&inside).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    // Onto itself: a no-op, not a deletion.
    session
        .upload(&inside, inside.to_str().unwrap())
        .await
        .unwrap();
    assert!(inside.is_file());
    // A tree into itself is refused.
    let tree = host.path().join("tree");
    fs::create_dir_all(tree.join("a")).unwrap();
    let err = session
        .upload_dir(&tree, tree.join("a").to_str().unwrap())
        .await;
    assert!(err.is_err());
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn close_removes_only_owned_dirs() {
    let (session, dir) = open().await;
    session.write_text("a/b.txt", "x").await.unwrap();
    fs::set_permissions(dir.join("app/a"), fs::Permissions::from_mode(0o500)).unwrap();
    session.close().await.unwrap();
    assert!(!dir.exists());

    // Crash cleanup from persisted close_params (a crash runs no destructor: forget).
    let (session, dir) = open().await;
    session.write_text("c.txt", "x").await.unwrap();
    let params = session.info().close_params;
    std::mem::forget(session);
    assert!(dir.exists());
    let provider = HostProcessProvider;
    provider.close(&Ctx::detached(), &params).await.unwrap();
    assert!(!dir.exists());
    let refused = provider
        .close(&Ctx::detached(), &json!({"workdir": "/etc", "owned": true}))
        .await;
    assert!(refused.is_err());
    provider
        .close(
            &Ctx::detached(),
            &json!({"workdir": "/etc", "owned": false}),
        )
        .await
        .unwrap();

    // A fixed workdir is created if needed and never removed.
    let host = tempfile::tempdir().unwrap();
    let fixed = host.path().join("work");
    let mut params = JsonMap::new();
    params.insert("workdir".into(), json!(fixed.to_str().unwrap()));
    let mut req = request(params);
    req.task_id = format!("fixed-{}", random_suffix());
    let session = provider.open(&Ctx::detached(), &req).await.unwrap();
    let info = session.info();
    assert_eq!(info.default_workdir.as_deref(), fixed.to_str());
    assert_eq!(info.dirs.workspace, fixed.to_str().unwrap());
    assert_eq!(info.close_params, Value::Null);
    // The other session directories are in a private root all the same.
    let root = PathBuf::from(&info.dirs.tests)
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(root.starts_with(std::env::temp_dir()), "{}", root.display());
    session.write_text("kept.txt", "k").await.unwrap();
    let solution = format!("{}/solve.sh", info.dirs.solution);
    session.write_text(&solution, "echo").await.unwrap();
    assert!(root.join("solution/solve.sh").is_file() && !root.join("app").exists());
    let info = session.info();
    assert_eq!(info.close_params["owned"], true);
    session.close().await.unwrap();
    provider
        .close(&Ctx::detached(), &info.close_params)
        .await
        .unwrap();
    assert!(fixed.join("kept.txt").is_file());
    assert!(!root.exists());
}

/// Opens an owned session for a task id no other test (or test process) uses, so the
/// directories it may create can be counted by name.
async fn open_unique() -> (SessionRef, PathBuf, String) {
    let task = format!("lazy-{}", random_suffix());
    let mut req = request(JsonMap::new());
    req.task_id = task.clone();
    let session = HostProcessProvider
        .open(&Ctx::detached(), &req)
        .await
        .unwrap();
    let dir = session_root(&session.info());
    (session, dir, format!("{OWNED_PREFIX}{task}-"))
}

/// The entries of the system temporary directory whose names start with `prefix`.
fn temp_entries(prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn unused_session_creates_nothing_on_disk() {
    let (session, dir, prefix) = open_unique().await;
    assert!(dir.starts_with(std::env::temp_dir()));
    assert!(fs::symlink_metadata(&dir).is_err());
    let info = session.info();
    assert_eq!(info.close_params, Value::Null);
    assert_eq!(session_root(&info), dir);

    // Absolute paths outside the session's directories do not need them.
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("f.txt");
    let file = file.to_str().unwrap();
    session.write_text(file, "abs").await.unwrap();
    assert_eq!(session.read_text(file).await.unwrap(), "abs");
    assert!(session.is_file(file).await.unwrap());
    assert!(session.is_dir(host.path().to_str().unwrap()).await.unwrap());
    session
        .download(file, &host.path().join("g.txt"))
        .await
        .unwrap();
    assert!(fs::symlink_metadata(&dir).is_err());
    assert_eq!(session.info().close_params, Value::Null);

    session.close().await.unwrap();
    session.close().await.unwrap();
    assert!(fs::symlink_metadata(&dir).is_err());
    assert!(temp_entries(&prefix).is_empty());
    // Nothing is created after close either.
    let err = session.exec(ExecRequest::shell("true")).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Environment);
    assert!(err.message.contains("closed"), "{}", err.message);
    assert!(session.write_text("late.txt", "x").await.is_err());
    assert!(temp_entries(&prefix).is_empty());
    assert_eq!(session.info().close_params, Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn first_exec_creates_the_dir_private_and_sets_close_params() {
    let (session, dir, prefix) = open_unique().await;
    assert_eq!(session.info().close_params, Value::Null);
    let r = session
        .exec(ExecRequest::shell("pwd -P; echo $TMPDIR"))
        .await
        .unwrap();
    assert_eq!(r.returncode, 0);
    let real = fs::canonicalize(&dir).unwrap();
    let expected = format!(
        "{}\n{}",
        real.join("app").display(),
        dir.join("tmp").display()
    );
    assert_eq!(r.stdout.trim(), expected);
    let meta = fs::symlink_metadata(&dir).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
    let info = session.info();
    assert_eq!(
        info.close_params,
        json!({"workdir": dir.to_str().unwrap(), "owned": true})
    );
    assert_eq!(session_root(&info), dir);
    // Later uses reuse it; an absolute cwd under it is fine too.
    session.exec(ExecRequest::shell("touch a")).await.unwrap();
    assert!(dir.join("app/a").is_file());
    let logs = ExecRequest::shell("touch b").cwd(info.dirs.logs.clone());
    session.exec(logs).await.unwrap();
    assert!(dir.join("logs/b").is_file());
    assert_eq!(temp_entries(&prefix), vec![dir.clone()]);
    session.close().await.unwrap();
    assert!(!dir.exists());
    assert!(temp_entries(&prefix).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_first_uses_create_the_dir_once() {
    let (session, dir, prefix) = open_unique().await;
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (session, barrier) = (session.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                match i % 4 {
                    0 => session
                        .write_text(&format!("f{i}.txt"), "x")
                        .await
                        .map(|_| ()),
                    1 => session.exec(ExecRequest::argv(["true"])).await.map(|_| ()),
                    2 => session.is_dir("").await.map(|d| assert!(d)),
                    _ => session.is_file("missing").await.map(|f| assert!(!f)),
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(temp_entries(&prefix), vec![dir.clone()]);
    for i in (0..16).step_by(4) {
        assert!(dir.join(format!("app/f{i}.txt")).is_file());
    }
    assert_eq!(
        session.info().close_params["workdir"],
        dir.to_str().unwrap()
    );
    session.close().await.unwrap();
    assert!(temp_entries(&prefix).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_taken_reserved_name_gets_another_and_is_left_alone() {
    let (session, reserved, prefix) = open_unique().await;
    fs::create_dir(&reserved).unwrap();
    fs::write(reserved.join("theirs.txt"), "t").unwrap();
    // A path under the reserved name (read from the info before the first use) is rebased.
    let solution = format!("{}/solve.sh", session.info().dirs.solution);
    assert!(solution.starts_with(reserved.to_str().unwrap()));
    session.write_text("ours.txt", "o").await.unwrap();
    session.write_text(&solution, "s").await.unwrap();
    let info = session.info();
    let dir = session_root(&info);
    assert_ne!(dir, reserved);
    assert!(dir.join("solution/solve.sh").is_file());
    assert!(!reserved.join("solution").exists());
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(&prefix));
    assert_eq!(info.close_params["workdir"], dir.to_str().unwrap());
    assert!(dir.join("app/ours.txt").is_file() && !dir.join("theirs.txt").exists());
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o7777,
        0o700
    );
    session.close().await.unwrap();
    assert!(!dir.exists());
    assert!(reserved.join("theirs.txt").is_file());
    fs::remove_dir_all(&reserved).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reported_workspace_works_as_an_absolute_cwd_before_first_use() {
    // A benchmark that sets `TaskInput.workspace` to the reported workspace: the harness's
    // first command runs there, before anything created the root.
    let (session, dir, _) = open_unique().await;
    let workspace = session.info().dirs.workspace;
    assert!(fs::symlink_metadata(&dir).is_err());
    let r = session
        .exec(ExecRequest::shell("pwd -P").cwd(workspace.clone()))
        .await
        .unwrap();
    assert_eq!((r.returncode, r.stdout.trim()), (0, workspace.as_str()));
    // Hidden files go to the session's own tests directory, never the host's `/tests`.
    let tests = session.info().dirs.tests;
    session
        .write_text(&format!("{tests}/test.sh"), "exit 0")
        .await
        .unwrap();
    assert!(dir.join("tests/test.sh").is_file());
    session.close().await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_dropped_without_close_removes_its_root() {
    // A host panic unwinding through an attempt drops its session unclosed.
    let host = tempfile::tempdir().unwrap();
    let mut params = JsonMap::new();
    params.insert(
        "workdir".into(),
        json!(host.path().join("w").to_str().unwrap()),
    );
    let mut req = request(params);
    req.task_id = format!("dropped-{}", random_suffix());
    let session = HostProcessProvider
        .open(&Ctx::detached(), &req)
        .await
        .unwrap();
    session.exec(ExecRequest::shell("true")).await.unwrap();
    let root = PathBuf::from(&session.info().dirs.tmp)
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(root.is_dir());
    drop(session);
    assert!(!root.exists(), "{}", root.display());
    assert!(host.path().join("w").is_dir(), "the fixed workdir stays");
}
