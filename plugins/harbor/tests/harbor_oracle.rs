//! Differential test: this crate's `task.toml` loader against Harbor 0.25.0's own parser.
//!
//! A few hundred deterministic task directories, covering every official field of Harbor's
//! `TaskConfig` (valid values, Harbor's coercions and invalid values), are written to a
//! temporary directory; `tests/harbor_oracle/oracle.py` loads all of them with Harbor in one
//! process and answers, per task, "refused" or "accepted, with these normalised values".
//! Each task is then loaded here and compared: acceptance, and the value of every field the
//! host maps. Every disagreement must be in [`EXCEPTIONS`] (each with its reason), and every
//! exception must still be a disagreement.
//!
//! The oracle's Python is `AGENTCOMPASS_HARBOR_PYTHON` (a venv with `harbor==0.25.0`), which
//! `./dev.sh test` creates and exports; without it the test fails.

// A test crate: its helpers fail the test on a broken oracle or temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, HostPattern, NetworkMode, NetworkPolicy, ResourceRequirements,
    TaskSpec,
};
use harbor_pack::fuzzing::{load_task, LoadOptions};
use serde_json::{json, Value};

#[path = "harbor_oracle/variants.rs"]
mod variants;

use variants::{all_variants, Variant};

/// Disagreements kept on purpose: a reason, and the variants it covers (by name). Multi-step
/// tasks are compared like the others (acceptance, mapped values and the step names).
const EXCEPTIONS: &[(&str, &[&str])] = &[
    (
        "seed 004: a task deadline is unspecified or a positive finite number of seconds \
         (Harbor also takes zero, negative, infinite and NaN timeouts)",
        &[
            "agent.timeout_sec=false",
            "agent.timeout_sec=0",
            "agent.timeout_sec=-5",
            "agent.timeout_sec=inf",
            "agent.timeout_sec=nan",
            "agent.timeout_sec=\"inf\"",
            "verifier.timeout_sec=false",
            "verifier.timeout_sec=0",
            "verifier.timeout_sec=-5",
            "verifier.timeout_sec=inf",
            "verifier.timeout_sec=nan",
            "verifier.timeout_sec=\"inf\"",
            "environment.build_timeout_sec=false",
            "environment.build_timeout_sec=0",
            "environment.build_timeout_sec=-5",
            "environment.build_timeout_sec=inf",
            "environment.build_timeout_sec=nan",
            "environment.build_timeout_sec=\"inf\"",
            "verifier.environment.build_timeout_sec=false",
            "verifier.environment.build_timeout_sec=0",
            "verifier.environment.build_timeout_sec=-5",
            "verifier.environment.build_timeout_sec=inf",
            "verifier.environment.build_timeout_sec=nan",
            "verifier.environment.build_timeout_sec=\"inf\"",
            "verifier.collect: timeout 0",
        ],
    ),
    (
        "values that can never run are refused at load: zero or negative cpus, memory or \
         storage (also from a legacy size string below 1M), negative gpus (README, \
         Differences from Harbor)",
        &[
            "environment.cpus=false",
            "environment.cpus=0",
            "environment.cpus=-1",
            "environment.memory_mb=false",
            "environment.memory_mb=0",
            "environment.memory_mb=-1",
            "environment.storage_mb=false",
            "environment.storage_mb=0",
            "environment.storage_mb=-1",
            "environment.gpus=-1",
            "verifier.environment.cpus=0",
            "verifier.environment.memory_mb=-1",
            "environment.memory=\"0G\"",
            "environment.memory=\"-1G\"",
            "environment.memory=\"0.5K\"",
            "environment.storage=\"0G\"",
            "environment.storage=\"-1G\"",
            "environment.storage=\"0.5K\"",
        ],
    ),
    (
        "seed 004: `workdir` is an absolute POSIX path (Harbor takes any string)",
        &[
            "environment.workdir=\"app\"",
            "environment.workdir=\"\"",
            "verifier.environment.workdir=\"grade\"",
        ],
    ),
    (
        "seed 004: an artifact source is an absolute sandbox path naming something below `/` \
         (Harbor takes relative sources, `/` and the empty string for the main service)",
        &[
            "artifacts=[\"app/relative\"]",
            "artifacts=[\"/\"]",
            "artifacts=[\"\"]",
        ],
    ),
    (
        "seed 004: sidecar services, command-level `user` overrides and unknown fields of \
         `[[verifier.collect]]` fail during loading (Harbor runs sidecars and ignores unknown \
         fields)",
        &[
            "verifier.collect: service db",
            "verifier.collect: user",
            "verifier.collect: unknown field",
            "artifacts[1]={ source = \"/app/out\", service = \"db\" }",
        ],
    ),
    (
        "Windows: the verifier runs tests/test.sh with bash, so a Windows verifier is refused, \
         and a Windows agent keeps the Linux artifact directory /logs/artifacts (Harbor uses \
         C:/logs/artifacts; no bundled environment runs Windows, and providers refuse \
         os = \"windows\" before allocation)",
        &[
            "windows with tests/test.bat",
            "windows agent and a linux verifier image",
        ],
    ),
    (
        "allowlist hostnames no DNS name can match (an all-numeric last label, such as text \
         that is not a valid IP address): Harbor keeps them as hostnames, the host's network \
         contract cannot hold them, so they are dropped with a load warning (an allowlist left \
         empty allows nothing, as Harbor's empty allowlist)",
        &[
            "environment.allowlist=[\"999.1.1.1\"]",
            "environment.allowlist=[\"01.2.3.4\"]",
            "environment.allowlist=[\"1.2.3\"]",
            "agent.allowlist=[\"01.2.3.4\"]",
            "verifier.allowlist=[\"01.2.3.4\"]",
            "verifier.environment.allowlist=[\"01.2.3.4\"]",
        ],
    ),
    (
        "an empty environment-variable name cannot be bound in any process (Harbor takes it)",
        &[
            "environment.env={ \"\" = \"x\" }",
            "verifier.env={ \"\" = \"x\" }",
            "verifier.environment.env={ \"\" = \"x\" }",
            "solution.env={ \"\" = \"x\" }",
        ],
    ),
];

/// The Python interpreter of the Harbor venv.
fn harbor_python() -> PathBuf {
    match std::env::var_os("AGENTCOMPASS_HARBOR_PYTHON") {
        Some(python) if !python.is_empty() => PathBuf::from(python),
        _ => panic!(
            "AGENTCOMPASS_HARBOR_PYTHON is not set: run this test through `./dev.sh test` (it installs Harbor 0.25.0 into a cached venv and exports it)"
        ),
    }
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/harbor_oracle/oracle.py")
}

/// Runs the oracle once over every task directory; its answers by variant index.
fn ask_harbor(dirs: &[PathBuf]) -> Vec<Value> {
    let mut child = Command::new(harbor_python())
        .arg(oracle_script())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the Harbor oracle");
    let mut stdin = child.stdin.take().expect("oracle stdin");
    let requests: Vec<String> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| json!({"id": i.to_string(), "dir": dir}).to_string())
        .collect();
    let writer = std::thread::spawn(move || {
        for line in requests {
            writeln!(stdin, "{line}").expect("write to the oracle");
        }
    });
    let stdout = child.stdout.take().expect("oracle stdout");
    let mut answers = vec![Value::Null; dirs.len()];
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read the oracle");
        let answer: Value = serde_json::from_str(&line).expect("oracle JSON");
        let id: usize = answer["id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("id");
        answers[id] = answer;
    }
    writer.join().expect("oracle writer");
    let status = child.wait().expect("oracle exit");
    assert!(status.success(), "the Harbor oracle failed: {status}");
    assert!(
        answers.iter().all(|a| !a.is_null()),
        "the oracle did not answer every task"
    );
    answers
}

/// A policy in canonical form: an allowlist without hosts allows nothing (no network);
/// hosts canonical, sorted and de-duplicated.
fn canonical_policy(mode: &str, hosts: &[String]) -> Value {
    let mut canonical: Vec<String> = hosts
        .iter()
        .map(|h| {
            HostPattern::parse(h)
                .map(|p| p.to_string())
                .unwrap_or_else(|_| format!("unparsable:{h}"))
        })
        .collect();
    canonical.sort();
    canonical.dedup();
    let mode = if mode == "allowlist" && canonical.is_empty() {
        "no-network"
    } else {
        mode
    };
    json!({"network_mode": mode, "allowed_hosts": canonical})
}

fn ours_policy(policy: &NetworkPolicy) -> Value {
    canonical_policy(policy.network_mode.as_str(), &policy.allowed_hosts)
}

fn harbor_policy(policy: &Value) -> Value {
    if policy.is_null() {
        return Value::Null;
    }
    let hosts: Vec<String> = policy["allowed_hosts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| h.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    canonical_policy(policy["network_mode"].as_str().unwrap_or_default(), &hosts)
}

/// An artifact output path as Harbor's `source_relative_path` gives it.
fn output_path(path: &str) -> String {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .collect::<Vec<_>>()
        .join("/")
}

fn resources_json(resources: &Option<ResourceRequirements>) -> Value {
    let r = resources.clone().unwrap_or_default();
    json!({
        "cpus": r.cpu,
        "memory_mb": r.memory_mb,
        "storage_mb": r.storage_mb,
        "gpus": r.gpu,
    })
}

/// Harbor's mapped values in the host's terms: an empty image is none (Harbor builds
/// `environment/` then), zero GPUs is no GPU requirement, the default schema version is
/// "1.4", `[metadata]` is merged under the explicit `source` / `[task]`.
fn expected_from_harbor(harbor: &Value) -> Value {
    let setup = |s: &Value| {
        json!({
            "image": s["image"].as_str().filter(|i| !i.is_empty()),
            "workdir": s["workdir"],
            "build_timeout_sec": s["build_timeout_sec"],
            "os": s["os"],
        })
    };
    let resources = |r: &Value| {
        let mut r = r.clone();
        if r["gpus"] == json!(0) {
            r["gpus"] = Value::Null;
        }
        r
    };
    let mut metadata = harbor["metadata"].clone();
    if !harbor["source"].is_null() {
        metadata["source"] = harbor["source"].clone();
    }
    if !harbor["package"].is_null() {
        metadata["task"] = harbor["package"].clone();
    }
    let network = &harbor["network"];
    json!({
        "instruction": harbor["instruction"],
        "schema_version": harbor["schema_version"],
        "metadata": metadata,
        "run_timeout_sec": harbor["run_timeout_sec"],
        "evaluation_timeout_sec": harbor["evaluation_timeout_sec"],
        "setup": setup(&harbor["setup"]),
        "resources": resources(&harbor["resources"]),
        "env": harbor["env"],
        "verifier_env": harbor["verifier_env"],
        "solution_env": harbor["solution_env"],
        "verifier_mode": harbor["verifier_mode"],
        "verifier_environment": match &harbor["verifier_environment"] {
            Value::Null => Value::Null,
            v => json!({
                "setup": setup(&v["setup"]),
                "resources": resources(&v["resources"]),
                "env": v["env"],
            }),
        },
        "network": {
            "agent_env_baseline": harbor_policy(&network["agent_env_baseline"]),
            "agent_phase": harbor_policy(&network["agent_phase"]),
            "verifier_env_baseline": harbor_policy(&network["verifier_env_baseline"]),
            "verifier_phase": harbor_policy(&network["verifier_phase"]),
        },
        "artifacts": harbor["artifacts"],
        "collect": harbor["collect"],
    })
}

/// Our task in the same terms.
fn ours_mapped(task: &TaskSpec) -> Value {
    let setup = |s: &agentcompass_plugin_api::contracts::EnvironmentSetup| {
        json!({
            "image": s.image,
            "workdir": s.workdir,
            "build_timeout_sec": s.build_timeout_seconds,
            "os": s.os,
        })
    };
    let separate = task.evaluation_environment_setup.is_some();
    let fresh = task.evaluation_environment_mode == Some(EvaluationEnvironmentMode::Fresh);
    let mut metadata = task.metadata.clone();
    let schema_version = metadata
        .get("harbor")
        .and_then(|h| h.get("schema_version"))
        .cloned()
        .filter(|v| !v.is_null())
        .unwrap_or_else(|| json!("1.4"));
    metadata.remove("harbor");
    metadata.remove("harbor_raw");
    let baseline = task
        .baseline_network_policy
        .clone()
        .unwrap_or_else(NetworkPolicy::public);
    let agent_phase = task
        .run_network_policy
        .clone()
        .unwrap_or_else(|| baseline.clone());
    let verifier_baseline = fresh.then(|| {
        task.evaluation_baseline_network_policy
            .clone()
            .unwrap_or_else(|| baseline.clone())
    });
    let verifier_phase = task.evaluation_network_policy.clone().unwrap_or_else(|| {
        verifier_baseline
            .clone()
            .unwrap_or_else(|| baseline.clone())
    });
    let artifacts: Vec<Value> = task
        .artifacts
        .iter()
        .flatten()
        .map(|a| {
            json!({
                "source": a.source,
                "output": output_path(&a.destination_or_default()),
                "exclude": a.exclude,
            })
        })
        .collect();
    let collect: Vec<Value> = task
        .artifact_collect
        .iter()
        .map(|c| json!({"command": c.command, "timeout_sec": c.timeout_seconds, "service": c.service}))
        .collect();
    json!({
        "instruction": task.question,
        "schema_version": schema_version,
        "metadata": metadata,
        "run_timeout_sec": task.run_timeout_seconds,
        "evaluation_timeout_sec": task.evaluation_timeout_seconds,
        "setup": setup(&task.environment_setup),
        "resources": resources_json(if separate { &task.run_resources } else { &task.resources }),
        "env": task.env_variables,
        "verifier_env": task.evaluation_env_variables,
        "solution_env": task.run_env_variables,
        "verifier_mode": if fresh { "separate" } else { "shared" },
        "verifier_environment": match &task.evaluation_environment_setup {
            None => Value::Null,
            Some(s) => json!({
                "setup": setup(s),
                "resources": resources_json(&task.evaluation_resources),
                "env": task.evaluation_environment_env_variables.clone().unwrap_or_default(),
            }),
        },
        "network": {
            "agent_env_baseline": ours_policy(&baseline),
            "agent_phase": ours_policy(&agent_phase),
            "verifier_env_baseline": verifier_baseline.as_ref().map(ours_policy),
            "verifier_phase": ours_policy(&verifier_phase),
        },
        "artifacts": artifacts,
        "collect": collect,
        "steps": (!task.steps.is_empty())
            .then(|| task.steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>()),
    })
}

/// JSON equality with numbers compared by value (`300` equals `300.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first differing field (dotted), with both values.
fn first_difference(path: &str, harbor: &Value, ours: &Value) -> Option<String> {
    match (harbor, ours) {
        (Value::Object(h), Value::Object(o)) if path.is_empty() || path == "network" => {
            for (key, value) in h {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if let Some(d) = first_difference(&child, value, o.get(key).unwrap_or(&Value::Null))
                {
                    return Some(d);
                }
            }
            None
        }
        _ if same(harbor, ours) => None,
        _ => Some(format!("{path}: harbor {harbor}, ours {ours}")),
    }
}

/// The outcome for one variant.
#[derive(Debug)]
enum Outcome {
    Agree,
    Differs(String),
}

fn compare(variant: &Variant, dir: &Path, harbor: &Value) -> Outcome {
    let ours = load_task(
        dir,
        LoadOptions {
            solution_env_for_agent: true,
        },
    );
    if let Err(e) = &ours {
        assert!(
            !e.message.contains('\n') && e.message.contains(&dir.display().to_string()),
            "{}: a refusal is one line naming the task: {}",
            variant.name,
            e.message
        );
    }
    let accepted = harbor["accepted"].as_bool().unwrap_or(false);
    match (accepted, ours) {
        (false, Err(_)) => Outcome::Agree,
        (false, Ok(_)) => Outcome::Differs(format!(
            "harbor refuses ({}), ours accepts",
            harbor["error"].as_str().unwrap_or_default()
        )),
        (true, Err(e)) => Outcome::Differs(format!("harbor accepts, ours refuses: {}", e.message)),
        (true, Ok(task)) => {
            let expected = expected_from_harbor(&harbor["mapped"]);
            match first_difference("", &expected, &ours_mapped(&task)) {
                None => Outcome::Agree,
                Some(d) => Outcome::Differs(format!("mapped values differ: {d}")),
            }
        }
    }
}

/// Writes one variant's task directory.
fn write_variant(root: &Path, index: usize, variant: &Variant) -> PathBuf {
    let dir = root.join(format!("v{index:04}"));
    std::fs::create_dir_all(dir.join("tests")).expect("tests dir");
    std::fs::create_dir_all(dir.join("solution")).expect("solution dir");
    std::fs::write(dir.join("task.toml"), &variant.toml).expect("task.toml");
    std::fs::write(dir.join("instruction.md"), &variant.instruction).expect("instruction");
    std::fs::write(
        dir.join("tests/test.sh"),
        "echo 1 > /logs/verifier/reward.txt\n",
    )
    .expect("test.sh");
    std::fs::write(dir.join("solution/solve.sh"), "true\n").expect("solve.sh");
    for (path, content) in &variant.files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("variant dir");
        }
        std::fs::write(file, content).expect("variant file");
    }
    std::fs::canonicalize(dir).expect("canonical dir")
}

#[test]
fn the_loader_agrees_with_harbor_0_25_0() {
    let variants = all_variants();
    let mut names = std::collections::BTreeSet::new();
    for v in &variants {
        assert!(names.insert(v.name.clone()), "duplicate variant {}", v.name);
    }
    let tmp = tempfile::TempDir::new().expect("temp dir");
    let dirs: Vec<PathBuf> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| write_variant(tmp.path(), i, v))
        .collect();
    let answers = ask_harbor(&dirs);

    let exceptions: BTreeMap<&str, &str> = EXCEPTIONS
        .iter()
        .flat_map(|(reason, names)| names.iter().map(move |n| (*n, *reason)))
        .collect();
    let (mut agree, mut excepted) = (0, 0);
    let mut accepted_by_harbor = 0;
    let mut failures = Vec::new();
    for ((variant, dir), harbor) in variants.iter().zip(&dirs).zip(&answers) {
        if harbor["accepted"] == json!(true) {
            accepted_by_harbor += 1;
        }
        match (
            compare(variant, dir, harbor),
            exceptions.get(variant.name.as_str()),
        ) {
            (Outcome::Agree, None) => agree += 1,
            (Outcome::Differs(_), Some(_)) => excepted += 1,
            (Outcome::Agree, Some(reason)) => failures.push(format!(
                "{}: listed as an exception ({reason}) but agrees now: remove it",
                variant.name
            )),
            (Outcome::Differs(d), None) => failures.push(format!(
                "{}: {d}\n    task.toml: {:?}",
                variant.name, variant.toml
            )),
        }
    }
    for name in exceptions.keys() {
        assert!(names.contains(*name), "exception {name} names no variant");
    }
    let total = variants.len();
    let summary = format!(
        "harbor differential (Harbor 0.25.0): {total} variants ({accepted_by_harbor} accepted by Harbor), \
         {agree} agree, {excepted} documented exceptions (listed under {} reasons)\n",
        EXCEPTIONS.len()
    );
    // Written to stderr directly, so the figures show even when the test output is captured.
    let _ = std::io::stderr().write_all(summary.as_bytes());
    assert!(
        failures.is_empty(),
        "{} of {total} variants disagree with Harbor:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(agree + excepted, total);
}

#[test]
fn network_modes_are_spelled_as_in_harbor() {
    // Harbor's three modes are ours, spelled alike; `denylist` is ours only (Harbor refuses
    // it, and so does our task.toml reader: its `environment::MODES` are Harbor's three).
    let modes: Vec<&str> = NetworkMode::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(modes, ["public", "no-network", "allowlist", "denylist"]);
}
