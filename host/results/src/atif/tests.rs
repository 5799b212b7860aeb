use serde_json::json;

use super::*;
use agentcompass_schema::atif::Source;

fn agent() -> AtifAgent {
    AtifAgent {
        name: "terminus-2".into(),
        version: "0.1.0".into(),
        model_name: Some("scripted-model".into()),
    }
}

/// A record as terminus writes it: system prompt and instruction on step 1, a call per step,
/// a failed call, and the attempt's usage.
fn terminus_record() -> Value {
    json!({
        "trajectory": {"schema_version": "ACTF_v1.0", "steps": [
            {"step_id": 1, "system_prompt": "You are an agent.", "user_content": "Say hi.",
             "tools": [{"name": "bash", "description": "run", "parameters": {"type": "object"}}],
             "assistant_content": {"content": "Looking.", "reasoning_content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
             "observation": [{"tool_call_id": "call_1", "tool": "bash", "command": "ls",
                "exit_code": 0, "output": "a.txt\n", "duration_ms": 3}],
             "metric": {"prompt_tokens_len": 100, "completion_tokens_len": 10,
                "llm_infer_ms": 5.0, "stop_reason": "tool_calls"},
             "started_at": "2026-12-07T10:00:00Z", "finished_at": "2026-12-07T10:00:01Z"},
            {"step_id": 2, "system_prompt": null, "user_content": null,
             "assistant_content": {"content": null, "reasoning_content": "think",
                "tool_calls": [{"id": "call_2", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"false\"}"}}]},
             "observation": [{"tool_call_id": "call_2", "command": "false", "exit_code": 1,
                "output": "", "timed_out": false}],
             "metric": {"prompt_tokens_len": 150, "completion_tokens_len": 12}}
        ]},
        "meta": {"harness": {"telemetry": {"agent": "terminus",
            "model_usage": {"prompt_tokens": 250, "completion_tokens": 22,
                "cached_tokens": 90, "cost_usd": 0.0021, "requests": 2}}}}
    })
}

#[test]
fn a_terminus_attempt_becomes_system_user_and_agent_steps() {
    let doc = attempt_trajectory(&terminus_record(), &agent(), "run__task__1").unwrap();
    assert_eq!(doc.problems(), Vec::<String>::new());
    let sources: Vec<Source> = doc.steps.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [Source::System, Source::User, Source::Agent, Source::Agent]
    );
    let first = &doc.steps[2];
    assert_eq!(first.message, json!("Looking."));
    let call = &first.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.function_name, "bash");
    assert_eq!(call.arguments["command"], json!("ls"));
    let result = &first.observation.as_ref().unwrap().results[0];
    assert_eq!(result.source_call_id.as_deref(), Some("call_1"));
    assert_eq!(result.content, Some(json!("a.txt\n")));
    assert_eq!(first.metrics.as_ref().unwrap().prompt_tokens, Some(100));
    // The failed call: its exit code on the result.
    let failed = &doc.steps[3].observation.as_ref().unwrap().results[0];
    assert_eq!(failed.extra.as_ref().unwrap()["exit_code"], json!(1));
    assert_eq!(doc.steps[3].reasoning_content.as_deref(), Some("think"));
    // Totals are the attempt's recorded usage, not the steps' sums.
    let totals = doc.final_metrics.as_ref().unwrap();
    assert_eq!(totals.total_prompt_tokens, Some(250));
    assert_eq!(totals.total_cached_tokens, Some(90));
    assert_eq!(totals.total_completion_tokens, Some(22));
    assert_eq!(totals.total_cost_usd, Some(0.0021));
    assert_eq!(totals.total_steps, Some(4));
    let tools = doc.agent.tool_definitions.as_ref().unwrap();
    assert_eq!(tools[0]["function"]["name"], json!("bash"));
    assert_eq!(doc.session_id.as_deref(), Some("run__task__1"));
}

#[test]
fn an_observation_without_a_call_gets_one_of_its_own() {
    // The oracle: a command and its streams, no model call.
    let record = json!({"trajectory": {"steps": [{"step_id": 1,
        "user_content": "bash /solution/solve.sh",
        "assistant_content": {"content": null, "reasoning_content": null, "tool_calls": null},
        "observation": [{"command": "bash /solution/solve.sh", "exit_code": 0,
            "stdout": "done\n", "stderr": "", "duration_ms": 20}],
        "metric": {"env_action_ms": 20.0}}]}});
    let doc = attempt_trajectory(&record, &agent(), "s").unwrap();
    assert_eq!(doc.problems(), Vec::<String>::new());
    let step = &doc.steps[1];
    let call = &step.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.tool_call_id, "2-1");
    assert_eq!(call.arguments["command"], json!("bash /solution/solve.sh"));
    let result = &step.observation.as_ref().unwrap().results[0];
    assert_eq!(result.content, Some(json!("done\n")));
    assert!(step.metrics.is_none());
    assert_eq!(
        doc.final_metrics.as_ref().unwrap().total_prompt_tokens,
        None
    );
}

#[test]
fn no_steps_no_document_and_usage_summed_when_not_recorded() {
    assert!(attempt_trajectory(&json!({"trajectory": null}), &agent(), "s").is_none());
    assert!(attempt_trajectory(&json!({"trajectory": {"steps": []}}), &agent(), "s").is_none());
    let mut record = terminus_record();
    record["meta"] = json!({});
    let doc = attempt_trajectory(&record, &agent(), "s").unwrap();
    let totals = doc.final_metrics.unwrap();
    assert_eq!(totals.total_prompt_tokens, Some(250));
    assert_eq!(totals.total_completion_tokens, Some(22));
    assert_eq!(totals.total_cached_tokens, None);
}

#[test]
fn harbor_names_of_the_harnesses() {
    assert_eq!(harbor_agent_name("claude_code"), "claude-code");
    assert_eq!(harbor_agent_name("codex"), "codex");
    assert_eq!(harbor_agent_name("openai_chat"), "openai_chat");
}

#[test]
fn atif_reads_back_as_the_steps_it_came_from() {
    let doc = attempt_trajectory(&terminus_record(), &agent(), "s").unwrap();
    let back = to_actf(&doc);
    assert_eq!(back.steps.len(), 2);
    let first = &back.steps[0];
    assert_eq!(first.system_prompt.as_deref(), Some("You are an agent."));
    assert_eq!(first.user_content, json!("Say hi."));
    assert_eq!(first.assistant_content.content.as_deref(), Some("Looking."));
    let call = &first.assistant_content.tool_calls[0];
    assert_eq!(call["id"], json!("call_1"));
    assert_eq!(call["function"]["arguments"], json!("{\"command\":\"ls\"}"));
    assert_eq!(first.observation[0]["tool_call_id"], json!("call_1"));
    assert_eq!(first.observation[0]["output"], json!("a.txt\n"));
    assert_eq!(first.metric.prompt_tokens_len, Some(100));
    assert_eq!(
        back.steps[1].assistant_content.reasoning_content.as_deref(),
        Some("think")
    );
}

#[test]
fn a_subagent_becomes_a_trajectory_of_its_own_referenced_by_its_call() {
    let record = json!({"trajectory": {"steps": [
        {"step_id": 1, "user_content": "Count the files.",
         "assistant_content": {"content": null, "tool_calls": [
            {"id": "t1", "name": "Agent", "arguments": {"prompt": "SUB"}}]},
         "observation": [{"tool_call_id": "t1", "output": "3 files",
            "subagent": {"steps": [
                {"step_id": 1, "user_content": "SUB",
                 "assistant_content": {"tool_calls": [
                    {"id": "b1", "name": "Bash", "arguments": {"command": "ls | wc -l"}}]},
                 "observation": [{"tool_call_id": "b1", "output": "3"}],
                 "metric": {"prompt_tokens_len": 50, "completion_tokens_len": 5}}]}}]},
        {"step_id": 2, "assistant_content": {"content": "3 files."}}]}});
    let doc = attempt_trajectory(&record, &agent(), "run__task__attempt-1").unwrap();
    assert_eq!(doc.problems(), Vec::<String>::new());
    let subs = doc.subagent_trajectories.as_ref().unwrap();
    assert_eq!(subs.len(), 1);
    let id = subs[0].trajectory_id.clone().unwrap();
    assert_eq!(id, "run__task__attempt-1__subagent-1");
    let result = &doc.steps[1].observation.as_ref().unwrap().results[0];
    let reference = &result.subagent_trajectory_ref.as_ref().unwrap()[0];
    assert_eq!(reference.trajectory_id.as_deref(), Some(id.as_str()));
    assert_eq!(
        subs[0].steps[1].tool_calls.as_ref().unwrap()[0].function_name,
        "Bash"
    );
    assert_eq!(
        subs[0].final_metrics.as_ref().unwrap().total_prompt_tokens,
        Some(50)
    );
}
