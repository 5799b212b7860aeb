//! Finding and parsing configuration files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{deep_merge, validate_config, ConfigError};

/// File names looked for in the user and project configuration directories, in order.
pub const CONFIG_FILE_NAMES: [&str; 4] =
    ["config.toml", "config.yaml", "config.yml", "config.json"];

/// One parsed configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its top-level mapping.
    pub payload: Map<String, Value>,
}

/// Every configuration file of an invocation, in precedence order, and their merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedConfig {
    /// Files in load order (user, project, then each `--config`).
    pub files: Vec<ConfigFile>,
    /// The deep merge of every file (later files win).
    pub payload: Map<String, Value>,
}

impl LoadedConfig {
    /// A top-level section of the merged configuration, if it is a mapping.
    pub fn section(&self, name: &str) -> Option<&Map<String, Value>> {
        self.payload.get(name).and_then(Value::as_object)
    }

    /// The merged entry of one component (`benchmarks.<id>` ...); `null` counts as empty.
    pub fn component(&self, section: &str, id: &str) -> Map<String, Value> {
        self.section(section)
            .and_then(|s| s.get(id))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    /// The `environments.<id>` entry of each file, in order, with the file it came from
    /// (`None` when a file sets the entry to `null`, which clears earlier layers).
    pub fn environment_layers(&self, id: &str) -> Vec<(String, Option<Map<String, Value>>)> {
        self.files
            .iter()
            .filter_map(|file| {
                let entry = file.payload.get("environments")?.as_object()?.get(id)?;
                Some((file.path.display().to_string(), entry.as_object().cloned()))
            })
            .collect()
    }

    /// The `metadata.config_path` value: the single path, or a JSON array of paths.
    pub fn config_path(&self) -> String {
        match self.files.as_slice() {
            [] => String::new(),
            [one] => one.path.display().to_string(),
            many => Value::from(
                many.iter()
                    .map(|f| f.path.display().to_string())
                    .collect::<Vec<_>>(),
            )
            .to_string(),
        }
    }
}

/// The configuration file in `dir`, if any; two candidates in one directory are an error.
fn config_in(dir: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let found: Vec<PathBuf> = CONFIG_FILE_NAMES
        .iter()
        .map(|name| dir.join(name))
        .filter(|p| p.is_file())
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        [first, second, ..] => Err(ConfigError::invalid(
            dir.display().to_string(),
            "",
            format!(
                "both {} and {} exist; keep one configuration file per directory",
                first.display(),
                second.display()
            ),
        )),
    }
}

/// The user configuration directory: `$XDG_CONFIG_HOME/agentcompass`, else
/// `~/.config/agentcompass`.
pub fn user_config_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) => Some(PathBuf::from(xdg).join("agentcompass")),
        None => env("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".config").join("agentcompass")),
    }
}

/// The files to load, in order: the user config, the nearest project config walking up from
/// `cwd`, then each explicit file. Missing implicit files are skipped; a missing explicit
/// file is an error; a file reached twice is loaded once.
pub fn discover_config_files(
    explicit: &[PathBuf],
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut paths = Vec::new();
    if let Some(dir) = user_config_dir(env) {
        paths.extend(config_in(&dir)?);
    }
    for dir in cwd.ancestors() {
        if let Some(found) = config_in(dir)? {
            paths.push(found);
            break;
        }
    }
    for path in explicit {
        let path = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(meta) => {
                let found = if meta.is_dir() {
                    "a directory"
                } else {
                    "a special file"
                };
                return Err(ConfigError::Io {
                    path,
                    message: format!("expected a config file, found {found}"),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling symlink is "missing" too; a loop is reported as such below.
                if std::fs::symlink_metadata(&path).is_err() {
                    return Err(ConfigError::Missing(path));
                }
                return Err(ConfigError::Io {
                    path,
                    message: e.to_string(),
                });
            }
            Err(e) => {
                return Err(ConfigError::Io {
                    path,
                    message: e.to_string(),
                })
            }
        }
        paths.push(path);
    }
    let mut seen = std::collections::HashSet::new();
    Ok(paths
        .into_iter()
        .filter(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
        .collect())
}

/// Loads, validates and merges the configuration files of an invocation.
pub fn load_run_config(
    explicit: &[PathBuf],
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    let mut loaded = LoadedConfig::default();
    for path in discover_config_files(explicit, cwd, env)? {
        let payload = match parse_file(&path)? {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ConfigError::Parse {
                    path,
                    message: format!(
                        "expected a mapping at the top level, found {}",
                        kind(&other)
                    ),
                })
            }
        };
        validate_config(&path.display().to_string(), &payload)?;
        loaded.payload = match deep_merge(
            &Value::Object(loaded.payload),
            &Value::Object(payload.clone()),
        ) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        loaded.files.push(ConfigFile { path, payload });
    }
    Ok(loaded)
}

fn kind(value: &Value) -> &'static str {
    agentcompass_plugin_api::contracts::json_type_name(value)
}

/// Parses a TOML (`.toml`), YAML (`.yaml`, `.yml`) or JSON (`.json`) file into JSON values.
pub fn parse_file(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    parse_text(path, &text)
}

/// Parses the text of a configuration file, in the format named by `path`'s extension, into
/// JSON values (`path` is not read; it picks the format and names the file in errors). A file
/// with any other extension (or none) is read as YAML, as upstream reads it.
pub fn parse_text(path: &Path, text: &str) -> Result<Value, ConfigError> {
    let parse_error = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message: agentcompass_plugin_api::one_line(&message),
    };
    match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => {
            // The message and position only: the default rendering quotes the offending source
            // line, which may hold a secret.
            let value: toml::Value =
                toml::from_str(text).map_err(|e| parse_error(toml_message(text, &e)))?;
            Ok(toml_to_json(value))
        }
        Some("json") => serde_json::from_str(text).map_err(|e| parse_error(e.to_string())),
        _ => {
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            check_yaml_size(text).map_err(|e| parse_error(e.to_string()))?;
            let value: yaml_serde::Value =
                yaml_serde::from_str(text).map_err(|e| parse_error(e.to_string()))?;
            serde_json::to_value(value).map_err(|e| parse_error(e.to_string()))
        }
    }
}

/// Deepest nesting of YAML flow collections (`[`, `{`) accepted before parsing. The YAML parser
/// refuses more than 128 levels itself, but only after scanning the whole file, which takes time
/// quadratic in the nesting depth (seconds for a few kilobytes of `[[[[...`).
pub const YAML_MAX_FLOW_DEPTH: usize = 256;

/// Most values (scalars and collections, counted after aliases are expanded) a YAML file may
/// hold: a few aliases of aliases otherwise expand into millions of values.
pub const YAML_MAX_VALUES: usize = 100_000;

/// Refuses YAML text whose flow collections nest deeper than [`YAML_MAX_FLOW_DEPTH`] or that
/// expands to more than [`YAML_MAX_VALUES`] values, before it is turned into a value.
fn check_yaml_size(text: &str) -> Result<(), YamlTooLarge> {
    if let Some(offset) = yaml_flow_too_deep(text, YAML_MAX_FLOW_DEPTH) {
        let (line, column) = line_column(text, offset);
        return Err(YamlTooLarge::Nested { line, column });
    }
    let budget = std::cell::Cell::new(YAML_MAX_VALUES);
    serde::de::DeserializeSeed::deserialize(
        CountValues(&budget),
        yaml_serde::Deserializer::from_str(text),
    )
    .map_err(YamlTooLarge::Values)
}

/// YAML refused before it is turned into a value.
#[derive(Debug, thiserror::Error)]
enum YamlTooLarge {
    /// Flow collections nest too deep.
    #[error(
        "flow collections ([...] or {{...}}) nested more than {YAML_MAX_FLOW_DEPTH} levels deep at line {line}, column {column}"
    )]
    Nested {
        /// Line of the opener past the limit (1-based).
        line: usize,
        /// Its column (1-based).
        column: usize,
    },
    /// It expands to too many values (or does not parse).
    #[error("{0}")]
    Values(yaml_serde::Error),
}

/// Byte offset of the first `[` or `{` that opens a flow collection more than `limit` levels
/// deep. Only openers that start a token outside quotes, comments, block scalars and plain
/// scalars count, and every closer outside quotes and comments ends a level, so the count errs
/// on the low side (it runs high only on hundreds of unmatched brackets opening the
/// continuation lines of multi-line plain scalars).
fn yaml_flow_too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    // Inside a block scalar (`|`, `>`) introduced on a line indented this much.
    let mut block_parent: Option<usize> = None;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(parent) = block_parent {
            if line.trim().is_empty() || indent > parent {
                continue;
            }
            block_parent = None;
        }
        let mut prev = ' ';
        // Inside a plain scalar of the block context (up to `: ` or the end of the line).
        let mut plain = false;
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if plain {
                if c == '#' && prev.is_whitespace() {
                    break;
                }
                plain = !(c == ':' && chars.peek().is_none_or(|&(_, next)| next.is_whitespace()));
                prev = c;
                continue;
            }
            match quote {
                Some('"') => {
                    if c == '\\' {
                        chars.next();
                    } else if c == '"' {
                        quote = None;
                        prev = c;
                    }
                    continue;
                }
                Some(_) => {
                    if c == '\'' && chars.next_if(|&(_, next)| next == '\'').is_none() {
                        quote = None;
                        prev = c;
                    }
                    continue;
                }
                None => {}
            }
            let token_start = prev.is_whitespace() || matches!(prev, '[' | '{' | ',' | ':');
            match c {
                '#' if prev.is_whitespace() => break,
                '"' | '\'' if token_start => quote = Some(c),
                '[' | '{' if token_start => {
                    depth += 1;
                    if depth > limit {
                        return Some(start + i);
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                '|' | '>' if token_start && depth == 0 && is_block_header(&line[i + 1..]) => {
                    block_parent = Some(indent);
                    break;
                }
                '-' | '?' | ':' | '&' | '*' | '!' | ',' => {}
                _ if token_start && depth == 0 && !c.is_whitespace() => plain = true,
                _ => {}
            }
            prev = c;
        }
    }
    None
}

/// Whether `rest`, what follows `|` or `>` on its line, is the rest of a block scalar header
/// (chomping and indentation indicators, then nothing or a comment).
fn is_block_header(rest: &str) -> bool {
    let rest = rest.trim_start_matches(|c: char| c == '+' || c == '-' || c.is_ascii_digit());
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.trim().is_empty() || rest.starts_with('#')
}

/// Visits every value of a YAML document (aliases expanded, as deserializing does) and fails
/// once more than the budget's values were seen; accepts whatever `yaml_serde::Value` accepts.
struct CountValues<'a>(&'a std::cell::Cell<usize>);

impl<'de> serde::de::DeserializeSeed<'de> for CountValues<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CountValues<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.count()
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.count()
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.count()
    }
    fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<(), E> {
        self.count()
    }
    fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<(), E> {
        self.count()
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.count()
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.count()
    }
    fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.count()
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.count()
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.count()
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.count()?;
        deserializer.deserialize_any(self)
    }
    fn visit_newtype_struct<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<(), D::Error> {
        self.count()?;
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        while seq.next_element_seed(CountValues(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        while map.next_key_seed(CountValues(self.0))?.is_some() {
            map.next_value_seed(CountValues(self.0))?;
        }
        Ok(())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag value`): the tag, then the value.
        use serde::de::VariantAccess;
        self.count()?;
        let ((), variant) = data.variant_seed(CountValues(self.0))?;
        variant.newtype_variant_seed(CountValues(self.0))
    }
}

impl CountValues<'_> {
    fn count<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.0.get().checked_sub(1) {
            Some(left) => {
                self.0.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "more than {YAML_MAX_VALUES} values once aliases are expanded; write the values \
                 out or use fewer aliases"
            ))),
        }
    }
}

/// 1-based line and column (in characters) of byte offset `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `TOML parse error at line L, column C: MESSAGE`, without the quoted source line.
fn toml_message(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim();
    match error.span() {
        Some(span) => {
            let mut start = span.start.min(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("TOML parse error at line {line}, column {column}: {message}")
        }
        None => format!("TOML parse error: {message}"),
    }
}

fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(k, v)| (k, toml_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests;
