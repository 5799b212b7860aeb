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
/// The console's log lines, in the CLI's one format (`warning: ...`, `error: ...`), scrubbed,
/// written above the progress bar. Unless `every` (`--verbose`), a warning or error from the
/// same place with the same text but for its numbers (the same retry, 401 or connection
/// error of every task) is printed once and counted; [`repeated_warnings`] reports the counts.
struct ConsoleLayer {
    every: bool,
}

/// A console line that was not printed again, and how often.
struct Repeat {
    first: String,
    more: u64,
}

/// The warnings and errors printed, by where and what (numbers left out): their place in
/// first-seen order, and the repeats.
#[derive(Default)]
struct Repeats {
    index: std::collections::HashMap<String, usize>,
    seen: Vec<Repeat>,
}

/// How many distinct warnings are remembered; past that, new ones are printed and not
/// counted, so memory stays flat whatever a run logs.
const MAX_DISTINCT: usize = 1024;

static REPEATS: Mutex<Option<Repeats>> = Mutex::new(None);

/// `text` with every run of digits as `#`: the lines of one warning about different tasks,
/// attempts or counts read the same.
fn shape_of(text: &str) -> String {
    let mut shape = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                shape.push('#');
            }
            in_digits = true;
        } else {
            shape.push(c);
            in_digits = false;
        }
    }
    shape
}

/// Whether a line of `key` is printed (the first) or only counted (a repeat).
fn first_of(key: String, line: &str) -> bool {
    let mut guard = REPEATS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repeats = guard.get_or_insert_with(Repeats::default);
    if let Some(&at) = repeats.index.get(&key) {
        repeats.seen[at].more += 1;
        return false;
    }
    if repeats.seen.len() < MAX_DISTINCT {
        repeats.index.insert(key, repeats.seen.len());
        repeats.seen.push(Repeat {
            first: line.to_string(),
            more: 0,
        });
    }
    true
}

/// One line per console warning or error that repeated since the last call (`warning: 199
/// more like this one, not printed: ...`), and the counts start again.
pub fn repeated_warnings() -> Vec<String> {
    let mut guard = REPEATS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(repeats) = guard.take() else {
        return Vec::new();
    };
    repeats
        .seen
        .iter()
        .filter(|repeat| repeat.more > 0)
        .map(|repeat| {
            let (level, text) = repeat
                .first
                .split_once(": ")
                .unwrap_or(("warning", repeat.first.as_str()));
            format!(
                "{level}: {} more like this one, not printed: {text}",
                repeat.more
            )
        })
        .collect()
}

impl<S: Subscriber> Layer<S> for ConsoleLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let level = *metadata.level();
        let word = match level {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        let mut message = Message::default();
        event.record(&mut message);
        let text = scrub_text(&message.text);
        let line = format!("{word}: {text}{}\n", scrub_text(&message.fields));
        if !self.every && level <= Level::WARN {
            let key = format!(
                "{}:{} {}",
                metadata.file().unwrap_or(""),
                metadata.line().unwrap_or(0),
                shape_of(&text)
            );
            if !first_of(key, line.trim_end()) {
                return;
            }
        }
        crate::console::write_lines(&line);
    }
}

/// An event's message and, apart, its other fields (` key=value`).
#[derive(Default)]
struct Message {
    text: String,
    fields: String,
}

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.text.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

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
/// else `warn`; repeats counted rather than printed unless `--verbose`), the run-log layer
/// and the scrubbing panic hook.
pub fn init(verbose: bool) {
    install_panic_hook();
    let default = if verbose { "debug" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTCOMPASS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let console = ConsoleLayer { every: verbose }.with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(console)
        .with(RunLogLayer.with_filter(run_log_filter()))
        .try_init();
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::{first_of, repeated_warnings, run_log_filter, shape_of};

    #[test]
    fn a_repeated_warning_is_printed_once_and_counted() {
        let retry = |task: u32, n: u32| {
            format!("warning: model endpoint http://h:80/v1: 429; retry {n} of 3 (task q-{task})")
        };
        let key = |line: &str| format!("gateway.rs:1 {}", shape_of(line));
        assert!(first_of(key(&retry(1, 1)), &retry(1, 1)));
        for task in 2..=200 {
            assert!(!first_of(key(&retry(task, 2)), &retry(task, 2)));
        }
        let other = "warning: dataset metric x is not computed";
        assert!(first_of(key(other), other));
        assert_eq!(
            repeated_warnings(),
            [
                "warning: 199 more like this one, not printed: model endpoint http://h:80/v1: \
              429; retry 1 of 3 (task q-1)"
            ]
        );
        // The counts start again.
        assert!(repeated_warnings().is_empty());
        assert!(first_of(key(other), other));
        assert_eq!(shape_of("retry 12 of 3 in 0.5 s"), "retry # of # in #.# s");
    }

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
