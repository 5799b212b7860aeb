//! The plugin manifest `NAME.plugin.toml` shipped beside `NAME.so`, read and checked before dlopen.
//!
//! ```toml
//! name = "example-pack"          # equals NAME
//! version = "0.1.0"              # the plugin's own version
//! host_api = "^0.1"              # plugin-API versions the plugin supports
//! sha256 = "<64 lowercase hex>"  # hash of NAME.so
//! description = "..."            # optional
//! [[components]]
//! kind = "benchmark"             # benchmark | harness | environment | recipe
//! id = "example_exact_match"
//! description = "..."
//! ```

use std::collections::HashSet;
use std::fs::Metadata;
use std::io::Read;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::ComponentKind;
use serde::{Deserialize, Serialize};

use crate::regular::{open_regular, OpenError};

/// File-name suffix of a plugin manifest (`NAME.plugin.toml`).
pub const MANIFEST_SUFFIX: &str = ".plugin.toml";
/// File-name suffix of a plugin library (`NAME.so`).
pub const LIBRARY_SUFFIX: &str = ".so";

/// Collapses all whitespace (including newlines) to single spaces: TOML errors carry a
/// multi-line excerpt whose words read well on one line (unlike `one_line`'s ` | ` joins).
pub(crate) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a manifest could not be read or is not acceptable. One line each, naming the manifest (or,
/// from [`PluginManifest::validate`], `NAME.plugin.toml`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// `NAME.plugin.toml` does not exist.
    #[error(
        "missing manifest {} for {}; create it with `agentcompass-host plugin package`",
        .manifest.display(), .library.display()
    )]
    Missing {
        /// The manifest path looked for.
        manifest: PathBuf,
        /// The library it belongs to.
        library: PathBuf,
    },
    /// The manifest could not be read.
    #[error("cannot read manifest {}: {message}", .path.display())]
    Io {
        /// The manifest.
        path: PathBuf,
        /// The OS error, one line.
        message: String,
    },
    /// The manifest is not a regular file (it is not opened then).
    #[error(
        "manifest {} is a {found}, expected a regular file; replace it with the one `agentcompass-host plugin package` writes",
        .path.display()
    )]
    NotRegularFile {
        /// The manifest.
        path: PathBuf,
        /// What was found.
        found: &'static str,
    },
    /// The manifest is not valid TOML or does not match the schema.
    #[error(
        "invalid manifest {}{location}: {message}; fix the file or regenerate it with `agentcompass-host plugin package`",
        .path.display()
    )]
    Parse {
        /// The manifest.
        path: PathBuf,
        /// ` at line L, column C` when known, else empty.
        location: String,
        /// The TOML/serde message, one line.
        message: String,
    },
    /// `name` is empty.
    #[error("manifest {} has an empty name, expected \"{stem}\" (the file name); set name = \"{stem}\"", .path.display())]
    EmptyName {
        /// The manifest.
        path: PathBuf,
        /// The file stem.
        stem: String,
    },
    /// `name` differs from the file stem.
    #[error(
        "manifest {} has name \"{name}\", expected \"{stem}\" (the file name); rename the files to {name}.so and {name}.plugin.toml or set name = \"{stem}\"",
        .path.display()
    )]
    NameMismatch {
        /// The manifest.
        path: PathBuf,
        /// The name found.
        name: String,
        /// The file stem expected.
        stem: String,
    },
    /// `sha256` is not 64 lowercase hex digits.
    #[error(
        "manifest {} has sha256 \"{found}\", expected 64 lowercase hex digits; regenerate it with `agentcompass-host plugin package`",
        .path.display()
    )]
    BadSha256 {
        /// The manifest.
        path: PathBuf,
        /// The value found.
        found: String,
    },
    /// No `[[components]]`.
    #[error(
        "manifest {} declares no components, expected at least one [[components]] entry; list the plugin's components",
        .path.display()
    )]
    NoComponents {
        /// The manifest.
        path: PathBuf,
    },
    /// A component id is empty or has characters outside `[A-Za-z0-9_.-]`.
    #[error(
        "manifest {} has {kind} id \"{id}\", expected a non-empty id of letters, digits, '_', '.' or '-'; rename the component",
        .path.display()
    )]
    BadComponentId {
        /// The manifest.
        path: PathBuf,
        /// The component kind.
        kind: ComponentKind,
        /// The id found.
        id: String,
    },
    /// The same (kind, id) appears twice.
    #[error(
        "manifest {} lists {kind} \"{id}\" twice, expected each component once; remove the duplicate entry",
        .path.display()
    )]
    DuplicateComponent {
        /// The manifest.
        path: PathBuf,
        /// The component kind.
        kind: ComponentKind,
        /// The duplicated id.
        id: String,
    },
    /// The plugin's `host_api` range does not contain this host's plugin-API version.
    #[error(
        "plugin {name} ({}) requires host API {required} but this host provides {provided}; install a matching plugin build or host",
        .path.display()
    )]
    HostApiMismatch {
        /// The manifest.
        path: PathBuf,
        /// The plugin name.
        name: String,
        /// The plugin's `host_api`.
        required: semver::VersionReq,
        /// The host's plugin-API version.
        provided: semver::Version,
    },
}

/// One component a plugin declares (checked against what the library reports after loading).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestComponent {
    /// Component kind.
    pub kind: ComponentKind,
    /// Registry id.
    pub id: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
}

/// The contents of `NAME.plugin.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    /// Plugin name; must equal `NAME`.
    pub name: String,
    /// The plugin's own version.
    pub version: semver::Version,
    /// Plugin-API versions the plugin supports.
    pub host_api: semver::VersionReq,
    /// SHA-256 of `NAME.so`, 64 lowercase hex digits.
    pub sha256: String,
    /// Optional description.
    #[serde(default)]
    pub description: String,
    /// Declared components (at least one).
    #[serde(default)]
    pub components: Vec<ManifestComponent>,
}

/// The library path `DIR/NAME.so` for the manifest `DIR/NAME.plugin.toml` (or `path` + `.so` if
/// it does not end in the manifest suffix).
pub fn library_path_for_manifest(manifest: &Path) -> PathBuf {
    let name = manifest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(MANIFEST_SUFFIX).unwrap_or(&name);
    manifest.with_file_name(format!("{stem}{LIBRARY_SUFFIX}"))
}

/// The manifest path `DIR/NAME.plugin.toml` for the library `DIR/NAME.so`.
pub fn manifest_path_for_library(library: &Path) -> PathBuf {
    let name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(LIBRARY_SUFFIX).unwrap_or(&name);
    library.with_file_name(format!("{stem}{MANIFEST_SUFFIX}"))
}

impl PluginManifest {
    /// Reads and parses a manifest (unknown keys are errors). Does not validate it: call
    /// [`PluginManifest::validate_at`] next.
    pub fn read(path: &Path) -> Result<PluginManifest, ManifestError> {
        Self::read_with_metadata(path).map(|(manifest, _)| manifest)
    }

    /// [`PluginManifest::read`], with the metadata of the file read (from its descriptor).
    /// Only a regular file is ever opened (a FIFO would block the read forever): a symlink or
    /// any other kind of file is refused.
    pub fn read_with_metadata(path: &Path) -> Result<(PluginManifest, Metadata), ManifestError> {
        let io = |err: &dyn std::fmt::Display| ManifestError::Io {
            path: path.to_path_buf(),
            message: collapse_whitespace(&err.to_string()),
        };
        let (mut file, meta) = open_regular(path).map_err(|err| match err {
            OpenError::Io(err) if err.kind() == std::io::ErrorKind::NotFound => {
                ManifestError::Missing {
                    manifest: path.to_path_buf(),
                    library: library_path_for_manifest(path),
                }
            }
            OpenError::Io(err) => io(&err),
            OpenError::Symlink => ManifestError::NotRegularFile {
                path: path.to_path_buf(),
                found: "symlink",
            },
            OpenError::NotRegular(found) => ManifestError::NotRegularFile {
                path: path.to_path_buf(),
                found,
            },
            OpenError::Replaced => io(&"it was replaced while it was being opened"),
        })?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(|err| io(&err))?;
        Ok((Self::parse(&text, path)?, meta))
    }

    /// Parses manifest text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<PluginManifest, ManifestError> {
        toml::from_str(text).map_err(|err| ManifestError::Parse {
            path: path.to_path_buf(),
            location: err
                .span()
                .map(|span| {
                    let (line, column) = line_column(text, span.start);
                    format!(" at line {line}, column {column}")
                })
                .unwrap_or_default(),
            message: collapse_whitespace(err.message()),
        })
    }

    /// Checks the manifest of `NAME.so` (`expected_stem` = `NAME`) against the host's plugin-API
    /// version. Errors name the manifest as `NAME.plugin.toml`; the loader, which knows the full
    /// path, uses [`PluginManifest::validate_at`].
    ///
    /// Checks: name non-empty and equal to the stem; sha256 is 64 lowercase hex digits; at least
    /// one component; ids non-empty and made of `[A-Za-z0-9_.-]`; no duplicate (kind, id);
    /// `host_api` matches `host_api_version`.
    pub fn validate(
        &self,
        expected_stem: &str,
        host_api_version: &semver::Version,
    ) -> Result<(), ManifestError> {
        let path = PathBuf::from(format!("{expected_stem}{MANIFEST_SUFFIX}"));
        self.validate_at(&path, expected_stem, host_api_version)
    }

    /// [`PluginManifest::validate`] with the manifest's full path used in errors.
    pub fn validate_at(
        &self,
        manifest_path: &Path,
        expected_stem: &str,
        host_api_version: &semver::Version,
    ) -> Result<(), ManifestError> {
        let path = || manifest_path.to_path_buf();
        if self.name.is_empty() {
            return Err(ManifestError::EmptyName {
                path: path(),
                stem: expected_stem.to_string(),
            });
        }
        if self.name != expected_stem {
            return Err(ManifestError::NameMismatch {
                path: path(),
                name: self.name.clone(),
                stem: expected_stem.to_string(),
            });
        }
        if !is_sha256_hex(&self.sha256) {
            return Err(ManifestError::BadSha256 {
                path: path(),
                found: self.sha256.clone(),
            });
        }
        if self.components.is_empty() {
            return Err(ManifestError::NoComponents { path: path() });
        }
        let mut seen = HashSet::new();
        for component in &self.components {
            if !is_valid_id(&component.id) {
                return Err(ManifestError::BadComponentId {
                    path: path(),
                    kind: component.kind,
                    id: component.id.clone(),
                });
            }
            if !seen.insert((component.kind, component.id.as_str())) {
                return Err(ManifestError::DuplicateComponent {
                    path: path(),
                    kind: component.kind,
                    id: component.id.clone(),
                });
            }
        }
        if !self.host_api.matches(host_api_version) {
            return Err(ManifestError::HostApiMismatch {
                path: path(),
                name: self.name.clone(),
                required: self.host_api.clone(),
                provided: host_api_version.clone(),
            });
        }
        Ok(())
    }

    /// Renders the manifest as TOML in the documented field order (used by
    /// `agentcompass-host plugin package`); [`PluginManifest::parse`] reads it back unchanged.
    pub fn to_toml_string(&self) -> String {
        let mut out = String::new();
        push_kv(&mut out, "name", &self.name);
        push_kv(&mut out, "version", &self.version.to_string());
        push_kv(&mut out, "host_api", &self.host_api.to_string());
        push_kv(&mut out, "sha256", &self.sha256);
        push_kv(&mut out, "description", &self.description);
        for component in &self.components {
            out.push_str("\n[[components]]\n");
            push_kv(&mut out, "kind", component.kind.as_str());
            push_kv(&mut out, "id", &component.id);
            push_kv(&mut out, "description", &component.description);
        }
        out
    }
}

/// Whether `s` is 64 lowercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `id` is a non-empty `[A-Za-z0-9_.-]+`.
fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// 1-based line and column (in characters) of byte offset `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Appends `key = "value"\n` with `value` as a TOML basic string.
fn push_kv(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push_str(" = ");
    out.push_str(&toml_quote(value));
    out.push('\n');
}

/// `s` as a TOML basic string (also valid as a quoted key).
pub(crate) fn toml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
