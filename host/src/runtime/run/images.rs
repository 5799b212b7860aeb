//! The build phase (issue 54): before the tasks take their concurrency slots, the distinct
//! images the tasks build from their own definitions (`setup.build_context`: a Harbor task's
//! `environment/Dockerfile`) are built, when the provider builds images
//! (`ProviderCapabilities::builds_images`) — an environment of each image opened and closed
//! at once, the provider building (or finding) the image as it opens. Images are told apart
//! by the definition's content digest (Harbor's `environment_content_hash`), so the same
//! `environment/` in many task directories is one image. So 100 tasks of one
//! image do not wait on one build with 99 idle slots, and nine images build side by side.
//! The terminal shows `images 3/9` meanwhile (`images_progress` events).
//!
//! The phase covers the tasks of the stream's first page (256); later tasks' images build
//! when their environment opens, as without the phase (one build of a definition at a time
//! per machine either way: the provider's lock). A failed build is not the run's failure:
//! each task of that image fails at its own open, with the build's error as its issue. On
//! the Slurm executor the nodes build (each its own images, once) as their tasks open.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

use agentcompass_plugin_api::contracts::{EnvironmentSpec, OpenEnvironmentRequest};
use agentcompass_results::naming::sanitize_component;
use agentcompass_results::records::env_record;
use agentcompass_results::store::write_json_atomic;
use agentcompass_results::time::rfc3339;
use tokio::task::JoinSet;

use crate::progress::ProgressEvent;
use crate::runtime::context::RequestContext;
use crate::runtime::phase::{run_phase, watchdog, PhaseOutcome};
use crate::runtime::task_source::TaskSource;

/// Images built at once (each build is a Dockerfile's whole work; they share the machine).
const BUILDS_AT_ONCE: usize = 4;

/// The environments of the first page's plans (but the `reused` tasks') that build their own
/// image. Without their services: the phase builds the environment's own image, a Compose
/// file's services build (once each, under the provider's lock) when their task opens.
fn building(
    rc: &RequestContext,
    tasks: &TaskSource,
    reused: &HashSet<String>,
) -> Vec<EnvironmentSpec> {
    tasks
        .buffered()
        .iter()
        .filter(|task| !reused.contains(&task.task_id))
        .flat_map(|task| rc.planner.image_builds(task, &rc.resolved))
        .map(|mut env| {
            env.setup.compose = None;
            env
        })
        .collect()
}

/// One environment of each distinct image among `environments`: the same definition (its
/// content digest, as Harbor's, so identical `environment/` directories of different tasks
/// count once) under the same provider parameters. Reads the definitions' files.
fn distinct(environments: Vec<EnvironmentSpec>) -> Vec<EnvironmentSpec> {
    let mut found: BTreeMap<String, EnvironmentSpec> = BTreeMap::new();
    for env in environments {
        let context = env.setup.build_context.clone().unwrap_or_default();
        let digest = agentcompass_datasets::environment_hash(std::path::Path::new(&context))
            .unwrap_or(context);
        let key = format!(
            "{digest}\n{}",
            serde_json::Value::Object(env.params.clone())
        );
        found.entry(key).or_insert(env);
    }
    found.into_values().collect()
}

/// Builds the images of the request's first page of tasks but the `reused` ones (see the
/// module's doc).
pub(super) async fn build_images(
    rc: &RequestContext,
    tasks: &TaskSource,
    reused: &HashSet<String>,
) {
    let provider = rc.planner.provider().clone();
    if !provider.capabilities().is_ok_and(|caps| caps.builds_images) {
        return;
    }
    let environments = building(rc, tasks, reused);
    if environments.is_empty() {
        return;
    }
    let images = tokio::task::spawn_blocking(move || distinct(environments))
        .await
        .unwrap_or_default();
    let total = images.len() as u64;
    if total == 0 {
        return;
    }
    let (mut built, mut failed) = (0, 0);
    rc.emit(ProgressEvent::ImagesProgress {
        built,
        failed,
        total,
    });
    let mut pending = images.into_iter().enumerate();
    let mut running = JoinSet::new();
    loop {
        while running.len() < BUILDS_AT_ONCE {
            let Some((index, env)) = pending.next() else {
                break;
            };
            running.spawn(build_one(BuildScope::of(rc), index, env));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        built += 1;
        if !done.unwrap_or(false) {
            failed += 1;
        }
        rc.emit(ProgressEvent::ImagesProgress {
            built,
            failed,
            total,
        });
    }
}

/// What one build needs of the request (owned, for its own task).
struct BuildScope {
    provider: std::sync::Arc<dyn agentcompass_plugin_api::sdk::EnvironmentProvider>,
    ctx: agentcompass_plugin_api::sdk::Ctx,
    cancel: crate::host_services::CancelToken,
    run_id: String,
    run_dir: std::path::PathBuf,
    records: std::path::PathBuf,
    cleanup_grace: Duration,
}

impl BuildScope {
    /// The parts of `rc` one image build uses.
    fn of(rc: &RequestContext) -> BuildScope {
        BuildScope {
            provider: rc.planner.provider().clone(),
            ctx: rc.ctx.clone(),
            cancel: rc.cancel.clone(),
            run_id: rc.store.run_id().to_string(),
            run_dir: rc.store.run_dir().to_path_buf(),
            records: rc.store.env_resources_dir(),
            cleanup_grace: rc.cleanup_grace,
        }
    }
}

/// Opens (building the image) and closes one environment of image `index`; whether it
/// opened. The session is recorded in `.env-resources/` while open, as a task's is.
async fn build_one(scope: BuildScope, index: usize, env: EnvironmentSpec) -> bool {
    let context = env.setup.build_context.clone().unwrap_or_default();
    let mut request =
        OpenEnvironmentRequest::new(scope.run_id.clone(), format!("image-{}", index + 1), env);
    request.run_dir = Some(scope.run_dir.display().to_string());
    let budget = watchdog(request.environment.setup.build_timeout_seconds);
    let opened = run_phase(
        &scope.cancel,
        budget,
        scope.provider.open(&scope.ctx, &request),
    )
    .await;
    let session = match opened {
        PhaseOutcome::Done(session) => session,
        PhaseOutcome::Failed(e) => {
            tracing::debug!("building the image of {context} failed: {e}");
            return false;
        }
        PhaseOutcome::TimedOut(_) | PhaseOutcome::Cancelled => return false,
    };
    let info = session.info();
    let record = scope
        .records
        .join(format!("{}.json", sanitize_component(&info.id)));
    if !info.close_params.is_null() {
        let payload = env_record(&info, &request.task_id, 1, &rfc3339(SystemTime::now()));
        if let Err(e) = write_json_atomic(&record, &payload) {
            tracing::warn!("cannot record environment {}: {e}", info.id);
        }
    }
    let grace = scope.cleanup_grace.max(Duration::from_secs(1));
    match tokio::time::timeout(grace, session.close()).await {
        Ok(Ok(())) => {
            let _ = std::fs::remove_file(&record);
        }
        Ok(Err(e)) => tracing::warn!("closing the image build environment {}: {e}", info.id),
        Err(_) => tracing::warn!("closing the image build environment {} timed out", info.id),
    }
    true
}
