//! Components compiled into the host: only what it needs to work with no plugin at all.

mod files;
pub mod host_process;
mod process;
pub mod sandbox;

use crate::registry::Builtin;

/// Every built-in component, in registry order.
pub fn all() -> Vec<Builtin> {
    vec![host_process::builtin(), sandbox::builtin()]
}
