//! The plugin side of the root module: component registration and the `extern "C"` factories.

use std::sync::{Arc, OnceLock};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RStr, RString};

use super::{Benchmark, EnvironmentProvider, Harness, HarnessFreeBenchmark, Recipe};
use crate::abi::export::{
    to_json, BenchmarkExport, EnvironmentExport, HarnessExport, RecipeExport,
};
use crate::abi::guard::sync_call;
use crate::abi::{
    BenchmarkBox, EnvironmentBox, HarnessBox, HostBox, PluginDescription, PluginError, PluginRoot,
    PluginRoot_Ref, RecipeBox, API_VERSION,
};
use crate::contracts::{ComponentInfo, ComponentKind};
use crate::{Error, Result};

/// A benchmark together with its harness-free side, when it has one.
#[derive(Clone)]
pub struct BenchmarkHandle {
    /// The benchmark.
    pub benchmark: Arc<dyn Benchmark>,
    /// The same object as a harness-free benchmark (`None` for ordinary benchmarks).
    pub harness_free: Option<Arc<dyn HarnessFreeBenchmark>>,
}

type Factory<T> = Box<dyn Fn() -> Result<T> + Send + Sync>;

enum Constructor {
    Benchmark(Factory<BenchmarkHandle>),
    Harness(Factory<Arc<dyn Harness>>),
    Environment(Factory<Arc<dyn EnvironmentProvider>>),
    Recipe(Factory<Arc<dyn Recipe>>),
}

struct Registered {
    info: ComponentInfo,
    constructor: Constructor,
}

/// Collects a plugin's components (see [`crate::export_plugin!`]).
pub struct PluginBuilder {
    name: String,
    version: String,
    components: Vec<Registered>,
}

impl PluginBuilder {
    fn new(name: &str, version: &str) -> Self {
        PluginBuilder {
            name: name.to_string(),
            version: version.to_string(),
            components: Vec::new(),
        }
    }

    fn push(&mut self, mut info: ComponentInfo, kind: ComponentKind, constructor: Constructor) {
        info.kind = kind;
        self.components.push(Registered { info, constructor });
    }

    /// Registers a benchmark; `make` runs each time the host instantiates it.
    pub fn benchmark<B: Benchmark>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<B> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || {
            let benchmark: Arc<dyn Benchmark> = Arc::new(make()?);
            Ok(BenchmarkHandle {
                benchmark,
                harness_free: None,
            })
        };
        let info = ComponentInfo {
            harness_free: false,
            ..info
        };
        self.push(
            info,
            ComponentKind::Benchmark,
            Constructor::Benchmark(Box::new(factory)),
        );
        self
    }

    /// Registers a harness-free benchmark (selected with harness id `none`).
    pub fn harness_free_benchmark<B: HarnessFreeBenchmark>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<B> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || {
            let benchmark = Arc::new(make()?);
            Ok(BenchmarkHandle {
                benchmark: benchmark.clone(),
                harness_free: Some(benchmark),
            })
        };
        let info = ComponentInfo {
            harness_free: true,
            ..info
        };
        self.push(
            info,
            ComponentKind::Benchmark,
            Constructor::Benchmark(Box::new(factory)),
        );
        self
    }

    /// Registers a harness.
    pub fn harness<H: Harness>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<H> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn Harness>);
        self.push(
            info,
            ComponentKind::Harness,
            Constructor::Harness(Box::new(factory)),
        );
        self
    }

    /// Registers an environment provider.
    pub fn environment<E: EnvironmentProvider>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<E> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn EnvironmentProvider>);
        self.push(
            info,
            ComponentKind::Environment,
            Constructor::Environment(Box::new(factory)),
        );
        self
    }

    /// Registers a recipe.
    pub fn recipe<R: Recipe>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<R> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn Recipe>);
        self.push(
            info,
            ComponentKind::Recipe,
            Constructor::Recipe(Box::new(factory)),
        );
        self
    }

    fn description(&self) -> PluginDescription {
        PluginDescription {
            name: self.name.clone(),
            version: self.version.clone(),
            api_version: API_VERSION.to_string(),
            components: self.components.iter().map(|c| c.info.clone()).collect(),
        }
    }

    fn find(&self, kind: ComponentKind, id: &str) -> Result<&Constructor> {
        self.components
            .iter()
            .find(|c| c.info.kind == kind && c.info.id == id)
            .map(|c| &c.constructor)
            .ok_or_else(|| {
                Error::invalid_input(format!("plugin {} has no {kind} `{id}`", self.name))
            })
    }
}

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
    PLUGIN.get_or_init(|| {
        super::logging::install_panic_hook();
        let mut builder = PluginBuilder::new(name, version);
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
        super::logging::install(host);
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

extern "C" fn new_recipe(id: RStr<'_>) -> RResult<RecipeBox, PluginError> {
    construct(ComponentKind::Recipe, id, |c| match c {
        Constructor::Recipe(make) => Some(make().map(RecipeExport::boxed)),
        _ => None,
    })
}
