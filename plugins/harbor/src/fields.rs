//! Typed access to one TOML table of a `task.toml`, with one-line errors naming the file, the
//! dotted field, what was expected and what was found, and bookkeeping of the keys that were
//! read (so the caller can warn about the rest).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use agentcompass_plugin_api::{Error, Result};
use toml::Value;

use crate::lax::{bool_from_str, float_from_str, int_from_float, int_from_str};
use crate::names::ID;

/// A value as Harbor's `float` fields take it (pydantic lax mode).
pub(crate) fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Boolean(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => float_from_str(s),
        _ => None,
    }
}

/// A value as Harbor's `int` fields take it (pydantic lax mode).
pub(crate) fn integer_of(value: &Value) -> Option<i64> {
    match value {
        Value::Integer(i) => Some(*i),
        Value::Float(f) => int_from_float(*f),
        Value::Boolean(b) => Some(i64::from(*b)),
        Value::String(s) => int_from_str(s),
        _ => None,
    }
}

/// A short description of a TOML value for error messages (`string "2G"`, `integer 5`, ...).
pub(crate) fn describe(value: &Value) -> String {
    const MAX: usize = 60;
    match value {
        Value::String(s) => {
            let shown: String = s.chars().take(MAX).collect();
            let ellipsis = if s.chars().count() > MAX { "..." } else { "" };
            format!("string {:?}", format!("{shown}{ellipsis}"))
        }
        Value::Integer(i) => format!("integer {i}"),
        Value::Float(f) => format!("float {f}"),
        Value::Boolean(b) => format!("boolean {b}"),
        Value::Datetime(d) => format!("datetime {d}"),
        Value::Array(_) => "an array".to_string(),
        Value::Table(_) => "a table".to_string(),
    }
}

/// A TOML value as JSON (datetimes become their RFC 3339 text; non-finite floats `null`).
pub(crate) fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Integer(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Table(table) => table_to_json(table),
    }
}

/// A TOML table as a JSON object.
pub(crate) fn table_to_json(table: &toml::Table) -> serde_json::Value {
    serde_json::Value::Object(table.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
}

/// One table of the file, at a dotted prefix (`""` for the root).
pub(crate) struct Section<'a> {
    file: &'a str,
    prefix: String,
    table: &'a toml::Table,
    used: RefCell<BTreeSet<String>>,
}

impl<'a> Section<'a> {
    /// The root table of `file`.
    pub(crate) fn root(file: &'a str, table: &'a toml::Table) -> Self {
        Section {
            file,
            prefix: String::new(),
            table,
            used: RefCell::new(BTreeSet::new()),
        }
    }

    /// The dotted name of `key` in this section (`environment.memory_mb`).
    pub(crate) fn key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// The value of `key`, marking it as read.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        let value = self.table.get(key);
        if value.is_some() {
            self.used.borrow_mut().insert(key.to_string());
        }
        value
    }

    /// Whether `key` is present (does not mark it as read).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// An error about the whole file.
    pub(crate) fn file_error(&self, message: impl std::fmt::Display) -> Error {
        Error::invalid_input(format!("{ID}: {}: {message}", self.file))
    }

    /// An error about field `key` of this section (free-form message).
    pub(crate) fn error(&self, key: &str, message: impl std::fmt::Display) -> Error {
        self.file_error(format!("field `{}`: {message}", self.key(key)))
    }

    /// "expected X, found Y" for field `key`.
    pub(crate) fn expected(&self, key: &str, expected: &str, found: &Value) -> Error {
        self.error(
            key,
            format!("expected {expected}, found {}", describe(found)),
        )
    }

    /// A sub-table (`None` when absent; an error when not a table).
    pub(crate) fn table(&self, key: &str) -> Result<Option<Section<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(table)) => Ok(Some(self.child(self.key(key), table))),
            Some(other) => Err(self.expected(key, "a table", other)),
        }
    }

    /// A section for a table found inside this one (array items, nested tables).
    pub(crate) fn child(&self, prefix: String, table: &'a toml::Table) -> Section<'a> {
        Section {
            file: self.file,
            prefix,
            table,
            used: RefCell::new(BTreeSet::new()),
        }
    }

    /// A string field.
    pub(crate) fn string(&self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.expected(key, "a string", other)),
        }
    }

    /// A non-empty (after trimming) string field.
    pub(crate) fn non_empty_string(&self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(self.error(key, "expected a non-empty string, found an empty string"))
            }
            Some(Value::String(s)) => Ok(Some(s.clone())),
            None => Ok(None),
            Some(other) => Err(self.expected(key, "a non-empty string", other)),
        }
    }

    /// A string field that must be one of `choices` exactly (Harbor's enums).
    pub(crate) fn choice(&self, key: &str, choices: &[&str]) -> Result<Option<String>> {
        let expected = || {
            choices
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if choices.contains(&s.as_str()) => Ok(Some(s.clone())),
            Some(other) => Err(self.expected(key, &format!("one of {}", expected()), other)),
        }
    }

    /// A boolean field, with pydantic's coercions (`"yes"`, `"off"`, `1`, `0.0`, ...).
    pub(crate) fn boolean(&self, key: &str) -> Result<Option<bool>> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(value) => value,
        };
        let coerced = match value {
            Value::Boolean(b) => Some(*b),
            Value::Integer(0) => Some(false),
            Value::Integer(1) => Some(true),
            Value::Float(f) if *f == 0.0 => Some(false),
            Value::Float(f) if *f == 1.0 => Some(true),
            Value::String(s) => bool_from_str(s),
            _ => None,
        };
        coerced
            .map(Some)
            .ok_or_else(|| self.expected(key, "a boolean", value))
    }

    /// A number field (`float` in Harbor): integers, floats, numeric strings and booleans.
    pub(crate) fn number(&self, key: &str, expected: &str) -> Result<Option<f64>> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(value) => value,
        };
        number_of(value)
            .map(Some)
            .ok_or_else(|| self.expected(key, expected, value))
    }

    /// An integer field (`int` in Harbor): integers, whole floats, integer strings and
    /// booleans.
    pub(crate) fn integer(&self, key: &str, expected: &str) -> Result<Option<i64>> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(value) => value,
        };
        integer_of(value)
            .map(Some)
            .ok_or_else(|| self.expected(key, expected, value))
    }

    /// A string or integer field (`str | int` in Harbor, e.g. `user`): a string, or anything
    /// that converts to an integer except a string.
    pub(crate) fn string_or_integer(&self, key: &str) -> Result<Option<Value>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(Value::String(s.clone()))),
            Some(value @ (Value::Integer(_) | Value::Float(_) | Value::Boolean(_))) => {
                integer_of(value)
                    .map(|i| Some(Value::Integer(i)))
                    .ok_or_else(|| self.expected(key, "a user name or a UID", value))
            }
            Some(other) => Err(self.expected(key, "a user name or a UID", other)),
        }
    }

    /// A positive, finite number of seconds (seed 004: `None` or positive finite seconds).
    pub(crate) fn positive_seconds(&self, key: &str) -> Result<Option<f64>> {
        let expected = "a positive number of seconds";
        let value = match self.get(key) {
            None => return Ok(None),
            Some(value) => value,
        };
        match number_of(value) {
            Some(f) if f.is_finite() && f > 0.0 => Ok(Some(f)),
            _ => Err(self.expected(key, expected, value)),
        }
    }

    /// A positive, finite number (`int | float` in Harbor, e.g. `cpus`: an integer string
    /// first, then a float string).
    pub(crate) fn positive_number(&self, key: &str) -> Result<Option<f64>> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(value) => value,
        };
        let coerced = match value {
            Value::String(s) => int_from_str(s)
                .map(|i| i as f64)
                .or_else(|| float_from_str(s)),
            other => number_of(other),
        };
        match coerced {
            Some(f) if f.is_finite() && f > 0.0 => Ok(Some(f)),
            _ => Err(self.expected(key, "a positive number", value)),
        }
    }

    /// A positive integer (`int` in Harbor, with its coercions).
    pub(crate) fn positive_integer(&self, key: &str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => match integer_of(value) {
                Some(i) if i > 0 => Ok(Some(i.unsigned_abs())),
                _ => Err(self.expected(key, "a positive integer", value)),
            },
        }
    }

    /// A non-negative integer (`int` in Harbor, with its coercions).
    pub(crate) fn non_negative_integer(&self, key: &str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => match integer_of(value) {
                Some(i) if i >= 0 => Ok(Some(i.unsigned_abs())),
                _ => Err(self.expected(key, "a non-negative integer", value)),
            },
        }
    }

    /// A list of strings.
    pub(crate) fn string_list(&self, key: &str) -> Result<Option<Vec<String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.expected(&format!("{key}[{i}]"), "a string", other)),
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(other) => Err(self.expected(key, "an array of strings", other)),
        }
    }

    /// A table of string values (environment-variable bindings).
    pub(crate) fn string_map(&self, key: &str) -> Result<Option<BTreeMap<String, String>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(table)) => table
                .iter()
                .map(|(name, value)| {
                    let field = format!("{key}.{name}");
                    if name.trim().is_empty() {
                        return Err(self.error(key, "expected variable names, found an empty name"));
                    }
                    match value {
                        Value::String(s) => Ok((name.clone(), s.clone())),
                        other => Err(self.expected(&field, "a string", other)),
                    }
                })
                .collect::<Result<BTreeMap<_, _>>>()
                .map(Some),
            Some(other) => Err(self.expected(key, "a table of strings", other)),
        }
    }

    /// The keys of this section that were never read, in file order.
    pub(crate) fn unread(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.table
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect()
    }
}

/// Collects the `load_warnings` of one task.
pub(crate) struct Warnings {
    /// The file the warnings are about.
    pub(crate) file: String,
    /// The warnings, in order.
    pub(crate) list: Vec<String>,
    /// Why the task cannot run as written (fields it declares that the host does not act on),
    /// in order: the first is the task's `unsupported` issue.
    pub(crate) refusals: Vec<String>,
}

/// Whether `key` is declared in `section`: present, and not an empty list (`mcp_servers = []`,
/// as `harbor init` writes it, declares nothing).
fn declared(section: &Section, key: &str) -> bool {
    match section.get(key) {
        None => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

impl Warnings {
    /// Warns that `key` (when declared) is not supported: a field whose absence changes no
    /// score.
    pub(crate) fn unsupported(&mut self, section: &Section, key: &str, why: &str) {
        if declared(section, key) {
            self.list.push(format!(
                "{}: field `{}` is not supported and is ignored ({why})",
                self.file,
                section.key(key)
            ));
        }
    }

    /// Refuses the task when it declares `key`: a field the host does not act on, whose
    /// absence would change the score (the task's `unsupported` issue, the other tasks
    /// running; a load warning too, so `plan` and `--dry-run` print it).
    pub(crate) fn refuse(&mut self, section: &Section, key: &str, why: &str) {
        if declared(section, key) {
            let field = section.key(key);
            self.list.push(format!(
                "{}: field `{field}` is not supported: the task is refused ({why})",
                self.file
            ));
            self.refusals.push(format!(
                "field `{field}` is not supported ({why}); the task is not run without it"
            ));
        }
    }

    /// Warns about every key of `section` that was not read.
    pub(crate) fn unknown(&mut self, section: &Section) {
        for key in section.unread() {
            self.list.push(format!(
                "{}: unknown field `{}` is ignored",
                self.file,
                section.key(&key)
            ));
        }
    }

    /// Adds a free-form warning about the file.
    pub(crate) fn note(&mut self, message: String) {
        self.list.push(format!("{}: {message}", self.file));
    }
}
