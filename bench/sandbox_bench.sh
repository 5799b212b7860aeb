#!/usr/bin/env bash
# Sandbox throughput against the unisolated reference, alternating in the same minute:
#
#   bench/sandbox_bench.sh [HOST_BINARY ...]   (default: $CARGO_TARGET_DIR/release or target/release)
#
# Each repetition runs, for every given host binary (which loads its plugins from the
# `plugins` directory next to it), `example_self_check` with N tasks (SANDBOX_BENCH_N, default
# 1000) in the `sandbox` environment, then the same with `--env host_process`, 100 tasks at a
# time, and prints tasks/s and the sandbox/host_process ratio. Repetitions: SANDBOX_BENCH_REPS
# (default 3). Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${SANDBOX_BENCH_N:-1000}"
REPS="${SANDBOX_BENCH_REPS:-3}"
HOSTS=("$@")
[ "${#HOSTS[@]}" -gt 0 ] || HOSTS=("${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host")
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

run() { # HOST ENV -> prints tasks/s
    local host="$1" env="$2" out="$WORK/out" t0 t1
    rm -rf "$out"
    mkdir -p "$out"
    t0=$(date +%s%N)
    "$host" run example_self_check none bench-model --benchmark-params "{\"size\": $N}" \
        --env "$env" --task-concurrency 100 --progress none --results-dir "$out" \
        >"$WORK/stdout" 2>"$WORK/stderr" || {
        tail -5 "$WORK/stderr" >&2
        return 1
    }
    t1=$(date +%s%N)
    awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / ((b - a) / 1e9) }'
}

printf 'rep\thost\tsandbox/s\thost_process/s\tratio\tload1\n'
for rep in $(seq "$REPS"); do
    for host in "${HOSTS[@]}"; do
        load="$(cut -d' ' -f1 /proc/loadavg)"
        s="$(run "$host" sandbox)"
        h="$(run "$host" host_process)"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$host" "$s" "$h" \
            "$(awk -v s="$s" -v h="$h" 'BEGIN { printf "%.2f", s / h }')" "$load"
    done
done
