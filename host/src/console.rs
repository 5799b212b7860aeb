//! Standard error as the log lines and the progress bar share it: while a bar is on screen, a
//! log line clears it, is written above it, and the bar is drawn again below, so a line is
//! never printed onto the bar.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The bar on screen (its text, without the leading `\r`), if any.
static BAR: Mutex<Option<String>> = Mutex::new(None);

fn bar() -> MutexGuard<'static, Option<String>> {
    BAR.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Clears the line the cursor is on (the bar's).
const CLEAR_LINE: &[u8] = b"\r\x1b[K";

/// Writes `text` (whole lines) to standard error above the bar. Terminal output failures
/// never break the run.
pub fn write_lines(text: &str) {
    let shown = bar();
    let mut err = std::io::stderr().lock();
    if shown.is_some() {
        let _ = err.write_all(CLEAR_LINE);
    }
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
    if let Some(bar) = shown.as_deref() {
        let _ = err.write_all(bar.as_bytes());
    }
    let _ = err.flush();
}

/// Draws the bar (one line, no newline) in place of the one on screen; `end` leaves it on
/// screen with a newline, as the last frame.
pub fn draw_bar(text: &str, end: bool) {
    let mut shown = bar();
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(CLEAR_LINE);
    let _ = err.write_all(text.as_bytes());
    if end {
        let _ = err.write_all(b"\n");
        *shown = None;
    } else {
        *shown = Some(text.to_string());
    }
    let _ = err.flush();
}

/// The width of the terminal `stream` is (now: a resize is seen at the next call), else
/// `$COLUMNS`; `None` for neither (a pipe or a file without `$COLUMNS`).
pub fn columns_of(stream: impl std::os::fd::AsFd) -> Option<usize> {
    terminal_size::terminal_size_of(stream)
        .map(|(width, _)| usize::from(width.0))
        .or_else(|| {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse::<usize>().ok())
        })
        .filter(|c| *c > 1)
}

/// `eprintln!` that keeps the bar below the line.
#[macro_export]
macro_rules! console_line {
    ($($arg:tt)*) => {
        $crate::console::write_lines(&format!($($arg)*))
    };
}
