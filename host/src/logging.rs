//! Logging: the console (stderr) and each run's `run.log`, both scrubbed of registered secrets.
//!
//! `run.log` receives every event of the host at or above the run's `file_log_level`, plugin
//! logs included (the SDK forwards them into the host's `tracing` tagged with the plugin's
//! name); the host's dependencies (HTTP client, runtime) reach it from `info` up.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use agentcompass_redact::scrub_text;

struct RunLog {
    file: Mutex<BufWriter<File>>,
    level: Level,
}

static RUN_LOGS: RwLock<Vec<Arc<RunLog>>> = RwLock::new(Vec::new());

/// An open `run.log`; events stop going to it when this is dropped.
pub struct RunLogGuard(Arc<RunLog>);

impl Drop for RunLogGuard {
    fn drop(&mut self) {
        if let Ok(mut logs) = RUN_LOGS.write() {
            logs.retain(|log| !Arc::ptr_eq(log, &self.0));
        }
        if let Ok(mut file) = self.0.file.lock() {
            let _ = file.flush();
        }
    }
}

/// Parses an upstream level name (`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`).
pub fn level_from_name(name: &str) -> Level {
    match name.to_ascii_uppercase().as_str() {
        "DEBUG" => Level::DEBUG,
        "INFO" => Level::INFO,
        "ERROR" | "CRITICAL" => Level::ERROR,
        _ => Level::WARN,
    }
}

/// Opens (appends to) a run's log file at `level`.
pub fn open_run_log(path: &Path, level: Level) -> std::io::Result<RunLogGuard> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let log = Arc::new(RunLog {
        file: Mutex::new(BufWriter::new(file)),
        level,
    });
    if let Ok(mut logs) = RUN_LOGS.write() {
        logs.push(log.clone());
    }
    Ok(RunLogGuard(log))
}

#[derive(Default)]
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

struct RunLogLayer;

impl<S: Subscriber> Layer<S> for RunLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let logs = match RUN_LOGS.read() {
            Ok(logs) if !logs.is_empty() => logs.clone(),
            _ => return,
        };
        let level = *event.metadata().level();
        let mut line = Line::default();
        event.record(&mut line);
        let text = format!(
            "{} {:<5} {}\n",
            agentcompass_results::time::rfc3339(std::time::SystemTime::now()),
            level,
            scrub_text(&line.0)
        );
        for log in logs.iter().filter(|log| level <= log.level) {
            if let Ok(mut file) = log.file.lock() {
                let _ = file.write_all(text.as_bytes());
            }
        }
    }
}

/// Stderr with registered secrets scrubbed from every write.
struct ScrubbedStderr;

impl Write for ScrubbedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(scrub_text(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Colour only on a terminal, and not when `NO_COLOR` is set (<https://no-color.org>).
fn console_colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Replaces the default panic hook, which prints the message unscrubbed: a host panic prints
/// one scrubbed line (`panic at FILE:LINE: MESSAGE`) and, with `RUST_BACKTRACE` set, the
/// backtrace. The runtime turns a panic in a task's lifecycle into a `host_panic` issue.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_string());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let line = format!("panic{location}: {}\n", message.replace('\n', " "));
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(scrub_text(&line).as_bytes());
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            let _ = writeln!(stderr, "{}", scrub_text(&backtrace.to_string()));
        }
    }));
}

/// What `run.log` keeps: the host's own events down to `debug`, its dependencies' from `info`
/// (an HTTP client's connection-pool chatter is not the run's story, and a disabled callsite
/// costs nothing per request).
fn run_log_filter() -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target("agentcompass", LevelFilter::DEBUG)
}

/// Installs the console logger (`AGENTCOMPASS_LOG` filter, else `debug` with `--verbose`,
/// else `warn`), the run-log layer and the scrubbing panic hook.
pub fn init(verbose: bool) {
    install_panic_hook();
    let default = if verbose { "debug" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTCOMPASS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let console = tracing_subscriber::fmt::layer()
        .with_writer(|| ScrubbedStderr)
        .with_ansi(console_colours())
        .with_target(false)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(console)
        .with(RunLogLayer.with_filter(run_log_filter()))
        .try_init();
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::run_log_filter;

    #[test]
    fn run_log_keeps_the_hosts_debug_and_its_dependencies_from_info() {
        let filter = run_log_filter();
        assert!(filter.would_enable("agentcompass_host::runtime::task", &Level::DEBUG));
        assert!(filter.would_enable("agentcompass_builtins::sandbox", &Level::DEBUG));
        assert!(!filter.would_enable("hyper_util::client::legacy::pool", &Level::DEBUG));
        assert!(filter.would_enable("hyper_util::client::legacy::pool", &Level::INFO));
        assert!(!filter.would_enable("agentcompass_host::runtime::task", &Level::TRACE));
    }
}
