#!/usr/bin/env bash
# Podman's per-task cost through our host against the raw Podman CLI doing the same work
# (issue 40), alternating in the same minute:
#
#   bench/podman_overhead.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# ours:   `example_self_check` (N tasks, each one `sh -c 'echo $((a + b))'` in its own
#         keep-alive container) in the `podman` environment on the busybox test image,
#         CONCURRENCY tasks at a time, results written as usual; no service named, so the
#         run starts its own private `podman system service` (and stops it): its start is in
#         the figure;
# socket: the same, on a service already running (`container_host`);
# raw:    the same N tasks as `podman run -d --network none IMAGE sleep 3600`, `podman exec
#         CONTAINER sh -c 'echo $((a + b))'`, `podman rm -f -t 0 CONTAINER` (daemonless CLI),
#         CONCURRENCY at a time.
# Prints one tab-separated line per repetition (ms a task each, ratios ours ÷ raw and
# socket ÷ raw) and, last, `median<TAB>ours_ms<TAB>socket_ms<TAB>raw_ms<TAB>ratio<TAB>
# socket_ratio`. Runs on a private rootful store (dev.sh's start_podman: storage, run root and
# containers.conf under a temp dir, named by CONTAINERS_CONF and CONTAINERS_STORAGE_CONF, with
# its own service). Defaults: N 100, CONCURRENCY 8, REPS 3. Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-100}"
CONC="${3:-8}"
REPS="${4:-3}"
IMAGE="agentcompass-test/busybox:1"
WORK="$(mktemp -d)"

# dev.sh's own definitions, without running dev.sh.
PODMAN_DIR=""
PODMAN_PID=""
# shellcheck source=/dev/null
source <(sed -n -e '/^busybox_rootfs()/,/^}/p' -e '/^podman_confs()/,/^}/p' \
    -e '/^podman_ready()/,/^}/p' -e '/^stop_podman()/,/^}/p' -e '/^start_podman()/,/^}/p' \
    "$ROOT/dev.sh")
start_podman >&2
trap 'stop_podman; rm -rf "$WORK"' EXIT
SOCKET="unix://$PODMAN_DIR/podman.sock"

now() { date +%s%N; }

ours() { # PARAMS -> ms a task
    local out="$WORK/out" t0 t1
    rm -rf "$out"
    mkdir -p "$out"
    t0=$(now)
    "$HOST" run example_self_check none bench-model --benchmark-params "{\"size\": $N}" \
        --env podman --env-params "$1" \
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
    podman run -d --network none --name "$name" "$IMAGE" sleep 3600 >/dev/null
    [ "$(podman exec "$name" sh -c "echo \$(($a + $b))")" = "$((a + b))" ] || echo "raw task $1: wrong output" >&2
    podman rm -f -t 0 "$name" >/dev/null
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

PRIVATE="{\"setup\": {\"image\": \"$IMAGE\"}}"
GIVEN="{\"container_host\": \"$SOCKET\", \"setup\": {\"image\": \"$IMAGE\"}}"
printf "params\t%s\t%s\n" "$N" "$CONC"
printf 'rep\tours_ms_per_task\tsocket_ms_per_task\traw_ms_per_task\tratio\tsocket_ratio\tload1\n'
ours "$PRIVATE" >/dev/null # warm-up (image layers, page cache)
results=()
for rep in $(seq "$REPS"); do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    o="$(ours "$PRIVATE")"
    s="$(ours "$GIVEN")"
    r="$(raw)"
    ratio="$(awk -v o="$o" -v r="$r" 'BEGIN { printf "%.2f", o / r }')"
    sratio="$(awk -v o="$s" -v r="$r" 'BEGIN { printf "%.2f", o / r }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$o" "$s" "$r" "$ratio" "$sratio" "$load"
    results+=("$o $s $r")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
o = statistics.median(r[0] for r in rows)
s = statistics.median(r[1] for r in rows)
r = statistics.median(r[2] for r in rows)
print(f"median\t{o:.1f}\t{s:.1f}\t{r:.1f}\t{o / r:.2f}\t{s / r:.2f}")
'
