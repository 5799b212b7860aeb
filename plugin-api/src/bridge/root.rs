//! A plugin's root module: the `extern "C"` functions the host calls (describe, init, one
//! factory per kind), built from the plugin's registration. `export_plugin!` expands to a
//! call of [`root_module`].

use std::sync::OnceLock;

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RStr, RString};

use super::export::{
    AnalyzerExport, BenchmarkExport, EnvironmentExport, HarnessExport, ParamsExport, RecipeExport,
};
use crate::abi::guard::sync_call;
use crate::abi::json::to_json;
use crate::abi::{
    BenchmarkBox, EnvironmentBox, HarnessBox, HostBox, PluginError, PluginRoot, PluginRoot_Ref,
    RecipeBox, ANALYZER_FACTORY_PREFIX, PARAMS_FACTORY_PREFIX,
};
use crate::contracts::ComponentKind;
use crate::sdk::builder::Constructor;
use crate::sdk::PluginBuilder;
use crate::{Error, Result};

static PLUGIN: OnceLock<Result<PluginBuilder>> = OnceLock::new();

fn plugin() -> Result<&'static PluginBuilder> {
    match PLUGIN.get() {
        Some(Ok(plugin)) => Ok(plugin),
        Some(Err(err)) => Err(err.clone()),
        None => Err(Error::msg("plugin root module is not initialised")),
    }
}

/// Builds the root module (called by [`crate::export_plugin!`]). A panic in `register` is
/// contained here and reported by every later call (first of all `describe`).
pub fn root_module(name: &str, version: &str, register: fn(&mut PluginBuilder)) -> PluginRoot_Ref {
    root_module_described(name, version, "", register)
}

/// [`root_module`] with the plugin crate's description (what [`crate::export_plugin!`] calls
/// since plugin API 0.1.2; `plugin package` writes it into the manifest).
pub fn root_module_described(
    name: &str,
    version: &str,
    description: &str,
    register: fn(&mut PluginBuilder),
) -> PluginRoot_Ref {
    PLUGIN.get_or_init(|| {
        crate::sdk::logging::install_panic_hook();
        let mut builder = PluginBuilder::new(name, version);
        builder.set_description(description);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| register(&mut builder)))
            .map(|()| builder)
            .map_err(|payload| {
                Error::from_panic(payload.as_ref()).context("registering components")
            })
    });
    PluginRoot {
        describe,
        init,
        new_benchmark,
        new_harness,
        new_environment,
        new_recipe,
    }
    .leak_into_prefix()
}

extern "C" fn describe() -> RResult<RString, PluginError> {
    sync_call(|| to_json(&plugin()?.description()))
}

extern "C" fn init(host: HostBox) -> RResult<(), PluginError> {
    sync_call(|| {
        crate::sdk::logging::install(host);
        Ok(())
    })
}

fn construct<T>(
    kind: ComponentKind,
    id: RStr<'_>,
    pick: impl FnOnce(&Constructor) -> Option<Result<T>>,
) -> RResult<T, PluginError> {
    sync_call(|| {
        let constructor = plugin()?.find(kind, id.as_str())?;
        pick(constructor)
            .unwrap_or_else(|| Err(Error::msg("component registered under another kind")))
            .map_err(|e| e.context("constructor"))
    })
}

extern "C" fn new_benchmark(id: RStr<'_>) -> RResult<BenchmarkBox, PluginError> {
    construct(ComponentKind::Benchmark, id, |c| match c {
        Constructor::Benchmark(make) => {
            Some(make().map(|h| BenchmarkExport::boxed(h.benchmark, h.harness_free)))
        }
        _ => None,
    })
}

extern "C" fn new_harness(id: RStr<'_>) -> RResult<HarnessBox, PluginError> {
    construct(ComponentKind::Harness, id, |c| match c {
        Constructor::Harness(make) => Some(make().map(HarnessExport::boxed)),
        _ => None,
    })
}

extern "C" fn new_environment(id: RStr<'_>) -> RResult<EnvironmentBox, PluginError> {
    construct(ComponentKind::Environment, id, |c| match c {
        Constructor::Environment(make) => Some(make().map(EnvironmentExport::boxed)),
        _ => None,
    })
}

/// Constructs a recipe, or (id `analyzer:ID`) the object carrying analyzer `ID`, or (id
/// `params:KIND:ID`) the object carrying the params validator of component `ID` of `KIND`.
extern "C" fn new_recipe(id: RStr<'_>) -> RResult<RecipeBox, PluginError> {
    if let Some(target) = id.as_str().strip_prefix(PARAMS_FACTORY_PREFIX) {
        return sync_call(|| {
            let (kind, id) = target
                .split_once(':')
                .ok_or_else(|| Error::invalid_input(format!("bad params carrier `{target}`")))?;
            let kind: ComponentKind = serde_json::from_value(serde_json::Value::from(kind))
                .map_err(|e| Error::invalid_input(format!("bad component kind `{kind}`: {e}")))?;
            Ok(ParamsExport::boxed(plugin()?.params_check(kind, id)?))
        });
    }
    if let Some(analyzer) = id.as_str().strip_prefix(ANALYZER_FACTORY_PREFIX) {
        return construct(ComponentKind::Analyzer, RStr::from(analyzer), |c| match c {
            Constructor::Analyzer(make) => Some(make().map(AnalyzerExport::boxed)),
            _ => None,
        });
    }
    construct(ComponentKind::Recipe, id, |c| match c {
        Constructor::Recipe(make) => Some(make().map(RecipeExport::boxed)),
        _ => None,
    })
}
