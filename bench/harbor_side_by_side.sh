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

TASKS="$WORK/tasks"
one_image_tasks "$TASKS" "$N" "image of the side-by-side bench $$"

# shellcheck source=/dev/null
source "$ROOT/bench/side_by_side.sh"
side_by_side
