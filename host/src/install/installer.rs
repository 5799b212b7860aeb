//! The installers' command lines, and the one line of their output that says why they failed.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{ExecRequest, Installer, ToolInstall};

/// Where the helper environment sees the installer's download cache (shared by platforms:
/// npm's is content-addressed, pip's wheels carry their platform tags).
pub(super) const DOWNLOADS_MOUNT: &str = "/var/cache/agentcompass-downloads";

/// Where the helper environment sees the host's certificate authorities (see [`trust_file`]).
pub(super) const TRUST_MOUNT: &str = "/var/cache/agentcompass-trust";

/// The name of the CA bundle in [`TRUST_MOUNT`].
pub(super) const TRUST_FILE: &str = "ca-certificates.crt";

/// Host variables an installer honours that describe the host's network (proxies, indexes,
/// timeouts), passed to it as they are. CA-file variables are not among them: the file is
/// the host's, so the helper gets a copy instead (see [`trust_file`]).
const PASSED_VARIABLES: [&str; 12] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_DEFAULT_TIMEOUT",
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
];

/// The host's CA bundle the installers must trust (a TLS-inspecting egress proxy's CA is
/// usually only there): the file the host's own TLS variables name, else the system bundle.
pub(super) fn trust_file() -> Option<std::path::PathBuf> {
    let named = [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "PIP_CERT",
        "CURL_CA_BUNDLE",
    ]
    .iter()
    .filter_map(std::env::var_os)
    .map(std::path::PathBuf::from);
    let system = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
    ]
    .iter()
    .map(std::path::PathBuf::from);
    named
        .chain(system)
        .chain(std::env::var_os("NODE_EXTRA_CA_CERTS").map(std::path::PathBuf::from))
        .find(|path| path.is_file())
}

/// The installer's HOME inside the helper environment (writable wherever the root is not).
const INSTALL_HOME: &str = "/tmp/agentcompass-install-home";

/// The commands that make `install` at its mount path, in order (`trusted`: the host's CA
/// bundle is at [`TRUST_MOUNT`]).
pub(super) fn commands(install: &ToolInstall, trusted: bool) -> Vec<ExecRequest> {
    let env = installer_env(trusted);
    argvs(install)
        .into_iter()
        .map(|argv| {
            let mut request = ExecRequest::argv(argv);
            request.env = env.clone();
            request.cwd = Some("/tmp".to_string());
            request
        })
        .collect()
}

/// The installer's command lines: `npm install`, or a venv and `pip install` into it.
fn argvs(install: &ToolInstall) -> Vec<Vec<String>> {
    let prefix = install.mount_path.as_str();
    let requirement = install.requirement();
    match install.installer {
        Installer::Npm => {
            let mut argv: Vec<String> = [
                "npm",
                "install",
                "--prefix",
                prefix,
                "--cache",
                DOWNLOADS_MOUNT,
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--loglevel=error",
            ]
            .map(str::to_string)
            .to_vec();
            if let Some(registry) = &install.registry {
                argv.extend(["--registry".to_string(), registry.clone()]);
            }
            argv.push(requirement);
            vec![argv]
        }
        Installer::Pip => {
            let venv = ["python3", "-m", "venv", prefix]
                .map(str::to_string)
                .to_vec();
            let mut pip: Vec<String> = vec![
                format!("{prefix}/bin/pip"),
                "install".into(),
                "--disable-pip-version-check".into(),
                "--no-input".into(),
                "--cache-dir".into(),
                DOWNLOADS_MOUNT.into(),
            ];
            if let Some(index) = &install.registry {
                pip.extend(["--index-url".to_string(), index.clone()]);
            }
            pip.push(requirement);
            vec![venv, pip]
        }
    }
}

/// The installers' environment: their HOME, no update checks, the proxy and index variables
/// passed through, and the host's CA bundle when `trusted`.
fn installer_env(trusted: bool) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("HOME".to_string(), INSTALL_HOME.to_string()),
        (
            "npm_config_update_notifier".to_string(),
            "false".to_string(),
        ),
        ("PIP_DISABLE_PIP_VERSION_CHECK".to_string(), "1".to_string()),
    ]);
    for name in PASSED_VARIABLES {
        if let Some(value) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
            // A proxy or index URL may carry credentials (`http://user:pass@proxy:3128`):
            // scrubbed like a key from anything the host prints, the installer's error line
            // included.
            if value.contains('@') {
                agentcompass_redact::register_secret(&value);
            }
            env.insert(name.to_string(), value);
        }
    }
    if trusted {
        let bundle = format!("{TRUST_MOUNT}/{TRUST_FILE}");
        for name in [
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
            "PIP_CERT",
            "REQUESTS_CA_BUNDLE",
        ] {
            env.insert(name.to_string(), bundle.clone());
        }
    }
    env
}

/// The line of a failed installer's output that says why: the last line of stderr (else
/// stdout) that is not one of npm's trailers (where its debug log is, generic advice).
pub(super) fn last_error_line(stderr: &str, stdout: &str) -> String {
    const TRAILERS: [&str; 4] = [
        "A complete log of this run can be found in",
        "In most cases you or one of your dependencies are requesting",
        "a package version that doesn't exist",
        "[notice]",
    ];
    let pick = |text: &str| {
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .rfind(|line| !TRAILERS.iter().any(|t| line.contains(t)))
            .map(str::to_string)
    };
    pick(stderr)
        .or_else(|| pick(stdout))
        .unwrap_or_else(|| "(no output)".to_string())
}
