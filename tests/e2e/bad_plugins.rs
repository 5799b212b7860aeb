//! Each bad plugin gives one clear line while the good plugins still load.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{built_library, plugin_dir_args, run_host, run_host_env, PluginDirs};

/// Lists benchmarks with the given plugin dirs; asserts the run succeeded, the example pack
/// (the good plugin) is registered, and stderr is exactly one refusal line, which is returned
/// with temp paths redacted.
fn one_refusal(dirs: &PluginDirs, plugin_dirs: &[&Path], env: &[(&str, &str)]) -> String {
    let mut args = plugin_dir_args(plugin_dirs);
    args.extend(["list".into(), "benchmark".into()]);
    let out = run_host_env(&args, env).expect_code(0);
    assert!(
        out.stdout
            .contains("example_exact_match  example-pack@0.1.0  Generated arithmetic"),
        "the good plugin must still load: {out:?}"
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line on stderr: {out:?}");
    assert!(lines[0].starts_with("warning: refused plugin "), "{out:?}");
    dirs.redact(lines[0])
}

fn good_and_bad(dirs: &PluginDirs, bad_crate: &str) -> (PathBuf, PathBuf) {
    (
        dirs.package("good", "example-pack"),
        dirs.package("bad", bad_crate),
    )
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from}", path.display());
    fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn wrong_sha256() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let manifest = bad.join("bad-pack.plugin.toml");
    let real = agentcompass_e2e::sha256_hex(&bad.join("bad-pack.so"));
    edit(&manifest, &real, &"0".repeat(64));
    let line = one_refusal(&dirs, &[&good, &bad], &[]);
    assert!(line.contains(&real), "{line}");
    insta::assert_snapshot!(line.replace(&real, "[SHA]"));
}

#[test]
fn group_or_world_writable_dir() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    fs::set_permissions(&bad, fs::Permissions::from_mode(0o777)).unwrap();
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &bad], &[]));
    fs::set_permissions(&bad, fs::Permissions::from_mode(0o775)).unwrap();
    assert!(one_refusal(&dirs, &[&good, &bad], &[]).contains("group/world-writable"));
}

#[test]
fn world_writable_library_file() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    fs::set_permissions(bad.join("bad-pack.so"), fs::Permissions::from_mode(0o757)).unwrap();
    let line = one_refusal(&dirs, &[&good, &bad], &[]);
    assert!(
        line.contains("bad-pack.so") && line.contains("writable"),
        "{line}"
    );
}

#[test]
fn built_against_an_older_plugin_api() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let bytes = fs::read(built_library("old-api-pack")).unwrap();
    dirs.place_with_manifest(
        "bad",
        "old-api-pack",
        &bytes,
        "^0.1",
        &[("benchmark", "old")],
    );
    let line = one_refusal(&dirs, &[&good, &dirs.dir("bad")], &[]);
    insta::assert_snapshot!(line);
}

#[test]
fn an_analyzer_declared_by_a_0_1_0_plugin() {
    // Plugin API 0.1.0 root modules have no analyzer factory: such a plugin is refused at load
    // (not when an analyzer is first needed), with a line saying to rebuild it.
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let bytes = fs::read(built_library("api-0-1-pack")).unwrap();
    dirs.place_with_manifest(
        "bad",
        "api-0-1-pack",
        &bytes,
        "^0.1",
        &[
            ("recipe", "legacy_timeout"),
            ("analyzer", "legacy_analyzer"),
        ],
    );
    let env = [("API_0_1_PACK_DECLARE_ANALYZER", "1")];
    let line = one_refusal(&dirs, &[&good, &dirs.dir("bad")], &env);
    insta::assert_snapshot!(line);
}

#[test]
fn missing_manifest() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    fs::remove_file(bad.join("bad-pack.plugin.toml")).unwrap();
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &bad], &[]));
}

#[test]
fn malformed_manifest() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    edit(
        &bad.join("bad-pack.plugin.toml"),
        "version = \"0.1.0\"",
        "version = 7",
    );
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &bad], &[]));
}

#[test]
fn host_api_range_excluding_this_host() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    edit(
        &bad.join("bad-pack.plugin.toml"),
        "host_api = \"^0.1.2\"",
        "host_api = \"^9\"",
    );
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &bad], &[]));
}

#[test]
fn truncated_library() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let bytes = fs::read(built_library("bad-pack")).unwrap();
    // An ELF header and a little more: passes the magic check, fails in dlopen.
    dirs.place_with_manifest(
        "bad",
        "truncated",
        &bytes[..4096],
        "^0.1",
        &[("benchmark", "x")],
    );
    // dlopen would map segments past the end of the file and die of SIGBUS on first touch:
    // the ELF layout check refuses it before that.
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &dirs.dir("bad")], &[]));
}

#[test]
fn non_elf_file_named_so() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    dirs.place_with_manifest(
        "bad",
        "script",
        b"#!/bin/sh\necho hi\n",
        "^0.1",
        &[("benchmark", "x")],
    );
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &dirs.dir("bad")], &[]));
}

#[test]
fn duplicate_component_id_names_both_sources() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "dup-pack");
    insta::assert_snapshot!(one_refusal(&dirs, &[&good, &bad], &[]));
}

#[test]
fn symlink_pointing_outside_the_trusted_dir() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let elsewhere = dirs.package("elsewhere", "bad-pack");
    std::os::unix::fs::symlink(elsewhere.join("bad-pack.so"), good.join("bad-pack.so")).unwrap();
    fs::copy(
        elsewhere.join("bad-pack.plugin.toml"),
        good.join("bad-pack.plugin.toml"),
    )
    .unwrap();
    insta::assert_snapshot!(one_refusal(&dirs, &[&good], &[]));
}

#[test]
fn panicking_registration() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let line = one_refusal(
        &dirs,
        &[&good, &bad],
        &[("BAD_PACK_PANIC_IN_REGISTER", "1")],
    );
    insta::assert_snapshot!(line);
}

#[test]
fn panicking_constructor_is_reported_by_verify() {
    let dirs = PluginDirs::new();
    let bad = dirs.package("bad", "bad-pack");
    // Constructors run lazily: listing still works and shows the component.
    let mut args = plugin_dir_args(&[&bad]);
    args.extend(["list".into(), "benchmark".into()]);
    let out = run_host(&args).expect_code(0);
    assert!(out.stdout.contains("bad_ctor"));
    // Verification instantiates every component and reports the panic, one line.
    let out = run_host([
        "plugin".as_ref(),
        "verify".as_ref(),
        bad.join("bad-pack.so").as_os_str(),
    ])
    .expect_code(1);
    insta::assert_snapshot!(dirs.redact(&out.stdout));
}

#[test]
fn lock_file_pins_hashes() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let good_sha = agentcompass_e2e::sha256_hex(&good.join("example-pack.so"));
    let lock = dirs.root().join("plugins.lock");
    fs::write(
        &lock,
        format!(
            "[plugins]\n\"example-pack\" = \"{good_sha}\"\n\"bad-pack\" = \"{}\"\n",
            "1".repeat(64)
        ),
    )
    .unwrap();
    let mut args = plugin_dir_args(&[&good, &bad]);
    args.extend([
        "--plugin-lock".into(),
        lock.clone().into(),
        "list".into(),
        "benchmark".into(),
    ]);
    let out = run_host(&args).expect_code(0);
    assert!(out.stdout.contains("example_exact_match"), "{out:?}");
    let refused = out.stderr_lines("warning: refused plugin");
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(refused[0].contains("plugins.lock"), "{out:?}");

    fs::write(
        &lock,
        format!("[plugins]\n\"example-pack\" = \"{good_sha}\"\n"),
    )
    .unwrap();
    let out = run_host(&args);
    let refused = out.stderr_lines("warning: refused plugin");
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(refused[0].contains("not pinned"), "{out:?}");
}

#[test]
fn verify_exit_codes() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    run_host(["plugin".as_ref(), "verify".as_ref(), good.as_os_str()]).expect_code(0);
    fs::remove_file(good.join("example-pack.plugin.toml")).unwrap();
    let out = run_host(["plugin".as_ref(), "verify".as_ref(), good.as_os_str()]).expect_code(1);
    assert_eq!(out.stdout.lines().count(), 1, "{out:?}");
    assert!(out.stdout.starts_with("error: refused plugin"), "{out:?}");
}

/// Runs the host binary like [`run_host`], but kills it and fails the test if it has not
/// finished within 30 seconds (a check that blocks, on a FIFO say, must fail, not hang).
fn run_host_within_30s(args: &[std::ffi::OsString]) -> agentcompass_e2e::Outcome {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(agentcompass_e2e::host_bin())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("AGENTCOMPASS_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Output is a few lines: it fits the pipes, so waiting before reading cannot deadlock.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("agentcompass-host {args:?} did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    agentcompass_e2e::Outcome {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// `list` with the plugin dirs `good` and `bad` and `plugin verify file` (each within 30 s)
/// refuse the plugin with the same line: `list` warns (exit 0, the good plugin still loads),
/// `verify` fails (exit 1). Returns the refusal (`refused plugin ...`), temp paths redacted.
fn list_and_verify_agree(dirs: &PluginDirs, good: &Path, bad: &Path, file: &Path) -> String {
    let mut args = plugin_dir_args(&[good, bad]);
    args.extend(["list".into(), "benchmark".into()]);
    let listed = run_host_within_30s(&args).expect_code(0);
    assert!(
        listed.stdout.contains("example_exact_match"),
        "the good plugin must still load: {listed:?}"
    );
    let warnings: Vec<&str> = listed.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "exactly one line on stderr: {listed:?}");
    let from_list = warnings[0]
        .strip_prefix("warning: ")
        .unwrap_or_else(|| panic!("{listed:?}"));
    let verified =
        run_host_within_30s(&["plugin".into(), "verify".into(), file.into()]).expect_code(1);
    let errors: Vec<&str> = verified.stdout.lines().collect();
    assert_eq!(errors.len(), 1, "exactly one line: {verified:?}");
    let from_verify = errors[0]
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{verified:?}"));
    assert_eq!(from_verify, from_list, "verify and list must agree");
    assert!(from_list.starts_with("refused plugin "), "{from_list}");
    dirs.redact(from_list)
}

#[test]
fn verify_refuses_a_plugin_in_a_sticky_world_writable_dir_as_list_does() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    fs::set_permissions(&bad, fs::Permissions::from_mode(0o1777)).unwrap();
    let line = list_and_verify_agree(&dirs, &good, &bad, &bad.join("bad-pack.so"));
    assert_eq!(
        line,
        "refused plugin [TMP]/bad: directory [TMP]/bad is group/world-writable (mode 1777); \
         fix with chmod go-w [TMP]/bad"
    );
}

#[test]
fn verify_refuses_a_world_writable_manifest_as_list_does() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let manifest = bad.join("bad-pack.plugin.toml");
    fs::set_permissions(&manifest, fs::Permissions::from_mode(0o666)).unwrap();
    let line = list_and_verify_agree(&dirs, &good, &bad, &bad.join("bad-pack.so"));
    assert_eq!(
        line,
        "refused plugin [TMP]/bad/bad-pack.plugin.toml: file [TMP]/bad/bad-pack.plugin.toml is \
         group/world-writable (mode 0666); fix with chmod go-w [TMP]/bad/bad-pack.plugin.toml"
    );
}

#[test]
fn verify_refuses_a_manifest_symlinked_out_of_the_dir_as_list_does() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let elsewhere = dirs.dir("elsewhere");
    let manifest = bad.join("bad-pack.plugin.toml");
    fs::rename(&manifest, elsewhere.join("bad-pack.plugin.toml")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("bad-pack.plugin.toml"), &manifest).unwrap();
    let line = list_and_verify_agree(&dirs, &good, &bad, &bad.join("bad-pack.so"));
    assert_eq!(
        line,
        "refused plugin [TMP]/bad/bad-pack.plugin.toml: symlink [TMP]/bad/bad-pack.plugin.toml \
         points outside the trusted directory [TMP]/bad (to [TMP]/elsewhere/bad-pack.plugin.toml); \
         copy the file into the directory instead"
    );
}

#[test]
fn verify_refuses_a_library_symlinked_out_of_the_dir_as_list_does() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let elsewhere = dirs.package("elsewhere", "bad-pack");
    let bad = dirs.dir("bad");
    std::os::unix::fs::symlink(elsewhere.join("bad-pack.so"), bad.join("bad-pack.so")).unwrap();
    fs::copy(
        elsewhere.join("bad-pack.plugin.toml"),
        bad.join("bad-pack.plugin.toml"),
    )
    .unwrap();
    let line = list_and_verify_agree(&dirs, &good, &bad, &bad.join("bad-pack.so"));
    assert_eq!(
        line,
        "refused plugin [TMP]/bad/bad-pack.so: symlink [TMP]/bad/bad-pack.so points outside the \
         trusted directory [TMP]/bad (to [TMP]/elsewhere/bad-pack.so); copy the file into the \
         directory instead"
    );
}

#[test]
fn verify_refuses_a_fifo_named_like_a_plugin_without_blocking() {
    let dirs = PluginDirs::new();
    let (good, bad) = good_and_bad(&dirs, "bad-pack");
    let library = bad.join("bad-pack.so");
    fs::remove_file(&library).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&library)
        .status()
        .unwrap();
    assert!(made.success());
    let line = list_and_verify_agree(&dirs, &good, &bad, &library);
    assert_eq!(
        line,
        "refused plugin [TMP]/bad/bad-pack.so: plugin file [TMP]/bad/bad-pack.so is a fifo, \
         expected a regular file; remove it or rename it so it does not end in .so"
    );
    // A FIFO manifest beside a good library is refused unopened as well.
    fs::remove_file(&library).unwrap();
    fs::copy(built_library("bad-pack"), &library).unwrap();
    let manifest = bad.join("bad-pack.plugin.toml");
    fs::remove_file(&manifest).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&manifest)
        .status()
        .unwrap();
    assert!(made.success());
    let line = list_and_verify_agree(&dirs, &good, &bad, &library);
    assert!(
        line.contains("bad-pack.plugin.toml") && line.contains("fifo"),
        "{line}"
    );
}

/// A library's digest is taken from the user's digest cache only while the open file is the
/// one hashed (same device, inode, size and times): a library changed in place, even keeping
/// its size, is hashed again and refused; a library written less than two seconds ago is not
/// recorded at all. abi_stable's layout verdict is recorded for the digest and the host
/// binary, and only that pair skips the layout walk: another host binary walks it again.
#[test]
fn the_digest_cache_never_hides_a_changed_library() {
    use std::io::{Seek, SeekFrom, Write};
    use std::process::Command;
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let lib = good.join("example-pack.so");
    let real = agentcompass_e2e::sha256_hex(&lib);
    let cache_home = dirs.root().join("cache-home");
    let cache = cache_home.join("agentcompass-host/plugin-digests");
    let env = [("XDG_CACHE_HOME", cache_home.to_str().unwrap())];
    let debug_env = [
        ("XDG_CACHE_HOME", cache_home.to_str().unwrap()),
        ("AGENTCOMPASS_LOG", "agentcompass_loader=debug"),
    ];
    let mut args = plugin_dir_args(&[&good]);
    args.extend(["list".into(), "benchmark".into()]);
    let list = || run_host_env(&args, &env);
    let entries = || -> Vec<String> {
        let text = fs::read_to_string(&cache).unwrap();
        assert_eq!(text.lines().next(), Some("agentcompass plugin digests v2"));
        text.lines().skip(1).map(str::to_string).collect()
    };

    // Just packaged: too fresh to record its digest. The layout verdict names the digest
    // itself (and the host binary, built long before), so it is recorded at once.
    let out = list().expect_code(0);
    assert!(out.stdout.contains("example_exact_match"), "{out:?}");
    let recorded = entries();
    assert_eq!(
        recorded.len(),
        1,
        "a racy library was recorded: {recorded:?}"
    );
    assert!(
        recorded[0].starts_with("layout ") && recorded[0].ends_with(&real),
        "{recorded:?}"
    );

    // Once it is older than the racy window, the load records its digest too.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let out = list().expect_code(0);
    assert!(out.stdout.contains("example_exact_match"), "{out:?}");
    let recorded = entries();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert!(
        !recorded[0].starts_with("layout ") && recorded[0].ends_with(&real),
        "{recorded:?}"
    );
    let mode = fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // ...and the next load takes both entries (unchanged file: loads, nothing rewritten).
    let written = fs::metadata(&cache).unwrap().modified().unwrap();
    let out = run_host_env(&args, &debug_env).expect_code(0);
    assert!(out.stderr.contains("layout=AcceptedBefore"), "{out:?}");
    assert_eq!(fs::metadata(&cache).unwrap().modified().unwrap(), written);

    // Another host binary (a copy: another inode) walks the layout in full.
    let other_host = dirs.root().join("other-host");
    fs::copy(agentcompass_e2e::host_bin(), &other_host).unwrap();
    let out = Command::new(&other_host)
        .args(&args)
        .envs(debug_env)
        .output()
        .unwrap();
    let out = agentcompass_e2e::Outcome::of(out).expect_code(0);
    assert!(out.stdout.contains("example_exact_match"), "{out:?}");
    assert!(
        out.stderr.contains("layout=Full") && !out.stderr.contains("layout=AcceptedBefore"),
        "{out:?}"
    );

    // One byte changed in place: same inode, same size, and still refused.
    let mut file = fs::OpenOptions::new().write(true).open(&lib).unwrap();
    let len = file.metadata().unwrap().len();
    file.seek(SeekFrom::Start(len - 1)).unwrap();
    let last = fs::read(&lib).unwrap()[len as usize - 1];
    file.write_all(&[last ^ 0xff]).unwrap();
    drop(file);
    assert_eq!(fs::metadata(&lib).unwrap().len(), len);
    let changed = agentcompass_e2e::sha256_hex(&lib);
    let out = list().expect_code(0);
    assert!(!out.stdout.contains("example_exact_match"), "{out:?}");
    let refused = out.stderr_lines("warning: refused plugin");
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(
        refused[0].contains(&format!("has sha256 {changed} but its manifest"))
            && refused[0].contains(&real),
        "{out:?}"
    );
}

/// A run opens (dlopen, ABI checks, `init`) only the plugins whose components it uses; the
/// others are checked (manifest, hash, trust) but never mapped, and a plugin that would be
/// refused when opened says nothing while no run needs it. A run that needs it reports the
/// refusal once, as the same one line, and fails naming the component.
#[test]
fn a_run_opens_only_the_plugins_it_uses() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let unused = dirs.package("unused", "docker-provider");
    let bad = dirs.package("bad", "bad-pack");
    let results = dirs.root().join("results");
    let cache_home = dirs.root().join("cache-home");
    let env = [
        ("XDG_CACHE_HOME", cache_home.to_str().unwrap()),
        ("AGENTCOMPASS_LOG", "agentcompass_loader=debug"),
        ("BAD_PACK_PANIC_IN_REGISTER", "1"),
    ];
    let run = |benchmark: &str| {
        let mut args = plugin_dir_args(&[&good, &unused, &bad]);
        args.extend(
            [
                "run",
                benchmark,
                "example_calculator",
                "m",
                "--benchmark-params",
                r#"{"size": 2}"#,
                "--env",
                "host_process",
                "--progress",
                "none",
                "--results-dir",
                results.to_str().unwrap(),
            ]
            .map(Into::into),
        );
        run_host_env(&args, &env)
    };
    let opened = |out: &agentcompass_e2e::Outcome| -> Vec<String> {
        out.stderr
            .lines()
            .filter(|l| l.contains("plugin loaded"))
            .map(|l| {
                let at = l.find("plugin=").expect("plugin=") + "plugin=".len();
                l[at..].split('@').next().unwrap().to_string()
            })
            .collect()
    };

    let out = run("example_exact_match").expect_code(0);
    assert_eq!(opened(&out), ["example-pack"], "{out:?}");
    assert!(
        out.stderr_lines("warning:").is_empty(),
        "no plugin this run uses was refused: {out:?}"
    );
    // The provenance names every plugin that passed the checks, opened or not.
    let info: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(agentcompass_e2e::run_dir(&out).join("run_info.json")).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = info["provenance"]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["example-pack", "docker-provider", "bad-pack"]);

    // The run that needs the bad plugin: one refusal line, then the unknown benchmark (its
    // id is gone from the known ones), before anything is written.
    let out = run("bad_ctor").expect_code(2);
    let refused = out.stderr_lines("warning: refused plugin");
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(
        refused[0].contains("bad-pack.so") && refused[0].contains("panic"),
        "{out:?}"
    );
    let error = out.stderr_lines("error:");
    assert_eq!(error.len(), 1, "{out:?}");
    assert!(
        error[0].contains("unknown benchmark `bad_ctor`")
            && error[0].contains("example_exact_match")
            && !error[0].contains("known: bad_ctor"),
        "{out:?}"
    );
    assert!(
        !opened(&out).contains(&"docker-provider".to_string()),
        "{out:?}"
    );
}
