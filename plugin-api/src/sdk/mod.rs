//! The plugin SDK: the component traits, the call context, a helper runtime for plugins that
//! do tokio I/O, [`crate::export_plugin!`], and [`testing`] helpers for a plugin's unit tests.
//!
//! A plugin is a `cdylib` that depends only on this crate:
//!
//! ```
//! use agentcompass_plugin_api::contracts::{ComponentInfo, ComponentKind, ExecutionPlan, RunRequest, TaskSpec};
//! use agentcompass_plugin_api::sdk::{PluginBuilder, Recipe};
//! use agentcompass_plugin_api::Result;
//!
//! struct PinImage;
//!
//! impl Recipe for PinImage {
//!     fn matches(&self, req: &RunRequest, _: &TaskSpec, plan: &ExecutionPlan) -> Result<bool> {
//!         Ok(req.benchmark.id == "my_bench" && plan.environment.setup.image.is_none())
//!     }
//!     fn apply(&self, mut plan: ExecutionPlan, _: &RunRequest, _: &TaskSpec) -> Result<ExecutionPlan> {
//!         plan.environment.setup.image = Some("debian:bookworm".into());
//!         Ok(plan)
//!     }
//! }
//!
//! fn register(plugin: &mut PluginBuilder) {
//!     plugin.recipe(
//!         ComponentInfo::new(ComponentKind::Recipe, "pin_image", "Pins the task image"),
//!         || Ok(PinImage),
//!     );
//! }
//!
//! agentcompass_plugin_api::export_plugin!(register);
//! ```

pub(crate) mod builder;
mod ctx;
pub mod health;
pub(crate) mod logging;
pub mod metrics;
pub mod params;
pub mod provider;
pub mod runtime;
pub mod select;
mod session_harness;
pub mod testing;
mod traits;
pub mod validate;
pub mod verifier;

pub use async_trait::async_trait;
pub use builder::{BenchmarkHandle, PluginBuilder};
pub use ctx::{BoxFuture, Ctx, HostApi};
pub use session_harness::{SessionHarness, StartInput, TaskCall};
pub use traits::*;

/// Exports a plugin's root module. `$register` is a `fn(&mut PluginBuilder)` that registers
/// the plugin's components; the plugin's name and version are its crate's name and version.
#[macro_export]
macro_rules! export_plugin {
    ($register:path) => {
        #[doc(hidden)]
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::abi::__private::LibHeader = {
            extern "C" fn __agentcompass_erased_root() -> $crate::abi::__private::RootModuleResult {
                $crate::abi::__private::__call_root_module_loader(__agentcompass_root_module)
            }
            fn __agentcompass_root_module() -> $crate::abi::PluginRoot_Ref {
                $crate::bridge::root::root_module_described(
                    env!("CARGO_PKG_NAME"),
                    env!("CARGO_PKG_VERSION"),
                    env!("CARGO_PKG_DESCRIPTION"),
                    $register,
                )
            }
            // SAFETY: `__agentcompass_erased_root` returns the `PluginRoot_Ref` built by
            // `root_module`, erased by abi_stable's own loader shim, which is exactly what
            // `from_constructor::<PluginRoot_Ref>` requires; layout checking stays on.
            unsafe {
                $crate::abi::__private::LibHeader::from_constructor::<$crate::abi::PluginRoot_Ref>(
                    __agentcompass_erased_root,
                    $crate::abi::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}
