//! Forwards a plugin's `tracing` events and panic messages into the host.
//!
//! A plugin links its own copy of `tracing`, whose global dispatcher the host never sees. At
//! `init` the SDK installs, in the plugin's copy, a subscriber that hands every event to the
//! host's log service, which re-emits it into the host's `tracing` with the plugin's name.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use abi_stable::std_types::RStr;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use crate::abi::HostBox;
use crate::contracts::LogLevel;

static HOST: OnceLock<HostBox> = OnceLock::new();

/// Installs the forwarding subscriber (first call wins).
pub(crate) fn install(host: HostBox) {
    if HOST.set(host).is_err() {
        return;
    }
    let _ = tracing::subscriber::set_global_default(Forwarder {
        next_span: AtomicU64::new(1),
    });
}

/// Replaces the plugin's panic hook (its own copy of std's): every panic in a plugin is
/// contained and becomes an error carrying its message, so instead of printing to stderr the
/// hook records the location for that error and forwards the full text at debug level.
pub(crate) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        if let Some(location) = info.location() {
            crate::error::record_panic_location(location.to_string());
        }
        forward(LogLevel::Debug, "panic", &info.to_string());
    }));
}

fn forward(level: LogLevel, target: &str, message: &str) {
    if let Some(host) = HOST.get() {
        host.log(level as u8, RStr::from(target), RStr::from(message));
    }
}

struct Forwarder {
    next_span: AtomicU64,
}

fn level_of(level: &Level) -> LogLevel {
    match *level {
        Level::TRACE => LogLevel::Trace,
        Level::DEBUG => LogLevel::Debug,
        Level::INFO => LogLevel::Info,
        Level::WARN => LogLevel::Warn,
        _ => LogLevel::Error,
    }
}

#[derive(Default)]
struct Line(String);

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for Forwarder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::DEBUG
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = Line::default();
        event.record(&mut line);
        let metadata = event.metadata();
        forward(level_of(metadata.level()), metadata.target(), &line.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
