//! `--auto-install-dependencies` (`runtime.auto_install_dependencies`): before the first task,
//! every install each request's harness declares for its environment (the agent CLIs of the
//! installed agents) is made in the install cache, as `agents install` makes it; without it
//! they are made when a task first needs them.

use anyhow::anyhow;

use agentcompass_host::host_services::HostServices;
use agentcompass_host::install::{check_installs, InstallCache, Platform};
use agentcompass_host::request::Orchestration;
use agentcompass_host::setup::Setup;

/// Installs what every request's harness declares; `Err` names the first failure.
pub(super) fn install_all(
    orchestration: &Orchestration,
    setup: &Setup,
    executor: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
    let runtime = &orchestration.runtime;
    let cache = InstallCache::configured(runtime.install_cache_dir.as_deref());
    let ctx = HostServices::for_plugin("auto-install-dependencies").into_ctx();
    for run in &orchestration.requests {
        let request = &run.request;
        let Ok(harness) = setup.registry.harness(&request.harness.id) else {
            continue; // harness-free: nothing to install
        };
        let plan = harness
            .build_plan(request, &request.environment)
            .map_err(|e| anyhow!("--auto-install-dependencies: {}", e.message))?;
        if plan.installs.is_empty() {
            continue;
        }
        check_installs(&plan.installs).map_err(|e| {
            anyhow!(
                "--auto-install-dependencies: harness `{}`: {e}",
                request.harness.id
            )
        })?;
        let provider = setup
            .registry
            .environment(&request.environment.id)
            .map_err(|e| anyhow!("{e}"))?;
        let capabilities = provider
            .capabilities()
            .map_err(|e| anyhow!("{}", e.message))?;
        let platform = Platform::of(
            &request.environment,
            capabilities.platform_params.as_deref(),
        );
        for install in &plan.installs {
            if cache.is_installed(&platform, install) {
                continue;
            }
            let started = std::time::Instant::now();
            let entry = executor
                .block_on(cache.ensure(&provider, &ctx, &request.environment, &platform, install))
                .map_err(|e| {
                    // The installer's error stays in the chain: a failed install exits 1.
                    anyhow::Error::new(e).context(format!(
                        "--auto-install-dependencies: {}: {}",
                        request.harness.id,
                        install.requirement()
                    ))
                })?;
            eprintln!(
                "installed {} for {} in {:.1} s ({})",
                install.requirement(),
                request.harness.id,
                started.elapsed().as_secs_f64(),
                entry.display()
            );
        }
    }
    Ok(())
}
