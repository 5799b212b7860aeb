//! agentcompass-host library: plugin loading, the run-local registry, and the CLI commands.

pub mod analysis;
pub mod compare;
pub mod config;
pub mod console;
pub mod datasets;
pub mod exit_code;
pub mod gates;
pub mod host_services;
pub mod install;
pub mod interchange;
pub mod issue_codes;
pub mod logging;
pub mod malloc_arenas;
pub mod metrics;
pub mod planner;
pub mod progress;
pub mod registry;
pub mod request;
pub mod runtime;
pub mod setup;
