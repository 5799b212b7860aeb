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
