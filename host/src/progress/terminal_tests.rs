//! The terminal sinks' tests: line fitting, aggregation, throttling, the build phase.

use super::*;

/// A cloneable in-memory output.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.0)).into_owned()
    }
}

fn view(label: &str, total: u64, finished: u64, status: &str) -> ProgressSnapshotView {
    ProgressSnapshotView {
        label: label.into(),
        elapsed_seconds: 12.0,
        retrying: 0,
        score: Some("correct 84.20%".into()),
        total,
        finished,
        completed: finished,
        failed: 1,
        error: 2,
        running: 3,
        reused: 4,
        status: serde_json::from_value(serde_json::json!(status)).unwrap(),
        model_limit: None,
        images: None,
    }
}

#[test]
fn a_rate_limited_endpoint_shows_its_limit_and_waiting_calls() {
    let mut limited = view("bench/model", 40, 12, "running");
    limited.model_limit = Some((4, 32, 7));
    assert!(
        plain_line(&limited)
            .ends_with("| running 3 · failed 1 · error 2 · reused 4 · model 4/32 (7 waiting)"),
        "{}",
        plain_line(&limited)
    );
}

#[test]
fn plain_line_format() {
    assert_eq!(
        plain_line(&view("bench/model", 40, 12, "running")),
        "Progress | bench/model [######--------------] 12/40 30% | 0:12 · 0.7/s · ETA \
         0:42 | correct 84.20% | running 3 · failed 1 · error 2 · reused 4"
    );
    let mut fresh = view("x", 0, 0, "created");
    fresh.score = None;
    fresh.reused = 0;
    assert_eq!(
        plain_line(&fresh),
        "Progress | x [--------------------] 0/0 0% | 0:12 | running 3 · failed 1 · error 2 \
         | created"
    );
    assert!(plain_line(&view("x", 5, 5, "completed")).contains("[####################] 5/5 100%"));
    // More finished than total (inconsistent input) never overflows the bar.
    assert!(plain_line(&view("x", 5, 7, "running")).contains("] 7/5 100%"));
    assert_eq!(clock(3725.4), "1:02:05");
}

#[test]
fn a_line_keeps_what_matters_most_as_the_terminal_narrows() {
    let v = view("qa/scripted-model", 40, 12, "running");
    let mut previous = usize::MAX;
    for width in [200, 100, 80, 60, 40, 20] {
        let line = progress_text(&v, Some(width));
        let len = line.chars().count();
        assert!(len <= width, "{width}: {line}");
        assert!(len <= previous, "{width}: {line}");
        assert!(line.contains("12/40 30%"), "{width}: {line}");
        previous = len;
    }
    assert_eq!(
        progress_text(&v, Some(80)),
        "[###-------] 12/40 30% | 0:12 · 0.7/s · ETA 0:42 | correct 84.20%"
    );
}

#[test]
fn aggregation_of_requests() {
    let mut agg = Aggregate::default();
    agg.record(&view("a", 10, 5, "running"));
    assert_eq!(agg.combined(), view("a", 10, 5, "running"));
    agg.record(&view("b", 20, 1, "created"));
    agg.record(&view("a", 10, 6, "running"));
    let sum = agg.combined();
    assert_eq!(sum.label, "2 requests");
    assert_eq!((sum.total, sum.finished, sum.running), (30, 7, 6));
    assert_eq!((sum.failed, sum.error, sum.reused), (2, 4, 8));
    assert_eq!(sum.status, RunStatus::Running);
    assert!(!agg.all_finished());
    agg.finish(&view("a", 10, 10, "completed"));
    agg.finish(&view("b", 20, 20, "failed"));
    assert!(agg.all_finished());
    assert_eq!(agg.combined().status, RunStatus::Failed);
    assert_eq!(
        combined_status([RunStatus::Completed, RunStatus::Completed].into_iter()),
        RunStatus::Completed
    );
}

#[test]
fn plain_sink_throttles_and_prints_at_finish() {
    let out = Shared::default();
    let sink = PlainSink::with_output(Box::new(out.clone()), Duration::from_secs(3600));
    sink.update(&view("a", 10, 1, "running"));
    sink.update(&view("a", 10, 2, "running"));
    sink.update(&view("b", 10, 0, "running"));
    sink.finish(&view("a", 10, 10, "completed"));
    assert_eq!(out.text().lines().count(), 1, "{}", out.text());
    sink.finish(&view("b", 10, 10, "completed"));
    let text = out.text();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("a [##"), "{text}");
    assert!(
        lines[1].starts_with("Progress | 2 requests [####################] 20/20 100%"),
        "{text}"
    );
    assert!(lines[1].ends_with("| completed"), "{text}");
}

#[test]
fn the_build_phase_prints_each_image_built() {
    let out = Shared::default();
    let sink = PlainSink::with_output(Box::new(out.clone()), Duration::from_secs(3600));
    let mut building = view("a", 50, 0, "running");
    building.images = Some((0, 3));
    sink.update(&building);
    building.images = Some((1, 3));
    sink.update(&building);
    sink.update(&building);
    building.images = None;
    sink.update(&building);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("| images 0/3 · running "), "{text}");
    assert!(lines[1].contains("| images 1/3 · running "), "{text}");
}

#[test]
fn bar_sink_redraws_one_line() {
    let out = Shared::default();
    let sink = BarSink::with_output(Box::new(out.clone()), Duration::ZERO, Some(30));
    sink.update(&view("a", 10, 1, "running"));
    sink.update(&view("a", 10, 2, "running"));
    sink.finish(&view("a", 10, 10, "completed"));
    let text = out.text();
    assert_eq!(text.matches('\r').count(), 3, "{text:?}");
    assert_eq!(text.matches("\x1b[K").count(), 3, "{text:?}");
    assert!(text.ends_with("\x1b[K\n"), "{text:?}");
    assert_eq!(text.matches('\n').count(), 1, "{text:?}");
    for frame in text.split('\r').filter(|f| !f.is_empty()) {
        let visible = frame.trim_end_matches('\n').trim_end_matches("\x1b[K");
        assert!(visible.chars().count() <= 29, "{frame:?}");
    }
}

#[test]
fn terminal_for_modes() {
    let every = Duration::from_secs(10);
    assert!(terminal_for(ProgressMode::None, every).is_none());
    assert!(terminal_for(ProgressMode::Plain, every).is_some());
    // Under the test harness stderr is normally not a terminal.
    if !std::io::stderr().is_terminal() {
        assert!(terminal_for(ProgressMode::Auto, every).is_none());
    }
}
