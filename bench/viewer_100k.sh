#!/usr/bin/env bash
# The viewer and the report over a 100,000-task run: first page, index, paging every page and
# the viewer's RSS before and after, a filtered listing, the report's time and size (issue 16's
# figures; the e2e test `viewer::view_pages_a_large_run_with_flat_memory` checks the same
# behaviour on 5,000 tasks, untimed).
#
# Usage: bench/viewer_100k.sh [HOST_BINARY] [TASKS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "$@"
package_plugins example_pack
t0=$(date +%s%N)
run_dir="$("$host" --no-bundled-plugins --plugin-dir "$work/plugins/example_pack" \
    run example_self_check none m --benchmark-params "{\"size\": $tasks}" \
    --results-dir "$work/results" --task-concurrency 16 --progress none 2>/dev/null | tail -1)"
t1=$(date +%s%N)
echo "the run: $tasks tasks in $(( (t1 - t0) / 1000000 )) ms"
sync
"$host" --no-bundled-plugins view "$work/results" --port 0 >"$work/view.out" 2>/dev/null &
viewer=$!
bench_exit_pids="$viewer"
for _ in $(seq 100); do [ -s "$work/view.out" ] && break; sleep 0.1; done
port="$(head -1 "$work/view.out" | sed -E 's|.*127\.0\.0\.1:([0-9]+).*|\1|')"
rel="${run_dir#"$work/results/"}"
python3 - "$port" "$rel" "$viewer" "$tasks" <<'PY'
import json, sys, time, urllib.parse, urllib.request
port, rel, pid, tasks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
run = urllib.parse.quote(rel, safe="")
def get(query):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/tasks?run={run}&{query}") as reply:
        return json.load(reply)
def rss_kb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
t = time.monotonic(); first = get("size=100"); first_ms = (time.monotonic() - t) * 1000
assert first["total"] == tasks, first["total"]
t = time.monotonic()
while not get("size=1")["index_ready"]:
    time.sleep(0.1)
index_s = time.monotonic() - t
before = rss_kb()
t = time.monotonic(); seen = 0
for page in range((tasks + 99) // 100):
    seen += len(get(f"size=100&page={page}")["tasks"])
paging_s = time.monotonic() - t
assert seen == tasks, seen
after = rss_kb()
t = time.monotonic(); get("filter=correct"); filtered_ms = (time.monotonic() - t) * 1000
print(f"viewer: first page {first_ms:.0f} ms; index ready {index_s:.1f} s later; "
      f"{(tasks + 99) // 100} pages in {paging_s:.1f} s; RSS {before} kB before paging, {after} kB after; "
      f"filtered listing {filtered_ms:.0f} ms")
PY
t0=$(date +%s%N)
"$host" --no-bundled-plugins report "$run_dir" --out "$work/report.html" >/dev/null
t1=$(date +%s%N)
size="$(stat -c %s "$work/report.html")"
echo "report: $(( (t1 - t0) / 1000000 )) ms, $(( size / 1024 )) KiB ($(( size / tasks )) bytes a task)"
