"""Helpers of bench/compare.sh (datasets, result checks, machine facts, the Markdown report).

  compare_lib.py dataset N PATH
  compare_lib.py check-ours RUN_DIR N [--reused]
  compare_lib.py check-inspect LOG_DIR N            (needs inspect_ai: run with bench/.venv)
  compare_lib.py machine OUT.json KEY=VALUE...
  compare_lib.py report RUNS.tsv META.json OUT.md [--script-seconds S]

Not part of the test suite.
"""

import argparse
import csv
import datetime
import glob
import json
import os
import platform
import re
import statistics
import sys

QUESTION = "What is 2+2? Answer with only the number."


def cmd_dataset(args):
    with open(args.path, "w") as f:
        for i in range(1, args.n + 1):
            f.write(json.dumps({"id": f"q-{i:05d}", "question": QUESTION, "answer": "4"}) + "\n")


def fail(msg):
    print(f"check: {msg}", file=sys.stderr)
    sys.exit(1)


def cmd_check_ours(args):
    run = args.run_dir
    with open(os.path.join(run, "progress.json")) as f:
        progress = json.load(f)
    if progress.get("status") != "completed":
        fail(f"{run}: status {progress.get('status')}")
    if progress.get("total_tasks") != args.n or progress.get("completed_tasks") != args.n:
        fail(f"{run}: {progress.get('completed_tasks')}/{progress.get('total_tasks')} completed, want {args.n}")
    if args.reused:
        if progress.get("reused_tasks") != args.n or progress.get("attempts_started") != 0:
            fail(f"{run}: reused {progress.get('reused_tasks')}, attempts {progress.get('attempts_started')}")
    with open(os.path.join(run, "metrics.json")) as f:
        metrics = json.load(f)
    series = [s for s in metrics["series"] if s.get("role") == "headline"] or metrics["series"]
    head = series[0]
    if args.any_score:
        if head["counts"]["evaluated"] != args.n:
            fail(f"{run}: {head['counts']['evaluated']} of {args.n} evaluated")
        return
    if head["counts"]["evaluated"] != args.n or head["value"] != 1.0:
        fail(f"{run}: headline {head['value']} over {head['counts']}")


def cmd_check_inspect(args):
    from inspect_ai.log import read_eval_log

    logs = glob.glob(os.path.join(args.log_dir, "*.eval"))
    if len(logs) != 1:
        fail(f"{args.log_dir}: {len(logs)} .eval logs")
    h = read_eval_log(logs[0], header_only=True)
    if h.status != "success":
        fail(f"{logs[0]}: status {h.status}: {h.error}")
    if h.results.completed_samples != args.n:
        fail(f"{logs[0]}: {h.results.completed_samples} samples completed, want {args.n}")
    acc = h.results.scores[0].metrics["accuracy"].value
    if acc != 1.0:
        fail(f"{logs[0]}: accuracy {acc}")


def cmd_machine(args):
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_start": open("/proc/loadavg").read().split()[:3],
    }
    for kv in args.kv:
        k, _, v = kv.partition("=")
        meta[k] = v
    if "host_bin" in meta and os.path.exists(meta["host_bin"]):
        mtime = os.path.getmtime(meta["host_bin"])
        meta["host_built"] = datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"
        )
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=2)


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------


def load_runs(path):
    runs = []
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            row["n"] = int(row["n"])
            for k in ("wall_s", "load1", "user_s", "sys_s"):
                row[k] = float(row[k])
            row["max_rss_kb"] = int(row["max_rss_kb"])
            row["result_bytes"] = int(row["result_bytes"])
            runs.append(row)
    return runs


class Cell:
    """Medians of one (scenario, tool, n)."""

    def __init__(self, rows):
        self.rows = rows
        self.reps = len(rows)
        self.wall = statistics.median(r["wall_s"] for r in rows)
        self.tps = statistics.median(r["n"] / r["wall_s"] for r in rows)
        self.rss_mib = statistics.median(r["max_rss_kb"] for r in rows) / 1024
        self.bpt = statistics.median(r["result_bytes"] / r["n"] for r in rows)
        self.cpu = statistics.median(r["user_s"] + r["sys_s"] for r in rows)
        self.loads = [r["load1"] for r in rows]


def fmt_s(x):
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def fmt_n(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def fmt_ratio(x):
    return f"{x:.1f}×" if x < 100 else f"{x:,.0f}×"


def fmt_load(c):
    return "/".join(f"{l:.1f}" for l in c.loads)


def cmd_report(args):
    runs = load_runs(args.tsv)
    with open(args.meta) as f:
        meta = json.load(f)
    cells = {}
    for key in sorted({(r["scenario"], r["tool"], r["n"]) for r in runs}):
        cells[key] = Cell([r for r in runs if (r["scenario"], r["tool"], r["n"]) == key])

    def get(scenario, tool, n):
        return cells.get((scenario, tool, n))

    out = []
    w = out.append
    w("# agentcompass-host vs Inspect AI — side-by-side benchmark")
    w("")
    w("Produced by `bench/compare.sh" + (" --quick" if meta.get("quick") == "1" else "") + "` "
      "(not part of the test suite). Medians over the repetitions; ours and Inspect run in "
      "alternation. Ratios are ours relative to Inspect (higher = better for us on throughput, "
      "`ours / Inspect` for time and memory).")
    w("")
    w("| machine | |")
    w("| --- | --- |")
    w(f"| date | {meta['date']} |")
    w(f"| nproc | {meta['nproc']} |")
    w(f"| CPU | {meta['cpu']} |")
    w(f"| RAM | {meta['ram_gib']} GiB |")
    w(f"| kernel | {meta['kernel']} |")
    w(f"| load average at start (1/5/15 min) | {' / '.join(meta['load_start'])} |")
    w(f"| load average at end (1/5/15 min) | {' / '.join(open('/proc/loadavg').read().split()[:3])} |")
    w(f"| our host | release build of `{meta.get('git_head', '?')}`"
      + (f" + {meta['git_dirty']} uncommitted file(s) in host/plugins" if meta.get("git_dirty", "0") != "0" else "")
      + f", binary built {meta.get('host_built', '?')} |")
    w(f"| Inspect AI | {meta.get('inspect_version', '?')} (Python {meta['python']}), "
      f"`mockllm/model` in-process, network namespace: `{meta.get('netns')}` |")
    w(f"| concurrency | ours `--task-concurrency {meta.get('concurrency')}`, Inspect "
      f"`--max-samples {meta.get('concurrency')} --max-connections {meta.get('concurrency')}` |")
    if args.script_seconds is not None:
        w(f"| compare.sh total runtime | {args.script_seconds} s ({args.script_seconds / 60:.1f} min) |")
    w("")

    w("## Results")
    w("")
    w("| workload | N | tool | reps | wall s | tasks/s | peak RSS MiB | result bytes/task | CPU s (user+sys) | load1 per rep |")
    w("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    order = [("startup", 1), ("qa", 1000), ("qa", 5000), ("qa", 10000), ("qa", 100000), ("sandbox", 500),
             ("exec_host_process", 500), ("agents", 1000), ("reuse", 10000), ("reuse", 100000)]
    names = {"startup": "startup (1 QA task)", "qa": "trivial QA", "sandbox": "sandbox exec",
             "exec_host_process": "same exec, `host_process` (no isolation)",
             "agents": "agent tasks alive at once (`cli_agent` `sleep 20`, `sandbox`)",
             "reuse": "`--reuse` of finished run"}
    for scenario, n in order:
        for tool in ("ours", "inspect"):
            c = get(scenario, tool, n)
            if not c:
                continue
            w(f"| {names[scenario]} | {n:,} | {tool} | {c.reps} | {fmt_s(c.wall)} | {fmt_n(c.tps)} | "
              f"{c.rss_mib:.1f} | {fmt_n(c.bpt)} | {fmt_s(c.cpu)} | {fmt_load(c)} |")
    w("")

    w("## Ratios (ours vs Inspect)")
    w("")
    w("| workload | N | tasks/s ours ÷ Inspect | wall ours ÷ Inspect | CPU s Inspect ÷ ours | peak RSS ours ÷ Inspect | bytes/task ours ÷ Inspect |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for scenario, n in order:
        o, i = get(scenario, "ours", n), get(scenario, "inspect", n)
        if not (o and i):
            continue
        # /usr/bin/time counts CPU in 10 ms ticks: a one-task run of ours may show none.
        cpu = fmt_ratio(i.cpu / o.cpu) if o.cpu > 0 else f"> {fmt_ratio(i.cpu / 0.01)} (ours < 0.01 s)"
        w(f"| {names[scenario]} | {n:,} | {fmt_ratio(o.tps / i.tps)} | {o.wall / i.wall:.3f} | "
          f"{cpu} | {o.rss_mib / i.rss_mib:.3f} | {o.bpt / i.bpt:.2f} |")
    w("")

    # memory growth
    base = get("qa", "ours", 1000)
    w("## Memory growth of our host (trivial QA)")
    w("")
    w("| N | peak RSS MiB | vs 1,000 |")
    w("| ---: | ---: | ---: |")
    for n in (1000, 10000, 100000):
        c = get("qa", "ours", n)
        if c and base:
            w(f"| {n:,} | {c.rss_mib:.1f} | {100 * (c.rss_mib / base.rss_mib - 1):+.1f} % |")
    w("")

    # targets
    w("## Targets")
    w("")
    w("| target | measured | met? |")
    w("| --- | --- | --- |")

    def row(name, measured, ok):
        w(f"| {name} | {measured} | {'met' if ok else '**not met**'} |")

    o, i = get("startup", "ours", 1), get("startup", "inspect", 1)
    if o and i:
        r = i.wall / o.wall
        row("startup: 1-task wall time ≥ 200× shorter than Inspect's",
            f"{fmt_ratio(r)} ({fmt_s(o.wall)} s vs {fmt_s(i.wall)} s)", r >= 200)
    o, i = get("qa", "ours", 5000), get("qa", "inspect", 5000)
    if o and i:
        r = o.tps / i.tps
        row("trivial QA, 5,000 tasks: ≥ 50× Inspect's tasks/s",
            f"{fmt_ratio(r)} ({fmt_n(o.tps)} vs {fmt_n(i.tps)} tasks/s)", r >= 50)
        ms = 1000 * o.cpu / 5000
        row("trivial QA, 5,000 tasks: host CPU ≤ 0.9 ms a task (user+sys)", f"{ms:.2f} ms", ms <= 0.9)
    parts, ok = [], True
    for n in (1000, 10000):
        o, i = get("qa", "ours", n), get("qa", "inspect", n)
        if o and i:
            parts.append(f"{n:,}: {o.rss_mib:.1f} vs {i.rss_mib:.1f} MiB = 1/{i.rss_mib / o.rss_mib:.1f}")
            ok = ok and o.rss_mib * 5 <= i.rss_mib
    if parts:
        row("peak RSS ≤ 1/5 of Inspect's (QA 1k and 10k)", "; ".join(parts), ok)
    top = get("qa", "ours", 100000)
    if base and top:
        g = 100 * (top.rss_mib / base.rss_mib - 1)
        row("RSS growth ≤ 10 % from 1k to 100k tasks", f"{g:+.1f} % ({base.rss_mib:.1f} → {top.rss_mib:.1f} MiB)", g <= 10)
    elif base and get("qa", "ours", 10000):
        t = get("qa", "ours", 10000)
        g = 100 * (t.rss_mib / base.rss_mib - 1)
        row("RSS growth ≤ 10 % from 1k to 100k tasks", f"not measured (--quick); 1k → 10k: {g:+.1f} %", False)
    o, i = get("sandbox", "ours", 500), get("sandbox", "inspect", 500)
    if o and i:
        r = o.tps / i.tps
        row("sandbox exec, 500 tasks: ≥ 10× Inspect's `local` sandbox",
            f"{fmt_ratio(r)} ({fmt_n(o.tps)} vs {fmt_n(i.tps)} tasks/s)", r >= 10)
        h = get("exec_host_process", "ours", 500)
        if h:
            w(f"| (reference) the same exec in our unisolated `host_process` environment | "
              f"{fmt_ratio(h.tps / i.tps)} ({fmt_n(h.tps)} tasks/s) | — |")
    c = get("agents", "ours", 1000)
    if c:
        row("1,000 agent tasks alive at once (`cli_agent` `sleep 20`, `sandbox`): host RSS ≤ 60 MiB, wall ≤ 30 s",
            f"{c.rss_mib:.1f} MiB, {fmt_s(c.wall)} s", c.rss_mib <= 60 and c.wall <= 30)
    c = get("reuse", "ours", 100000)
    if c:
        row("`--reuse` of a finished 100,000-task run ≤ 15 s", f"{fmt_s(c.wall)} s (peak RSS {c.rss_mib:.1f} MiB)", c.wall <= 15)
    else:
        row("`--reuse` of a finished 100,000-task run ≤ 15 s", "not measured (--quick)", False)
    o, i = get("qa", "ours", 10000), get("qa", "inspect", 10000)
    if o and i:
        w(f"| (no target) trivial QA, 10,000 tasks | {fmt_ratio(o.tps / i.tps)} ({fmt_n(o.tps)} vs "
          f"{fmt_n(i.tps)} tasks/s), {1000 * o.cpu / 10000:.2f} ms host CPU a task | — |")
    docker = parse_docker(args.docker)
    if docker:
        o_ms, r_ms, ratio = docker["median"]
        row(f"`docker`: per-task time ÷ raw `docker run` + `docker exec` + `docker rm -f` ({docker['n']} tasks, {docker['conc']} at a time) ≤ 1.2×",
            f"{ratio:.2f}× ({o_ms:.1f} vs {r_ms:.1f} ms a task)", ratio <= 1.2)
    else:
        row("`docker`: per-task time ÷ raw `docker run` + `docker exec` ≤ 1.2×", "not measured (no Docker daemon)", False)
    podman = parse_podman(args.podman)
    if podman:
        o_ms, s_ms, r_ms, ratio, s_ratio = podman["median"]
        row(f"`podman`: per-task time ÷ raw `podman run` + `podman exec` + `podman rm -f` ({podman['n']} tasks, {podman['conc']} at a time) ≤ 1.2×",
            f"{ratio:.2f}× on a private service the run starts ({o_ms:.1f} vs {r_ms:.1f} ms a task); "
            f"{s_ratio:.2f}× on a running service ({s_ms:.1f} ms)", max(ratio, s_ratio) <= 1.2)
    else:
        row("`podman`: per-task time ÷ raw `podman run` + `podman exec` + `podman rm -f` ≤ 1.2×", "not measured (no podman)", False)
    live = parse_live(args.live)
    rate_limits = None
    if args.rate_limits and os.path.exists(args.rate_limits):
        with open(args.rate_limits) as f:
            rate_limits = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    if live:
        row(f"{live['sessions']:,} `sandbox` sessions open at once, {live['seconds']} s each, a command every {live['period']} s: "
            "host RSS ≤ 60 MiB, < 10 fds a session, p99 ≤ 20 ms",
            f"RSS {live['rss']:.1f} MiB, {live['fds']:.2f} fds a session, p50 {live['p50']:.1f} / p99 {live['p99']:.1f} ms "
            f"({live['ok']:,} commands, {live['failed']} failed)",
            live["rss"] <= 60 and live["fds"] < 10 and live["p99"] <= 20 and live["failed"] == 0)
    c = get("reuse", "ours", 10000)
    if c:
        q = get("qa", "ours", 10000)
        extra = f" (the run itself took {fmt_s(q.wall)} s)" if q else ""
        w(f"| (no target) `--reuse` over a finished 10,000-task run | {fmt_s(c.wall)} s{extra} | — |")
    w("")
    if docker:
        w("## Docker per-task cost (`bench/docker_overhead.sh`)")
        w("")
        w("| rep | ours ms a task | raw CLI ms a task | ours ÷ raw | load1 |")
        w("| ---: | ---: | ---: | ---: | ---: |")
        for rep in docker["reps"]:
            w(f"| {rep[0]} | {rep[1]} | {rep[2]} | {rep[3]} | {rep[4]} |")
        w("")
    if podman:
        w("## Podman per-task cost (`bench/podman_overhead.sh`)")
        w("")
        w("| rep | ours ms a task (private service) | ours ms a task (running service) | raw CLI ms a task | ratio | ratio (running) | load1 |")
        w("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for rep in podman["reps"]:
            w("| " + " | ".join(rep[:7]) + " |")
        w("")
    if rate_limits:
        w("## Rate-limit back-off (`bench/rate_limits.sh`)")
        w("")
        w("200 QA tasks at `--task-concurrency 32` against a `scripted-llm` that serves 4 calls at once and "
          "answers 429 (`Retry-After: 1`) beyond; `max_retries` 0, so only the rate-limit handling keeps "
          "a task alive. `fixed` is `--no-adaptive-concurrency`.")
        w("")
        w("| " + " | ".join(rate_limits[0]) + " |")
        w("|" + "---|" * len(rate_limits[0]))
        for row in rate_limits[1:]:
            w("| " + " | ".join(row) + " |")
        w("")
    if live:
        w("## Live sessions (`bench/live_sessions.rs`)")
        w("")
        w("```")
        w(live["text"].rstrip())
        w("```")
        w("")
    w("Notes: wall time is measured around the process (date +%s%N); peak RSS is `/usr/bin/time -v`'s "
      "\"Maximum resident set size\" (largest single process: our host, or Inspect's Python process); "
      "result bytes are `du -sb` of the results dir (ours) or log dir (Inspect) divided by N. "
      "CPU s is user+sys of the measured process and its children (ours: not counting "
      "scripted-llm, a separate process; a noise-robust view of the throughput ratio on a busy machine). "
      "Ours goes through real HTTP to `scripted-llm` on 127.0.0.1 for every task, Inspect's "
      "`mockllm` is an in-process Python call. Inspect's sandbox runs use its default "
      "`--max-subprocesses` (the CPU count). load1 is the 1-minute load average just before "
      "each repetition (other engineers may be compiling on this machine). Where the targets "
      "are missed, see bench/PROFILE.md (written by hand from perf, heaptrack and strace runs).")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


def parse_overhead(path, fields):
    """An overhead script's output (docker_overhead.sh, podman_overhead.sh): per-rep rows and
    the median line's first `fields` numbers."""
    if not path or not os.path.exists(path):
        return None
    reps, median, n, conc = [], None, "?", "?"
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if parts[0] == "median":
            median = tuple(float(x) for x in parts[1:1 + fields])
        elif parts[0] == "params":
            n, conc = parts[1], parts[2]
        elif parts[0].isdigit():
            reps.append(parts)
    return {"reps": reps, "median": median, "n": n, "conc": conc} if median else None


def parse_docker(path):
    """docker_overhead.sh's output: ours, raw, ratio."""
    return parse_overhead(path, 3)


def parse_podman(path):
    """podman_overhead.sh's output: ours, socket, raw, ratio, socket ratio."""
    return parse_overhead(path, 5)


def parse_live(path):
    """live_sessions' summary lines."""
    if not path or not os.path.exists(path):
        return None
    text = open(path).read()
    m = re.search(r"(\d+) sessions open at once, (\d+) s each, a command every ([\d.]+) s", text)
    c = re.search(r"commands: (\d+) ok, (\d+) failed; latency ms p50 ([\d.]+)\s+p90 ([\d.]+)\s+p99 ([\d.]+)", text)
    r = re.search(r"host RSS [\d.]+ MiB before, ([\d.]+) MiB peak; .* = ([\d.]+) a session", text)
    if not (m and c and r):
        return None
    return {"sessions": int(m[1]), "seconds": m[2], "period": m[3], "ok": int(c[1]), "failed": int(c[2]),
            "p50": float(c[3]), "p99": float(c[5]), "rss": float(r[1]), "fds": float(r[2]), "text": text}


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("dataset")
    s.add_argument("n", type=int)
    s.add_argument("path")
    s.set_defaults(fn=cmd_dataset)
    s = sub.add_parser("check-ours")
    s.add_argument("run_dir")
    s.add_argument("n", type=int)
    s.add_argument("--reused", action="store_true")
    s.add_argument("--any-score", action="store_true", help="only check that every task was evaluated")
    s.set_defaults(fn=cmd_check_ours)
    s = sub.add_parser("check-inspect")
    s.add_argument("log_dir")
    s.add_argument("n", type=int)
    s.set_defaults(fn=cmd_check_inspect)
    s = sub.add_parser("machine")
    s.add_argument("out")
    s.add_argument("kv", nargs="*")
    s.set_defaults(fn=cmd_machine)
    s = sub.add_parser("report")
    s.add_argument("tsv")
    s.add_argument("meta")
    s.add_argument("out")
    s.add_argument("--script-seconds", type=int, default=None)
    s.add_argument("--docker", default=None)
    s.add_argument("--podman", default=None)
    s.add_argument("--live", default=None)
    s.add_argument("--rate-limits", default=None)
    s.set_defaults(fn=cmd_report)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
