//! The results directory of `agentcompass-host`: the store (the only writer of a run's
//! results directory), every persisted shape and schema name (task, attempt, retry,
//! checkpoint, environment record, `run_info`, the artifact manifest and its verification),
//! task-directory naming and timestamps.
//!
//! This crate depends on nothing of the runtime: it knows how results are laid out and
//! written, never how they are produced. Every write is atomic (temp file, rename) and a task
//! becomes visible only complete, so a crash at any instant leaves a readable directory.

pub mod artifacts;
pub mod atif;
pub mod fsutil;
pub mod naming;
pub mod records;
pub use agentcompass_schema::run_status as status;
pub mod store;
pub mod time;
