//! Compose's variable interpolation, on every string value of the file (keys are left as
//! written): `$$` is a literal `$`; `$VAR` and `${VAR}` the variable's value; `${VAR:-x}` /
//! `${VAR-x}` a default when it is unset or empty / unset; `${VAR:?msg}` / `${VAR?msg}` an
//! error when it is unset or empty / unset. Variables come from the host's environment, then
//! the file directory's `.env` (as Compose reads its project directory's).
//!
//! One difference from Compose, on purpose: a variable that is unset with no default is an
//! error naming it and where it is used (Compose warns and substitutes an empty string, so a
//! missing API key reaches a sidecar as `""` and the task fails far from the cause). Write
//! `${VAR:-}` for a variable that may be empty.
//!
//! Every value taken from the host's environment is returned, so the caller registers it as a
//! secret: it never reaches a record, log line or error message.

use std::collections::BTreeMap;

use serde_norway::Value;

/// Where variables come from: the host's environment, then the `.env` file's.
pub(crate) struct Variables<'a> {
    /// The host's environment.
    pub(crate) host: &'a dyn Fn(&str) -> Option<String>,
    /// The `.env` file's variables.
    pub(crate) dotenv: BTreeMap<String, String>,
}

impl Variables<'_> {
    /// The value of `name` and whether it came from the host (a secret).
    fn get(&self, name: &str) -> Option<(String, bool)> {
        match (self.host)(name) {
            Some(value) => Some((value, true)),
            None => self.dotenv.get(name).map(|v| (v.clone(), false)),
        }
    }
}

/// Interpolates every string of `value` in place; `at` is the path shown in errors. The
/// values taken from the host's environment are added to `secrets`.
pub(crate) fn interpolate(
    value: &mut Value,
    at: &str,
    vars: &Variables<'_>,
    secrets: &mut Vec<String>,
) -> Result<(), String> {
    match value {
        Value::String(text) => {
            if text.contains('$') {
                *text = expand(text, vars, secrets).map_err(|e| format!("{at}: {e}"))?;
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                interpolate(item, &format!("{at}[{i}]"), vars, secrets)?;
            }
        }
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                let key = key
                    .as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_string);
                let path = if at.is_empty() {
                    key
                } else {
                    format!("{at}.{key}")
                };
                interpolate(item, &path, vars, secrets)?;
            }
        }
        Value::Tagged(tagged) => interpolate(&mut tagged.value, at, vars, secrets)?,
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

/// One string with its variables expanded.
fn expand(text: &str, vars: &Variables<'_>, secrets: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end =
                closing_brace(body).ok_or_else(|| format!("`${{{body}` has no closing `}}`"))?;
            out.push_str(&braced(&body[..end], vars, secrets)?);
            rest = &body[end + 1..];
        } else {
            let len = after
                .char_indices()
                .find(|(i, c)| {
                    !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
                })
                .map_or(after.len(), |(i, _)| i);
            if len == 0 {
                // A lone `$` (before a non-name character) stays, as Compose keeps it.
                out.push('$');
                rest = after;
                continue;
            }
            out.push_str(&lookup(&after[..len], vars, secrets)?);
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The index of the `}` closing a `${`, nested `${...}` in a default included.
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The expansion of `${body}`.
fn braced(body: &str, vars: &Variables<'_>, secrets: &mut Vec<String>) -> Result<String, String> {
    let name_len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    let (name, op) = body.split_at(name_len);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("`${{{body}}}` does not start with a variable name"));
    }
    let found = vars.get(name);
    let (colon, op) = match op.strip_prefix(':') {
        Some(op) => (true, op),
        None => (false, op),
    };
    // `:` treats an empty value as unset.
    let set = found.as_ref().filter(|(v, _)| !(colon && v.is_empty()));
    let mut keep = |value: &str, from_host: bool| {
        if from_host && !value.is_empty() {
            secrets.push(value.to_string());
        }
        value.to_string()
    };
    match op.chars().next() {
        None if !colon => match found {
            Some((value, host)) => Ok(keep(&value, host)),
            None => Err(unset(name)),
        },
        Some('-') => match set {
            Some((value, host)) => Ok(keep(value, *host)),
            None => expand(&op[1..], vars, secrets),
        },
        Some('?') => match set {
            Some((value, host)) => Ok(keep(value, *host)),
            None => Err(format!("variable `{name}` is required: {}", &op[1..])),
        },
        _ => Err(format!(
            "`${{{body}}}` is not ${{VAR}}, ${{VAR:-default}}, ${{VAR-default}}, \
             ${{VAR:?message}} or ${{VAR?message}}"
        )),
    }
}

/// The expansion of `$name` (no default).
fn lookup(name: &str, vars: &Variables<'_>, secrets: &mut Vec<String>) -> Result<String, String> {
    match vars.get(name) {
        Some((value, host)) => {
            if host && !value.is_empty() {
                secrets.push(value.clone());
            }
            Ok(value)
        }
        None => Err(unset(name)),
    }
}

/// The refusal of a variable that is unset with no default.
fn unset(name: &str) -> String {
    format!("variable `{name}` is not set (set it, or write `${{{name}:-default}}` for a default)")
}

/// The variables of a `.env` file: `KEY=VALUE` lines (`export ` allowed), `#` comments and
/// blank lines skipped, one pair of matching quotes around a value removed.
pub(crate) fn dotenv(text: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        vars.insert(key.trim().to_string(), unquoted.to_string());
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("tok-SECRET-4411".into()),
            "EMPTY" => Some(String::new()),
            "PORT" => Some("8000".into()),
            _ => None,
        }
    }

    fn run(text: &str) -> (Result<String, String>, Vec<String>) {
        let vars = Variables {
            host: &host,
            dotenv: dotenv("# comment\nFROM_FILE='file value'\nexport PORT=1\n"),
        };
        let mut secrets = Vec::new();
        (expand(text, &vars, &mut secrets), secrets)
    }

    #[test]
    fn expands_compose_forms_and_keeps_host_values_as_secrets() {
        assert_eq!(run("Bearer ${TOKEN}").0.unwrap(), "Bearer tok-SECRET-4411");
        assert_eq!(run("Bearer ${TOKEN}").1, ["tok-SECRET-4411"]);
        assert_eq!(run("$PORT/x").0.unwrap(), "8000/x");
        assert_eq!(run("${MISSING:-fallback}").0.unwrap(), "fallback");
        assert_eq!(run("${MISSING:-a-${PORT}}").0.unwrap(), "a-8000");
        assert_eq!(run("${EMPTY:-d}").0.unwrap(), "d");
        assert_eq!(run("${EMPTY-d}").0.unwrap(), "");
        assert_eq!(run("${FROM_FILE}").0.unwrap(), "file value");
        assert!(
            run("${FROM_FILE}").1.is_empty(),
            "a task file's value is no secret"
        );
        assert_eq!(
            run("cost: $$5 and $ alone").0.unwrap(),
            "cost: $5 and $ alone"
        );
        assert_eq!(run("${MISSING:-}").0.unwrap(), "");
    }

    #[test]
    fn refuses_unset_variables_and_bad_forms_without_values() {
        assert_eq!(
            run("${MISSING}").0.unwrap_err(),
            "variable `MISSING` is not set (set it, or write `${MISSING:-default}` for a default)"
        );
        assert_eq!(
            run("${MISSING:?give a key}").0.unwrap_err(),
            "variable `MISSING` is required: give a key"
        );
        assert!(run("${TOKEN/x}").0.unwrap_err().contains("is not ${VAR}"));
        assert!(run("${TOKEN").0.unwrap_err().contains("no closing"));
    }

    #[test]
    fn interpolates_values_with_their_path() {
        let mut value: Value =
            serde_norway::from_str("services:\n  api:\n    environment:\n      - K=${NOPE}\n")
                .unwrap();
        let vars = Variables {
            host: &host,
            dotenv: BTreeMap::new(),
        };
        let err = interpolate(&mut value, "", &vars, &mut Vec::new()).unwrap_err();
        assert!(
            err.starts_with("services.api.environment[0]: variable `NOPE` is not set"),
            "{err}"
        );
    }
}
