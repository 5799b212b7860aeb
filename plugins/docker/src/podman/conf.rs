//! The `containers.conf` of a Podman service the provider starts itself: the user's own
//! configuration, merged as Podman merges it, with one default changed.
//!
//! Podman keeps an exec session's `conmon` alive for `engine.exit_command_delay` seconds after
//! the command ends, so that an API client can still read its exit code (300 s by default,
//! as Docker keeps exec records). The provider reads the exit code as soon as the output
//! ends, so 300 s only leaves a process behind for every command run: a task of 50 commands
//! leaves 50 for five minutes. The private service gets 5 s unless the user set a value.
//!
//! Podman 4.3 reads, in order, `/usr/share/containers/containers.conf`,
//! `/etc/containers/containers.conf`, `/etc/containers/containers.conf.d/*.conf` and, rootless,
//! `$XDG_CONFIG_HOME/containers/containers.conf` (default `~/.config/…`) and its `.d`
//! directory — or only the file `CONTAINERS_CONF` names. Each file's keys replace the earlier
//! ones; tables merge key by key. The private service is given one file
//! (`CONTAINERS_CONF`), the merge, so nothing else of the user's setup changes.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// `engine.exit_command_delay` of the private service when the user's configuration sets none.
pub(crate) const EXIT_COMMAND_DELAY_SECONDS: i64 = 5;

/// Where the configuration files are read from: the process's environment and identity.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfSources {
    /// `CONTAINERS_CONF`: the one file Podman reads instead of all others.
    pub(crate) containers_conf: Option<PathBuf>,
    /// The user's configuration directory when rootless (`$XDG_CONFIG_HOME` or `~/.config`).
    pub(crate) user_config_dir: Option<PathBuf>,
    /// The system directories (`/usr/share/containers`, `/etc/containers`), replaceable in
    /// tests.
    pub(crate) system_dirs: Vec<PathBuf>,
}

impl ConfSources {
    /// The sources of this process: its environment, and whether it runs as root.
    pub(crate) fn of_process() -> ConfSources {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let rootless = !nix::unistd::geteuid().is_root();
        let user_config_dir = rootless
            .then(|| {
                var("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .or_else(|| var("HOME").map(|home| Path::new(&home).join(".config")))
            })
            .flatten();
        ConfSources {
            containers_conf: var("CONTAINERS_CONF").map(PathBuf::from),
            user_config_dir,
            system_dirs: vec![
                PathBuf::from("/usr/share/containers"),
                PathBuf::from("/etc/containers"),
            ],
        }
    }

    /// The files Podman would read, in order (missing ones included; they are skipped).
    fn files(&self) -> Vec<PathBuf> {
        if let Some(file) = &self.containers_conf {
            return vec![file.clone()];
        }
        let mut files = Vec::new();
        for (i, dir) in self.system_dirs.iter().enumerate() {
            files.push(dir.join("containers.conf"));
            // Only the override directory (`/etc/containers`) has a drop-in directory.
            if i + 1 == self.system_dirs.len() {
                files.extend(drop_ins(&dir.join("containers.conf.d")));
            }
        }
        if let Some(dir) = &self.user_config_dir {
            let dir = dir.join("containers");
            files.push(dir.join("containers.conf"));
            files.extend(drop_ins(&dir.join("containers.conf.d")));
        }
        files
    }
}

/// The `*.conf` files of a drop-in directory, sorted by name.
fn drop_ins(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    files
}

/// The merged configuration of `sources`, with the private service's default delay; an
/// unreadable or invalid file is an error naming it (Podman would refuse it too).
pub(crate) fn private_conf(sources: &ConfSources) -> Result<String, String> {
    let mut merged = Table::new();
    for file in sources.files() {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if sources.containers_conf.as_ref() == Some(&file) {
                    return Err(format!(
                        "CONTAINERS_CONF file `{}` does not exist",
                        file.display()
                    ));
                }
                continue;
            }
            Err(e) => return Err(format!("cannot read `{}`: {e}", file.display())),
        };
        let table: Table = text
            .parse()
            .map_err(|e| format!("`{}` is not valid TOML: {e}", file.display()))?;
        merge(&mut merged, table);
    }
    let engine = merged
        .entry("engine")
        .or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(engine) = engine {
        engine
            .entry("exit_command_delay")
            .or_insert(Value::Integer(EXIT_COMMAND_DELAY_SECONDS));
    }
    toml::to_string(&merged).map_err(|e| format!("cannot write the merged containers.conf: {e}"))
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut Table, over: Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(into)), Value::Table(from)) => merge(into, from),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn sources(root: &Path) -> ConfSources {
        ConfSources {
            containers_conf: None,
            user_config_dir: Some(root.join("home/.config")),
            system_dirs: vec![
                root.join("usr/share/containers"),
                root.join("etc/containers"),
            ],
        }
    }

    #[test]
    fn files_merge_in_podman_order_and_the_delay_defaults_to_five_seconds() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            &r.join("usr/share/containers/containers.conf"),
            "[containers]\nlog_driver = \"k8s-file\"\npids_limit = 2048\n[engine]\nevents_logger = \"journald\"\n",
        );
        write(
            &r.join("etc/containers/containers.conf"),
            "[containers]\npids_limit = 100\n",
        );
        write(
            &r.join("etc/containers/containers.conf.d/10-a.conf"),
            "[engine]\nevents_logger = \"file\"\n",
        );
        write(
            &r.join("etc/containers/containers.conf.d/ignored.txt"),
            "not = [valid",
        );
        write(
            &r.join("home/.config/containers/containers.conf"),
            "[containers]\ndefault_ulimits = [\"nofile=10:10\"]\n",
        );
        let merged: Table = private_conf(&sources(r)).unwrap().parse().unwrap();
        let containers = merged["containers"].as_table().unwrap();
        assert_eq!(containers["log_driver"].as_str(), Some("k8s-file"));
        assert_eq!(containers["pids_limit"].as_integer(), Some(100));
        assert_eq!(containers["default_ulimits"].as_array().unwrap().len(), 1);
        let engine = merged["engine"].as_table().unwrap();
        assert_eq!(engine["events_logger"].as_str(), Some("file"));
        assert_eq!(engine["exit_command_delay"].as_integer(), Some(5));
    }

    #[test]
    fn a_delay_the_user_set_is_kept_and_containers_conf_replaces_every_other_file() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            &r.join("etc/containers/containers.conf"),
            "[engine]\nexit_command_delay = 60\n",
        );
        let merged: Table = private_conf(&sources(r)).unwrap().parse().unwrap();
        assert_eq!(
            merged["engine"]["exit_command_delay"].as_integer(),
            Some(60)
        );

        let only = r.join("only.conf");
        write(&only, "[network]\nnetwork_config_dir = \"/x\"\n");
        let sources = ConfSources {
            containers_conf: Some(only),
            ..sources(r)
        };
        let merged: Table = private_conf(&sources).unwrap().parse().unwrap();
        assert_eq!(merged["network"]["network_config_dir"].as_str(), Some("/x"));
        assert_eq!(merged["engine"]["exit_command_delay"].as_integer(), Some(5));
    }

    #[test]
    fn this_machines_own_files_merge() {
        // Podman's packaged defaults (Debian ships a fully commented
        // /usr/share/containers/containers.conf) parse and merge; missing files are skipped.
        let sources = ConfSources {
            containers_conf: None,
            ..ConfSources::of_process()
        };
        let merged: Table = private_conf(&sources).unwrap().parse().unwrap();
        assert!(merged["engine"]["exit_command_delay"]
            .as_integer()
            .is_some());
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(&r.join("etc/containers/containers.conf"), "[engine\n");
        let err = private_conf(&sources(r)).unwrap_err();
        assert!(
            err.contains("etc/containers/containers.conf` is not valid TOML"),
            "{err}"
        );
        let missing = ConfSources {
            containers_conf: Some(r.join("nope.conf")),
            ..sources(r)
        };
        let err = private_conf(&missing).unwrap_err();
        assert!(err.contains("nope.conf` does not exist"), "{err}");
    }
}
