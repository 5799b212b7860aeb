//! Harbor 0.25's `harbor run` flags with no equivalent here, each with what to use instead:
//! refused by name before the words are parsed, never ignored.

/// A Harbor flag this host does not act on.
struct Refused {
    /// Its spellings.
    names: &'static [&'static str],
    /// What to use instead (or why there is nothing).
    instead: &'static str,
}

const REFUSED: &[Refused] = &[
    Refused { names: &["--diff"], instead: "compare two runs with `agentcompass-host compare RUN_A RUN_B`" },
    Refused { names: &["--print-config"], instead: "use --dry-run (it prints the native command and the resolved request)" },
    Refused { names: &["--n-concurrent-agents"], instead: "use -n (tasks at once) or `model.params.max_connections` (model calls at once)" },
    Refused { names: &["--sm", "--skip-model-parsing-and-provider-mapping"], instead: "give --base-url: the model name then reaches the endpoint as written" },
    Refused { names: &["--allow-agent-host", "--allow-environment-host", "--allow-verifier-host"], instead: "declare the allowlist in the task's `[environment]` network policy, or `--env-params '{\"run_network_policy\": ...}'`" },
    Refused { names: &["--resume-trajectory", "--load-trajectory"], instead: "nothing here resumes an agent's native session" },
    Refused { names: &["--agent-include-logs", "--agent-exclude-logs"], instead: "every agent log is kept in the run directory" },
    Refused { names: &["--user-agent", "--user-model", "--uk", "--user-persona-path", "--user-prompt-template-path", "--bridge", "--bridge-prompt-path", "--bk"], instead: "simulated-user trials are not supported" },
    Refused { names: &["--force-build"], instead: "images are rebuilt when their build context changes; remove the image to force a build" },
    Refused { names: &["--stream", "--no-stream"], instead: "watch a run live with `agentcompass-host view`" },
    Refused { names: &["--mounts", "--mounts-json"], instead: "give the agent files with --skill or task files; the environment mounts nothing else" },
    Refused { names: &["--extra-docker-compose"], instead: "put the services in the task's environment/docker-compose.yaml" },
    Refused { names: &["--env-file"], instead: "export the variables in the shell first (`set -a; . FILE; set +a`)" },
    Refused { names: &["--ve", "--verifier-env", "--verifier", "--verifier-kwarg"], instead: "declare the verifier's variables in the task's `[verifier.env]`" },
    Refused { names: &["--disable-verification", "--enable-verification"], instead: "every task is verified; nothing here skips its tests" },
    Refused { names: &["--install-only"], instead: "use `agentcompass-host agents install HARNESS`" },
    Refused { names: &["-t", "--task"], instead: "Hub packages are not fetched here: use -p with the task's directory, or -d with a registry dataset" },
    Refused { names: &["--repo"], instead: "give the registry file with --registry-path or --registry-url" },
    Refused { names: &["--extra-instruction"], instead: "put the text in a file and use --extra-instruction-path FILE" },
    Refused { names: &["--artifact"], instead: "declare the path in the task's `artifacts`, or `--execution-params '{\"artifacts\": [...]}'` on `agentcompass-host run`" },
    Refused { names: &["--plugin", "--pk", "--plugin-kwarg"], instead: "job plugins are Python; write a host plugin (`agentcompass-host plugin new`)" },
    Refused { names: &["--export-traces", "--export-sharegpt", "--export-episodes", "--export-push", "--export-repo", "--export-instruction-metadata", "--export-verifier-metadata"], instead: "export after the run with `agentcompass-host export traces RUN_DIR`" },
    Refused { names: &["--upload", "--public", "--private", "--share", "--share-user", "--org", "--launch", "--credential-mode", "--one-off-secret", "--stored-secret", "--no-secrets", "--registry-secret", "--use-static-ip", "--skip-credential-checks"], instead: "Harbor Hub is not used here; share the run directory, or `agentcompass-host export harbor RUN_DIR` for Harbor's tools" },
    Refused { names: &["--override-tpu"], instead: "no environment here provides TPUs" },
];

/// The first word of `args` that is a refused flag (`--flag` or `--flag=value`), as one line
/// naming it and what to use instead.
pub fn first_refused(args: &[String]) -> Option<String> {
    for word in args {
        if word == "--" {
            break;
        }
        let name = word.split_once('=').map_or(word.as_str(), |(name, _)| name);
        if let Some(refused) = REFUSED.iter().find(|r| r.names.contains(&name)) {
            return Some(format!(
                "harbor run: {name} has no equivalent here: {}",
                refused.instead
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_flag_is_named_with_its_alternative() {
        let args = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(
            first_refused(&args(&["-a", "oracle", "--upload"])).unwrap(),
            "harbor run: --upload has no equivalent here: Harbor Hub is not used here; share \
             the run directory, or `agentcompass-host export harbor RUN_DIR` for Harbor's tools"
        );
        assert!(first_refused(&args(&["--export-episodes=last"]))
            .unwrap()
            .contains("--export-episodes has no equivalent"));
        assert_eq!(first_refused(&args(&["-a", "oracle", "-p", "x"])), None);
        assert_eq!(first_refused(&args(&["--", "--upload"])), None);
    }
}
