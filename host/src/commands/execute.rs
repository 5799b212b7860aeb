//! Running a resolved orchestration: preflight every request and load its tasks (bad input
//! exits 2 before anything is written), run it on a tokio runtime, print each request's
//! outcome and results directory.

use anyhow::Context;

use agentcompass_host::request::Orchestration;
use agentcompass_host::runtime::Notice;
use agentcompass_host::setup::Setup;

/// The most threads the runtime's blocking pool may start.
const BLOCKING_THREADS: usize = 16;

/// The tokio runtime a run (or one cluster job) executes on.
pub(super) fn async_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // File work handed off by providers (temp dirs, copies) is short; a small pool keeps
        // the thread count, and with it the malloc arenas and RSS, flat however many tasks
        // run at once (tokio's default allows 512 threads).
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name("agentcompass")
        .build()
        .context("cannot start the async runtime")
}

/// Every request preflighted and its tasks opened, on the runtime that will run them.
pub(super) struct Ready {
    prepared: Vec<agentcompass_host::runtime::PreparedRequest>,
    executor: tokio::runtime::Runtime,
}

impl Ready {
    /// Each request's name and how many tasks its benchmark selected.
    pub(super) fn task_counts(&self) -> Vec<(String, usize)> {
        self.prepared
            .iter()
            .map(|request| {
                (
                    request.name().to_string(),
                    request.task_count().unwrap_or(0),
                )
            })
            .collect()
    }

    /// Stops the runtime without waiting for plugin threads.
    pub(super) fn discard(self) {
        self.executor
            .shutdown_timeout(std::time::Duration::from_millis(100));
    }
}

/// What a run checks before its first task besides what it always checks, and how it was
/// invoked.
#[derive(Debug, Clone, Copy)]
pub(super) struct Checks {
    /// Check each model endpoint a harness will call (`--no-endpoint-check` turns it off).
    pub endpoint: bool,
    /// `launch` (its requests each reuse their latest run) rather than `run`.
    pub launch: bool,
}

/// Everything a run checks before its first task, in order, with nothing written: the gates'
/// files, each request's preflight, the gates' metrics against each benchmark's declared
/// ones, each model endpoint a harness will call (once per endpoint), then (with `install`,
/// the harnesses' dependencies and) every request's tasks — a dataset or task directory the
/// benchmark rejects is bad input (exit 2).
pub(super) fn prepare(
    orchestration: &Orchestration,
    setup: &Setup,
    gates: &agentcompass_host::gates::Gates,
    checks: Checks,
    install: bool,
) -> anyhow::Result<Ready> {
    gates.validate()?;
    let datasets = std::sync::Arc::new(agentcompass_host::datasets::DatasetService::new(
        std::path::Path::new(&orchestration.runtime.data_dir),
        match orchestration.runtime.progress {
            agentcompass_host::progress::ProgressMode::None => Default::default(),
            _ => super::datasets::DownloadPrinter::reporter(),
        },
    ));
    let mut prepared =
        agentcompass_host::runtime::preflight_all(&setup.registry, orchestration, &datasets)
            .map_err(|e| anyhow::anyhow!(e))?;
    for request in &prepared {
        gates.check_declared(request.benchmark_id(), &request.declared_metrics())?;
    }
    let executor = async_runtime()?;
    if checks.endpoint {
        if let Err(e) = check_endpoints(&prepared, &executor) {
            executor.shutdown_timeout(std::time::Duration::from_millis(100));
            return Err(e);
        }
    }
    if install && orchestration.runtime.auto_install_dependencies {
        super::dependencies::install_all(orchestration, setup, &executor)?;
    }
    let loaded = executor.block_on(async {
        for request in &mut prepared {
            request.load_tasks().await?;
        }
        Ok::<(), agentcompass_host::runtime::RunError>(())
    });
    if let Err(e) = loaded {
        executor.shutdown_timeout(std::time::Duration::from_millis(100));
        return Err(anyhow::anyhow!(e));
    }
    Ok(Ready { prepared, executor })
}

/// Checks each distinct model endpoint the requests' harnesses will call (base URL, key and
/// protocol), one request each: nothing listening, a name that does not resolve or a refused
/// key is one line naming the endpoint as written and `--no-endpoint-check`.
fn check_endpoints(
    prepared: &[agentcompass_host::runtime::PreparedRequest],
    executor: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
    let mut checked: Vec<(String, String, String)> = Vec::new();
    for request in prepared {
        let Some(endpoint) = request.endpoint_to_check() else {
            continue;
        };
        let model = endpoint.model;
        let protocols = model.api_protocol.protocols().join(",");
        let key = (model.base_url.clone(), model.api_key.clone(), protocols);
        if checked.contains(&key) {
            continue;
        }
        checked.push(key);
        let outcome = executor.block_on(async {
            let gateway = agentcompass_gateway::ModelGateway::new(model)?;
            gateway
                .check_endpoint(&endpoint.label, !model.wrap_api_key)
                .await
                .map_err(anyhow::Error::from)
        });
        if let Err(e) = outcome {
            let label = match request.name() {
                "" => String::new(),
                name => format!("request {name}: "),
            };
            anyhow::bail!(
                "{label}{e:#} (checked before the first task; --no-endpoint-check skips the \
                 check for gateways that cannot be probed)"
            );
        }
    }
    Ok(())
}

pub(super) fn execute(
    orchestration: Orchestration,
    setup: &Setup,
    gates: &agentcompass_host::gates::Gates,
    checks: Checks,
) -> anyhow::Result<i32> {
    let Ready { prepared, executor } = prepare(&orchestration, setup, gates, checks, true)?;
    let outcome = executor.block_on(agentcompass_host::runtime::execute(
        &orchestration,
        prepared,
        print_notice,
    ));
    let finished = report(&outcome);
    print_next_steps(&outcome, checks.launch);
    // Plugins keep threads of their own; do not wait for them at exit.
    executor.shutdown_timeout(std::time::Duration::from_millis(100));
    let code = outcome.exit_code();
    if !gates.any() {
        return Ok(code);
    }
    check_gates(gates, &finished, code)
}

/// What `--dry-run` reports of one request's tasks.
pub(super) struct DryRunTasks {
    /// The request's name.
    pub(super) name: String,
    /// How many tasks its benchmark selected.
    pub(super) count: usize,
    /// `selected_tasks`'s companion `images`: the tasks that build their own image and the
    /// distinct images (of the first page of the selection).
    pub(super) images: serde_json::Value,
    /// The ids of the first page of the selection (every task of a selection of up to 256),
    /// in the order they would run.
    pub(super) task_ids: Vec<String>,
}

/// `--dry-run`'s check of what a run would check before its first task (preflight, gates,
/// opening every request's tasks); prints the load warnings a run would print (on stderr)
/// and returns each request's task count and image builds.
pub(super) fn dry_run_tasks(
    orchestration: &Orchestration,
    setup: &Setup,
    gates: &agentcompass_host::gates::Gates,
    checks: Checks,
) -> anyhow::Result<Vec<DryRunTasks>> {
    let ready = prepare(orchestration, setup, gates, checks, false)?;
    let counts = ready.task_counts();
    let mut out = Vec::with_capacity(counts.len());
    for ((name, count), request) in counts.into_iter().zip(&ready.prepared) {
        let preview = request.preview();
        let label = if name.is_empty() {
            String::new()
        } else {
            format!("{name}: ")
        };
        for warning in &preview.warnings {
            eprintln!("warning: {label}{warning}");
        }
        let images = serde_json::json!({
            "tasks_building": preview.building,
            "distinct": preview.images.len(),
            "of_tasks": preview.previewed,
        });
        out.push(DryRunTasks {
            name,
            count,
            images,
            task_ids: preview.task_ids,
        });
    }
    ready.discard();
    Ok(out)
}

/// Prints each request's outcome (status, headline, error, stop and skip lines, issue tally,
/// the metric table) on stderr and its run directory on stdout; returns the finished runs as
/// (name, directory).
fn report(
    outcome: &agentcompass_host::runtime::OrchestrationOutcome,
) -> Vec<(String, std::path::PathBuf)> {
    // Warnings the run repeated (the same retry of every task) were printed once: their counts.
    for line in agentcompass_host::logging::repeated_warnings() {
        eprintln!("{line}");
    }
    let mut finished = Vec::new();
    for request in &outcome.requests {
        let label = if request.name.is_empty() {
            String::new()
        } else {
            format!("{}: ", request.name)
        };
        let headline = request.headline.as_deref().unwrap_or("no metrics");
        // Of the selected tasks, when the run stopped before publishing them all.
        let tasks = match (request.published, request.selected) {
            (published, selected) if published < selected => {
                format!("{published} of {selected} tasks")
            }
            (1, _) => "1 task".to_string(),
            (published, _) => format!("{published} tasks"),
        };
        eprintln!(
            "{label}{} — {headline} ({tasks}, {} reused)",
            request.status, request.reused
        );
        if request.changed > 0 {
            eprintln!(
                "{label}{} tasks of the reuse source ran again: their content changed since",
                request.changed
            );
        }
        if let Some(error) = &request.error {
            eprintln!("{label}error: {error}");
        }
        for line in [&request.stopped, &request.not_scored, &request.skipped]
            .into_iter()
            .flatten()
            .chain(&request.harbor_metrics)
        {
            eprintln!("{label}{line}");
        }
        for issue in &request.issues {
            eprintln!(
                "{label}  {} × {}: {}",
                issue.count, issue.code, issue.example
            );
        }
        if let Some(dir) = &request.run_dir {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            // The metric table of summary.md and its model usage, then the results path.
            if let Ok(summary) = std::fs::read_to_string(dir.join("summary.md")) {
                for line in summary.lines().filter(|l| l.starts_with('|')).take(12) {
                    eprintln!("{label}{line}");
                }
                let usage =
                    |l: &&str| l.starts_with("Model usage: ") || l.starts_with("Rate limits: ");
                for line in summary.lines().filter(usage) {
                    eprintln!("{label}{line}");
                }
            }
            crate::outln!("{}", dir.display());
            // A direct run is named by its namespace (`<model>_<benchmark>_<harness>`).
            let name = if request.name.is_empty() {
                dir.parent()
                    .and_then(|p| p.file_name())
                    .map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
            } else {
                request.name.clone()
            };
            finished.push((name, dir));
        }
    }
    finished
}

/// After a run stopped early (Ctrl-C, the deadline) or left tasks unscored, the command that
/// resumes it or runs again the tasks a rerun can help (this invocation with `--reuse`,
/// `--rerun CLASS_OR_CODE`), then what to change for the others (`next_steps::advice`).
fn print_next_steps(outcome: &agentcompass_host::runtime::OrchestrationOutcome, launch: bool) {
    use agentcompass_results::status::RunStatus;
    let args: Vec<String> = std::env::args().collect();
    let mut rerun: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    let mut stopped = false;
    let mut run_id = None;
    for request in &outcome.requests {
        let Some(dir) = &request.run_dir else {
            continue;
        };
        stopped |= matches!(request.status, RunStatus::Cancelled | RunStatus::TimedOut);
        run_id = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let advice = super::next_steps::advice(&request.not_scored_reasons, &request.environment);
        for entry in advice.rerun {
            if !rerun.contains(&entry) {
                rerun.push(entry);
            }
        }
        let label = match request.name.as_str() {
            "" => String::new(),
            name => format!("{name}: "),
        };
        fixes.extend(advice.fixes.into_iter().map(|fix| format!("{label}{fix}")));
    }
    let Some(run_id) = run_id else {
        return;
    };
    let reuse = (!launch).then_some(run_id.as_str());
    if stopped {
        eprintln!(
            "to resume: {}",
            super::next_steps::reuse_command(&args, reuse, &[])
        );
    } else if !rerun.is_empty() {
        eprintln!(
            "to run the tasks not scored again: {}",
            super::next_steps::reuse_command(&args, reuse, &rerun)
        );
    }
    for fix in fixes {
        eprintln!("{fix}");
    }
}

/// Writes `--junit` and checks `--fail-under` / `--baseline` over the finished runs: a failed
/// run keeps its own exit code; a failed gate is exit 3; a gate that cannot be checked (an
/// unknown metric, an unreadable baseline) is bad input (exit 2); the results stay.
fn check_gates(
    gates: &agentcompass_host::gates::Gates,
    finished: &[(String, std::path::PathBuf)],
    code: i32,
) -> anyhow::Result<i32> {
    use agentcompass_host::exit_code::{GATE_FAILED, SUCCESS};
    if let Some(path) = &gates.junit {
        agentcompass_host::gates::write_junit(path, finished)
            .with_context(|| format!("--junit {}: cannot write it", path.display()))?;
    }
    let verdict = gates.check(finished);
    for line in &verdict.lines {
        eprintln!("{line}");
    }
    if let Some(error) = verdict.error {
        anyhow::bail!(error);
    }
    Ok(match (code, verdict.failed) {
        (SUCCESS, true) => GATE_FAILED,
        (code, _) => code,
    })
}

/// Prints the runtime's notices; a second interrupt exits at once.
fn print_notice(notice: Notice) {
    match notice {
        Notice::CancelRequested => agentcompass_host::console::write_lines(
            "Cancellation requested; cleaning up (press Ctrl-C again to exit now).",
        ),
        Notice::SecondInterrupt => {
            agentcompass_host::console::write_lines("Second interrupt: exiting now.");
            std::process::exit(agentcompass_host::exit_code::CANCELLED);
        }
        Notice::DeadlinePassed(seconds) => agentcompass_host::console::write_lines(&format!(
            "The orchestration deadline ({seconds:.0} s) passed; stopping."
        )),
    }
}
