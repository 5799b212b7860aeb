#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS (default 600) one after the other, each as a single
# libFuzzer process (one core), then prints each target's final numbers.
#
#   fuzz/run_all.sh [SECONDS] [TARGET...]
#
# Environment: FUZZ_SANITIZER (address, the default, or none), FUZZ_TIMEOUT (seconds one
# input may take, default 1), FUZZ_MAX_LEN (largest input in bytes, default 4096).
# Logs go to fuzz/logs/TARGET.log, crashing inputs to fuzz/artifacts/TARGET/, the grown
# corpus to fuzz/corpus/TARGET/ (only the seed-* files there are kept in git).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(config_loader orchestration_loader harbor_task_toml plugin_manifest)
fi
sanitizer="${FUZZ_SANITIZER:-address}"
# cargo-fuzz passes nightly-only flags (-Z sanitizer, -Cpasses=sancov-module, ...): the
# stable toolchain accepts them with RUSTC_BOOTSTRAP=1.
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi
mkdir -p logs
cargo fuzz build --sanitizer "$sanitizer"

status=0
for target in "${targets[@]}"; do
    echo "== $target: ${seconds}s (sanitizer: $sanitizer)"
    mkdir -p "corpus/$target"
    # The regression inputs first: each must pass before fuzzing starts.
    if [ -d "regressions/$target" ] && [ -n "$(ls -A "regressions/$target")" ]; then
        cargo fuzz run --sanitizer "$sanitizer" "$target" "regressions/$target" -- \
            -runs=0 -timeout="${FUZZ_TIMEOUT:-1}" >"logs/$target.regressions.log" 2>&1 || {
            echo "   a regression input fails: see fuzz/logs/$target.regressions.log" >&2
            status=1
            continue
        }
    fi
    if cargo fuzz run --sanitizer "$sanitizer" "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-1}" -rss_limit_mb=2048 \
        -max_len="${FUZZ_MAX_LEN:-4096}" -print_final_stats=1 >"logs/$target.log" 2>&1; then
        echo "   ok: $(grep -E '^#[0-9]+[[:space:]]+DONE' "logs/$target.log" | tail -1)"
    else
        echo "   FAILED: see fuzz/logs/$target.log and fuzz/artifacts/$target/" >&2
        grep -E 'ERROR|panicked|SUMMARY' "logs/$target.log" | head -5 >&2 || true
        status=1
    fi
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
        "logs/$target.log" | sed 's/^/   /' || true
done
exit $status
