//! The run-local component registry: built-ins in their declared order, then validated
//! plugins in directory order and file-name order. Components are instantiated on demand,
//! and a plugin checked before dlopen is opened the first time one of its components is
//! asked for (`slot`): a run maps only the plugins it uses.

mod slot;

use std::fmt;
use std::sync::Arc;

use abi_stable::std_types::RStr;
use agentcompass_plugin_api::abi::{
    PluginRoot_Ref, ANALYZER_FACTORY_PREFIX, PARAMS_FACTORY_PREFIX,
};
use agentcompass_plugin_api::bridge::import::{
    ImportedAnalyzer, ImportedBenchmark, ImportedEnvironment, ImportedHarness, ImportedParams,
    ImportedRecipe,
};
use agentcompass_plugin_api::bridge::Label;
use agentcompass_plugin_api::contracts::{ComponentInfo, ComponentKind, HARNESS_NONE};
use agentcompass_plugin_api::sdk::{
    Analyzer, BenchmarkHandle, EnvironmentProvider, Harness, Recipe,
};
use agentcompass_plugin_api::Error;

pub use agentcompass_builtins::{Builtin, BuiltinFactory};
use agentcompass_loader::{CheckedPlugin, LoadOptions, LoadProblem, LoadedPlugin, PluginSource};
pub use slot::RegisteredPlugin;
use slot::{Opener, PluginSlot};

/// Where a registered component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the host.
    BuiltIn,
    /// Provided by a loaded plugin.
    Plugin(Arc<PluginSource>),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::BuiltIn => f.write_str("built-in"),
            Source::Plugin(source) => source.fmt(f),
        }
    }
}

#[derive(Clone)]
enum Maker {
    BuiltIn(BuiltinFactory),
    /// A built-in analyzer: stateless, shared by every caller.
    BuiltInAnalyzer(Arc<dyn Analyzer>),
    Plugin(PluginRoot_Ref),
}

/// One registered component.
#[derive(Clone)]
pub struct Entry {
    /// What the component says about itself.
    pub info: ComponentInfo,
    /// Where it comes from.
    pub source: Source,
    maker: Maker,
}

impl Entry {
    fn label(&self) -> Label {
        match &self.source {
            Source::BuiltIn => Label::new(format!("built-in {} {}", self.info.kind, self.info.id)),
            Source::Plugin(p) => Label::new(format!(
                "plugin {}@{} {} {}",
                p.name, p.version, self.info.kind, self.info.id
            )),
        }
    }
}

/// Registry failures.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// No component of that kind has that id.
    #[error("unknown {kind} `{id}` (known: {known})")]
    Unknown {
        /// Kind asked for.
        kind: ComponentKind,
        /// Id asked for.
        id: String,
        /// Known ids of that kind, comma separated.
        known: String,
    },
    /// Constructing the component failed (a plugin constructor error or panic).
    #[error("{0}")]
    Construct(String),
    /// A plugin provides harness `none`, the id of harness-free benchmarks.
    #[error(
        "harness id `{HARNESS_NONE}` is reserved for harness-free benchmarks; rename the harness"
    )]
    ReservedHarness,
    /// A plugin provides an id already registered.
    #[error("duplicate {kind} id `{id}`: provided by {existing} and by {new}; remove one of them")]
    Duplicate {
        /// Kind of the component.
        kind: ComponentKind,
        /// Its id.
        id: String,
        /// Where the registered one comes from.
        existing: Source,
        /// Where the refused one comes from.
        new: Source,
    },
}

/// The run-local registry.
#[derive(Default)]
pub struct Registry {
    builtins: Vec<Entry>,
    plugins: Vec<PluginSlot>,
    opener: Opener,
}

impl Registry {
    /// A registry holding the given built-ins, in order.
    pub fn with_builtins(builtins: &[Builtin]) -> Self {
        let builtins = builtins
            .iter()
            .map(|b| Entry {
                info: b.info.clone(),
                source: Source::BuiltIn,
                maker: Maker::BuiltIn(b.factory),
            })
            .collect();
        Registry {
            builtins,
            ..Registry::default()
        }
    }

    /// Appends built-in analyzers (after the other built-ins, before any plugin).
    pub fn add_builtin_analyzers(&mut self, analyzers: Vec<(ComponentInfo, Arc<dyn Analyzer>)>) {
        self.builtins
            .extend(analyzers.into_iter().map(|(info, analyzer)| Entry {
                info,
                source: Source::BuiltIn,
                maker: Maker::BuiltInAnalyzer(analyzer),
            }));
    }

    /// How plugins added by [`Registry::add_checked`] are opened (the load options of their
    /// check: host services for `init`, the digest cache and its layout verdicts).
    pub fn set_load_options(&mut self, options: LoadOptions) {
        self.opener.options = options;
    }

    /// Where a plugin refused when it is opened is reported (by default, a `tracing`
    /// warning). Each refusal is reported once, when it happens.
    pub fn set_refusal_reporter(&mut self, report: impl Fn(&LoadProblem) + Send + Sync + 'static) {
        self.opener.report = Box::new(report);
    }

    /// Appends a plugin opened already, with every component it describes, or refuses it: a
    /// reserved id or an id already registered refuses the whole plugin with a message naming
    /// both sources.
    pub fn add_plugin(&mut self, plugin: LoadedPlugin) -> Result<(), LoadProblem> {
        let slot = PluginSlot::opened(plugin);
        self.add_slot(slot)
    }

    /// Appends a plugin checked before dlopen, opened the first time one of the components its
    /// manifest declares is asked for; refused as [`Registry::add_plugin`] refuses.
    pub fn add_checked(&mut self, plugin: CheckedPlugin) -> Result<(), LoadProblem> {
        self.add_slot(PluginSlot::checked(plugin))
    }

    fn add_slot(&mut self, slot: PluginSlot) -> Result<(), LoadProblem> {
        let source = Source::Plugin(slot.registered.source.clone());
        self.check_new_components(slot.declared(), &source)
            .map_err(|error| LoadProblem {
                path: slot.registered.source.path.clone(),
                message: error.to_string(),
                detail: None,
            })?;
        self.plugins.push(slot);
        Ok(())
    }

    /// Refuses a reserved id or an id that is already registered (naming both sources).
    fn check_new_components<'a>(
        &self,
        components: impl IntoIterator<Item = (ComponentKind, &'a str)>,
        source: &Source,
    ) -> Result<(), RegistryError> {
        for (kind, id) in components {
            if kind == ComponentKind::Harness && id == HARNESS_NONE {
                return Err(RegistryError::ReservedHarness);
            }
            if let Some(existing) = self.declaring(kind, id) {
                return Err(RegistryError::Duplicate {
                    kind,
                    id: id.to_string(),
                    existing,
                    new: source.clone(),
                });
            }
        }
        Ok(())
    }

    /// Where component `id` of `kind` is registered or declared, without opening a plugin.
    fn declaring(&self, kind: ComponentKind, id: &str) -> Option<Source> {
        if let Some(entry) = self
            .builtins
            .iter()
            .find(|e| e.info.kind == kind && e.info.id == id)
        {
            return Some(entry.source.clone());
        }
        self.plugins
            .iter()
            .find(|slot| slot.declares(kind, id))
            .map(|slot| Source::Plugin(slot.registered.source.clone()))
    }

    /// Registered components of one kind, in registry order. Opens every plugin that declares
    /// one (a plugin refused then is reported and left out).
    pub fn list(&self, kind: ComponentKind) -> impl Iterator<Item = &Entry> {
        let builtins = self.builtins.iter().filter(move |e| e.info.kind == kind);
        let plugins = self
            .plugins
            .iter()
            .filter(move |slot| slot.declares_kind(kind))
            .filter_map(|slot| slot.open(&self.opener))
            .flat_map(move |opened| opened.entries.iter().filter(move |e| e.info.kind == kind));
        builtins.chain(plugins)
    }

    /// The ids of one kind, in registry order, as built-ins and manifests declare them: no
    /// plugin is opened (one refused already is left out).
    pub fn ids(&self, kind: ComponentKind) -> Vec<&str> {
        let builtins = self
            .builtins
            .iter()
            .filter(|e| e.info.kind == kind)
            .map(|e| e.info.id.as_str());
        let plugins = self
            .plugins
            .iter()
            .filter(|slot| !slot.is_refused())
            .flat_map(|slot| slot.declared())
            .filter(|(k, _)| *k == kind)
            .map(|(_, id)| id);
        builtins.chain(plugins).collect()
    }

    /// Plugins that passed every check made before dlopen (whether a component of theirs was
    /// used yet or not), in load order; one refused when it was opened is left out.
    pub fn plugins(&self) -> impl Iterator<Item = &RegisteredPlugin> {
        self.plugins
            .iter()
            .filter(|slot| !slot.is_refused())
            .map(|slot| &slot.registered)
    }

    /// Opens every plugin not opened yet (`list`, `plugin`, `config docs`: commands about the
    /// registry itself report every refusal).
    pub fn open_all(&self) {
        for slot in &self.plugins {
            slot.open(&self.opener);
        }
    }

    /// The plugins opened so far, in load order.
    pub fn opened_plugins(&self) -> impl Iterator<Item = &LoadedPlugin> {
        self.plugins
            .iter()
            .filter_map(|slot| slot.open_if_opened())
            .map(|opened| &opened.plugin)
    }

    /// Looks a component up, opening the plugin that declares it if it is not open yet.
    pub fn find(&self, kind: ComponentKind, id: &str) -> Option<&Entry> {
        if let Some(entry) = self
            .builtins
            .iter()
            .find(|e| e.info.kind == kind && e.info.id == id)
        {
            return Some(entry);
        }
        self.plugins
            .iter()
            .filter(|slot| slot.declares(kind, id))
            .filter_map(|slot| slot.open(&self.opener))
            .find_map(|opened| {
                opened
                    .entries
                    .iter()
                    .find(|e| e.info.kind == kind && e.info.id == id)
            })
    }

    /// Looks a component up, or says which ids exist.
    pub fn get(&self, kind: ComponentKind, id: &str) -> Result<&Entry, RegistryError> {
        self.find(kind, id).ok_or_else(|| RegistryError::Unknown {
            kind,
            id: id.to_string(),
            known: {
                let ids = self.ids(kind);
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                }
            },
        })
    }

    /// Instantiates a benchmark.
    pub fn benchmark(&self, id: &str) -> Result<BenchmarkHandle, RegistryError> {
        let entry = self.get(ComponentKind::Benchmark, id)?;
        let label = entry.label();
        match &entry.maker {
            Maker::BuiltIn(BuiltinFactory::Benchmark(make)) => make().map_err(construct(&label)),
            Maker::Plugin(root) => {
                let object = (root.new_benchmark())(RStr::from(id))
                    .into_result()
                    .map_err(|e| construct(&label)(e.into()))?;
                let imported = Arc::new(ImportedBenchmark::new(object, label));
                Ok(BenchmarkHandle {
                    benchmark: imported.clone(),
                    harness_free: entry.info.harness_free.then_some(imported),
                })
            }
            Maker::BuiltIn(_) | Maker::BuiltInAnalyzer(_) => Err(kind_mismatch(&label)),
        }
    }

    /// Instantiates a harness.
    pub fn harness(&self, id: &str) -> Result<Arc<dyn Harness>, RegistryError> {
        let entry = self.get(ComponentKind::Harness, id)?;
        let label = entry.label();
        match &entry.maker {
            Maker::BuiltIn(BuiltinFactory::Harness(make)) => make().map_err(construct(&label)),
            Maker::Plugin(root) => {
                let object = (root.new_harness())(RStr::from(id))
                    .into_result()
                    .map_err(|e| construct(&label)(e.into()))?;
                Ok(Arc::new(ImportedHarness::new(object, label)))
            }
            Maker::BuiltIn(_) | Maker::BuiltInAnalyzer(_) => Err(kind_mismatch(&label)),
        }
    }

    /// Instantiates an environment provider.
    pub fn environment(&self, id: &str) -> Result<Arc<dyn EnvironmentProvider>, RegistryError> {
        let entry = self.get(ComponentKind::Environment, id)?;
        let label = entry.label();
        match &entry.maker {
            Maker::BuiltIn(BuiltinFactory::Environment(make)) => make().map_err(construct(&label)),
            Maker::Plugin(root) => {
                let object = (root.new_environment())(RStr::from(id))
                    .into_result()
                    .map_err(|e| construct(&label)(e.into()))?;
                Ok(Arc::new(ImportedEnvironment::new(object, label)))
            }
            Maker::BuiltIn(_) | Maker::BuiltInAnalyzer(_) => Err(kind_mismatch(&label)),
        }
    }

    /// Instantiates a recipe.
    pub fn recipe(&self, id: &str) -> Result<Arc<dyn Recipe>, RegistryError> {
        let entry = self.get(ComponentKind::Recipe, id)?;
        let label = entry.label();
        match &entry.maker {
            Maker::BuiltIn(BuiltinFactory::Recipe(make)) => make().map_err(construct(&label)),
            Maker::Plugin(root) => {
                let object = (root.new_recipe())(RStr::from(id))
                    .into_result()
                    .map_err(|e| construct(&label)(e.into()))?;
                Ok(Arc::new(ImportedRecipe::new(object, label)))
            }
            Maker::BuiltIn(_) | Maker::BuiltInAnalyzer(_) => Err(kind_mismatch(&label)),
        }
    }
}

impl Registry {
    /// Instantiates an analyzer.
    pub fn analyzer(&self, id: &str) -> Result<Arc<dyn Analyzer>, RegistryError> {
        let entry = self.get(ComponentKind::Analyzer, id)?;
        let label = entry.label();
        match &entry.maker {
            Maker::BuiltInAnalyzer(analyzer) => Ok(analyzer.clone()),
            Maker::Plugin(root) => {
                // Analyzers ride the recipe factory (`abi::ANALYZER_FACTORY_PREFIX`); the
                // loader refuses a plugin too old to provide them.
                let carrier = format!("{ANALYZER_FACTORY_PREFIX}{id}");
                let object = (root.new_recipe())(RStr::from(carrier.as_str()))
                    .into_result()
                    .map_err(|e| construct(&label)(e.into()))?;
                Ok(Arc::new(ImportedAnalyzer::new(object, label)))
            }
            Maker::BuiltIn(_) => Err(kind_mismatch(&label)),
        }
    }
}

impl Registry {
    /// `params` of component `id` of `kind` as its typed-parameter validator returns them
    /// (every default filled in), or its refusal; the params as they are for a component
    /// without one (`validates_params` unset: built-ins and plugins of API 0.1.1 or older).
    pub fn validate_params(
        &self,
        kind: ComponentKind,
        id: &str,
        params: &agentcompass_plugin_api::contracts::JsonMap,
    ) -> Result<agentcompass_plugin_api::contracts::JsonMap, Error> {
        let Ok(entry) = self.get(kind, id) else {
            return Ok(params.clone());
        };
        let Maker::Plugin(root) = &entry.maker else {
            return Ok(params.clone());
        };
        if !entry.info.validates_params {
            return Ok(params.clone());
        }
        let label = entry.label();
        let carrier = format!("{PARAMS_FACTORY_PREFIX}{kind}:{id}");
        let object = (root.new_recipe())(RStr::from(carrier.as_str()))
            .into_result()
            .map_err(|e| Error::from(e).context(label.as_str()))?;
        ImportedParams::new(object, label).validate(params)
    }
}

fn construct(label: &Label) -> impl Fn(Error) -> RegistryError + '_ {
    move |e| RegistryError::Construct(format!("{}: constructor: {}", label.as_str(), e.message))
}

fn kind_mismatch(label: &Label) -> RegistryError {
    RegistryError::Construct(format!(
        "{}: registered with a constructor of another kind",
        label.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin_source() -> Source {
        Source::Plugin(Arc::new(PluginSource {
            name: "p".into(),
            version: "1.0.0".into(),
            path: "/plugins/p.so".into(),
        }))
    }

    #[test]
    fn harness_none_is_reserved_and_builtin_ids_cannot_be_shadowed() {
        let registry = Registry::with_builtins(&agentcompass_builtins::all());
        let err = registry
            .check_new_components([(ComponentKind::Harness, "none")], &plugin_source())
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("reserved for harness-free benchmarks"),
            "{err}"
        );
        let err = registry
            .check_new_components(
                [(ComponentKind::Environment, "host_process")],
                &plugin_source(),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate environment id `host_process`: provided by built-in and by \
             p@1.0.0 (/plugins/p.so); remove one of them"
        );
        assert!(registry
            .check_new_components(
                [(ComponentKind::Benchmark, "host_process")],
                &plugin_source()
            )
            .is_ok());
    }

    #[test]
    fn unknown_ids_list_the_known_ones() {
        let registry = Registry::with_builtins(&agentcompass_builtins::all());
        let err = registry.environment("docker").err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown environment `docker` (known: host_process, sandbox)"
        );
    }
}
