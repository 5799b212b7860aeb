//! `agentcompass-viewer`: a local web server over a results directory (`agentcompass-host
//! view`). It serves the embedded front end and a JSON API (the contract is README's "Viewing
//! results"), and relays the controls of a live run to its control socket ([`control`]; only
//! with the viewer's secret, never in `--read-only`). *Invariant*: it never writes anything,
//! and every path it opens is resolved under the canonical results root ([`paths`]); a path
//! leaving it is "not found".

pub mod api;
pub mod assets;
pub mod charts;
pub mod compare;
pub mod control;
pub mod error;
pub mod index;
pub mod metrics;
pub mod paired;
pub mod paths;
pub mod query;
pub mod report;
pub mod runs;
pub mod server;
pub mod task;
pub mod tasks;
pub mod timeline;

pub use api::App;
pub use error::ViewerError;
pub use server::{serve, serve_app, serve_with_paired, ViewerHandle};
