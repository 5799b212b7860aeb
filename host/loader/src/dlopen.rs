//! The only place the host maps plugin code into the process.
//!
//! Every trust check has already passed when [`open_root_module`] runs; it dlopens the file
//! through `/proc/self/fd/N` of the descriptor that was hashed (so the bytes checked are the
//! bytes loaded), never unloads it, and lets abi_stable check the plugin-API version and the
//! layout of everything reachable from the root module — unless that layout check already
//! accepted these exact bytes against this exact host binary (`crate::digest_cache`).

use std::path::Path;

use abi_stable::library::{AbiHeaderRef, LibraryError, ROOT_MODULE_LOADER_NAME_WITH_NUL};
use agentcompass_plugin_api::abi::PluginRoot_Ref;

/// Why a verified file could not be turned into a root module.
#[derive(Debug)]
pub enum OpenFailure {
    /// `dlopen` failed (missing dependency, wrong architecture, truncated or corrupt file).
    Dlopen(String),
    /// The library exports no abi_stable root module.
    NoRootModule,
    /// abi_stable refused the library (version, layout, or its constructor failed).
    Library(LibraryError),
}

/// Whether abi_stable walks the layout of the root module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutCheck {
    /// Compare the layout of everything reachable from the root module with the host's.
    Full,
    /// An earlier load's full check accepted the library with these bytes (same SHA-256)
    /// against the running host binary (same stamp); only the version is checked.
    AcceptedBefore,
}

/// Loads the library at `proc_fd_path` (a `/proc/self/fd/N` path) and returns its checked
/// root module. The library is intentionally leaked: plugins are never unloaded.
pub fn open_root_module(
    proc_fd_path: &Path,
    layout: LayoutCheck,
) -> Result<PluginRoot_Ref, OpenFailure> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the library's initialisers; this is only reached after the file,
    // its directory and every ancestor passed the ownership/permission checks and its sha256
    // matched the manifest (and lock file). RTLD_LOCAL keeps its symbols (every plugin exports
    // the same root-module name) out of the global namespace; RTLD_NOW resolves every symbol
    // now, so a missing one fails here instead of crashing later.
    let library = unsafe { Library::open(Some(proc_fd_path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| OpenFailure::Dlopen(e.to_string()))?;
    // SAFETY: the symbol named ROOT_MODULE_LOADER_NAME_WITH_NUL is, by abi_stable's contract,
    // a `LibHeader` static whose first field is an `AbiHeaderRef`; the library is never
    // unloaded (forgotten below), so the copied reference stays valid for 'static.
    let header: AbiHeaderRef = unsafe {
        match library.get::<AbiHeaderRef>(ROOT_MODULE_LOADER_NAME_WITH_NUL.as_bytes()) {
            Ok(symbol) => *symbol,
            Err(_) => return Err(OpenFailure::NoRootModule),
        }
    };
    std::mem::forget(library);
    let header = header.upgrade().map_err(OpenFailure::Library)?;
    match layout {
        LayoutCheck::Full => header.init_root_module::<PluginRoot_Ref>(),
        // SAFETY: the layout of this root module was compared with `PluginRoot_Ref`'s in full
        // by an earlier load of a library with the same SHA-256 (the bytes just mapped were
        // hashed through this descriptor, or their unchanged stamp was) into this same host
        // binary (same device, inode, size and times of `/proc/self/exe`): both layouts are
        // static data of those two files, so the check would accept them again. abi_stable
        // documents this entry point for such a cache. The version check still runs.
        LayoutCheck::AcceptedBefore => unsafe {
            header.init_root_module_with_unchecked_layout::<PluginRoot_Ref>()
        },
    }
    .map_err(OpenFailure::Library)
}
