//! `agentcompass-host agents install HARNESS... [--env ENV]`: makes the install-cache entries
//! each harness's plan declares for ENV's platform now, so that runs find them (and need no
//! network for them).

use anyhow::{anyhow, bail};

use agentcompass_host::config::LoadedConfig;
use agentcompass_host::host_services::HostServices;
use agentcompass_host::install::{check_installs, InstallCache, Platform};
use agentcompass_host::registry::Registry;
use agentcompass_host::request::resolve_install_target;
use agentcompass_plugin_api::contracts::{EnvironmentSpec, RunRequest, ToolInstall};

use crate::cli::{AgentsInstallCmd, GlobalArgs};

/// What to install: each harness of `cmd` with its environment and declared installs.
fn install_targets(
    config: &LoadedConfig,
    registry: &Registry,
    cmd: &AgentsInstallCmd,
) -> anyhow::Result<Vec<(String, EnvironmentSpec, Vec<ToolInstall>)>> {
    let mut targets = Vec::new();
    for id in &cmd.harnesses {
        let (harness_spec, environment) = resolve_install_target(
            config,
            registry,
            (id, &cmd.harness_params),
            (&cmd.env, &cmd.env_params),
        )?;
        let harness = registry.harness(id).map_err(|e| anyhow!("{e}"))?;
        let request = RunRequest {
            harness: harness_spec,
            environment: environment.clone(),
            ..RunRequest::default()
        };
        let plan = harness
            .build_plan(&request, &environment)
            .map_err(|e| anyhow!("{}", e.message))?;
        if plan.installs.is_empty() {
            bail!("harness `{id}` installs nothing in its environments");
        }
        check_installs(&plan.installs).map_err(|e| anyhow!("harness `{id}`: {e}"))?;
        targets.push((id.clone(), environment, plan.installs));
    }
    Ok(targets)
}

/// Installs what every harness of `cmd` declares; exit 1 when an install failed.
pub fn install(global: &GlobalArgs, cmd: &AgentsInstallCmd) -> anyhow::Result<i32> {
    let (config, runtime, setup) = super::invocation::load_registry(global)?;
    let registry = &setup.registry;
    let cache = InstallCache::configured(runtime.install_cache_dir.as_deref());
    // Everything is checked before anything is installed.
    let targets = install_targets(&config, registry, cmd)?;
    let provider = registry.environment(&cmd.env).map_err(|e| anyhow!("{e}"))?;
    let capabilities = provider
        .capabilities()
        .map_err(|e| anyhow!("{}", e.message))?;
    if !capabilities.host_mounts {
        bail!(
            "--env `{}` cannot mount host directories, which installed agents need",
            cmd.env
        );
    }
    let executor = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let ctx = HostServices::for_plugin("agents install").into_ctx();
    let mut failures = 0;
    for (id, environment, installs) in targets {
        let platform = Platform::of(&environment, capabilities.platform_params.as_deref());
        for install in installs {
            let what = format!(
                "{id}: {} ({}) for {}",
                install.requirement(),
                install.installer.as_str(),
                platform.dir_name()
            );
            if cache.is_installed(&platform, &install) {
                crate::outln!(
                    "{what}: already installed ({})",
                    cache.entry_dir(&platform, &install).display()
                );
                continue;
            }
            let started = std::time::Instant::now();
            let made =
                executor.block_on(cache.ensure(&provider, &ctx, &environment, &platform, &install));
            match made {
                Ok(entry) => crate::outln!(
                    "{what}: installed in {:.1} s ({})",
                    started.elapsed().as_secs_f64(),
                    entry.display()
                ),
                Err(e) => {
                    failures += 1;
                    eprintln!("error: {what}: {e}");
                }
            }
        }
    }
    Ok(i32::from(failures > 0))
}
