# Shared set-up of the bench scripts that run the host on a large QA run; sourced, not run.
#
# After `bench_setup "$@"`: `host` (argument 1, default the release binary), `tasks` (argument 2,
# default 100000), `profile_dir` (where the host's plugin libraries were built) and `work` (a
# private temporary directory, removed at exit together with whatever `bench_on_exit` names).

bench_setup() {
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
    host="${1:-target/release/agentcompass-host}"
    tasks="${2:-100000}"
    profile_dir="$(dirname "$host")"
    work="$(mktemp -d)"
    bench_exit_pids=""
    trap 'for p in $bench_exit_pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
    mkdir -p "$work/plugins"
}

# Packages each named plugin library (`qa_pack`, `example_pack`, …) into `$work/plugins/NAME`.
package_plugins() {
    local lib
    for lib in "$@"; do
        "$host" plugin package "$profile_dir/lib$lib.so" --out "$work/plugins/$lib" >/dev/null
    done
    chmod -R 755 "$work/plugins"
}

# Writes COUNT arithmetic QA items to FILE, ids `q-` and WIDTH digits.
qa_dataset() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, count, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as out:
    for i in range(count):
        out.write(json.dumps({"id": f"q-{i:0{width}d}", "question": f"What is {i} + 1?", "answer": str(i + 1),
                              "category": ["add", "mul", "sub"][i % 3]}) + "\n")
PY
}

# `run qa example_calculator` over `$work/data.jsonl` (every 7th answer wrong, analysis off),
# results under `$work/results`; extra arguments follow.
qa_run() {
    "$host" --no-bundled-plugins --plugin-dir "$work/plugins/qa_pack" --plugin-dir "$work/plugins/example_pack" \
        run qa example_calculator calc --benchmark-params "{\"path\": \"$work/data.jsonl\"}" \
        --harness-params '{"wrong_every": 7}' --no-enable-analysis --results-dir "$work/results" \
        --progress none "$@"
}
