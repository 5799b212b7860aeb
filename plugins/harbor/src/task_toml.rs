//! One Harbor task directory → one `TaskSpec`: `task.toml` parsing and the field mapping of
//! seed 004 ("Harbor tasks and execution requirements").
//!
//! | Harbor declaration | `TaskSpec` field |
//! | - | - |
//! | `agent.timeout_sec` | `run_timeout_seconds` |
//! | `verifier.timeout_sec` | `evaluation_timeout_seconds` |
//! | `environment.docker_image` / `workdir` / `build_timeout_sec` / `os` | `environment_setup` |
//! | `environment.network_mode` / `allowed_hosts` / legacy `allow_internet` | `baseline_network_policy` |
//! | `agent.network_mode` / `allowed_hosts` | `run_network_policy` (else the baseline) |
//! | `verifier.network_mode` / `allowed_hosts` | `evaluation_network_policy` (else the verifier's baseline) |
//! | `environment.cpus` / `memory_mb` / `storage_mb` / `gpus`, legacy `memory` / `storage` | `resources` |
//! | `environment.env` | `env_variables` |
//! | `verifier.env` | `evaluation_env_variables` |
//! | `[verifier.environment]` | `evaluation_environment_setup`, `evaluation_baseline_network_policy`, `evaluation_environment_env_variables`, `evaluation_resources` |
//! | `verifier.environment_mode` | `evaluation_environment_mode` |
//! | `solution.env` | `run_env_variables` (only for the oracle harness or `solution_env_for_agent`) |
//! | `artifacts` | `artifacts` (the `/logs/artifacts` convention directory always included) |
//! | `[[verifier.collect]]` | `artifact_collect` |
//! | `source` / `[task]` / `[metadata]` | `metadata["source"]` / `metadata["task"]` / merged into `metadata` |
//!
//! Only explicitly declared values are mapped (no implicit Harbor defaults). When a separate
//! verifier environment is declared, the agent's resources go to `run_resources` and the
//! verifier's to `evaluation_resources`, so neither inherits the other's. Everything else that
//! Harbor defines but this host does not act on becomes a `load_warnings` entry.

use std::collections::BTreeMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::{
    EnvironmentSetup, EvaluationEnvironmentMode, JsonMap, NetworkMode, NetworkPolicy,
    ResourceRequirements, TaskSpec,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;
use toml::Value;

use crate::artifacts::{artifacts, collect_commands};
use crate::fields::{table_to_json, Section, Warnings};
use crate::names::{
    task_id_of, ID, INSTRUCTION_MD, SOLUTION_DIR, TASK_TOML, TESTS_DIR, TEST_SCRIPT,
};

/// Loader switches derived from the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Map `solution.env` to `run_env_variables` (oracle harness or `solution_env_for_agent`).
    pub solution_env_for_agent: bool,
}

/// What one environment table (`[environment]` or `[verifier.environment]`) declares.
#[derive(Debug, Default)]
struct EnvironmentDecl {
    setup: EnvironmentSetup,
    resources: Option<ResourceRequirements>,
    baseline: Option<NetworkPolicy>,
    env: Option<BTreeMap<String, String>>,
}

/// Loads the task directory `dir` (an absolute path).
pub fn load_task(dir: &Path, options: LoadOptions) -> Result<TaskSpec> {
    let task_id = task_id_of(dir)?;
    let toml_path = dir.join(TASK_TOML);
    let file = toml_path.display().to_string();
    let text = std::fs::read_to_string(&toml_path)
        .map_err(|e| Error::invalid_input(format!("{ID}: {file}: cannot read: {e}")))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|span| {
                text.get(..span.start)
                    .unwrap_or(&text)
                    .matches('\n')
                    .count()
                    + 1
            })
            .map(|line| format!(" (line {line})"))
            .unwrap_or_default();
        Error::invalid_input(format!(
            "{ID}: {file}: invalid TOML{line}: {}",
            e.message().trim()
        ))
    })?;
    let root = Section::root(&file, &table);

    if root.has("steps") {
        return Err(Error::invalid_input(format!(
            "{ID}: {}: multi-step Harbor tasks are not supported (found `steps` in {TASK_TOML})",
            dir.display()
        )));
    }
    if dir.join("steps").is_dir() {
        return Err(Error::invalid_input(format!(
            "{ID}: {}: multi-step Harbor tasks are not supported (found a steps/ directory)",
            dir.display()
        )));
    }

    let instruction_path = dir.join(INSTRUCTION_MD);
    let instruction = std::fs::read_to_string(&instruction_path).map_err(|e| {
        Error::invalid_input(format!(
            "{ID}: {}: cannot read the task instruction: {e}",
            instruction_path.display()
        ))
    })?;
    if instruction.trim().is_empty() {
        return Err(Error::invalid_input(format!(
            "{ID}: {}: the task instruction is empty",
            instruction_path.display()
        )));
    }
    let test_script = dir.join(TESTS_DIR).join(TEST_SCRIPT);
    if !test_script.is_file() {
        let found = if dir.join(TESTS_DIR).join("test.bat").is_file() {
            "only tests/test.bat (Windows verifiers are not supported)"
        } else {
            "nothing"
        };
        return Err(Error::invalid_input(format!(
            "{ID}: {}: expected the verifier script tests/{TEST_SCRIPT}, found {found}",
            dir.display()
        )));
    }

    let mut warnings = Warnings {
        file: file.clone(),
        list: Vec::new(),
    };
    let mut task = TaskSpec::new(task_id, instruction);
    let mut metadata = JsonMap::new();

    // Root keys.
    let schema_version = schema_version(&root)?;
    let source = root.string("source")?;
    warnings.unsupported(
        &root,
        "multi_step_reward_strategy",
        "it only applies to multi-step tasks",
    );
    let artifacts = artifacts(&root, &mut warnings)?;

    // [task] and [metadata].
    let package = match root.table("task")? {
        Some(section) => Some(package_info(&section, &mut warnings)?),
        None => None,
    };
    if let Some(section) = root.table("metadata")? {
        for key in section.unread() {
            if let Some(value) = section.get(&key) {
                metadata.insert(key, crate::fields::to_json(value));
            }
        }
    }
    if let Some(serde_json::Value::String(category)) = metadata.get("category") {
        task.category = category.clone();
    }

    // [environment].
    let environment = match root.table("environment")? {
        Some(section) => environment_decl(&section, &mut warnings)?,
        None => EnvironmentDecl::default(),
    };

    // [agent].
    let mut run_policy = None;
    if let Some(agent) = root.table("agent")? {
        task.run_timeout_seconds = agent.positive_seconds("timeout_sec")?;
        run_policy = network_policy(&agent, false)?;
        warnings.unsupported(
            &agent,
            "user",
            "commands run as the environment's default user",
        );
        warnings.unknown(&agent);
    }

    // [verifier].
    let mut verifier_env: Option<EnvironmentDecl> = None;
    let mut declared_mode = None;
    let mut evaluation_policy = None;
    if let Some(verifier) = root.table("verifier")? {
        task.evaluation_timeout_seconds = verifier.positive_seconds("timeout_sec")?;
        task.evaluation_env_variables = verifier.string_map("env")?.unwrap_or_default();
        evaluation_policy = network_policy(&verifier, false)?;
        declared_mode = match verifier.string("environment_mode")? {
            None => None,
            Some(mode) if mode == "shared" => Some(EvaluationEnvironmentMode::Reuse),
            Some(mode) if mode == "separate" => Some(EvaluationEnvironmentMode::Fresh),
            Some(mode) => {
                return Err(verifier.expected(
                    "environment_mode",
                    "\"shared\" or \"separate\"",
                    &Value::String(mode),
                ))
            }
        };
        if let Some(section) = verifier.table("environment")? {
            verifier_env = Some(environment_decl(&section, &mut warnings)?);
        }
        if declared_mode == Some(EvaluationEnvironmentMode::Reuse) && verifier_env.is_some() {
            return Err(verifier.error(
                "environment_mode",
                "expected \"separate\" (or no value) with a [verifier.environment] table, found \"shared\"",
            ));
        }
        task.artifact_collect = collect_commands(&verifier)?;
        warnings.unsupported(
            &verifier,
            "user",
            "the verifier runs as the environment's default user",
        );
        warnings.unknown(&verifier);
    }

    // [solution].
    let mut solution_env = None;
    if let Some(solution) = root.table("solution")? {
        solution_env = solution.string_map("env")?;
        warnings.unknown(&solution);
    }

    // Unknown root keys (after every table was read).
    warnings.unknown(&root);

    // Assemble the task.
    task.environment_setup = environment.setup.clone();
    task.env_variables = environment.env.clone().unwrap_or_default();
    task.baseline_network_policy = environment.baseline.clone();
    task.run_network_policy = run_policy.or_else(|| environment.baseline.clone());
    task.evaluation_environment_mode = match (declared_mode, verifier_env.is_some()) {
        (Some(mode), _) => Some(mode),
        (None, true) => Some(EvaluationEnvironmentMode::Fresh),
        (None, false) => None,
    };
    match &verifier_env {
        Some(verifier) => {
            // An explicit verifier environment is independent of the agent's: omitted values
            // do not inherit (an empty table still means the public network and no bindings).
            task.run_resources = environment.resources.clone();
            task.evaluation_resources = verifier.resources.clone();
            task.evaluation_environment_setup = Some(verifier.setup.clone());
            let verifier_baseline = verifier.baseline.clone().unwrap_or_default();
            task.evaluation_network_policy =
                evaluation_policy.or_else(|| Some(verifier_baseline.clone()));
            task.evaluation_baseline_network_policy = Some(verifier_baseline);
            task.evaluation_environment_env_variables =
                Some(verifier.env.clone().unwrap_or_default());
        }
        None => {
            task.resources = environment.resources.clone();
            task.evaluation_network_policy =
                evaluation_policy.or_else(|| environment.baseline.clone());
        }
    }
    if options.solution_env_for_agent {
        task.run_env_variables = solution_env.unwrap_or_default();
    }
    task.artifacts = Some(artifacts);

    if environment.setup.image.is_none() && dir.join("environment").join("Dockerfile").is_file() {
        warnings.note(
            "environment/Dockerfile is not built by this host (declare environment.docker_image \
             or set the environment's setup.image)"
                .to_string(),
        );
    }
    for (name, why) in [
        ("trajectory.json", "prior agent context is not seeded"),
        (
            ".harborignore",
            "tests/ and solution/ are uploaded unfiltered",
        ),
    ] {
        if dir.join(name).exists() {
            warnings.note(format!("{name} is not supported and is ignored ({why})"));
        }
    }

    // Metadata: the free-form table first, explicit declarations win.
    if let Some(source) = source {
        metadata.insert("source".into(), source.into());
    }
    if let Some(package) = package {
        metadata.insert("task".into(), package);
    }
    let mut harbor = json!({
        "task_dir": dir.display().to_string(),
        "schema_version": schema_version,
        "has_solution": dir.join(SOLUTION_DIR).is_dir(),
    });
    if let Some(workdir) = &environment.setup.workdir {
        harbor["workdir"] = workdir.clone().into();
    }
    metadata.insert("harbor".into(), harbor);
    metadata.insert("harbor_raw".into(), table_to_json(&table));
    task.metadata = metadata;
    task.load_warnings = warnings.list;
    Ok(task)
}

/// `schema_version`, or its legacy alias `version` (both given: they must agree).
fn schema_version(root: &Section) -> Result<Option<String>> {
    let current = root.non_empty_string("schema_version")?;
    let legacy = root.non_empty_string("version")?;
    match (current, legacy) {
        (Some(current), Some(legacy)) if current != legacy => Err(root.error(
            "version",
            format!(
                "expected the legacy alias of schema_version to match \"{current}\", found \"{legacy}\""
            ),
        )),
        (current, legacy) => Ok(current.or(legacy)),
    }
}

/// `[task]` package information (kept as declared, after type checks).
fn package_info(section: &Section, warnings: &mut Warnings) -> Result<serde_json::Value> {
    let mut out = JsonMap::new();
    for key in ["name", "version"] {
        if let Some(value) = section.non_empty_string(key)? {
            out.insert(key.into(), value.into());
        }
    }
    if let Some(description) = section.string("description")? {
        out.insert("description".into(), description.into());
    }
    if let Some(keywords) = section.string_list("keywords")? {
        out.insert("keywords".into(), keywords.into());
    }
    match section.get("authors") {
        None => {}
        Some(Value::Array(items)) => {
            let mut authors = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Value::Table(table) = item else {
                    return Err(section.expected(
                        &format!("authors[{i}]"),
                        "a table with name and email",
                        item,
                    ));
                };
                let author = section.child(section.key(&format!("authors[{i}]")), table);
                let mut entry = JsonMap::new();
                for key in ["name", "email"] {
                    if let Some(value) = author.string(key)? {
                        entry.insert(key.into(), value.into());
                    }
                }
                warnings.unknown(&author);
                authors.push(serde_json::Value::Object(entry));
            }
            out.insert("authors".into(), authors.into());
        }
        Some(other) => return Err(section.expected("authors", "an array of tables", other)),
    }
    warnings.unknown(section);
    Ok(serde_json::Value::Object(out))
}

/// One environment table: setup, resources, baseline policy and bindings.
fn environment_decl(section: &Section, warnings: &mut Warnings) -> Result<EnvironmentDecl> {
    let workdir = section.non_empty_string("workdir")?;
    if let Some(workdir) = &workdir {
        if !workdir.starts_with('/') {
            return Err(section.error(
                "workdir",
                format!("expected an absolute POSIX path, found {workdir:?}"),
            ));
        }
    }
    let os = section.string("os")?;
    if let Some(os) = &os {
        if os != "linux" && os != "windows" {
            return Err(section.expected(
                "os",
                "\"linux\" or \"windows\"",
                &Value::String(os.clone()),
            ));
        }
    }
    let setup = EnvironmentSetup {
        image: section.non_empty_string("docker_image")?,
        build_timeout_seconds: section.positive_seconds("build_timeout_sec")?,
        workdir,
        os,
    };
    let resources = resources(section, warnings)?;
    let baseline = network_policy(section, true)?;
    let env = section.string_map("env")?;
    warnings.unsupported(section, "gpu_types", "GPU models are not selected");
    warnings.unsupported(section, "tpu", "TPUs are not supported");
    warnings.unsupported(section, "skills_dir", "skills are not installed");
    warnings.unsupported(section, "healthcheck", "health checks are not run");
    warnings.unsupported(section, "mcp_servers", "MCP servers are not started");
    warnings.unknown(section);
    Ok(EnvironmentDecl {
        setup,
        resources,
        baseline,
        env,
    })
}

/// `network_mode` / `allowed_hosts` (and, for environments, legacy `allow_internet`).
fn network_policy(section: &Section, allow_legacy: bool) -> Result<Option<NetworkPolicy>> {
    let modes = "\"public\", \"no-network\" or \"allowlist\"";
    let mode = match section.get("network_mode") {
        None => None,
        Some(Value::String(s)) => Some(
            s.parse::<NetworkMode>()
                .map_err(|_| section.expected("network_mode", modes, &Value::String(s.clone())))?,
        ),
        Some(other) => return Err(section.expected("network_mode", modes, other)),
    };
    let legacy = if allow_legacy {
        section.boolean("allow_internet")?.map(|allowed| {
            if allowed {
                NetworkMode::Public
            } else {
                NetworkMode::NoNetwork
            }
        })
    } else {
        None
    };
    let mode = match (mode, legacy) {
        (Some(mode), Some(legacy)) if mode != legacy => {
            return Err(section.error(
                "allow_internet",
                format!(
                    "expected a value consistent with network_mode = \"{mode}\", found {} (it means \"{legacy}\")",
                    legacy == NetworkMode::Public
                ),
            ))
        }
        (mode, legacy) => mode.or(legacy),
    };
    let hosts = section.string_list("allowed_hosts")?;
    let Some(mode) = mode else {
        return match hosts {
            Some(_) => Err(section.error(
                "allowed_hosts",
                "expected network_mode = \"allowlist\" alongside it, found no network_mode",
            )),
            None => Ok(None),
        };
    };
    if mode != NetworkMode::Allowlist && hosts.is_some() {
        return Err(section.error(
            "allowed_hosts",
            format!(
                "expected only with network_mode = \"allowlist\", found network_mode = \"{mode}\""
            ),
        ));
    }
    let policy = NetworkPolicy {
        network_mode: mode,
        allowed_hosts: hosts.unwrap_or_default(),
    };
    policy.normalized().map(Some).map_err(|e| {
        let key = if mode == NetworkMode::Allowlist {
            "allowed_hosts"
        } else {
            "network_mode"
        };
        section.error(key, e)
    })
}

/// Parses a legacy Harbor size string (`"2G"`, `"512M"`, `"1.5GB"`, `"10Gi"`) into MiB.
pub fn parse_size_mb(text: &str) -> Option<u64> {
    let upper = text.trim().to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('I'))
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, factor) = match body.chars().last()? {
        'T' => (&body[..body.len() - 1], 1024.0 * 1024.0),
        'G' => (&body[..body.len() - 1], 1024.0),
        'M' => (&body[..body.len() - 1], 1.0),
        'K' => (&body[..body.len() - 1], 1.0 / 1024.0),
        _ => return None,
    };
    let value: f64 = number.trim().parse().ok()?;
    let mb = (value * factor).floor();
    (value.is_finite() && mb >= 1.0 && mb < u64::MAX as f64).then_some(mb as u64)
}

/// A new `*_mb` field and its legacy size-string alias; conflicting values are an error.
fn size_field(
    section: &Section,
    warnings: &mut Warnings,
    new_key: &str,
    legacy_key: &str,
) -> Result<Option<u64>> {
    let current = section.positive_integer(new_key)?;
    let legacy = match section.get(legacy_key) {
        None => None,
        Some(Value::String(s)) => Some(parse_size_mb(s).ok_or_else(|| {
            section.expected(
                legacy_key,
                "a size string such as \"2G\" or \"512M\"",
                &Value::String(s.clone()),
            )
        })?),
        Some(other) => {
            return Err(section.expected(
                legacy_key,
                "a size string such as \"2G\" or \"512M\"",
                other,
            ))
        }
    };
    match (current, legacy) {
        (Some(current), Some(legacy)) if current != legacy => Err(section.error(
            legacy_key,
            format!(
                "expected the same size as {} = {current}, found {legacy} MiB (conflicting values)",
                section.key(new_key)
            ),
        )),
        (Some(current), Some(_)) => {
            warnings.note(format!(
                "legacy field `{}` is ignored (`{}` is given)",
                section.key(legacy_key),
                section.key(new_key)
            ));
            Ok(Some(current))
        }
        (current, legacy) => Ok(current.or(legacy)),
    }
}

/// `cpus`, `memory_mb`, `storage_mb`, `gpus` and the legacy size strings, in MiB.
fn resources(section: &Section, warnings: &mut Warnings) -> Result<Option<ResourceRequirements>> {
    let resources =
        ResourceRequirements {
            cpu: section.positive_number("cpus")?,
            memory_mb: size_field(section, warnings, "memory_mb", "memory")?,
            storage_mb: size_field(section, warnings, "storage_mb", "storage")?,
            // Zero GPUs is Harbor's default: no requirement.
            gpu: match section.non_negative_integer("gpus")? {
                None | Some(0) => None,
                Some(n) => Some(u32::try_from(n).map_err(|_| {
                    section.expected("gpus", "a GPU count", &Value::Integer(n as i64))
                })?),
            },
            ..ResourceRequirements::default()
        };
    Ok((resources != ResourceRequirements::default()).then_some(resources))
}
