#!/usr/bin/env bash
# Docker's per-task cost through our host against the raw Docker CLI doing the same work
# (issue 20), alternating in the same minute:
#
#   bench/docker_overhead.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# ours: `example_self_check` (N tasks, each one `sh -c 'echo $((a + b))'` in its own
#       keep-alive container) in the `docker` environment on the busybox test image,
#       CONCURRENCY tasks at a time, results written as usual;
# raw:  the same N tasks as `docker run -d --network none IMAGE sleep 3600`, `docker exec
#       CONTAINER sh -c 'echo $((a + b))'`, `docker rm -f CONTAINER`, CONCURRENCY at a time.
# Prints one tab-separated line per repetition (ms a task each, ratio ours ÷ raw) and, last,
# `median<TAB>ours_ms<TAB>raw_ms<TAB>ratio`. Uses $DOCKER_HOST if a daemon answers there, else
# starts a private one (dev.sh's start_docker: own socket and data root, no bridge). Defaults:
# N 100, CONCURRENCY 8, REPS 3. Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-100}"
CONC="${3:-8}"
REPS="${4:-3}"
IMAGE="agentcompass-test/busybox:1"
WORK="$(mktemp -d)"

if ! { [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; }; then
    # dev.sh's own definitions, without running dev.sh.
    DOCKER_DIR=""
    DOCKERD_PID=""
    # shellcheck source=/dev/null
    source <(sed -n -e '/^stop_docker()/,/^}/p' -e '/^start_docker()/,/^}/p' "$ROOT/dev.sh")
    start_docker >&2
    trap 'stop_docker; rm -rf "$WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
    docker image inspect "$IMAGE" >/dev/null 2>&1 || {
        echo "docker_overhead.sh: image $IMAGE missing on $DOCKER_HOST" >&2
        exit 1
    }
fi

now() { date +%s%N; }

ours() { # -> ms a task
    local out="$WORK/out" t0 t1
    rm -rf "$out"
    mkdir -p "$out"
    t0=$(now)
    "$HOST" run example_self_check none bench-model --benchmark-params "{\"size\": $N}" \
        --env docker --env-params "{\"docker_host\": \"$DOCKER_HOST\", \"setup\": {\"image\": \"$IMAGE\"}}" \
        --task-concurrency "$CONC" --progress none --results-dir "$out" \
        >"$WORK/stdout" 2>"$WORK/stderr" || {
        tail -5 "$WORK/stderr" >&2
        return 1
    }
    t1=$(now)
    python3 "$ROOT/bench/compare_lib.py" check-ours "$(tail -1 "$WORK/stdout")" "$N" >&2 || {
        echo "ours: unexpected results" >&2
        return 1
    }
    awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 / n }'
}

raw_task() { # INDEX
    local name="bench-raw-$$-$1" a=$(($1 % 50)) b=$(($1 % 7))
    docker run -d --network none --name "$name" "$IMAGE" sleep 3600 >/dev/null
    [ "$(docker exec "$name" sh -c "echo \$(($a + $b))")" = "$((a + b))" ] || echo "raw task $1: wrong output" >&2
    docker rm -f "$name" >/dev/null
}
export -f raw_task
export IMAGE

raw() { # -> ms a task
    local t0 t1
    t0=$(now)
    seq 0 $((N - 1)) | xargs -P "$CONC" -I{} bash -c 'raw_task {}'
    t1=$(now)
    awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 / n }'
}

printf "params\t%s\t%s\n" "$N" "$CONC"
printf 'rep\tours_ms_per_task\traw_ms_per_task\tratio\tload1\n'
ours >/dev/null # warm-up (image layers, page cache)
results=()
for rep in $(seq "$REPS"); do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    o="$(ours)"
    r="$(raw)"
    ratio="$(awk -v o="$o" -v r="$r" 'BEGIN { printf "%.2f", o / r }')"
    printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$o" "$r" "$ratio" "$load"
    results+=("$o $r")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
o = statistics.median(r[0] for r in rows)
r = statistics.median(r[1] for r in rows)
print(f"median\t{o:.1f}\t{r:.1f}\t{o / r:.2f}")
'
