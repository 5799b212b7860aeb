//! The environment-session contract (the SDK's contract kit, `agentcompass_plugin_api::
//! contract_kit`) against every provider as the host's registry makes it: `host_process` and
//! `sandbox` (built-in) and `docker` (a plugin, through the real loader and ABI, against the
//! private daemon the test command starts).

use std::time::Duration;

use agentcompass_e2e::PluginDirs;
use agentcompass_host::registry::Registry;
use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contract_kit::{
    run_session_contract, ContractOptions, ProcessProbe, CHECKS,
};
use agentcompass_plugin_api::contracts::{EnvironmentSpec, OpenEnvironmentRequest};

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

fn request(provider: &str) -> OpenEnvironmentRequest {
    let mut spec = EnvironmentSpec::new(provider);
    if provider == "docker" || provider == "podman" {
        spec.setup.image = Some("agentcompass-test/busybox:1".into());
        spec.params.insert(
            agentcompass_e2e::container_host_param().into(),
            agentcompass_e2e::container_host().into(),
        );
    }
    OpenEnvironmentRequest::new("contract", format!("contract-{provider}"), spec)
}

async fn contract(provider: &str) {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let environment = registry.environment(provider).expect("provider");
    // Every provider's processes are visible in this machine's /proc (a sandbox's or a
    // container's PIDs differ inside, but the private daemon runs here).
    let options = ContractOptions::default()
        .processes(ProcessProbe::Host)
        .slack(Duration::from_secs(8));
    let report = run_session_contract(environment.as_ref(), &request(provider), &options)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(report.passed(), CHECKS.len(), "{provider}:\n{report}");
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
    // Docker, or Podman in the podman tier (`AGENTCOMPASS_TEST_ENGINE`).
    contract(agentcompass_e2e::container_engine()).await;
}
