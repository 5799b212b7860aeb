//! Secret redaction for JSON values and free text.
//!
//! Everything that is printed (dry-run output, `config show`, error reports) or persisted
//! (`run_info.json`, `params.json`) passes through [`redact_value`] first; free text such as
//! error messages and logs can additionally be scrubbed with [`redact_text`] as a last line of
//! defence.
//!
//! The rules mirror upstream AgentCompass (`config/loader.redact_secrets`):
//!
//! * Keys are compared after normalisation to lowercase snake_case (`apiKey` → `api_key`,
//!   `X-Api-Key` → `x_api_key`; hyphens and spaces become `_`).
//! * A *sensitive* key (see [`is_sensitive_key`]) has its value masked with the leaf rule; when
//!   that value is an object or array, every string/number leaf inside it is masked.
//! * A *container* key (`auth`, `headers`, `env`, …) has every string/number leaf beneath it
//!   masked, whatever the leaves' own keys are.
//! * The leaf rule: empty strings stay empty, a string that is exactly one `${NAME}` reference is
//!   kept (it names a secret rather than containing one), booleans and `null` are kept, and any
//!   other string or number becomes [`REDACTED`].
//! * Everything else is copied unchanged, recursing through objects and arrays.

use serde_json::Value;

/// The mask that replaces a secret value, both in JSON values and in free text.
pub const REDACTED: &str = "********";

/// Normalised keys that are sensitive as a whole.
const SENSITIVE_EXACT: &[&str] = &[
    "aksk",
    "token_id",
    "authorization",
    "cookie",
    "jwt",
    "password",
    "passwd",
    "proxy_authorization",
    "set_cookie",
    "token",
    "secret",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "credential",
    "credentials",
];

/// Normalised key suffixes that mark a key as sensitive.
const SENSITIVE_SUFFIXES: &[&str] = &[
    "_key",
    "_secret",
    "_token",
    "_jwt",
    "_password",
    "_credential",
];

/// Normalised keys that would match a sensitive suffix but are known not to hold secrets.
const NOT_SENSITIVE: &[&str] = &["wrap_api_key"];

/// Normalised keys whose whole subtree is redacted leaf by leaf.
const CONTAINER_KEYS: &[&str] = &[
    "auth",
    "authentication",
    "credentials",
    "headers",
    "env",
    "env_variables",
    "run_env_variables",
    "evaluation_env_variables",
    "evaluation_environment_env_variables",
    "resolved_env",
    "required_env",
];

/// Secrets shorter than this (in characters, ignoring surrounding whitespace) are not replaced
/// by [`redact_text`]: they would shred ordinary text.
const MIN_TEXT_SECRET_CHARS: usize = 4;

/// Returns a redacted copy of `value`; the input is never modified.
///
/// Values under sensitive keys (see [`is_sensitive_key`]) and every string/number leaf beneath
/// container keys (`auth`, `authentication`, `credentials`, `headers`, `env`, `env_variables`,
/// `run_env_variables`, `evaluation_env_variables`, `evaluation_environment_env_variables`,
/// `resolved_env`, `required_env`) are replaced by [`REDACTED`], except empty strings and strings
/// that are exactly one `${NAME}` reference, which are kept as written. Booleans and `null` are
/// always kept. All other values are copied unchanged.
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, child)| {
                    let normalised = normalize_key(key);
                    let redacted = if is_sensitive_normalised(&normalised)
                        || CONTAINER_KEYS.contains(&normalised.as_ref())
                    {
                        redact_all_leaves(child)
                    } else {
                        redact_value(child)
                    };
                    (key.clone(), redacted)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        other => other.clone(),
    }
}

/// Reports whether `key` names a secret-bearing field.
///
/// The key is first normalised to lowercase snake_case (`apiKey` → `api_key`, `X-Api-Key` →
/// `x_api_key`, hyphens and spaces become `_`). It is sensitive if the normalised form is one of
/// `aksk`, `token_id`, `authorization`, `cookie`, `jwt`, `password`, `passwd`,
/// `proxy_authorization`, `set_cookie`, `token`, `secret`, `api_key`, `apikey`, `access_key`,
/// `private_key`, `credential`, `credentials`, or ends with `_key`, `_secret`, `_token`, `_jwt`,
/// `_password` or `_credential` — except `wrap_api_key`, which is a boolean flag.
///
/// Note that only exact suffixes count: `max_tokens`, `key_count` and `monkey` are not sensitive.
pub fn is_sensitive_key(key: &str) -> bool {
    is_sensitive_normalised(&normalize_key(key))
}

/// [`is_sensitive_key`] for a key already normalised.
fn is_sensitive_normalised(name: &str) -> bool {
    if NOT_SENSITIVE.contains(&name) {
        return false;
    }
    SENSITIVE_EXACT.contains(&name)
        || SENSITIVE_SUFFIXES
            .iter()
            .any(|suffix| name.ends_with(suffix))
}

/// Replaces every occurrence of each secret in `text` with [`REDACTED`].
///
/// Intended as a last line of defence on free text (error messages, logs) when the secret values
/// themselves are known. Secrets are applied longest first, so a secret that contains another is
/// masked as a whole. Secrets shorter than four characters (ignoring surrounding whitespace) are
/// ignored, as they would shred ordinary text, and so are secrets made only of mask characters
/// (which would corrupt earlier masks).
pub fn redact_text(text: &str, secrets: &[&str]) -> String {
    let mut eligible: Vec<&str> = secrets
        .iter()
        .copied()
        .filter(|secret| secret.trim().chars().count() >= MIN_TEXT_SECRET_CHARS)
        .filter(|secret| !REDACTED.contains(*secret))
        .collect();
    eligible.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    eligible.dedup();

    let mut out = text.to_owned();
    for secret in eligible {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    out
}

/// Reports whether a dotted key path (`requests[0].model.api_key`,
/// `environments.host_process.env_variables.TOKEN`) passes through a sensitive or container key,
/// i.e. whether the value at that path would be redacted when printed.
pub fn is_secret_path(path: &str) -> bool {
    path.split(['.', '[', ']'])
        .any(|segment| is_sensitive_key(segment) || is_container_key(segment))
}

/// Removes the echoed value from a serde message (`invalid type: integer `123`, expected a
/// string` → `invalid type: integer, expected a string`), for errors about secret fields.
/// Messages of any other shape (which name keys, not values) are kept.
pub fn scrub_value_from_message(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            let kind = rest.split([' ', ',']).next().unwrap_or_default();
            let expected = rest.find(", expected").map_or("", |at| &rest[at..]);
            return format!("{prefix}{kind}{expected}");
        }
    }
    message.to_string()
}

/// Reports whether `key` is a container whose whole subtree is redacted leaf by leaf.
fn is_container_key(key: &str) -> bool {
    CONTAINER_KEYS.contains(&normalize_key(key).as_ref())
}

/// Normalises a key to lowercase snake_case for comparison.
///
/// Surrounding whitespace is trimmed; hyphens and inner whitespace become `_`; an `_` is inserted
/// at each lowercase/digit → uppercase boundary (`apiKey` → `api_key`) and before the last
/// capital of an acronym followed by a lowercase letter (`APIKey` → `api_key`).
fn normalize_key(key: &str) -> std::borrow::Cow<'_, str> {
    // Most keys already are lowercase snake_case: nothing to allocate.
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return std::borrow::Cow::Borrowed(key);
    }
    let chars: Vec<char> = key
        .trim()
        .chars()
        .map(|c| {
            if c == '-' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect();
    let mut out = String::with_capacity(chars.len() + 4);
    let mut prev: Option<char> = None;
    for (index, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            if let Some(p) = prev {
                let next_is_lower = chars.get(index + 1).is_some_and(|n| n.is_lowercase());
                let boundary =
                    p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next_is_lower);
                if boundary {
                    out.push('_');
                }
            }
        }
        out.extend(c.to_lowercase());
        prev = Some(c);
    }
    std::borrow::Cow::Owned(out)
}

/// Redacts every string/number leaf of `value` with the leaf rule, recursing through objects and
/// arrays regardless of their keys. Booleans and `null` are kept.
fn redact_all_leaves(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, child)| (key.clone(), redact_all_leaves(child)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_all_leaves).collect()),
        Value::String(text) => {
            if text.is_empty() || is_env_reference(text) {
                value.clone()
            } else {
                Value::String(REDACTED.to_owned())
            }
        }
        Value::Number(_) => Value::String(REDACTED.to_owned()),
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

/// Reports whether `text` is exactly one `${NAME}` reference (NAME = `[A-Za-z_][A-Za-z0-9_]*`),
/// allowing surrounding whitespace. Defaults (`${NAME:-x}`) and embedded references do not count.
fn is_env_reference(text: &str) -> bool {
    let Some(name) = text
        .trim()
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
    else {
        return false;
    };
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    }
}

/// Secret values known to this process (resolved API keys, resolved `${VAR}` values and
/// environment bindings). Free text that leaves the process — log lines, persisted messages —
/// is scrubbed of them as a last line of defence.
static SECRETS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Registers a secret value (values shorter than 4 characters are ignored).
pub fn register_secret(value: &str) {
    let value = value.trim();
    if value.chars().count() < 4 {
        return;
    }
    if let Ok(mut secrets) = SECRETS.write() {
        if !secrets.iter().any(|s| s == value) {
            secrets.push(value.to_string());
        }
    }
}

/// `text` with every registered secret replaced by `********`.
pub fn scrub_text(text: &str) -> String {
    match SECRETS.read() {
        Ok(secrets) if !secrets.is_empty() => {
            let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
            redact_text(text, &refs)
        }
        _ => text.to_string(),
    }
}

/// The shortest tail of a text that is masked when it is the start of a registered secret.
const MIN_SECRET_PREFIX_CHARS: usize = 4;

/// `text` scrubbed of every registered secret, then cut to at most `max_chars` characters
/// (`…` appended when cut). Scrubbing before cutting means a secret the cut falls into is
/// already masked whole; and a tail of the kept text that is the start of a registered secret
/// (at least 4 characters: text another program had already cut) is masked too.
pub fn scrub_and_truncate(text: &str, max_chars: usize) -> String {
    let scrubbed = scrub_text(text);
    let cut = scrubbed.chars().count() > max_chars;
    let mut kept: String = scrubbed.chars().take(max_chars).collect();
    mask_secret_prefix_tail(&mut kept);
    if cut {
        kept.push('…');
    }
    kept
}

/// Masks the longest tail of `text` that is a prefix (of at least
/// [`MIN_SECRET_PREFIX_CHARS`] characters) of a registered secret.
fn mask_secret_prefix_tail(text: &mut String) {
    let Ok(secrets) = SECRETS.read() else {
        return;
    };
    let mut longest = 0;
    for secret in secrets.iter() {
        let mut n = secret.len().min(text.len());
        while n > 0 {
            if secret.is_char_boundary(n) && text.ends_with(&secret[..n]) {
                break;
            }
            n -= 1;
        }
        if n > longest && secret[..n].chars().count() >= MIN_SECRET_PREFIX_CHARS {
            longest = n;
        }
    }
    if longest > 0 {
        let keep = text.len() - longest;
        text.truncate(keep);
        text.push_str(REDACTED);
    }
}

/// `value` with every registered secret scrubbed from every string (keys included).
pub fn scrub_value(value: &Value) -> Value {
    let empty = SECRETS.read().map(|s| s.is_empty()).unwrap_or(true);
    if empty {
        return value.clone();
    }
    match value {
        Value::String(s) => Value::String(scrub_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(scrub_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (scrub_text(k), scrub_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Registers every string of `resolved` that differs from the same place in `written` (the
/// values `${VAR}` references resolved to).
pub fn register_resolved_values(written: &Value, resolved: &Value) {
    match (written, resolved) {
        (Value::String(a), Value::String(b)) if a != b => register_secret(b),
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .for_each(|(x, y)| register_resolved_values(x, y)),
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                if let Some(original) = a.get(key) {
                    register_resolved_values(original, value);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
