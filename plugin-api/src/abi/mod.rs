//! The frozen stable-ABI skeleton shared by the host and every plugin.
//!
//! abi_stable checks this module's layout when a plugin is loaded and accepts a plugin built
//! against the same or a newer interface prefix, never an older one. The surface is therefore
//! small and frozen: a root module (describe, init, one factory per component kind) and one
//! `#[sabi_trait]` object per component kind whose methods carry JSON (`RString`/`RStr`) and
//! return `FfiFuture<RResult<..>>` where they are asynchronous. Contract types evolve additively
//! as serde structs inside those JSON payloads. Nothing may be added to the layout: abi_stable
//! refuses a library whose prefix types (the root, each trait's vtable) have fewer fields than
//! the host's, so an appended field or method would make every older plugin unloadable.
//!
//! Plugin authors never touch this module: they implement the traits of [`crate::sdk`] and call
//! [`crate::export_plugin!`]. The host and the SDK convert between the two with the glue in
//! [`export`] (Rust trait object → ABI object) and [`import`] (ABI object → Rust trait object).

#![allow(
    non_local_definitions,
    non_camel_case_types,
    missing_docs,
    clippy::too_many_arguments
)]

pub mod guard;
pub mod json;
pub mod request_json;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RArc, RBox, ROption, RResult, RStr, RString},
    StableAbi,
};
use async_ffi::FfiFuture;

/// The version of this interface crate (the plugin API version).
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The exported symbol name of a plugin's root module header (checked against abi_stable's).
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

/// An error crossing the boundary: a kind number (see [`crate::ErrorKind::code`]) and a
/// one-line message. The host adds the plugin, component and method names.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct PluginError {
    pub kind: u32,
    pub message: RString,
}

impl From<crate::Error> for PluginError {
    fn from(err: crate::Error) -> Self {
        PluginError {
            kind: err.kind.code(),
            message: err.message.into(),
        }
    }
}

impl From<PluginError> for crate::Error {
    fn from(err: PluginError) -> Self {
        crate::Error::new(
            crate::ErrorKind::from_code(err.kind),
            err.message.into_string(),
        )
    }
}

/// A synchronous call returning JSON.
pub type JsonResult = RResult<RString, PluginError>;
/// An asynchronous call returning JSON.
pub type JsonFuture = FfiFuture<RResult<RString, PluginError>>;
/// An asynchronous call returning nothing.
pub type UnitFuture = FfiFuture<RResult<(), PluginError>>;
/// An asynchronous call returning a flag.
pub type BoolFuture = FfiFuture<RResult<bool, PluginError>>;

/// Host services handed to every asynchronous plugin call (and once, globally, at `init`).
#[sabi_trait]
pub trait HostServicesAbi: Clone + Send + Sync {
    /// Forwards a log record into the host's `tracing` (level: 0 trace ... 4 error).
    fn log(&self, level: u8, target: RStr<'_>, message: RStr<'_>);
    /// Emits a progress event payload (JSON) for the current task.
    fn emit_progress(&self, payload_json: RStr<'_>);
    /// Whether the current operation has been cancelled.
    fn is_cancelled(&self) -> bool;
    /// Resolves when the current operation is cancelled.
    fn cancelled(&self) -> FfiFuture<()>;
    /// Calls a named host service (for example the model gateway) with a JSON request.
    fn call(&self, service: RStr<'_>, request_json: RString) -> JsonFuture;
}

/// Owned host-services object.
pub type HostBox = HostServicesAbi_TO<'static, RArc<()>>;

/// An open environment session; may be handed from one plugin (a provider) to another.
#[sabi_trait]
pub trait SessionAbi: Clone + Send + Sync {
    /// `SessionInfo` JSON.
    fn info(&self) -> RString;
    /// Runs an `ExecRequest` (JSON), returning an `ExecResult` (JSON).
    fn exec(&self, request_json: RString) -> JsonFuture;
    /// Copies a host file into the environment.
    fn upload(&self, src: RString, dst: RString) -> UnitFuture;
    /// Copies a file out of the environment to the host.
    fn download(&self, src: RString, dst: RString) -> UnitFuture;
    /// Copies a host directory into the environment.
    fn upload_dir(&self, src: RString, dst: RString) -> UnitFuture;
    /// Copies a directory out of the environment to the host.
    fn download_dir(&self, src: RString, dst: RString) -> UnitFuture;
    /// Reads a UTF-8 file in the environment.
    fn read_text(&self, path: RString) -> JsonFuture;
    /// Writes a UTF-8 file in the environment.
    fn write_text(&self, path: RString, content: RString) -> UnitFuture;
    /// Whether a regular file exists at the path.
    fn is_file(&self, path: RString) -> BoolFuture;
    /// Whether a directory exists at the path.
    fn is_dir(&self, path: RString) -> BoolFuture;
    /// The session's service endpoint, if any (JSON string or null).
    fn endpoint(&self) -> JsonFuture;
    /// Switches the network policy (`NetworkPolicy` JSON).
    fn set_network_policy(&self, policy_json: RString) -> UnitFuture;
    /// Releases the session.
    fn close(&self) -> UnitFuture;
}

/// Shared session object.
pub type SessionBox = SessionAbi_TO<'static, RArc<()>>;

/// A benchmark (and, when its info says `harness_free`, a harness-free benchmark).
#[sabi_trait]
pub trait BenchmarkAbi: Send + Sync {
    fn evaluation_environment_mode(&self, req: RStr<'_>) -> JsonResult;
    fn metric_contract(&self) -> JsonResult;
    fn load_tasks(&self, ctx: HostBox, req: RString) -> JsonFuture;
    fn select_tasks(&self, ctx: HostBox, tasks: RString, req: RString) -> JsonFuture;
    fn build_plan(&self, task: RStr<'_>, req: RStr<'_>, environment: RStr<'_>) -> JsonResult;
    fn resolve_artifacts(&self, task: RStr<'_>, req: RStr<'_>, plan: RStr<'_>) -> JsonResult;
    fn prepare_task(
        &self,
        ctx: HostBox,
        task: RString,
        env: SessionBox,
        req: RString,
        plan: RString,
    ) -> JsonFuture;
    fn evaluate(
        &self,
        ctx: HostBox,
        task: RString,
        prepared: RString,
        result: RString,
        req: RString,
        plan: RString,
        env: ROption<SessionBox>,
    ) -> JsonFuture;
    fn aggregate_metrics(&self, ctx: HostBox, results: RString, req: RString) -> JsonFuture;
    fn run_task(
        &self,
        ctx: HostBox,
        task: RString,
        prepared: RString,
        req: RString,
        plan: RString,
        env: ROption<SessionBox>,
    ) -> JsonFuture;
    /// `load_tasks` then `select_tasks` inside the plugin: the task list crosses the boundary
    /// once. Plugins built without it answer `Unsupported` and the host does both calls.
    fn load_selected_tasks(&self, ctx: HostBox, req: RString) -> JsonFuture {
        let _ = (ctx, req);
        async_ffi::FutureExt::into_ffi(async {
            RResult::RErr(PluginError {
                kind: crate::ErrorKind::Unsupported.code(),
                message: "load_selected_tasks is not available".into(),
            })
        })
    }
    /// The selected tasks as a stream of pages. Plugins built without it answer
    /// `Unsupported` and the host falls back to `load_selected_tasks`.
    fn open_tasks(
        &self,
        ctx: HostBox,
        req: RString,
    ) -> FfiFuture<RResult<TaskStreamBox, PluginError>> {
        let _ = (ctx, req);
        async_ffi::FutureExt::into_ffi(async {
            RResult::RErr(PluginError {
                kind: crate::ErrorKind::Unsupported.code(),
                message: "open_tasks is not available".into(),
            })
        })
    }
}

/// Owned benchmark object.
pub type BenchmarkBox = BenchmarkAbi_TO<'static, RBox<()>>;

/// A benchmark's selected tasks, read a page at a time (see `sdk::TaskStream`).
#[sabi_trait]
pub trait TaskStreamAbi: Send {
    /// How many tasks the stream yields in all.
    fn total(&self) -> u64;
    /// Up to `max` next tasks as a JSON array of `TaskSpec`; `[]` once done.
    fn next_page(&mut self, max: u32) -> JsonResult;
}

/// Owned task stream object.
pub type TaskStreamBox = TaskStreamAbi_TO<'static, RBox<()>>;

/// A harness (the agent under test).
#[sabi_trait]
pub trait HarnessAbi: Send + Sync {
    fn supports(&self, environment: RStr<'_>, model: RStr<'_>) -> RResult<bool, PluginError>;
    fn build_plan(&self, req: RStr<'_>, environment: RStr<'_>) -> JsonResult;
    fn start_session(
        &self,
        ctx: HostBox,
        env: SessionBox,
        req: RString,
        plan: RString,
    ) -> FfiFuture<RResult<HarnessSessionBox, PluginError>>;
}

/// Owned harness object.
pub type HarnessBox = HarnessAbi_TO<'static, RBox<()>>;

/// A started harness session (the state `start_session` returned).
#[sabi_trait]
pub trait HarnessSessionAbi: Send + Sync {
    fn execute_task(
        &self,
        ctx: HostBox,
        prepared: RString,
        req: RString,
        plan: RString,
    ) -> JsonFuture;
    fn collect_result(
        &self,
        ctx: HostBox,
        prepared: RString,
        req: RString,
        plan: RString,
        result: RString,
    ) -> JsonFuture;
    fn close(&self, ctx: HostBox) -> UnitFuture;
}

/// Owned harness-session object.
pub type HarnessSessionBox = HarnessSessionAbi_TO<'static, RBox<()>>;

/// An environment provider.
#[sabi_trait]
pub trait EnvironmentAbi: Send + Sync {
    fn capabilities(&self) -> JsonResult;
    fn validate_plan(&self, plan: RStr<'_>) -> RResult<(), PluginError>;
    fn open(&self, ctx: HostBox, request: RString) -> FfiFuture<RResult<SessionBox, PluginError>>;
    fn close(&self, ctx: HostBox, close_params: RString) -> UnitFuture;
}

/// Owned environment-provider object.
pub type EnvironmentBox = EnvironmentAbi_TO<'static, RBox<()>>;

/// A recipe (plan adapter). Both methods run during planning and do no I/O.
#[sabi_trait]
pub trait RecipeAbi: Send + Sync {
    fn matches(&self, req: RStr<'_>, task: RStr<'_>, plan: RStr<'_>) -> RResult<bool, PluginError>;
    fn apply(&self, plan: RStr<'_>, req: RStr<'_>, task: RStr<'_>) -> JsonResult;
}

/// Owned recipe object.
pub type RecipeBox = RecipeAbi_TO<'static, RBox<()>>;

/// The root module every plugin exports. Frozen: abi_stable's layout check refuses a library
/// whose prefix types (this root and every trait's vtable) have fewer fields than the host's,
/// so a field or a trait method appended here would make a newer host refuse every plugin
/// built before it. Extend the JSON payloads instead; a new component kind rides an existing
/// object (analyzers: see [`ANALYZER_FACTORY_PREFIX`]).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginRoot_Ref)))]
#[sabi(missing_field(panic))]
pub struct PluginRoot {
    /// `PluginDescription` JSON: name, version, API version, components.
    pub describe: extern "C" fn() -> RResult<RString, PluginError>,
    /// Installs the global host services (log forwarding). Called once, right after loading.
    pub init: extern "C" fn(host: HostBox) -> RResult<(), PluginError>,
    /// Constructs a benchmark by id.
    pub new_benchmark: extern "C" fn(id: RStr<'_>) -> RResult<BenchmarkBox, PluginError>,
    /// Constructs a harness by id.
    pub new_harness: extern "C" fn(id: RStr<'_>) -> RResult<HarnessBox, PluginError>,
    /// Constructs an environment provider by id.
    pub new_environment: extern "C" fn(id: RStr<'_>) -> RResult<EnvironmentBox, PluginError>,
    /// Constructs a recipe by id.
    #[sabi(last_prefix_field)]
    pub new_recipe: extern "C" fn(id: RStr<'_>) -> RResult<RecipeBox, PluginError>,
}

/// Analyzers (plugin API 0.1.1) travel through the frozen root as recipe objects:
/// `new_recipe("analyzer:" + id)` constructs analyzer `id` (component ids cannot contain `:`,
/// so the name never collides with a recipe's), and the object's `apply(input, "", "")` takes
/// an `AnalysisInput` JSON and returns the `AnalysisOutcome` JSON (`matches` answers true).
/// The SDK (`PluginBuilder::analyzer`) and the host's import do both ends; plugin authors see
/// only `sdk::Analyzer`.
pub const ANALYZER_FACTORY_PREFIX: &str = "analyzer:";

/// Typed-parameter validators (plugin API 0.1.2) travel like analyzers:
/// `new_recipe("params:" + kind + ":" + id)` constructs the validator of component `id` of
/// `kind`, and the object's `apply(params, "", "")` takes the component's params JSON and
/// returns them with every default filled in, or the error that refuses them. The host asks
/// only for components whose info says `validates_params`.
pub const PARAMS_FACTORY_PREFIX: &str = "params:";

/// The first plugin-API version whose plugins can provide analyzers.
pub const ANALYZER_API_VERSION: &str = "0.1.1";

impl RootModule for PluginRoot_Ref {
    declare_root_module_statics! {PluginRoot_Ref}
    const BASE_NAME: &'static str = "agentcompass_plugin";
    const NAME: &'static str = "agentcompass plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// What a plugin says about itself (the `describe` payload).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PluginDescription {
    /// Plugin name (equals the manifest's `name`).
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// The plugin-API version the plugin was built against.
    pub api_version: String,
    /// The plugin crate's description (`package.description`; plugin API 0.1.2).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Every component the plugin provides.
    #[serde(default)]
    pub components: Vec<crate::contracts::ComponentInfo>,
}

/// Items the [`crate::export_plugin!`] macro expands to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_module_symbol_matches_abi_stable() {
        assert_eq!(
            ROOT_MODULE_SYMBOL,
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
    }

    #[test]
    fn plugin_errors_convert_both_ways() {
        let err = crate::Error::unsupported("nope");
        let abi: PluginError = err.clone().into();
        assert_eq!(crate::Error::from(abi), err);
    }
}
