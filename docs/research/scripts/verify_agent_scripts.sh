#!/usr/bin/env bash
# Runs the real agent CLIs against the scripted-llm scripts in tests/fixtures/agents/ and checks
# that each solves the bundled Harbor tasks (examples/harbor/{hello-file,fizzbuzz,primes}).
#
# usage: docs/research/scripts/verify_agent_scripts.sh [--looping] [AGENT...]
#   AGENT: claude_code codex mini_swe_agent qwen_code (default: all four)
#   TASKS="hello-file fizzbuzz primes" (env) picks the tasks.
#   CONCURRENT=1 (env): an agent's tasks run at once against its one server (the scripts are
#              stateless); by default one after another, still against one server.
#   --looping: instead, runs each agent for $LOOP_SECONDS (default 8) s under `timeout` with
#              <agent>-looping.json and reports how many model requests it made; ok when the
#              timeout (rc 124) ended it after at least one request.
#
# Per agent, one `bwrap --dev-bind / / --unshare-net` holds scripted-llm; each task runs in a
# nested `bwrap --dev-bind / / --tmpfs /app --tmpfs /logs` inside it, so only loopback exists. Fresh HOME, the quiet
# switches of docs/research/agent-clis.md, the placeholder key `sk-placeholder`, cwd /app, the
# task's instruction.md as the prompt; then the task's tests/test.sh writes the reward.
# Prints one line per agent x task: reward, wall time of the agent run, exit code and the
# commands the agent ran, in order (from the CLI's own output / trajectory).
#
# Needs: bwrap, python3, the CLIs in $AGENTS_DIR (default ~/.cache/agentcompass-host/agents)
# and the scripted-llm binary ($SCRIPTED_LLM, default $CARGO_TARGET_DIR/debug/scripted-llm;
# build it with `cargo build -p agentcompass-e2e --bin scripted-llm`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
AGENTS_DIR=${AGENTS_DIR:-$HOME/.cache/agentcompass-host/agents}
SCRIPTED_LLM=${SCRIPTED_LLM:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/scripted-llm}
TASKS=${TASKS:-hello-file fizzbuzz primes}
KEEP=${KEEP:-}   # set to keep the work directories
LOOP_SECONDS=${LOOP_SECONDS:-8}

looping=
if [ "${1:-}" = "--looping" ]; then
  looping=1
  shift
fi
agents=("$@")
if [ ${#agents[@]} -eq 0 ]; then
  agents=(claude_code codex mini_swe_agent qwen_code)
fi

[ -x "$SCRIPTED_LLM" ] || { echo "no scripted-llm at $SCRIPTED_LLM (set SCRIPTED_LLM)" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "bwrap is needed" >&2; exit 2; }

# The command line of one agent (runs inside the sandbox; $PORT, $W and $PROMPT set there).
agent_command() {
  case "$1" in
    claude_code) cat <<'EOF'
env HOME="$W/home" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-placeholder \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1 \
  "$AGENTS_DIR/@anthropic-ai+claude-code@2.1.332/node_modules/.bin/claude" -p "$PROMPT" \
  --output-format stream-json --verbose --dangerously-skip-permissions --model claude-sonnet-4-5 \
  < /dev/null > "$W/stdout.jsonl" 2> "$W/stderr.txt"
EOF
      ;;
    codex) cat <<'EOF'
mkdir -p "$W/home/.codex-home"
env HOME="$W/home" CODEX_HOME="$W/home/.codex-home" SCRIPTED_API_KEY=sk-placeholder \
  "$AGENTS_DIR/@openai+codex@0.171.0/node_modules/.bin/codex" exec --json --skip-git-repo-check \
  --dangerously-bypass-approvals-and-sandbox -c model_provider=scripted \
  -c "model_providers.scripted={name=\"scripted\",base_url=\"http://127.0.0.1:$PORT/v1\",env_key=\"SCRIPTED_API_KEY\",wire_api=\"responses\"}" \
  -c analytics.enabled=false -c check_for_update_on_startup=false --disable plugins --ephemeral \
  -m gpt-test "$PROMPT" < /dev/null > "$W/stdout.jsonl" 2> "$W/stderr.txt"
EOF
      ;;
    mini_swe_agent) cat <<'EOF'
env HOME="$W/home" OPENAI_API_KEY=sk-placeholder MSWEA_CONFIGURED=true \
  MSWEA_COST_TRACKING=ignore_errors LITELLM_LOCAL_MODEL_COST_MAP=True MSWEA_SILENT_STARTUP=1 \
  "$AGENTS_DIR/mini-swe-agent@2.4.6/bin/python" -m minisweagent.run.mini -y --exit-immediately \
  -m openai/mini-test -c mini.yaml -c "model.model_kwargs.api_base=http://127.0.0.1:$PORT/v1" \
  -o "$W/trajectory.json" -t "$PROMPT" < /dev/null > "$W/stdout.txt" 2> "$W/stderr.txt"
EOF
      ;;
    qwen_code) cat <<'EOF'
mkdir -p "$W/home/.qwen"
printf '%s\n' '{"general": {"enableAutoUpdate": false}, "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false}}' > "$W/home/.qwen/settings.json"
env HOME="$W/home" OPENAI_API_KEY=sk-placeholder OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" \
  OPENAI_MODEL=qwen-test QWEN_CODE_SUPPRESS_YOLO_WARNING=1 \
  "$AGENTS_DIR/@qwen-code+qwen-code@0.24.4/node_modules/.bin/qwen" --auth-type openai --yolo \
  -o stream-json "$PROMPT" < /dev/null > "$W/stdout.jsonl" 2> "$W/stderr.txt"
EOF
      ;;
    *) echo "unknown agent $1" >&2; return 1 ;;
  esac
}

# The commands the agent ran, in order, from its own output; ` ; ` between them.
commands_run() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
agent, w = sys.argv[1], sys.argv[2]
cmds = []
def lines(path):
    try:
        with open(path) as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    pass
    except OSError:
        return
if agent in ("claude_code", "qwen_code"):
    for ev in lines(f"{w}/stdout.jsonl"):
        if ev.get("type") == "assistant":
            for block in ev.get("message", {}).get("content", []):
                if block.get("type") == "tool_use":
                    cmds.append(block.get("input", {}).get("command", "?"))
elif agent == "codex":
    for ev in lines(f"{w}/stdout.jsonl"):
        item = ev.get("item", {})
        if ev.get("type") == "item.completed" and item.get("type") == "command_execution":
            cmds.append(item.get("command", "?"))
elif agent == "mini_swe_agent":
    try:
        traj = json.load(open(f"{w}/trajectory.json"))
    except (OSError, ValueError):
        traj = {}
    for m in traj.get("messages", []):
        for a in (m.get("extra") or {}).get("actions", []) or []:
            cmds.append(a.get("command", "?"))
print(" ; ".join(c.replace("\n", " ") for c in cmds) or "(none)")
EOF
}

# The reward test.sh wrote: reward.txt, or reward.json's "reward".
reward_of() {
  if [ -f "$1/reward.txt" ]; then
    tr -d '[:space:]' < "$1/reward.txt"
  elif [ -f "$1/reward.json" ]; then
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reward"])' "$1/reward.json"
  else
    echo none
  fi
}

# One agent's runs: $1 agent, $2 work dir, $3... tasks (or "looping"). One outer bwrap with
# --unshare-net holds scripted-llm; each task runs in a nested bwrap with its own tmpfs /app and
# /logs (sharing the outer network namespace: loopback only). With $CONCURRENT the tasks run at
# once against the one server, as the harness runs them.
run_agent() {
  local agent=$1 w=$2 script
  shift 2
  if [ "$1" = looping ]; then
    script="$ROOT/tests/fixtures/agents/$agent-looping.json"
  else
    script="$ROOT/tests/fixtures/agents/$agent.json"
  fi
  { echo 'set -uo pipefail'; agent_command "$agent"; } > "$w/agent.sh"
  cat > "$w/task.sh" <<'TASK'
set -uo pipefail
# $W: this task's work dir; $TASK_DIR, $PORT, $LIMIT, $LOOPING, $AGENT_SH from the outer script.
mkdir -p "$W/home" "$W/verifier" "$W/app"
if [ -n "$LOOPING" ]; then
  PROMPT="Keep working until told to stop."
else
  PROMPT=$(cat "$TASK_DIR/instruction.md")
fi
export W PROMPT
cd /app
start=$(date +%s.%N)
timeout "$LIMIT" bash "$AGENT_SH"; echo $? > "$W/agent_rc"
end=$(date +%s.%N)
echo "$start $end" | awk '{printf "%.1f", $2 - $1}' > "$W/wall"
if [ -z "$LOOPING" ]; then
  mkdir -p /logs/verifier
  bash "$TASK_DIR/tests/test.sh" > "$W/test.txt" 2>&1
  cp -r /logs/verifier/. "$W/verifier/"
  cp -r /app/. "$W/app/"
fi
TASK
  {
    echo 'set -uo pipefail'
    printf 'OUT=%q ROOT=%q LOOPING=%q CONCURRENT=%q AGENT_SH=%q LOOP_SECONDS=%q\n' \
      "$w" "$ROOT" "$looping" "${CONCURRENT:-}" "$w/agent.sh" "$LOOP_SECONDS"
    printf 'export AGENTS_DIR=%q AGENT_SH LOOPING\n' "$AGENTS_DIR"
    printf 'TASKS=(%s)\n' "$*"
    printf '%q --script %q --port 0 --port-file "$OUT/port" --log "$OUT/requests.jsonl" > "$OUT/server.txt" 2>&1 &\n' \
      "$SCRIPTED_LLM" "$script"
    cat <<'OUTER'
SERVER=$!
for _ in $(seq 100); do [ -s "$OUT/port" ] && break; sleep 0.05; done
PORT=$(cat "$OUT/port")
export PORT
if [ -n "$LOOPING" ]; then export LIMIT=$LOOP_SECONDS; else export LIMIT=300; fi
pids=()
for task in "${TASKS[@]}"; do
  mkdir -p "$OUT/$task"
  W="$OUT/$task" TASK_DIR="$ROOT/examples/harbor/$task" \
    bwrap --dev-bind / / --tmpfs /app --tmpfs /logs --die-with-parent bash "$OUT/task.sh" &
  pids+=($!)
  [ -n "$CONCURRENT" ] || wait "${pids[-1]}"
done
wait "${pids[@]}"
kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
exit 0
OUTER
  } > "$w/outer.sh"
  bwrap --dev-bind / / --unshare-net --die-with-parent bash "$w/outer.sh"
}

# How many logged requests are for this task (their body names the task's file; answered 200).
requests_for() {
  local marker
  marker=$(grep -o '/app/[A-Za-z0-9_.-]*' "$ROOT/examples/harbor/$2/instruction.md" | head -1)
  python3 - "$1" "$marker" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if sys.argv[2] in json.dumps(e.get("body")) and e.get("status") == 200:
        n += 1
print(n)
PY
}

failed=0
base=$(mktemp -d /var/tmp/verify-agents.XXXXXX)
for agent in "${agents[@]}"; do
  w="$base/$agent"
  mkdir -p "$w"
  if [ -n "$looping" ]; then
    run_agent "$agent" "$w" looping
    n=$(grep -c '"status":200' "$w/requests.jsonl" 2>/dev/null || true)
    rc=$(cat "$w/looping/agent_rc")
    # 124: the timeout ended it, so it was still running (mini-swe-agent and Qwen Code need
    # 5-10 s to start, so in 8 s they make only one or two requests; LOOP_SECONDS=30 shows more).
    if [ "$rc" = 124 ] && [ "${n:-0}" -ge 1 ]; then verdict=ok; else verdict=FAIL; failed=1; fi
    printf '%-15s looping    %s  rc=%s  wall=%ss  model requests=%s  commands: %s\n' \
      "$agent" "$verdict" "$rc" "$(cat "$w/looping/wall")" "${n:-0}" \
      "$(commands_run "$agent" "$w/looping" | cut -c1-100)"
    continue
  fi
  # shellcheck disable=SC2086
  run_agent "$agent" "$w" $TASKS
  for task in $TASKS; do
    reward=$(reward_of "$w/$task/verifier")
    [ "$reward" = 1 ] || failed=1
    printf '%-15s %-10s reward=%s  wall=%ss  rc=%s  requests=%s  commands: %s\n' \
      "$agent" "$task" "$reward" "$(cat "$w/$task/wall")" "$(cat "$w/$task/agent_rc")" \
      "$(requests_for "$w/requests.jsonl" "$task")" "$(commands_run "$agent" "$w/$task")"
  done
done
if [ -n "$KEEP" ]; then echo "work directories: $base"; else rm -rf "$base"; fi
exit "$failed"
