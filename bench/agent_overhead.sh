#!/usr/bin/env bash
# Warm per-task overhead of running an installed agent CLI through our host, next to the same
# CLI command run without it:
#
#   bench/agent_overhead.sh [HOST_BINARY] [AGENT ...]
#     HOST_BINARY  default ${CARGO_TARGET_DIR:-target}/release/agentcompass-host; it loads its
#                  plugins from the `plugins` directory next to it (harbor-pack, agents-pack) and
#                  scripted-llm is taken from the same directory
#     AGENT        claude_code codex mini_swe_agent qwen_code (default: all four)
#   AGENT_BENCH_N            repetitions per agent (default 20)
#   AGENT_BENCH_INSTALL_CACHE the host's install cache (default ~/.cache/agentcompass-host/installs;
#                            it must already hold the agents: `agentcompass-host agents install`)
#
# Per agent, one scripted-llm on 127.0.0.1 serves tests/fixtures/agents/AGENT.json for all its
# repetitions. Each repetition runs, one after the other:
#   a  host:   `agentcompass-host run harbor AGENT m-test --env sandbox` on a directory holding only
#              examples/harbor/hello-file (no-network: the CLI reaches the model through the
#              in-environment relay), `--progress none`, fresh results dir; wall time of the
#              whole command, reward 1 checked.
#   b  direct: the command line and variables agents.rs `launch` gives the CLI (same prompt, the
#              hello-file instruction.md text; fresh HOME; stdin /dev/null, stdout/stderr to
#              /logs/agent/AGENT), from the install cache, inside
#              `bwrap --dev-bind / / --tmpfs /app --tmpfs /logs` (cwd /app; no network namespace:
#              the CLI talks to scripted-llm directly); wall time of the bwrap, /app/hello.txt
#              checked inside it.
# Prints a TSV line per repetition (a, a's phases from the run's progress.jsonl, the agent's own
# run time as the host recorded it, `agent_duration_ms`, and b) and per agent the medians,
# median(a) - median(b) = the host's per-task overhead, the ratio, the load average, the phase
# medians, the host's time outside the agent and the median of the paired a - b.
# Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${AGENT_BENCH_N:-20}"
CACHE="${AGENT_BENCH_INSTALL_CACHE:-$HOME/.cache/agentcompass-host/installs}"
HOST=""
AGENTS=()
for arg in "$@"; do
    case "$arg" in
        claude_code | codex | mini_swe_agent | qwen_code) AGENTS+=("$arg") ;;
        *) HOST="$arg" ;;
    esac
done
[ "${#AGENTS[@]}" -gt 0 ] || AGENTS=(claude_code codex mini_swe_agent qwen_code)
[ -n "$HOST" ] || HOST="${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host"
HOST="$(cd "$(dirname "$HOST")" && pwd)/$(basename "$HOST")"
SCRIPTED="$(dirname "$HOST")/scripted-llm"
for bin in "$HOST" "$SCRIPTED"; do
    [ -x "$bin" ] || { echo "no $bin (build it: see bench/PROFILE.md)" >&2; exit 2; }
done
command -v bwrap >/dev/null || { echo "bwrap is needed" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }

# A placeholder: the host's relay sends it to scripted-llm, which does not check it.
export AGENT_BENCH_KEY="sk-bench-placeholder-0000"
PROMPT="$(cat "$ROOT/examples/harbor/hello-file/instruction.md")"

WORK="$(mktemp -d /var/tmp/agent-overhead.XXXXXX)"
SERVER=""
cleanup() {
    if [ -n "$SERVER" ]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/tasks"
cp -r "$ROOT/examples/harbor/hello-file" "$WORK/tasks/hello-file"

# The installed package directory of AGENT in the install cache (package@version as agents.rs).
entry_of() {
    local pkg
    case "$1" in
        claude_code) pkg='@anthropic-ai+claude-code@2.1.332' ;;
        codex) pkg='@openai+codex@0.171.0' ;;
        mini_swe_agent) pkg='mini-swe-agent@2.4.6' ;;
        qwen_code) pkg='@qwen-code+qwen-code@0.24.4' ;;
    esac
    local found
    found="$(ls -d "$CACHE"/sandbox-*/"$pkg" 2>/dev/null | head -1)"
    [ -n "$found" ] || { echo "$1 is not installed in $CACHE/sandbox-*/ (agents install)" >&2; return 1; }
    echo "$found"
}

start_server() { # AGENT
    rm -f "$WORK/port"
    "$SCRIPTED" --script "$ROOT/tests/fixtures/agents/$1.json" --port 0 \
        --port-file "$WORK/port" >"$WORK/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
    [ -s "$WORK/port" ] || { cat "$WORK/server.log" >&2; return 1; }
    PORT="$(cat "$WORK/port")"
}

stop_server() {
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    SERVER=""
}

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

# a: one host run; prints "wall_s<TAB>agent_duration_s".
run_host() { # AGENT
    local agent="$1" out="$WORK/results-a" url protocol t0 t1
    case "$agent" in
        claude_code) url="http://127.0.0.1:$PORT" protocol=anthropic ;;
        codex) url="http://127.0.0.1:$PORT/v1" protocol=openai-responses ;;
        *) url="http://127.0.0.1:$PORT/v1" protocol=openai-chat ;;
    esac
    rm -rf "$out"
    mkdir -p "$out"
    t0=$(now)
    # shellcheck disable=SC2016 # the host expands ${AGENT_BENCH_KEY} itself
    "$HOST" --install-cache-dir "$CACHE" run harbor "$agent" m-test --env sandbox \
        --benchmark-params "{\"path\": \"$WORK/tasks\"}" --model-base-url "$url" \
        --model-api-protocol "$protocol" --model-api-key '${AGENT_BENCH_KEY}' \
        --progress none --results-dir "$out" >"$WORK/a.stdout" 2>"$WORK/a.stderr" || {
        echo "host run of $agent failed:" >&2
        tail -5 "$WORK/a.stderr" >&2
        return 1
    }
    t1=$(now)
    local result reward dur
    result="$(find "$out" -name result.json -path '*hello-file*' | head -1)"
    [ -n "$result" ] || { echo "$agent: no result.json in $out" >&2; return 1; }
    reward="$(jq -r '.metrics.reward' "$result")"
    [ "$reward" = 1 ] || [ "$reward" = 1.0 ] || {
        echo "$agent: host run reward $reward" >&2
        jq -c '.issues' "$result" >&2
        return 1
    }
    dur="$(jq -r '.meta.harness.telemetry.agent_duration_ms // 0' "$result")"
    # The phases from the run's progress.jsonl (timestamps in epoch seconds, same clock):
    # pre = process start -> run_started (startup, plugin load, task loading); setup =
    # run_started -> run_harness (plan, install check, open sandbox, prepare task, start
    # harness); harness = run_harness -> collect_harness_result (relay + the CLI);
    # eval = -> attempt_finished (artifacts, tests/test.sh in the evaluation); post =
    # attempt_finished -> process exit (results, summary, shutdown).
    local progress
    progress="$(find "$out" -name progress.jsonl | head -1)"
    jq -rs --arg t0 "$t0" --arg t1 "$t1" --arg dur "$dur" '
        def at(f): [.[] | select(f) | .timestamp][0];
        ($t0 | tonumber / 1e9) as $s | ($t1 | tonumber / 1e9) as $e |
        at(.event == "run_started") as $rs | at(.phase == "run_harness") as $rh |
        at(.phase == "collect_harness_result") as $ch | at(.event == "attempt_finished") as $af |
        [$e - $s, $rs - $s, $rh - $rs, $ch - $rh, $af - $ch, $e - $af, ($dur | tonumber) / 1000]
        | map(. * 1000 | round / 1000 | tostring) | join("\t")' "$progress"
}

# b: the same CLI without our host; prints wall_s.
run_direct() { # AGENT ENTRY
    local agent="$1" entry="$2" home base="http://127.0.0.1:$PORT/v1" t0 t1
    local logs="/logs/agent/$agent"
    home="$(mktemp -d "$WORK/home.XXXXXX")"
    local -a vars argv dirs=("$home" "$logs")
    local setup_file="" setup_text=""
    vars=(PATH="$PATH" HOME="$home")
    case "$agent" in
        claude_code)
            vars+=(ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="$AGENT_BENCH_KEY"
                CLAUDE_CONFIG_DIR="$home/config" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
                IS_SANDBOX=1 CLAUDE_CODE_MAX_RETRIES=1)
            argv=("$entry/node_modules/.bin/claude" -p "$PROMPT" --output-format stream-json
                --verbose --dangerously-skip-permissions --model m-test)
            ;;
        codex)
            dirs+=("$home/codex")
            vars+=(CODEX_HOME="$home/codex" AGENTCOMPASS_CODEX_KEY="$AGENT_BENCH_KEY")
            argv=("$entry/node_modules/.bin/codex" exec --json --skip-git-repo-check
                --dangerously-bypass-approvals-and-sandbox --ephemeral
                -c model_provider=agentcompass
                -c "model_providers.agentcompass={name=\"agentcompass\",base_url=\"$base\",env_key=\"AGENTCOMPASS_CODEX_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}"
                -c analytics.enabled=false -c check_for_update_on_startup=false
                --disable plugins -m m-test "$PROMPT")
            ;;
        mini_swe_agent)
            vars+=(OPENAI_API_KEY="$AGENT_BENCH_KEY" MSWEA_CONFIGURED=true
                MSWEA_COST_TRACKING=ignore_errors MSWEA_SILENT_STARTUP=1
                MSWEA_GLOBAL_CONFIG_DIR="$home/config" MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2
                LITELLM_LOCAL_MODEL_COST_MAP=True)
            argv=("$entry/bin/python" -m minisweagent.run.mini -y --exit-immediately
                -m openai/m-test -c mini.yaml -c "model.model_kwargs.api_base=$base"
                -o "$logs/trajectory.json" -t "$PROMPT")
            ;;
        qwen_code)
            vars+=(QWEN_HOME="$home/qwen" OPENAI_API_KEY="$AGENT_BENCH_KEY" OPENAI_BASE_URL="$base"
                OPENAI_MODEL=m-test QWEN_CODE_SUPPRESS_YOLO_WARNING=1
                QWEN_USAGE_STATISTICS_ENABLED=false)
            setup_file="$home/qwen/settings.json"
            setup_text='{"general":{"enableAutoUpdate":false},"memory":{"enableManagedAutoDream":false,"enableManagedAutoMemory":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}'
            ;;
    esac
    if [ "$agent" = qwen_code ]; then
        argv=("$entry/node_modules/.bin/qwen" --auth-type openai --yolo -o stream-json "$PROMPT")
    fi
    # Inside: the directories and file the harness's wrapper makes, the CLI, then the check.
    # shellcheck disable=SC2016
    local inner='
        set -u
        dirs="$1" file="$2" text="$3" keep="$4" logs="$5"; shift 5
        while IFS= read -r d; do [ -z "$d" ] || mkdir -p -- "$d"; done <<< "$dirs"
        if [ -n "$file" ]; then mkdir -p -- "$(dirname -- "$file")"; printf "%s" "$text" > "$file"; fi
        "$@" > "$logs/stdout.log" 2> "$logs/stderr.log" < /dev/null
        rc=$?
        if [ "$rc" = 0 ] && [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then exit 0; fi
        echo "rc=$rc hello.txt=$(cat /app/hello.txt 2>&1)" >&2
        mkdir -p "$keep" && cp -r "$logs/." "$keep/"
        exit 1'
    t0=$(now)
    env -i "${vars[@]}" bwrap --dev-bind / / --tmpfs /app --tmpfs /logs --chdir /app \
        --die-with-parent bash -c "$inner" inner "$(printf '%s\n' "${dirs[@]}")" \
        "$setup_file" "$setup_text" "$WORK/failed-b-$agent" "$logs" "${argv[@]}" \
        2>"$WORK/b.stderr" || {
        echo "direct run of $agent failed: $(cat "$WORK/b.stderr")" >&2
        tail -5 "$WORK/failed-b-$agent/stderr.log" >&2 || true
        return 1
    }
    t1=$(now)
    rm -rf "$home"
    secs "$t0" "$t1"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), nproc $(nproc), host $HOST, N=$N"
COLS='a_host_s\tpre\tsetup\tharness\teval\tpost\tagent_duration_s\tb_direct_s'
printf "agent\trep\t$COLS\tload1\n"
SUMMARY="$WORK/summary.tsv" PHASES="$WORK/phases.tsv"
for agent in "${AGENTS[@]}"; do
    entry="$(entry_of "$agent")"
    start_server "$agent"
    load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
    : >"$WORK/$agent.tsv"
    for rep in $(seq "$N"); do
        load="$(cut -d' ' -f1 /proc/loadavg)"
        a="$(run_host "$agent")"
        b="$(run_direct "$agent" "$entry")"
        printf '%s\t%s\t%s\t%s\t%s\n' "$agent" "$rep" "$a" "$b" "$load" | tee -a "$WORK/$agent.tsv"
    done
    stop_server
    load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
    # Medians of columns 3..10 (a, its phases, agent_duration, b).
    meds=()
    for col in $(seq 3 10); do meds+=("$(cut -f"$col" "$WORK/$agent.tsv" | median)"); done
    ma="${meds[0]}" mb="${meds[7]}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$agent" "$N" "$ma" "$mb" \
        "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", a - b }')" \
        "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", a / b }')" \
        "$load_start -> $load_end" >>"$SUMMARY"
    # Robust to the CLI's own run-to-run spread: the median of the paired differences a - b,
    # and the host's own time outside the agent (pre + setup + eval + post).
    paired="$(awk -F'\t' '{ printf "%.3f\n", $3 - $10 }' "$WORK/$agent.tsv" | median)"
    outside="$(awk -F'\t' '{ printf "%.3f\n", $4 + $5 + $7 + $8 }' "$WORK/$agent.tsv" | median)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$agent" "${meds[@]:1:6}" "$outside" "$paired" \
        >>"$PHASES"
done
echo
printf 'agent\tN\tmedian_a_s\tmedian_b_s\toverhead_s\tratio_a/b\tload (1/5/15) start -> end\n'
cat "$SUMMARY"
echo
echo "# medians of the host run's phases (s): see run_host"
printf 'agent\tpre\tsetup\tharness\teval\tpost\tagent_duration_s\toutside_agent\tpaired_a-b\n'
cat "$PHASES"
