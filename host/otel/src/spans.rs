//! The span list being built: deterministic ids (sha256 of the run's seed and a span's key,
//! as `harbor-atif2otel` derives its ids from a trajectory's session), explicit times, and
//! attributes collected only when they have a value.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use sha2::{Digest, Sha256};

/// The instrumentation scope's name (and the resource's `telemetry.sdk.name`).
pub const SCOPE_NAME: &str = "agentcompass-host";

/// A span's attributes, each added only when present.
#[derive(Debug, Default)]
pub(crate) struct Attrs(pub(crate) Vec<KeyValue>);

impl Attrs {
    pub(crate) fn str(&mut self, key: &'static str, value: impl Into<String>) -> &mut Self {
        self.0
            .push(KeyValue::new(key, Value::String(value.into().into())));
        self
    }

    pub(crate) fn opt_str(&mut self, key: &'static str, value: Option<&str>) -> &mut Self {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.str(key, v.to_string());
        }
        self
    }

    pub(crate) fn int(&mut self, key: &'static str, value: Option<u64>) -> &mut Self {
        if let Some(v) = value {
            self.0
                .push(KeyValue::new(key, i64::try_from(v).unwrap_or(i64::MAX)));
        }
        self
    }

    pub(crate) fn float(&mut self, key: &'static str, value: Option<f64>) -> &mut Self {
        if let Some(v) = value {
            self.0.push(KeyValue::new(key, v));
        }
        self
    }

    pub(crate) fn boolean(&mut self, key: &'static str, value: Option<bool>) -> &mut Self {
        if let Some(v) = value {
            self.0.push(KeyValue::new(key, v));
        }
        self
    }

    /// An attribute whose key is built at run time (`agentcompass.metric.<id>`).
    pub(crate) fn dynamic(&mut self, key: String, value: Value) -> &mut Self {
        self.0.push(KeyValue::new(key, value));
        self
    }
}

/// One span to add.
#[derive(Debug)]
pub(crate) struct NewSpan {
    /// What makes its id (unique in the trace).
    pub(crate) key: String,
    pub(crate) parent: Option<SpanId>,
    pub(crate) name: String,
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) attrs: Attrs,
    /// An error's description (`None`: OK).
    pub(crate) error: Option<String>,
}

/// The spans of one trace (one run).
#[derive(Debug)]
pub(crate) struct Spans {
    trace_id: TraceId,
    trace_hex: String,
    pub(crate) out: Vec<SpanData>,
}

impl Spans {
    /// An empty list in the trace of `seed` (the run's identity).
    pub(crate) fn new(seed: &str) -> Spans {
        let digest = Sha256::digest(format!("agentcompass-otel:{seed}").as_bytes());
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        let trace_id = TraceId::from_bytes(bytes);
        Spans {
            trace_id,
            trace_hex: format!("{trace_id:032x}"),
            out: Vec::new(),
        }
    }

    /// The id of the span named `key` in this trace.
    pub(crate) fn id(&self, key: &str) -> SpanId {
        let digest = Sha256::digest(format!("{}:{key}", self.trace_hex).as_bytes());
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[..8]);
        SpanId::from_bytes(bytes)
    }

    /// Adds `span` and returns its id.
    pub(crate) fn push(&mut self, span: NewSpan) -> SpanId {
        let id = self.id(&span.key);
        let context = SpanContext::new(
            self.trace_id,
            id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let end = span.end.max(span.start);
        self.out.push(SpanData {
            span_context: context,
            parent_span_id: span.parent.unwrap_or(SpanId::INVALID),
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(span.name),
            start_time: span.start,
            end_time: end,
            attributes: span.attrs.0,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: match span.error {
                None => Status::Ok,
                Some(description) => Status::error(description),
            },
            instrumentation_scope: InstrumentationScope::builder(SCOPE_NAME)
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        });
        id
    }
}

/// An RFC 3339 time as a `SystemTime` (`None`: absent or unreadable).
pub(crate) fn parse_time(text: Option<&str>) -> Option<SystemTime> {
    let ts: jiff::Timestamp = text?.parse().ok()?;
    let nanos = u64::try_from(ts.as_nanosecond()).ok()?;
    Some(UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// Seconds since the epoch (`progress.jsonl`'s timestamps) as a `SystemTime`.
pub(crate) fn from_epoch_seconds(seconds: f64) -> Option<SystemTime> {
    (seconds.is_finite() && seconds >= 0.0).then(|| UNIX_EPOCH + Duration::from_secs_f64(seconds))
}

/// Milliseconds as a duration (negative or absent: none).
pub(crate) fn millis(ms: Option<f64>) -> Option<Duration> {
    ms.filter(|m| m.is_finite() && *m >= 0.0)
        .map(|m| Duration::from_secs_f64(m / 1000.0))
}
