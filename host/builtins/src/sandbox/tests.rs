//! `sandbox` tests: the session contract (the SDK's kit), in two shapes, then what is this
//! provider's own (bwrap, the read-only root and its mirror, mounts, namespaces, networks,
//! symlink resolution, the per-shape caches).

use super::mirror::unescape_mountinfo;
use super::mounts::Mount;
use super::session::setup_failure;
use super::template::hidden_paths;
use super::*;
use crate::process::PIPE_GRACE;
use crate::BuiltinFactory;
use agentcompass_plugin_api::contract_kit::{
    run_session_contract, ContractOptions, ProcessProbe, CHECKS,
};
use agentcompass_plugin_api::contracts::ComponentKind;
use agentcompass_plugin_api::contracts::{
    ConfigType, EnvironmentSpec, ExecRequest, ExecResult, JsonMap, NetworkPolicy,
};
use agentcompass_plugin_api::sdk::EnvironmentSession;
use agentcompass_plugin_api::ErrorKind;
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::time::{Instant, SystemTime};

struct Opened {
    session: SessionRef,
    /// The private host directory.
    dir: PathBuf,
}

fn request(params: JsonMap, policy: NetworkPolicy) -> OpenEnvironmentRequest {
    let mut spec = EnvironmentSpec::new(ID);
    spec.params = params;
    let mut req = OpenEnvironmentRequest::new("run", "task/1 ü", spec);
    req.baseline_network_policy = policy;
    req
}

/// This test binary serves sandbox entries like the host binary: the hook runs before the
/// test harness's `main`.
#[used]
#[link_section = ".init_array"]
static SERVE_SANDBOX_ENTRIES: extern "C" fn() = {
    extern "C" fn serve() {
        super::enter::enter_if_requested_before_main();
    }
    serve
};

async fn open_request(req: &OpenEnvironmentRequest) -> Opened {
    let session = SandboxProvider::default()
        .open(&Ctx::detached(), req)
        .await
        .unwrap_or_else(|e| panic!("cannot open a sandbox: {e}"));
    let dir = PathBuf::from(session.info().close_params["dir"].as_str().unwrap());
    Opened { session, dir }
}

async fn open_policy(policy: NetworkPolicy) -> Opened {
    open_request(&request(JsonMap::new(), policy)).await
}

async fn open() -> Opened {
    open_policy(NetworkPolicy::public()).await
}

async fn sh(session: &SessionRef, line: &str) -> ExecResult {
    session.exec(ExecRequest::shell(line)).await.unwrap()
}

/// A number no other test (or test process) uses, for a recognisable `sleep` argument.
fn marker() -> String {
    let n = u64::from_str_radix(&random_suffix()[..8], 16).unwrap() % 1_000_000;
    format!("1000.{n:06}")
}

/// Host processes whose command line is `sleep <marker>` and that are not zombies.
fn sleepers(marker: &str) -> Vec<String> {
    let wanted = format!("sleep\0{marker}\0");
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline) != wanted {
            continue;
        }
        let zombie = fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if !zombie {
            found.push(pid);
        }
    }
    found
}

async fn wait_for_sleepers(marker: &str, running: bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if sleepers(marker).is_empty() != running {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The provider parameters that give every command a bwrap of its own.
fn bwrap_per_command() -> JsonMap {
    [("prepared_namespace".to_string(), json!(false))]
        .into_iter()
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn keeps_the_session_contract_with_a_bwrap_per_command() {
    let options = ContractOptions::default()
        .processes(ProcessProbe::Host)
        .output_grace(PIPE_GRACE);
    let provider = SandboxProvider::default();
    for policy in [NetworkPolicy::public(), NetworkPolicy::no_network()] {
        let req = request(bwrap_per_command(), policy);
        let report = run_session_contract(&provider, &req, &options)
            .await
            .unwrap();
        assert_eq!(report.passed(), CHECKS.len());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_enter_the_prepared_namespace_unless_told_otherwise() {
    // This test binary serves sandbox entries (see the `.init_array` hook above), as the
    // host binary's `main` does; the process runs as root in CI.
    if !super::template::started_by_root() {
        return;
    }
    let Opened { session, .. } = open().await;
    let r = sh(&session, "cat /proc/1/comm").await;
    assert_eq!(r.stdout, "sandbox-init\n", "{r:?}");
    session.close().await.unwrap();
    let req = request(bwrap_per_command(), NetworkPolicy::public());
    let Opened { session, .. } = open_request(&req).await;
    let r = sh(&session, "cat /proc/1/comm").await;
    assert_eq!(r.stdout, "bwrap\n", "{r:?}");
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn keeps_the_session_contract() {
    let options = ContractOptions::default()
        .processes(ProcessProbe::Host)
        .output_grace(PIPE_GRACE);
    let provider = SandboxProvider::default();
    let report = run_session_contract(
        &provider,
        &request(JsonMap::new(), NetworkPolicy::public()),
        &options,
    )
    .await
    .unwrap();
    assert_eq!(report.passed(), CHECKS.len());
    // Without network, in a working directory inside the read-only root.
    let mut req = request(JsonMap::new(), NetworkPolicy::no_network());
    req.environment.setup.workdir = Some("/usr/src/task".into());
    run_session_contract(&provider, &req, &options)
        .await
        .unwrap();
}

#[test]
fn registration_capabilities_and_schema() {
    let all = crate::all();
    let ids: Vec<&str> = all.iter().map(|b| b.info.id.as_str()).collect();
    let here = ids.iter().position(|id| *id == ID).unwrap();
    assert_eq!(ids[here - 1], super::super::host_process::ID);
    let entry = &all[here];
    assert_eq!(entry.info.kind, ComponentKind::Environment);
    assert_eq!(entry.info.description, DESCRIPTION);
    assert!(matches!(entry.factory, BuiltinFactory::Environment(_)));
    let bwrap = entry.info.config_schema.get("bwrap").unwrap();
    assert_eq!(
        (bwrap.kind, &bwrap.default),
        (ConfigType::String, &json!("bwrap"))
    );
    let root = entry.info.config_schema.get("root").unwrap();
    assert_eq!(
        (root.kind, &root.default),
        (ConfigType::String, &Value::Null)
    );
    let caps = SandboxProvider::default().capabilities().unwrap();
    assert_eq!(
        caps.network_modes,
        vec![
            NetworkMode::Public,
            NetworkMode::NoNetwork,
            NetworkMode::Allowlist,
            NetworkMode::Denylist
        ]
    );
    assert_eq!(
        caps.allowlist_entry_types,
        [
            "hostname",
            "wildcard",
            "ipv4",
            "ipv6",
            "ipv4_cidr",
            "ipv6_cidr",
            "port"
        ]
    );
    assert!(caps.task_env && !caps.startup_env && caps.dynamic_network_policy);
    assert_eq!(caps.operating_systems, vec!["linux".to_string()]);
    // `cpu` and `memory_mb` where this machine lets the sandbox make cgroups (as root here).
    let limits = super::cgroup::hierarchy().is_some();
    let fields: &[&str] = if limits { &["cpu", "memory_mb"] } else { &[] };
    assert_eq!(caps.resource_fields, fields);
}

#[test]
fn validate_plan_refuses_what_it_cannot_enforce() {
    let provider = SandboxProvider::default();
    let plan = |policy: NetworkPolicy| ExecutionPlan {
        environment: EnvironmentSpec::new(ID),
        baseline_network_policy: Some(policy.clone()),
        run_network_policy: Some(policy),
        ..ExecutionPlan::default()
    };
    provider
        .validate_plan(&plan(NetworkPolicy::public()))
        .unwrap();
    provider
        .validate_plan(&plan(NetworkPolicy::no_network()))
        .unwrap();

    // `allowlist` through the session's egress proxy, every entry type.
    provider
        .validate_plan(&plan(NetworkPolicy::allowlist([
            "example.com",
            "*.example.org",
            "10.0.0.1",
            "fd00::1",
            "10.0.0.0/8",
            "fd00::/8",
        ])))
        .unwrap();
    // Per-phase policies: every switch between the modes it supports.
    let mut switching = plan(NetworkPolicy::public());
    switching.run_network_policy = Some(NetworkPolicy::no_network());
    switching.evaluation_network_policy = Some(NetworkPolicy::allowlist(["example.com"]));
    provider.validate_plan(&switching).unwrap();
    let mut switching = plan(NetworkPolicy::no_network());
    switching.run_network_policy = Some(NetworkPolicy::allowlist(["example.com"]));
    switching.evaluation_network_policy = Some(NetworkPolicy::public());
    provider.validate_plan(&switching).unwrap();

    let mut resources = plan(NetworkPolicy::public());
    resources.environment.resources = Some(Default::default());
    resources.environment.resources.as_mut().unwrap().cpu = Some(1.0);
    let limits = super::cgroup::hierarchy().is_some();
    assert_eq!(provider.validate_plan(&resources).is_ok(), limits);
    resources.environment.resources.as_mut().unwrap().storage_mb = Some(1024);
    assert!(provider.validate_plan(&resources).is_err());
    let mut windows = plan(NetworkPolicy::public());
    windows.environment.setup.os = Some("windows".into());
    assert!(provider.validate_plan(&windows).is_err());

    for bad in ["app", "/", "/proc/x", "/a/../b"] {
        let mut p = plan(NetworkPolicy::public());
        p.environment.setup.workdir = Some(bad.into());
        let err = provider.validate_plan(&p).unwrap_err();
        assert!(
            err.message.contains("setup.workdir"),
            "{bad}: {}",
            err.message
        );
    }
    let mut p = plan(NetworkPolicy::public());
    p.environment.params.insert("image".into(), json!("x"));
    assert!(provider.validate_plan(&p).is_err());
    // The egress proxy's static names: name = address.
    let mut p = plan(NetworkPolicy::allowlist(["m.internal"]));
    p.environment
        .params
        .insert("egress_hosts".into(), json!({"m.internal": "127.0.0.2"}));
    provider.validate_plan(&p).unwrap();
    for bad in [
        json!({"m.internal": "not-an-address"}),
        json!({"m.internal": 2}),
        json!({"bad name": "127.0.0.2"}),
        json!(["m.internal"]),
    ] {
        p.environment
            .params
            .insert("egress_hosts".into(), bad.clone());
        let err = provider.validate_plan(&p).unwrap_err();
        assert!(
            err.message.contains("egress_hosts"),
            "{bad}: {}",
            err.message
        );
    }
}

#[test]
fn a_task_image_definition_is_built_or_refused_when_nothing_can_build_it() {
    let provider = SandboxProvider::default();
    let mut p = ExecutionPlan {
        environment: EnvironmentSpec::new(ID),
        ..ExecutionPlan::default()
    };
    p.environment.setup.build_context = Some("/tasks/t/environment".into());
    // With a builder on this machine (the `podman` the tests' tiers have), it is built.
    let mut building = p.clone();
    building
        .environment
        .params
        .insert("image_builder".into(), json!("/bin/true"));
    provider.validate_plan(&building).unwrap();
    // Without one, refused before anything opens.
    p.environment
        .params
        .insert("image_builder".into(), json!("no-such-builder"));
    let err = provider.validate_plan(&p).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert_eq!(
        err.message,
        "environment `sandbox`: the task's image is built from `/tasks/t/environment/Dockerfile`, \
         and `no-such-builder` (the sandbox's `image_builder`) is not on this machine; install \
         Podman, or run it with --env docker or --env podman, or on the host's root filesystem \
         with --env-params '{\"host_root\": true}'"
    );
    // The user's choice: the host root, or a root filesystem of their own.
    let mut host_root = p.clone();
    host_root
        .environment
        .params
        .insert("host_root".into(), json!(true));
    provider.validate_plan(&host_root).unwrap();
    let mut own_root = p.clone();
    own_root
        .environment
        .params
        .insert("root".into(), json!("/"));
    provider.validate_plan(&own_root).unwrap();
    // An image the task names (a Harbor task's `docker_image`) is pulled the same way, never
    // replaced by the host root.
    let mut named = p;
    named.environment.setup.build_context = None;
    named.environment.setup.image = Some("ghcr.io/org/task:1".into());
    let err = provider.validate_plan(&named).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.starts_with(
            "environment `sandbox`: the task's image is `ghcr.io/org/task:1`, and \
             `no-such-builder` (the sandbox's `image_builder`) is not on this machine;"
        ),
        "{}",
        err.message
    );
}

#[test]
fn runtime_egress_hosts_replace_the_parameter_for_a_name() {
    let mut params = JsonMap::new();
    params.insert(
        "egress_hosts".into(),
        json!({"Models.Internal.": "127.0.0.3", "param.internal": "127.0.0.4"}),
    );
    let config = Config::parse(&params).unwrap();
    let runtime = BTreeMap::from([
        ("models.internal".to_string(), "127.0.0.2".to_string()),
        ("runtime.internal".to_string(), "::1".to_string()),
    ]);
    let map = config.host_map(&runtime).unwrap();
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert_eq!(map.get("models.internal"), Some(&[ip("127.0.0.2")][..]));
    assert_eq!(map.get("param.internal"), Some(&[ip("127.0.0.4")][..]));
    assert_eq!(map.get("runtime.internal"), Some(&[ip("::1")][..]));
    let map = config.host_map(&BTreeMap::new()).unwrap();
    assert_eq!(map.get("models.internal"), Some(&[ip("127.0.0.3")][..]));
    let bad = BTreeMap::from([("x.internal".to_string(), "nope".to_string())]);
    let err = config.host_map(&bad).unwrap_err();
    assert!(
        err.message.contains("runtime.egress.hosts"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_bwrap_names_the_package_and_leaves_nothing() {
    let mut params = JsonMap::new();
    params.insert("bwrap".into(), json!("/nonexistent/bwrap"));
    let mut req = request(params, NetworkPolicy::public());
    let task = format!("nobwrap-{}", random_suffix());
    req.task_id = task.clone();
    let err = SandboxProvider::default()
        .open(&Ctx::detached(), &req)
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Environment);
    assert!(err.message.contains(INSTALL_HINT), "{}", err.message);
    assert!(
        err.message.contains("/nonexistent/bwrap"),
        "{}",
        err.message
    );
    let prefix = format!("{OWNED_PREFIX}{task}-");
    let left = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
    assert!(!left);

    // An invalid allowlist is refused at open too (before anything is made), and bad
    // parameters.
    let mut req = request(
        JsonMap::new(),
        NetworkPolicy::allowlist(["https://x.org/a"]),
    );
    req.task_id = task.clone();
    let err = SandboxProvider::default()
        .open(&Ctx::detached(), &req)
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{}", err.message);
    let left = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
    assert!(!left);
    let mut params = JsonMap::new();
    params.insert("root".into(), json!("/nonexistent/rootfs"));
    let err = SandboxProvider::default()
        .open(&Ctx::detached(), &request(params, NetworkPolicy::public()))
        .await
        .err()
        .unwrap();
    assert!(
        err.message.contains("/nonexistent/rootfs"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn open_makes_a_private_dir_and_reports_the_sandbox_workdir() {
    let Opened { session, dir } = open().await;
    let info = session.info();
    assert_eq!(info.provider, ID);
    assert_eq!(info.default_workdir.as_deref(), Some("/app"));
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("agentcompass-sandbox-task_1__-1-"),
        "{name}"
    );
    assert_eq!(info.id, name);
    assert_eq!(info.close_params, json!({"dir": dir.to_str().unwrap()}));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dir), 0o700);
    for sub in ["workdir", "logs", "tests", "solution"] {
        assert_eq!(mode(&dir.join(sub)), 0o755, "{sub}");
    }
    assert_eq!(mode(&dir.join("tmp")), 0o1777);
    session.close().await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn bwrap_failures_are_errors_and_lookalikes_are_not() {
    let Opened { session, .. } = open().await;
    // A `bwrap:` line naming no set-up step is the command's own result.
    let r = sh(&session, "echo 'bwrap: not really' >&2; exit 1").await;
    assert_eq!(
        (r.returncode, r.stderr.as_str()),
        (1, "bwrap: not really\n")
    );
    let err = session
        .exec(ExecRequest::argv(["/nonexistent/program"]))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("(sandbox)") && err.message.contains("No such file"),
        "{}",
        err.message
    );
    session.close().await.unwrap();

    let cwd = Path::new("/x");
    let failed = |stderr: &str| ExecResult::new(1, "", stderr);
    let err = setup_failure(
        &failed("bwrap: Can't chdir to /x: No such file\n"),
        "ls",
        cwd,
    );
    assert!(err.unwrap().message.contains("Can't chdir"));
    assert!(setup_failure(&failed("bwrap: Can't a\nmore\n"), "ls", cwd).is_none());
    assert!(setup_failure(&ExecResult::new(2, "", "bwrap: Can't a\n"), "ls", cwd).is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workdir_is_app_and_cwds_reach_the_mounts_and_the_root() {
    let Opened { session, dir } = open().await;
    assert_eq!(sh(&session, "pwd -P").await.stdout, "/app\n");
    session.write_text("sub/x.txt", "x").await.unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("workdir/sub/x.txt")).unwrap(),
        "x"
    );
    for cwd in ["/logs", "/usr/bin"] {
        let r = session
            .exec(ExecRequest::shell("pwd -P").cwd(cwd))
            .await
            .unwrap();
        assert_eq!(r.stdout, format!("{cwd}\n"));
    }
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_workdir_is_mounted_even_inside_the_read_only_root() {
    let mut req = request(JsonMap::new(), NetworkPolicy::public());
    req.environment.setup.workdir = Some("/usr/src/task".into());
    let Opened { session, dir } = open_request(&req).await;
    assert_eq!(
        session.info().default_workdir.as_deref(),
        Some("/usr/src/task")
    );
    let r = sh(
        &session,
        "pwd; touch made && ls /usr/src; test -x /usr/bin/env",
    )
    .await;
    assert_eq!(r.returncode, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("/usr/src/task\n"), "{}", r.stdout);
    assert!(r.stdout.contains("\ntask\n"), "{}", r.stdout);
    assert!(dir.join("workdir/made").is_file());
    assert!(session.is_file("/usr/src/task/made").await.unwrap());
    let r = sh(&session, "touch /usr/src/other").await;
    assert_ne!(r.returncode, 0);
    assert!(r.stderr.contains("Read-only"), "{}", r.stderr);
    session.close().await.unwrap();

    // A working directory inside another private mount.
    req.environment.setup.workdir = Some("/tmp/work/".into());
    let Opened { session, dir } = open_request(&req).await;
    assert_eq!(session.info().default_workdir.as_deref(), Some("/tmp/work"));
    let r = sh(&session, "pwd; touch in-work /tmp/in-tmp && ls /tmp").await;
    assert_eq!(r.stdout, "/tmp/work\nin-tmp\nwork\n", "{r:?}");
    assert!(dir.join("workdir/in-work").is_file() && dir.join("tmp/in-tmp").is_file());
    assert!(session.is_file("/tmp/work/in-work").await.unwrap());
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn env_is_clean_under_the_bindings() {
    let Opened { session, .. } = open().await;
    let show = "printf '%s|%s|%s' \"$PATH\" \"$HOME\" \"${CARGO_MANIFEST_DIR:-unset}\"";
    let r = sh(&session, show).await;
    assert_eq!(r.stdout, format!("{DEFAULT_PATH}|/tmp|unset"));
    let r = session
        .exec(ExecRequest::shell("echo $PATH").env("PATH", "/bin"))
        .await
        .unwrap();
    assert_eq!(r.stdout, "/bin\n");
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_child_ends_with_its_command() {
    // Without a timeout, a background child ends with the command (PID namespace).
    let Opened { session, .. } = open().await;
    let marker = self::marker();
    let started = Instant::now();
    let r = sh(&session, &format!("sleep {marker} & echo done")).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!((r.returncode, r.stdout.as_str()), (0, "done\n"));
    assert!(wait_for_sleepers(&marker, false).await);
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn own_pid_namespace() {
    let Opened { session, .. } = open().await;
    let r = sh(
        &session,
        "echo $$; cat /proc/1/comm; ls /proc | grep -c '^[0-9][0-9]*$'",
    )
    .await;
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{r:?}");
    let pid: u32 = lines[0].parse().unwrap();
    assert!(pid <= 3, "shell pid {pid}");
    // bwrap's reaper, or the prepared namespace's (see `enter`).
    assert!(["bwrap", "sandbox-init"].contains(&lines[1]), "{r:?}");
    let count: u32 = lines[2].parse().unwrap();
    assert!(count <= 5, "{count} processes visible: {r:?}");
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn network_public_reaches_the_host_and_no_network_does_not() {
    assert!(
        Path::new("/bin/bash").exists(),
        "these tests need bash (its /dev/tcp)"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let connect = ExecRequest::argv(["bash", "-c", connect.as_str()]).timeout(10.0);

    let Opened { session, .. } = open_policy(NetworkPolicy::public()).await;
    let r = session.exec(connect.clone()).await.unwrap();
    assert_eq!(
        (r.returncode, r.stdout.as_str()),
        (0, "connected\n"),
        "{r:?}"
    );
    // Switched: the next command has an empty namespace, and back.
    session
        .set_network_policy(&NetworkPolicy::no_network())
        .await
        .unwrap();
    let r = session.exec(connect.clone()).await.unwrap();
    assert_ne!(r.returncode, 0, "{r:?}");
    session
        .set_network_policy(&NetworkPolicy::public())
        .await
        .unwrap();
    let r = session.exec(connect.clone()).await.unwrap();
    assert_eq!(r.returncode, 0, "{r:?}");
    // Fail closed: a policy that does not normalize is refused and changes nothing.
    let mut bad = NetworkPolicy::no_network();
    bad.allowed_hosts = vec!["example.com".into()];
    let err = session.set_network_policy(&bad).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{}", err.message);
    let r = session.exec(connect.clone()).await.unwrap();
    assert_eq!(r.returncode, 0, "{r:?}");
    session.close().await.unwrap();
    assert!(session
        .set_network_policy(&NetworkPolicy::no_network())
        .await
        .is_err());

    let Opened { session, .. } = open_policy(NetworkPolicy::no_network()).await;
    let r = session.exec(connect.clone()).await.unwrap();
    assert_ne!(r.returncode, 0, "{r:?}");
    assert!(!r.timed_out && r.stdout.is_empty(), "{r:?}");
    session
        .set_network_policy(&NetworkPolicy::public())
        .await
        .unwrap();
    let r = session.exec(connect).await.unwrap();
    assert_eq!(r.returncode, 0, "{r:?}");
    session
        .set_network_policy(&NetworkPolicy::no_network())
        .await
        .unwrap();
    let r = sh(
        &session,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
    )
    .await;
    assert_eq!(r.stdout, "lo\n", "{r:?}");
    session.close().await.unwrap();
    drop(listener);
}

#[tokio::test(flavor = "multi_thread")]
async fn transfers_reach_the_private_mounts_and_the_read_only_root() {
    let Opened { session, dir } = open().await;
    let host = tempfile::tempdir().unwrap();
    let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    let src = host.path().join("run.sh");
    fs::write(&src, "#!/bin/sh\necho ran\n").unwrap();
    fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();
    session.upload(&src, "bin/run.sh").await.unwrap();
    assert_eq!(mode(&dir.join("workdir/bin/run.sh")), 0o750);
    // Into an existing directory of another mount, as a file and as a tree.
    session.upload(&src, "/tests").await.unwrap();
    assert_eq!(mode(&dir.join("tests/run.sh")), 0o750);
    let tree = host.path().join("tree");
    fs::create_dir_all(tree.join("a")).unwrap();
    fs::write(tree.join("a/top.txt"), "top").unwrap();
    session.upload_dir(&tree, "/solution").await.unwrap();
    assert_eq!(sh(&session, "cat /solution/a/top.txt").await.stdout, "top");
    let out = host.path().join("out-tree");
    session.download_dir("/tests", &out).await.unwrap();
    assert_eq!(mode(&out.join("run.sh")), 0o750);
    // Out of the read-only root too.
    session
        .download("/etc/passwd", &host.path().join("passwd"))
        .await
        .unwrap();
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn text_probes_and_the_read_only_root() {
    let Opened { session, dir } = open().await;
    session.write_text("x/y/z.txt", "héllo\n").await.unwrap();
    assert!(session.is_dir("/usr/bin").await.unwrap());
    assert!(session.is_file("/etc/passwd").await.unwrap());
    assert!(session
        .read_text("/etc/passwd")
        .await
        .unwrap()
        .contains("root"));

    // Harbor-style absolute paths, from both sides.
    session.write_text("/logs/verifier/x", "1").await.unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("logs/verifier/x")).unwrap(),
        "1"
    );
    let r = sh(
        &session,
        "echo 0.5 > /logs/verifier/reward.txt && cat /logs/verifier/x",
    )
    .await;
    assert_eq!((r.returncode, r.stdout.as_str()), (0, "1"), "{r:?}");
    assert_eq!(
        session
            .read_text("/logs/verifier/reward.txt")
            .await
            .unwrap(),
        "0.5\n"
    );
    for path in ["/solution/s.sh", "/tmp/t", "/tests/t"] {
        session.write_text(path, "w").await.unwrap();
    }

    // The root is read-only, for commands and file operations alike.
    let r = sh(&session, "touch /etc/agentcompass-probe").await;
    assert_ne!(r.returncode, 0);
    assert!(r.stderr.contains("Read-only file system"), "{r:?}");
    let err = session
        .write_text("/etc/agentcompass-probe", "x")
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Environment);
    assert!(
        err.message.contains("/etc/agentcompass-probe") && err.message.contains("read-only"),
        "{}",
        err.message
    );
    let src = dir.join("workdir/x/y/z.txt");
    let err = session.upload(&src, "/usr/z.txt").await.unwrap_err();
    assert!(err.message.contains("read-only"), "{}", err.message);
    let err = session
        .upload_dir(&dir.join("workdir/x"), "/")
        .await
        .unwrap_err();
    assert!(err.message.contains("read-only"), "{}", err.message);
    assert!(!Path::new("/etc/agentcompass-probe").exists());
    assert!(!Path::new("/usr/z.txt").exists());

    // Kernel file systems exist only for commands.
    let err = session.read_text("/proc/self/status").await.unwrap_err();
    assert!(err.message.contains("exec"), "{}", err.message);
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_resolve_inside_the_sandbox() {
    let Opened { session, dir } = open().await;
    let r = sh(
        &session,
        "ln -s /etc etc-link && ln -s /logs logs-link && ln -s ../app/loop loop && \
         ln -s loop /app/loop2 && ln -s /etc/passwd pw",
    )
    .await;
    assert_eq!(r.returncode, 0, "{r:?}");
    // A link to the read-only root cannot be used to write on the host.
    let err = session.write_text("etc-link/evil", "x").await.unwrap_err();
    assert!(
        err.message.contains("read-only") && err.message.contains("resolves to `/etc/evil`"),
        "{}",
        err.message
    );
    let err = session
        .upload(&dir.join("tmp"), "etc-link")
        .await
        .unwrap_err();
    assert!(err.message.contains("read-only"), "{}", err.message);
    // A link between writable mounts works as inside.
    session.write_text("logs-link/via.txt", "v").await.unwrap();
    assert_eq!(fs::read_to_string(dir.join("logs/via.txt")).unwrap(), "v");
    assert!(session.read_text("pw").await.unwrap().contains("root"));
    let err = session.read_text("loop2").await.unwrap_err();
    assert!(err.message.contains("symbolic links"), "{}", err.message);
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn close_and_crash_cleanup_remove_only_its_dirs() {
    let Opened { session, dir } = open().await;
    sh(
        &session,
        "mkdir -p ro/deep && touch ro/deep/f && chmod 500 ro ro/deep",
    )
    .await;
    session.close().await.unwrap();
    assert!(!dir.exists());
    let err = session.exec(ExecRequest::shell("true")).await.unwrap_err();
    assert!(err.message.contains("closed"), "{}", err.message);
    assert!(session.write_text("late.txt", "x").await.is_err());

    let Opened { session, dir } = open().await;
    session.write_text("/logs/a.txt", "x").await.unwrap();
    let params = session.info().close_params;
    drop(session);
    assert!(dir.exists());
    let provider = SandboxProvider::default();
    provider.close(&Ctx::detached(), &params).await.unwrap();
    assert!(!dir.exists());
    for refused in [
        json!({"dir": "/etc"}),
        json!({"dir": "agentcompass-sandbox-x"}),
    ] {
        let err = provider
            .close(&Ctx::detached(), &refused)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
    }
}

/// A root filesystem holding only `/bin/sh` (the host's dash and its libraries), a marker
/// file and a `/var/tmp` with a file in it.
fn tiny_rootfs(at: &Path) {
    let dash = Path::new("/usr/bin/dash");
    assert!(dash.is_file(), "this test needs /usr/bin/dash");
    fs::create_dir_all(at.join("bin")).unwrap();
    fs::copy(dash, at.join("bin/sh")).unwrap();
    let ldd = std::process::Command::new("ldd")
        .arg(dash)
        .output()
        .unwrap();
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let lib = line
            .split_whitespace()
            .find(|w| w.starts_with('/'))
            .map(PathBuf::from);
        if let Some(lib) = lib {
            let to = at.join(lib.strip_prefix("/").unwrap());
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(&lib, &to).unwrap();
        }
    }
    fs::create_dir_all(at.join("etc")).unwrap();
    fs::write(at.join("etc/marker"), "tiny\n").unwrap();
    fs::create_dir_all(at.join("var/tmp")).unwrap();
    fs::write(at.join("var/tmp/other-session"), "secret").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_root_filesystem_from_setup_image() {
    let host = tempfile::tempdir().unwrap();
    let rootfs = host.path().join("rootfs");
    tiny_rootfs(&rootfs);
    let mut req = request(JsonMap::new(), NetworkPolicy::no_network());
    req.environment.setup.image = Some(rootfs.to_string_lossy().into_owned());
    let Opened { session, .. } = open_request(&req).await;
    let r = sh(
        &session,
        "read m < /etc/marker; echo $m; pwd; \
         test -e /usr/bin/env && echo host-visible; echo ok > /logs/o",
    )
    .await;
    assert_eq!(
        (r.returncode, r.stdout.as_str()),
        (0, "tiny\n/app\n"),
        "{r:?}"
    );
    assert_eq!(session.read_text("/etc/marker").await.unwrap(), "tiny\n");
    assert!(!session.is_dir("/usr/bin").await.unwrap());
    assert_eq!(session.read_text("/logs/o").await.unwrap(), "ok\n");
    let err = session.exec(ExecRequest::argv(["true"])).await.unwrap_err();
    assert!(
        err.message.contains("cannot start `true`"),
        "{}",
        err.message
    );
    session.close().await.unwrap();

    // The `root` parameter wins over setup.image.
    let mut params = JsonMap::new();
    params.insert("root".into(), json!(rootfs.to_str().unwrap()));
    let mut req = request(params, NetworkPolicy::public());
    req.environment.setup.image = Some("debian:bookworm".into());
    let Opened { session, .. } = open_request(&req).await;
    assert_eq!(session.read_text("/etc/marker").await.unwrap(), "tiny\n");
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_visible_temporary_directory_is_hidden() {
    let host = tempfile::tempdir().unwrap();
    let rootfs = fs::canonicalize(host.path()).unwrap().join("rootfs");
    tiny_rootfs(&rootfs);
    let dir = host.path().join("session");
    fs::create_dir(&dir).unwrap();
    let bwrap = find_program("bwrap").expect(INSTALL_HINT);
    let layout = Layout::create(
        &dir,
        bwrap,
        rootfs.clone(),
        PathBuf::from("/app"),
        true,
        &rootfs.join("var/tmp"),
    )
    .unwrap();
    assert_eq!(layout.hidden, vec![PathBuf::from("/var/tmp")]);
    let session = SandboxSession::new(
        "test".into(),
        dir.clone(),
        Arc::new(layout),
        BTreeMap::new(),
        (NetworkPolicy::no_network(), None),
    );
    let r = session
        .exec(ExecRequest::shell(
            "for f in /var/tmp/*; do echo $f; done; read m < /etc/marker; echo $m",
        ))
        .await
        .unwrap();
    assert_eq!(r.stdout, "/var/tmp/*\ntiny\n", "{r:?}");
    let err = session
        .read_text("/var/tmp/other-session")
        .await
        .unwrap_err();
    assert!(err.message.contains("hidden"), "{}", err.message);
    session.close().await.unwrap();
    assert!(!dir.exists());

    // The usual case: the temporary directory is /tmp, private anyway.
    let mounts = [Mount {
        sandbox: "/tmp".into(),
        host: "/x".into(),
    }];
    assert!(hidden_paths(Path::new("/"), Path::new("/tmp"), &mounts).is_empty());
    assert!(hidden_paths(Path::new("/srv/root"), Path::new("/tmp"), &mounts).is_empty());
    assert_eq!(
        hidden_paths(Path::new("/"), Path::new("/var/tmp"), &mounts),
        vec![PathBuf::from("/var/tmp")]
    );
}

#[test]
fn mountinfo_paths_are_unescaped() {
    assert_eq!(
        unescape_mountinfo(b"/a\\040b\\134c"),
        PathBuf::from("/a b\\c")
    );
    assert_eq!(
        unescape_mountinfo(b"/plain\\04"),
        PathBuf::from("/plain\\04")
    );
    assert_eq!(unescape_mountinfo(b"/x\\999"), PathBuf::from("/x\\999"));
}

/// Sets the modification time of `path` to an hour ago.
fn age(path: &Path) {
    let then = SystemTime::now() - Duration::from_secs(3600);
    let times = fs::FileTimes::new().set_modified(then).set_accessed(then);
    fs::File::open(path).unwrap().set_times(times).unwrap();
}

#[test]
fn the_arguments_of_a_shape_are_reused_until_its_root_changes() {
    let host = tempfile::tempdir().unwrap();
    let rootfs = fs::canonicalize(host.path()).unwrap().join("rootfs");
    fs::create_dir_all(rootfs.join("etc")).unwrap();
    fs::create_dir_all(rootfs.join("usr/src")).unwrap();
    std::os::unix::fs::symlink("usr/bin", rootfs.join("bin")).unwrap();
    let cache = TemplateCache::default();
    let bwrap = find_program("bwrap").expect(INSTALL_HINT);
    let shape = |workdir: &str| Shape {
        root: rootfs.clone(),
        workdir: PathBuf::from(workdir),
        no_network: false,
        temp_base: PathBuf::from("/nonexistent-temp"),
        mount_points: Vec::new(),
    };
    let layout = |n: usize, workdir: &str| {
        let dir = host.path().join(format!("session-{n}"));
        fs::create_dir(&dir).unwrap();
        Layout::create_cached(&dir, bwrap.clone(), shape(workdir), &cache, Vec::new()).unwrap()
    };
    let args = |l: &Layout| -> Vec<String> {
        let cmd = l.command(Path::new("/"), &[], &[]);
        cmd.as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    // Just made: listed, but not cached (a change in the same tick could go unnoticed).
    let first = layout(0, "/app");
    let second = layout(1, "/app");
    assert!(!Arc::ptr_eq(&first.template, &second.template));
    age(&rootfs);
    let third = layout(2, "/app");
    let fourth = layout(3, "/app");
    assert!(Arc::ptr_eq(&third.template, &fourth.template));
    assert_ne!(args(&third), args(&fourth), "the session binds differ");
    let shown = args(&fourth).join(" ");
    assert!(shown.contains("--bind"), "{shown}");
    assert!(shown.contains("session-3/workdir /app"), "{shown}");
    assert!(shown.contains("--symlink usr/bin /bin"), "{shown}");
    assert!(shown.ends_with("--remount-ro / --chdir /"), "{shown}");
    // Another working directory is another shape; its mirror splits /usr.
    let nested = layout(4, "/usr/src/task");
    assert!(!Arc::ptr_eq(&nested.template, &fourth.template));
    let shown = args(&nested).join(" ");
    assert!(shown.contains("--dir /usr/src/task"), "{shown}");
    assert!(
        !shown.contains(&format!("{} /usr ", rootfs.join("usr").display())),
        "{shown}"
    );
    // A new entry in the root: listed again.
    fs::create_dir(rootfs.join("srv")).unwrap();
    let fifth = layout(5, "/app");
    assert!(!Arc::ptr_eq(&fifth.template, &fourth.template));
    let shown = args(&fifth).join(" ");
    assert!(
        shown.contains(&format!("{} /srv", rootfs.join("srv").display())),
        "{shown}"
    );
    // A change under a split parent is noticed too.
    age(&rootfs);
    age(&rootfs.join("usr"));
    age(&rootfs.join("usr/src"));
    let before = layout(6, "/usr/src/task");
    assert!(Arc::ptr_eq(
        &before.template,
        &layout(7, "/usr/src/task").template
    ));
    fs::write(rootfs.join("usr/src/new.txt"), "x").unwrap();
    let after = layout(8, "/usr/src/task");
    assert!(!Arc::ptr_eq(&before.template, &after.template));
    assert!(args(&after).join(" ").contains("/usr/src/new.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_opens_of_a_shape_share_one_probe() {
    let host = tempfile::tempdir().unwrap();
    let calls = host.path().join("calls");
    let real = find_program("bwrap").expect(INSTALL_HINT);
    let wrapper = host.path().join("bwrap");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            calls.display(),
            real.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let mut params = JsonMap::new();
    params.insert("bwrap".into(), json!(wrapper.to_str().unwrap()));
    let req = request(params, NetworkPolicy::public());
    let provider = Arc::new(SandboxProvider::default());
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let (provider, req) = (provider.clone(), req.clone());
            tokio::spawn(async move { provider.open(&Ctx::detached(), &req).await })
        })
        .collect();
    let mut sessions = Vec::new();
    for open in opens {
        sessions.push(open.await.unwrap().unwrap());
    }
    let probes = fs::read_to_string(&calls).unwrap();
    assert_eq!(probes.lines().count(), 1, "{probes}");
    assert!(probes.trim_end().ends_with("-- true"), "{probes}");
    assert_eq!(sh(&sessions[0], "echo $((2 + 3))").await.stdout, "5\n");
    for session in sessions {
        session.close().await.unwrap();
    }
}

/// Perl (part of every Debian system, so present in the mirrored root) connecting to each Unix
/// socket named in `$TARGETS` (one a line; `@name` is abstract) and printing `connect TARGET:
/// ok` or `connect TARGET: ERROR` for each.
const CONNECT_PROBE: &str = r#"use Socket;
for my $t (split /\n/, $ENV{TARGETS}) {
    socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
    (my $path = $t) =~ s/^@/\0/;
    if (connect($s, pack_sockaddr_un($path))) { print "connect $t: ok\n" }
    else { print "connect $t: $!\n" }
}"#;

/// Which of `targets` (sandbox paths, or `@name`) a command in `session` can connect to, with
/// the reason of each failure ([`CONNECT_PROBE`] run inside).
async fn connections_from(session: &SessionRef, targets: &[String]) -> BTreeMap<String, String> {
    let probe = ExecRequest::argv(["perl", "-e", CONNECT_PROBE])
        .env("TARGETS", targets.join("\n"))
        .timeout(60.0);
    let r = session.exec(probe).await.unwrap();
    assert_eq!(r.returncode, 0, "{r:?}");
    let seen: BTreeMap<String, String> = r
        .stdout
        .lines()
        .filter_map(|l| l.split_once("connect ").map(|(_, rest)| rest))
        .filter_map(|l| l.split_once(": "))
        .map(|(t, outcome)| (t.to_string(), outcome.to_string()))
        .collect();
    assert_eq!(seen.len(), targets.len(), "{r:?}");
    seen
}

/// Removes the files it holds when dropped (sockets made outside temp dirs).
struct RemoveOnDrop(Vec<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn host_unix_sockets_are_out_of_reach() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
    let tag = random_suffix();
    // Opened first: sockets bound later are found by the command that runs after them.
    let Opened {
        session: closed, ..
    } = open_policy(NetworkPolicy::no_network()).await;
    let Opened {
        session: public,
        dir: public_dir,
    } = open_policy(NetworkPolicy::public()).await;

    // A directory the mirror shows (not under the temporary directory, /tmp or /run, which the
    // sandbox hides): beside this test binary, else the home directory, else /var/tmp.
    let exe = std::env::current_exe().unwrap();
    let temp = fs::canonicalize(std::env::temp_dir()).unwrap();
    let hidden =
        |dir: &Path| dir.starts_with(&temp) || dir.starts_with("/run") || dir.starts_with("/tmp");
    let candidates = [
        exe.parent().map(Path::to_path_buf),
        std::env::var_os("HOME").map(PathBuf::from),
        Some(PathBuf::from("/var/tmp")),
    ];
    let beside = candidates
        .into_iter()
        .flatten()
        .filter_map(|dir| fs::canonicalize(dir).ok())
        .find(|dir| !hidden(dir) && tempfile::tempdir_in(dir).is_ok())
        .unwrap_or_else(|| {
            panic!(
                "no writable directory outside {}, /tmp and /run for the test socket",
                temp.display()
            )
        });
    let mirrored = tempfile::Builder::new()
        .prefix("agentcompass-test-")
        .tempdir_in(&beside)
        .unwrap();
    let mut places = vec![
        mirrored.path().join("deep/er/listening.sock"),
        temp.join(format!("agentcompass-test-{tag}.sock")),
    ];
    let run_writable = fs::metadata("/run").is_ok_and(|m| !m.permissions().readonly())
        && fs::write(format!("/run/agentcompass-test-{tag}"), "").is_ok();
    let _ = fs::remove_file(format!("/run/agentcompass-test-{tag}"));
    if run_writable {
        places.push(PathBuf::from(format!("/run/agentcompass-test-{tag}.sock")));
    } else {
        eprintln!("/run is not writable: its case is not tested");
    }
    if Path::new("/dev/shm").is_dir() {
        places.push(PathBuf::from(format!(
            "/dev/shm/agentcompass-test-{tag}.sock"
        )));
    }
    let _cleanup = RemoveOnDrop(places.clone());
    let mut listeners = Vec::new();
    for place in &places {
        fs::create_dir_all(place.parent().unwrap()).unwrap();
        listeners.push(UnixListener::bind(place).unwrap());
    }
    let abstract_name = format!("agentcompass-test-{tag}");
    let addr = SocketAddr::from_abstract_name(&abstract_name).unwrap();
    listeners.push(UnixListener::bind_addr(&addr).unwrap());
    // The session's own sockets (in its private /tmp) stay reachable.
    listeners.push(UnixListener::bind(public_dir.join("tmp/own.sock")).unwrap());

    let mut targets: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
    if run_writable {
        targets.push(format!("/var/run/agentcompass-test-{tag}.sock"));
    }
    // From the host, every one answers: the test proves something.
    for target in &targets {
        UnixStream::connect(target).unwrap_or_else(|e| panic!("host connect {target}: {e}"));
    }
    UnixStream::connect_addr(&addr).unwrap();
    let abstract_target = format!("@{abstract_name}");
    targets.push(abstract_target.clone());

    let inside = connections_from(&closed, &targets).await;
    for (target, outcome) in &inside {
        assert_ne!(
            outcome, "ok",
            "{target} is reachable from a no-network sandbox"
        );
    }
    let mut with_own = targets.clone();
    with_own.push("/tmp/own.sock".to_string());
    let inside = connections_from(&public, &with_own).await;
    for (target, outcome) in &inside {
        // `public` is the host's network namespace: its abstract sockets with it.
        let reachable = *target == abstract_target || target == "/tmp/own.sock";
        assert_eq!(outcome == "ok", reachable, "{target}: {outcome}");
    }
    // A covered socket is /dev/null's node, which the sandbox cannot open either.
    let deep = places[0].display().to_string();
    let r = sh(
        &closed,
        &format!("test -S '{deep}' || echo covered; cat '{deep}'"),
    )
    .await;
    assert!(r.stdout == "covered\n" && r.returncode != 0, "{r:?}");
    let r = sh(&closed, "ls -A /run; ls -A /dev/shm").await;
    assert_eq!((r.returncode, r.stdout.as_str()), (0, ""), "{r:?}");
    closed.close().await.unwrap();
    public.close().await.unwrap();
    drop(listeners);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_root_sandbox_keeps_only_the_default_capabilities() {
    let capabilities = |session: SessionRef| async move {
        let r = sh(&session, "sed -n 's/^CapEff:\\t//p' /proc/self/status").await;
        session.close().await.unwrap();
        u64::from_str_radix(r.stdout.trim(), 16).unwrap()
    };
    let closed = capabilities(open_policy(NetworkPolicy::no_network()).await.session).await;
    let public = capabilities(open_policy(NetworkPolicy::public()).await.session).await;
    if !template::started_by_root() {
        assert_eq!((closed, public), (0, 0));
        return;
    }
    // Bit numbers from linux/capability.h.
    let bits = |names: &[&str]| -> u64 {
        let number = |name: &str| match name {
            "CAP_CHOWN" => 0,
            "CAP_DAC_OVERRIDE" => 1,
            "CAP_FOWNER" => 3,
            "CAP_FSETID" => 4,
            "CAP_KILL" => 5,
            "CAP_SETGID" => 6,
            "CAP_SETUID" => 7,
            "CAP_SETPCAP" => 8,
            "CAP_NET_BIND_SERVICE" => 10,
            "CAP_NET_RAW" => 13,
            "CAP_SYS_CHROOT" => 18,
            "CAP_MKNOD" => 27,
            "CAP_AUDIT_WRITE" => 29,
            "CAP_SETFCAP" => 31,
            other => panic!("unknown capability {other}"),
        };
        names.iter().map(|n| 1u64 << number(n)).sum()
    };
    let all = bits(&template::ROOT_CAPABILITIES);
    assert_eq!(closed, all, "{closed:x}");
    assert_eq!(public, all & !bits(&["CAP_NET_RAW"]), "{public:x}");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_is_private_and_var_run_and_resolv_conf_follow_it() {
    let host = tempfile::tempdir().unwrap();
    let rootfs = host.path().join("rootfs");
    tiny_rootfs(&rootfs);
    fs::create_dir_all(rootfs.join("var/run")).unwrap();
    fs::write(rootfs.join("var/run/host.pid"), "1").unwrap();
    fs::create_dir_all(rootfs.join("run/systemd/resolve")).unwrap();
    fs::write(rootfs.join("run/host-only"), "").unwrap();
    fs::write(
        rootfs.join("run/systemd/resolve/stub-resolv.conf"),
        "nameserver 127.0.0.53\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../run/systemd/resolve/stub-resolv.conf",
        rootfs.join("etc/resolv.conf"),
    )
    .unwrap();
    let mut req = request(JsonMap::new(), NetworkPolicy::no_network());
    req.environment.setup.image = Some(rootfs.to_string_lossy().into_owned());
    let Opened { session, dir } = open_request(&req).await;
    let r = sh(
        &session,
        "read l < /etc/resolv.conf; echo $l; test -e /var/run/host.pid || echo no-pid; \
         test -e /run/host-only || echo no-host-file; echo x > /var/run/mine; read m < /run/mine; \
         echo $m",
    )
    .await;
    assert_eq!(
        (r.returncode, r.stdout.as_str()),
        (0, "nameserver 127.0.0.53\nno-pid\nno-host-file\nx\n"),
        "{r:?}"
    );
    assert_eq!(session.read_text("/var/run/mine").await.unwrap(), "x\n");
    assert_eq!(fs::read_to_string(dir.join("run/mine")).unwrap(), "x\n");
    session.close().await.unwrap();
}

#[test]
fn bound_sockets_are_read_from_proc_net_unix() {
    use super::sockets::bound_sockets;
    let table = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
        0000000000000000: 00000002 00000000 00010000 0001 01 694537 /run/a b.sock\n\
        0000000000000000: 00000003 00000000 00000000 0001 03  1676\n\
        0000000000000000: 00000002 00000000 00010000 0001 01 694535 @abstract\n\
        0000000000000000: 00000002 00000000 00010000 0001 01    12 relative.sock\n\
        0000000000000000: 00000003 00000000 00000000 0001 03 694538 /run/a b.sock\n";
    let found: Vec<(u64, &[u8])> = bound_sockets(table).collect();
    assert_eq!(
        found,
        vec![
            (694537, b"/run/a b.sock".as_slice()),
            (694538, b"/run/a b.sock".as_slice())
        ]
    );
}

#[test]
fn a_cover_of_a_socket_removed_meanwhile_is_recognised() {
    let masks = [PathBuf::from("/srv/x.sock")];
    let failed = |stderr: &str| ExecResult::new(1, "", stderr);
    for line in [
        "bwrap: Can't create file at /srv/x.sock: Read-only file system\n",
        "bwrap: Can't mkdir parents for /srv/x.sock: Read-only file system\n",
    ] {
        assert!(
            super::session::cover_failed(&failed(line), &masks),
            "{line}"
        );
    }
    assert!(!super::session::cover_failed(
        &failed("bwrap: Can't create file at /srv/y: Read-only file system\n"),
        &masks
    ));
    assert!(!super::session::cover_failed(
        &ExecResult::new(1, "", "/srv/x.sock\n"),
        &masks
    ));
    assert!(!super::session::cover_failed(
        &failed("bwrap: Can't create file at /srv/x.sock: x\n"),
        &[]
    ));
}

#[tokio::test]
async fn host_mounts_are_bound_read_only_or_writable_at_their_paths() {
    let tool = tempfile::tempdir().unwrap();
    fs::write(tool.path().join("agent.sh"), "echo agent-ran\n").unwrap();
    let staging = tempfile::tempdir().unwrap();
    let mut req = request(JsonMap::new(), NetworkPolicy::no_network());
    req.host_mounts = vec![
        HostMount {
            source: tool.path().display().to_string(),
            target: "/opt/agentcompass/tool".into(),
            read_only: true,
        },
        HostMount {
            source: staging.path().display().to_string(),
            target: "/opt/agentcompass/staging".into(),
            read_only: false,
        },
    ];
    let opened = open_request(&req).await;
    let out = sh(
        &opened.session,
        "bash /opt/agentcompass/tool/agent.sh; touch /opt/agentcompass/tool/x 2>/dev/null \
         && echo tool-writable; echo made > /opt/agentcompass/staging/out.txt; ls /opt | head -3",
    )
    .await;
    assert_eq!(out.returncode, 0, "{out:?}");
    assert!(out.stdout.starts_with("agent-ran\n"), "{out:?}");
    assert!(!out.stdout.contains("tool-writable"), "{out:?}");
    assert_eq!(
        fs::read_to_string(staging.path().join("out.txt")).unwrap(),
        "made\n"
    );
    assert!(!tool.path().join("x").exists());
    // The session's own file access sees the mounts as the commands do.
    assert_eq!(
        opened
            .session
            .read_text("/opt/agentcompass/tool/agent.sh")
            .await
            .unwrap(),
        "echo agent-ran\n"
    );
    opened.session.close().await.unwrap();

    for (target, why) in [
        ("opt/x", "must be an absolute path"),
        ("/tmp/x", "overlaps `/tmp`"),
        ("/app", "overlaps `/app`"),
        ("/proc/x", "overlaps `/proc`"),
    ] {
        let mut bad = request(JsonMap::new(), NetworkPolicy::public());
        bad.host_mounts = vec![HostMount {
            source: tool.path().display().to_string(),
            target: target.into(),
            read_only: true,
        }];
        let err = SandboxProvider::default()
            .open(&Ctx::detached(), &bad)
            .await
            .err()
            .unwrap();
        assert!(err.message.contains(why), "{target}: {}", err.message);
        assert!(err.message.contains("host_mounts[0]"), "{}", err.message);
    }
}
