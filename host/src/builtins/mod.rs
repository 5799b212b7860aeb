//! Components compiled into the host: only what it needs to work with no plugin at all.

pub mod host_process;

use crate::registry::Builtin;

/// Every built-in component, in registry order.
pub fn all() -> Vec<Builtin> {
    vec![host_process::builtin()]
}
