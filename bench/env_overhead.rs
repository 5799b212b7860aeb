//! Per-task overhead of the isolating environments: N tasks, each opening an environment,
//! running one command (`true`) and closing it, through the host's providers (`sandbox`
//! built-in, `docker` plugin through the real loader), against the same command run directly
//! by `bwrap` and `docker run`. Run with `bench/env_overhead.sh` (release build).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, NetworkPolicy, OpenEnvironmentRequest,
};
use agentcompass_plugin_api::sdk::Ctx;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plugins = PathBuf::from(
        args.get(1)
            .expect("usage: env_overhead PLUGIN_DIR DOCKER_HOST [N]"),
    );
    let docker_host = args
        .get(2)
        .expect("usage: env_overhead PLUGIN_DIR DOCKER_HOST [N]")
        .clone();
    let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let setup = build_registry(&PluginSettings {
        plugin_dirs: vec![plugins],
        ..PluginSettings::default()
    })
    .expect("registry");
    assert!(setup.problems.is_empty(), "{:?}", setup.problems);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for provider in ["sandbox", "docker"] {
        let mut spec = EnvironmentSpec::new(provider);
        if provider == "docker" {
            spec.setup.image = Some("agentcompass-test/busybox:1".into());
            spec.params
                .insert("docker_host".into(), docker_host.clone().into());
        }
        let env = setup.registry.environment(provider).unwrap();
        let started = Instant::now();
        runtime.block_on(async {
            for i in 0..n {
                let mut request =
                    OpenEnvironmentRequest::new("bench", format!("t{i}"), spec.clone());
                request.baseline_network_policy = NetworkPolicy::no_network();
                let session = env.open(&Ctx::detached(), &request).await.unwrap();
                let out = session.exec(ExecRequest::argv(["true"])).await.unwrap();
                assert_eq!(out.returncode, 0);
                session.close().await.unwrap();
            }
        });
        let per = started.elapsed().as_secs_f64() * 1000.0 / n as f64;
        println!(
            "{provider:<8} via host:  {per:7.1} ms/task ({n} tasks: open + one command + close)"
        );
    }
    let started = Instant::now();
    for _ in 0..n {
        let status = Command::new("bwrap")
            .args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--tmpfs",
                "/tmp",
                "--unshare-all",
                "--die-with-parent",
                "true",
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let per = started.elapsed().as_secs_f64() * 1000.0 / n as f64;
    println!("bwrap    directly:  {per:7.1} ms/task");
    let runs = n.min(50);
    let started = Instant::now();
    for _ in 0..runs {
        let status = Command::new("docker")
            .env("DOCKER_HOST", &docker_host)
            .args([
                "run",
                "--rm",
                "--network",
                "none",
                "agentcompass-test/busybox:1",
                "true",
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let per = started.elapsed().as_secs_f64() * 1000.0 / runs as f64;
    println!("docker run directly: {per:6.1} ms/task ({runs} runs)");
}
