//! `agentcompass-host env list [RESULTS_DIR]` and `env close [RESULTS_DIR] (--id ID... | --all)`:
//! environments left open by a crash or `--keep-environment`, from their persisted records
//! (`<run>/.env-resources/<id>.json`).

use std::path::{Path, PathBuf};

use agentcompass_schema::env_record::EnvRecord;
use agentcompass_schema::read_json;
use anyhow::{anyhow, bail};
use serde_json::{json, Value};

use agentcompass_host::host_services::HostServices;
use agentcompass_host::registry::Registry;

/// One persisted environment record.
struct Record {
    path: PathBuf,
    value: EnvRecord,
}

impl Record {
    fn id(&self) -> &str {
        &self.value.id
    }
}

fn find_records(root: &Path) -> Vec<Record> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if !kind.is_dir() {
                continue;
            }
            if entry.file_name() == ".env-resources" {
                let Ok(records) = std::fs::read_dir(&path) else {
                    continue;
                };
                for record in records.flatten() {
                    let file = record.path();
                    if file.extension().is_some_and(|e| e == "json") {
                        if let Ok(value) = read_json::<EnvRecord>(&file, "environment record") {
                            found.push(Record { path: file, value });
                        }
                    }
                }
            } else if entry.file_name() != "details" {
                stack.push(path);
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Prints the records under `root` as a JSON list.
pub fn list(root: &Path) -> anyhow::Result<i32> {
    if !root.is_dir() {
        bail!("results directory {} does not exist", root.display());
    }
    let items: Vec<Value> = find_records(root)
        .into_iter()
        .map(|r| {
            json!({
                "id": r.value.id,
                "provider": r.value.provider,
                "task_id": r.value.task_id,
                "attempt": r.value.attempt,
                "state": r.value.state,
                "created_at": r.value.created_at,
                "close_params": r.value.close_params,
                "path": r.path,
            })
        })
        .collect();
    crate::outln!("{}", serde_json::to_string_pretty(&Value::Array(items))?);
    Ok(0)
}

/// Releases the selected environments through their providers; exit 1 if any release failed.
pub fn close(registry: &Registry, root: &Path, ids: &[String], all: bool) -> anyhow::Result<i32> {
    if !root.is_dir() {
        bail!("results directory {} does not exist", root.display());
    }
    if ids.is_empty() && !all {
        bail!("env close: give --id ID (repeatable) or --all");
    }
    let records: Vec<Record> = find_records(root)
        .into_iter()
        .filter(|r| all || ids.iter().any(|id| id == r.id()))
        .collect();
    if let Some(missing) = ids
        .iter()
        .find(|id| !records.iter().any(|r| r.id() == id.as_str()))
    {
        bail!(
            "env close: no environment record with id `{missing}` under {}",
            root.display()
        );
    }
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut failures = 0;
    for record in records {
        let provider_id = record.value.provider.clone();
        let released = executor.block_on(async {
            let provider = registry
                .environment(&provider_id)
                .map_err(|e| anyhow!("{e}"))?;
            let ctx = HostServices::for_plugin("env close").into_ctx();
            provider
                .close(&ctx, &record.value.close_params)
                .await
                .map_err(|e| anyhow!("{e}"))
        });
        match released {
            Ok(()) => {
                std::fs::remove_file(&record.path)?;
                crate::outln!("closed {} ({provider_id})", record.id());
            }
            Err(e) => {
                failures += 1;
                let mut value = record.value.clone();
                value.state = "release_failed".to_string();
                value.error = Some(e.to_string());
                agentcompass_results::store::write_json_atomic(&record.path, &value)?;
                eprintln!("error: cannot close {} ({provider_id}): {e}", record.id());
            }
        }
    }
    Ok(i32::from(failures > 0))
}
