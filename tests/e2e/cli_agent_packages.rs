//! `cli_agent` installed as the built-in agents are (issue 59 item 5): a pinned `package`
//! installed by the host into its install cache and mounted read-only, its executables first
//! on the command's PATH — so it runs in a `no-network` task, where an `install_command` could
//! not — and an agent that could not be installed is never a completed run: the task's fatal
//! `agent_install_failed`, the run `failed`, exit 1. The package is one `./dev.sh test`
//! prefetched into `AGENTCOMPASS_TEST_INSTALL_CACHE` (Qwen Code's pinned version), so the
//! test reaches no registry.

use std::path::{Path, PathBuf};

use agentcompass_e2e::{Outcome, Packs, Workspace};
use serde_json::json;

fn hello_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/harbor/hello-file")
}

/// `run harbor cli_agent` on hello-file in the sandbox with `params`, the install cache
/// `./dev.sh test` filled, and a model endpoint the command never calls.
fn run_cli_agent(ws: &Workspace, params: &serde_json::Value) -> Outcome {
    let packs = Packs::harbor();
    let cache = std::env::var("AGENTCOMPASS_TEST_INSTALL_CACHE")
        .expect("AGENTCOMPASS_TEST_INSTALL_CACHE is not set: run the tests with ./dev.sh test");
    let benchmark = json!({"path": hello_file()}).to_string();
    let params = params.to_string();
    ws.run(
        &[
            "--plugin-dir",
            packs.to_str().unwrap(),
            "--install-cache-dir",
            &cache,
            "run",
            "harbor",
            "cli_agent",
            "m",
            "--benchmark-params",
            &benchmark,
            "--env",
            "sandbox",
            "--harness-params",
            &params,
            "--progress",
            "none",
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--no-endpoint-check",
        ],
        &[],
    )
}

#[test]
fn a_pinned_package_runs_from_the_install_cache_in_a_no_network_task() {
    let ws = Workspace::new();
    // hello-file is `no-network`: the package comes from the cache, mounted read-only, and
    // `qwen` (its executable) is on the command's PATH.
    let params = json!({
        "package": "npm:@qwen-code/qwen-code@0.24.4",
        "command": "qwen --version > /dev/null && printf 'Hello, world!\\n' > /app/hello.txt",
    });
    let out = run_cli_agent(&ws, &params);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("completed — reward (native@1): 1.0000 (1/1 evaluated)"),
        "{out:?}"
    );
    let bad = run_cli_agent(&ws, &json!({"package": "npm:qwen", "command": "true"}));
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("package")
            && bad
                .stderr
                .contains("expected `npm:NAME@VERSION` or `pip:NAME==VERSION`"),
        "{bad:?}"
    );
}

#[test]
fn an_agent_that_could_not_be_installed_is_never_a_completed_run() {
    let ws = Workspace::new();
    let params = json!({"command": "true", "install_command": "echo no-such-agent >&2; exit 3"});
    let out = run_cli_agent(&ws, &params);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stderr.contains("completed"), "{out:?}");
    assert!(
        out.stderr.contains("failed — reward (native@1): n/a"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains(
            "1 × agent_install_failed: cli_agent: the install command exited with 3: no-such-agent"
        ),
        "{out:?}"
    );
}
