//! Where a task's images come from, as Harbor decides it (`environments/definition.py`):
//! `[environment].docker_image` is used as declared (a `Dockerfile` beside it is not built, as
//! in Harbor without `--force-build`); else `environment/Dockerfile` is the task's own image,
//! built from the `environment/` directory (`EnvironmentSetup::build_context`). A separate
//! verifier environment uses its own `docker_image`, else `tests/Dockerfile` (built from
//! `tests/`), else the task's image. `environment/docker-compose.yaml` (sidecar services) is
//! not run yet: such a task is its own `unsupported` issue, never run without its services.

use std::path::Path;

use agentcompass_plugin_api::contracts::{EnvironmentSetup, TaskSpec};

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
/// one. `dir` is the task directory (absolute).
pub(crate) fn apply(dir: &Path, task: &mut TaskSpec) {
    if task.environment_setup.image.is_none() {
        task.environment_setup.build_context = context(dir, ENVIRONMENT_DIR);
    }
    let agent = task.environment_setup.clone();
    if let Some(verifier) = task.evaluation_environment_setup.as_mut() {
        if verifier.image.is_none() {
            match context(dir, TESTS_DIR) {
                Some(tests) => verifier.build_context = Some(tests),
                None => inherit_image(verifier, &agent),
            }
        }
    }
}

/// A separate verifier environment without an image of its own runs the task's.
fn inherit_image(verifier: &mut EnvironmentSetup, agent: &EnvironmentSetup) {
    verifier.image = agent.image.clone();
    verifier.build_context = agent.build_context.clone();
}

/// Why a task cannot run here yet, if its environment definition needs what the host does
/// not do (sidecar services).
pub(crate) fn unsupported(dir: &Path) -> Option<String> {
    dir.join(ENVIRONMENT_DIR)
        .join(COMPOSE_FILE)
        .is_file()
        .then(|| {
            format!(
                "{ENVIRONMENT_DIR}/{COMPOSE_FILE}: sidecar services (Docker Compose) are not \
                 supported yet; the task is not run without them"
            )
        })
}
