//! `runtime.executor` and `[runtime.slurm]`: where a request's units of work (one task's
//! attempt loop each) run — in this process, or as Slurm jobs on a cluster's nodes.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// Where the tasks of a run execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Executor {
    /// In this process (the default).
    #[default]
    Local,
    /// As Slurm jobs (`sbatch`), the tasks published through the shared directory.
    Slurm,
}

impl Executor {
    /// Whether this is the default executor (omitted when printed).
    pub fn is_local(&self) -> bool {
        *self == Executor::Local
    }
}

/// `[runtime.slurm]` as written: every field optional, later overlays win field by field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOverlay {
    /// `sbatch --partition`.
    pub partition: Option<String>,
    /// `sbatch --account`.
    pub account: Option<String>,
    /// `sbatch --qos`.
    pub qos: Option<String>,
    /// `sbatch --time` (Slurm's syntax: `MM`, `HH:MM:SS`, `D-HH`).
    pub time_limit: Option<String>,
    /// `sbatch --cpus-per-task`; also how many tasks one job runs at once.
    pub cpus_per_job: Option<u32>,
    /// `sbatch --mem` (`4G`, `500M`).
    pub mem_per_job: Option<String>,
    /// Tasks one job takes in turn (pilot jobs for short tasks; 1 for long agent tasks).
    pub attempts_per_job: Option<u32>,
    /// Jobs of the run submitted and not yet ended, at most.
    pub max_jobs_in_flight: Option<u32>,
    /// More `sbatch` arguments, passed as written (after ours).
    pub extra_sbatch_args: Option<Vec<String>>,
    /// The directory the login node and every compute node see at the same path (default:
    /// the results directory).
    pub shared_dir: Option<String>,
    /// How often a job whose tasks were lost (node failure, job killed) is resubmitted.
    pub max_resubmits: Option<u32>,
}

/// The resolved `[runtime.slurm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    /// `sbatch --partition` (`None`: the cluster's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `sbatch --account`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `sbatch --qos`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// `sbatch --time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
    /// `sbatch --cpus-per-task`, and the tasks one job runs at once.
    pub cpus_per_job: u32,
    /// `sbatch --mem`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_job: Option<String>,
    /// Tasks one job takes in turn.
    pub attempts_per_job: u32,
    /// Jobs of the run in flight, at most.
    pub max_jobs_in_flight: u32,
    /// More `sbatch` arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_sbatch_args: Vec<String>,
    /// The shared directory (`None`: the results directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_dir: Option<String>,
    /// Resubmissions of a task whose job ended without publishing it.
    pub max_resubmits: u32,
}

impl Default for SlurmOptions {
    fn default() -> Self {
        SlurmOptions {
            partition: None,
            account: None,
            qos: None,
            time_limit: None,
            cpus_per_job: 1,
            mem_per_job: None,
            attempts_per_job: 1,
            max_jobs_in_flight: 64,
            extra_sbatch_args: Vec::new(),
            shared_dir: None,
            max_resubmits: 3,
        }
    }
}

impl SlurmOptions {
    /// Whether nothing differs from the defaults (omitted when printed).
    pub fn is_default(&self) -> bool {
        *self == SlurmOptions::default()
    }

    /// Applies an overlay from `source`, checking each value.
    pub fn apply(&mut self, source: &str, over: &SlurmOverlay) -> Result<(), ConfigError> {
        let positive = |key: &str, value: u32| {
            if value == 0 {
                Err(ConfigError::invalid(
                    source,
                    format!("runtime.slurm.{key}"),
                    "expected a whole number ≥ 1, found 0".to_string(),
                ))
            } else {
                Ok(value)
            }
        };
        let text = |key: &str, value: &str| {
            if value.trim().is_empty() || value.chars().any(char::is_whitespace) {
                Err(ConfigError::invalid(
                    source,
                    format!("runtime.slurm.{key}"),
                    format!("expected one word without spaces, found `{value}`"),
                ))
            } else {
                Ok(Some(value.to_string()))
            }
        };
        if let Some(v) = &over.partition {
            self.partition = text("partition", v)?;
        }
        if let Some(v) = &over.account {
            self.account = text("account", v)?;
        }
        if let Some(v) = &over.qos {
            self.qos = text("qos", v)?;
        }
        if let Some(v) = &over.time_limit {
            self.time_limit = text("time_limit", v)?;
        }
        if let Some(v) = over.cpus_per_job {
            self.cpus_per_job = positive("cpus_per_job", v)?;
        }
        if let Some(v) = &over.mem_per_job {
            self.mem_per_job = text("mem_per_job", v)?;
        }
        if let Some(v) = over.attempts_per_job {
            self.attempts_per_job = positive("attempts_per_job", v)?;
        }
        if let Some(v) = over.max_jobs_in_flight {
            self.max_jobs_in_flight = positive("max_jobs_in_flight", v)?;
        }
        if let Some(v) = &over.extra_sbatch_args {
            self.extra_sbatch_args = v.clone();
        }
        if let Some(v) = &over.shared_dir {
            if v.trim().is_empty() {
                return Err(ConfigError::invalid(
                    source,
                    "runtime.slurm.shared_dir",
                    "must not be empty".to_string(),
                ));
            }
            self.shared_dir = Some(v.clone());
        }
        if let Some(v) = over.max_resubmits {
            self.max_resubmits = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlays_apply_field_by_field_and_check_values() {
        let mut options = SlurmOptions::default();
        assert!(options.is_default());
        let over = SlurmOverlay {
            partition: Some("gpu".into()),
            attempts_per_job: Some(20),
            ..SlurmOverlay::default()
        };
        options.apply("c.toml", &over).unwrap();
        assert_eq!(options.partition.as_deref(), Some("gpu"));
        assert_eq!(options.attempts_per_job, 20);
        assert_eq!(options.cpus_per_job, 1);
        let zero = SlurmOverlay {
            max_jobs_in_flight: Some(0),
            ..SlurmOverlay::default()
        };
        let err = options.apply("c.toml", &zero).unwrap_err().to_string();
        assert_eq!(
            err,
            "c.toml: runtime.slurm.max_jobs_in_flight: expected a whole number ≥ 1, found 0"
        );
        let spaced = SlurmOverlay {
            qos: Some("a b".into()),
            ..SlurmOverlay::default()
        };
        let err = options.apply("c.toml", &spaced).unwrap_err().to_string();
        assert_eq!(
            err,
            "c.toml: runtime.slurm.qos: expected one word without spaces, found `a b`"
        );
    }

    #[test]
    fn executor_names_are_lowercase() {
        assert_eq!(
            serde_json::to_value(Executor::Slurm).unwrap(),
            serde_json::json!("slurm")
        );
        let err = serde_json::from_value::<Executor>(serde_json::json!("k8s")).unwrap_err();
        assert!(err.to_string().contains("unknown variant `k8s`"), "{err}");
    }
}
