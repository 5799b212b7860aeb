//! Helpers for environment providers, first- or third-party: one copy of what every provider
//! needs around its backend.
//!
//! - [`sanitise`] and [`random_suffix`]: file- and container-name-safe parts of resource names;
//!   [`check_params`]: parameters against the provider's schema.
//! - [`blocking`]: blocking work (file copies, waiting for a process) on a tokio blocking pool:
//!   the current runtime's when there is one (a built-in provider on the host's runtime, a
//!   plugin inside [`crate::sdk::runtime::spawn`]), else the plugin-owned runtime's.
//! - [`copy_file`], [`copy_tree`], [`copy_tree_contents`]: host-side transfers that keep modes
//!   and symlinks and never write through an existing destination; [`mode_of`],
//!   [`make_writable`], [`transfer_error`].
//! - [`timeout_duration`], [`exit_code`], [`spawn_error`]: the `exec` conventions (timeouts,
//!   exit codes of signalled processes, start failures).

mod blocking;
mod exec;
mod files;
mod names;
mod params;

pub use blocking::blocking;
pub use exec::{exit_code, spawn_error, timeout_duration};
pub use files::{copy_file, copy_tree, copy_tree_contents, make_writable, mode_of, transfer_error};
pub use names::{random_suffix, sanitise};
pub use params::{check_params, string_table};
