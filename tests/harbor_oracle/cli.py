"""Harbor 0.25 as the oracle of `agentcompass-host harbor run`: for each command line (a JSON
list of the words after `harbor run`, read from the file named by argv[1]), the JobConfig
Harbor's own CLI resolves (`harbor run WORDS --print-config`, in-process) and the task names
its DatasetConfig selects (`get_task_configs`: `-i`, `-x`, `-l` applied by Harbor's code).
Prints one JSON line: a list of {"config": ..., "tasks": [...]} or {"error": "..."}."""

import asyncio
import contextlib
import io
import json
import sys

from harbor.cli.main import app
from harbor.models.job.config import JobConfig


def config_of(words):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            app(["run", *words, "--print-config"], standalone_mode=False)
        except SystemExit:
            pass
    return json.loads(out.getvalue())


async def tasks_of(config):
    job = JobConfig.model_validate(config)
    names = []
    for dataset in job.datasets:
        for task in await dataset.get_task_configs():
            names.append(task.path.name if task.path else task.name)
    names.extend(task.path.name for task in job.tasks if task.path)
    return names


def main():
    rows = json.load(open(sys.argv[1]))
    results = []
    for words in rows:
        try:
            config = config_of(words)
            results.append({"config": config, "tasks": asyncio.run(tasks_of(config))})
        except Exception as error:  # the row's refusal, compared by the test
            results.append({"error": f"{type(error).__name__}: {error}"})
    print(json.dumps(results))


main()
