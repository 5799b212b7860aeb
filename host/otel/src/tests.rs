use agentcompass_schema::atif::{
    Agent, Metrics, Observation, ObservationResult, Source, Step, ToolCall, Trajectory,
};
use agentcompass_schema::attempt::AttemptRecord;
use serde_json::{json, Map, Value};

use crate::spans::Spans;
use crate::tree::{push_attempt, push_run, push_task, AttemptInput, RunMeta, SpanOptions};
use crate::SpanData;

const SECRET: &str = "sk-test-secret-in-a-message";

fn trajectory() -> Trajectory {
    let mut agent = Step::new(3, Source::Agent, json!("running it"));
    agent.timestamp = Some("2026-01-01T00:00:02Z".into());
    agent.tool_calls = Some(vec![ToolCall {
        tool_call_id: "c1".into(),
        function_name: "bash".into(),
        arguments: Map::from_iter([("command".to_string(), json!(format!("echo {SECRET}")))]),
        extra: None,
    }]);
    agent.observation = Some(Observation {
        results: vec![ObservationResult {
            source_call_id: Some("c1".into()),
            content: Some(json!(SECRET)),
            extra: Some(Map::from_iter([("duration_ms".to_string(), json!(500))])),
            ..Default::default()
        }],
    });
    agent.metrics = Some(Metrics {
        prompt_tokens: Some(100),
        completion_tokens: Some(7),
        cached_tokens: Some(20),
        extra: Some(Map::from_iter([("llm_infer_ms".to_string(), json!(250.0))])),
        ..Default::default()
    });
    let mut system = Step::new(1, Source::System, json!("be brief"));
    system.timestamp = Some("2026-01-01T00:00:01Z".into());
    let mut user = Step::new(2, Source::User, json!(format!("use {SECRET}")));
    user.timestamp = Some("2026-01-01T00:00:01Z".into());
    Trajectory {
        schema_version: "ATIF-v1.8".into(),
        session_id: Some("s".into()),
        trajectory_id: None,
        agent: Agent {
            name: "terminus-2".into(),
            version: "1".into(),
            model_name: Some("m".into()),
            ..Default::default()
        },
        steps: vec![system, user, agent],
        notes: None,
        final_metrics: None,
        continued_trajectory_ref: None,
        extra: None,
        subagent_trajectories: None,
    }
}

fn spans(content: bool) -> Vec<SpanData> {
    let record: AttemptRecord = serde_json::from_value(json!({
        "status": "completed",
        "metrics": {"reward": 1.0, "correct": true},
        "meta": {"harness": {"telemetry": {"model_usage": {"prompt_tokens": 100, "completion_tokens": 7, "cached_tokens": 20, "cost_usd": 0.5, "requests": 1}}}},
    }))
    .unwrap();
    let run = RunMeta {
        run_id: "r1".into(),
        model: "m".into(),
        ..Default::default()
    };
    let trajectories = vec![(None, trajectory())];
    let mut spans = Spans::new(&run.seed());
    let input = AttemptInput {
        task_id: "t1",
        attempt: 1,
        record: &record,
        trajectories: &trajectories,
        times: None,
    };
    let (start, end) = push_attempt(&mut spans, &run, &input, SpanOptions { content });
    push_task(&mut spans, "t1", 1, start, end);
    push_run(&mut spans, &run, start, end);
    spans.out
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn the_tree_has_its_shape_counts_and_reward() {
    let spans = spans(false);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        names,
        ["m", "bash", "agent run", "attempt 1", "task t1", "run r1"]
    );
    let id = |name: &str| named(&spans, name).span_context.span_id();
    let parent = |name: &str| named(&spans, name).parent_span_id;
    assert_eq!(parent("m"), id("agent run"));
    assert_eq!(parent("bash"), id("agent run"));
    assert_eq!(parent("agent run"), id("attempt 1"));
    assert_eq!(parent("attempt 1"), id("task t1"));
    assert_eq!(parent("task t1"), id("run r1"));
    assert_eq!(parent("run r1"), opentelemetry::trace::SpanId::INVALID);
    let llm = named(&spans, "m");
    assert_eq!(attr(llm, "openinference.span.kind"), Some(&"LLM".into()));
    assert_eq!(attr(llm, "llm.token_count.prompt"), Some(&100i64.into()));
    assert_eq!(attr(llm, "gen_ai.usage.output_tokens"), Some(&7i64.into()));
    assert_eq!(attr(llm, "llm.token_count.total"), Some(&107i64.into()));
    let from_start = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() % 10_000
    };
    // The step ran 1 s .. 2 s: the model call 250 ms, then the tool call 500 ms.
    assert_eq!(
        (from_start(llm.start_time), from_start(llm.end_time)),
        (1000, 1250)
    );
    let tool = named(&spans, "bash");
    assert_eq!(
        (from_start(tool.start_time), from_start(tool.end_time)),
        (1250, 1750)
    );
    assert_eq!(attr(tool, "tool.name"), Some(&"bash".into()));
    let attempt = named(&spans, "attempt 1");
    assert_eq!(attr(attempt, "agentcompass.reward"), Some(&1.0f64.into()));
    assert_eq!(
        attr(attempt, "agentcompass.metric.correct"),
        Some(&true.into())
    );
    assert_eq!(attr(attempt, "llm.cost.total"), Some(&0.5f64.into()));
    let trace = spans[0].span_context.trace_id();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));
}

#[test]
fn contents_only_when_asked() {
    let text = |spans: &[SpanData]| format!("{spans:?}");
    let hidden = spans(false);
    assert!(!text(&hidden).contains(SECRET));
    assert!(hidden
        .iter()
        .all(|s| attr(s, "input.value").is_none() && attr(s, "tool.parameters").is_none()));
    let shown = spans(true);
    let tool = named(&shown, "bash");
    let args: Value =
        serde_json::from_str(&attr(tool, "tool.parameters").unwrap().to_string()).unwrap();
    assert_eq!(args["command"], json!(format!("echo {SECRET}")));
    assert_eq!(attr(tool, "output.value"), Some(&SECRET.into()));
    let input = attr(named(&shown, "m"), "input.value").unwrap().to_string();
    assert!(input.contains("be brief"), "{input}");
}
