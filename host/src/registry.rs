//! The run-local component registry: built-ins in their declared order, then validated
//! plugins in directory order and file-name order. Components are instantiated on demand.

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
use agentcompass_loader::{LoadProblem, LoadedPlugin, PluginSource};

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
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<Entry>,
    plugins: Vec<LoadedPlugin>,
}

impl Registry {
    /// A registry holding the given built-ins, in order.
    pub fn with_builtins(builtins: &[Builtin]) -> Self {
        let entries = builtins
            .iter()
            .map(|b| Entry {
                info: b.info.clone(),
                source: Source::BuiltIn,
                maker: Maker::BuiltIn(b.factory),
            })
            .collect();
        Registry {
            entries,
            plugins: Vec::new(),
        }
    }

    /// Appends built-in analyzers (after the other built-ins, before any plugin).
    pub fn add_builtin_analyzers(&mut self, analyzers: Vec<(ComponentInfo, Arc<dyn Analyzer>)>) {
        let at = self
            .entries
            .iter()
            .position(|e| e.source != Source::BuiltIn)
            .unwrap_or(self.entries.len());
        let new = analyzers.into_iter().map(|(info, analyzer)| Entry {
            info,
            source: Source::BuiltIn,
            maker: Maker::BuiltInAnalyzer(analyzer),
        });
        self.entries.splice(at..at, new);
    }

    /// Appends every component of a loaded plugin, or none of them: a reserved id or an id
    /// already registered refuses the whole plugin with a message naming both sources.
    pub fn add_plugin(&mut self, plugin: LoadedPlugin) -> Result<(), LoadProblem> {
        let source = Source::Plugin(plugin.source.clone());
        self.check_new_components(&plugin.description.components, &source)
            .map_err(|error| LoadProblem {
                path: plugin.source.path.clone(),
                message: error.to_string(),
                detail: None,
            })?;
        for info in &plugin.description.components {
            self.entries.push(Entry {
                info: info.clone(),
                source: source.clone(),
                maker: Maker::Plugin(plugin.root),
            });
        }
        self.plugins.push(plugin);
        Ok(())
    }

    /// Refuses a reserved id or an id that is already registered (naming both sources).
    fn check_new_components(
        &self,
        components: &[ComponentInfo],
        source: &Source,
    ) -> Result<(), RegistryError> {
        for info in components {
            if info.kind == ComponentKind::Harness && info.id == HARNESS_NONE {
                return Err(RegistryError::ReservedHarness);
            }
            if let Some(existing) = self.find(info.kind, &info.id) {
                return Err(RegistryError::Duplicate {
                    kind: info.kind,
                    id: info.id.clone(),
                    existing: existing.source.clone(),
                    new: source.clone(),
                });
            }
        }
        Ok(())
    }

    /// Registered components of one kind, in registry order.
    pub fn list(&self, kind: ComponentKind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.info.kind == kind)
    }

    /// Plugins whose components are registered, in load order.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }

    /// Looks a component up.
    pub fn find(&self, kind: ComponentKind, id: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.info.kind == kind && e.info.id == id)
    }

    /// Looks a component up, or says which ids exist.
    pub fn get(&self, kind: ComponentKind, id: &str) -> Result<&Entry, RegistryError> {
        self.find(kind, id).ok_or_else(|| RegistryError::Unknown {
            kind,
            id: id.to_string(),
            known: {
                let ids: Vec<&str> = self.list(kind).map(|e| e.info.id.as_str()).collect();
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
        let none = ComponentInfo::new(ComponentKind::Harness, "none", "");
        let err = registry
            .check_new_components(&[none], &plugin_source())
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("reserved for harness-free benchmarks"),
            "{err}"
        );
        let shadow = ComponentInfo::new(ComponentKind::Environment, "host_process", "");
        let err = registry
            .check_new_components(&[shadow], &plugin_source())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate environment id `host_process`: provided by built-in and by \
             p@1.0.0 (/plugins/p.so); remove one of them"
        );
        let fresh = ComponentInfo::new(ComponentKind::Benchmark, "host_process", "");
        assert!(registry
            .check_new_components(&[fresh], &plugin_source())
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
