//! What every module of the pack shares, in a leaf module (it imports nothing from the crate,
//! so no module cycle can form around it): the registry id, one-line dataset errors prefixed
//! with it, and the hex form of the dataset digest.

use agentcompass_plugin_api::Error;

/// Registry id.
pub const ID: &str = "qa";

/// Lower-case hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A dataset error (one line, prefixed with the benchmark id).
pub(crate) fn fail(message: String) -> Error {
    Error::invalid_input(format!("{ID}: {message}"))
}
