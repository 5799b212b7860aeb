//! The model endpoint inside the environment: an agent command (`cli_agent`) in a `no-network`
//! Harbor task calls the scripted model from inside the sandbox in all three protocols,
//! non-streaming and streaming (SSE), with
//! the placeholder token it was given; the real key is nowhere inside (environment variables,
//! `/proc/*/environ`, argv, the writable directories), nowhere in the results, and a wrong
//! token gets 401 without reaching the model. The calls' usage is the attempt's telemetry.

use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    files_containing, pack_run, published_results, run_dir, PluginDirs, Workspace,
};
use serde_json::json;

const KEY: &str = "sk-e2e-ENDPOINT-real-5517";

/// The agent: every call through the endpoint, a wrong token, and what it can see of itself.
const AGENT: &str = r#"
# curl where the environment has it (the sandbox shows the host's), else busybox wget.
post() { # URL AUTH-HEADER BODY: prints the answer
  if command -v curl >/dev/null; then
    curl -sS -m 20 -H "$2" -H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' -d "$3" "$1"
  else
    wget -q -T 20 -O - --header "$2" --header 'content-type: application/json' \
      --header 'anthropic-version: 2023-06-01' --post-data "$3" "$1"
  fi
  echo
}
status() { # URL AUTH-HEADER BODY: prints "status CODE"
  if command -v curl >/dev/null; then
    curl -sS -m 20 -o /dev/null -w 'status %{http_code}\n' -H "$2" -d "$3" "$1"
  else
    wget -S -T 20 -O /dev/null --header "$2" --post-data "$3" "$1" 2>&1 \
      | grep -o 'HTTP/1.[01] [0-9]*' | head -n 1 | sed 's/^HTTP.* /status /'
  fi
}
reach() { # URL: prints "direct reached" or "direct refused"
  if command -v curl >/dev/null; then
    curl -sS -m 5 -o /dev/null "$1" 2>/dev/null && echo "direct reached" || echo "direct refused"
  else
    wget -q -T 5 -O /dev/null "$1" 2>/dev/null && echo "direct reached" || echo "direct refused"
  fi
}
E="$OPENAI_BASE_URL"
OA="Authorization: Bearer $OPENAI_API_KEY"
AA="x-api-key: $ANTHROPIC_API_KEY"
mkdir -p /logs/artifacts/probe
{
  echo "== calls"
  post "$E/chat/completions" "$OA" '{"model":"m","messages":[{"role":"user","content":"chat-plain"}]}'
  post "$E/responses" "$OA" '{"model":"m","input":"responses-plain"}'
  post "$E/messages" "$AA" '{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"anthropic-plain"}]}'
  echo "== streams"
  post "$E/chat/completions" "$OA" '{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"chat-stream"}]}'
  post "$E/responses" "$OA" '{"model":"m","stream":true,"input":"responses-stream"}'
  post "$E/messages" "$AA" '{"model":"m","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"anthropic-stream"}]}'
  echo "== wrong token"
  status "$E/chat/completions" "Authorization: Bearer not-the-token" '{"model":"m","messages":[{"role":"user","content":"chat-wrong"}]}'
  echo "== direct"
  reach "http://MODEL_HOST/v1/models"
} > /logs/artifacts/calls.txt 2>&1
{
  echo "== env"; env
  echo "== environ"; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; echo; done
  echo "== cmdline"; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done
  echo "== end"
} > /logs/artifacts/probe/self.txt 2>&1
for dir in /app /tmp /logs/agent /logs/verifier "$HOME" /var/tmp; do
  [ -d "$dir" ] && [ -w "$dir" ] && cp -r "$dir" "/logs/artifacts/probe/copy$(echo "$dir" | tr / _)" 2>/dev/null
done
ls /logs/artifacts/probe > /logs/artifacts/probe/copied.txt
true
"#;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/harbor")
        .join("hello-file")
}

/// Runs the agent in `env` (`sandbox`, `docker`) against a scripted model that requires the
/// real key, and checks everything the module docs promise.
pub(crate) fn the_agent_reaches_the_model_through_the_endpoint_only(env: &str, extra: &[&str]) {
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "chat-plain"},
             "responses": [{"text": "chat says hi", "usage": {"prompt_tokens": 11, "completion_tokens": 2}}]},
            {"match": {"last_user_contains": "responses-plain"},
             "responses": [{"text": "responses says hi", "usage": {"prompt_tokens": 13, "completion_tokens": 3}}]},
            {"match": {"last_user_contains": "anthropic-plain"},
             "responses": [{"text": "anthropic says hi", "usage": {"prompt_tokens": 17, "completion_tokens": 5}}]},
            {"match": {"last_user_contains": "chat-stream"},
             "responses": [{"text": "chat streams", "usage": {"prompt_tokens": 19, "completion_tokens": 7}, "chunk_delay_ms": 5}]},
            {"match": {"last_user_contains": "responses-stream"},
             "responses": [{"text": "responses stream", "usage": {"prompt_tokens": 23, "completion_tokens": 11}, "chunk_delay_ms": 5}]},
            {"match": {"last_user_contains": "anthropic-stream"},
             "responses": [{"text": "anthropic streams", "usage": {"prompt_tokens": 29, "completion_tokens": 13}, "chunk_delay_ms": 5}]},
            {"responses": [{"text": "unexpected"}]}
        ]}),
        None,
    )
    .unwrap();
    let base_url = server.base_url();
    let model_host = base_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let packs = dirs.package("packs", "harbor-pack");
    dirs.package("packs", "agents-pack");
    if env == "docker" || env == "podman" {
        dirs.package("packs", "docker-provider");
    }
    let harness = json!({"command": AGENT.replace("MODEL_HOST", &model_host)}).to_string();
    let task = json!({"path": examples()}).to_string();
    let mut args = pack_run(
        &packs,
        ["harbor", "cli_agent", "m"],
        &task,
        &[
            "--harness-params",
            &harness,
            "--model-base-url",
            &base_url,
            "--model-api-key",
            "${E2E_KEY}",
            "--env",
            env,
            "--execution-params",
            r#"{"save_artifacts": true}"#,
        ],
    );
    args.extend_from_slice(extra);
    let out = ws.run_ok(&args, &[("E2E_KEY", KEY)]);
    let run = run_dir(&out);
    let results = published_results(&run);
    let (attempt, result) = &results["hello-file"];
    let artifact = |name: &str| {
        std::fs::read_to_string(attempt.join("artifacts/logs/artifacts").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}; {result}"))
    };

    // Every protocol answered through the endpoint; the wrong token did not get through and
    // the model itself is out of reach.
    let calls = artifact("calls.txt");
    for answer in ["chat says hi", "responses says hi", "anthropic says hi"] {
        assert!(calls.contains(answer), "{answer}: {calls}");
    }
    let streams = calls.split("== streams").nth(1).unwrap_or_default();
    for end in [
        "data: [DONE]",
        "event: response.completed",
        "event: message_stop",
    ] {
        assert!(streams.contains(end), "{end}: {streams}");
    }
    assert!(calls.contains("status 401"), "{calls}");
    assert!(calls.contains("direct refused"), "{calls}");
    let asked: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r["body"].to_string())
        .collect();
    assert_eq!(
        asked.len(),
        6,
        "only the six good calls reached the model: {asked:?}"
    );
    assert!(!asked.iter().any(|b| b.contains("chat-wrong")), "{asked:?}");

    // The usage of the six calls, streamed or not, is the attempt's.
    let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(usage["requests"], 6, "{result}");
    assert_eq!(
        usage["prompt_tokens"],
        11 + 13 + 17 + 19 + 23 + 29,
        "{usage}"
    );
    assert_eq!(
        usage["completion_tokens"],
        2 + 3 + 5 + 7 + 11 + 13,
        "{usage}"
    );

    // What the agent could see (copied out as artifacts, searched below with the rest of the
    // results): its variables, every process's environment and argv, the writable
    // directories; the variables hold a placeholder token.
    let seen = artifact("probe/self.txt");
    assert!(seen.contains("== end"), "{seen}");
    let token = seen
        .lines()
        .find_map(|line| line.strip_prefix("OPENAI_API_KEY="))
        .unwrap_or_default();
    assert_eq!(token.len(), 64, "a placeholder token: {seen}");
    let copied = artifact("probe/copied.txt");
    for dir in ["copy_app", "copy_tmp"] {
        assert!(copied.contains(dir), "{dir}: {copied}");
    }
    assert!(
        seen.contains(&format!("ANTHROPIC_API_KEY={token}")),
        "{seen}"
    );

    // And nowhere in the results or on the console.
    assert_eq!(
        files_containing(&ws.cwd.join("results"), KEY),
        Vec::<PathBuf>::new()
    );
    assert!(
        !out.stdout.contains(KEY) && !out.stderr.contains(KEY),
        "{out:?}"
    );
}

#[test]
fn in_a_no_network_sandbox() {
    the_agent_reaches_the_model_through_the_endpoint_only("sandbox", &[]);
}
