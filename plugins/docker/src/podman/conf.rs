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
//! ones; tables merge key by key. The private service of a Podman before 4.5 is given one file
//! (`CONTAINERS_CONF`), the merge, so nothing else of the user's setup changes; from 4.5 on
//! (which reads more drop-in directories than this merge knows) it reads the user's files
//! itself, and `CONTAINERS_CONF_OVERRIDE` names a file with the one changed key.

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

/// How a private service gets its configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServiceConf {
    /// The file `CONTAINERS_CONF` names: the user's files merged, the delay added.
    Replace(String),
    /// The file `CONTAINERS_CONF_OVERRIDE` names (Podman ≥ 4.5): the delay alone.
    Override(String),
    /// The user set the delay: the service reads the user's files as they are.
    Unchanged,
}

/// The configuration of a private service of the Podman `version` (`None`: unknown, taken as
/// older than 4.5) over the user's files in `sources`.
pub(crate) fn service_conf(
    sources: &ConfSources,
    version: Option<(u32, u32)>,
) -> Result<ServiceConf, String> {
    let merged = merged(sources)?;
    let user_set = merged
        .get("engine")
        .and_then(Value::as_table)
        .is_some_and(|engine| engine.contains_key("exit_command_delay"));
    if user_set {
        return Ok(ServiceConf::Unchanged);
    }
    if version.is_some_and(|v| v >= (4, 5)) {
        return Ok(ServiceConf::Override(format!(
            "[engine]\nexit_command_delay = {EXIT_COMMAND_DELAY_SECONDS}\n"
        )));
    }
    Ok(ServiceConf::Replace(with_delay(merged)?))
}

/// `merged` with `engine.exit_command_delay` set when it is not, as TOML.
fn with_delay(mut merged: Table) -> Result<String, String> {
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

/// The user's files of `sources`, merged as Podman merges them; an unreadable or invalid file
/// is an error naming it (Podman would refuse it too).
fn merged(sources: &ConfSources) -> Result<Table, String> {
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
    Ok(merged)
}

/// The version of the Podman `program` (`podman --version`: "podman version 4.3.1"), if it
/// says. Blocking.
pub(crate) fn podman_version(program: &std::path::Path) -> Option<(u32, u32)> {
    let out = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let version = text.split_whitespace().last()?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
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

    /// The merge with the private service's default delay, as `CONTAINERS_CONF` gets it.
    fn private_conf(sources: &ConfSources) -> Result<String, String> {
        with_delay(merged(sources)?)
    }

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
    fn podman_from_4_5_gets_an_override_older_ones_the_merge_and_a_users_delay_stays() {
        assert_eq!(parse_version("podman version 4.3.1\n"), Some((4, 3)));
        assert_eq!(parse_version("podman version 5.2.0-dev"), Some((5, 2)));
        assert_eq!(parse_version("garbage"), None);
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            &r.join("etc/containers/containers.conf"),
            "[containers]\npids_limit = 9\n",
        );
        let sources = sources(r);
        match service_conf(&sources, Some((4, 3))).unwrap() {
            ServiceConf::Replace(text) => {
                let merged: Table = text.parse().unwrap();
                assert_eq!(merged["containers"]["pids_limit"].as_integer(), Some(9));
                assert_eq!(merged["engine"]["exit_command_delay"].as_integer(), Some(5));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            service_conf(&sources, None).unwrap(),
            service_conf(&sources, Some((4, 4))).unwrap()
        );
        assert_eq!(
            service_conf(&sources, Some((5, 0))).unwrap(),
            ServiceConf::Override("[engine]\nexit_command_delay = 5\n".to_string())
        );
        write(
            &r.join("etc/containers/containers.conf.d/90-delay.conf"),
            "[engine]\nexit_command_delay = 30\n",
        );
        assert_eq!(
            service_conf(&sources, Some((5, 0))).unwrap(),
            ServiceConf::Unchanged
        );
        assert_eq!(
            service_conf(&sources, Some((4, 3))).unwrap(),
            ServiceConf::Unchanged
        );
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
