//! `[[steps]]` (multi-step tasks), validated exactly as Harbor validates `StepConfig`:
//! a portable, unique `name`, `agent` / `verifier` tables of the task-level schema,
//! `min_reward` (a number, or a table of numbers), a `healthcheck` and `artifacts`.
//! The host runs the steps in order in the task environment, each step's verifier where
//! Harbor runs it (the task environment, or a fresh one holding that step's artifacts, of the
//! step's own image when it has one); module `step_map` turns the declarations into
//! `TaskStep`s.

use std::collections::{BTreeMap, BTreeSet};

use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, ArtifactSpec, EvaluationEnvironmentMode, NetworkPolicy,
};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::artifacts::step_artifacts;
use crate::environment::EnvironmentDecl;
use crate::fields::{number_of, Section, Warnings};
use crate::healthcheck::{self, Healthcheck};
use crate::phases::{agent_decl, verifier_decl};

/// What one `[[steps]]` entry declares that the host applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepDecl {
    /// `name`.
    pub(crate) name: String,
    /// `min_reward`: thresholds by reward key (a number gates on `reward`).
    pub(crate) min_reward: Option<BTreeMap<String, f64>>,
    /// `verifier.env`.
    pub(crate) verifier_env: BTreeMap<String, String>,
    /// `agent.timeout_sec` (the task's `[agent]` value when absent).
    pub(crate) agent_timeout_seconds: Option<f64>,
    /// `verifier.timeout_sec` (the task's `[verifier]` value when absent).
    pub(crate) verifier_timeout_seconds: Option<f64>,
    /// The step's own `verifier.environment_mode`, when it sets one.
    pub(crate) verifier_mode: Option<EvaluationEnvironmentMode>,
    /// `[steps.verifier.environment]`, the step's own verifier environment.
    pub(crate) verifier_environment: Option<EnvironmentDecl>,
    /// `agent.user`: who the step's agent runs as (its `setup.sh` and health check too).
    pub(crate) agent_user: Option<String>,
    /// `verifier.user`: who the step's verifier runs as.
    pub(crate) verifier_user: Option<String>,
    /// `agent.network_mode` / `allowed_hosts`: the step's agent-phase policy.
    pub(crate) agent_policy: Option<NetworkPolicy>,
    /// `verifier.network_mode` / `allowed_hosts`: the step's verifier-phase policy.
    pub(crate) verifier_policy: Option<NetworkPolicy>,
    /// `[[steps.verifier.collect]]`, run after the task's before the step's artifacts are
    /// collected.
    pub(crate) collect: Vec<ArtifactCollectCommand>,
    /// `artifacts`: appended to the task's after this step, each with its key.
    pub(crate) artifacts: Vec<(String, ArtifactSpec)>,
    /// `healthcheck`: run after the step's workdir and `setup.sh`, before its agent.
    pub(crate) healthcheck: Option<Healthcheck>,
}

/// The steps of `[[steps]]` (`None` when absent; an empty list is a single-step task, as in
/// Harbor). Step fields the host does not apply per step are warned about.
pub(crate) fn steps(root: &Section, warnings: &mut Warnings) -> Result<Option<Vec<StepDecl>>> {
    let items = match root.get("steps") {
        None => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(root.expected("steps", "an array of tables", other)),
    };
    // Warnings of a step list that turns out invalid are not reported (the task is refused).
    let mut found = Warnings {
        file: warnings.file.clone(),
        list: Vec::new(),
        refusals: Vec::new(),
    };
    let mut decls = Vec::with_capacity(items.len());
    let mut keys = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("steps[{i}]");
        let Value::Table(table) = item else {
            return Err(root.expected(&key, "a table", item));
        };
        let step = root.child(key.clone(), table);
        let name = step_name(&step)?;
        let mut decl = StepDecl {
            name: name.clone(),
            min_reward: None,
            verifier_env: BTreeMap::new(),
            agent_timeout_seconds: None,
            verifier_timeout_seconds: None,
            verifier_mode: None,
            verifier_environment: None,
            agent_user: None,
            verifier_user: None,
            agent_policy: None,
            verifier_policy: None,
            collect: Vec::new(),
            artifacts: Vec::new(),
            healthcheck: None,
        };
        if let Some(agent) = step.table("agent")? {
            let agent = agent_decl(&agent, &mut found)?;
            decl.agent_timeout_seconds = agent.timeout_seconds;
            decl.agent_policy = agent.network_policy;
            decl.agent_user = agent.user;
        }
        if let Some(verifier) = step.table("verifier")? {
            let verifier = verifier_decl(&verifier, &mut found)?;
            decl.verifier_env = verifier.env_variables;
            decl.verifier_timeout_seconds = verifier.timeout_seconds;
            decl.verifier_mode = verifier.mode;
            decl.verifier_environment = verifier.environment;
            decl.verifier_policy = verifier.network_policy;
            decl.collect = verifier.collect;
            decl.verifier_user = verifier.user;
        }
        decl.min_reward = min_reward(&step)?;
        if let Some(table) = step.table("healthcheck")? {
            decl.healthcheck = Some(healthcheck::parse(&table)?);
        }
        decl.artifacts = step_artifacts(&step, &mut found)?
            .into_iter()
            .map(|(key, spec)| (step.key(&key), spec))
            .collect();
        // Harbor compares names case-insensitively (and after Unicode normalisation).
        if !keys.insert(name.to_lowercase()) {
            return Err(step.error(
                "name",
                format!("expected a unique step name (case-insensitively), found {name:?} again"),
            ));
        }
        decls.push(decl);
    }
    warnings.list.append(&mut found.list);
    warnings.refusals.append(&mut found.refusals);
    Ok(Some(decls))
}

/// `name`: one portable directory name (Harbor's `validate_step_name`).
fn step_name(step: &Section) -> Result<String> {
    let Some(name) = step.string("name")? else {
        return Err(step.file_error(format!(
            "field `{}`: expected a step name, found none",
            step.key("name")
        )));
    };
    let invalid_char = |c: char| "<>:\"/\\|?*".contains(c) || c < '\u{20}' || c == '\u{7f}';
    let stem = name
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ');
    let portable = !name.trim().is_empty()
        && name != "."
        && name != ".."
        && !name.ends_with('.')
        && !name.ends_with(' ')
        && !name.chars().any(invalid_char)
        && !windows_device(stem)
        && name.len() <= 255;
    if !portable {
        return Err(step.error(
            "name",
            format!(
                "expected a portable directory name (no path separators, control or reserved characters, device names or trailing dots or spaces; at most 255 bytes), found {name:?}"
            ),
        ));
    }
    Ok(name)
}

/// Windows device names (`CON`, `NUL`, `COM1`, ...), in any case.
fn windows_device(stem: &str) -> bool {
    let upper = stem.to_uppercase();
    if ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"].contains(&upper.as_str()) {
        return true;
    }
    let mut chars = upper.chars();
    let prefix: String = chars.by_ref().take(3).collect();
    let rest: Vec<char> = chars.collect();
    (prefix == "COM" || prefix == "LPT")
        && rest.len() == 1
        && rest
            .first()
            .is_some_and(|c| ('1'..='9').contains(c) || "¹²³".contains(*c))
}

/// `min_reward`: a number (the threshold of `reward`), or a table of numbers (per reward
/// key).
fn min_reward(step: &Section) -> Result<Option<BTreeMap<String, f64>>> {
    match step.get("min_reward") {
        None => Ok(None),
        Some(Value::Table(table)) => {
            let mut thresholds = BTreeMap::new();
            for (key, value) in table {
                let Some(threshold) = number_of(value) else {
                    return Err(step.expected(&format!("min_reward.{key}"), "a number", value));
                };
                thresholds.insert(key.clone(), threshold);
            }
            Ok(Some(thresholds))
        }
        Some(value) => match number_of(value) {
            Some(threshold) => Ok(Some(BTreeMap::from([("reward".to_string(), threshold)]))),
            None => Err(step.expected("min_reward", "a number or a table of numbers", value)),
        },
    }
}
