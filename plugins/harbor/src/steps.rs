//! `[[steps]]` (multi-step tasks), validated exactly as Harbor validates `StepConfig`:
//! a portable, unique `name`, `agent` / `verifier` tables of the task-level schema,
//! `min_reward` (a number, or a table of numbers), a `healthcheck` and `artifacts`.
//! The host does not run multi-step tasks yet: a task with steps is refused after this
//! validation, so an invalid step is reported as such.

use std::collections::BTreeSet;

use agentcompass_plugin_api::Result;
use toml::Value;

use crate::artifacts::step_artifacts;
use crate::fields::{number_of, Section, Warnings};
use crate::phases::{agent_decl, verifier_decl};
use crate::unmapped::healthcheck_config;

/// The step names of `[[steps]]` (`None` when absent; an empty list is a single-step task,
/// as in Harbor).
pub(crate) fn steps(root: &Section) -> Result<Option<Vec<String>>> {
    let items = match root.get("steps") {
        None => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(root.expected("steps", "an array of tables", other)),
    };
    // Warnings about steps are not reported: a task with steps is refused.
    let mut ignored = Warnings {
        file: String::new(),
        list: Vec::new(),
    };
    let mut names = Vec::with_capacity(items.len());
    let mut keys = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("steps[{i}]");
        let Value::Table(table) = item else {
            return Err(root.expected(&key, "a table", item));
        };
        let step = root.child(key.clone(), table);
        let name = step_name(&step)?;
        if let Some(agent) = step.table("agent")? {
            agent_decl(&agent, &mut ignored)?;
        }
        if let Some(verifier) = step.table("verifier")? {
            verifier_decl(&verifier, &mut ignored)?;
        }
        min_reward(&step)?;
        if let Some(healthcheck) = step.table("healthcheck")? {
            healthcheck_config(&healthcheck)?;
        }
        step_artifacts(&step, &mut ignored)?;
        // Harbor compares names case-insensitively (and after Unicode normalisation).
        if !keys.insert(name.to_lowercase()) {
            return Err(step.error(
                "name",
                format!("expected a unique step name (case-insensitively), found {name:?} again"),
            ));
        }
        names.push(name);
    }
    Ok(Some(names))
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

/// `min_reward`: a number, or a table of numbers (per reward key).
fn min_reward(step: &Section) -> Result<()> {
    match step.get("min_reward") {
        None => Ok(()),
        Some(Value::Table(table)) => {
            for (key, value) in table {
                if number_of(value).is_none() {
                    return Err(step.expected(&format!("min_reward.{key}"), "a number", value));
                }
            }
            Ok(())
        }
        Some(value) if number_of(value).is_some() => Ok(()),
        Some(other) => Err(step.expected("min_reward", "a number or a table of numbers", other)),
    }
}
