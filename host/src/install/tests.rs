use agentcompass_plugin_api::contracts::{EnvironmentSpec, Installer, ToolInstall};

use super::installer::{commands, last_error_line};
use super::{check_installs, InstallCache, Platform};

fn npm(package: &str, version: &str, mount: &str) -> ToolInstall {
    ToolInstall {
        installer: Installer::Npm,
        package: package.into(),
        version: version.into(),
        mount_path: mount.into(),
        registry: None,
        timeout_seconds: 60.0,
    }
}

#[test]
fn plain_installs_pass_and_odd_ones_are_refused_naming_the_field() {
    let good = npm(
        "@anthropic-ai/claude-code",
        "2.1.332",
        "/opt/agentcompass/claude_code",
    );
    assert_eq!(check_installs(std::slice::from_ref(&good)), Ok(()));
    let cases = [
        (npm("--global", "1", "/opt/a"), "package `--global`"),
        (npm("x", "1 2", "/opt/a"), "version `1 2`"),
        (npm("x", "../1", "/opt/a"), "version `../1`"),
        (npm("x", "1", "opt/a"), "mount_path `opt/a`"),
        (npm("x", "1", "/"), "mount_path `/`"),
        (npm("x", "1", "/opt/../etc"), "mount_path `/opt/../etc`"),
    ];
    for (install, expected) in cases {
        let message = check_installs(&[install]).unwrap_err().to_string();
        assert!(
            message.starts_with("harness plan installs[0]: "),
            "{message}"
        );
        assert!(message.contains(expected), "{message}");
    }
    let twice = [good.clone(), npm("other", "1", &good.mount_path)];
    let refused = check_installs(&twice).unwrap_err();
    assert_eq!(refused.index, 1);
    assert!(refused.problem.contains("used twice"), "{refused}");
}

#[test]
fn npm_and_pip_commands_install_at_the_mount_path() {
    let mut install = npm("@openai/codex", "0.171.0", "/opt/agentcompass/codex");
    install.registry = Some("http://127.0.0.1:9/".into());
    let argv = |r: &agentcompass_plugin_api::contracts::ExecRequest| {
        serde_json::to_value(&r.command).unwrap()
    };
    let npm_commands = commands(&install, false);
    assert_eq!(npm_commands.len(), 1);
    let text = argv(&npm_commands[0]).to_string();
    assert!(
        text.contains("\"--prefix\",\"/opt/agentcompass/codex\""),
        "{text}"
    );
    assert!(
        text.contains("\"--registry\",\"http://127.0.0.1:9/\""),
        "{text}"
    );
    assert!(text.ends_with("\"@openai/codex@0.171.0\"]"), "{text}");
    let pip = ToolInstall {
        installer: Installer::Pip,
        package: "mini-swe-agent".into(),
        version: "2.4.6".into(),
        mount_path: "/opt/agentcompass/mini_swe_agent".into(),
        registry: None,
        timeout_seconds: 60.0,
    };
    let pip_commands = commands(&pip, true);
    assert_eq!(pip_commands.len(), 2);
    assert_eq!(
        argv(&pip_commands[0]),
        serde_json::json!(["python3", "-m", "venv", "/opt/agentcompass/mini_swe_agent"])
    );
    assert_eq!(
        pip_commands[1].env["PIP_CERT"],
        "/var/cache/agentcompass-trust/ca-certificates.crt"
    );
    assert!(!npm_commands[0].env.contains_key("PIP_CERT"));
    let text = argv(&pip_commands[1]).to_string();
    assert!(
        text.starts_with("[\"/opt/agentcompass/mini_swe_agent/bin/pip\",\"install\""),
        "{text}"
    );
    assert!(text.ends_with("\"mini-swe-agent==2.4.6\"]"), "{text}");
}

#[test]
fn the_error_line_skips_npm_trailers() {
    let npm_err = "npm error code ETARGET\n\
        npm error notarget No matching version found for @anthropic-ai/claude-code@9.9.9.\n\
        npm error notarget In most cases you or one of your dependencies are requesting\n\
        npm error notarget a package version that doesn't exist.\n\
        npm error A complete log of this run can be found in: /tmp/x.log\n";
    assert_eq!(
        last_error_line(npm_err, ""),
        "npm error notarget No matching version found for @anthropic-ai/claude-code@9.9.9."
    );
    let pip_err = "ERROR: Could not find a version that satisfies the requirement x==9\n\
        ERROR: No matching distribution found for x==9\n";
    assert_eq!(
        last_error_line(pip_err, ""),
        "ERROR: No matching distribution found for x==9"
    );
    assert_eq!(last_error_line("", "only stdout\n"), "only stdout");
    assert_eq!(last_error_line("", ""), "(no output)");
}

#[test]
fn the_platform_is_the_provider_params_and_image_not_the_workdir() {
    let mut spec = EnvironmentSpec {
        id: "docker".into(),
        ..EnvironmentSpec::default()
    };
    spec.setup.image = Some("agentcompass/agents-debian:12".into());
    spec.params
        .insert("docker_host".into(), "unix:///tmp/a.sock".into());
    let keep = vec!["build_context".to_string()];
    let platform = Platform::of(&spec, Some(&keep));
    assert!(
        platform
            .dir_name()
            .starts_with("docker-agentcompass_agents-debian_12-"),
        "{}",
        platform.dir_name()
    );
    let mut other_workdir = spec.clone();
    other_workdir.setup.workdir = Some("/work".into());
    assert_eq!(Platform::of(&other_workdir, Some(&keep)), platform);
    let mut other_image = spec.clone();
    other_image.setup.image = Some("debian:12".into());
    assert_ne!(Platform::of(&other_image, Some(&keep)), platform);
    // The daemon's socket is not part of the platform; a build context is; all params count
    // for a provider that names none.
    let mut other_socket = spec.clone();
    other_socket
        .params
        .insert("docker_host".into(), "unix:///tmp/b.sock".into());
    assert_eq!(Platform::of(&other_socket, Some(&keep)), platform);
    let mut built = spec.clone();
    built.params.insert("build_context".into(), "/ctx".into());
    assert_ne!(Platform::of(&built, Some(&keep)), platform);
    assert_ne!(Platform::of(&other_socket, None), Platform::of(&spec, None));
    let cache = InstallCache::new("/cache");
    let entry = cache.entry_dir(&platform, &npm("@a/b", "1.0.0", "/opt/b"));
    assert_eq!(
        entry.strip_prefix("/cache").unwrap().iter().nth(1).unwrap(),
        "@a+b@1.0.0"
    );
}
