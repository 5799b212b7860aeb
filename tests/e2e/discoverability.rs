//! What a new user finds without the README (issue 36 §3–4): completions and a man page from
//! the command-line definitions, help that ends with examples and the exit codes, bare `list`
//! and `config docs` naming what they take, tables that fit 80 columns, `config show` saying
//! when no configuration file was found, and an unknown configuration section refused with
//! the nearest valid one.

use std::process::Command;

use agentcompass_e2e::Workspace;

#[test]
fn completions_for_every_shell_name_the_commands() {
    let ws = Workspace::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = ws.run_ok(&["completions", shell], &[]);
        assert!(out.stdout.contains("agentcompass-host"), "{shell}");
        assert!(out.stdout.contains("launch"), "{shell}: {}", out.stdout);
        assert_eq!(out.stderr, "", "{shell}");
    }
    // The bash script is valid bash.
    let out = ws.run_ok(&["completions", "bash"], &[]);
    let script = ws.write("completions.bash", &out.stdout);
    let status = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .expect("bash");
    assert!(status.success());
    let out = ws.run(&["completions", "tcsh"], &[]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("error: invalid value 'tcsh'"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_man_page_lists_commands_options_and_exit_codes() {
    let ws = Workspace::new();
    let page = ws.run_ok(&["man"], &[]).stdout;
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "{page}");
    assert!(page.contains(".TH agentcompass-host 1"), "{page}");
    for section in [
        "NAME",
        "SYNOPSIS",
        "OPTIONS",
        "SUBCOMMANDS",
        "\"EXIT STATUS\"",
        "VERSION",
    ] {
        assert!(page.contains(&format!(".SH {section}")), "{section}");
    }
    for code in ["0", "1", "2", "3", "130", "141"] {
        assert!(page.contains(&format!(".TP\n\\fB{code}\\fR\n")), "{code}");
    }
    assert!(page.contains("agentcompass\\-host\\-run(1)"), "{page}");
    // A subcommand's own page, with its flags.
    let run = ws.run_ok(&["man", "run"], &[]).stdout;
    assert!(run.contains(".TH agentcompass-host-run 1"), "{run}");
    assert!(run.contains("\\-\\-task\\-concurrency"), "{run}");
    assert!(run.contains(".SH \"EXIT STATUS\""));
    let docs = ws.run_ok(&["man", "config", "docs"], &[]).stdout;
    assert!(
        docs.contains(".TH agentcompass-host-config-docs 1"),
        "{docs}"
    );
    let out = ws.run_expect(2, &["man", "config", "nope"], &[]);
    insta::assert_snapshot!("man_unknown_command", out.stderr);
    assert_eq!(out.stdout, "");
}

#[test]
fn run_and_launch_help_end_with_examples_and_exit_codes() {
    let ws = Workspace::new();
    for command in ["run", "launch"] {
        let help = ws.run_ok(&[command, "--help"], &[]).stdout;
        let examples = help.find("\nExamples:\n").expect("examples");
        let codes = help.find("\nExit codes:\n").expect("exit codes");
        assert!(examples < codes, "{help}");
        assert_eq!(help[examples..].matches("\n  # ").count(), 2, "{help}");
        assert!(
            help.trim_end()
                .ends_with("141  standard output was closed by its reader"),
            "{help}"
        );
        assert!(help.contains("[default: 32"), "{command}: {help}");
    }
    let help = ws.run_ok(&["run", "--help"], &[]).stdout;
    assert!(help.contains("[default: host_process]"), "{help}");
    insta::assert_snapshot!(
        "run_help_epilogue",
        &help[help.find("\nExamples:\n").expect("examples")..]
    );
}

#[test]
fn bare_list_and_config_docs_name_what_they_take() {
    let ws = Workspace::new();
    let out = ws.run_ok(&["list"], &[]);
    insta::assert_snapshot!("bare_list", out.stdout);
    let out = ws.run_ok(&["config", "docs"], &[]);
    insta::assert_snapshot!("bare_config_docs", out.stdout);
    let out = ws.run_ok(&["config", "docs", "harness"], &[]);
    insta::assert_snapshot!("config_docs_harness_ids", out.stdout);
}

#[test]
fn tables_fit_an_80_column_terminal() {
    let ws = Workspace::new();
    for args in [
        &["list", "benchmark"][..],
        &["list", "harness"],
        &["list", "env"],
        &["list", "analyzer"],
        &["config", "docs", "env", "sandbox"],
        &["config", "docs", "benchmark", "example_exact_match"],
    ] {
        let out = ws.run_ok(args, &[]);
        for line in out.stdout.lines() {
            assert!(
                line.chars().count() <= 80,
                "{args:?}: {} columns: {line}",
                line.chars().count()
            );
        }
    }
    let out = ws.run_ok(&["list", "benchmark"], &[]);
    insta::assert_snapshot!("list_benchmark_80_columns", out.stdout);
    // A wider terminal gets longer lines.
    let wide = ws.run_ok(&["list", "benchmark"], &[("COLUMNS", "200")]);
    assert!(wide.stdout.lines().count() < out.stdout.lines().count());
}

#[test]
fn config_show_says_when_no_configuration_file_was_found() {
    let ws = Workspace::new();
    let out = ws.run_ok(&["config", "show"], &[]);
    assert_eq!(
        ws.redact(&out.stderr),
        "note: no configuration file: none of config.toml, config.yaml, config.yml, \
         config.json in [TMP]/home/.config/agentcompass and the working directory or its \
         parents, and no --config FILE; showing only what flags and defaults give\n"
    );
    ws.write(
        "project/work/config.toml",
        "[runtime]\nresults_dir = \"r\"\n",
    );
    let out = ws.run_ok(&["config", "show"], &[]);
    assert_eq!(out.stderr, "");
    assert!(out.stdout.contains("results_dir = \"r\""), "{}", out.stdout);
}

#[test]
fn an_unknown_configuration_section_names_the_nearest_valid_one() {
    let ws = Workspace::new();
    let config = ws.write("project/work/config.toml", "[benchmark.qa]\nsize = 2\n");
    let out = ws.run_expect(
        2,
        &["run", "example_exact_match", "example_calculator", "m1"],
        &[],
    );
    assert_eq!(out.stdout, "");
    insta::assert_snapshot!("unknown_top_level_key", ws.redact(&out.stderr));
    assert!(!ws.cwd.join("results").exists());
    std::fs::write(&config, "[runtime]\nresult_dir = \"r\"\n").expect("write");
    let out = ws.run_expect(2, &["config", "show"], &[]);
    insta::assert_snapshot!("unknown_runtime_key", ws.redact(&out.stderr));
}

#[test]
fn the_readmes_orchestration_example_runs_as_written() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/configuration.md"),
    )
    .expect("docs/src/configuration.md");
    let after = readme
        .split("An orchestration file (`launch plan.toml`)")
        .nth(1)
        .expect("the orchestration section");
    let block = after
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its TOML block");
    let ws = Workspace::new();
    ws.write("project/work/plan.toml", block);
    // No OPENAI_* or ANTHROPIC_* variables: its harness needs no model.
    let out = ws.run_ok(&["launch", "plan.toml", "--progress", "none"], &[]);
    assert!(out.stderr.contains("small: completed"), "{}", out.stderr);
    assert!(out.stderr.contains("large: completed"), "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
}
