//! Component registration: what a plugin's `register` function fills in (the root module
//! built from it lives in `crate::bridge::root`).

use std::sync::Arc;

use super::params::Params;
use super::{Analyzer, Benchmark, EnvironmentProvider, Harness, HarnessFreeBenchmark, Recipe};
use crate::abi::{PluginDescription, API_VERSION};
use crate::contracts::{ComponentInfo, ComponentKind, JsonMap};
use crate::{Error, Result};

/// A benchmark together with its harness-free side, when it has one.
#[derive(Clone)]
pub struct BenchmarkHandle {
    /// The benchmark.
    pub benchmark: Arc<dyn Benchmark>,
    /// The same object as a harness-free benchmark (`None` for ordinary benchmarks).
    pub harness_free: Option<Arc<dyn HarnessFreeBenchmark>>,
}

pub(crate) type Factory<T> = Box<dyn Fn() -> Result<T> + Send + Sync>;

pub(crate) enum Constructor {
    Benchmark(Factory<BenchmarkHandle>),
    Harness(Factory<Arc<dyn Harness>>),
    Environment(Factory<Arc<dyn EnvironmentProvider>>),
    Recipe(Factory<Arc<dyn Recipe>>),
    Analyzer(Factory<Arc<dyn Analyzer>>),
}

impl Constructor {
    /// The kind of component it makes.
    fn kind(&self) -> ComponentKind {
        match self {
            Constructor::Benchmark(_) => ComponentKind::Benchmark,
            Constructor::Harness(_) => ComponentKind::Harness,
            Constructor::Environment(_) => ComponentKind::Environment,
            Constructor::Recipe(_) => ComponentKind::Recipe,
            Constructor::Analyzer(_) => ComponentKind::Analyzer,
        }
    }
}

struct Registered {
    info: ComponentInfo,
    constructor: Constructor,
    /// The typed parameters' validator ([`PluginBuilder::with_params`]).
    params: Option<ParamsCheck>,
}

/// Reads a component's params as its typed struct and returns them with defaults filled in.
pub(crate) type ParamsCheck = Arc<dyn Fn(&JsonMap) -> Result<JsonMap> + Send + Sync>;

/// Collects a plugin's components (see [`crate::export_plugin!`]).
pub struct PluginBuilder {
    name: String,
    version: String,
    description: String,
    components: Vec<Registered>,
}

impl PluginBuilder {
    pub(crate) fn new(name: &str, version: &str) -> Self {
        PluginBuilder {
            name: name.to_string(),
            version: version.to_string(),
            description: String::new(),
            components: Vec::new(),
        }
    }

    pub(crate) fn set_description(&mut self, description: &str) {
        self.description = description.to_string();
    }

    /// Registers `constructor` under `info`, whose kind becomes the constructor's.
    fn push(&mut self, mut info: ComponentInfo, constructor: Constructor) -> &mut Self {
        info.kind = constructor.kind();
        self.components.push(Registered {
            info,
            constructor,
            params: None,
        });
        self
    }

    /// Declares the parameters of the component registered last as the typed struct `P`
    /// (builder style): its schema becomes the component's `config_schema`, and the host runs
    /// [`Params::validate`] when it resolves a request, so `run --dry-run` and `plan` refuse
    /// bad parameter content as a run does. The component reads them with
    /// [`super::params::read`].
    ///
    /// ```
    /// use agentcompass_plugin_api::contracts::{ComponentInfo, ComponentKind, ExecutionPlan, RunRequest, TaskSpec};
    /// use agentcompass_plugin_api::sdk::{params::Params, PluginBuilder, Recipe};
    ///
    /// #[derive(Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct PinParams {
    ///     /// The image to pin.
    ///     image: String,
    /// }
    /// impl Params for PinParams {}
    ///
    /// struct Pin;
    /// impl Recipe for Pin {
    ///     fn matches(&self, _: &RunRequest, _: &TaskSpec, _: &ExecutionPlan) -> agentcompass_plugin_api::Result<bool> { Ok(true) }
    ///     fn apply(&self, plan: ExecutionPlan, _: &RunRequest, _: &TaskSpec) -> agentcompass_plugin_api::Result<ExecutionPlan> { Ok(plan) }
    /// }
    ///
    /// fn register(plugin: &mut PluginBuilder) {
    ///     let info = ComponentInfo::new(ComponentKind::Recipe, "pin", "Pins an image");
    ///     plugin.recipe(info, || Ok(Pin)).with_params::<PinParams>();
    /// }
    /// ```
    pub fn with_params<P: Params>(&mut self) -> &mut Self {
        if let Some(last) = self.components.last_mut() {
            let label = format!("{} `{}`", last.info.kind, last.info.id);
            last.info.config_schema = super::params::schema_of::<P>();
            last.info.validates_params = true;
            last.params = Some(Arc::new(move |params: &JsonMap| {
                super::params::filled::<P>(&label, params)
            }));
        }
        self
    }

    /// Registers a benchmark constructor; `harness_free` marks one selected with harness `none`.
    fn push_benchmark(
        &mut self,
        info: ComponentInfo,
        harness_free: bool,
        factory: impl Fn() -> Result<BenchmarkHandle> + Send + Sync + 'static,
    ) -> &mut Self {
        let info = ComponentInfo {
            harness_free,
            ..info
        };
        self.push(info, Constructor::Benchmark(Box::new(factory)))
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
        self.push_benchmark(info, false, factory)
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
        self.push_benchmark(info, true, factory)
    }

    /// Registers a harness.
    pub fn harness<H: Harness>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<H> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn Harness>);
        self.push(info, Constructor::Harness(Box::new(factory)))
    }

    /// Registers an environment provider.
    pub fn environment<E: EnvironmentProvider>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<E> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn EnvironmentProvider>);
        self.push(info, Constructor::Environment(Box::new(factory)))
    }

    /// Registers a recipe.
    pub fn recipe<R: Recipe>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<R> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn Recipe>);
        self.push(info, Constructor::Recipe(Box::new(factory)))
    }

    /// Registers an analyzer. `info` should carry its [`AnalyzerInfo`] (category, family,
    /// priority, defaults; see [`ComponentInfo::with_analyzer`]); without one it gets the
    /// defaults (category `general`, its own family, enabled by default).
    ///
    /// [`AnalyzerInfo`]: crate::contracts::AnalyzerInfo
    pub fn analyzer<A: Analyzer>(
        &mut self,
        info: ComponentInfo,
        make: impl Fn() -> Result<A> + Send + Sync + 'static,
    ) -> &mut Self {
        let factory = move || Ok(Arc::new(make()?) as Arc<dyn Analyzer>);
        let info = ComponentInfo {
            analyzer: Some(info.analyzer.clone().unwrap_or_default()),
            ..info
        };
        self.push(info, Constructor::Analyzer(Box::new(factory)))
    }

    pub(crate) fn description(&self) -> PluginDescription {
        PluginDescription {
            name: self.name.clone(),
            version: self.version.clone(),
            api_version: API_VERSION.to_string(),
            description: self.description.clone(),
            components: self.components.iter().map(|c| c.info.clone()).collect(),
        }
    }

    pub(crate) fn find(&self, kind: ComponentKind, id: &str) -> Result<&Constructor> {
        self.registered(kind, id).map(|c| &c.constructor)
    }

    /// The params validator of a component declared with [`PluginBuilder::with_params`].
    pub(crate) fn params_check(&self, kind: ComponentKind, id: &str) -> Result<ParamsCheck> {
        self.registered(kind, id)?.params.clone().ok_or_else(|| {
            Error::invalid_input(format!("{kind} `{id}` declares no typed parameters"))
        })
    }

    fn registered(&self, kind: ComponentKind, id: &str) -> Result<&Registered> {
        self.components
            .iter()
            .find(|c| c.info.kind == kind && c.info.id == id)
            .ok_or_else(|| {
                Error::invalid_input(format!("plugin {} has no {kind} `{id}`", self.name))
            })
    }
}
