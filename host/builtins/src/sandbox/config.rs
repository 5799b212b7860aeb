//! The provider's parameters and what they name: the bwrap binary, the root filesystem and
//! the working directory.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use agentcompass_egress::{egress_hosts_param, HostMap};
use agentcompass_plugin_api::contracts::{
    ConfigField, ConfigSchema, ConfigType, EnvironmentSetup, JsonMap,
};
use agentcompass_plugin_api::sdk::provider::{check_params, string_table};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

use super::image::{Builder, ImageSource};
use super::{DEFAULT_PATH, ID, KERNEL_DIRS};

/// The working directory when `setup.workdir` is not given.
pub(super) const DEFAULT_WORKDIR: &str = "/app";

pub(super) fn config_schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "bwrap",
            ConfigType::String,
            json!("bwrap"),
            "Path of the bwrap binary (bubblewrap), or a name looked up in PATH",
        ))
        .field(ConfigField::new(
            "root",
            ConfigType::String,
            Value::Null,
            "A local root filesystem directory mounted read-only as `/` (default: \
             `setup.image` when it is an absolute directory path, else the host root `/`)",
        ))
        .field(ConfigField::new(
            "prepared_namespace",
            ConfigType::Boolean,
            json!(true),
            "Start each command in a namespace bwrap prepares once per sandbox shape, instead \
             of a bwrap per command (used when the host runs as root, for commands with \
             nothing to forward; false: always a bwrap per command)",
        ))
        .field(ConfigField::new(
            "host_root",
            ConfigType::Boolean,
            json!(false),
            "Run a task that ships its own image definition (`setup.build_context`: a Harbor \
             task's environment/Dockerfile) or names an image (`setup.image`: a Harbor task's \
             docker_image) on the host root instead of building or pulling it (the task sees \
             the host's tools, not its own)",
        ))
        .field(ConfigField::new(
            "image_builder",
            ConfigType::String,
            json!("podman"),
            "The daemonless engine that builds a task's own image definition \
             (`setup.build_context`) or pulls the image it names (`setup.image`), a path or a \
             name looked up in PATH: Podman's, the root filesystem exported once per image \
             and entered with the image's ENV and WORKDIR, read-only but for the sandbox's \
             writable directories",
        ))
        .field(ConfigField::new(
            "image_store",
            ConfigType::String,
            Value::Null,
            "Where built task images and their root filesystems are kept (default: \
             `agentcompass-host/sandbox-images` under $XDG_CACHE_HOME, else ~/.cache)",
        ))
        .field(egress_hosts_param())
}

/// The provider's parameters.
pub(super) struct Config {
    pub(super) bwrap: String,
    pub(super) root: Option<String>,
    /// The egress proxy's static names (`allowlist`, `denylist`), validated.
    pub(super) egress_hosts: BTreeMap<String, String>,
    /// Commands may enter the shape's prepared namespace (`prepared_namespace`).
    pub(super) prepared_namespace: bool,
    /// A task's own image definition may run on the host root (`host_root`).
    pub(super) host_root: bool,
    /// The engine that builds a task's own image (`image_builder`).
    pub(super) image_builder: String,
    /// Where built images are kept (`image_store`).
    pub(super) image_store: Option<String>,
}

impl Config {
    pub(super) fn parse(params: &JsonMap) -> Result<Config> {
        check_params(&config_schema(), params, ID)?;
        let text = |key: &str| -> Result<Option<String>> {
            match params.get(key).and_then(Value::as_str) {
                Some("") => Err(Error::invalid_input(format!(
                    "environment `{ID}`: parameter `{key}` must not be empty"
                ))),
                other => Ok(other.map(str::to_string)),
            }
        };
        let egress_hosts = string_table(params, "egress_hosts", ID)?;
        HostMap::from_pairs(&egress_hosts).map_err(|e| {
            Error::invalid_input(format!("environment `{ID}`: parameter `egress_hosts`: {e}"))
        })?;
        Ok(Config {
            bwrap: text("bwrap")?.unwrap_or_else(|| "bwrap".to_string()),
            root: text("root")?,
            egress_hosts,
            prepared_namespace: params
                .get("prepared_namespace")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            host_root: params
                .get("host_root")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            image_builder: text("image_builder")?.unwrap_or_else(|| "podman".to_string()),
            image_store: text("image_store")?,
        })
    }
}

impl Config {
    /// The egress proxy's host map: the `egress_hosts` parameter, then `runtime` (the open
    /// request's `egress_hosts`, from the runtime option `runtime.egress.hosts`), whose
    /// address replaces the parameter's for the same name (compared lowercase, without a
    /// trailing dot): the runtime option describes the host's network, the same for every
    /// request.
    pub(super) fn host_map(&self, runtime: &BTreeMap<String, String>) -> Result<HostMap> {
        let own = HostMap::from_pairs(&self.egress_hosts);
        own.and_then(|own| Ok(own.overridden_by(HostMap::from_pairs(runtime)?)))
            .map_err(|e| {
                Error::invalid_input(format!(
                "environment `{ID}`: egress hosts (`egress_hosts`, `runtime.egress.hosts`): {e}"
            ))
            })
    }
}

impl Config {
    /// The task's own image of `setup` that this sandbox prepares (its image definition,
    /// `setup.build_context`, else an image name in `setup.image`), with its builder — unless
    /// the user chose a root (the `root` parameter, an absolute `setup.image`) or `host_root`.
    pub(super) fn task_image<'a>(
        &self,
        setup: &'a EnvironmentSetup,
    ) -> Option<(Option<Builder>, ImageSource<'a>)> {
        let image = setup.image.as_deref();
        let own_root = self.root.is_some() || image.is_some_and(|i| Path::new(i).is_absolute());
        if own_root || self.host_root {
            return None;
        }
        let source = match (setup.build_context.as_deref(), image) {
            (Some(context), _) => ImageSource::Build(context),
            (None, Some(name)) => ImageSource::Named(name),
            (None, None) => return None,
        };
        Some((self.builder(), source))
    }

    /// The engine that builds task images, when it is on this machine.
    fn builder(&self) -> Option<Builder> {
        let program = find_program(&self.image_builder)?;
        let store = match &self.image_store {
            Some(store) => PathBuf::from(store),
            None => std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
                .join("agentcompass-host/sandbox-images"),
        };
        Some(Builder { program, store })
    }

    /// Refuses an environment with an image of its own (built from its definition,
    /// `setup.build_context`, or named by `setup.image`) when no engine here can prepare it:
    /// the task would otherwise run on the host root, with the host's tools instead of its
    /// own. A `root` (parameter, or an absolute `setup.image`) or `host_root = true` is the
    /// user's choice.
    pub(super) fn check_image(&self, setup: &EnvironmentSetup) -> Result<()> {
        match self.task_image(setup) {
            Some((None, source)) => Err(Error::unsupported(format!(
                "environment `{ID}`: the task's image is {}, and `{}` (the sandbox's \
                 `image_builder`) is not on this machine; install Podman, or run it with \
                 --env docker or --env podman, or on the host's root filesystem with \
                 --env-params '{{\"host_root\": true}}'",
                match source {
                    ImageSource::Build(context) => format!("built from `{context}/Dockerfile`"),
                    ImageSource::Named(name) => format!("`{name}`"),
                },
                self.image_builder
            ))),
            _ => Ok(()),
        }
    }
}

/// The sandbox path of the working directory (`setup.workdir`, else the task image's
/// `WORKDIR`, else `/app`): absolute, normalised, not `/` and not under `/proc` or `/dev`.
pub(super) fn workdir_of(setup: &EnvironmentSetup, image: Option<&str>) -> Result<PathBuf> {
    let given = setup
        .workdir
        .as_deref()
        .or(image)
        .unwrap_or(DEFAULT_WORKDIR);
    let bad = |why: &str| {
        Error::invalid_input(format!("environment `{ID}`: setup.workdir `{given}` {why}"))
    };
    let path = Path::new(given);
    if !path.is_absolute() {
        return Err(bad("must be an absolute path"));
    }
    let mut normal = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => return Err(bad("must not contain `..`")),
            _ => {}
        }
    }
    if normal == Path::new("/") {
        return Err(bad("must not be the root directory"));
    }
    if KERNEL_DIRS.iter().any(|k| normal.starts_with(k)) {
        return Err(bad("must not be under /proc or /dev"));
    }
    Ok(normal)
}

/// Where `bwrap` names an executable file: itself when it contains a slash, else the first
/// match in `PATH`.
pub(super) fn find_program(bwrap: &str) -> Option<PathBuf> {
    let executable = |path: &Path| {
        fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if bwrap.contains('/') {
        let path = std::path::absolute(bwrap).ok()?;
        return executable(&path).then_some(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    std::env::split_paths(&search)
        .map(|dir| dir.join(bwrap))
        .find(|path| path.is_absolute() && executable(path))
}

/// The root filesystem: the `root` parameter, else `setup.image` when it is an absolute path
/// (both must be existing directories), else the host root.
pub(super) fn choose_root(param: Option<&str>, image: Option<&str>) -> Result<PathBuf> {
    let (given, source) = match (param, image) {
        (Some(root), _) => (root, "parameter `root`"),
        (None, Some(image)) if Path::new(image).is_absolute() => (image, "setup.image"),
        (None, image) => {
            if let Some(image) = image {
                tracing::debug!(
                    provider = ID,
                    image,
                    "setup.image is not a local directory: using the host root"
                );
            }
            return Ok(PathBuf::from("/"));
        }
    };
    let path = std::path::absolute(given).and_then(fs::canonicalize);
    match path {
        Ok(path) if path.is_dir() => Ok(path),
        Ok(_) => Err(Error::invalid_input(format!(
            "environment `{ID}`: {source} `{given}` is not a directory"
        ))),
        Err(e) => Err(Error::invalid_input(format!(
            "environment `{ID}`: {source} `{given}`: {e}"
        ))),
    }
}
