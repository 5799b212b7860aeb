//! Process-wide runtime options (results dir, deadline, cleanup grace, provider limits,
//! environment open rate, progress, logging, plugin and recipe dirs, the egress proxy's static
//! names) — distinct from the per-request `RunRuntimeSpec` (reuse).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use agentcompass_egress::HostMap;

use crate::config::ConfigError;
use crate::progress::ProgressMode;

pub use super::executor_options::{Executor, SlurmOptions, SlurmOverlay};

/// `runtime.egress`: options of the egress proxies providers run for `allowlist` and
/// `denylist` policies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressOptions {
    /// Static names, name = IP address (`"models.internal" = "127.0.0.2"`), resolved by the
    /// proxy before DNS, like Docker's `--add-host`; passed to providers in
    /// `OpenEnvironmentRequest::egress_hosts`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<String, String>,
}

impl EgressOptions {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }
}

/// An overlay of runtime options: every field optional; later overlays win field by field
/// (maps are updated key by key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeOptions {
    /// Root of result directories.
    pub results_dir: Option<String>,
    /// Where datasets are cached.
    pub data_dir: Option<String>,
    /// Orchestration deadline in seconds (0 disables).
    pub timeout_seconds: Option<f64>,
    /// How long cleanup may take after cancellation.
    pub cleanup_grace_seconds: Option<f64>,
    /// Evaluation checkpoints are saved for evaluations still running after this long.
    pub checkpoint_after_seconds: Option<f64>,
    /// Terminal progress mode.
    pub progress: Option<ProgressMode>,
    /// Seconds between two `--progress plain` lines.
    pub progress_interval_seconds: Option<f64>,
    /// Console log level.
    pub log_level: Option<String>,
    /// `run.log` level.
    pub file_log_level: Option<String>,
    /// Extra log file.
    pub log_file: Option<String>,
    /// Install missing benchmark dependencies automatically.
    pub auto_install_dependencies: Option<bool>,
    /// Maximum open environments per provider (0 = unlimited).
    pub provider_limits: Option<BTreeMap<String, u32>>,
    /// Environment opens per second per provider (0 = unpaced).
    pub env_open_qps: Option<BTreeMap<String, f64>>,
    /// Trusted recipe-plugin directories.
    pub recipe_dirs: Option<Vec<String>>,
    /// Trusted plugin directories.
    pub plugin_dirs: Option<Vec<String>>,
    /// Plugin lock file.
    pub plugin_lock: Option<String>,
    /// The egress proxies' options (`hosts` updated name by name).
    pub egress: Option<EgressOptions>,
    /// The install cache of the tools harnesses run inside environments.
    pub install_cache_dir: Option<String>,
    /// Load the plugins bundled next to the binary (`--no-bundled-plugins` clears it).
    pub bundled_plugins: Option<bool>,
    /// Where tasks execute (`local` or `slurm`).
    pub executor: Option<Executor>,
    /// The Slurm executor's options.
    pub slurm: Option<SlurmOverlay>,
    /// The orchestration's budget (every request spends from it).
    pub budget: Option<agentcompass_plugin_api::contracts::Budget>,
    /// Stop starting tasks once non-agent failures exceed this share of the finished tasks
    /// (below 1) or this many tasks (1 or more).
    pub fail_on_error: Option<f64>,
    /// OpenTelemetry export of the run's spans (`endpoint`, `content`).
    pub otel: Option<agentcompass_otel::OtelOverlay>,
}

/// The resolved process-wide runtime options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedRuntimeOptions {
    /// Root of result directories.
    pub results_dir: String,
    /// Where datasets are cached.
    pub data_dir: String,
    /// Orchestration deadline in seconds (0 disables).
    pub timeout_seconds: f64,
    /// How long cleanup may take after cancellation.
    pub cleanup_grace_seconds: f64,
    /// An attempt's evaluation checkpoint is saved once its evaluation (with the environment
    /// close before it) has run this long; 0 saves it before every evaluation. A quicker
    /// evaluation writes its result instead, which is all a rerun needs.
    pub checkpoint_after_seconds: f64,
    /// Terminal progress mode.
    pub progress: ProgressMode,
    /// Seconds between two `--progress plain` lines (default 10).
    pub progress_interval_seconds: f64,
    /// Console log level.
    pub log_level: String,
    /// `run.log` level.
    pub file_log_level: String,
    /// Extra log file.
    pub log_file: Option<String>,
    /// Install missing benchmark dependencies automatically.
    pub auto_install_dependencies: bool,
    /// Maximum open environments per provider (absent or 0 = unlimited).
    pub provider_limits: BTreeMap<String, u32>,
    /// Environment opens per second per provider (absent or 0 = unpaced).
    pub env_open_qps: BTreeMap<String, f64>,
    /// Trusted recipe-plugin directories.
    pub recipe_dirs: Vec<String>,
    /// Trusted plugin directories.
    pub plugin_dirs: Vec<String>,
    /// Plugin lock file.
    pub plugin_lock: Option<String>,
    /// The egress proxies' options (not printed when empty).
    #[serde(default, skip_serializing_if = "EgressOptions::is_empty")]
    pub egress: EgressOptions,
    /// The install cache of the tools harnesses run inside environments (`None`:
    /// `InstallCache::default_root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_cache_dir: Option<String>,
    /// Load the plugins bundled next to the binary (`--no-bundled-plugins` clears it; not
    /// printed, as no configuration file sets it).
    #[serde(default = "yes", skip_serializing)]
    pub bundled_plugins: bool,
    /// Where tasks execute (not printed when `local`).
    #[serde(default, skip_serializing_if = "Executor::is_local")]
    pub executor: Executor,
    /// The Slurm executor's options (not printed when default).
    #[serde(default, skip_serializing_if = "SlurmOptions::is_default")]
    pub slurm: SlurmOptions,
    /// The orchestration's budget (not printed when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<agentcompass_plugin_api::contracts::Budget>,
    /// `--fail-on-error`: the share (below 1) or number (1 or more) of non-agent failures
    /// among finished tasks past which no new task starts (not printed when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_on_error: Option<f64>,
    /// `runtime.otel`: the run's spans are exported as it runs (not printed when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otel: Option<agentcompass_otel::OtelOverlay>,
}

/// The default `data_dir`: `$XDG_CACHE_HOME/agentcompass-host/data`, else
/// `$HOME/.cache/agentcompass-host/data` — a user's cache, never the working tree (upstream's
/// default is `./data`, which puts downloads inside whatever checkout a run starts in).
pub fn default_data_dir() -> String {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| std::path::PathBuf::from(home).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    cache
        .join("agentcompass-host")
        .join("data")
        .display()
        .to_string()
}

impl Default for ResolvedRuntimeOptions {
    fn default() -> Self {
        ResolvedRuntimeOptions {
            results_dir: "results".into(),
            data_dir: default_data_dir(),
            timeout_seconds: 360_000.0,
            cleanup_grace_seconds: 30.0,
            checkpoint_after_seconds: 1.0,
            progress: ProgressMode::Auto,
            progress_interval_seconds: 10.0,
            log_level: "INFO".into(),
            file_log_level: "DEBUG".into(),
            log_file: None,
            auto_install_dependencies: false,
            provider_limits: ["host_process", "sandbox", "docker"]
                .into_iter()
                .map(|p| (p.to_string(), 128))
                .collect(),
            env_open_qps: BTreeMap::new(),
            recipe_dirs: Vec::new(),
            plugin_dirs: Vec::new(),
            plugin_lock: None,
            egress: EgressOptions::default(),
            install_cache_dir: None,
            bundled_plugins: true,
            executor: Executor::Local,
            slurm: SlurmOptions::default(),
            budget: None,
            fail_on_error: None,
            otel: None,
        }
    }
}

fn yes() -> bool {
    true
}

const LOG_LEVELS: [&str; 5] = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];

fn check_level(source: &str, key: &str, level: &str) -> Result<String, ConfigError> {
    let upper = level.to_ascii_uppercase();
    let upper = if upper == "WARN" {
        "WARNING".to_string()
    } else {
        upper
    };
    if LOG_LEVELS.contains(&upper.as_str()) {
        Ok(upper)
    } else {
        Err(ConfigError::invalid(
            source,
            key,
            format!("expected one of {}, found `{level}`", LOG_LEVELS.join(", ")),
        ))
    }
}

fn check_seconds(source: &str, key: &str, value: f64) -> Result<f64, ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ConfigError::invalid(
            source,
            key,
            format!("expected seconds ≥ 0, found {value}"),
        ))
    }
}

/// A results directory must be a directory, or not exist yet under a directory: the nearest
/// existing ancestor of `value` (itself included) must be a directory.
fn check_results_dir(source: &str, key: &str, value: &str) -> Result<String, ConfigError> {
    let path = std::path::Path::new(value);
    let existing = path
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_ok());
    match existing.map(|a| (a, std::fs::metadata(a))) {
        Some((found, Ok(meta))) if !meta.is_dir() => {
            let what = if meta.is_file() {
                "a regular file"
            } else {
                "not a directory"
            };
            let at = if found == path {
                String::new()
            } else {
                format!(" at `{}`", found.display())
            };
            Err(ConfigError::invalid(
                source,
                key,
                format!("expected a directory, found {what}{at}: `{value}`"),
            ))
        }
        _ => Ok(value.to_string()),
    }
}

impl RuntimeOptions {
    /// Parses an overlay from a mapping (`runtime` config section, orchestration `runtime:`),
    /// ignoring the per-request keys `reuse`, `checkpoint_resume` and `reuse_run_id`.
    pub fn from_map(
        source: &str,
        path: &str,
        map: &Map<String, Value>,
    ) -> Result<Self, ConfigError> {
        let mut map = map.clone();
        for key in ["reuse", "checkpoint_resume", "reuse_run_id"] {
            map.remove(key);
        }
        serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
            let key = e.path().to_string();
            let key = if key == "." {
                path.to_string()
            } else {
                format!("{path}.{key}")
            };
            ConfigError::invalid(
                source,
                key,
                agentcompass_plugin_api::one_line(&e.inner().to_string()),
            )
        })
    }
}

/// Who a rejected runtime value is blamed on: its flag from the `command line` source
/// (`--timeout-seconds`, ...), else the source itself (a config file).
struct Blame<'a>(&'a str);

impl Blame<'_> {
    fn flag(&self, key: &str) -> String {
        if self.0 == "command line" {
            format!("--{}", key.replace('_', "-"))
        } else {
            self.0.to_string()
        }
    }

    fn path(key: &str) -> String {
        format!("runtime.{key}")
    }
}

impl ResolvedRuntimeOptions {
    /// Applies an overlay: set fields replace, maps are updated key by key.
    /// From the `command line` source, a rejected value is blamed on its flag
    /// (`--timeout-seconds`, ...).
    pub fn apply(&mut self, source: &str, over: &RuntimeOptions) -> Result<(), ConfigError> {
        let blame = Blame(source);
        self.apply_files_and_times(&blame, over)?;
        self.apply_plugins_and_executor(&blame, over)?;
        self.apply_guards(&blame, over)
    }

    /// Results and data directories, timeouts, progress and logging.
    fn apply_files_and_times(
        &mut self,
        blame: &Blame<'_>,
        over: &RuntimeOptions,
    ) -> Result<(), ConfigError> {
        let (flag, path) = (|key: &str| blame.flag(key), Blame::path);
        if let Some(v) = &over.results_dir {
            self.results_dir = check_results_dir(&flag("results_dir"), &path("results_dir"), v)?;
        }
        if let Some(v) = &over.data_dir {
            self.data_dir = v.clone();
        }
        if let Some(v) = over.timeout_seconds {
            self.timeout_seconds =
                check_seconds(&flag("timeout_seconds"), &path("timeout_seconds"), v)?;
        }
        if let Some(v) = over.cleanup_grace_seconds {
            self.cleanup_grace_seconds = check_seconds(
                &flag("cleanup_grace_seconds"),
                &path("cleanup_grace_seconds"),
                v,
            )?;
        }
        if let Some(v) = over.checkpoint_after_seconds {
            self.checkpoint_after_seconds = check_seconds(
                &flag("checkpoint_after_seconds"),
                &path("checkpoint_after_seconds"),
                v,
            )?;
        }
        if let Some(v) = over.progress {
            self.progress = v;
        }
        if let Some(v) = over.progress_interval_seconds {
            let key = "progress_interval_seconds";
            let v = check_seconds(&flag(key), &path(key), v)?;
            if v == 0.0 {
                return Err(ConfigError::invalid(
                    flag(key),
                    path(key),
                    "expected seconds > 0, found 0",
                ));
            }
            self.progress_interval_seconds = v;
        }
        if let Some(v) = &over.log_level {
            self.log_level = check_level(&flag("log_level"), &path("log_level"), v)?;
        }
        if let Some(v) = &over.file_log_level {
            self.file_log_level = check_level(&flag("file_log_level"), &path("file_log_level"), v)?;
        }
        if let Some(v) = &over.log_file {
            self.log_file = Some(v.clone());
        }
        Ok(())
    }

    /// Installs, provider limits and rates, plugin and recipe directories, the executor.
    fn apply_plugins_and_executor(
        &mut self,
        blame: &Blame<'_>,
        over: &RuntimeOptions,
    ) -> Result<(), ConfigError> {
        let (flag, path) = (|key: &str| blame.flag(key), Blame::path);
        if let Some(v) = over.auto_install_dependencies {
            self.auto_install_dependencies = v;
        }
        if let Some(limits) = &over.provider_limits {
            self.provider_limits
                .extend(limits.iter().map(|(k, v)| (k.clone(), *v)));
        }
        if let Some(rates) = &over.env_open_qps {
            for (provider, qps) in rates {
                let qps = check_seconds(
                    &flag("env_open_qps"),
                    &format!("runtime.env_open_qps.{provider}"),
                    *qps,
                )?;
                self.env_open_qps.insert(provider.clone(), qps);
            }
        }
        if let Some(v) = &over.recipe_dirs {
            self.recipe_dirs = v.clone();
        }
        if let Some(v) = &over.plugin_dirs {
            self.plugin_dirs = v.clone();
        }
        if let Some(v) = &over.plugin_lock {
            self.plugin_lock = Some(v.clone());
        }
        if let Some(dir) = &over.install_cache_dir {
            if dir.trim().is_empty() {
                return Err(ConfigError::invalid(
                    flag("install_cache_dir"),
                    path("install_cache_dir"),
                    "must not be empty".to_string(),
                ));
            }
            self.install_cache_dir = Some(dir.clone());
        }
        if let Some(bundled) = over.bundled_plugins {
            self.bundled_plugins = bundled;
        }
        if let Some(executor) = over.executor {
            self.executor = executor;
        }
        if let Some(slurm) = &over.slurm {
            self.slurm.apply(&flag("slurm"), slurm)?;
        }
        if let Some(otel) = &over.otel {
            self.otel.get_or_insert_with(Default::default).apply(otel);
        }
        Ok(())
    }

    /// The run's guards: the budget, the error-rate stop, the egress host map.
    fn apply_guards(
        &mut self,
        blame: &Blame<'_>,
        over: &RuntimeOptions,
    ) -> Result<(), ConfigError> {
        let (flag, path) = (|key: &str| blame.flag(key), Blame::path);
        if let Some(budget) = &over.budget {
            super::sections::check_budget(budget).map_err(|(field, message)| {
                ConfigError::invalid(flag("budget"), format!("runtime.budget.{field}"), message)
            })?;
            self.budget = Some(budget.clone());
        }
        if let Some(rate) = over.fail_on_error {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(ConfigError::invalid(
                    flag("fail_on_error"),
                    path("fail_on_error"),
                    format!(
                        "expected a share of failures in (0, 1) or a count of 1 or more, found {rate}"
                    ),
                ));
            }
            self.fail_on_error = Some(rate);
        }
        if let Some(egress) = &over.egress {
            for (name, address) in &egress.hosts {
                HostMap::from_pairs([(name, address)]).map_err(|e| {
                    ConfigError::invalid(
                        flag("egress"),
                        format!("runtime.egress.hosts.{name}"),
                        e.to_string(),
                    )
                })?;
                self.egress.hosts.insert(name.clone(), address.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
