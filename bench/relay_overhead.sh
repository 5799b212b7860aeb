#!/usr/bin/env bash
# The in-environment model endpoint's cost on loopback: latency of one chat call through a
# ModelRelay vs direct, and RSS/descriptors of P relays (one per concurrent attempt).
# Usage: bench/relay_overhead.sh [N calls, default 1000] [P relays, default 100]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release -q -p agentcompass-gateway --example relay_overhead -- "${1:-1000}" "${2:-100}"
