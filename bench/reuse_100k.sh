#!/usr/bin/env bash
# `--reuse` of a finished 100,000-task run: wall time and peak RSS (issue 20).
#
# Usage: bench/reuse_100k.sh [HOST_BINARY] [TASKS]
# Makes a real TASKS-task QA run (default 100000; qa + example_calculator, analysis off), then
# runs the same request with `--reuse` under /usr/bin/time -v: every task is imported (copied,
# its artifacts verified), none rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
host="${1:-target/release/agentcompass-host}"
tasks="${2:-100000}"
profile_dir="$(dirname "$host")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/plugins"
for lib in qa_pack example_pack; do
    "$host" plugin package "$profile_dir/lib$lib.so" --out "$work/plugins/$lib" >/dev/null
done
chmod -R 755 "$work/plugins"
python3 - "$work/data.jsonl" "$tasks" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        out.write(json.dumps({"id": f"q-{i:07d}", "question": f"What is {i} + 1?", "answer": str(i + 1),
                              "category": ["add", "mul", "sub"][i % 3]}) + "\n")
PY
run() {
    "$host" --no-bundled-plugins --plugin-dir "$work/plugins/qa_pack" --plugin-dir "$work/plugins/example_pack" \
        run qa example_calculator calc --benchmark-params "{\"path\": \"$work/data.jsonl\"}" \
        --harness-params '{"wrong_every": 7}' --no-enable-analysis --results-dir "$work/results" \
        --task-concurrency 100 --progress none "$@"
}
t0=$(date +%s%N)
run >/dev/null 2>&1
t1=$(date +%s%N)
echo "the run: $tasks tasks in $(( (t1 - t0) / 1000000 )) ms" >&2
# The run's dirty pages are written back before the timed reuse, not during it.
sync
/usr/bin/time -v bash -c "$(declare -f run); host='$host' work='$work' run --reuse" >"$work/out.txt" 2>"$work/time.txt"
reused="$(find "$(tail -1 "$work/out.txt")/details" -mindepth 2 -maxdepth 2 -type d | wc -l)"
echo "reused run: $reused task directories"
grep -E "Elapsed|Maximum resident|User time|System time" "$work/time.txt"
