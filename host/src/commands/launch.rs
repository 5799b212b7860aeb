//! `launch FILE`: an orchestration file's requests; `--dry-run` prints them redacted.

use serde_json::{json, Value};

use super::execute::execute;
use super::invocation::{
    load_config, print_json, request_payload, runtime_overlay, warn_unknown_providers,
    warn_unresolved,
};
use crate::cli::{GlobalArgs, LaunchCmd};
use agentcompass_host::request::{
    load_orchestration_file, resolve_orchestration, resolve_runtime, LaunchArgs, Orchestration,
};

fn orchestration_payload(orchestration: &Orchestration) -> Value {
    json!({
        "orchestration_id": orchestration.id,
        "name": orchestration.name,
        "task_concurrency": orchestration.task_concurrency,
        "runtime": orchestration.runtime,
        "requests": orchestration.requests.iter().map(|run| {
            let mut payload = request_payload(&run.request);
            if let Value::Object(map) = &mut payload {
                map.insert("key".into(), json!(run.key));
                map.insert("index".into(), json!(run.index));
                map.insert("name".into(), json!(run.name));
            }
            payload
        }).collect::<Vec<_>>(),
    })
}

/// `launch`: resolves an orchestration file; `--dry-run` prints it.
pub fn launch(global: &GlobalArgs, cmd: &LaunchCmd) -> anyhow::Result<i32> {
    let config = load_config(global)?;
    let file = load_orchestration_file(&cmd.file)?;
    let args = LaunchArgs {
        task_concurrency: cmd.task_concurrency,
        run_id: cmd.run_id.clone(),
        reuse: cmd.reuse,
        rerun: cmd.rerun.clone(),
        rerun_invalid: cmd.rerun_invalid,
        execution: (cmd.selection.fields().into_iter())
            .chain(cmd.timeouts.fields())
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
        runtime: runtime_overlay(global, Some(&cmd.runtime))?,
    };
    // The registry depends on the plugin dirs the orchestration's runtime names.
    let source = cmd.file.display().to_string();
    let runtime = resolve_runtime(&config, Some((&source, &file.runtime)), &args.runtime)?;
    let setup = super::invocation::setup_registry(global, &runtime)?;
    warn_unknown_providers(&runtime, &setup.registry);
    let orchestration = resolve_orchestration(&cmd.file, &file, &config, &args, &setup.registry)?;
    let checks = super::execute::Checks {
        endpoint: !cmd.no_endpoint_check,
        launch: true,
    };
    if cmd.dry_run {
        // The resolution checks a real launch applies before it writes anything.
        agentcompass_host::runtime::check_outputs(&orchestration)
            .map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let resolved = warn_unresolved(
            &setup.registry,
            &orchestration
                .requests
                .iter()
                .map(|r| &r.request)
                .collect::<Vec<_>>(),
        );
        // What a real launch checks before its first task, every request's tasks opened and
        // counted (`selected_tasks` by request name; null with unresolved references).
        let (selected, images) = if resolved {
            let counts =
                super::execute::dry_run_tasks(&orchestration, &setup, &cmd.gates.gates(), checks)
                    .map_err(|e| in_file(&source, e))?;
            let by_name = |f: &dyn Fn(&super::execute::DryRunTasks) -> serde_json::Value| {
                serde_json::Value::Object(counts.iter().map(|r| (r.name.clone(), f(r))).collect())
            };
            (
                by_name(&|r| serde_json::json!(r.count)),
                by_name(&|r| r.images.clone()),
            )
        } else {
            (serde_json::Value::Null, serde_json::Value::Null)
        };
        let mut payload = orchestration_payload(&orchestration);
        payload["selected_tasks"] = selected;
        payload["image_builds"] = images;
        print_json(&payload)?;
        return Ok(0);
    }
    // Preflight and task-loading errors name the request; name the file too.
    execute(orchestration, &setup, &cmd.gates.gates(), checks).map_err(|e| in_file(&source, e))
}

/// `err` with the orchestration file named in front of it, its chain kept: the exit code is
/// the error's own (a failed installer 1, a refusal 2), as `run` exits with it.
fn in_file(source: &str, err: anyhow::Error) -> anyhow::Error {
    err.context(source.to_string())
}

#[cfg(test)]
mod tests {
    use agentcompass_host::exit_code::FAILURE;
    use agentcompass_host::install::InstallError;

    /// A failure that is not bad input (an installer that failed) exits 1 from `launch` as
    /// from `run`: naming the file keeps the error's own exit code (it was 2).
    #[test]
    fn an_error_named_by_its_file_keeps_its_exit_code() {
        let failed = anyhow::Error::new(InstallError::Failed("npm: no network".into()))
            .context("--auto-install-dependencies: claude-code");
        let named = super::in_file("plan.toml", failed);
        assert_eq!(crate::exit_code_of(&named), FAILURE);
        assert_eq!(
            format!("{named:#}"),
            "plan.toml: --auto-install-dependencies: claude-code: npm: no network"
        );
    }
}
