//! Per-phase network policies in one `docker` container, end to end: the built binary, the
//! bundled `docker` plugin, the Harbor benchmark and `oracle`, against the private daemon
//! at `AGENTCOMPASS_TEST_DOCKER_HOST` (or, in the podman tier, the same in `podman` against
//! its private Podman service: `agentcompass_e2e::container_engine`). The in-container forwarder is the host binary itself.
//! Also the fail-closed refusal of a task whose phases mix public and non-public, and the
//! model endpoint (a host endpoint) from inside a `no-network` container.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{
    container_engine, container_host, container_host_param, pack_run, published_results as results,
    run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// A build context for a test image: busybox, the host's `programs` (with the libraries
/// `ldd` resolves for them) at their host paths, the host's `bash` as `/bin/bash` and
/// `/bin/sh` (Harbor runs its scripts with bash; busybox's shell would run its own applets
/// first, e.g. a `find` without `-delete`), `HOME=/root`, and the `fetch` shell client of
/// the docker egress tests at `/usr/local/bin/fetch.sh`.
pub(crate) fn image_context(dir: &Path, programs: &[&str]) -> PathBuf {
    let context = dir.join("image");
    let root = context.join("root");
    for program in ["/usr/bin/bash"].iter().chain(programs) {
        let listed = std::process::Command::new("ldd")
            .arg(program)
            .output()
            .expect("ldd");
        let text = String::from_utf8_lossy(&listed.stdout).into_owned();
        let libraries = text.lines().filter_map(|line| {
            let line = line.trim();
            let path = line.split(" => ").last()?.split(" (").next()?.trim();
            path.starts_with('/').then(|| path.to_string())
        });
        for file in libraries.chain([program.to_string()]) {
            let to = root.join(file.trim_start_matches('/'));
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(&file, &to).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }
    let bin = root.join("usr/local/bin");
    fs::create_dir_all(&bin).unwrap();
    fs::create_dir_all(root.join("root")).unwrap();
    fs::copy(
        repo_root().join("plugins/docker/tests/fetch.sh"),
        bin.join("fetch.sh"),
    )
    .unwrap();
    fs::write(
        context.join("Dockerfile"),
        "FROM agentcompass-test/busybox:1\n\
         COPY root/ /\n\
         RUN for tool in cut tr tee awk ip; do ln -sf busybox /bin/$tool; done \\
         && ln -sf /usr/bin/bash /bin/bash && ln -sf /usr/bin/bash /bin/sh\n\
         ENV HOME=/root\n",
    )
    .unwrap();
    context
}

fn env_params(context: &Path) -> String {
    json!({container_host_param(): container_host(), "build_context": context}).to_string()
}

/// `run harbor oracle` on the fixture task `fixture` (`tests/fixtures/harbor/`) in `docker` with
/// the environment parameters `env`, plus `extra`; `E2E_NET_PORT` is `port`.
fn oracle_in_docker(
    ws: &Workspace,
    fixture: &str,
    env: &str,
    extra: &[&str],
    port: &str,
) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let params =
        json!({"path": repo_root().join("tests/fixtures/harbor").join(fixture)}).to_string();
    let mut args = pack_run(
        &plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            container_engine(),
            "--env-params",
            env,
            "--progress",
            "none",
        ],
    );
    args.extend_from_slice(extra);
    ws.run(&args, &[("E2E_NET_PORT", port)])
}

#[test]
fn each_phase_runs_under_its_own_network_policy_in_one_container() {
    // [environment] allowlist 127.0.0.3 (the baseline), [agent] allowlist 127.0.0.2,
    // [verifier] no-network, two steps in one container: each step's setup.sh (the
    // baseline: 403 for 127.0.0.2, 127.0.0.3 reached), the agent (127.0.0.2 through the
    // proxy, 403 for 127.0.0.3), the verifier (nothing); step two's setup.sh shows the
    // baseline back after step one's evaluation, the artifact command after the last one.
    // The verifiers check every line.
    let port = agentcompass_e2e::two_loopback_servers().to_string();
    let ws = Workspace::new();
    let context = image_context(ws.root(), &["/usr/bin/find"]);
    let env = env_params(&context);
    let extra = ["--execution-params", r#"{"save_artifacts": true}"#];
    let out = oracle_in_docker(&ws, "docker-phase-network", &env, &extra, &port).expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["docker-phase-network"];
    assert_eq!(result["status"], "completed", "{result}");
    let steps: Vec<Value> = result["meta"]["benchmark"]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = steps.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["one", "two"], "{result}");
    for step in &steps {
        assert_eq!(step["metrics"]["reward"], 1.0, "{step}");
    }
    assert_eq!(result["metrics"]["reward"], 1.0, "{result}");
    // After the session's phases: the baseline again.
    let after = fs::read_to_string(attempt.join("artifacts/app/after.txt")).unwrap();
    assert_eq!(after, "after 127.0.0.2 403\nafter 127.0.0.3 200\n");
    // The proxy's token is a secret: the agent's output that shows it is persisted scrubbed.
    let shown = result["trajectory"].to_string();
    assert!(
        shown.contains("proxy=http://agent:********@127.0.0.1:3128"),
        "{shown}"
    );
}

#[test]
fn a_public_phase_in_a_non_public_container_is_refused_before_anything_opens() {
    // The sandbox fixture: a public baseline with an allowlisted agent; docker cannot switch a
    // container between its own network and `none`, so no task of the run can run: refused
    // before the first task, one line, nothing written (issue 36).
    let ws = Workspace::new();
    let env = json!({
        container_host_param(): container_host(),
        "setup": {"image": "agentcompass-test/busybox:1"}
    })
    .to_string();
    let out = oracle_in_docker(&ws, "phase-network", &env, &[], "1").expect_code(2);
    let expected = format!(
        "environment `{}` cannot switch from its baseline network policy (`public`) to the \
         run_network_policy (`allowlist`): a container runs on its own network from its \
         start, so its phases must be all public or all non-public; none of the request's 1 \
         tasks can run there",
        container_engine()
    );
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    assert!(!ws.cwd.join("results").exists());
}

#[test]
fn the_model_endpoint_is_reachable_from_a_no_network_container() {
    // The model endpoint test of `sandbox`, in `docker`: a no-network Harbor task whose agent
    // (curl, the host's, in the image) calls all three protocols, streamed and not, through
    // the host endpoint the provider forwards into the container; 401 for a wrong token; the
    // real key nowhere inside or in the results.
    let dir = tempfile::tempdir().unwrap();
    let context = image_context(
        dir.path(),
        &["/usr/bin/find", "/usr/bin/curl", "/usr/bin/tr"],
    );
    let params = env_params(&context);
    crate::model_endpoint::the_agent_reaches_the_model_through_the_endpoint_only(
        container_engine(),
        &["--env-params", &params],
    );
}
