//! The agentcompass plugin API: the only crate a plugin depends on.
//!
//! - [`contracts`]: serde types for every data carrier of the runtime (requests, tasks, plans,
//!   results, policies, schemas). They evolve additively: every new field has a default.
//! - [`abi`]: the frozen stable-ABI skeleton (abi_stable root module and `#[sabi_trait]`
//!   objects carrying JSON) and the glue converting between it and the SDK traits.
//! - [`sdk`]: the async traits plugin authors implement, the call context, a helper runtime,
//!   and [`export_plugin!`]; `sdk::provider` has the helpers every environment provider needs.
//! - `contract_kit` (feature `contract-kit`): the environment-session contract as one suite a
//!   provider runs against itself in its tests.
//!
//! The crate version is the plugin-API version; see `ARCHITECTURE.md` for the compatibility
//! rules.

#![deny(missing_docs)]

pub mod abi;
pub mod bridge;
#[cfg(feature = "contract-kit")]
pub mod contract_kit;
pub mod contracts;
mod error;
pub mod sdk;
pub mod wait;

pub use error::{one_line, Error, ErrorKind, Result};
/// Re-exported so plugins log with `agentcompass_plugin_api::tracing::info!(..)`: the SDK
/// forwards these events into the host's log, tagged with the plugin's name.
pub use tracing;
