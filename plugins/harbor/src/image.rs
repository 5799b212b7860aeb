//! Where a task's images come from, as Harbor decides it (`environments/definition.py`):
//! `[environment].docker_image` is used as declared (a `Dockerfile` beside it is not built, as
//! in Harbor without `--force-build`); else `environment/Dockerfile` is the task's own image,
//! built from the `environment/` directory (`EnvironmentSetup::build_context`). A separate
//! verifier environment uses its own `docker_image`, else `tests/Dockerfile` (built from
//! `tests/`), else the task's image. `environment/docker-compose.yaml` adds services beside
//! the task's container (`EnvironmentSetup::compose`, run by the providers that run Compose
//! files; the others refuse the plan); a step verifier's own `tests/docker-compose.yaml` is
//! not run: such a task is its own `unsupported` issue.

use std::path::Path;

use agentcompass_plugin_api::contracts::{ComposeSetup, EnvironmentSetup, TaskSpec};

use crate::names::TESTS_DIR;

/// The directory of a task's environment definition.
const ENVIRONMENT_DIR: &str = "environment";
/// The file Harbor builds an image from (the exact name: not `Containerfile`).
const DOCKERFILE: &str = "Dockerfile";
/// The compose file of a task with sidecar services (the exact name Harbor recognises).
const COMPOSE_FILE: &str = "docker-compose.yaml";

/// The build context `dir/sub` when it holds a `Dockerfile`, as an absolute path.
fn context(dir: &Path, sub: &str) -> Option<String> {
    let context = dir.join(sub);
    context
        .join(DOCKERFILE)
        .is_file()
        .then(|| context.display().to_string())
}

/// Sets the task's (and a separate verifier environment's) build context where Harbor builds
/// one. `dir` is the task directory (absolute). Returns whether a separate verifier's tests
/// are bundled in its image (its own `docker_image`, or a build of `tests/`): Harbor then
/// uploads none and runs the image's `/tests/test.sh`.
pub(crate) fn apply(dir: &Path, task: &mut TaskSpec) -> bool {
    if task.environment_setup.image.is_none() {
        task.environment_setup.build_context = context(dir, ENVIRONMENT_DIR);
    }
    let compose = dir.join(ENVIRONMENT_DIR).join(COMPOSE_FILE);
    if compose.is_file() {
        task.environment_setup.compose = Some(ComposeSetup {
            file: compose.display().to_string(),
            root: dir.display().to_string(),
        });
    }
    let agent = task.environment_setup.clone();
    let Some(verifier) = task.evaluation_environment_setup.as_mut() else {
        return false;
    };
    if verifier.image.is_some() {
        return true;
    }
    match context(dir, TESTS_DIR) {
        Some(tests) => {
            verifier.build_context = Some(tests);
            true
        }
        None => {
            inherit_image(verifier, &agent);
            false
        }
    }
}

/// A separate step verifier's own environment, as Harbor resolves it
/// (`resolve_verifier_environment_definition`): `[steps.verifier.environment].docker_image`
/// (`declared`), else a build of `steps/<name>/tests/` when it has a `Dockerfile` (configured
/// by the step's table, else the task's verifier environment, else the task's); else the
/// step's table with the task's verifier image. `None`: the task's verifier environment
/// serves the step. With whether its tests are bundled (`bundled`: the task verifier's).
pub(crate) fn step_verifier(
    step_dir: &Path,
    declared: Option<&EnvironmentSetup>,
    task: &TaskSpec,
    bundled: bool,
) -> Option<(EnvironmentSetup, bool)> {
    if let Some(setup) = declared.filter(|setup| setup.image.is_some()) {
        return Some((setup.clone(), true));
    }
    let task_verifier = task
        .evaluation_environment_setup
        .as_ref()
        .unwrap_or(&task.environment_setup);
    if let Some(tests) = context(step_dir, TESTS_DIR) {
        let mut setup = declared.unwrap_or(task_verifier).clone();
        setup.image = None;
        setup.build_context = Some(tests);
        return Some((setup, true));
    }
    let mut setup = declared?.clone();
    inherit_image(&mut setup, task_verifier);
    Some((setup, bundled))
}

/// A separate verifier environment without an image of its own runs the task's (with its
/// services, as Harbor starts the same definition).
fn inherit_image(verifier: &mut EnvironmentSetup, agent: &EnvironmentSetup) {
    verifier.image = agent.image.clone();
    verifier.build_context = agent.build_context.clone();
    verifier.compose = agent.compose.clone();
}

/// The refusal of a step verifier's own `dir/sub/docker-compose.yaml`, if there is one.
pub(crate) fn compose(dir: &Path, sub: &str) -> Option<String> {
    dir.join(sub).join(COMPOSE_FILE).is_file().then(|| {
        format!(
            "{sub}/{COMPOSE_FILE}: a step verifier's own services (Docker Compose) are not \
             supported; the task is not run without them"
        )
    })
}
