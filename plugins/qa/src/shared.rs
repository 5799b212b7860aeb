//! What every module of the pack shares, in a leaf module (it imports nothing from the crate,
//! so no module cycle can form around it): the registry id, one-line dataset errors prefixed
//! with it.

use agentcompass_plugin_api::Error;

/// Registry id.
pub const ID: &str = "qa";

/// A dataset error (one line, prefixed with the benchmark id).
pub(crate) fn fail(message: String) -> Error {
    Error::invalid_input(format!("{ID}: {message}"))
}
