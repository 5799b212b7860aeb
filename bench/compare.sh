#!/usr/bin/env bash
# Side-by-side benchmark: agentcompass-host (release) against Inspect AI 0.3.285 on this machine.
#
#   bench/compare.sh [--quick] [--rebuild] [--keep]
#
#   --quick    fewer repetitions, no 100,000-task run
#   --rebuild  run `cargo build --release --workspace` and re-bundle the plugins even when the
#              release binaries exist (default: build only when missing)
#   --keep     keep the results/log directories of every run under bench/.work/ (default: each
#              run's output is measured with `du -sb` and all are deleted when the script ends;
#              the 100,000-task runs need ~4 GB meanwhile)
#
# Workloads (each measured with /usr/bin/time -v for peak RSS; ours and Inspect alternate):
#   startup    1 trivial QA task
#   qa         N = 1,000, 5,000 and 10,000 trivial QA tasks ("What is 2+2? ..." -> "4"); ours through the
#              openai_chat harness against scripted-llm on 127.0.0.1, Inspect with mockllm/model
#              (usage set on every output, so no tiktoken download), 100 at a time
#   qa100k     100,000 QA tasks, ours only (memory growth 1k -> 100k)
#   sandbox    500 tasks each running `sh -c 'echo $((a + b))'` in an isolating environment:
#              ours `example_self_check` in the `sandbox` environment (bubblewrap), Inspect's
#              `local` sandbox via sandbox().exec(); plus, for reference, ours in the unisolated
#              `host_process` environment (Inspect's `local` sandbox does not isolate either)
#   reuse      `--reuse` over a finished 10,000-task run of ours (every task imported, none
#              rerun), and over the 100,000-task run
#   agents     1,000 `cli_agent` tasks alive at once, each agent `sleep 20` in its own `sandbox`
#              (--task-concurrency and --provider-limit sandbox=1000; ours only): host RSS, wall
#   live       1,000 `sandbox` sessions open at once, each alive 60 s with a command every 5 s
#              (bench/live_sessions.rs; --quick: 200 sessions for 20 s): latency, RSS, fds
#   docker     100 tasks of `example_self_check` in the `docker` environment (busybox image,
#              8 at a time) against the raw Docker CLI doing the same (`docker run -d`,
#              `docker exec`, `docker rm -f`; bench/docker_overhead.sh), on a private daemon
#              unless $DOCKER_HOST answers; skipped when dockerd is not installed
#   podman     the same 100 tasks in the `podman` environment (a private service the run
#              starts, and an already running one) against the raw Podman CLI (`podman run -d`,
#              `podman exec`, `podman rm -f -t 0`; bench/podman_overhead.sh), on a private
#              store; skipped when podman is not installed
#
# Inspect runs in a fresh network namespace (`unshare -n`, loopback only, down) so that it
# cannot reach anything; ours talks only to scripted-llm on 127.0.0.1.
# Output: bench/RESULTS.md (also printed); raw measurements in bench/.work/<stamp>/runs.tsv.
# Not part of the test suite.
set -euo pipefail

QUICK=0
REBUILD=0
KEEP=0
for arg in "$@"; do
    case "$arg" in
        --quick) QUICK=1 ;;
        --rebuild) REBUILD=1 ;;
        --keep) KEEP=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "compare.sh: unknown argument '$arg' (try --help)" >&2
            exit 2
            ;;
    esac
done

BENCH="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
INSPECT_VERSION="0.3.285"
VENV="$BENCH/.venv"
PY="$VENV/bin/python"
RELEASE="${CARGO_TARGET_DIR:-$ROOT/target}/release"
HOST="$RELEASE/agentcompass-host"
SCRIPTED="$RELEASE/scripted-llm"
CONCURRENCY=100
TIMEOUT_S=3600 # per measured command

if [ "$QUICK" -eq 1 ]; then
    REPS_STARTUP=3 REPS_1K=2 REPS_5K=1 REPS_10K=1 REPS_SANDBOX=2 REPS_AGENTS=1 RUN_100K=0
else
    REPS_STARTUP=5 REPS_1K=3 REPS_5K=2 REPS_10K=2 REPS_SANDBOX=3 REPS_AGENTS=2 RUN_100K=1
fi

STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
WORK="$BENCH/.work/$STAMP"
TSV="$WORK/runs.tsv"
SCRIPT_START=$(date +%s)

log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
    printf '[compare] ERROR: %s\n' "$*" >&2
    exit 1
}

# --- cleanup ------------------------------------------------------------------------------------
LLM_PID=""
cleanup() {
    local rc=$?
    if [ -n "$LLM_PID" ] && kill -0 "$LLM_PID" 2>/dev/null; then
        kill "$LLM_PID" 2>/dev/null || true
        wait "$LLM_PID" 2>/dev/null || true
    fi
    if [ "$KEEP" -eq 0 ]; then rm -rf "$WORK/out" "$WORK/bin"; fi
    [ "$rc" -eq 0 ] || log "failed (exit $rc); scratch files in $WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- prerequisites ------------------------------------------------------------------------------
apt_install() {
    log "installing Debian package(s): $*"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y "$@" >/dev/null 2>&1 ||
        { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y "$@" >/dev/null; } ||
        die "cannot install $*"
}
[ -x /usr/bin/time ] || apt_install time
command -v bwrap >/dev/null 2>&1 || apt_install bubblewrap
command -v python3 >/dev/null 2>&1 || die "python3 is required"

mkdir -p "$WORK/out"
printf 'scenario\ttool\tn\trep\twall_s\tmax_rss_kb\tresult_bytes\tload1\tuser_s\tsys_s\n' >"$TSV"

# Inspect AI in a virtualenv
if ! "$VENV/bin/inspect" --version 2>/dev/null | grep -qx "$INSPECT_VERSION"; then
    log "installing inspect-ai==$INSPECT_VERSION into $VENV (PyPI)"
    [ -x "$PY" ] || python3 -m venv "$VENV"
    "$PY" -m pip install -q --disable-pip-version-check "inspect-ai==$INSPECT_VERSION" ||
        die "pip install inspect-ai==$INSPECT_VERSION failed"
fi

# Our release binaries and bundled plugins
LIVE="$RELEASE/examples/live_sessions"
ENTER="$RELEASE/agentcompass-sandbox-enter"
if [ "$REBUILD" -eq 1 ] || [ ! -x "$HOST" ] || [ ! -x "$SCRIPTED" ] || [ ! -x "$LIVE" ] ||
    [ ! -x "$ENTER" ] ||
    ! ls "$RELEASE"/plugins/*.so >/dev/null 2>&1; then
    log "building the release workspace (cargo build --release --workspace, the live_sessions example)"
    (cd "$ROOT" && cargo build --release --workspace &&
        cargo build --release -p agentcompass-e2e --example live_sessions) || die "cargo build failed"
    log "bundling plugins into $RELEASE/plugins"
    # Reuse dev.sh's own definitions (profile_dir, bundle_plugins) without running dev.sh.
    (cd "$ROOT" && source <(sed -n -e '/^profile_dir()/p' -e '/^ALL_PLUGINS=/p' -e '/^bundle_plugins()/,/^}/p' dev.sh) &&
        bundle_plugins release "${ALL_PLUGINS[@]}") || die "bundling the plugins failed"
fi

# Snapshot the binaries: other builds may replace target/release while this runs. The host
# loads its bundled plugins from <install dir>/plugins, so they are copied alongside.
mkdir -p "$WORK/bin"
cp "$HOST" "$SCRIPTED" "$LIVE" "$ENTER" "$WORK/bin/"
cp -r "$RELEASE/plugins" "$WORK/bin/plugins"
HOST="$WORK/bin/agentcompass-host"
SCRIPTED="$WORK/bin/scripted-llm"
# A file just written is mapped from the folios the copy left in the page cache: the host ran
# with 1.5-3 MiB more resident code from a fresh copy than from the same bytes read back from
# disk (PROFILE.md). Write the copies out and drop their cached pages, so the host is measured
# as an installed binary is.
sync
"$PY" - "$WORK/bin"/* "$WORK/bin/plugins"/*.so <<'PYEOF'
import os, sys
for path in filter(os.path.isfile, sys.argv[1:]):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PYEOF

# Inspect runs in its own network namespace when possible (nothing but a downed loopback).
NETNS=()
if unshare -n true 2>/dev/null; then
    NETNS=(unshare -n)
else
    log "warning: 'unshare -n' unavailable; Inspect runs in the host network namespace"
fi
# An empty tiktoken cache: if Inspect ever tried to count tokens it would fail, not download.
mkdir -p "$WORK/tiktoken-empty"
INSPECT_ENV=(env -u INSPECT_TELEMETRY -u INSPECT_EVAL_MODEL TIKTOKEN_CACHE_DIR="$WORK/tiktoken-empty"
    INSPECT_DISPLAY=none)

# --- scripted model server ----------------------------------------------------------------------
cat >"$WORK/script.json" <<'EOF'
{"rules": [{"responses": [{"text": "4", "usage": {"prompt_tokens": 20, "completion_tokens": 1}}]}]}
EOF
"$SCRIPTED" --script "$WORK/script.json" --port-file "$WORK/port" >"$WORK/scripted-llm.log" 2>&1 &
LLM_PID=$!
for _ in $(seq 100); do
    [ -s "$WORK/port" ] && break
    kill -0 "$LLM_PID" 2>/dev/null || die "scripted-llm exited: $(cat "$WORK/scripted-llm.log")"
    sleep 0.05
done
[ -s "$WORK/port" ] || die "scripted-llm wrote no port file"
PORT="$(cat "$WORK/port")"
log "scripted-llm on 127.0.0.1:$PORT (pid $LLM_PID)"

# --- datasets -----------------------------------------------------------------------------------
SIZES=(1 1000 5000 10000)
[ "$RUN_100K" -eq 1 ] && SIZES+=(100000)
for n in "${SIZES[@]}"; do
    "$PY" "$BENCH/compare_lib.py" dataset "$n" "$WORK/qa-$n.jsonl"
done

# --- measurement --------------------------------------------------------------------------------
# measure SCENARIO TOOL N REP BYTES_DIR -- CMD...   (BYTES_DIR: what `du -sb` counts afterwards)
# Sets LAST_OUT (the command's stdout file).
measure() {
    local scenario="$1" tool="$2" n="$3" rep="$4" bytes_dir="$5"
    shift 6
    local tag="$scenario-$tool-$n-$rep"
    local tfile="$WORK/time-$tag.txt"
    LAST_OUT="$WORK/stdout-$tag.txt"
    local load1 t0 t1 rc=0
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    t0=$(date +%s%N)
    timeout --kill-after=10 "$TIMEOUT_S" /usr/bin/time -v -o "$tfile" "$@" >"$LAST_OUT" 2>"$WORK/stderr-$tag.txt" || rc=$?
    t1=$(date +%s%N)
    if [ "$rc" -ne 0 ]; then
        tail -20 "$WORK/stderr-$tag.txt" >&2 || true
        die "$tag: command failed (exit $rc): $*"
    fi
    local wall rss user sys bytes
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
    user=$(awk -F': ' '/User time/ { print $2 }' "$tfile")
    sys=$(awk -F': ' '/System time/ { print $2 }' "$tfile")
    bytes=$(du -sb "$bytes_dir" | cut -f1)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$scenario" "$tool" "$n" "$rep" "$wall" "$rss" "$bytes" "$load1" "$user" "$sys" >>"$TSV"
    log "$(printf '%-9s %-7s n=%-6s rep %s: %8ss  %7s tasks/s  rss %6s MiB  %s B/task  load %s' \
        "$scenario" "$tool" "$n" "$rep" "$wall" \
        "$(awk -v n="$n" -v w="$wall" 'BEGIN { printf "%.1f", n / w }')" \
        "$((rss / 1024))" "$((bytes / n))" "$load1")"
}

# The one run directory under a fresh results dir (or the newest, for --reuse).
run_dir_of() { ls -d "$1"/*/*/ 2>/dev/null | sort | tail -1; }

ours_qa() { # SCENARIO N REP [extra args...]
    local scenario="$1" n="$2" rep="$3"
    shift 3
    local res="$WORK/out/ours-qa-$n-$rep"
    mkdir -p "$res"
    measure "$scenario" ours "$n" "$rep" "$res" -- \
        "$HOST" run qa openai_chat bench-model \
        --benchmark-params "{\"path\": \"$WORK/qa-$n.jsonl\"}" --env host_process \
        --task-concurrency "$CONCURRENCY" --model-base-url "http://127.0.0.1:$PORT/v1" \
        --model-api-key x --progress none --results-dir "$res" "$@"
    "$PY" "$BENCH/compare_lib.py" check-ours "$(run_dir_of "$res")" "$n" ||
        die "ours $scenario n=$n: unexpected results"
}

ours_reuse() { # N REP (over the finished run of ours_qa qa N REP)
    local n="$1" rep="$2" res="$WORK/out/ours-qa-$1-$2"
    local before
    before="$(run_dir_of "$res")"
    # du only the new run dir: measure into a placeholder, then fix the byte count below.
    local load1 t0 t1 tfile="$WORK/time-reuse-ours-$n-$rep.txt" rc=0
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    sleep 1 # run ids are second-resolution timestamps
    t0=$(date +%s%N)
    timeout --kill-after=10 "$TIMEOUT_S" /usr/bin/time -v -o "$tfile" \
        "$HOST" run qa openai_chat bench-model \
        --benchmark-params "{\"path\": \"$WORK/qa-$n.jsonl\"}" --env host_process \
        --task-concurrency "$CONCURRENCY" --model-base-url "http://127.0.0.1:$PORT/v1" \
        --model-api-key x --progress none --results-dir "$res" --reuse \
        >"$WORK/stdout-reuse-$n-$rep.txt" 2>"$WORK/stderr-reuse-$n-$rep.txt" || rc=$?
    t1=$(date +%s%N)
    [ "$rc" -eq 0 ] || die "reuse n=$n: exit $rc: $(tail -5 "$WORK/stderr-reuse-$n-$rep.txt")"
    local after
    after="$(run_dir_of "$res")"
    [ "$after" != "$before" ] || die "reuse n=$n: no new run directory"
    "$PY" "$BENCH/compare_lib.py" check-ours "$after" "$n" --reused ||
        die "reuse n=$n: not every task was reused"
    local wall rss user sys bytes
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tfile")
    user=$(awk -F': ' '/User time/ { print $2 }' "$tfile")
    sys=$(awk -F': ' '/System time/ { print $2 }' "$tfile")
    bytes=$(du -sb "$after" | cut -f1)
    printf 'reuse\tours\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$n" "$rep" "$wall" "$rss" "$bytes" "$load1" "$user" "$sys" >>"$TSV"
    log "$(printf 'reuse     ours    n=%-6s rep %s: %8ss  rss %6s MiB  load %s' "$n" "$rep" "$wall" "$((rss / 1024))" "$load1")"
}

inspect_run() { # SCENARIO TASK N REP
    local scenario="$1" task="$2" n="$3" rep="$4"
    local logs="$WORK/out/inspect-$scenario-$n-$rep"
    mkdir -p "$logs"
    measure "$scenario" inspect "$n" "$rep" "$logs" -- \
        "${NETNS[@]}" "${INSPECT_ENV[@]}" "$VENV/bin/inspect" eval "$BENCH/inspect_tasks.py@$task" \
        -T "n=$n" --model mockllm/model --max-samples "$CONCURRENCY" \
        --max-connections "$CONCURRENCY" --log-dir "$logs" --log-format eval --no-log-images \
        --display none --log-level warning --no-score-display
    "$PY" "$BENCH/compare_lib.py" check-inspect "$logs" "$n" ||
        die "inspect $scenario n=$n: unexpected log"
}

ours_sandbox() { # N REP [ENV]  (ENV: sandbox, or host_process for the unisolated reference)
    local n="$1" rep="$2" env="${3:-sandbox}"
    local scenario="sandbox" res="$WORK/out/ours-$env-$1-$2"
    [ "$env" = sandbox ] || scenario="exec_$env"
    mkdir -p "$res"
    measure "$scenario" ours "$n" "$rep" "$res" -- \
        "$HOST" run example_self_check none bench-model --benchmark-params "{\"size\": $n}" \
        --env "$env" --task-concurrency "$CONCURRENCY" --progress none --results-dir "$res"
    "$PY" "$BENCH/compare_lib.py" check-ours "$(run_dir_of "$res")" "$n" ||
        die "ours $scenario n=$n: unexpected results"
}

# Results are kept until the script ends (the EXIT trap removes $WORK/out): on ext4 without a
# journal, deleting a run's tens of thousands of files makes every inode created in the next
# five minutes scan the recently deleted ones (`recently_deleted` in `find_inode_bit`: 25 % of a
# 5,000-task run's CPU right after a deletion), which measures the benchmark's own cleanup, not
# the host. Inspect's runs write one file each and are unaffected either way.

# qa_side_by_side SCENARIO N REPS: ours and Inspect on N QA tasks, alternating, REPS times.
qa_side_by_side() {
    local rep
    for rep in $(seq "$3"); do
        ours_qa "$1" "$2" "$rep"
        inspect_run "$1" qa "$2" "$rep"
    done
}

# --- machine ------------------------------------------------------------------------------------
"$PY" "$BENCH/compare_lib.py" machine "$WORK/meta.json" \
    host_bin="$RELEASE/agentcompass-host" inspect_version="$("$VENV/bin/inspect" --version)" \
    git_head="$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    git_dirty="$(cd "$ROOT" && git status --porcelain -- host plugins plugin-api 2>/dev/null | wc -l)" \
    quick="$QUICK" concurrency="$CONCURRENCY" netns="${NETNS[*]:-none}"

log "work dir $WORK (quick=$QUICK)"

# --- warm-up (page cache, .pyc files; not recorded) ---------------------------------------------
log "warm-up"
(
    TSV=/dev/null
    ours_qa warmup 1 0
    inspect_run warmup qa 1 0
) >/dev/null 2>&1 || die "warm-up failed (rerun to see why: bench/compare.sh --quick)"

# --- 1. startup: one task -----------------------------------------------------------------------
qa_side_by_side startup 1 "$REPS_STARTUP"

# --- 2. QA 1,000 --------------------------------------------------------------------------------
qa_side_by_side qa 1000 "$REPS_1K"

# --- 3. sandbox 500 -----------------------------------------------------------------------------
for rep in $(seq "$REPS_SANDBOX"); do
    ours_sandbox 500 "$rep"
    inspect_run sandbox sandbox_exec 500 "$rep"
    ours_sandbox 500 "$rep" host_process # reference: the same work without isolation
done

# --- 3b. QA 5,000 -------------------------------------------------------------------------------
qa_side_by_side qa 5000 "$REPS_5K"

# --- 3c. 1,000 agent tasks alive at once, ours only ---------------------------------------------
for rep in $(seq "$REPS_AGENTS"); do
    res="$WORK/out/ours-agents-1000-$rep"
    mkdir -p "$res"
    measure agents ours 1000 "$rep" "$res" -- \
        "$HOST" run qa cli_agent bench-model --benchmark-params "{\"path\": \"$WORK/qa-1000.jsonl\"}" \
        --harness-params '{"command": "sleep 20"}' --env sandbox --task-concurrency 1000 \
        --provider-limit sandbox=1000 --model-base-url "http://127.0.0.1:$PORT/v1" \
        --model-api-key x --progress none --results-dir "$res"
    "$PY" "$BENCH/compare_lib.py" check-ours "$(run_dir_of "$res")" 1000 --any-score ||
        die "ours agents n=1000: unexpected results"
done

# --- 4. QA 10,000 and --reuse over it -----------------------------------------------------------
for rep in $(seq "$REPS_10K"); do
    ours_qa qa 10000 "$rep"
    ours_reuse 10000 "$rep"
    inspect_run qa qa 10000 "$rep"
done

# --- 5. QA 100,000, ours only, and --reuse over it -----------------------------------------------
if [ "$RUN_100K" -eq 1 ]; then
    ours_qa qa 100000 1
    ours_reuse 100000 1
fi

# --- 6. live sandbox sessions, ours only --------------------------------------------------------
if [ "$QUICK" -eq 1 ]; then LIVE_ARGS=(200 20 5); else LIVE_ARGS=(1000 60 5); fi
log "live sessions: sandbox ${LIVE_ARGS[*]}"
(ulimit -n 65536 2>/dev/null || true
    "$WORK/bin/live_sessions" sandbox "${LIVE_ARGS[@]}" "$WORK/bin/plugins") >"$WORK/live.txt" 2>"$WORK/live.err" ||
    die "live sessions failed: $(tail -5 "$WORK/live.err")"
sed 's/^/    /' "$WORK/live.txt" >&2

# --- 7. docker per-task cost against the raw CLI, ours only -------------------------------------
if [ "$QUICK" -eq 1 ]; then DOCKER_REPS=1; else DOCKER_REPS=3; fi
if command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1; then
    log "docker: 100 tasks, 8 at a time, ours vs the raw CLI"
    "$BENCH/docker_overhead.sh" "$HOST" 100 8 "$DOCKER_REPS" >"$WORK/docker.tsv" 2>"$WORK/docker.err" ||
        die "docker workload failed: $(tail -5 "$WORK/docker.err")"
    sed 's/^/    /' "$WORK/docker.tsv" >&2
else
    log "docker: skipped (dockerd or the docker CLI is not installed)"
fi

# --- 7b. podman per-task cost against the raw CLI, ours only -----------------------------------
if command -v podman >/dev/null 2>&1; then
    log "podman: 100 tasks, 8 at a time, ours (private service, given socket) vs the raw CLI"
    "$BENCH/podman_overhead.sh" "$HOST" 100 8 "$DOCKER_REPS" >"$WORK/podman.tsv" 2>"$WORK/podman.err" ||
        die "podman workload failed: $(tail -5 "$WORK/podman.err")"
    sed 's/^/    /' "$WORK/podman.tsv" >&2
else
    log "podman: skipped (podman is not installed)"
fi

# --- 8. rate-limit back-off, adaptive vs fixed, ours only ---------------------------------------
log "rate limits: 200 tasks at 32 against a 4-at-once endpoint, adaptive vs fixed"
"$BENCH/rate_limits.sh" "$HOST" 200 >"$WORK/rate_limits.tsv" 2>"$WORK/rate_limits.err" ||
    die "rate-limit workload failed: $(tail -5 "$WORK/rate_limits.err")"
sed 's/^/    /' "$WORK/rate_limits.tsv" >&2

# --- report -------------------------------------------------------------------------------------
ELAPSED=$(($(date +%s) - SCRIPT_START))
"$PY" "$BENCH/compare_lib.py" report "$TSV" "$WORK/meta.json" "$BENCH/RESULTS.md" \
    --script-seconds "$ELAPSED" --docker "$WORK/docker.tsv" --podman "$WORK/podman.tsv" \
    --live "$WORK/live.txt" \
    --rate-limits "$WORK/rate_limits.tsv"
cat "$BENCH/RESULTS.md"
log "done in ${ELAPSED}s; raw measurements: $TSV"
