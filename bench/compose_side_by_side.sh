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

now() { date +%s%N; }

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
        echo "ours did not score 1 on every task: $(tail -5 "$WORK/stderr")" >&2
        return 1
    }
    rm -rf "$out"
    echo "scale=1; $took / 1000000 / $N" | bc
}

# Warm: each builds (or caches the layers of) the images once.
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
