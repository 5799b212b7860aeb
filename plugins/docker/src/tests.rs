//! Tests against a real engine: `AGENTCOMPASS_TEST_DOCKER_HOST` must name it (they fail, never
//! skip, without it), and it must hold the image `agentcompass-test/busybox:1`. The engine is
//! Docker, or Podman with `AGENTCOMPASS_TEST_ENGINE=podman` (the `podman` tier of
//! `./dev.sh test`): the same tests drive the `podman` provider then.

use std::collections::HashMap;
use std::fs;
use std::future::Future;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, ExecResult, ExecutionPlan, JsonMap, NetworkPolicy,
    OpenEnvironmentRequest, ResourceRequirements,
};
use agentcompass_plugin_api::sdk::{Ctx, EnvironmentProvider, SessionRef};
use agentcompass_plugin_api::ErrorKind;
use bollard::models::ContainerSummary;
use bollard::query_parameters::ListContainersOptionsBuilder;
use serde_json::json;

use super::config::{image_required, normalize};
use super::*;
use agentcompass_plugin_api::contract_kit::{
    run_session_contract, ClosedOnDrop, ContractOptions, ProcessProbe, CHECKS,
};
use agentcompass_plugin_api::sdk::provider::random_suffix;
use engine::Daemon;

const IMAGE: &str = "agentcompass-test/busybox:1";

/// The engine under test: `AGENTCOMPASS_TEST_ENGINE` (`docker`, the default, or `podman`).
pub(crate) fn test_engine() -> Engine {
    match std::env::var("AGENTCOMPASS_TEST_ENGINE").as_deref() {
        Ok("podman") => Engine::Podman,
        Ok("docker") | Err(_) => Engine::Docker,
        Ok(other) => panic!("AGENTCOMPASS_TEST_ENGINE `{other}`: expected docker or podman"),
    }
}

/// Whether the engine cannot enforce cpu and memory limits: rootless Podman on cgroup v1 (the
/// `podman-rootless` tier on such a host). The provider refuses them there, and the tests
/// expect that refusal instead; as root every engine here enforces them.
fn limits_refused() -> bool {
    if test_engine() != Engine::Podman || nix::unistd::geteuid().is_root() {
        return false;
    }
    let probe = ResourceRequirements {
        memory_mb: Some(64),
        ..Default::default()
    };
    let address = docker_host();
    match podman::Services::default().check_resources(&address, &probe) {
        Ok(_) => false,
        Err(e) => {
            assert!(e.message.contains("cannot be enforced"), "{}", e.message);
            true
        }
    }
}

/// The provider of the engine under test.
fn provider() -> ContainerProvider {
    ContainerProvider::new(test_engine())
}

/// The parameter naming the engine's address (`docker_host`, `container_host`).
fn host_param() -> &'static str {
    test_engine().address_param()
}

async fn connect(host: &str) -> Result<Daemon> {
    Daemon::connect(test_engine(), host).await
}

fn docker_host() -> String {
    std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST").unwrap_or_else(|_| {
        panic!(
            "AGENTCOMPASS_TEST_DOCKER_HOST is not set: the docker-provider tests need a Docker \
             daemon (e.g. AGENTCOMPASS_TEST_DOCKER_HOST=unix:///tmp/acdocker/docker.sock) holding \
             the image {IMAGE}"
        )
    })
}

/// Drives an SDK future from a plain test thread (the provider spawns onto its own runtime).
fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

fn request(run_id: &str, policy: NetworkPolicy) -> OpenEnvironmentRequest {
    let mut spec = EnvironmentSpec::new(test_engine().id());
    spec.params
        .insert(host_param().into(), json!(docker_host()));
    spec.setup.image = Some(IMAGE.into());
    let mut req = OpenEnvironmentRequest::new(run_id, "task/1 é", spec);
    req.attempt = 2;
    req.baseline_network_policy = policy;
    req.resolved_env
        .insert("SESSION_VAR".into(), "from-session".into());
    req.resolved_env.insert("SHARED".into(), "session".into());
    req
}

fn unique_run(name: &str) -> String {
    format!("test-{name}-{}", random_suffix())
}

fn open(req: &OpenEnvironmentRequest) -> ClosedOnDrop {
    ClosedOnDrop(block_on(provider().open(&Ctx::detached(), req)).unwrap())
}

fn sh(session: &SessionRef, line: &str) -> ExecResult {
    block_on(session.exec(ExecRequest::shell(line))).unwrap()
}

/// The containers labelled with `run_id` (running or not).
fn containers_of(run_id: &str) -> Vec<ContainerSummary> {
    let host = docker_host();
    let filter = format!("{LABEL_RUN}={run_id}");
    block_on(crate::rt::spawn(async move {
        let docker = connect(&host).await.unwrap();
        let filters = HashMap::from([("label", vec![filter.as_str()])]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        docker.list_containers(Some(options)).await.unwrap()
    }))
    .unwrap()
}

#[test]
fn keeps_the_session_contract() {
    // The daemon may be on another machine than the tests: processes are looked for with a
    // command in the container.
    let options = ContractOptions::default()
        .processes(ProcessProbe::Session)
        .slack(Duration::from_secs(8));
    let req = request(&unique_run("contract"), NetworkPolicy::public());
    let report = block_on(run_session_contract(&provider(), &req, &options)).unwrap();
    assert_eq!(report.passed(), CHECKS.len());
}

#[test]
fn sessions_are_named_containers() {
    let session = open(&request(&unique_run("info"), NetworkPolicy::public()));
    let info = session.info();
    assert_eq!(info.default_workdir.as_deref(), Some("/app"));
    assert!(
        info.id.starts_with("agentcompass-task_1__-2-"),
        "{}",
        info.id
    );
    assert_eq!(info.close_params["container"], info.id.as_str());
    assert_eq!(info.close_params[host_param()], docker_host().as_str());
    // The session's bindings are the container's environment too.
    let r = sh(&session, "echo $SESSION_VAR $SHARED");
    assert_eq!(r.stdout, "from-session session\n");
    let err = block_on(session.exec(ExecRequest::argv(["no-such-program"]))).unwrap_err();
    assert!(
        err.message.contains("cannot start `no-such-program`"),
        "{}",
        err.message
    );
    block_on(session.close()).unwrap();
}

#[test]
fn labels_resources_and_close() {
    let run_id = unique_run("labels");
    let mut req = request(&run_id, NetworkPolicy::public());
    req.environment.resources = Some(ResourceRequirements {
        cpu: Some(0.5),
        memory_mb: Some(64),
        ..Default::default()
    });
    req.environment.setup.workdir = Some("/work/dir".into());
    req.run_dir = Some(format!("/runs/{run_id}"));
    let limited = !limits_refused();
    if !limited {
        let err = block_on(provider().open(&Ctx::detached(), &req))
            .err()
            .unwrap();
        assert!(
            err.message.contains("resources.cpu cannot be enforced"),
            "{}",
            err.message
        );
        assert!(containers_of(&run_id).is_empty());
        req.environment.resources = None;
    }
    let session = open(&req);
    assert_eq!(session.info().default_workdir.as_deref(), Some("/work/dir"));
    assert_eq!(sh(&session, "pwd").stdout, "/work/dir\n");
    let found = containers_of(&run_id);
    assert_eq!(found.len(), 1);
    let labels = found[0].labels.clone().unwrap();
    assert_eq!(labels[LABEL_RUN], run_id);
    assert_eq!(labels[LABEL_TASK], "task/1 é");
    assert_eq!(labels[LABEL_ATTEMPT], "2");
    assert_eq!(labels[LABEL_MANAGED], "true");
    assert_eq!(labels[LABEL_RUN_DIR], format!("/runs/{run_id}"));
    assert_eq!(
        found[0].names.clone().unwrap(),
        vec![format!("/{}", session.info().id)]
    );
    let (host, name) = (docker_host(), session.info().id);
    let inspected = block_on(crate::rt::spawn(async move {
        let docker = connect(&host).await.unwrap();
        docker.inspect_container(&name, None).await.unwrap()
    }))
    .unwrap();
    let host_config = inspected.host_config.unwrap();
    if limited {
        assert_eq!(host_config.nano_cpus, Some(500_000_000));
        assert_eq!(host_config.memory, Some(64 * 1024 * 1024));
    }
    assert_eq!(host_config.network_mode.as_deref(), Some("host"));
    let env = inspected.config.unwrap().env.unwrap();
    assert!(env.contains(&"SESSION_VAR=from-session".to_string()));

    block_on(session.close()).unwrap();
    assert!(containers_of(&run_id).is_empty());
    let err = block_on(session.exec(ExecRequest::shell("true"))).unwrap_err();
    assert!(err.message.contains("closed"), "{}", err.message);

    // Crash cleanup from the persisted close_params.
    let session = block_on(provider().open(
        &Ctx::detached(),
        &request(&run_id, NetworkPolicy::no_network()),
    ))
    .unwrap();
    let params = session.info().close_params;
    drop(session);
    assert_eq!(containers_of(&run_id).len(), 1);
    if test_engine() == Engine::Podman {
        // A Podman on another store would answer "no such container": refused, not done.
        let mut elsewhere = params.clone();
        elsewhere["store"] = json!("/elsewhere/storage");
        let err = block_on(provider().close(&Ctx::detached(), &elsewhere)).unwrap_err();
        assert!(
            err.message.contains("is in the store `/elsewhere/storage`"),
            "{}",
            err.message
        );
        assert_eq!(containers_of(&run_id).len(), 1);
    }
    block_on(provider().close(&Ctx::detached(), &params)).unwrap();
    assert!(containers_of(&run_id).is_empty());
    let err = block_on(provider().close(
        &Ctx::detached(),
        &json!({"container": "someone-elses", host_param(): docker_host()}),
    ))
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}

#[test]
fn no_network_is_isolated_and_public_uses_the_host_network() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fetch = format!("echo ping | nc -w 5 127.0.0.1 {port} 2>&1; echo rc=$?");

    let isolated = open(&request(&unique_run("nonet"), NetworkPolicy::no_network()));
    let r = sh(&isolated, &fetch);
    assert!(!r.stdout.contains("rc=0"), "{r:?}");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "a no-network container reached the host"
    );
    let r = sh(&isolated, "cat /proc/net/dev");
    let interfaces: Vec<&str> = r
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .collect();
    assert_eq!(interfaces, ["lo"], "{r:?}");
    block_on(isolated.close()).unwrap();

    listener.set_nonblocking(false).unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = stream.read(&mut buf);
        stream.write_all(b"pong\n").unwrap();
    });
    let public = open(&request(&unique_run("public"), NetworkPolicy::public()));
    let r = sh(&public, &fetch);
    assert_eq!(r.stdout, "pong\nrc=0\n", "{r:?}");
    server.join().unwrap();
    block_on(public.close()).unwrap();
}

#[test]
fn plans_are_validated() {
    let provider = provider();
    let caps = provider.capabilities().unwrap();
    assert!(caps.task_env && caps.dynamic_network_policy && caps.host_endpoints);
    assert_eq!(caps.operating_systems, ["linux"]);
    let mut plan = ExecutionPlan {
        environment: EnvironmentSpec::new(test_engine().id()),
        ..ExecutionPlan::default()
    };
    plan.environment
        .params
        .insert(host_param().into(), json!(docker_host()));
    // Without an image or a build context, the plan is refused (before any task runs).
    assert_eq!(
        provider.validate_plan(&plan).unwrap_err().message,
        image_required(test_engine()).message
    );
    plan.environment.setup.image = Some(IMAGE.into());
    provider.validate_plan(&plan).unwrap();
    plan.baseline_network_policy = Some(NetworkPolicy::no_network());
    plan.environment.resources = Some(ResourceRequirements {
        cpu: Some(2.0),
        memory_mb: Some(512),
        ..Default::default()
    });
    if limits_refused() {
        // Refused with the plan, before any task: one line naming the field and the engine.
        let err = provider.validate_plan(&plan).unwrap_err();
        assert!(
            err.message.contains("resources.cpu cannot be enforced")
                && err.message.contains("rootless Podman on cgroup v1"),
            "{}",
            err.message
        );
        plan.environment.resources = None;
    }
    provider.validate_plan(&plan).unwrap();

    let mut allowlist = plan.clone();
    allowlist.baseline_network_policy = Some(NetworkPolicy::allowlist(["pypi.org", "10.0.0.0/8"]));
    provider.validate_plan(&allowlist).unwrap();
    // A public run phase in a container started on `none` fails closed.
    let mut refused = allowlist;
    refused.run_network_policy = Some(NetworkPolicy::public());
    let err = provider.validate_plan(&refused).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.contains("`allowlist`") && err.message.contains("run_network_policy"),
        "{}",
        err.message
    );
    // GPUs: Docker's device requests; Podman's compatible API has none (refused).
    let mut gpus = plan.clone();
    gpus.environment.resources = Some(ResourceRequirements {
        gpu: Some(1),
        ..Default::default()
    });
    match test_engine() {
        Engine::Docker => provider.validate_plan(&gpus).unwrap(),
        Engine::Podman => assert!(provider
            .validate_plan(&gpus)
            .unwrap_err()
            .message
            .contains("`gpu`")),
    }
    let mut refused = plan.clone();
    refused.environment.params.insert("bogus".into(), json!(1));
    assert!(provider
        .validate_plan(&refused)
        .unwrap_err()
        .message
        .contains("unknown parameter `bogus`"));
    let mut refused = plan.clone();
    refused.environment.setup.workdir = Some("relative".into());
    assert!(provider.validate_plan(&refused).is_err());
    let mut refused = plan;
    refused
        .environment
        .params
        .insert("keep_alive_command".into(), json!([]));
    assert!(provider.validate_plan(&refused).is_err());
}

#[test]
fn config_defaults() {
    let engine = test_engine();
    let mut params = JsonMap::new();
    params.insert(host_param().into(), json!("unix:///x.sock"));
    let config = Config::parse(engine, &params).unwrap();
    assert_eq!(
        config,
        Config {
            engine,
            address: config::Address::Given("unix:///x.sock".into()),
            network: "host".into(),
            keep_alive_command: vec!["sleep".into(), "2147483647".into()],
            pull: true,
            build_context: None,
            egress_hosts: std::collections::BTreeMap::new(),
        }
    );
    let schema = info(engine).config_schema;
    for key in [
        host_param(),
        "network",
        "keep_alive_command",
        "pull",
        "build_context",
        "egress_hosts",
    ] {
        assert!(schema.get(key).is_some(), "{key}");
    }
    assert_eq!(normalize(Path::new("/app"), "a/../b/./c"), "/app/b/c");
    assert_eq!(normalize(Path::new("/app"), "/x/../../y"), "/y");
    assert_eq!(normalize(Path::new("/app"), ""), "/app");
}

#[test]
fn missing_image_and_missing_setup_image_are_clear_errors() {
    let run_id = unique_run("noimage");
    let mut req = request(&run_id, NetworkPolicy::public());
    req.environment.setup.image = None;
    let err = block_on(provider().open(&Ctx::detached(), &req))
        .err()
        .unwrap();
    assert_eq!(
        err.message,
        format!(
            "{}: setup.image is required (e.g. --env-params '{{\"setup\": {{\"image\": \
             \"debian:bookworm\"}}}}')",
            test_engine()
        )
    );
    req.environment.setup.image = Some("agentcompass-test/does-not-exist:0".into());
    // No pull (the default pulls a missing image, as Harbor does).
    req.environment
        .params
        .insert("pull".into(), serde_json::Value::Bool(false));
    let err = block_on(provider().open(&Ctx::detached(), &req))
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Environment);
    assert!(
        err.message
            .contains("`agentcompass-test/does-not-exist:0` does not exist locally")
            && err.message.contains("pull"),
        "{}",
        err.message
    );
    assert!(containers_of(&run_id).is_empty());

    // An unreachable daemon is an environment error naming it.
    req.environment.setup.image = Some(IMAGE.into());
    req.environment.params.insert(
        host_param().into(),
        json!("unix:///nonexistent/docker.sock"),
    );
    let err = block_on(provider().open(&Ctx::detached(), &req))
        .err()
        .unwrap();
    assert!(
        err.message.contains("/nonexistent/docker.sock"),
        "{}",
        err.message
    );
}

/// A build context directory, removed when dropped (a failing test leaves none behind).
struct ContextDir(std::path::PathBuf);

impl std::ops::Deref for ContextDir {
    type Target = std::path::PathBuf;

    fn deref(&self) -> &std::path::PathBuf {
        &self.0
    }
}

impl Drop for ContextDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh host directory holding `files` (a unique marker keeps its context unique).
fn context_dir(files: &[(&str, &str)]) -> ContextDir {
    let dir =
        ContextDir(std::env::temp_dir().join(format!("docker-provider-ctx-{}", random_suffix())));
    fs::create_dir_all(&*dir).unwrap();
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    fs::write(dir.join("marker"), random_suffix()).unwrap();
    dir
}

fn build_request(run_id: &str, context: &Path) -> OpenEnvironmentRequest {
    let mut req = request(run_id, NetworkPolicy::no_network());
    req.environment.setup.image = None;
    req.environment.setup.build_timeout_seconds = Some(120.0);
    req.environment
        .params
        .insert("build_context".into(), json!(context.to_str().unwrap()));
    req
}

/// The id of a local image.
fn image_id(tag: &str) -> String {
    let (host, tag) = (docker_host(), tag.to_string());
    block_on(crate::rt::spawn(async move {
        let docker = connect(&host).await.unwrap();
        docker.inspect_image(&tag).await.unwrap().id.unwrap()
    }))
    .unwrap()
}

#[test]
fn images_are_built_from_a_context_and_reused() {
    let context = context_dir(&[
        (
            "Dockerfile",
            "FROM agentcompass-test/busybox:1\nRUN echo built > /built.txt\n\
             COPY hello.txt /hello.txt\nCOPY marker /marker\n",
        ),
        ("hello.txt", "hello\n"),
    ]);
    fs::set_permissions(context.join("hello.txt"), fs::Permissions::from_mode(0o750)).unwrap();
    let tar = archive::context_tar(&context).unwrap();
    assert_eq!(
        tar,
        archive::context_tar(&context).unwrap(),
        "not deterministic"
    );
    let req = build_request(&unique_run("build"), &context);
    let session = open(&req);
    let r = sh(&session, "cat /built.txt /hello.txt; stat -c %a /hello.txt");
    assert_eq!(r, ExecResult::new(0, "built\nhello\n750\n", ""), "{r:?}");
    let container = session.info().id;
    let host = docker_host();
    let tag = block_on(crate::rt::spawn(async move {
        let docker = connect(&host).await.unwrap();
        let found = docker.inspect_container(&container, None).await.unwrap();
        found.config.unwrap().image.unwrap()
    }))
    .unwrap();
    // Podman's Docker-compatible API qualifies a short name with `docker.io/`.
    let tag = tag.strip_prefix("docker.io/").unwrap_or(&tag).to_string();
    assert!(
        tag.starts_with("agentcompass-build/ctx-") && tag.ends_with(":latest"),
        "{tag}"
    );
    let first = image_id(&tag);

    // The same context again: the image under the tag (with the context's label) is reused,
    // not rebuilt (a cached rebuild would give the built image back, without `/reused.txt`).
    assert_eq!(sh(&session, "echo reused > /reused.txt").returncode, 0);
    let (host, container, at) = (docker_host(), session.info().id, tag.clone());
    let committed = block_on(crate::rt::spawn(async move {
        let docker = connect(&host).await.unwrap();
        let (repo, version) = at.rsplit_once(':').unwrap();
        let options = bollard::query_parameters::CommitContainerOptionsBuilder::new()
            .container(&container)
            .repo(repo)
            .tag(version)
            // Rootless Podman on cgroup v1 cannot pause (no cgroup); nothing runs anyway.
            .pause(false)
            .build();
        let config = bollard::models::ContainerConfig::default();
        docker.commit_container(options, config).await.unwrap().id
    }))
    .unwrap();
    // Podman's commit answers the bare digest, its inspect `sha256:<digest>` as Docker's do.
    let committed = match committed.strip_prefix("sha256:") {
        Some(_) => committed,
        None => format!("sha256:{committed}"),
    };
    assert_ne!(committed, first);
    drop(session);
    let started = Instant::now();
    let session = open(&build_request(&unique_run("reuse"), &context));
    assert_eq!(
        sh(&session, "cat /reused.txt /hello.txt").stdout,
        "reused\nhello\n"
    );
    assert_eq!(image_id(&tag), committed);
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(session);

    // A given setup.image is the tag; a changed context is rebuilt under it.
    let named = format!("agentcompass-test/built-{}:1", random_suffix());
    let mut req = build_request(&unique_run("named"), &context);
    req.environment.setup.image = Some(named.clone());
    drop(open(&req));
    fs::write(context.join("hello.txt"), "changed\n").unwrap();
    let session = open(&req);
    assert_eq!(sh(&session, "cat /hello.txt").stdout, "changed\n");
    assert_ne!(image_id(&named), first);
    drop(session);
}

#[test]
fn failed_builds_and_bad_contexts_are_clear_errors() {
    let context = context_dir(&[(
        "Dockerfile",
        "FROM agentcompass-test/busybox:1\nRUN echo before\nRUN false\n",
    )]);
    let run_id = unique_run("badbuild");
    let err = block_on(provider().open(&Ctx::detached(), &build_request(&run_id, &context)))
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Environment);
    assert!(!err.message.contains('\n'), "{}", err.message);
    // Docker: "... at `Step 3/3 : RUN false`: The command '/bin/sh -c false' returned a
    // non-zero code: 1"; Podman (buildah): "...: building at STEP \"RUN false\": while running
    // runtime: exit status 1".
    assert!(
        err.message.contains("RUN false")
            && (err.message.contains("non-zero code: 1") || err.message.contains("exit status 1")),
        "{}",
        err.message
    );
    assert!(containers_of(&run_id).is_empty());

    // Missing Dockerfile, missing or relative directory: refused at validation and open.
    fs::remove_file(context.join("Dockerfile")).unwrap();
    let relative = Path::new("relative/dir");
    let missing = context.join("missing");
    for (dir, problem) in [
        (context.as_path(), "holds no `Dockerfile`"),
        (missing.as_path(), "is not an existing directory"),
        (relative, "must be an absolute path"),
    ] {
        let req = build_request(&run_id, dir);
        let err = block_on(provider().open(&Ctx::detached(), &req))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        let expected = format!(
            "environment `{}`: parameter `build_context` `{}` {problem}",
            test_engine(),
            dir.display()
        );
        assert_eq!(err.message, expected);
        let plan = ExecutionPlan {
            environment: req.environment.clone(),
            ..ExecutionPlan::default()
        };
        assert_eq!(
            provider().validate_plan(&plan).unwrap_err().message,
            expected
        );
    }
}

#[test]
fn gpus_are_nvidia_device_requests_as_harbor_asks() {
    let none = ResourceRequirements {
        gpu: Some(0),
        ..Default::default()
    };
    assert!(gpu_request(&none).is_none());
    let two = ResourceRequirements {
        gpu: Some(2),
        ..Default::default()
    };
    let requests = gpu_request(&two).expect("a device request");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].driver.as_deref(), Some("nvidia"));
    assert_eq!(requests[0].count, Some(2));
    assert_eq!(
        requests[0].capabilities,
        Some(vec![vec!["gpu".to_string()]])
    );
}
