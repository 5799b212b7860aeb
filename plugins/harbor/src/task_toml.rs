//! One Harbor task directory → one `TaskSpec`: `task.toml` parsing and the field mapping of
//! seed 004 ("Harbor tasks and execution requirements").
//!
//! | Harbor declaration | `TaskSpec` field |
//! | - | - |
//! | `agent.timeout_sec` | `run_timeout_seconds` |
//! | `verifier.timeout_sec` | `evaluation_timeout_seconds` |
//! | `environment.docker_image` / `workdir` / `build_timeout_sec` / `os` | `environment_setup` |
//! | `environment/Dockerfile` (no `docker_image`) | `environment_setup.build_context` (module `image`) |
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
//! | `agent.user` / `verifier.user` | `run_user` / `evaluation_user` |
//! | `[[steps]]` | `steps` (module `step_map`) |
//! | `source` / `[task]` / `[metadata]` | `metadata["source"]` / `metadata["task"]` / merged into `metadata` |
//!
//! Only explicitly declared values are mapped (no implicit Harbor defaults). When a separate
//! verifier environment is declared, the agent's resources go to `run_resources` and the
//! verifier's to `evaluation_resources`, so neither inherits the other's. Everything else that
//! Harbor defines but this host does not act on becomes a `load_warnings` entry.

use std::collections::BTreeMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::{
    ArtifactSpec, EvaluationEnvironmentMode, JsonMap, TaskSpec,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;
use toml::Value;

use crate::artifacts::artifacts;
use crate::environment::{environment_decl, EnvironmentDecl};
use crate::fields::{table_to_json, to_json, Section, Warnings};
use crate::image;
use crate::instruction::read_instruction;
use crate::names::{
    task_id_of, ID, INSTRUCTION_MD, SOLUTION_DIR, STEPS_DIR, TASK_TOML, TESTS_DIR, TEST_SCRIPT,
};
use crate::phases::{agent_decl, verifier_decl, AgentDecl, VerifierDecl};
use crate::step_map::{task_steps, TaskSide};
use crate::steps::{steps, StepDecl};
use crate::unmapped;

/// Loader switches derived from the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Map `solution.env` to `run_env_variables` (oracle harness or `solution_env_for_agent`).
    pub solution_env_for_agent: bool,
}

/// Loads the task directory `dir` (an absolute path).
pub fn load_task(dir: &Path, options: LoadOptions) -> Result<TaskSpec> {
    let task_id = task_id_of(dir)?;
    let toml_path = dir.join(TASK_TOML);
    let file = toml_path.display().to_string();
    let table = read_toml(&toml_path, &file)?;
    let root = Section::root(&file, &table);
    let mut warnings = Warnings {
        file: file.clone(),
        list: Vec::new(),
        refusals: Vec::new(),
    };
    let decl = TaskDecl::read(&root, &mut warnings)?;
    let step_decls = decl.steps.as_deref().filter(|steps| !steps.is_empty());
    if step_decls.is_none() && dir.join(STEPS_DIR).is_dir() {
        warnings.note(
            "the steps/ directory is ignored (task.toml declares no [[steps]], so Harbor runs \
             the task as a single step)"
                .to_string(),
        );
    }
    // A multi-step task has no instruction of its own (Harbor reads none).
    let instruction = match step_decls {
        None => {
            let instruction = read_instruction(&dir.join(INSTRUCTION_MD), "task")?;
            require_test_script(dir, &root, &decl)?;
            instruction
        }
        Some(_) => {
            steps_verifier_os(dir, &root, &decl)?;
            String::new()
        }
    };
    let mut task = TaskSpec::new(task_id, instruction);
    map_phases(&mut task, &decl, options);
    map_environments(&mut task, &decl);
    let bundled = image::apply(dir, &mut task);
    let mut unsupported = None;
    if let Some(step_decls) = step_decls {
        let side = TaskSide {
            dir,
            task: &task,
            artifacts: &decl.artifacts,
            separate: task.evaluation_environment_mode == Some(EvaluationEnvironmentMode::Fresh),
            bundled,
        };
        let mapped = task_steps(&side, step_decls, &mut warnings)?;
        task.steps = mapped.steps;
        unsupported = mapped.unsupported;
    }
    let unsupported = unsupported.or_else(|| warnings.refusals.first().cloned());
    note_unsupported_files(dir, &mut warnings);
    if let Some(serde_json::Value::String(category)) = decl.metadata.get("category") {
        task.category = category.clone();
    }
    task.metadata = metadata(dir, &decl, &table);
    if let (true, Some(harbor)) = (bundled, task.metadata.get_mut("harbor")) {
        harbor["verifier_bundled"] = true.into();
    }
    if let (Some(reason), Some(harbor)) = (unsupported, task.metadata.get_mut("harbor")) {
        harbor["unsupported"] = format!("{file}: {reason}").into();
    }
    task.load_warnings = warnings.list;
    Ok(task)
}

/// Reads and parses `task.toml` (a syntax error names its line).
fn read_toml(path: &Path, file: &str) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid_input(format!("{ID}: {file}: cannot read: {e}")))?;
    text.parse().map_err(|e: toml::de::Error| {
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
    })
}

/// The OS the verifier runs on, as Harbor resolves it: the agent environment's, or a
/// separate verifier environment's (its own when it names an image or `tests/` has a
/// Dockerfile, else its declared OS or the agent environment's), with the field declaring it.
fn verifier_os<'a>(dir: &Path, decl: &'a TaskDecl) -> Option<(&'a str, &'static str)> {
    let agent_os = decl
        .environment
        .setup
        .os
        .as_deref()
        .map(|os| (os, "environment.os"));
    let separate = match decl.verifier.mode {
        Some(mode) => mode == EvaluationEnvironmentMode::Fresh,
        None => decl.verifier.environment.is_some(),
    };
    match (&decl.verifier.environment, separate) {
        (Some(verifier), true) => {
            let bundled = verifier.setup.image.is_some()
                || ["Dockerfile", "docker-compose.yaml"]
                    .iter()
                    .any(|f| dir.join(TESTS_DIR).join(f).is_file());
            match verifier.setup.os.as_deref() {
                Some(os) => Some((os, "verifier.environment.os")),
                None if bundled => None,
                None => agent_os,
            }
        }
        _ => agent_os,
    }
}

/// Refuses a multi-step task whose verifier runs on Windows (each step's `test.sh` runs with
/// bash).
fn steps_verifier_os(dir: &Path, root: &Section, decl: &TaskDecl) -> Result<()> {
    match verifier_os(dir, decl) {
        Some((os @ "windows", field)) => Err(root.file_error(format!(
            "field `{field}`: expected \"linux\" for the verifier (each step's test.sh runs with \
             bash), found \"{os}\""
        ))),
        _ => Ok(()),
    }
}

/// Requires the verifier script `tests/test.sh` on Linux (a Windows verifier is refused:
/// Harbor would need `tests/test.bat`, which this host cannot run).
fn require_test_script(dir: &Path, root: &Section, decl: &TaskDecl) -> Result<()> {
    if let Some((os @ "windows", field)) = verifier_os(dir, decl) {
        let found = if dir.join(TESTS_DIR).join("test.bat").is_file() {
            "tests/test.bat: Windows verifiers are not supported"
        } else {
            "no tests/test.bat, which Harbor needs for a Windows verifier"
        };
        return Err(root.file_error(format!(
            "field `{field}`: expected \"linux\" for the verifier (it runs tests/{TEST_SCRIPT} with bash), found \"{os}\" and {found}"
        )));
    }
    let test_script = dir.join(TESTS_DIR).join(TEST_SCRIPT);
    if test_script.is_file() {
        return Ok(());
    }
    let found = if dir.join(TESTS_DIR).join("test.bat").is_file() {
        "only tests/test.bat (Windows verifiers are not supported)"
    } else {
        "nothing"
    };
    Err(Error::invalid_input(format!(
        "{ID}: {}: expected the verifier script tests/{TEST_SCRIPT}, found {found}",
        dir.display()
    )))
}

/// Everything `task.toml` declares, type-checked but not yet mapped onto the task.
struct TaskDecl {
    /// `schema_version` (or its legacy alias `version`).
    schema_version: Option<String>,
    /// The root `source`.
    source: Option<String>,
    /// The root `artifacts` (the convention directory included).
    artifacts: Vec<ArtifactSpec>,
    /// `[task]` package information.
    package: Option<serde_json::Value>,
    /// The free-form `[metadata]` table.
    metadata: JsonMap,
    /// `[environment]` (empty when absent).
    environment: EnvironmentDecl,
    /// `[agent]` (empty when absent).
    agent: AgentDecl,
    /// `[verifier]` (empty when absent).
    verifier: VerifierDecl,
    /// `solution.env`.
    solution_env: Option<BTreeMap<String, String>>,
    /// `[[steps]]`.
    steps: Option<Vec<StepDecl>>,
    /// `multi_step_reward_strategy`.
    reward_strategy: Option<String>,
}

impl TaskDecl {
    /// Reads the root table and its sub-tables. The order of the reads fixes which error is
    /// reported first and the order of the warnings; unknown root keys are warned about last.
    fn read(root: &Section, warnings: &mut Warnings) -> Result<Self> {
        let schema_version = schema_version(root, warnings)?;
        let source = root.string("source")?;
        let reward_strategy = unmapped::reward_strategy(root)?;
        let steps = steps(root, warnings)?;
        if steps.as_ref().is_none_or(Vec::is_empty) {
            warnings.unsupported(
                root,
                "multi_step_reward_strategy",
                "it only applies to multi-step tasks",
            );
        }
        let artifacts = artifacts(root, warnings)?;
        let package = match root.table("task")? {
            Some(section) => Some(package_info(&section, warnings)?),
            None => None,
        };
        let metadata = free_metadata(root)?;
        let environment = match root.table("environment")? {
            Some(section) => environment_decl(&section, warnings)?,
            None => EnvironmentDecl::default(),
        };
        let agent = match root.table("agent")? {
            Some(section) => agent_decl(&section, warnings)?,
            None => AgentDecl::default(),
        };
        let verifier = match root.table("verifier")? {
            Some(section) => verifier_decl(&section, warnings)?,
            None => VerifierDecl::default(),
        };
        let solution_env = match root.table("solution")? {
            Some(solution) => {
                let env = solution.string_map("env")?;
                warnings.unknown(&solution);
                env
            }
            None => None,
        };
        warnings.unknown(root);
        Ok(TaskDecl {
            schema_version,
            source,
            artifacts,
            package,
            metadata,
            environment,
            agent,
            verifier,
            solution_env,
            steps,
            reward_strategy,
        })
    }
}

/// The free-form `[metadata]` table, as JSON.
fn free_metadata(root: &Section) -> Result<JsonMap> {
    let mut metadata = JsonMap::new();
    if let Some(section) = root.table("metadata")? {
        for key in section.unread() {
            if let Some(value) = section.get(&key) {
                metadata.insert(key, to_json(value));
            }
        }
    }
    Ok(metadata)
}

/// Timeouts, phase bindings, collect commands and artifacts.
fn map_phases(task: &mut TaskSpec, decl: &TaskDecl, options: LoadOptions) {
    task.run_timeout_seconds = decl.agent.timeout_seconds;
    task.evaluation_timeout_seconds = decl.verifier.timeout_seconds;
    task.evaluation_env_variables = decl.verifier.env_variables.clone();
    task.artifact_collect = decl.verifier.collect.clone();
    task.run_user = decl.agent.user.clone();
    task.evaluation_user = decl.verifier.user.clone();
    if options.solution_env_for_agent {
        task.run_env_variables = decl.solution_env.clone().unwrap_or_default();
    }
    task.artifacts = Some(decl.artifacts.clone());
}

/// The agent's environment and, when declared, the separate verifier environment: setup,
/// bindings, network policies, resources and the evaluation environment mode.
fn map_environments(task: &mut TaskSpec, decl: &TaskDecl) {
    let environment = &decl.environment;
    let verifier = &decl.verifier;
    task.environment_setup = environment.setup.clone();
    task.env_variables = environment.env.clone().unwrap_or_default();
    task.mcp_servers = environment.mcp_servers.clone();
    task.skills_dir = environment.skills_dir.clone();
    task.baseline_network_policy = environment.baseline.clone();
    task.run_network_policy = decl
        .agent
        .network_policy
        .clone()
        .or_else(|| environment.baseline.clone());
    task.evaluation_environment_mode = match (verifier.mode, verifier.environment.is_some()) {
        (Some(mode), _) => Some(mode),
        (None, true) => Some(EvaluationEnvironmentMode::Fresh),
        (None, false) => None,
    };
    let evaluation_policy = verifier.network_policy.clone();
    match &verifier.environment {
        Some(separate) => {
            // An explicit verifier environment is independent of the agent's: omitted values
            // do not inherit (an empty table still means the public network and no bindings).
            task.run_resources = environment.resources.clone();
            task.evaluation_resources = separate.resources.clone();
            task.evaluation_environment_setup = Some(separate.setup.clone());
            let verifier_baseline = separate.baseline.clone().unwrap_or_default();
            task.evaluation_network_policy =
                evaluation_policy.or_else(|| Some(verifier_baseline.clone()));
            task.evaluation_baseline_network_policy = Some(verifier_baseline);
            task.evaluation_environment_env_variables =
                Some(separate.env.clone().unwrap_or_default());
        }
        None => {
            task.resources = environment.resources.clone();
            task.evaluation_network_policy =
                evaluation_policy.or_else(|| environment.baseline.clone());
        }
    }
}

/// Warnings about files of the task directory this host does not act on.
fn note_unsupported_files(dir: &Path, warnings: &mut Warnings) {
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
}

/// `TaskSpec.metadata`: the free-form `[metadata]` table first, then the explicit declarations
/// (`source`, `[task]`, which win), the loader's `harbor` record and the raw file.
fn metadata(dir: &Path, decl: &TaskDecl, table: &toml::Table) -> JsonMap {
    let mut metadata = decl.metadata.clone();
    if let Some(source) = &decl.source {
        metadata.insert("source".into(), source.clone().into());
    }
    if let Some(package) = &decl.package {
        metadata.insert("task".into(), package.clone());
    }
    let mut harbor = json!({
        "task_dir": dir.display().to_string(),
        "schema_version": decl.schema_version,
        "has_solution": dir.join(SOLUTION_DIR).is_dir(),
    });
    if let Some(workdir) = &decl.environment.setup.workdir {
        harbor["workdir"] = workdir.clone().into();
    }
    if let Some(healthcheck) = &decl.environment.healthcheck {
        harbor["healthcheck"] = json!(healthcheck);
    }
    if decl.steps.as_ref().is_some_and(|s| !s.is_empty()) {
        // Harbor's default for a multi-step task.
        harbor["multi_step_reward_strategy"] =
            decl.reward_strategy.as_deref().unwrap_or("mean").into();
    }
    metadata.insert("harbor".into(), harbor);
    metadata.insert("harbor_raw".into(), table_to_json(table));
    metadata
}

/// `schema_version`, or its legacy alias `version` (Harbor renames `version` only when
/// `schema_version` is absent; otherwise `version` is ignored, with a warning here).
fn schema_version(root: &Section, warnings: &mut Warnings) -> Result<Option<String>> {
    if root.has("schema_version") {
        if root.has("version") {
            root.get("version");
            warnings
                .note("legacy field `version` is ignored (`schema_version` is given)".to_string());
        }
        return root.string("schema_version");
    }
    root.string("version")
}

/// `[task]` package information (kept as declared, after type checks).
fn package_info(section: &Section, warnings: &mut Warnings) -> Result<serde_json::Value> {
    let mut out = JsonMap::new();
    let Some(name) = section.string("name")? else {
        return Err(section.file_error(format!(
            "field `{}`: expected a package name in org/name format, found none",
            section.key("name")
        )));
    };
    if !package_name_ok(&name) {
        return Err(section.error(
            "name",
            format!(
                "expected a package name in org/name format (letters, digits, `.`, `_`, `-`; not starting with a dot, no `..`), found {name:?}"
            ),
        ));
    }
    out.insert("name".into(), name.into());
    match section.get("version") {
        None => {}
        Some(Value::String(v)) if v.is_empty() => {
            return Err(section.error(
                "version",
                "expected a non-empty string, found an empty string",
            ))
        }
        Some(Value::String(v)) => {
            out.insert("version".into(), v.clone().into());
        }
        Some(other) => return Err(section.expected("version", "a string", other)),
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
                if !author.has("name") {
                    return Err(author.file_error(format!(
                        "field `{}`: expected an author name, found none",
                        author.key("name")
                    )));
                }
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

/// Harbor's `ORG_NAME_PATTERN` (`^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$`,
/// where `$` also matches before a final newline) and no `..`.
fn package_name_ok(name: &str) -> bool {
    let name = name.strip_suffix('\n').unwrap_or(name);
    let part_ok = |part: &str| {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    !name.contains("..")
        && name
            .split_once('/')
            .is_some_and(|(org, short)| part_ok(org) && part_ok(short))
}
