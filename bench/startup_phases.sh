#!/usr/bin/env bash
# Where a one-task run's wall time goes (the startup row of compare.sh, without `timeout` and
# `time` around it): the release host with its bundled plugins runs 1 QA task (`openai_chat`
# against scripted-llm on 127.0.0.1, `host_process`) N times; each run's progress.jsonl
# timestamps split it into before `run_started` (process start, plugins, configuration,
# preflight, the results directory), up to `task_started`, the task, up to `run_finished`,
# and after it (the `syncfs` of the results, the summary, shutdown). Prints the median of each
# phase, then `perf stat`-free references: `--version` and `list benchmark` with and without
# the bundled plugins (median wall time of N each).
#
#   bench/startup_phases.sh [N]      (default 21; needs target/release built and bundled,
#                                     e.g. by bench/compare.sh --rebuild)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-21}"
release="${CARGO_TARGET_DIR:-target}/release"
host="$release/agentcompass-host"
[ -x "$host" ] && [ -x "$release/scripted-llm" ] && ls "$release"/plugins/*.so >/dev/null 2>&1 ||
    { echo "build first: bench/compare.sh --rebuild (or cargo build --release --workspace and bundle)" >&2; exit 2; }
work="$(mktemp -d)"
llm_pid=""
trap '[ -n "$llm_pid" ] && kill "$llm_pid" 2>/dev/null; rm -rf "$work"' EXIT
echo '{"rules": [{"responses": [{"text": "4", "usage": {"prompt_tokens": 20, "completion_tokens": 1}}]}]}' \
    >"$work/script.json"
echo '{"id": "q-1", "question": "What is 2 + 2?", "answer": "4"}' >"$work/qa.jsonl"
"$release/scripted-llm" --script "$work/script.json" --port-file "$work/port" >"$work/llm.log" 2>&1 &
llm_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port="$(cat "$work/port")"

one_run() { # prints: start_ns end_ns run_dir
    local out="$work/out/$1" t0 t1
    mkdir -p "$out"
    t0=$(date +%s%N)
    "$host" run qa openai_chat bench-model --benchmark-params "{\"path\": \"$work/qa.jsonl\"}" \
        --env host_process --model-base-url "http://127.0.0.1:$port/v1" --model-api-key x \
        --progress none --results-dir "$out" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo "$t0 $t1 $(ls -d "$out"/*/*/)"
}

one_run warmup >/dev/null
for i in $(seq "$N"); do one_run "$i"; done | python3 -c '
import json, statistics, sys
rows = []
for line in sys.stdin:
    t0, t1, run_dir = line.split()
    t0, t1 = int(t0) / 1e9, int(t1) / 1e9
    first = {}
    for text in open(run_dir + "progress.jsonl"):
        event = json.loads(text)
        first.setdefault(event["event"], event["timestamp"])
    marks = [t0, first["run_started"], first["task_started"], first["task_finished"],
             first["run_finished"], t1]
    rows.append([(b - a) * 1000 for a, b in zip(marks, marks[1:])] + [(t1 - t0) * 1000])
names = ["before run_started", "to task_started", "the task", "to run_finished",
         "after run_finished", "whole run"]
print(f"one-task run, medians of {len(rows)} (ms):")
for name, column in zip(names, zip(*rows)):
    print(f"  {name:<20} {statistics.median(column):7.2f}")
'

median_ms() { # median wall time in ms of N runs of "$@"
    local i t0 t1
    for i in $(seq "$N"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
    done | sort -n | awk '{a[NR] = $1} END {printf "%.2f", a[int((NR + 1) / 2)] / 1000}'
}
echo "references, median wall ms of $N:"
echo "  true                             $(median_ms true)"
echo "  --version                        $(median_ms "$host" --version)"
echo "  list benchmark                   $(median_ms "$host" list benchmark)"
echo "  --no-bundled-plugins list bench  $(median_ms "$host" --no-bundled-plugins list benchmark)"
