//! The `host_process` environment: commands run directly on this machine, in a per-task working
//! directory, with the public network (no isolation at all: it is not a sandbox).
//!
//! - Session directories ([`SessionDirs`]): every session has a private root (mode 0700)
//!   under the system temporary directory, named `agentcompass-<task>-<attempt>-<random>`,
//!   holding `app` (the workspace), `tests`, `solution`, `logs` and `tmp`; it is removed when
//!   the session closes (or, after a crash, by [`EnvironmentProvider::close`] from the
//!   persisted `close_params`). Nothing a session writes through its directories lands at a
//!   host-wide path, so concurrent tasks never see each other's files. Commands get `TMPDIR`
//!   set to `ROOT/tmp` unless the call sets it.
//! - Working directory: the `workdir` parameter when given (created at open if missing, never
//!   removed; the private root still holds the other directories), else `ROOT/app`.
//! - The root is created lazily: `open` only reserves its path and creates nothing on disk;
//!   the first operation that needs it (an `exec`, a transfer, text or probe call on a
//!   relative path or a path under the root) creates it with its subdirectories, exactly
//!   once. Operations on other absolute paths never create it. Most tasks never touch their
//!   environment, and creating and deleting directories per task attempt dominated the cost
//!   of large runs. Should the reserved name be taken by then, another random suffix is
//!   chosen, paths under the reserved name are rebased onto it, and the session's info
//!   reports the directories actually created. A session whose root was never created has
//!   nothing to release, so its `close_params` are `null` until then.
//! - Known trade-off: the runtime persists an environment record only when `close_params` are
//!   non-null at open time, so a lazily created directory is not in that record, and a crash
//!   of the host may leave it behind. Such leftovers are the `agentcompass-*` directories
//!   under the system temporary directory (`$TMPDIR`, else `/tmp`) and can be removed by hand
//!   once no run is active.
//! - `environment.setup.workdir` is ignored: every path this provider sees is a real host path,
//!   and relative paths resolve against the working directory above.
//! - Environment of commands: the host process environment, then the call's `env` defaults,
//!   then the session's resolved common bindings (they win over call defaults, as documented on
//!   [`ExecRequest::env`]), then `required_env` (a conflicting binding is an error naming the
//!   variable, never its values). Values are never logged.
//! - Every command runs in its own process group; a timeout or a dropped `exec` future kills
//!   the whole group with SIGKILL, so background children cannot keep a call alive. Detached
//!   commands are killed (by group) when the session closes or is dropped.

mod session;
#[cfg(test)]
mod tests;
mod workdir;

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    ConfigField, ConfigSchema, ConfigType, JsonMap, NetworkMode, OpenEnvironmentRequest,
    ProviderCapabilities,
};
use agentcompass_plugin_api::sdk::provider::{blocking, check_params, random_suffix, sanitise};
use agentcompass_plugin_api::sdk::{async_trait, Ctx, EnvironmentProvider, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

use super::files::remove_created_dir;
use crate::Builtin;
use session::HostProcessSession;
use workdir::Workdir;

/// Provider id.
pub const ID: &str = "host_process";

/// One-line description.
pub const DESCRIPTION: &str =
    "Commands run on this machine in a per-task working directory (public network only)";

/// Name prefix of the private working directories this provider creates (and alone removes).
const OWNED_PREFIX: &str = "agentcompass-";

/// The registry entry.
pub fn builtin() -> Builtin {
    Builtin::environment(ID, DESCRIPTION, config_schema(), make)
}

fn config_schema() -> ConfigSchema {
    ConfigSchema::empty().field(ConfigField::new(
        "workdir",
        ConfigType::String,
        Value::Null,
        "Working directory for every task (default: a fresh private directory per task attempt, \
         removed on close)",
    ))
}

fn make() -> Result<Arc<dyn EnvironmentProvider>> {
    Ok(Arc::new(HostProcessProvider))
}

/// The `host_process` provider.
pub struct HostProcessProvider;

#[async_trait]
impl EnvironmentProvider for HostProcessProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: vec![NetworkMode::Public],
            allowlist_entry_types: Vec::new(),
            dynamic_network_policy: false,
            resource_fields: Vec::new(),
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
            host_endpoints: true,
            host_mounts: false,
            platform_params: None,
            builds_images: false,
            exec_user: false,
            compose: false,
        })
    }

    async fn open(&self, _ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let fixed = match fixed_workdir_param(&request.environment.params)? {
            Some(dir) => Some(create_fixed_workdir(dir).await?),
            None => None,
        };
        let task = sanitise(&request.task_id);
        let attempt = request.attempt;
        let prefix = format!("{OWNED_PREFIX}{task}-{attempt}-");
        // Only reserved here: created by the first operation that needs it.
        let name = format!("{prefix}{}", random_suffix());
        let base = std::env::temp_dir();
        let base = std::path::absolute(&base).unwrap_or(base);
        let root = base.join(&name);
        tracing::debug!(
            provider = ID,
            root = %root.display(),
            fixed_workdir = fixed.is_some(),
            "opened environment"
        );
        Ok(Arc::new(HostProcessSession::new(
            name,
            Workdir::new(root, fixed, prefix),
            request.resolved_env.clone(),
        )))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        let owned = close_params
            .get("owned")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        // `workdir`: the session's private root (the name predates the session directories).
        let Some(workdir) = close_params.get("workdir").and_then(Value::as_str) else {
            return Ok(());
        };
        if !owned {
            return Ok(());
        }
        remove_created_dir(workdir, OWNED_PREFIX, ID).await
    }
}

/// The `workdir` parameter (checked against the schema; never empty).
fn fixed_workdir_param(params: &JsonMap) -> Result<Option<String>> {
    check_params(&config_schema(), params, ID)?;
    match params.get("workdir").and_then(Value::as_str) {
        Some("") => Err(Error::invalid_input(format!(
            "environment `{ID}`: parameter `workdir` must not be empty"
        ))),
        Some(dir) => Ok(Some(dir.to_string())),
        None => Ok(None),
    }
}

/// The fixed working directory `dir`, absolute, created if missing.
async fn create_fixed_workdir(dir: String) -> Result<PathBuf> {
    blocking(ID, move || {
        let path = std::path::absolute(&dir).map_err(|e| {
            Error::invalid_input(format!("environment `{ID}`: workdir `{dir}`: {e}"))
        })?;
        fs::create_dir_all(&path).map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: cannot create workdir `{}`: {e}",
                path.display()
            ))
        })?;
        Ok(path)
    })
    .await?
}
