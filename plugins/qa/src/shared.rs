//! What every module of the pack shares, in a leaf module (it imports nothing from the crate,
//! so no module cycle can form around it): the registry id and one-line dataset errors.

use agentcompass_plugin_api::Error;

/// Registry id.
pub const ID: &str = "qa";

/// A dataset error (one line). Not prefixed with the benchmark id: the host names the plugin
/// and the benchmark before every error of a plugin's.
pub(crate) fn fail(message: String) -> Error {
    Error::invalid_input(message)
}
