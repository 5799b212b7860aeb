#!/usr/bin/env bash
# The egress proxy's cost on loopback: latency of one request through it vs direct (hyper
# client and curl), and RSS/descriptors of P proxies with one open tunnel each.
# Usage: bench/egress_overhead.sh [N requests, default 1000] [P proxies, default 100]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release -q -p agentcompass-egress --example egress_overhead -- "${1:-1000}" "${2:-100}"
