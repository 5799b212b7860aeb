//! The `TaskStep`s of a multi-step task, from its `[[steps]]` declarations (module `steps`)
//! and its `steps/<name>/` directories, as Harbor 0.25's `MultiStepTrial` runs them: each
//! step's instruction, timeouts, users, `min_reward`, health check and verifier bindings; its
//! artifacts (appended to the task's) and collect commands; its agent and verifier network
//! policies; and where its verifier runs — the task environment, or a fresh one (explicit step
//! mode > a step verifier environment > the task's choice), of the step's own image when it
//! has one (`image::step_verifier`). What a step declares that the host does not act on makes
//! the task its own `unsupported` issue.

use std::path::Path;

use agentcompass_plugin_api::contracts::{
    ArtifactSpec, EvaluationEnvironmentMode, TaskSpec, TaskStep,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;

use crate::artifacts::appended;
use crate::fields::Warnings;
use crate::image;
use crate::instruction::read_instruction;
use crate::names::{ID, INSTRUCTION_MD, STEPS_DIR, TESTS_DIR, TEST_SCRIPT};
use crate::steps::StepDecl;

/// The task-level facts a step's mapping needs.
pub(crate) struct TaskSide<'a> {
    /// The task directory.
    pub(crate) dir: &'a Path,
    /// The task, its environments resolved (`image::apply`).
    pub(crate) task: &'a TaskSpec,
    /// The task's artifacts (the convention directory included).
    pub(crate) artifacts: &'a [ArtifactSpec],
    /// The task's verifier runs in a separate environment.
    pub(crate) separate: bool,
    /// That separate verifier's tests are bundled in its image.
    pub(crate) bundled: bool,
}

/// The mapped steps, and why the task cannot run here (its `unsupported` issue), if a step
/// asks what the host does not do.
pub(crate) struct Mapped {
    pub(crate) steps: Vec<TaskStep>,
    pub(crate) unsupported: Option<String>,
}

/// The steps of a multi-step task, as Harbor checks them: each step's directory with its
/// `instruction.md`, and a test script of its own (`steps/<name>/tests/test.sh`) or the
/// task's (`tests/test.sh`).
pub(crate) fn task_steps(
    side: &TaskSide,
    decls: &[StepDecl],
    warnings: &mut Warnings,
) -> Result<Mapped> {
    let shared_test = side.dir.join(TESTS_DIR).join(TEST_SCRIPT).is_file();
    let mut mapped = Mapped {
        steps: Vec::with_capacity(decls.len()),
        unsupported: None,
    };
    for (i, decl) in decls.iter().enumerate() {
        let step_dir = side.dir.join(STEPS_DIR).join(&decl.name);
        if !step_dir.is_dir() {
            return Err(Error::invalid_input(format!(
                "{ID}: {}: expected the directory of step `{}`, found nothing",
                step_dir.display(),
                decl.name
            )));
        }
        let question = read_instruction(&step_dir.join(INSTRUCTION_MD), "step")?;
        if !shared_test && !step_dir.join(TESTS_DIR).join(TEST_SCRIPT).is_file() {
            return Err(Error::invalid_input(format!(
                "{ID}: {}: expected the verifier script of step `{}` \
                 ({STEPS_DIR}/{}/{TESTS_DIR}/{TEST_SCRIPT} or {TESTS_DIR}/{TEST_SCRIPT}), found nothing",
                side.dir.display(),
                decl.name,
                decl.name
            )));
        }
        let mut step = TaskStep::new(decl.name.clone(), question);
        declared(&mut step, decl, side, warnings);
        if let Err(reason) = verifier(&mut step, decl, i, side, &step_dir) {
            mapped.unsupported.get_or_insert(reason);
        }
        mapped.steps.push(step);
    }
    Ok(mapped)
}

/// What the step declares that maps as it is: timeouts, thresholds, bindings, health check,
/// artifacts, collect commands and phase policies.
fn declared(step: &mut TaskStep, decl: &StepDecl, side: &TaskSide, warnings: &mut Warnings) {
    step.run_timeout_seconds = decl.agent_timeout_seconds;
    step.evaluation_timeout_seconds = decl.verifier_timeout_seconds;
    if let Some(thresholds) = &decl.min_reward {
        step.metadata.insert("min_reward".into(), json!(thresholds));
    }
    if !decl.verifier_env.is_empty() {
        step.metadata
            .insert("verifier_env".into(), json!(decl.verifier_env));
    }
    if let Some(healthcheck) = &decl.healthcheck {
        step.metadata
            .insert("healthcheck".into(), json!(healthcheck));
    }
    step.artifacts = appended(side.artifacts, &decl.artifacts, warnings);
    step.artifact_collect = decl.collect.clone();
    step.run_user = decl.agent_user.clone();
    step.evaluation_user = decl.verifier_user.clone();
    step.run_network_policy = decl.agent_policy.clone();
    step.evaluation_network_policy = decl.verifier_policy.clone();
}

/// Where the step's verifier runs, and on which image; `Err`: what the host cannot do of it.
fn verifier(
    step: &mut TaskStep,
    decl: &StepDecl,
    index: usize,
    side: &TaskSide,
    step_dir: &Path,
) -> std::result::Result<(), String> {
    let separate = match (decl.verifier_mode, &decl.verifier_environment) {
        (Some(mode), _) => mode == EvaluationEnvironmentMode::Fresh,
        (None, Some(_)) => true,
        (None, None) => side.separate,
    };
    if separate != side.separate {
        step.evaluation_environment_mode = Some(if separate {
            EvaluationEnvironmentMode::Fresh
        } else {
            EvaluationEnvironmentMode::Reuse
        });
    }
    if !separate {
        return Ok(());
    }
    let field = |name: &str| format!("field `steps[{index}].verifier.environment.{name}`");
    if let Some(environment) = &decl.verifier_environment {
        let declared = [
            (
                "cpus/memory_mb/storage_mb/gpus",
                environment.resources.is_some(),
            ),
            ("network_mode", environment.baseline.is_some()),
            ("env", environment.env.is_some()),
            ("healthcheck", environment.healthcheck.is_some()),
        ];
        if let Some((name, _)) = declared.iter().find(|(_, set)| *set) {
            return Err(format!(
                "{}: a step's own verifier environment runs with the task's verifier \
                 resources, network and bindings here; declare them on [verifier.environment]",
                field(name)
            ));
        }
    }
    if let Some(reason) = image::compose(step_dir, TESTS_DIR) {
        return Err(format!("{STEPS_DIR}/{}/{reason}", decl.name));
    }
    let setup = decl.verifier_environment.as_ref().map(|e| &e.setup);
    let (own, bundled) = match image::step_verifier(step_dir, setup, side.task, side.bundled) {
        Some((setup, bundled)) => (Some(setup), bundled),
        None => (None, side.bundled),
    };
    step.evaluation_environment_setup = own;
    step.metadata
        .insert("verifier_bundled".into(), bundled.into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use agentcompass_plugin_api::contracts::{EvaluationEnvironmentMode, NetworkMode};
    use tempfile::TempDir;

    use crate::tests::{load, write_step, write_task};

    const FRESH: Option<EvaluationEnvironmentMode> = Some(EvaluationEnvironmentMode::Fresh);
    const REUSE: Option<EvaluationEnvironmentMode> = Some(EvaluationEnvironmentMode::Reuse);

    #[test]
    fn each_step_verifier_runs_where_harbor_runs_it() {
        let tmp = TempDir::new().unwrap();
        // A task-level separate verifier serves every step; a step may choose otherwise, and a
        // step verifier environment of its own implies a separate one.
        let cases = [
            (
                "task-separate",
                "[verifier]\nenvironment_mode = \"separate\"\n",
                "",
                None,
            ),
            (
                "step-separate",
                "",
                "verifier = { environment_mode = \"separate\" }\n",
                FRESH,
            ),
            (
                "step-shared",
                "[verifier]\nenvironment_mode = \"separate\"\n",
                "verifier = { environment_mode = \"shared\" }\n",
                REUSE,
            ),
            (
                "step-environment",
                "",
                "verifier = { environment = {} }\n",
                FRESH,
            ),
        ];
        for (name, task_level, step_level, mode) in cases {
            let toml = format!("[[steps]]\nname = \"one\"\n{step_level}{task_level}");
            let dir = write_task(tmp.path(), name, &toml);
            write_step(&dir, "one", &[]);
            let task = load(&dir).unwrap();
            assert!(
                task.metadata["harbor"].get("unsupported").is_none(),
                "{name}: {}",
                task.metadata["harbor"]
            );
            assert_eq!(task.steps[0].evaluation_environment_mode, mode, "{name}");
        }
    }

    #[test]
    fn a_step_tests_dockerfile_is_its_verifier_image_with_bundled_tests() {
        // What `harbor init --steps` writes: a task-level separate verifier, each step's
        // tests/ with a Dockerfile that bundles them.
        let tmp = TempDir::new().unwrap();
        let toml = "[verifier]\nenvironment_mode = \"separate\"\n\
                    [[steps]]\nname = \"step-1\"\n[[steps]]\nname = \"step-2\"\n";
        let dir = write_task(tmp.path(), "init-steps", toml);
        write_step(
            &dir,
            "step-1",
            &[("tests/Dockerfile", "FROM python:3.12-slim\n")],
        );
        write_step(&dir, "step-2", &[]);
        let task = load(&dir).unwrap();
        let own = task.steps[0]
            .evaluation_environment_setup
            .as_ref()
            .expect("step-1 builds its own verifier image");
        let context = dir.join("steps/step-1/tests").display().to_string();
        assert_eq!(own.build_context.as_deref(), Some(context.as_str()));
        assert_eq!(own.image, None);
        assert_eq!(task.steps[0].metadata["verifier_bundled"], true);
        // step-2 has no Dockerfile: the task's verifier (the task's image, tests uploaded).
        assert!(task.steps[1].evaluation_environment_setup.is_none());
        assert_eq!(task.steps[1].metadata["verifier_bundled"], false);
        // A prebuilt image of the step's own wins.
        let toml = "[[steps]]\nname = \"one\"\n\
                    [steps.verifier.environment]\ndocker_image = \"grader:1\"\n";
        let dir = write_task(tmp.path(), "step-image", toml);
        write_step(&dir, "one", &[]);
        let task = load(&dir).unwrap();
        let own = task.steps[0].evaluation_environment_setup.as_ref().unwrap();
        assert_eq!(own.image.as_deref(), Some("grader:1"));
        assert_eq!(task.steps[0].metadata["verifier_bundled"], true);
    }

    #[test]
    fn step_policies_collect_commands_and_refusals() {
        let tmp = TempDir::new().unwrap();
        let toml = "[[steps]]\nname = \"one\"\n\
                    agent = { network_mode = \"no-network\", user = \"agent\" }\n\
                    [steps.verifier]\nnetwork_mode = \"public\"\n\
                    [[steps.verifier.collect]]\ncommand = \"cp /app/x /logs/artifacts/\"\n";
        let dir = write_task(tmp.path(), "policies", toml);
        write_step(&dir, "one", &[]);
        let task = load(&dir).unwrap();
        let step = &task.steps[0];
        let mode = |p: &Option<_>| {
            p.as_ref()
                .map(|p: &agentcompass_plugin_api::contracts::NetworkPolicy| p.network_mode)
        };
        assert_eq!(mode(&step.run_network_policy), Some(NetworkMode::NoNetwork));
        assert_eq!(
            mode(&step.evaluation_network_policy),
            Some(NetworkMode::Public)
        );
        assert_eq!(
            step.artifact_collect[0].command,
            "cp /app/x /logs/artifacts/"
        );
        assert!(task.load_warnings.is_empty(), "{:?}", task.load_warnings);
        // What a step's own verifier environment declares beyond its image is refused, as
        // is a step verifier with sidecar services.
        let toml = "[[steps]]\nname = \"one\"\n[steps.verifier.environment]\ncpus = 2\n";
        let dir = write_task(tmp.path(), "step-resources", toml);
        write_step(&dir, "one", &[]);
        let reason = load(&dir).unwrap().metadata["harbor"]["unsupported"].clone();
        assert!(
            reason
                .as_str()
                .unwrap()
                .contains("field `steps[0].verifier.environment.cpus/memory_mb/storage_mb/gpus`"),
            "{reason}"
        );
        let toml = "[verifier]\nenvironment_mode = \"separate\"\n[[steps]]\nname = \"one\"\n";
        let dir = write_task(tmp.path(), "step-compose", toml);
        write_step(
            &dir,
            "one",
            &[("tests/docker-compose.yaml", "services: {}\n")],
        );
        let reason = load(&dir).unwrap().metadata["harbor"]["unsupported"].clone();
        assert!(
            reason
                .as_str()
                .unwrap()
                .contains("steps/one/tests/docker-compose.yaml: a step verifier's own services"),
            "{reason}"
        );
    }
}
