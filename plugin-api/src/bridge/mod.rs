//! The adapters between the SDK's trait objects and the frozen ABI objects of [`crate::abi`]:
//! [`export`] wraps components (plugin side) and sessions and host services (host side) into
//! ABI objects; [`import`] wraps ABI objects back into the same traits; [`host`] and
//! [`session`] carry host services and sessions both ways; [`root`] builds a plugin's root
//! module from its [`PluginBuilder`](crate::sdk::PluginBuilder) (what `export_plugin!`
//! expands to). Plugin authors never use this module directly.

#[macro_use]
mod call;
pub mod export;
pub mod host;
pub mod import;

#[doc(hidden)]
pub mod root;
pub mod session;
mod steps;

pub use crate::abi::json::{from_json, to_json};
pub use call::Label;

/// Decodes text received over the boundary with `decode`, then frees it. An export's future
/// that decoded from a borrow would hold the text for as long as the call runs — an agent's
/// whole run, a command's whole execution: the request, prepared task and plan of every
/// running task, ~3 KB each (`bench/PROFILE.md`).
pub(crate) fn consume<T>(
    text: abi_stable::std_types::RString,
    decode: impl FnOnce(&str) -> T,
) -> T {
    decode(&text)
}
