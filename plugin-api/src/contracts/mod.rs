//! Serde contract types shared by the host and every plugin.
//!
//! These are the Rust counterparts of the Python AgentCompass runtime data carriers
//! (`RunRequest`, `TaskSpec`, `ExecutionPlan`, `RunResult`, …). They are persisted as JSON, so
//! field names are stable snake_case, every non-essential field has a serde default (adding a
//! field never breaks older JSON) and unknown fields are ignored on deserialisation.

pub mod agent_inputs;
pub mod analysis;
pub mod artifacts;
pub mod component;
pub mod dataset;
pub mod environment;
pub mod metrics;
pub mod model;
pub mod network;
pub mod plan;
pub mod progress;
pub mod request;
pub mod result;
pub mod setup;
pub mod steps;
pub mod task;

pub use agent_inputs::*;
pub use analysis::*;
pub use artifacts::*;
pub use component::*;
pub use dataset::*;
pub use environment::*;
pub use metrics::*;
pub use model::*;
pub use network::*;
pub use plan::*;
pub use progress::*;
pub use request::*;
pub use result::*;
pub use setup::*;
pub use steps::*;
pub use task::*;

/// A free-form JSON object (component params, metadata, telemetry, …).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// The text printed in place of a secret value.
pub const REDACTED: &str = "********";

/// The host service that scrubs free text of every secret the host knows (the resolved API
/// key, resolved `${VAR}` values, environment bindings): request `{"text": ...}`, answer
/// `{"text": ...}`. A component calls it (through [`crate::sdk::Ctx::scrub`]) before it cuts
/// text short, so a secret the cut would fall into is masked whole instead of leaving a
/// fragment no later scrub recognises.
pub const TEXT_SCRUB_SERVICE: &str = "text.scrub";

/// The host service that adds a value to the host's secrets (request `{"value": ...}`, answer
/// `null`): a component that makes a credential of its own (a per-session token, a generated
/// password) registers it, and the host scrubs it from everything it prints or persists from
/// then on. Values shorter than 4 characters are ignored.
pub const SECRET_REGISTER_SERVICE: &str = "secret.register";

/// Formats a string map for `Debug` with every value replaced by [`REDACTED`].
pub(crate) struct RedactedMap<'a>(pub(crate) &'a std::collections::BTreeMap<String, String>);

impl std::fmt::Debug for RedactedMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, REDACTED)))
            .finish()
    }
}
