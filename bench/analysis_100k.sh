#!/usr/bin/env bash
# `analysis --input` on a 100,000-task run: wall time and peak RSS (issue 19).
#
# Usage: bench/analysis_100k.sh [HOST_BINARY] [TASKS]
# Makes a real 100-task QA run (qa + example_calculator, analysis off), clones its published
# tasks into TASKS tasks (default 100000; each clone a real task directory under its own id),
# then runs `analysis --input RUN --override` under /usr/bin/time -v.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "$@"
package_plugins qa_pack example_pack
qa_dataset "$work/data.jsonl" 100 6
run="$(qa_run 2>/dev/null | tail -1)"
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
