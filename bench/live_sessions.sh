#!/usr/bin/env bash
# Many live sessions at once (issue 20): SESSIONS (default 1000) sessions of PROVIDER (default
# sandbox) open together, each alive SECONDS (60) with a command every PERIOD (5) seconds.
# Usage: bench/live_sessions.sh [PROVIDER] [SESSIONS] [SECONDS] [PERIOD]   (release build)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%dT%H:%MZ), ulimit -n $(ulimit -n)"
cargo run --release -q -p agentcompass-e2e --example live_sessions -- \
    "${1:-sandbox}" "${2:-1000}" "${3:-60}" "${4:-5}"
