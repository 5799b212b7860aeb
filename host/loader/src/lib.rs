//! Plugin discovery, trust checks and loading. Every check runs before dlopen; `dlopen` is
//! the only module with `unsafe`.

pub mod digest_cache;
mod dlopen;
mod elf;
mod load;
pub mod lockfile;
pub mod manifest;
mod regular;
pub mod trust;
pub mod verified_file;

pub use load::{
    check_candidate, check_dirs, describe, host_api_version, inspect_library, load_candidate,
    load_dirs, open_checked, CheckReport, CheckedPlugin, DirRole, LoadOptions, LoadProblem,
    LoadReport, LoadedPlugin, PluginDir, PluginSource,
};
