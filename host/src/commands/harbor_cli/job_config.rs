//! `harbor run -c FILE`: a Harbor `JobConfig` (YAML or JSON) as the `harbor run` flags it
//! stands for, so a config file and the command line go through one translation (the
//! flags, parsed after the file's words, win; lists append). A key with no flag here is
//! refused by its path in the file unless it holds Harbor's default.

use std::path::Path;

use serde_json::{Map, Value};

use super::translate::Refusal;

/// The `harbor run` words of the `JobConfig` in `file`.
pub fn words(file: &Path) -> Result<Vec<String>, Refusal> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("harbor run: -c {shown}: cannot read it: {e}"))?;
    let value: Value = if file.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text)
            .map_err(|e| format!("harbor run: -c {shown}: invalid JSON: {e}"))?
    } else {
        yaml_serde::from_str(&text)
            .map_err(|e| format!("harbor run: -c {shown}: invalid YAML: {e}"))?
    };
    let Value::Object(config) = value else {
        return Err(format!(
            "harbor run: -c {shown}: expected a JobConfig mapping, found {}",
            agentcompass_plugin_api::contracts::json_type_name(&value)
        ));
    };
    let mut out = Words {
        file: shown.to_string(),
        words: Vec::new(),
    };
    out.job(&config)?;
    Ok(out.words)
}

/// The words being built, and the file for refusals.
struct Words {
    file: String,
    words: Vec<String>,
}

/// A scalar as a flag's value (strings unquoted).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether `value` is Harbor's default of a key with no flag here (absent, null, false, an
/// empty list or mapping).
fn is_default(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Array(list) => list.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

impl Words {
    fn refuse(&self, key: &str, why: &str) -> Refusal {
        format!("harbor run: -c {}: {key}: {why}", self.file)
    }

    fn flag(&mut self, flag: &str, value: &Value) {
        if !value.is_null() {
            self.words.push(flag.to_string());
            self.words.push(text(value));
        }
    }

    fn switch(&mut self, flag: &str, value: &Value) {
        if value.as_bool() == Some(true) {
            self.words.push(flag.to_string());
        }
    }

    fn list(&mut self, flag: &str, value: &Value) {
        for item in value.as_array().into_iter().flatten() {
            self.flag(flag, item);
        }
    }

    /// `KEY=VALUE` words of a mapping (values as JSON unless strings).
    fn pairs(&mut self, flag: &str, value: &Value) {
        for (key, item) in value.as_object().into_iter().flatten() {
            self.words.push(flag.to_string());
            self.words.push(format!("{key}={}", text(item)));
        }
    }

    fn job(&mut self, config: &Map<String, Value>) -> Result<(), Refusal> {
        for (key, value) in config {
            match key.as_str() {
                "job_name" => self.flag("--job-name", value),
                "jobs_dir" => self.flag("-o", value),
                "n_attempts" => self.flag("-k", value),
                "timeout_multiplier"
                | "agent_timeout_multiplier"
                | "verifier_timeout_multiplier"
                | "agent_setup_timeout_multiplier"
                | "environment_build_timeout_multiplier" => {
                    self.flag(&format!("--{}", key.replace('_', "-")), value)
                }
                "debug" => self.switch("--debug", value),
                "quiet" => self.switch("-q", value),
                "n_concurrent_trials" => self.flag("-n", value),
                "retry" => self.retry(value)?,
                "environment" => self.environment(value)?,
                "agents" => self.agents(value)?,
                "datasets" => self.datasets(value)?,
                "tasks" => self.tasks(value)?,
                "extra_instruction_paths" => self.list("--extra-instruction-path", value),
                "verifier"
                    if value
                        .as_object()
                        .is_some_and(|v| v.values().all(is_default)) => {}
                "metrics"
                | "artifacts"
                | "extra_instructions"
                | "source_jobs"
                | "user_agent"
                | "install_only"
                | "skip_credential_checks"
                | "verifier"
                    if !is_default(value) =>
                {
                    return Err(self.refuse(
                        key,
                        "has no equivalent here (see `agentcompass-host harbor run --help`)",
                    ))
                }
                "metrics"
                | "artifacts"
                | "extra_instructions"
                | "source_jobs"
                | "user_agent"
                | "install_only"
                | "skip_credential_checks"
                | "verifier" => {}
                other => return Err(self.refuse(other, "not a JobConfig key of Harbor 0.25")),
            }
        }
        Ok(())
    }

    fn retry(&mut self, value: &Value) -> Result<(), Refusal> {
        for (key, item) in value.as_object().into_iter().flatten() {
            match key.as_str() {
                "max_retries" => self.flag("-r", item),
                "include_exceptions" => self.list("--retry-include", item),
                "exclude_exceptions" => self.list("--retry-exclude", item),
                "wait_multiplier" | "min_wait_sec" | "max_wait_sec" => {
                    return Err(self.refuse(&format!("retry.{key}"), "has no equivalent here: the retry delay is `execution.retry_min_delay_seconds`/`retry_max_delay_seconds`"))
                }
                other => return Err(self.refuse(&format!("retry.{other}"), "not a RetryConfig key")),
            }
        }
        Ok(())
    }

    fn environment(&mut self, value: &Value) -> Result<(), Refusal> {
        for (key, item) in value.as_object().into_iter().flatten() {
            match key.as_str() {
                "type" => self.flag("-e", item),
                "force_build" => self.switch("--force-build", item),
                "delete" if item.as_bool() == Some(false) => self.words.push("--no-delete".into()),
                "delete" => {}
                "cpu_enforcement_policy" => self.flag("--cpus", item),
                "memory_enforcement_policy" => self.flag("--memory", item),
                "override_cpus"
                | "override_memory_mb"
                | "override_storage_mb"
                | "override_gpus" => self.flag(&format!("--{}", key.replace('_', "-")), item),
                "kwargs" => self.pairs("--ek", item),
                "suppress_override_warnings" => {}
                other => self.unmapped(&format!("environment.{other}"), item)?,
            }
        }
        Ok(())
    }

    /// The one `noun` of the list at `key` (`None` when empty); more is refused with `why`.
    fn only<'v>(
        &self,
        key: &str,
        noun: &str,
        value: &'v Value,
        why: &str,
    ) -> Result<Option<&'v Value>, Refusal> {
        match value.as_array().map(Vec::as_slice).unwrap_or_default() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            many => Err(self.refuse(
                key,
                &format!("expected one {noun}, found {} ({why})", many.len()),
            )),
        }
    }

    /// A key at `path` with no flag: accepted at Harbor's default, else refused.
    fn unmapped(&self, path: &str, item: &Value) -> Result<(), Refusal> {
        if is_default(item) {
            Ok(())
        } else {
            Err(self.refuse(path, "has no equivalent here"))
        }
    }

    fn agents(&mut self, value: &Value) -> Result<(), Refusal> {
        let why = "one request per agent: run once per agent, or `agentcompass-host launch`";
        let Some(agent) = self.only("agents", "agent", value, why)? else {
            return Ok(());
        };
        for (key, item) in agent.as_object().into_iter().flatten() {
            match key.as_str() {
                "name" => self.flag("-a", item),
                "import_path" if !item.is_null() => self.flag("-a", item),
                "model_name" => self.flag("-m", item),
                "base_url" => self.flag("--base-url", item),
                "model_api_key_name" => self.flag("--api-key-name", item),
                "model_api_format" => self.flag("--api-format", item),
                "kwargs" => self.pairs("--ak", item),
                "env" => self.pairs("--ae", item),
                "skills" => self.list("--skill", item),
                other => self.unmapped(&format!("agents[0].{other}"), item)?,
            }
        }
        Ok(())
    }

    fn datasets(&mut self, value: &Value) -> Result<(), Refusal> {
        let why = "one request per dataset: `agentcompass-host launch`";
        let Some(dataset) = self.only("datasets", "dataset", value, why)? else {
            return Ok(());
        };
        let name = dataset.get("name").and_then(Value::as_str);
        let version = dataset.get("version").and_then(Value::as_str);
        if let Some(name) = name {
            let spec = version.map_or(name.to_string(), |v| format!("{name}@{v}"));
            self.flag("-d", &Value::from(spec));
        }
        for (key, item) in dataset.as_object().into_iter().flatten() {
            match key.as_str() {
                "name" | "version" | "overwrite" => {}
                "path" => self.flag("-p", item),
                "registry_path" => self.flag("--registry-path", item),
                "registry_url" => self.flag("--registry-url", item),
                "task_names" => self.list("-i", item),
                "exclude_task_names" => self.list("-x", item),
                "n_tasks" => self.flag("-l", item),
                other => self.unmapped(&format!("datasets[0].{other}"), item)?,
            }
        }
        Ok(())
    }

    fn tasks(&mut self, value: &Value) -> Result<(), Refusal> {
        match value.as_array().map(Vec::as_slice).unwrap_or_default() {
            [] => Ok(()),
            [task] if task.get("path").is_some_and(|p| !p.is_null()) => {
                let extra = task.as_object().into_iter().flatten().find(|(key, item)| {
                    !matches!(key.as_str(), "path" | "overwrite") && !is_default(item)
                });
                if let Some((key, _)) = extra {
                    return Err(self.refuse(
                        &format!("tasks[0].{key}"),
                        "has no equivalent here (give the task's `path`)",
                    ));
                }
                self.flag("-p", &task["path"]);
                Ok(())
            }
            [_] => Err(self.refuse(
                "tasks[0]",
                "expected a local task `path` (Hub and git tasks are not fetched here)",
            )),
            many => Err(self.refuse(
                "tasks",
                &format!(
                    "expected one task, found {} (give their parent directory with -p)",
                    many.len()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(yaml: &str) -> Result<Vec<String>, Refusal> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("job.yaml");
        std::fs::write(&file, yaml).unwrap();
        words(&file).map_err(|e| e.replace(&file.display().to_string(), "job.yaml"))
    }

    #[test]
    fn a_job_config_is_the_flags_it_stands_for() {
        let yaml = "job_name: nightly\njobs_dir: out\nn_attempts: 3\nn_concurrent_trials: 2\n\
                    timeout_multiplier: 2.0\nenvironment:\n  type: docker\n  delete: false\n  \
                    override_cpus: 2\nagents:\n  - name: claude-code\n    model_name: \
                    anthropic/claude-sonnet-4-5\n    kwargs:\n      max_turns: 30\n\
                    datasets:\n  - path: tasks\n    task_names: ['hello-*']\n    n_tasks: 1\n";
        assert_eq!(
            words_of(yaml).unwrap().join(" "),
            // Keys in the order the file's mapping reads back (sorted); the order of the
            // words does not matter to the parse.
            "--ak max_turns=30 -m anthropic/claude-sonnet-4-5 -a claude-code -l 1 -p tasks -i \
             hello-* --no-delete --override-cpus 2 -e docker --job-name nightly -o out -k 3 -n 2 \
             --timeout-multiplier 2.0"
        );
    }

    #[test]
    fn keys_with_no_equivalent_are_refused_by_their_path() {
        assert_eq!(
            words_of("agents:\n  - name: a\n  - name: b\n").unwrap_err(),
            "harbor run: -c job.yaml: agents: expected one agent, found 2 (one request per \
             agent: run once per agent, or `agentcompass-host launch`)"
        );
        assert!(words_of("environment:\n  mounts: [{type: bind}]\n")
            .unwrap_err()
            .contains("environment.mounts: has no equivalent here"));
        assert!(words_of("colour: blue\n")
            .unwrap_err()
            .contains("colour: not a JobConfig key"));
        assert!(words_of("metrics: []\nverifier: {disable: false}\n")
            .unwrap()
            .is_empty());
    }
}
