//! Components compiled into the host: only what it needs to work with no plugin at all, the
//! `host_process` and `sandbox` environment providers, sharing `process` (spawning in a process
//! group, capture, watchdog kill) and `files` (private dirs, text files, probes); names,
//! blocking work and mode-preserving copies are the SDK's `sdk::provider`, and their tests run
//! the SDK's session contract kit.
//!
//! They are written against the plugin API's SDK traits only, exactly as a plugin would be;
//! the host's registry lists them before every plugin.

mod files;
pub mod host_process;
mod process;
pub mod sandbox;

use std::sync::Arc;

use agentcompass_plugin_api::contracts::{ComponentInfo, ComponentKind, ConfigSchema};
use agentcompass_plugin_api::sdk::{BenchmarkHandle, EnvironmentProvider, Harness, Recipe};
use agentcompass_plugin_api::Error;

/// Every built-in component, in registry order.
pub fn all() -> Vec<Builtin> {
    vec![host_process::builtin(), sandbox::builtin()]
}

/// Constructors of built-in components.
#[derive(Clone, Copy)]
pub enum BuiltinFactory {
    /// A benchmark.
    Benchmark(fn() -> Result<BenchmarkHandle, Error>),
    /// A harness.
    Harness(fn() -> Result<Arc<dyn Harness>, Error>),
    /// An environment provider.
    Environment(fn() -> Result<Arc<dyn EnvironmentProvider>, Error>),
    /// A recipe.
    Recipe(fn() -> Result<Arc<dyn Recipe>, Error>),
}

/// A built-in component: what it says about itself and how to make it.
#[derive(Clone)]
pub struct Builtin {
    /// Kind, id, description, schema.
    pub info: ComponentInfo,
    /// Constructor (its kind must match `info.kind`).
    pub factory: BuiltinFactory,
}

impl Builtin {
    /// An environment provider `id` with its description, configuration schema and
    /// constructor.
    pub fn environment(
        id: &str,
        description: &str,
        schema: ConfigSchema,
        make: fn() -> Result<Arc<dyn EnvironmentProvider>, Error>,
    ) -> Builtin {
        Builtin {
            info: ComponentInfo::new(ComponentKind::Environment, id, description)
                .with_schema(schema),
            factory: BuiltinFactory::Environment(make),
        }
    }
}
