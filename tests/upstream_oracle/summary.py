"""Upstream AgentCompass 1.0.1 reading one of our run directories (tests/e2e/upstream_parity.rs).

Usage: python summary.py RUN_DIR
       python summary.py --viewer RUN_DIR

With --viewer, upstream's own viewer server (its aiohttp app, unchanged) is started on a
loopback port and its JSON API is asked for the run (`/api/run`), the first page of task cards
(`/api/details-page`) and the first task's detail (`/api/detail`) over HTTP; one line
`UPSTREAM-VIEWER <json>` prints the three answers and their HTTP statuses.

Runs upstream's own `agentcompass summary RUN_DIR --dry-run` (its CLI entry point, its run-dir
reader, its detail-record validation and its metric aggregation, all unchanged) and prints, after
the markdown it prints, one line `UPSTREAM-METRICS <json>` with the MetricReport its launcher
recomputed. Upstream has no `qa` or `harbor` benchmark, so this script first registers, as any
third party would, a benchmark component for each of those ids that declares the same metric
contract as ours (the contract is all a summary uses of a benchmark); nothing of upstream's code is
changed or patched.
"""

import asyncio
import contextlib
import io
import json
import sys

from agentcompass.runtime.base import BaseBenchmark
from agentcompass.runtime.metrics import make_metric_contract
from agentcompass.runtime.registry import BENCHMARKS, load_builtin_components


class _SummaryOnly(BaseBenchmark):
    """A benchmark registered only to be summarised: it loads, prepares and scores nothing."""

    def load_tasks(self, req):
        raise NotImplementedError("summary only")

    async def prepare_task(self, *args, **kwargs):
        raise NotImplementedError("summary only")

    async def evaluate(self, *args, **kwargs):
        raise NotImplementedError("summary only")


def register_ours():
    load_builtin_components()

    @BENCHMARKS.register()
    class Qa(_SummaryOnly):
        """Our `qa` benchmark: exact-match questions, primary `correct`."""

        id = "qa"
        description = "agentcompass-host qa (summary only)"
        metric_contract = make_metric_contract(primary="correct", binary=("correct",))

    @BENCHMARKS.register()
    class Harbor(_SummaryOnly):
        """Our `harbor` benchmark: scalar `reward` (the verifier's) and binary `correct`.

        Ours makes `reward` the primary; upstream's contract rule allows only `correct` or
        `score` as a primary, so here `correct` is, and `reward` an auxiliary series (each
        series is computed the same either way; README "Differences from upstream").
        """

        id = "harbor"
        description = "agentcompass-host harbor (summary only)"
        metric_contract = make_metric_contract(
            primary="correct", binary=("correct",), scalar=("reward",)
        )


async def viewer(run_dir):
    from aiohttp import ClientSession, web
    from agentcompass.viewer.server import create_app

    runner = web.AppRunner(create_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}/api"
    out = {}
    async with ClientSession() as session:
        async def get(name, **params):
            async with session.get(f"{base}/{name}", params={"path": run_dir, **params}) as r:
                return {"status": r.status, "body": await r.json()}

        out["run"] = await get("run")
        out["page"] = await get("details-page", page="1", pageSize="50")
        items = out["page"]["body"].get("items") or out["page"]["body"].get("details") or []
        first = items[0]["fileName"] if items else ""
        out["detail"] = await get("detail", file=first)
    await runner.cleanup()
    print("UPSTREAM-VIEWER " + json.dumps(out, sort_keys=True, default=str))


def main():
    if sys.argv[1] == "--viewer":
        register_ours()
        asyncio.run(viewer(sys.argv[2]))
        return
    run_dir = sys.argv[1]
    register_ours()
    from agentcompass.cli.main import main as cli_main
    from agentcompass.launcher import async_summary

    code = cli_main(["summary", run_dir, "--dry-run"])
    if code != 0:
        sys.exit(code)
    with contextlib.redirect_stdout(io.StringIO()):
        result = asyncio.run(async_summary(run_dir, dry_run=True))
    print("UPSTREAM-METRICS " + json.dumps(result["metrics"], sort_keys=True))


if __name__ == "__main__":
    main()
