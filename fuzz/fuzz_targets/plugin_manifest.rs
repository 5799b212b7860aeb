//! A plugin manifest `NAME.plugin.toml` through `PluginManifest::parse` and `validate`; a
//! manifest that parses must survive `to_toml_string` → `parse` unchanged (what
//! `agentcompass-host plugin package` writes is read back by the loader).
#![no_main]

use std::path::Path;

use agentcompass_loader::manifest::{
    library_path_for_manifest, manifest_path_for_library, PluginManifest,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/plugins/fuzz-pack.plugin.toml");
    let manifest = match PluginManifest::parse(text, path) {
        Ok(manifest) => manifest,
        Err(err) => {
            let _ = err.to_string();
            return;
        }
    };
    let host = semver::Version::new(0, 1, 0);
    let _ = manifest
        .validate("fuzz-pack", &host)
        .map_err(|e| e.to_string());
    let _ = manifest.validate_at(path, &manifest.name, &host);
    let library = library_path_for_manifest(
        &path.with_file_name(format!("{}.plugin.toml", manifest.name.replace('/', "_"))),
    );
    let _ = manifest_path_for_library(&library);
    let rendered = manifest.to_toml_string();
    let reparsed = PluginManifest::parse(&rendered, path)
        .unwrap_or_else(|e| panic!("rendered manifest does not parse: {e}\n{rendered}"));
    assert_eq!(
        reparsed, manifest,
        "manifest changed through to_toml_string:\n{rendered}"
    );
});
