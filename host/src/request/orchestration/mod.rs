//! Orchestration files (`launch FILE`) and their resolution, following the seed's
//! orchestration table: component params config entry → `defaults` → named request; model
//! `defaults.model` → request; execution defaults → config → `defaults.execution` → request;
//! per-request runtime config reuse → `defaults.runtime` → request; output `defaults.output` →
//! request; orchestration runtime defaults → config → file → command line; the global
//! `task_concurrency` command line → file → config → 32, written into every request.

use std::path::Path;

use agentcompass_plugin_api::contracts::RunRequest;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod resolve;

pub use resolve::resolve_orchestration;

use crate::config::{check_references, parse_file, parse_text, ConfigError};
use crate::request::runtime_options::{ResolvedRuntimeOptions, RuntimeOptions};

type Object = Map<String, Value>;

/// The sections a request sets, in `defaults:` (shared by every request) and in each entry of
/// `requests:` (which wins over the defaults).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSections {
    /// Benchmark `{id, ...params}`.
    #[serde(default)]
    pub benchmark: Option<Object>,
    /// Harness `{id, ...params}`.
    #[serde(default)]
    pub harness: Option<Object>,
    /// Environment `{id, ...fields and params}`.
    #[serde(default)]
    pub environment: Option<Object>,
    /// Model fields.
    #[serde(default)]
    pub model: Option<Object>,
    /// ExecutionSpec fields (no `task_concurrency`).
    #[serde(default)]
    pub execution: Option<Object>,
    /// Per-request runtime (`reuse`, `reuse_run_id`, `checkpoint_resume`).
    #[serde(default)]
    pub runtime: Option<Object>,
    /// Output (`run_name`, `run_id`).
    #[serde(default)]
    pub output: Option<Object>,
}

/// The keys of a request entry: its name, then the sections of [`RequestSections`].
const REQUEST_FIELDS: &[&str] = &[
    "name",
    "benchmark",
    "harness",
    "environment",
    "model",
    "execution",
    "runtime",
    "output",
];

impl RequestSections {
    /// The slot of section `key`.
    fn slot(&mut self, key: &str) -> Option<&mut Option<Object>> {
        Some(match key {
            "benchmark" => &mut self.benchmark,
            "harness" => &mut self.harness,
            "environment" => &mut self.environment,
            "model" => &mut self.model,
            "execution" => &mut self.execution,
            "runtime" => &mut self.runtime,
            "output" => &mut self.output,
            _ => return None,
        })
    }
}

/// `defaults:` of an orchestration file.
pub type OrchestrationDefaults = RequestSections;

/// One entry of `requests:`: a name and its sections.
#[derive(Debug, Clone)]
pub struct RequestEntry {
    /// Unique, non-empty request name.
    pub name: String,
    /// What the request sets.
    pub sections: RequestSections,
}

/// Reads a request entry key by key, so every error names its key path (a flattened struct
/// would report them at the entry).
impl<'de> Deserialize<'de> for RequestEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;

        impl<'de> serde::de::Visitor<'de> for EntryVisitor {
            type Value = RequestEntry;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("struct RequestEntry")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RequestEntry, A::Error> {
                use serde::de::Error;
                let mut name = None;
                let mut sections = RequestSections::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "name" {
                        if name.is_some() {
                            return Err(A::Error::duplicate_field("name"));
                        }
                        name = Some(map.next_value::<String>()?);
                        continue;
                    }
                    let Some(slot) = sections.slot(&key) else {
                        // Refused while reading its value, so the error's path names the key.
                        map.next_value_seed(UnknownField(&key))?;
                        continue;
                    };
                    if slot.is_some() {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    *slot = map.next_value::<Option<Object>>()?;
                }
                let name = name.ok_or_else(|| A::Error::missing_field("name"))?;
                Ok(RequestEntry { name, sections })
            }
        }

        deserializer.deserialize_struct("RequestEntry", REQUEST_FIELDS, EntryVisitor)
    }
}

/// The value of an unknown request key: always an `unknown field` error.
struct UnknownField<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for UnknownField<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(serde::de::Error::unknown_field(self.0, REQUEST_FIELDS))
    }
}

fn version_one() -> u32 {
    1
}

/// A parsed orchestration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestrationFile {
    /// Format version (must be 1).
    #[serde(default = "version_one")]
    pub version: u32,
    /// Orchestration name.
    #[serde(default)]
    pub name: String,
    /// Global concurrency limit.
    #[serde(default)]
    pub task_concurrency: Option<u32>,
    /// Runtime options for the whole orchestration.
    #[serde(default)]
    pub runtime: Object,
    /// Values shared by every request.
    #[serde(default)]
    pub defaults: OrchestrationDefaults,
    /// The requests, in order.
    pub requests: Vec<RequestEntry>,
}

/// Reads and structurally validates an orchestration file (TOML, YAML or JSON).
pub fn load_orchestration_file(path: &Path) -> Result<OrchestrationFile, ConfigError> {
    orchestration_from_value(path, parse_file(path)?)
}

/// [`load_orchestration_file`] on text already read (`path` picks the format and names the
/// file in errors; it is not read).
pub fn parse_orchestration_text(path: &Path, text: &str) -> Result<OrchestrationFile, ConfigError> {
    orchestration_from_value(path, parse_text(path, text)?)
}

fn orchestration_from_value(path: &Path, value: Value) -> Result<OrchestrationFile, ConfigError> {
    let source = path.display().to_string();
    let Some(top) = value.as_object() else {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            message: format!(
                "expected a mapping with `requests` at the top level, found {}",
                agentcompass_plugin_api::contracts::json_type_name(&value)
            ),
        });
    };
    if !top.contains_key("requests") {
        return Err(ConfigError::invalid(
            source,
            "requests",
            "missing: at least one request is needed",
        ));
    }
    check_references(&source, "", &value)?;
    let file: OrchestrationFile = serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let message = agentcompass_plugin_api::one_line(&e.inner().to_string());
        if key == "." {
            ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            }
        } else {
            ConfigError::invalid(source.clone(), key, message)
        }
    })?;
    if file.version != 1 {
        return Err(ConfigError::invalid(
            source,
            "version",
            format!("only version 1 is supported, found {}", file.version),
        ));
    }
    if file.requests.is_empty() {
        return Err(ConfigError::invalid(
            source,
            "requests",
            "at least one request is needed",
        ));
    }
    Ok(file)
}

/// Explicit (command-line) inputs of `launch`.
#[derive(Debug, Clone, Default)]
pub struct LaunchArgs {
    /// `--task-concurrency`.
    pub task_concurrency: Option<u32>,
    /// `--run-id`: applied to every request's `output.run_id`.
    pub run_id: Option<String>,
    /// `--reuse`: sets `defaults.runtime.reuse = true`.
    pub reuse: bool,
    /// `--rerun CLASS_OR_CODE...`: sets `defaults.runtime.rerun`.
    pub rerun: Vec<String>,
    /// `--rerun-invalid`: sets `defaults.runtime.rerun_invalid = true`.
    pub rerun_invalid: bool,
    /// The execution fields of `--include-task`, `--exclude-task`, `--n-tasks` and the timeout
    /// multipliers: over `defaults.execution`, under a request's own `execution`.
    pub execution: serde_json::Map<String, serde_json::Value>,
    /// Runtime overrides (`--results-dir`, `--timeout-seconds`, ...).
    pub runtime: RuntimeOptions,
}

/// One request of an orchestration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrchestratedRun {
    /// Stable key `<orchestration id>/<index>`.
    pub key: String,
    /// Declaration index.
    pub index: usize,
    /// Request name (empty for a direct run).
    pub name: String,
    /// The complete request.
    pub request: RunRequest,
}

/// A resolved orchestration: ordered requests sharing one concurrency limit and runtime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Orchestration {
    /// Random id of this orchestration.
    pub id: String,
    /// Name (from the file).
    pub name: String,
    /// Global limit on running attempts.
    pub task_concurrency: u32,
    /// Process-wide runtime options.
    pub runtime: ResolvedRuntimeOptions,
    /// Requests in declaration order.
    pub requests: Vec<OrchestratedRun>,
}

/// A random 128-bit hex id.
pub fn new_orchestration_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

impl Orchestration {
    /// Wraps resolved requests (a direct run is a one-request orchestration).
    pub fn from_requests(
        name: String,
        task_concurrency: u32,
        runtime: ResolvedRuntimeOptions,
        requests: Vec<(String, RunRequest)>,
    ) -> Self {
        let id = new_orchestration_id();
        let requests = requests
            .into_iter()
            .enumerate()
            .map(|(index, (name, mut request))| {
                request.execution.task_concurrency = task_concurrency;
                OrchestratedRun {
                    key: format!("{id}/{index}"),
                    index,
                    name,
                    request,
                }
            })
            .collect();
        Orchestration {
            id,
            name,
            task_concurrency,
            runtime,
            requests,
        }
    }
}
