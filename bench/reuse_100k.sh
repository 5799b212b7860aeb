#!/usr/bin/env bash
# `--reuse` of a finished 100,000-task run: wall time and peak RSS (issue 20).
#
# Usage: bench/reuse_100k.sh [HOST_BINARY] [TASKS]
# Makes a real TASKS-task QA run (default 100000; qa + example_calculator, analysis off), then
# runs the same request with `--reuse` under /usr/bin/time -v: every task is imported (copied,
# its artifacts verified), none rerun.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "$@"
package_plugins qa_pack example_pack
qa_dataset "$work/data.jsonl" "$tasks" 7
run() {
    qa_run --task-concurrency 100 "$@"
}
t0=$(date +%s%N)
run >/dev/null 2>&1
t1=$(date +%s%N)
echo "the run: $tasks tasks in $(( (t1 - t0) / 1000000 )) ms" >&2
# The run's dirty pages are written back before the timed reuse, not during it.
sync
/usr/bin/time -v bash -c "$(declare -f run qa_run); host='$host' work='$work' run --reuse" >"$work/out.txt" 2>"$work/time.txt"
reused="$(find "$(tail -1 "$work/out.txt")/details" -mindepth 2 -maxdepth 2 -type d | wc -l)"
echo "reused run: $reused task directories"
grep -E "Elapsed|Maximum resident|User time|System time" "$work/time.txt"
