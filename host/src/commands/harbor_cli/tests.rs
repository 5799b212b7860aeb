//! The translation of Harbor command lines, word for word (the e2e table in
//! `tests/e2e/harbor_cli.rs` checks the requests they resolve to).

use super::*;

/// The native words of `harbor run WORDS` (parsed as the command parses them).
fn native(line: &str) -> Result<String, String> {
    let mut args = vec!["run".to_string()];
    args.extend(shlex::split(line).unwrap());
    let harbor = parse_run(&args).map_err(|e| e.to_string())?;
    translate(&harbor).map(|n| shell_words(&n.words))
}

#[test]
fn harbor_flags_become_the_native_flags() {
    assert_eq!(
        native("-p tasks -e docker -a claude-code -m anthropic/claude-sonnet-4-5 -n 8 -k 3")
            .unwrap(),
        "harbor claude_code claude-sonnet-4-5 --benchmark-params '{\"path\":\"tasks\"}' --env \
         docker --model-base-url https://api.anthropic.com --model-api-key '${ANTHROPIC_API_KEY}' \
         --model-api-protocol anthropic -k 3 --task-concurrency 8"
    );
    assert_eq!(
        native("-p tasks --timeout-multiplier 2 --verifier-timeout-multiplier 3 -e sandbox")
            .unwrap(),
        "harbor oracle reference --benchmark-params '{\"path\":\"tasks\"}' --env sandbox \
         --task-concurrency 4 --timeout-multiplier 2 --verifier-timeout-multiplier 3 \
         --agent-setup-timeout-multiplier 2 --environment-build-timeout-multiplier 2"
    );
}

#[test]
fn every_translation_parses_as_a_native_run() {
    for line in [
        "-p tasks -a codex -m openai/gpt-5 -i 'a*' -x b -l 2 --override-cpus 2 --cpus limit \
         --effort high",
        "-d terminal-bench@2.0 --registry-path r.json -a terminus-2 -m openai/gpt-4.1 \
         --ak max_turns=5 --ae K=V --skill s --mcp-config m.json -o out \
         --job-name j --no-delete -q --debug --ek cpus=2",
    ] {
        let words = shlex::split(&native(line).unwrap()).unwrap();
        native_run(&words).unwrap();
    }
}

#[test]
fn a_literal_agent_variable_is_never_printed() {
    let words: Vec<String> = [
        "harbor",
        "terminus",
        "m",
        "--agent-env",
        "KEY=sk-secret",
        "--agent-env",
        "REF=${HOST_KEY}",
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    let line = command_line(&GlobalArgs::default(), &words);
    assert!(!line.contains("sk-secret"), "{line}");
    assert!(
        line.contains("KEY=<hidden>") && line.contains("'REF=${HOST_KEY}'"),
        "{line}"
    );
}
