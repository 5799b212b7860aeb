//! The agents' image of the docker path: `./dev.sh test` builds a Debian 12 root filesystem
//! with Node.js, npm, Python, git and curl (`ensure_agent_image`), imports it into its private
//! daemon and names it in `AGENTCOMPASS_TEST_AGENT_IMAGE`. Opened by the `docker` provider
//! (through the real loader and ABI) under `no-network`, it runs what the real agent CLIs need:
//! node >= 22 (the `engines` of @anthropic-ai/claude-code and @qwen-code/qwen-code), npm,
//! Python >= 3.10 (mini-swe-agent's `Requires-Python`) with venv and pip, curl, git and bash.

use agentcompass_e2e::PluginDirs;
use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, NetworkPolicy, OpenEnvironmentRequest,
};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};

fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: run the tests with ./dev.sh test, which builds the agents' image \
             and imports it into its private Docker daemon"
        )
    })
}

/// A command's stdout and stderr (trimmed) when it exits 0, else why not.
async fn run(session: &SessionRef, line: &str) -> Result<String, String> {
    let mut request = ExecRequest::shell(line);
    request.timeout_seconds = Some(60.0);
    match session.exec(request).await {
        Ok(out) if out.returncode == 0 => {
            Ok(format!("{}{}", out.stdout, out.stderr).trim().to_string())
        }
        Ok(out) => Err(format!(
            "`{line}` exited {}: {}{}",
            out.returncode,
            out.stdout.trim(),
            out.stderr.trim()
        )),
        Err(e) => Err(format!("`{line}`: {e}")),
    }
}

/// The major and minor numbers of the first `N.N` in `text`.
fn major_minor(text: &str) -> Option<(u32, u32)> {
    text.split(|c: char| !c.is_ascii_digit() && c != '.')
        .find_map(|word| {
            let mut parts = word.split('.');
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
}

/// A probe: its name, its command and the least `major.minor` its output must show.
type Check = (&'static str, &'static str, Option<(u32, u32)>);

/// Every probe, in order: a failure (or a version too old) is one line of the result.
async fn probe(session: &SessionRef) -> (Vec<String>, Vec<String>) {
    let mut seen = Vec::new();
    let mut failures = Vec::new();
    let at_least = |name: &str, out: &str, min: (u32, u32)| match major_minor(out) {
        Some(version) if version >= min => None,
        _ => Some(format!(
            "{name} is `{out}`, the agents need >= {}.{}",
            min.0, min.1
        )),
    };
    let checks: [Check; 8] = [
        ("node", "node --version", Some((22, 0))),
        ("npm", "npm --version", Some((10, 0))),
        ("python3", "python3 --version", Some((3, 10))),
        (
            "venv",
            "rm -rf /tmp/v && python3 -m venv /tmp/v && /tmp/v/bin/python -c 'import sys; print(sys.prefix)' && /tmp/v/bin/pip --version",
            None,
        ),
        ("curl", "curl --version", None),
        ("git", "git --version", None),
        ("bash", "bash --version", None),
        ("ps", "ps --version", None),
    ];
    for (name, line, min) in checks {
        match run(session, line).await {
            Ok(out) => {
                if let Some(failure) = min.and_then(|min| at_least(name, &out, min)) {
                    failures.push(failure);
                }
                // The version line (the venv's prefix and pip's version line).
                let lines = if name == "venv" { 2 } else { 1 };
                let shown: Vec<&str> = out.lines().take(lines).collect();
                seen.push(format!("{name}: {}", shown.join(" | ")));
            }
            Err(failure) => failures.push(failure),
        }
    }
    // `no-network` holds in this image too: nothing outside answers.
    if let Ok(out) = run(session, "curl -sS -m 5 -o /dev/null http://1.1.1.1/").await {
        failures.push(format!("under no-network, curl reached 1.1.1.1: {out}"));
    }
    (seen, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_image_runs_node_npm_python_git_and_curl_under_no_network() {
    let image = required("AGENTCOMPASS_TEST_AGENT_IMAGE");
    let docker_host = required("AGENTCOMPASS_TEST_DOCKER_HOST");
    let dirs = PluginDirs::new();
    let setup = build_registry(&PluginSettings {
        plugin_dirs: vec![dirs.package("plugins", "docker-provider")],
        ..PluginSettings::default()
    })
    .expect("registry");
    assert!(setup.problems.is_empty(), "{:?}", setup.problems);
    let docker = setup.registry.environment("docker").expect("provider");

    let mut spec = EnvironmentSpec::new("docker");
    spec.setup.image = Some(image.clone());
    spec.params.insert("docker_host".into(), docker_host.into());
    let mut request = OpenEnvironmentRequest::new("agent-image", "agent-image", spec);
    request.baseline_network_policy = NetworkPolicy::no_network();
    let session = docker
        .open(&Ctx::detached(), &request)
        .await
        .unwrap_or_else(|e| panic!("opening a container of {image}: {e}"));
    let (seen, failures) = probe(&session).await;
    session.close().await.expect("close");
    eprintln!("{image}:\n  {}", seen.join("\n  "));
    assert!(failures.is_empty(), "{image}: {}", failures.join("; "));
}
