//! Terminal progress sinks: a plain line every 10 s or as set ([`PlainSink`]) or a redrawn bar
//! on a TTY ([`BarSink`]), fitted to the terminal's width as it is at each frame. Both
//! aggregate the requests of an orchestration and show the same figures: done and total,
//! elapsed time, rate and ETA, the headline so far, and the running, retrying, failed, error
//! and reused counts.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agentcompass_results::status::RunStatus;

use serde::{Deserialize, Serialize};

/// Progress display mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProgressMode {
    /// A live bar on a terminal, nothing otherwise.
    #[default]
    Auto,
    /// Plain progress lines.
    Plain,
    /// No terminal progress (files only).
    None,
}

/// The counts a terminal sink shows for one request (or, summed, for several).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressSnapshotView {
    /// Request label (request name, or `benchmark/model`).
    pub label: String,
    /// Seconds since the request started (when it ended, for a finished one).
    pub elapsed_seconds: f64,
    /// Tasks waiting to retry an attempt.
    pub retrying: u64,
    /// The headline so far (`correct 84.20%`), once a task was evaluated.
    pub score: Option<String>,
    /// Tasks in the run.
    pub total: u64,
    /// Finished tasks (including reused ones).
    pub finished: u64,
    /// Completed tasks.
    pub completed: u64,
    /// Failed tasks (highest severity fatal).
    pub failed: u64,
    /// Tasks whose highest severity is error.
    pub error: u64,
    /// Running tasks.
    pub running: u64,
    /// Reused tasks.
    pub reused: u64,
    /// Run status.
    pub status: RunStatus,
    /// A model endpoint whose limit is below its maximum or has calls waiting: `(limit,
    /// max, waiting)`.
    pub model_limit: Option<(u32, u32, u32)>,
    /// While the build phase runs: the tasks' own images ready, of the total.
    pub images: Option<(u64, u64)>,
}

/// Where a request's progress is shown on the terminal. Implementations must be cheap and
/// must never fail the run.
pub trait TerminalSink: Send + Sync {
    /// The latest view of one request (keyed by its label).
    fn update(&self, snapshot: &ProgressSnapshotView);
    /// The final view of one request.
    fn finish(&self, snapshot: &ProgressSnapshotView);
}

/// The terminal sink for a progress mode: `Auto` → [`BarSink`] when stderr is a terminal,
/// else none; `Plain` → [`PlainSink`] printing every `plain_interval`; `None` → none.
pub fn terminal_for(mode: ProgressMode, plain_interval: Duration) -> Option<Arc<dyn TerminalSink>> {
    match mode {
        ProgressMode::Auto if std::io::stderr().is_terminal() => Some(Arc::new(BarSink::new())),
        ProgressMode::Auto | ProgressMode::None => None,
        ProgressMode::Plain => Some(Arc::new(PlainSink::with_output(
            Box::new(std::io::stderr()),
            plain_interval,
        ))),
    }
}

/// Width of the `[####----]` bar, and the narrower one of a narrow terminal.
const BAR_WIDTH: u64 = 20;
const NARROW_BAR_WIDTH: u64 = 10;

/// `M:SS`, or `H:MM:SS` from an hour.
fn clock(seconds: f64) -> String {
    let total = seconds.max(0.0).round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The parts of a progress line, from the most to the least needed.
struct Parts {
    label: String,
    done: u64,
    total: u64,
    time: String,
    rate: Option<String>,
    score: Option<String>,
    counts: String,
    status: Option<String>,
}

impl Parts {
    fn of(view: &ProgressSnapshotView) -> Self {
        let ran = view.finished.saturating_sub(view.reused);
        let remaining = view.total.saturating_sub(view.finished);
        let rate = (ran > 0 && view.elapsed_seconds > 0.0 && remaining > 0).then(|| {
            let per_second = ran as f64 / view.elapsed_seconds;
            let shown = if per_second >= 10.0 {
                format!("{per_second:.0}")
            } else if per_second >= 0.1 {
                format!("{per_second:.1}")
            } else {
                format!("{per_second:.2}")
            };
            format!("{shown}/s · ETA {}", clock(remaining as f64 / per_second))
        });
        let mut counts = match view.images {
            Some((built, total)) => format!("images {built}/{total} · running {}", view.running),
            None => format!("running {}", view.running),
        };
        for (name, n) in [
            ("retrying", view.retrying),
            ("failed", view.failed),
            ("error", view.error),
            ("reused", view.reused),
        ] {
            if n > 0 {
                let _ = write!(counts, " · {name} {n}");
            }
        }
        if let Some((limit, max, waiting)) = view.model_limit {
            let _ = write!(counts, " · model {limit}/{max}");
            if waiting > 0 {
                let _ = write!(counts, " ({waiting} waiting)");
            }
        }
        Parts {
            label: view.label.clone(),
            done: view.finished,
            total: view.total,
            time: clock(view.elapsed_seconds),
            rate,
            score: view.score.clone(),
            counts,
            status: (view.status != RunStatus::Running).then(|| view.status.to_string()),
        }
    }

    /// The line with a bar of `bar` cells (none: no bar) and the optional parts kept.
    fn render(&self, bar: Option<u64>, label: bool, rate: bool, counts: bool) -> String {
        let total = self.total;
        let done = self.done.min(total);
        let pct = (done * 100).checked_div(total).unwrap_or(0);
        let mut line = String::with_capacity(160);
        if label {
            line.push_str(&self.label);
            line.push(' ');
        }
        if let Some(width) = bar {
            let filled = (done * width).checked_div(total).unwrap_or(0);
            line.push('[');
            for i in 0..width {
                line.push(if i < filled { '#' } else { '-' });
            }
            line.push_str("] ");
        }
        let _ = write!(line, "{}/{} {pct}% | {}", self.done, self.total, self.time);
        if let (true, Some(rate)) = (rate, &self.rate) {
            let _ = write!(line, " · {rate}");
        }
        if let Some(score) = &self.score {
            let _ = write!(line, " | {score}");
        }
        if counts {
            let _ = write!(line, " | {}", self.counts);
        }
        if let Some(status) = &self.status {
            let _ = write!(line, " | {status}");
        }
        line
    }

    /// The richest rendering that fits `width` columns (cut to it when none does).
    fn fitted(&self, width: Option<usize>) -> String {
        let full = self.render(Some(BAR_WIDTH), true, true, true);
        let Some(width) = width else {
            return full;
        };
        let fits = |line: &String| line.chars().count() <= width;
        if fits(&full) {
            return full;
        }
        // A narrower bar first, then the label (one request's is in the results path), then
        // the counts, the bar, and the rate.
        let variants = [
            (Some(NARROW_BAR_WIDTH), true, true, true),
            (Some(NARROW_BAR_WIDTH), false, true, true),
            (Some(NARROW_BAR_WIDTH), false, true, false),
            (None, false, true, false),
            (None, false, false, false),
        ];
        for (bar, label, rate, counts) in variants {
            let line = self.render(bar, label, rate, counts);
            if fits(&line) {
                return line;
            }
        }
        self.render(None, false, false, false)
            .chars()
            .take(width)
            .collect()
    }
}

/// The text of a progress line fitted to `width` columns when given, e.g. `qa/m
/// [######--------------] 12/40 30% | 0:12 · 4.1/s · ETA 0:07 | correct 84.20% | running 3
/// · failed 1` (the rate in tasks a second); a request that is not running says its status
/// last.
pub fn progress_text(view: &ProgressSnapshotView, width: Option<usize>) -> String {
    Parts::of(view).fitted(width)
}

/// The line [`PlainSink`] prints: `Progress | ` and [`progress_text`].
pub fn plain_line(view: &ProgressSnapshotView) -> String {
    format!("Progress | {}", progress_text(view, None))
}

/// The overall status of several requests: the most active one (`running` before
/// `summarizing` before `created`), else the first non-`completed` terminal status, else
/// `completed`.
fn combined_status(statuses: impl Iterator<Item = RunStatus> + Clone) -> RunStatus {
    for candidate in [
        RunStatus::Running,
        RunStatus::Summarizing,
        RunStatus::Created,
    ] {
        if statuses.clone().any(|s| s == candidate) {
            return candidate;
        }
    }
    statuses
        .clone()
        .find(|s| *s != RunStatus::Completed)
        .unwrap_or(RunStatus::Completed)
}

/// The latest view of each request, and which requests finished.
#[derive(Debug, Default)]
struct Aggregate {
    views: BTreeMap<String, ProgressSnapshotView>,
    finished: BTreeSet<String>,
}

impl Aggregate {
    fn record(&mut self, view: &ProgressSnapshotView) {
        match self.views.get_mut(&view.label) {
            Some(slot) => slot.clone_from(view),
            None => {
                self.views.insert(view.label.clone(), view.clone());
            }
        }
    }

    fn finish(&mut self, view: &ProgressSnapshotView) {
        self.record(view);
        self.finished.insert(view.label.clone());
    }

    fn all_finished(&self) -> bool {
        self.views.keys().all(|label| self.finished.contains(label))
    }

    /// The single view, or the sum with label `<n> requests`.
    fn combined(&self) -> ProgressSnapshotView {
        let mut views = self.views.values();
        if self.views.len() == 1 {
            if let Some(view) = views.next() {
                return view.clone();
            }
        }
        let mut sum = ProgressSnapshotView {
            label: format!("{} requests", self.views.len()),
            status: combined_status(self.views.values().map(|v| v.status)),
            ..ProgressSnapshotView::default()
        };
        for v in views {
            sum.elapsed_seconds = sum.elapsed_seconds.max(v.elapsed_seconds);
            sum.retrying += v.retrying;
            sum.total += v.total;
            sum.finished += v.finished;
            sum.completed += v.completed;
            sum.failed += v.failed;
            sum.error += v.error;
            sum.running += v.running;
            sum.reused += v.reused;
            sum.model_limit = sum.model_limit.or(v.model_limit);
            sum.images = match (sum.images, v.images) {
                (Some((a, b)), Some((c, d))) => Some((a + c, b + d)),
                (one, other) => one.or(other),
            };
        }
        sum
    }
}

/// Output stream of a sink.
type Output = Box<dyn Write + Send>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a throttled draw is due.
fn due(last: Option<Instant>, now: Instant, interval: Duration) -> bool {
    last.is_none_or(|last| now.duration_since(last) >= interval)
}

struct PlainState {
    aggregate: Aggregate,
    last_draw: Option<Instant>,
    /// The build phase's count in the last line printed.
    last_images: Option<(u64, u64)>,
    out: Output,
}

/// Prints [`plain_line`] to stderr at most every 10 s, at each step of the build phase
/// (`images 3/9`), and when every request has finished.
pub struct PlainSink {
    interval: Duration,
    state: Mutex<PlainState>,
}

impl PlainSink {
    /// A sink writing to stderr every 10 s.
    pub fn new() -> Self {
        Self::with_output(Box::new(std::io::stderr()), Duration::from_secs(10))
    }

    /// A sink writing to `out` at most every `interval`.
    pub fn with_output(out: Box<dyn Write + Send>, interval: Duration) -> Self {
        PlainSink {
            interval,
            state: Mutex::new(PlainState {
                aggregate: Aggregate::default(),
                last_draw: None,
                last_images: None,
                out,
            }),
        }
    }

    fn draw(state: &mut PlainState, now: Instant) {
        let view = state.aggregate.combined();
        state.last_images = view.images;
        let mut line = plain_line(&view);
        line.push('\n');
        // Terminal output failures never break the run.
        let _ = state.out.write_all(line.as_bytes());
        let _ = state.out.flush();
        state.last_draw = Some(now);
    }
}

impl Default for PlainSink {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalSink for PlainSink {
    fn update(&self, snapshot: &ProgressSnapshotView) {
        let mut state = lock(&self.state);
        state.aggregate.record(snapshot);
        let now = Instant::now();
        // No `0/0` line before the tasks are known.
        let view = state.aggregate.combined();
        let images_moved = view.images.is_some() && view.images != state.last_images;
        if view.total > 0 && (images_moved || due(state.last_draw, now, self.interval)) {
            Self::draw(&mut state, now);
        }
    }

    fn finish(&self, snapshot: &ProgressSnapshotView) {
        let mut state = lock(&self.state);
        state.aggregate.finish(snapshot);
        let now = Instant::now();
        if state.aggregate.all_finished() || due(state.last_draw, now, self.interval) {
            Self::draw(&mut state, now);
        }
    }
}

struct BarState {
    aggregate: Aggregate,
    last_draw: Option<Instant>,
    /// A bar line is on screen without its final newline.
    line_open: bool,
}

/// Where a [`BarSink`] draws.
enum BarOutput {
    /// Standard error through [`crate::console`], which keeps log lines above the bar; the
    /// width is the terminal's at each frame (it follows resizes), else `$COLUMNS`.
    Console,
    /// A writer of a fixed width (tests).
    Fixed {
        out: Mutex<Output>,
        columns: Option<usize>,
    },
}

/// Redraws a single progress line on stderr (`\r` + clear to end of line) at most 10 times a
/// second, one column short of the terminal's width; ends it with a newline when every
/// request has finished. No frame is drawn before the tasks are known (no `0/0`).
pub struct BarSink {
    interval: Duration,
    output: BarOutput,
    state: Mutex<BarState>,
}

impl BarSink {
    /// A sink drawing on stderr, 10 times a second at most.
    pub fn new() -> Self {
        BarSink {
            interval: Duration::from_millis(100),
            output: BarOutput::Console,
            state: Mutex::new(BarState {
                aggregate: Aggregate::default(),
                last_draw: None,
                line_open: false,
            }),
        }
    }

    /// A sink drawing on `out` at most every `interval`, fitting lines to `columns - 1`
    /// characters when given.
    pub fn with_output(
        out: Box<dyn Write + Send>,
        interval: Duration,
        columns: Option<usize>,
    ) -> Self {
        BarSink {
            interval,
            output: BarOutput::Fixed {
                out: Mutex::new(out),
                columns,
            },
            state: Mutex::new(BarState {
                aggregate: Aggregate::default(),
                last_draw: None,
                line_open: false,
            }),
        }
    }

    fn draw(&self, state: &mut BarState, now: Instant, end_line: bool) {
        let view = state.aggregate.combined();
        if view.total == 0 && !end_line {
            return;
        }
        let columns = match &self.output {
            BarOutput::Console => crate::console::columns_of(std::io::stderr()),
            BarOutput::Fixed { columns, .. } => *columns,
        };
        // One column short: a line that fills the last column wraps on some terminals.
        let text = progress_text(&view, columns.map(|c| c - 1));
        match &self.output {
            BarOutput::Console => crate::console::draw_bar(&text, end_line),
            BarOutput::Fixed { out, .. } => {
                let mut line = String::with_capacity(text.len() + 8);
                line.push('\r');
                line.push_str(&text);
                line.push_str("\x1b[K");
                if end_line {
                    line.push('\n');
                }
                let mut out = lock(out);
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            }
        }
        state.last_draw = Some(now);
        state.line_open = !end_line;
    }
}

impl Default for BarSink {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalSink for BarSink {
    fn update(&self, snapshot: &ProgressSnapshotView) {
        let mut state = lock(&self.state);
        state.aggregate.record(snapshot);
        let now = Instant::now();
        if due(state.last_draw, now, self.interval) {
            self.draw(&mut state, now, false);
        }
    }

    fn finish(&self, snapshot: &ProgressSnapshotView) {
        let mut state = lock(&self.state);
        state.aggregate.finish(snapshot);
        let now = Instant::now();
        let end = state.aggregate.all_finished();
        if end || due(state.last_draw, now, self.interval) {
            self.draw(&mut state, now, end);
        }
    }
}

#[cfg(test)]
#[path = "terminal_tests.rs"]
mod tests;
