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

/// A console warning printed once, and the lines like it that were only counted.
struct Repeat {
    /// `warning`, `error`.
    level: &'static str,
    /// The printed line's text without its task fields (`task_id=`, `attempt=`), cut into
    /// runs of digits and the rest.
    runs: Vec<String>,
    /// Per run: whether a counted line had other digits there (printed as `#`).
    varies: Vec<bool>,
    /// The tasks of the counted lines (the `task_id` field), distinct, in order.
    tasks: Vec<String>,
    /// Lines counted.
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

/// How many tasks of a repeated warning are remembered and named.
const MAX_NAMED: usize = 5;

static REPEATS: Mutex<Option<Repeats>> = Mutex::new(None);

/// `text` with every run of digits as `#`: the lines of one warning about different tasks,
/// attempts or counts read the same.
fn shape_of(text: &str) -> String {
    digit_runs(text)
        .iter()
        .map(|run| if is_digits(run) { "#" } else { run })
        .collect()
}

/// `text` cut into runs of ASCII digits and runs of anything else.
fn digit_runs(text: &str) -> Vec<&str> {
    let mut runs = Vec::new();
    let mut start = 0;
    let mut digits = None;
    for (at, c) in text.char_indices() {
        let is_digit = c.is_ascii_digit();
        if digits.is_some_and(|d| d != is_digit) {
            runs.push(&text[start..at]);
            start = at;
        }
        digits = Some(is_digit);
    }
    if start < text.len() {
        runs.push(&text[start..]);
    }
    runs
}

fn is_digits(run: &str) -> bool {
    run.starts_with(|c: char| c.is_ascii_digit())
}

/// One console warning: its level, its text without the task fields, and its task.
struct Seen<'a> {
    level: &'static str,
    text: &'a str,
    task: Option<&'a str>,
}

/// An event's fields (` key=value ...`) split into its task (`task_id`) and the others, the
/// attempt number left out: what tells the lines of one warning about several tasks apart.
fn split_task(fields: &str) -> (Option<&str>, String) {
    let mut task = None;
    let mut rest = String::new();
    for field in fields.split(' ').filter(|f| !f.is_empty()) {
        if let Some(id) = field.strip_prefix("task_id=") {
            task = Some(id);
        } else if !field.starts_with("attempt=") {
            rest.push(' ');
            rest.push_str(field);
        }
    }
    (task, rest)
}

/// Whether a line of `key` is printed (the first) or only counted (a repeat, its task and
/// digits remembered).
fn first_of(key: String, seen: &Seen<'_>) -> bool {
    let mut guard = REPEATS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repeats = guard.get_or_insert_with(Repeats::default);
    if let Some(&at) = repeats.index.get(&key) {
        let repeat = &mut repeats.seen[at];
        repeat.more += 1;
        let runs = digit_runs(seen.text);
        if runs.len() == repeat.runs.len() {
            for ((first, now), varies) in repeat.runs.iter().zip(runs).zip(&mut repeat.varies) {
                *varies |= first != now;
            }
        }
        if let Some(task) = seen.task {
            if repeat.tasks.len() < MAX_NAMED && !repeat.tasks.iter().any(|t| t == task) {
                repeat.tasks.push(task.to_string());
            }
        }
        return false;
    }
    if repeats.seen.len() < MAX_DISTINCT {
        let runs: Vec<String> = digit_runs(seen.text)
            .into_iter()
            .map(String::from)
            .collect();
        repeats.index.insert(key, repeats.seen.len());
        repeats.seen.push(Repeat {
            level: seen.level,
            varies: vec![false; runs.len()],
            runs,
            tasks: Vec::new(),
            more: 0,
        });
    }
    true
}

/// One line per console warning or error that repeated since the last call, naming what was
/// not printed: `warning: 199 more like this one, not printed (tasks q-2, q-3, q-4, q-5, q-6,
/// …): model endpoint ...: 429; retry # of 3`, the digits that differed among the lines
/// shown as `#`; and the counts start again.
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
            let text: String = repeat
                .runs
                .iter()
                .zip(&repeat.varies)
                .map(|(run, varies)| if *varies { "#" } else { run.as_str() })
                .collect();
            let mut tasks = repeat.tasks.clone();
            tasks.sort();
            let named = match tasks.len() {
                0 => String::new(),
                n => format!(
                    " ({} {}{})",
                    if n == 1 { "task" } else { "tasks" },
                    tasks.join(", "),
                    if (n as u64) < repeat.more {
                        ", …"
                    } else {
                        ""
                    }
                ),
            };
            format!(
                "{}: {} more like this one, not printed{named}: {text}",
                repeat.level, repeat.more
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
        let fields = scrub_text(&message.fields);
        let line = format!("{word}: {text}{fields}\n");
        if !self.every && level <= Level::WARN {
            let key = format!(
                "{}:{} {}",
                metadata.file().unwrap_or(""),
                metadata.line().unwrap_or(0),
                shape_of(&text)
            );
            let (task, others) = split_task(&fields);
            let seen = Seen {
                level: word,
                text: &format!("{text}{others}"),
                task,
            };
            if !first_of(key, &seen) {
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

    use super::{first_of, repeated_warnings, run_log_filter, shape_of, split_task, Seen};

    /// The count line names what was not printed (issue 58): the other tasks, and the
    /// numbers that differed as `#`, never the printed line's own task.
    #[test]
    fn a_repeated_warning_is_printed_once_and_counted() {
        let retry = |task: u32, n: u32| {
            format!("model endpoint http://h:80/v1: 429; retry {n} of 3 (task q-{task})")
        };
        let key = |text: &str| format!("gateway.rs:1 {}", shape_of(text));
        let warn = |text: &str, task: Option<&str>| {
            first_of(
                key(text),
                &Seen {
                    level: "warning",
                    text,
                    task,
                },
            )
        };
        assert!(warn(&retry(1, 1), None));
        for task in 2..=200 {
            assert!(!warn(&retry(task, 2), None));
        }
        let other = "dataset metric x is not computed";
        assert!(warn(other, None));
        let failed = "openai_chat: model call failed code=model_failed";
        assert!(warn(failed, Some("mul")));
        assert!(!warn(failed, Some("cap")));
        assert!(!warn(failed, Some("add")));
        assert_eq!(
            repeated_warnings(),
            [
                "warning: 199 more like this one, not printed: model endpoint http://h:80/v1: \
                 429; retry # of 3 (task q-#)",
                "warning: 2 more like this one, not printed (tasks add, cap): openai_chat: model \
                 call failed code=model_failed",
            ]
        );
        // The counts start again.
        assert!(repeated_warnings().is_empty());
        assert!(warn(other, None));
        assert_eq!(shape_of("retry 12 of 3 in 0.5 s"), "retry # of # in #.# s");
        assert_eq!(
            split_task(" task_id=q-1 attempt=2 code=x"),
            (Some("q-1"), " code=x".to_string())
        );
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
