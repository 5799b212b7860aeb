#!/usr/bin/env bash
# `analysis --input` on a 100,000-task run: wall time and peak RSS (issue 19).
#
# Usage: bench/analysis_100k.sh [HOST_BINARY] [TASKS]
# Makes a real 100-task QA run (qa + example_calculator, analysis off), clones its published
# tasks into TASKS tasks (default 100000; each clone a real task directory under its own id),
# then runs `analysis --input RUN --override` under /usr/bin/time -v.
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
python3 - "$work/data.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(100):
        out.write(json.dumps({"id": f"q-{i:06d}", "question": f"What is {i} + 1?", "answer": str(i + 1),
                              "category": ["add", "mul", "sub"][i % 3]}) + "\n")
PY
run="$("$host" --no-bundled-plugins --plugin-dir "$work/plugins/qa_pack" --plugin-dir "$work/plugins/example_pack" \
    run qa example_calculator calc --benchmark-params "{\"path\": \"$work/data.jsonl\"}" \
    --harness-params '{"wrong_every": 7}' --no-enable-analysis --results-dir "$work/results" --progress none 2>/dev/null | tail -1)"
python3 - "$run" "$tasks" <<'PY'
import hashlib, json, os, re, shutil, sys
run, total = sys.argv[1], int(sys.argv[2])
normal = os.path.join(run, "details", "normal")
sources = sorted(os.listdir(normal))
for i in range(len(sources), total):
    src = os.path.join(normal, sources[i % len(sources)])
    task_id = f"clone-{i:07d}"
    name = re.sub(r"[^A-Za-z0-9._=-]+", "_", task_id).strip("._-")[:80] + "--" + hashlib.sha256(task_id.encode()).hexdigest()
    dst = os.path.join(normal, name)
    shutil.copytree(src, dst)
    path = os.path.join(dst, "task.json")
    task = json.load(open(path))
    task["task_id"] = task_id
    json.dump(task, open(path, "w"))
print(f"{total} tasks in {run}", file=sys.stderr)
PY
# The clones' dirty pages are written back before the timed run, not during it.
sync
/usr/bin/time -v "$host" --no-bundled-plugins analysis --input "$run" --override 2>"$work/time.txt" >/dev/null
grep -E "analyzed|Elapsed|Maximum resident" "$work/time.txt"
