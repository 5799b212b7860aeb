#!/usr/bin/env bash
# The build phase's effect (issue 54): N Harbor tasks of one image whose `environment/
# Dockerfile` takes BUILD_S seconds to build, in `docker`, CONCURRENCY at a time, cold (a fresh
# image each repetition), two ways side by side:
#
#   bench/build_phase.sh [HOST_BINARY] [N] [CONCURRENCY] [BUILD_S] [REPS]
#
# phase: each task ships the Dockerfile (`setup.build_context`): the host builds the image in
#        its build phase, before the tasks take their slots;
# open:  the same Dockerfile given as the provider's `build_context` parameter: the image is
#        built when the first task opens, the other tasks of the first CONCURRENCY waiting in
#        their slots — what every run did before.
# Prints one tab-separated line per repetition (seconds of each, ratio phase ÷ open) and,
# last, `median<TAB>phase_s<TAB>open_s<TAB>ratio`. Uses $DOCKER_HOST if a daemon answers
# there, else starts a private one (dev.sh's start_docker). The tasks' `FROM ubuntu:24.04` is a
# local busybox image tagged so. Defaults: N 100, CONCURRENCY 8, BUILD_S 5, REPS 3.
# Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-100}"
CONC="${3:-8}"
BUILD_S="${4:-5}"
REPS="${5:-3}"
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
# The tasks' base: busybox with bash (the host's), tagged as the Dockerfiles name it.
mkdir -p "$WORK/base/root/bin"
cp /usr/bin/bash "$WORK/base/root/bin/bash"
for lib in $(ldd /usr/bin/bash | grep -o '/[^ ]*'); do
    mkdir -p "$WORK/base/root$(dirname "$lib")"
    cp "$lib" "$WORK/base/root$lib"
done
printf 'FROM agentcompass-test/busybox:1\nCOPY root/ /\n' >"$WORK/base/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q -t ubuntu:24.04 "$WORK/base" >/dev/null 2>&1

now() { date +%s%N; }

# A task directory: DIR, its image built from a context holding MARKER (with a Dockerfile
# beside the task when OWN is 1).
task() {
    local dir="$1" marker="$2" own="$3"
    mkdir -p "$dir/solution" "$dir/tests" "$dir/environment"
    printf 'schema_version = "1.4"\n[environment]\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\nworkdir = "/app"\n' \
        >"$dir/task.toml"
    echo 'Copy /built.txt to /app/seen.txt.' >"$dir/instruction.md"
    printf '#!/bin/bash\ncat /built.txt > /app/seen.txt\n' >"$dir/solution/solve.sh"
    printf '#!/bin/bash\n[ "$(cat /built.txt)" = "$(cat /app/seen.txt)" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n' \
        >"$dir/tests/test.sh"
    if [ "$own" = 1 ]; then
        context "$dir/environment" "$marker"
    fi
}

# A build context taking BUILD_S seconds, its image carrying MARKER.
context() {
    mkdir -p "$1"
    echo "$2" >"$1/marker.txt"
    printf 'FROM ubuntu:24.04\nRUN sleep %s\nCOPY marker.txt /built.txt\n' "$BUILD_S" >"$1/Dockerfile"
}

run() { # ARGS... -> exit status; results under $WORK/out
    "$HOST" run harbor oracle bench-model --env docker --task-concurrency "$CONC" \
        --progress none --results-dir "$WORK/out" "$@" >"$WORK/stdout" 2>"$WORK/stderr" || {
        tail -3 "$WORK/stderr" >&2
        return 1
    }
}

phase() { # rep -> seconds
    local rep="$1" tasks="$WORK/phase-$1" i t0
    for i in $(seq 0 $((N - 1))); do
        task "$tasks/t$i" "phase $rep $$" 1
    done
    t0=$(now)
    run --benchmark-params "{\"path\": \"$tasks\"}" \
        --env-params "{\"docker_host\": \"$DOCKER_HOST\"}"
    echo "scale=2; ($(now) - $t0) / 1000000000" | bc
}

open() { # rep -> seconds
    local rep="$1" base="$WORK/open-$1" i t0
    context "$base/ctx" "open $rep $$"
    for i in $(seq 0 $((N - 1))); do
        task "$base/tasks/t$i" "" 0
    done
    t0=$(now)
    run --benchmark-params "{\"path\": \"$base/tasks\"}" \
        --env-params "{\"docker_host\": \"$DOCKER_HOST\", \"build_context\": \"$base/ctx\"}"
    echo "scale=2; ($(now) - $t0) / 1000000000" | bc
}

results=()
for rep in $(seq "$REPS"); do
    p=$(phase "$rep")
    o=$(open "$rep")
    ratio=$(echo "scale=3; $p / $o" | bc)
    printf '%s\t%s\t%s\t%s\n' "$rep" "$p" "$o" "$ratio"
    results+=("$p $o $ratio")
done
printf '%s\n' "${results[@]}" | sort -k3 -n | awk -v n="$REPS" \
    'NR == int((n + 1) / 2) { printf "median\t%s\t%s\t%s\n", $1, $2, $3 }'
