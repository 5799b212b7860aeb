//! The typed records of everything `agentcompass-host` persists or exchanges, in the spirit
//! of nextest's `nextest-metadata`: one serde type per file, with its schema name and version,
//! shared by the writer and every reader (the runtime, `summary`, `compare`, the gates, the
//! viewer, the Slurm coordinator), so a field renamed on one side fails to compile on the
//! other instead of failing in an e2e test or, silently, in upstream's readers.
//!
//! | file                                    | record                                   |
//! |-----------------------------------------|------------------------------------------|
//! | `run_info.json`                         | [`run_info::RunInfo`]                    |
//! | `metrics.json`                          | [`metrics::MetricReport`] (plugin API)   |
//! | `details/<state>/<task>/task.json`      | [`task::TaskRecord`]                     |
//! | `…/attempt-N/result.json`               | [`attempt::AttemptRecord`] (written), [`attempt::AttemptHead`] (read) |
//! | `…/attempt-N/agent/trajectory.json`     | [`atif::Trajectory`] (Harbor's ATIF)     |
//! | `…/attempt-N/artifacts.manifest.json`   | [`artifacts::ArtifactManifest`]          |
//! | `…/attempt-N/checkpoint.json`, `…/steps/checkpoint.json` | [`checkpoint::EvaluationCheckpoint`], [`checkpoint::StepsCheckpoint`] |
//! | `.env-resources/<id>.json`              | [`env_record::EnvRecord`]                |
//! | `progress.jsonl`, a cluster job's events | [`progress::EventLine`]                 |
//! | a Harbor job directory's records       | [`harbor_job`] (`export harbor`, reading Harbor jobs) |
//! | a line of `export traces`             | [`traces::TraceRow`]                     |
//! | a cluster job's unit file               | [`cluster::Unit`]                        |
//! | a running run's control socket (`ctl`)   | [`control::ControlRequest`], [`control::ControlAnswer`] |
//!
//! *Invariant*: depends on the plugin API's contracts and serde only; it knows the shapes,
//! never where files live or who writes them (that is `agentcompass-results`). Every field a
//! reader may meet absent has a serde default, and unknown fields are ignored, so files of an
//! older host (and of upstream) still read.

pub mod artifacts;
pub mod atif;
pub mod attempt;
pub mod checkpoint;
pub mod cluster;
pub mod control;
pub mod env_record;
pub mod harbor_job;
pub mod metrics;
pub mod progress;
mod read;
pub mod run_info;
pub mod run_status;
pub mod task;
pub mod traces;

pub use read::{read_json, ReadError};
pub use run_status::RunStatus;
