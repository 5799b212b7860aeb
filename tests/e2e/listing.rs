//! Listing, parameter docs, registry order and packaging.

use std::fs;

use agentcompass_e2e::{field_strs, plugin_dir_args, run_host, target_dir, PluginDirs};

#[test]
fn example_pack_is_listed_with_its_source() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let mut args = plugin_dir_args(&[&good]);
    args.extend(["list".into(), "benchmark".into()]);
    let out = run_host(&args).expect_code(0);
    assert_eq!(out.stderr, "");
    insta::assert_snapshot!("list_benchmark", dirs.redact(&out.stdout));

    let mut args = plugin_dir_args(&[&good]);
    args.extend(["list".into(), "harness".into(), "--json".into()]);
    let out = run_host(&args);
    let items: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let source = format!(
        "example-pack@0.1.0 ({})",
        fs::canonicalize(good.join("example-pack.so"))
            .unwrap()
            .display()
    );
    assert_eq!(items[0]["id"], "example_calculator");
    assert_eq!(items[0]["source"], source.as_str());
    assert_eq!(items.as_array().map(Vec::len), Some(1));
}

#[test]
fn config_docs_shows_declared_params() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    for (kind, id) in [
        ("benchmark", "example_exact_match"),
        ("harness", "example_calculator"),
        // Providers also list what they enforce: network modes, entry types (ports
        // included), per-phase policies, host endpoints.
        ("env", "sandbox"),
        ("env", "host_process"),
    ] {
        let mut args = plugin_dir_args(&[&good]);
        args.extend(["config".into(), "docs".into(), kind.into(), id.into()]);
        let out = run_host(&args).expect_code(0);
        insta::assert_snapshot!(format!("config_docs_{id}"), dirs.redact(&out.stdout));
    }
    let mut args = plugin_dir_args(&[&good]);
    args.extend([
        "config".into(),
        "docs".into(),
        "harness".into(),
        "nope".into(),
    ]);
    let out = run_host(&args);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown harness `nope` (known: example_calculator)\n"
    );
}

#[test]
fn registry_order_is_directory_order_then_file_name_order() {
    let dirs = PluginDirs::new();
    let first = dirs.package("first", "example-recipe");
    dirs.package("second", "example-pack");
    let second = dirs.package("second", "bad-pack");
    let mut args = plugin_dir_args(&[&first, &second]);
    args.extend(["list".into(), "plugin".into(), "--json".into()]);
    let out = run_host(&args).expect_code(0);
    let plugins: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let names: Vec<&str> = field_strs(&plugins, "name");
    assert_eq!(names, ["example-recipe", "bad-pack", "example-pack"]);
}

#[test]
fn recipe_dirs_hold_recipes_only() {
    let dirs = PluginDirs::new();
    let recipes = dirs.package("recipes", "example-recipe");
    dirs.package("recipes", "example-pack");
    let out = run_host([
        "--no-bundled-plugins".as_ref(),
        "--recipe-dir".as_ref(),
        recipes.as_os_str(),
        "list".as_ref(),
        "recipe".as_ref(),
    ])
    .expect_code(0);
    assert!(out.stdout.contains("example_recipe"), "{out:?}");
    let refused = out.stderr_lines("warning: refused plugin");
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(refused[0].contains("recipe directories hold recipe plugins only"));
}

#[test]
fn bundled_plugins_load_from_the_install_dir() {
    // `<install dir>/plugins` is where the README's setup packages the first-party plugins.
    let bundled = target_dir().join("plugins");
    run_host([
        "plugin".as_ref(),
        "package".as_ref(),
        agentcompass_e2e::built_library("example-pack").as_os_str(),
        "--out".as_ref(),
        bundled.as_os_str(),
    ])
    .expect_code(0);
    let out = run_host(["list", "benchmark"]).expect_code(0);
    assert!(
        out.stdout
            .contains("example_exact_match  example-pack@0.1.0"),
        "{out:?}"
    );
    let out = run_host(["list", "plugin"]).expect_code(0);
    assert!(
        out.stdout
            .contains(&bundled.join("example-pack.so").display().to_string()),
        "{out:?}"
    );
    let out = run_host(["--no-bundled-plugins", "list", "benchmark"]);
    assert!(!out.stdout.contains("example_exact_match"), "{out:?}");
}

#[test]
fn plugin_package_writes_a_manifest_that_verifies() {
    let dirs = PluginDirs::new();
    let out_dir = dirs.package("pkg", "example-pack");
    let manifest = fs::read_to_string(out_dir.join("example-pack.plugin.toml")).unwrap();
    let sha = agentcompass_e2e::sha256_hex(&out_dir.join("example-pack.so"));
    assert!(
        manifest.contains(&format!("sha256 = \"{sha}\"")),
        "{manifest}"
    );
    assert!(manifest.contains("host_api = \"^0.1.2\""), "{manifest}");
    assert!(
        manifest.contains("id = \"example_calculator\""),
        "{manifest}"
    );
    let out = run_host(["plugin".as_ref(), "verify".as_ref(), out_dir.as_os_str()]).expect_code(0);
    assert_eq!(
        dirs.redact(&out.stdout),
        "ok: example-pack@0.1.0 ([TMP]/pkg/example-pack.so)\n"
    );
}

#[test]
fn builtins_come_first() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let mut args = plugin_dir_args(&[&good]);
    args.extend(["list".into(), "env".into(), "--json".into()]);
    let out = run_host(&args).expect_code(0);
    let items: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(items[0]["id"], "host_process");
    assert_eq!(items[0]["source"], "built-in");
}

#[test]
fn a_reader_that_closes_stdout_early_ends_the_host_quietly() {
    let dirs = PluginDirs::new();
    let good = dirs.package("good", "example-pack");
    let mut command = std::process::Command::new(agentcompass_e2e::host_bin());
    command
        .args(plugin_dir_args(&[&good]))
        .args(["list", "benchmark", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("spawn");
    // Like `| head -c0`: the reader is gone before the host writes.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_readme_networks_table_is_what_the_providers_declare() {
    // Each row of README's "Networks" table, rebuilt from `config docs env ID` (the
    // providers' declared capabilities; `docker` as its packaged plugin).
    let dirs = PluginDirs::new();
    let docker = dirs.package("docker", "docker-provider");
    let mut rows = String::from(
        "| provider | network modes | entry types | per-phase policies |\n|---|---|---|---|\n",
    );
    for id in ["host_process", "sandbox", "docker"] {
        let mut args = plugin_dir_args(&[&docker]);
        args.extend(["config".into(), "docs".into(), "env".into(), id.into()]);
        let out = run_host(&args).expect_code(0);
        let field = |name: &str| {
            out.stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{name}:")))
                .unwrap_or_else(|| panic!("no `{name}` line: {}", out.stdout))
                .trim()
                .to_string()
        };
        let entry_types = field("entry types");
        let entry_types = if entry_types.starts_with("none") {
            "none".to_string()
        } else {
            entry_types
        };
        let per_phase = field("per-phase policies");
        let per_phase = per_phase.split_whitespace().next().unwrap_or_default();
        rows.push_str(&format!(
            "| `{id}` | {} | {entry_types} | {per_phase} |\n",
            field("network modes")
        ));
    }
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/networks.md"),
    )
    .unwrap();
    assert!(
        readme.contains(&rows),
        "docs/src/networks.md's table must be what the providers declare:\n{rows}"
    );
}
