#!/usr/bin/env bash
# The per-task cost of a Harbor task that ships its own image (issue 54), in the `sandbox`
# against `docker`, images warm (built once before timing), alternating in the same minute:
#
#   bench/task_image_overhead.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# Both run `harbor` with `oracle` over N tasks of one `environment/Dockerfile` (`FROM
# ubuntu:24.04`, a COPY; the solution copies a file the image carries, the verifier compares):
# docker: a container of the built image per task; sandbox: the image's exported root
# filesystem (Podman-built, `image_store`) entered read-only with bubblewrap per task.
# Prints one tab-separated line per repetition (ms a task each, ratio sandbox ÷ docker) and,
# last, `median<TAB>sandbox_ms<TAB>docker_ms<TAB>ratio`. Uses $DOCKER_HOST if a daemon answers
# there, else starts a private one (dev.sh's start_docker). The tasks' `FROM ubuntu:24.04` is a
# local busybox-with-bash image, loaded into the sandbox's store too. Needs podman and bwrap.
# Defaults: N 50, CONCURRENCY 8, REPS 3. Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-50}"
CONC="${3:-8}"
REPS="${4:-3}"
WORK="$(mktemp -d)"

if ! { [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; }; then
    DOCKER_DIR=""
    DOCKERD_PID=""
    # shellcheck source=/dev/null
    source <(sed -n -e '/^stop_docker()/,/^}/p' -e '/^start_docker()/,/^}/p' \
        -e '/^busybox_rootfs()/,/^}/p' "$ROOT/dev.sh")
    start_docker >&2
    trap 'stop_docker; rm -rf "$WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi
# The tasks' base, tagged as the Dockerfiles name it, and loaded into the sandbox's image store.
# shellcheck source=/dev/null
source "$ROOT/bench/one_image_tasks.sh"
base_image_context "$WORK/base"
DOCKER_BUILDKIT=0 docker build -q -t ubuntu:24.04 "$WORK/base" >/dev/null 2>&1
STORE="$WORK/store"
docker save ubuntu:24.04 | podman --root "$STORE/storage" --runroot "$STORE/run" load -q >/dev/null

now() { date +%s%N; }

TASKS="$WORK/tasks"
one_image_tasks "$TASKS" "$N" "image of the task-image bench $$"

run() { # ENV PARAMS -> ms a task; every task must score 1
    local t0 out
    t0=$(now)
    out="$WORK/out-$1"
    "$HOST" run harbor oracle bench-model --env "$1" --env-params "$2" \
        --benchmark-params "{\"path\": \"$TASKS\"}" --task-concurrency "$CONC" \
        --progress none --results-dir "$out" >"$WORK/stdout" 2>"$WORK/stderr" || {
        tail -3 "$WORK/stderr" >&2
        return 1
    }
    grep -q '| reward | native@1 | 1.0000 |' "$WORK/stderr" || {
        echo "not every task scored 1 in $1: $(cat "$WORK/stdout") $(tail -5 "$WORK/stderr")" >&2
        return 1
    }
    rm -rf "$out"
    echo "scale=1; ($(now) - $t0) / 1000000 / $N" | bc
}

DOCKER_PARAMS="{\"docker_host\": \"$DOCKER_HOST\"}"
SANDBOX_PARAMS="{\"image_store\": \"$STORE\"}"
# Warm: each environment builds the image once.
run docker "$DOCKER_PARAMS" >/dev/null
run sandbox "$SANDBOX_PARAMS" >/dev/null

results=()
for rep in $(seq "$REPS"); do
    s=$(run sandbox "$SANDBOX_PARAMS")
    d=$(run docker "$DOCKER_PARAMS")
    ratio=$(echo "scale=3; $s / $d" | bc)
    printf '%s\t%s\t%s\t%s\n' "$rep" "$s" "$d" "$ratio"
    results+=("$s $d $ratio")
done
printf '%s\n' "${results[@]}" | sort -k3 -n | awk -v n="$REPS" \
    'NR == int((n + 1) / 2) { printf "median\t%s\t%s\t%s\n", $1, $2, $3 }'
