//! One plugin in the registry: checked before dlopen when the registry is built, opened
//! (dlopen, ABI checks, description, `init`) the first time one of its components is asked
//! for, at most once, and never again after a refusal.

use std::sync::{Arc, Mutex, OnceLock};

use agentcompass_loader::{
    open_checked, CheckedPlugin, LoadOptions, LoadProblem, LoadedPlugin, PluginSource,
};
use agentcompass_plugin_api::contracts::ComponentKind;

use super::{Entry, Maker, Source};

/// A plugin that passed every check made before dlopen: what a run's provenance records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredPlugin {
    /// Name, version and path.
    pub source: Arc<PluginSource>,
    /// The sha256 of its library, checked against its manifest (and the lock, if any).
    pub sha256: String,
}

/// How a registry opens its plugins on first use, and where it reports a plugin refused then.
pub(super) struct Opener {
    pub options: LoadOptions,
    pub report: Box<dyn Fn(&LoadProblem) + Send + Sync>,
}

impl Default for Opener {
    fn default() -> Self {
        Opener {
            options: LoadOptions::default(),
            report: Box::new(|problem| tracing::warn!("{problem}")),
        }
    }
}

/// An opened plugin and its registry entries (one per component it describes).
pub(super) struct Opened {
    pub plugin: LoadedPlugin,
    pub entries: Vec<Entry>,
}

impl Opened {
    fn new(plugin: LoadedPlugin) -> Self {
        let source = Source::Plugin(plugin.source.clone());
        let entries = plugin
            .description
            .components
            .iter()
            .map(|info| Entry {
                info: info.clone(),
                source: source.clone(),
                maker: Maker::Plugin(plugin.root),
            })
            .collect();
        Opened { plugin, entries }
    }
}

/// One plugin of the registry, opened on first use.
pub(super) struct PluginSlot {
    pub registered: RegisteredPlugin,
    /// The components its manifest declares (the same as it describes once opened: the load
    /// refuses a library whose description differs from its manifest).
    declared: Vec<(ComponentKind, String)>,
    checked: Mutex<Option<CheckedPlugin>>,
    opened: OnceLock<Option<Opened>>,
}

impl PluginSlot {
    /// A checked plugin, to be opened on first use.
    pub fn checked(plugin: CheckedPlugin) -> Self {
        PluginSlot {
            registered: RegisteredPlugin {
                source: plugin.source.clone(),
                sha256: plugin.sha256.clone(),
            },
            declared: plugin
                .manifest
                .components
                .iter()
                .map(|c| (c.kind, c.id.clone()))
                .collect(),
            checked: Mutex::new(Some(plugin)),
            opened: OnceLock::new(),
        }
    }

    /// A plugin opened already.
    pub fn opened(plugin: LoadedPlugin) -> Self {
        let slot = PluginSlot {
            registered: RegisteredPlugin {
                source: plugin.source.clone(),
                sha256: plugin.sha256.clone(),
            },
            declared: plugin
                .description
                .components
                .iter()
                .map(|c| (c.kind, c.id.clone()))
                .collect(),
            checked: Mutex::new(None),
            opened: OnceLock::new(),
        };
        let _ = slot.opened.set(Some(Opened::new(plugin)));
        slot
    }

    /// The components it declares, in manifest order.
    pub fn declared(&self) -> impl Iterator<Item = (ComponentKind, &str)> {
        self.declared.iter().map(|(kind, id)| (*kind, id.as_str()))
    }

    /// Whether it declares component `id` of `kind`.
    pub fn declares(&self, kind: ComponentKind, id: &str) -> bool {
        self.declared().any(|(k, i)| k == kind && i == id)
    }

    /// Whether it declares a component of `kind`.
    pub fn declares_kind(&self, kind: ComponentKind) -> bool {
        self.declared().any(|(k, _)| k == kind)
    }

    /// Whether opening it was tried and refused.
    pub fn is_refused(&self) -> bool {
        matches!(self.opened.get(), Some(None))
    }

    /// The opened plugin, if it was opened already.
    pub fn open_if_opened(&self) -> Option<&Opened> {
        self.opened.get().and_then(Option::as_ref)
    }

    /// The opened plugin, opening it now if this is its first use; `None` once refused (the
    /// refusal is reported once, when it happens).
    pub fn open(&self, opener: &Opener) -> Option<&Opened> {
        self.opened
            .get_or_init(|| {
                let checked = match self.checked.lock() {
                    Ok(mut guard) => guard.take(),
                    Err(poisoned) => poisoned.into_inner().take(),
                }?;
                let opened = open_checked(checked, &opener.options);
                if let Some(cache) = &opener.options.digest_cache {
                    cache.persist();
                }
                match opened {
                    Ok(plugin) => Some(Opened::new(plugin)),
                    Err(problem) => {
                        (opener.report)(&problem);
                        None
                    }
                }
            })
            .as_ref()
    }
}
