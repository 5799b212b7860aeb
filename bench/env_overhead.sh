#!/usr/bin/env bash
# Per-task overhead of `sandbox` and `docker` against bwrap and `docker run` (release build).
# Needs a Docker daemon: DOCKER_HOST (default: the private one ./dev.sh test starts is gone
# after the tests, so start one: see start_docker in dev.sh) with agentcompass-test/busybox:1.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DOCKER_HOST:?set DOCKER_HOST to a daemon that has agentcompass-test/busybox:1}"
cargo build --release -p agentcompass-host -p docker-provider >/dev/null 2>&1
target="${CARGO_TARGET_DIR:-target}/release"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
"$target/agentcompass-host" plugin package "$target/libdocker_provider.so" --out "$dir/plugins" >/dev/null
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)"
cargo run --release -q -p agentcompass-e2e --example env_overhead -- "$dir/plugins" "$DOCKER_HOST" "${N:-200}"
