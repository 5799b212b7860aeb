#!/usr/bin/env bash
# Rate-limit back-off, side by side: a QA run against an endpoint that serves a few calls at
# once and answers 429 beyond that, with the adaptive limit and with a fixed one.
#
#   bench/rate_limits.sh [HOST_BINARY] [TASKS]
#     HOST_BINARY  default target/release/agentcompass-host; it runs with its bundled plugins
#                  (`plugins/` next to it, as `./dev.sh` and bench/compare.sh lay them out);
#                  scripted-llm is taken from the same directory
#     TASKS        default 200
#   RATE_BENCH_CONCURRENCY   --task-concurrency (default 32)
#   RATE_BENCH_LIMIT         calls the endpoint serves at once (default 4)
#   RATE_BENCH_RETRY_AFTER   its Retry-After, seconds (default 1)
#   RATE_BENCH_DELAY_MS      how long each answer takes (default 20)
#
# `run qa openai_chat` over TASKS questions, `--model-params {"max_retries": 0}` (so that only
# the rate-limit handling keeps a task alive), once with the default adaptive limit and once
# with `--no-adaptive-concurrency` (the limit stays at the task concurrency; rate-limited calls
# still wait). Per mode: wall time, tasks published and scored, 429 answers, the most calls the
# server saw at once, the final limit and the seconds calls waited (metrics.json
# `extra.rate_limits`), and the limit's trace (`model_limit` events of progress.jsonl).
# Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-$ROOT/target/release/agentcompass-host}"
TASKS="${2:-200}"
CONCURRENCY="${RATE_BENCH_CONCURRENCY:-32}"
LIMIT="${RATE_BENCH_LIMIT:-4}"
RETRY_AFTER="${RATE_BENCH_RETRY_AFTER:-1}"
DELAY_MS="${RATE_BENCH_DELAY_MS:-20}"
HOST="$(cd "$(dirname "$HOST")" && pwd)/$(basename "$HOST")"
DIR="$(dirname "$HOST")"
SCRIPTED="$DIR/scripted-llm"
for bin in "$HOST" "$SCRIPTED" "$DIR/plugins"; do
    [ -e "$bin" ] || { echo "no $bin (cargo build --workspace [--release], then bundle the plugins: see ./dev.sh)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }

WORK="$(mktemp -d /var/tmp/rate-limits.XXXXXX)"
SERVER=""
stop_server() {
    if [ -n "$SERVER" ]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
        SERVER=""
    fi
}
trap 'stop_server; rm -rf "$WORK"' EXIT

python3 - "$WORK/data.jsonl" "$TASKS" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        out.write(json.dumps({"id": f"q{i}", "question": f"Question {i}?", "answer": "ok"}) + "\n")
PY
cat >"$WORK/script.json" <<JSON
{"concurrency": {"limit": $LIMIT, "retry_after": $RETRY_AFTER},
 "rules": [{"responses": [{"text": "ok", "delay_ms": $DELAY_MS}]}]}
JSON

printf 'mode\twall_s\tpublished\tscored\tanswers_429\tpeak_at_server\tfinal_limit\twaited_s\n'
for mode in adaptive fixed; do
    rm -f "$WORK/requests.jsonl" "$WORK/port"
    "$SCRIPTED" --script "$WORK/script.json" --port-file "$WORK/port" --log "$WORK/requests.jsonl" >/dev/null &
    SERVER=$!
    for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
    extra=()
    [ "$mode" = fixed ] && extra=(--no-adaptive-concurrency)
    start=$(date +%s.%N)
    "$HOST" run qa openai_chat scripted-model \
        --benchmark-params "{\"path\": \"$WORK/data.jsonl\"}" \
        --model-base-url "http://127.0.0.1:$(cat "$WORK/port")/v1" --model-api-key sk-bench \
        --model-params '{"max_retries": 0}' --task-concurrency "$CONCURRENCY" \
        --results-dir "$WORK/results-$mode" --progress none "${extra[@]}" >"$WORK/out-$mode" 2>"$WORK/err-$mode" || true
    end=$(date +%s.%N)
    stop_server
    run="$(tail -n 1 "$WORK/out-$mode")"
    published=$(find "$run/details" -name task.json | wc -l)
    scored=$(jq '.series[0].counts.evaluated' "$run/metrics.json")
    refused=$(jq -s 'map(select(.limited == true)) | length' "$WORK/requests.jsonl")
    peak=$(jq -s 'map(.in_flight // 0) | max' "$WORK/requests.jsonl")
    limit=$(jq '.extra.rate_limits.limit // "-"' "$run/metrics.json")
    waited=$(jq '.extra.rate_limits.waited_seconds // 0 | . * 10 | round / 10' "$run/metrics.json")
    printf '%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$(echo "$end - $start" | bc)" \
        "$published" "$scored" "$refused" "$peak" "$limit" "$waited"
    trace=$(jq -r 'select(.event == "model_limit") | .payload.limit' "$run/progress.jsonl" | tr '\n' ' ')
    echo "  limit trace ($mode): $trace" >&2
done
