# Shared by the benches that run the same Harbor tasks with Harbor 0.25 and this host on
# Podman (harbor_side_by_side.sh, compose_side_by_side.sh); sourced, not run. Reads HOST,
# VENV (Harbor's venv), TASKS, N, CONC, REPS and WORK.

now() { date +%s%N; }

# `harbor run -p TASKS -a oracle -e podman -n CONC`: ms a task; every task must score 1.
harbor() {
    local t0 jobs="$WORK/jobs"
    rm -rf "$jobs"
    t0=$(now)
    PATH="$VENV/bin:$PATH" "$VENV/bin/harbor" run -p "$TASKS" -a oracle -e podman -n "$CONC" \
        -o "$jobs" >"$WORK/harbor.out" 2>&1 || { tail -5 "$WORK/harbor.out" >&2; return 1; }
    local took=$(($(now) - t0))
    "$VENV/bin/python" - "$jobs" "$N" <<'PY' || return 1
import json, pathlib, sys
jobs, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
rewards = [json.loads(p.read_text()).get("verifier_result", {}) or {} for p in jobs.glob("*/*/result.json")]
ones = sum(1 for r in rewards if (r.get("rewards") or {}).get("reward") == 1)
if ones != n:
    sys.exit(f"harbor scored 1 on {ones} of {n} tasks")
PY
    echo "scale=1; $took / 1000000 / $N" | bc
}

# `agentcompass-host run harbor oracle m --env podman`: ms a task; every task must score 1.
ours() {
    local t0 out="$WORK/out"
    t0=$(now)
    "$HOST" run harbor oracle bench-model --env podman --benchmark-params "{\"path\": \"$TASKS\"}" \
        --task-concurrency "$CONC" --progress none --results-dir "$out" \
        >"$WORK/stdout" 2>"$WORK/stderr" || { tail -3 "$WORK/stderr" >&2; return 1; }
    local took=$(($(now) - t0))
    grep -q '| reward | native@1 | 1.0000 |' "$WORK/stderr" || {
        echo "ours did not score 1 on every task: $(tail -5 "$WORK/stdout")" >&2
        return 1
    }
    rm -rf "$out"
    echo "scale=1; $took / 1000000 / $N" | bc
}

# One warm-up run each, then REPS alternating repetitions: a line per repetition (ms a task
# each, ratio ours ÷ harbor), then the median by ratio.
side_by_side() {
    harbor >/dev/null
    ours >/dev/null
    local results=() rep o h ratio
    for rep in $(seq "$REPS"); do
        o=$(ours)
        h=$(harbor)
        ratio=$(echo "scale=3; $o / $h" | bc)
        printf '%s\t%s\t%s\t%s\n' "$rep" "$o" "$h" "$ratio"
        results+=("$o $h $ratio")
    done
    printf '%s\n' "${results[@]}" | sort -k3 -n | awk -v n="$REPS" \
        'NR == int((n + 1) / 2) { printf "median\t%s\t%s\t%s\n", $1, $2, $3 }'
}
