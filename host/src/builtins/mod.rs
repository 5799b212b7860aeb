//! Components compiled into the host: only what it needs to work with no plugin at all.

use crate::registry::Builtin;

/// Every built-in component, in registry order.
pub fn all() -> Vec<Builtin> {
    Vec::new()
}
