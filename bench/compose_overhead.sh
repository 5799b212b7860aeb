#!/usr/bin/env bash
# The per-task cost of a two-service compose task (issue 55) through our host against the
# engine calls it needs, made with the Docker CLI, alternating in the same minute; images warm:
#
#   bench/compose_overhead.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# The task (N copies): `main` (`FROM ubuntu:24.04`) and a sidecar `api` (`busybox:1.36`
# serving a file with httpd, a health check `wget` of it every 100 ms), `main` gated on it by
# `service_healthy`; the solution fetches the file from `http://api:8000/`, the verifier
# compares. Both must score 1 on every task.
# ours: `agentcompass-host run harbor oracle m --env docker`, CONCURRENCY tasks at a time.
# raw:  per task, what a compose run needs of the engine, with the CLI: `network create`,
#       `run -d` of the sidecar (alias `api`), its health check by `exec` until it passes,
#       `run -d` of main (alias `main`), `exec mkdir` of its log directory, `cp` of the
#       solution, `exec` of it, `cp` of the tests, `exec` of them (output into the log
#       directory, as Harbor's verifier writes it), `cp` of the log directory out (Harbor
#       downloads it), `rm -f` of both, `network rm`; CONCURRENCY tasks at a time.
# Prints one tab-separated line per repetition (ms a task each, ratio ours ÷ raw) and, last,
# `median<TAB>ours_ms<TAB>raw_ms<TAB>ratio`. Uses $DOCKER_HOST if a daemon answers there,
# else starts a private one (dev.sh's start_docker). Defaults: N 24, CONCURRENCY 4, REPS 3.
# Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-24}"
CONC="${3:-4}"
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
# shellcheck source=/dev/null
source "$ROOT/bench/compose_tasks.sh"
compose_base_images "$WORK/images"
compose_tasks "$WORK/tasks" "$N"
MAIN_IMAGE="agentcompass-bench/compose-main:1"
DOCKER_BUILDKIT=0 docker build -q -t "$MAIN_IMAGE" "$WORK/tasks/t0/environment" >/dev/null 2>&1

now() { date +%s%N; }

ours() { # -> ms a task; every task must score 1
    local t0 out="$WORK/out"
    t0=$(now)
    "$HOST" run harbor oracle bench-model --env docker \
        --env-params "{\"docker_host\": \"$DOCKER_HOST\"}" \
        --benchmark-params "{\"path\": \"$WORK/tasks\"}" --task-concurrency "$CONC" \
        --progress none --results-dir "$out" >"$WORK/stdout" 2>"$WORK/stderr" || {
        tail -3 "$WORK/stderr" >&2
        return 1
    }
    local took=$(($(now) - t0))
    grep -q '| reward | native@1 | 1.0000 |' "$WORK/stderr" || {
        echo "ours did not score 1 on every task: $(tail -5 "$WORK/stderr")" >&2
        return 1
    }
    rm -rf "$out"
    echo "scale=1; $took / 1000000 / $N" | bc
}

raw_task() { # I: one task's engine calls; prints its reward
    local i="$1" p="bench-compose-$$-$1" dir="$WORK/tasks/t$1"
    docker network create "$p" >/dev/null
    docker run -d --name "$p-api" --network "$p" --network-alias api \
        -v "$dir/environment/www:/www:ro" docker.io/library/busybox:1.36 httpd -f -p 8000 -h /www >/dev/null
    until docker exec "$p-api" wget -q -O /dev/null http://localhost:8000/answer.txt 2>/dev/null; do
        sleep 0.1
    done
    docker run -d --name "$p-main" --network "$p" --network-alias main -w /app \
        "$MAIN_IMAGE" sleep infinity >/dev/null
    docker cp "$dir/solution" "$p-main:/solution" >/dev/null
    docker exec "$p-main" bash /solution/solve.sh
    docker exec "$p-main" mkdir -p /logs/verifier
    docker cp "$dir/tests" "$p-main:/tests" >/dev/null
    docker exec "$p-main" bash -c 'bash /tests/test.sh > /logs/verifier/test-stdout.txt 2> /logs/verifier/test-stderr.txt'
    mkdir -p "$WORK/raw/$1"
    docker cp "$p-main:/logs/verifier" "$WORK/raw/$1/" >/dev/null
    cat "$WORK/raw/$1/verifier/reward.txt"
    docker rm -f "$p-main" "$p-api" >/dev/null
    docker network rm "$p" >/dev/null
    : "$i"
}

raw() { # -> ms a task; every task must score 1
    local t0 ones
    t0=$(now)
    export -f raw_task
    export WORK MAIN_IMAGE
    ones=$(seq 0 $((N - 1)) | xargs -P "$CONC" -I{} bash -c 'raw_task {}' | grep -c '^1$' || true)
    local took=$(($(now) - t0))
    [ "$ones" = "$N" ] || { echo "raw scored 1 on $ones of $N tasks" >&2; return 1; }
    echo "scale=1; $took / 1000000 / $N" | bc
}

# Warm: the images are built once (ours builds main's and nothing else: the API is named).
ours >/dev/null
raw >/dev/null

results=()
for rep in $(seq "$REPS"); do
    o=$(ours)
    r=$(raw)
    ratio=$(echo "scale=3; $o / $r" | bc)
    printf '%s\t%s\t%s\t%s\n' "$rep" "$o" "$r" "$ratio"
    results+=("$o $r $ratio")
done
printf '%s\n' "${results[@]}" | sort -k3 -n | awk -v n="$REPS" \
    'NR == int((n + 1) / 2) { printf "median\t%s\t%s\t%s\n", $1, $2, $3 }'
