//! `cli_agent`'s `package`: a pinned npm or PyPI package installed by the host into its
//! install cache (once per machine and platform, with the network the task itself may not
//! have) and mounted read-only in the environment, like the built-in agents — instead of an
//! `install_command` run inside every task.

use agentcompass_plugin_api::contracts::{Installer, ToolInstall};

/// Where the package is mounted in the environment.
const MOUNT_PATH: &str = "/opt/agentcompass/agents/cli_agent";

/// A pinned package: `npm:NAME@VERSION` or `pip:NAME==VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    installer: Installer,
    name: String,
    version: String,
}

impl Package {
    /// Parses `text`; the error says what was expected (the caller names the parameter).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let expected = "expected `npm:NAME@VERSION` or `pip:NAME==VERSION` with an exact version";
        let (installer, name, version) = if let Some(spec) = text.strip_prefix("npm:") {
            // A scoped name starts with `@`: the version's `@` is the last one after it.
            let at = spec
                .char_indices()
                .skip(1)
                .filter(|(_, c)| *c == '@')
                .last()
                .map(|(i, _)| i);
            match at {
                Some(at) => (Installer::Npm, &spec[..at], &spec[at + 1..]),
                None => return Err(format!("{expected}, found `{text}`")),
            }
        } else if let Some(spec) = text.strip_prefix("pip:") {
            match spec.split_once("==") {
                Some((name, version)) => (Installer::Pip, name, version),
                None => return Err(format!("{expected}, found `{text}`")),
            }
        } else {
            return Err(format!("{expected}, found `{text}`"));
        };
        let exact = |v: &str| {
            !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        };
        if name.trim().is_empty() || !exact(version) {
            return Err(format!("{expected}, found `{text}`"));
        }
        Ok(Package {
            installer,
            name: name.to_string(),
            version: version.to_string(),
        })
    }

    /// The host's install of the package.
    pub(crate) fn install(&self, registry: Option<String>, timeout_seconds: f64) -> ToolInstall {
        ToolInstall {
            installer: self.installer,
            package: self.name.clone(),
            version: self.version.clone(),
            mount_path: MOUNT_PATH.to_string(),
            registry,
            timeout_seconds,
        }
    }

    /// The directory of the package's executables in the environment.
    pub(crate) fn bin_dir(&self) -> String {
        match self.installer {
            Installer::Npm => format!("{MOUNT_PATH}/node_modules/.bin"),
            Installer::Pip => format!("{MOUNT_PATH}/bin"),
        }
    }

    /// `command` with the package's executables first on `PATH`.
    pub(crate) fn wrap(&self, command: &str) -> String {
        format!("export PATH=\"{}:$PATH\"\n{command}", self.bin_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_npm_and_pip_packages_parse_and_others_are_refused() {
        let scoped = Package::parse("npm:@qwen-code/qwen-code@0.24.4").unwrap();
        assert_eq!(
            (scoped.name.as_str(), scoped.version.as_str()),
            ("@qwen-code/qwen-code", "0.24.4")
        );
        assert_eq!(
            scoped.bin_dir(),
            "/opt/agentcompass/agents/cli_agent/node_modules/.bin"
        );
        let pip = Package::parse("pip:aider-chat==0.86.1").unwrap();
        assert_eq!(pip.install(None, 60.0).package, "aider-chat");
        assert_eq!(pip.bin_dir(), "/opt/agentcompass/agents/cli_agent/bin");
        for bad in [
            "npm:opencode-ai",
            "npm:opencode-ai@^1.0",
            "pip:aider-chat>=1",
            "aider",
            "pip:==1",
        ] {
            assert!(Package::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            pip.wrap("aider --version"),
            "export PATH=\"/opt/agentcompass/agents/cli_agent/bin:$PATH\"\naider --version"
        );
    }
}
