//! The same EnvironmentSession contract suite against every provider: `host_process` and
//! `sandbox` (built-in) and `docker` (a plugin, through the real loader and ABI, against the
//! private daemon the test command starts).

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use agentcompass_e2e::PluginDirs;
use agentcompass_host::registry::Registry;
use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contracts::{EnvironmentSpec, ExecRequest, OpenEnvironmentRequest};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};

fn registry(dirs: &PluginDirs) -> Registry {
    let plugins = dirs.package("plugins", "docker-provider");
    let setup = build_registry(&PluginSettings {
        plugin_dirs: vec![plugins],
        ..PluginSettings::default()
    })
    .expect("registry");
    assert!(setup.problems.is_empty(), "{:?}", setup.problems);
    setup.registry
}

fn docker_host() -> String {
    std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST")
        .expect("AGENTCOMPASS_TEST_DOCKER_HOST is not set: run the tests with ./dev.sh test, which starts a private Docker daemon")
}

async fn open(registry: &Registry, provider: &str) -> SessionRef {
    let mut spec = EnvironmentSpec::new(provider);
    if provider == "docker" {
        spec.setup.image = Some("agentcompass-test/busybox:1".into());
        spec.params
            .insert("docker_host".into(), docker_host().into());
    }
    let mut request = OpenEnvironmentRequest::new("contract", format!("contract-{provider}"), spec);
    request
        .resolved_env
        .insert("SESSION_VAR".into(), "from-session".into());
    registry
        .environment(provider)
        .expect("provider")
        .open(&Ctx::detached(), &request)
        .await
        .unwrap_or_else(|e| panic!("{provider}: open: {e}"))
}

async fn contract(provider: &str) {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let env = open(&registry, provider).await;
    let workdir = env.info().default_workdir.expect("a default workdir");
    let at = |name: &str| format!("{workdir}/{name}");

    // exec: argv and shell, exit codes, stdout/stderr.
    let out = env
        .exec(ExecRequest::argv(["echo", "hello"]))
        .await
        .unwrap();
    assert_eq!(
        (out.returncode, out.stdout.as_str()),
        (0, "hello\n"),
        "{provider}"
    );
    let out = env
        .exec(ExecRequest::shell("echo out; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(
        (out.returncode, out.stdout.as_str(), out.stderr.as_str()),
        (3, "out\n", "err\n"),
        "{provider}"
    );

    // cwd (default and relative) and env.
    let out = env.exec(ExecRequest::shell("pwd")).await.unwrap();
    assert_eq!(out.stdout.trim_end(), workdir, "{provider}: default cwd");
    env.exec(ExecRequest::shell("mkdir -p sub")).await.unwrap();
    let out = env
        .exec(ExecRequest::shell("pwd").cwd("sub"))
        .await
        .unwrap();
    assert_eq!(out.stdout.trim_end(), at("sub"), "{provider}: relative cwd");
    let out = env
        .exec(ExecRequest::shell("echo $CALL_VAR $SESSION_VAR").env("CALL_VAR", "from-call"))
        .await
        .unwrap();
    assert_eq!(
        out.stdout.trim_end(),
        "from-call from-session",
        "{provider}: env"
    );

    // Timeout: return code 124 and the process is gone (checked from the host, where the
    // processes of every provider are visible: PIDs inside a sandbox or container differ).
    let marker = match provider {
        "host_process" => "3131",
        "sandbox" => "3132",
        _ => "3133",
    };
    let started = Instant::now();
    let out = env
        .exec(ExecRequest::shell(format!("sleep {marker}")).timeout(1.0))
        .await
        .unwrap();
    assert!(
        out.timed_out && out.returncode == 124,
        "{provider}: {out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{provider}: timeout took {:?}",
        started.elapsed()
    );
    let mut left = sleepers(marker);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        left = sleepers(marker);
    }
    assert!(
        left.is_empty(),
        "{provider}: processes left behind: {left:?}"
    );

    // A binary file and a directory tree round-trip with modes.
    let local = tempfile::tempdir().unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let source = local.path().join("blob.bin");
    std::fs::write(&source, &binary).unwrap();
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o750)).unwrap();
    env.upload(&source, &at("blob.bin")).await.unwrap();
    let back = local.path().join("back.bin");
    env.download(&at("blob.bin"), &back).await.unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), binary, "{provider}: bytes");
    assert_eq!(
        std::fs::metadata(&back).unwrap().permissions().mode() & 0o777,
        0o750,
        "{provider}: mode"
    );
    let tree = local.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("a/b/run.sh"), "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(
        tree.join("a/b/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(tree.join("top.txt"), "top").unwrap();
    env.upload_dir(&tree, &at("tree")).await.unwrap();
    let out = env
        .exec(ExecRequest::argv(["sh", "tree/a/b/run.sh"]))
        .await
        .unwrap();
    assert_eq!(out.stdout, "ran\n", "{provider}");
    let copy = local.path().join("copy");
    env.download_dir(&at("tree"), &copy).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(copy.join("top.txt")).unwrap(),
        "top"
    );
    assert_eq!(
        std::fs::metadata(copy.join("a/b/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );

    // Text and probes.
    env.write_text(&at("notes/n.txt"), "é\n").await.unwrap();
    assert_eq!(env.read_text(&at("notes/n.txt")).await.unwrap(), "é\n");
    assert!(env.is_file(&at("notes/n.txt")).await.unwrap());
    assert!(!env.is_dir(&at("notes/n.txt")).await.unwrap());
    assert!(env.is_dir(&at("notes")).await.unwrap());
    assert!(!env.is_file(&at("missing")).await.unwrap());

    env.close().await.unwrap();
    env.close().await.expect("close is idempotent");
}

/// Host processes running `sleep <marker>`.
fn sleepers(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                    let args: Vec<String> = cmdline
                        .split(|b| *b == 0)
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect();
                    let sleeping = args.iter().any(|a| a.ends_with("sleep"))
                        && args.iter().any(|a| a == marker);
                    sleeping.then(|| args.join(" "))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_process_keeps_the_session_contract() {
    contract("host_process").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_keeps_the_session_contract() {
    contract("sandbox").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_keeps_the_session_contract() {
    contract("docker").await;
}
