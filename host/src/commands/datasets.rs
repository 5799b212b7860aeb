//! `datasets list`, `datasets download` and `datasets verify`: Harbor registry datasets and
//! the cache under `<data_dir>/datasets`, as the `harbor` benchmark's `dataset` param uses
//! them. Download progress is printed on stderr ([`DownloadPrinter`]).

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::anyhow;

use agentcompass_datasets::{export_dataset, CachedTask};
use agentcompass_host::datasets::harbor::{choose, fetch_tasks};
use agentcompass_host::datasets::registry_source::RegistrySource;
use agentcompass_host::datasets::{
    DatasetService, DownloadObserver, DownloadProgress, DownloadReporter,
};
use agentcompass_host::request::{resolve_runtime, RuntimeOptions};

use super::invocation::{load_config, runtime_overlay};
use crate::cli::{DatasetArgs, DatasetsCommand, GlobalArgs};

/// The flags' names, for messages.
const FLAG_NAMES: (&str, &str) = ("--registry-path", "--registry-url");

/// Runs one `datasets` subcommand.
pub fn datasets(global: &GlobalArgs, command: DatasetsCommand) -> anyhow::Result<i32> {
    match command {
        DatasetsCommand::List { args } => list(&args),
        DatasetsCommand::Download {
            dataset,
            output_dir,
            args,
        } => download(global, &dataset, output_dir.as_deref(), &args),
        DatasetsCommand::Verify { data_dir } => verify(global, data_dir.as_deref()),
    }
}

/// The registry the flags name.
fn source(args: &DatasetArgs) -> anyhow::Result<RegistrySource> {
    let path = args.registry_path.as_ref().map(|p| p.display().to_string());
    Ok(RegistrySource::from_options(
        path.as_deref(),
        args.registry_url.as_deref(),
        FLAG_NAMES,
    )?)
}

/// A small runtime for one command's network and file work.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the async runtime: {e}"))
}

/// `datasets list`: sorted by name and version, as Harbor lists them.
fn list(args: &DatasetArgs) -> anyhow::Result<i32> {
    let source = source(args)?;
    let registry = runtime()?.block_on(source.load())?;
    let mut datasets = registry.datasets();
    datasets.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    let rows: Vec<Vec<String>> = datasets
        .iter()
        .map(|d| {
            vec![
                d.name.clone(),
                d.version.clone(),
                d.tasks.len().to_string(),
                d.description.replace('\n', " "),
            ]
        })
        .collect();
    let tasks: usize = datasets.iter().map(|d| d.tasks.len()).sum();
    crate::out!(
        "{}",
        super::table::render_fitted(
            &["NAME", "VERSION", "TASKS", "DESCRIPTION"],
            &rows,
            super::table::output_width()
        )
    );
    outln!(
        "Total: {} dataset(s) with {tasks} task(s) ({})",
        datasets.len(),
        registry.source_name()
    );
    Ok(0)
}

/// The data directory: the flag, else `runtime.data_dir` of the configs, else the default.
fn data_dir(global: &GlobalArgs, flag: Option<&str>) -> anyhow::Result<String> {
    let config = load_config(global)?;
    let overlay = RuntimeOptions {
        data_dir: flag.map(str::to_string),
        ..runtime_overlay(global, None)?
    };
    Ok(resolve_runtime(&config, None, &overlay)?.data_dir)
}

/// `datasets download`: every task into the cache, then the export when asked.
fn download(
    global: &GlobalArgs,
    dataset: &str,
    output_dir: Option<&Path>,
    args: &DatasetArgs,
) -> anyhow::Result<i32> {
    let data_dir = data_dir(global, args.data_dir.as_deref())?;
    let service = DatasetService::new(Path::new(&data_dir), DownloadPrinter::reporter());
    let source = source(args)?;
    let chosen = runtime()?.block_on(choose(dataset, &source))?;
    let cache = service.task_cache();
    let resolved = fetch_tasks(&cache, &chosen, service.reporter())?;
    outln!(
        "{}@{}: {} task(s) cached in {}",
        resolved.name,
        resolved.version,
        resolved.tasks.len(),
        service.root().display()
    );
    let Some(output_dir) = output_dir else {
        return Ok(0);
    };
    // Harbor's export holds the git tasks only (a local task is used where it is).
    let cached: Vec<CachedTask> = resolved
        .tasks
        .iter()
        .filter_map(|task| {
            Some(CachedTask {
                dir: task.dir.clone().into(),
                git_url: task.git_url.clone()?,
                commit: task.commit.clone()?,
                path: task.path.clone(),
                digest: task.digest.clone(),
                bytes: 0,
            })
        })
        .collect();
    let exported = export_dataset(dataset_name(dataset), &cached, output_dir)
        .map_err(|e| anyhow!("--output-dir {}: {e}", output_dir.display()))?;
    outln!(
        "exported {} task(s) to {}",
        exported.len(),
        output_dir.join(dataset_name(dataset)).display()
    );
    Ok(0)
}

/// The dataset's directory name in an export: the name as typed without `@VERSION`, its last
/// `/` part (Harbor's rule).
fn dataset_name(dataset: &str) -> &str {
    let name = dataset.split_once('@').map_or(dataset, |(name, _)| name);
    name.rsplit('/').next().unwrap_or(name)
}

/// `datasets verify`: every cached task re-hashed; changed or broken entries dropped.
fn verify(global: &GlobalArgs, flag: Option<&str>) -> anyhow::Result<i32> {
    let data_dir = data_dir(global, flag)?;
    let service = DatasetService::new(Path::new(&data_dir), DownloadReporter::default());
    let report = service
        .task_cache()
        .verify()
        .map_err(|e| anyhow!("{}: {e}", service.root().display()))?;
    for dropped in &report.dropped {
        eprintln!("dropped: {dropped}");
    }
    outln!(
        "{} cached task(s) checked in {}: {} intact, {} dropped, {} stale staging dir(s) removed",
        report.checked,
        service.root().display(),
        report.intact,
        report.dropped.len(),
        report.stale_staging
    );
    Ok(0)
}

/// Prints download progress on stderr: a line when a download starts, at most one a second
/// while it runs, and one when it ends.
pub struct DownloadPrinter {
    last: Mutex<Option<Instant>>,
}

/// How often a running download's line is printed.
const PRINT_INTERVAL: Duration = Duration::from_secs(1);

impl DownloadPrinter {
    /// A reporter printing through a new printer.
    pub fn reporter() -> DownloadReporter {
        DownloadReporter::to(Arc::new(DownloadPrinter {
            last: Mutex::new(None),
        }))
    }
}

impl DownloadObserver for DownloadPrinter {
    fn progress(&self, step: &DownloadProgress<'_>) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let edge = step.done == 0 || step.done == step.total;
        if !edge && last.is_some_and(|at| now.duration_since(at) < PRINT_INTERVAL) {
            return;
        }
        *last = Some(now);
        let _ = writeln!(
            std::io::stderr(),
            "datasets: {}: {}/{} {}, {}",
            step.what,
            step.done,
            step.total,
            step.unit,
            human_bytes(step.bytes)
        );
    }
}

/// `1.5 KiB`, `12 B`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(super::human_bytes(12), "12 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}
