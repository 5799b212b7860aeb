//! Environment-variable bindings: the common, run-only, evaluation-only and fresh-verifier
//! startup maps of a plan, and the `${NAME}` / `${NAME:-default}` templates inside them,
//! resolved from the launcher's environment only when a command runs.

use std::collections::{BTreeMap, BTreeSet};

use agentcompass_plugin_api::contracts::ExecutionPlan;

/// A binding that cannot be resolved: names the variables (never values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// Referenced variables are unset or empty in the launcher's environment.
    #[error("environment bindings refer to unset variables: {} (export them before the run)", .0.iter().cloned().collect::<Vec<_>>().join(", "))]
    Missing(BTreeSet<String>),
    /// A template is malformed.
    #[error("environment binding `{key}`: {message}")]
    Malformed {
        /// The binding's name.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The phase a set of bindings is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Task preparation, result recovery, cleanup, artifact commands: common bindings only.
    Common,
    /// Agent setup and run: common ⊕ run-only.
    Run,
    /// Evaluator commands: common ⊕ evaluation-only.
    Evaluation,
    /// Fresh-verifier startup: its own baseline (see the planner).
    FreshStartup,
}

/// The unresolved bindings of `phase` in `plan` (phase maps override common ones per key).
pub fn phase_bindings(plan: &ExecutionPlan, phase: Phase) -> BTreeMap<String, String> {
    let env = &plan.environment;
    match phase {
        Phase::Common => env.env_variables.clone(),
        Phase::Run => overlay(&env.env_variables, &env.run_env_variables),
        Phase::Evaluation => {
            let base = plan.evaluation_environment.as_ref().unwrap_or(env);
            overlay(&base.env_variables, &env.evaluation_env_variables)
        }
        Phase::FreshStartup => plan
            .evaluation_environment
            .as_ref()
            .map(|e| e.env_variables.clone())
            .unwrap_or_default(),
    }
}

fn overlay(
    base: &BTreeMap<String, String>,
    over: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = base.clone();
    out.extend(over.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

enum Piece<'a> {
    Text(&'a str),
    Var {
        name: &'a str,
        default: Option<&'a str>,
    },
}

fn parse<'t>(key: &str, template: &'t str) -> Result<Vec<Piece<'t>>, BindingError> {
    let malformed = |message: &str| BindingError::Malformed {
        key: key.to_string(),
        message: message.to_string(),
    };
    if template.contains('\0') {
        return Err(malformed("values must not contain NUL"));
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        pieces.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| malformed("unterminated ${"))?;
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(malformed(&format!(
                "`${{{body}}}` is not ${{NAME}} or ${{NAME:-default}}"
            )));
        }
        pieces.push(Piece::Var { name, default });
        rest = &after[end + 1..];
    }
    pieces.push(Piece::Text(rest));
    Ok(pieces)
}

/// Resolves every template of `bindings` from `env`. An unset or empty variable without a
/// default is an error listing every such name (values are never included).
pub fn resolve_bindings(
    bindings: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, BindingError> {
    resolve(bindings, env, &mut |_, _| {})
}

/// [`resolve_bindings`], registering as secrets (for scrubbing) every value that came from the
/// environment: the value of each referenced variable — whole or embedded (`Bearer ${TOKEN}`
/// registers the token itself, so a command printing only the token is scrubbed too) — and
/// every expansion that used one. Defaults are written in the configuration and are not
/// registered.
pub fn resolve_secret_bindings(
    bindings: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, BindingError> {
    let mut from_env = BTreeSet::new();
    let resolved = resolve(bindings, env, &mut |key, value| {
        agentcompass_redact::register_secret(value);
        from_env.insert(key.to_string());
    })?;
    for key in &from_env {
        if let Some(value) = resolved.get(key) {
            agentcompass_redact::register_secret(value);
        }
    }
    Ok(resolved)
}

/// Resolves `bindings`, handing each variable value read from `env` (with its binding's key)
/// to `found_value`.
fn resolve(
    bindings: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
    found_value: &mut dyn FnMut(&str, &str),
) -> Result<BTreeMap<String, String>, BindingError> {
    let mut missing = BTreeSet::new();
    let mut out = BTreeMap::new();
    for (key, template) in bindings {
        let mut value = String::new();
        for piece in parse(key, template)? {
            match piece {
                Piece::Text(text) => value.push_str(text),
                Piece::Var { name, default } => {
                    match (env(name).filter(|v| !v.is_empty()), default) {
                        (Some(found), _) => {
                            found_value(key, &found);
                            value.push_str(&found);
                        }
                        (None, Some(default)) => value.push_str(default),
                        (None, None) => {
                            missing.insert(name.to_string());
                        }
                    }
                }
            }
        }
        out.insert(key.clone(), value);
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(BindingError::Missing(missing))
    }
}

/// Checks that every binding of every phase of `plan` resolves (before anything is allocated).
pub fn check_plan_bindings(
    plan: &ExecutionPlan,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), BindingError> {
    let mut missing = BTreeSet::new();
    for phase in [Phase::Run, Phase::Evaluation, Phase::FreshStartup] {
        match resolve_bindings(&phase_bindings(plan, phase), env) {
            Ok(_) => {}
            Err(BindingError::Missing(names)) => missing.extend(names),
            Err(other) => return Err(other),
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(BindingError::Missing(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::tests::map;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("example.org".into()),
            "EMPTY" => Some(String::new()),
            "SECRET" => Some("s3cr3t-value".into()),
            _ => None,
        }
    }

    #[test]
    fn templates_expand_with_defaults() {
        let out = resolve_bindings(
            &map(&[
                ("URL", "https://${HOST}/v1"),
                ("MODE", "${UNSET:-fast}"),
                ("E", "${EMPTY:-d}"),
                ("LIT", "a$b {c}"),
            ]),
            &env,
        )
        .unwrap();
        assert_eq!(out["URL"], "https://example.org/v1");
        assert_eq!(out["MODE"], "fast");
        assert_eq!(out["E"], "d");
        assert_eq!(out["LIT"], "a$b {c}");
    }

    #[test]
    fn missing_variables_are_listed_without_values() {
        let err = resolve_bindings(
            &map(&[
                ("A", "${NOPE}"),
                ("B", "${SECRET}-${ALSO_NOPE}"),
                ("C", "${EMPTY}"),
            ]),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "environment bindings refer to unset variables: ALSO_NOPE, EMPTY, NOPE (export them before the run)"
        );
        assert!(!err.contains("s3cr3t"));
        let err = resolve_bindings(&map(&[("A", "${1X}")]), &env).unwrap_err();
        assert!(matches!(err, BindingError::Malformed { .. }));
        let err = resolve_bindings(&map(&[("A", "${X")]), &env).unwrap_err();
        assert!(err.to_string().contains("unterminated"));
    }

    #[test]
    fn embedded_references_register_the_variable_value_itself() {
        let bindings = BTreeMap::from([
            ("AUTH".to_string(), "Bearer ${EMBEDDED_TOKEN}".to_string()),
            (
                "MODE".to_string(),
                "${UNSET_MODE:-plain-default}".to_string(),
            ),
        ]);
        let env = |name: &str| (name == "EMBEDDED_TOKEN").then(|| "tok-EMBEDDED-90417".to_string());
        let resolved = resolve_secret_bindings(&bindings, &env).unwrap();
        assert_eq!(resolved["AUTH"], "Bearer tok-EMBEDDED-90417");
        // The token alone is scrubbed, not only the whole expansion.
        assert_eq!(
            agentcompass_redact::scrub_text("token=tok-EMBEDDED-90417"),
            "token=********"
        );
        // A default comes from the configuration and is no secret.
        assert_eq!(
            agentcompass_redact::scrub_text("mode plain-default"),
            "mode plain-default"
        );
    }
}
