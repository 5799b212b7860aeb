#!/usr/bin/env bash
# Per-task wall time of the same Harbor tasks run by Harbor 0.25 itself and by this host, side
# by side, both on Podman (issue 54), images warm (one warm-up run each before timing):
#
#   bench/harbor_side_by_side.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# harbor: `harbor run -p TASKS -a oracle -e podman -n CONCURRENCY` (Harbor's podman environment
#         through podman-compose, installed into Harbor's venv by this script);
# ours:   `agentcompass-host run harbor oracle m --env podman --task-concurrency CONCURRENCY`.
# The N tasks share one `environment/Dockerfile` (`FROM ubuntu:24.04`, a COPY); the solution
# copies a file the image carries, the verifier compares; both must score 1 on every task.
# Both use one private Podman store and configuration under a temp dir (CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF), where `ubuntu:24.04` is a local busybox-with-bash image with the
# root user and `tar` Harbor's transfers need (no registry is reachable here).
# Prints one tab-separated line per repetition (ms a task each, ratio ours ÷ harbor) and, last,
# `median<TAB>ours_ms<TAB>harbor_ms<TAB>ratio`. Needs the private Docker daemon's busybox image
# (dev.sh's start_docker) only to assemble the base image. Defaults: N 16, CONCURRENCY 4,
# REPS 3. Not part of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-16}"
CONC="${3:-4}"
REPS="${4:-3}"
WORK="$(mktemp -d)"
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/harbor-0.25.0"

# shellcheck source=/dev/null
source <(sed -n -e '/^stop_docker()/,/^}/p' -e '/^start_docker()/,/^}/p' \
    -e '/^busybox_rootfs()/,/^}/p' -e '/^podman_confs()/,/^}/p' "$ROOT/dev.sh")
if ! { [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; }; then
    DOCKER_DIR=""
    DOCKERD_PID=""
    start_docker >&2
    trap 'stop_docker; rm -rf "$WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi
[ -x "$VENV/bin/harbor" ] || { echo "Harbor 0.25.0 is not in $VENV (./dev.sh test makes it)" >&2; exit 1; }
[ -x "$VENV/bin/podman-compose" ] || "$VENV/bin/python" -m pip install --quiet podman-compose >&2

# The base: busybox with bash, the root user and the applets Harbor's transfers use.
# shellcheck source=/dev/null
source "$ROOT/bench/one_image_tasks.sh"
base_image_context "$WORK/base" \
    'RUN echo "root:x:0:0:root:/root:/bin/sh" > /etc/passwd && echo "root:x:0:" > /etc/group' \
    'RUN for t in ln tar gzip find chown touch dirname basename; do [ -e /bin/$t ] || /bin/busybox ln -s busybox /bin/$t; done'
DOCKER_BUILDKIT=0 docker build -q -t agentcompass-bench/harbor-base:1 "$WORK/base" >/dev/null 2>&1
docker tag agentcompass-bench/harbor-base:1 ubuntu:24.04
mkdir -p "$WORK/podman"
podman_confs "$WORK/podman"
export CONTAINERS_CONF="$WORK/podman/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/podman/storage.conf"
docker save ubuntu:24.04 | podman load -q >/dev/null
trap 'podman rm -af >/dev/null 2>&1 || true; rm -rf "$WORK" 2>/dev/null || true; [ -z "${DOCKERD_PID:-}" ] || stop_docker' EXIT

now() { date +%s%N; }

TASKS="$WORK/tasks"
one_image_tasks "$TASKS" "$N" "image of the side-by-side bench $$"

harbor() { # -> ms a task; every task must score 1
    local t0 jobs="$WORK/jobs"
    rm -rf "$jobs"
    t0=$(now)
    PATH="$VENV/bin:$PATH" "$VENV/bin/harbor" run -p "$TASKS" -a oracle -e podman -n "$CONC" \
        -o "$jobs" >"$WORK/harbor.out" 2>&1 || { tail -5 "$WORK/harbor.out" >&2; return 1; }
    local took=$(($(now) - t0))
    "$VENV/bin/python" - "$jobs" "$N" <<'PY' || return 1
import json, pathlib, sys
jobs, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
rewards = [json.loads(p.read_text()).get("verifier_result", {}) or {} for p in jobs.glob("*/*/result.json")]
ones = sum(1 for r in rewards if (r.get("rewards") or {}).get("reward") == 1)
if ones != n:
    sys.exit(f"harbor scored 1 on {ones} of {n} tasks")
PY
    echo "scale=1; $took / 1000000 / $N" | bc
}

ours() { # -> ms a task; every task must score 1
    local t0 out="$WORK/out"
    t0=$(now)
    "$HOST" run harbor oracle bench-model --env podman --benchmark-params "{\"path\": \"$TASKS\"}" \
        --task-concurrency "$CONC" --progress none --results-dir "$out" \
        >"$WORK/stdout" 2>"$WORK/stderr" || { tail -3 "$WORK/stderr" >&2; return 1; }
    local took=$(($(now) - t0))
    grep -q '| reward | native@1 | 1.0000 |' "$WORK/stderr" || {
        echo "ours did not score 1 on every task: $(tail -5 "$WORK/stdout")" >&2
        return 1
    }
    rm -rf "$out"
    echo "scale=1; $took / 1000000 / $N" | bc
}

# Warm: each builds (or caches the layers of) the image once.
harbor >/dev/null
ours >/dev/null

results=()
for rep in $(seq "$REPS"); do
    o=$(ours)
    h=$(harbor)
    ratio=$(echo "scale=3; $o / $h" | bc)
    printf '%s\t%s\t%s\t%s\n' "$rep" "$o" "$h" "$ratio"
    results+=("$o $h $ratio")
done
printf '%s\n' "${results[@]}" | sort -k3 -n | awk -v n="$REPS" \
    'NR == int((n + 1) / 2) { printf "median\t%s\t%s\t%s\n", $1, $2, $3 }'
