#!/usr/bin/env bash
# Per-task wall time of the same two-service compose tasks (bench/compose_tasks.sh) run by
# Harbor 0.25 itself and by this host, side by side, both on Podman (issue 55), images warm
# (one warm-up run each before timing):
#
#   bench/compose_side_by_side.sh [HOST_BINARY] [N] [CONCURRENCY] [REPS]
#
# harbor: `harbor run -p TASKS -a oracle -e podman -n CONCURRENCY` (Harbor's podman
#         environment through podman-compose, installed into Harbor's venv by this script;
#         podman-compose does not wait for `service_healthy` on Podman 4.3, so Harbor's `main`
#         may start before the API answers);
# ours:   `agentcompass-host run harbor oracle m --env podman --task-concurrency CONCURRENCY`.
# Both must score 1 on every task. Both use one private Podman store and configuration under a
# temp dir (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF), the images loaded from the private
# Docker daemon's builds (no registry is reachable here). Prints one tab-separated line per
# repetition (ms a task each, ratio ours ÷ harbor) and, last,
# `median<TAB>ours_ms<TAB>harbor_ms<TAB>ratio`. Defaults: N 12, CONCURRENCY 4, REPS 3. Not part
# of the test suite.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/agentcompass-host}"
N="${2:-12}"
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

# shellcheck source=/dev/null
source "$ROOT/bench/compose_tasks.sh"
compose_base_images "$WORK/images"
mkdir -p "$WORK/podman"
podman_confs "$WORK/podman"
export CONTAINERS_CONF="$WORK/podman/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/podman/storage.conf"
docker save docker.io/library/ubuntu:24.04 docker.io/library/busybox:1.36 | podman load -q >/dev/null
# `podman load` names a saved `docker.io/library/x` `localhost/x`: the tasks name the former.
for image in ubuntu:24.04 busybox:1.36; do podman tag "localhost/$image" "docker.io/library/$image"; done
trap 'podman rm -af >/dev/null 2>&1 || true; podman network prune -f >/dev/null 2>&1 || true; rm -rf "$WORK" 2>/dev/null || true; [ -z "${DOCKERD_PID:-}" ] || stop_docker' EXIT
TASKS="$WORK/tasks"
compose_tasks "$TASKS" "$N"

# shellcheck source=/dev/null
source "$ROOT/bench/side_by_side.sh"
side_by_side
