"""Harbor 0.25's own trace export of a job directory next to ours (`export traces` JSONL of
the same run): prints one JSON line {"rows": [ours, theirs], "diffs": [...]} comparing each
row's conversation, agent, model, result and episode, keyed by task and episode.

Usage: python traces.py JOB_DIR OURS.jsonl
"""

import json
import sys
from pathlib import Path

from harbor.utils.traces_utils import export_traces

job, ours = sys.argv[1], sys.argv[2]
dataset = export_traces(
    root=Path(job),
    recursive=True,
    episodes="all",
    to_sharegpt=False,
    push=False,
    verbose=False,
    export_subagents=False,
)
theirs = {(row["trial_name"].split("__")[0], row["episode"]): row for row in dataset.to_list()}
mine = [json.loads(line) for line in Path(ours).read_text().splitlines() if line.strip()]
diffs = []
for row in mine:
    other = theirs.get((row["task"], row["episode"]))
    if other is None:
        diffs.append(f"{row['task']} {row['episode']}: not in Harbor's export")
        continue
    for key in ("conversations", "agent", "model", "result", "episode"):
        if row[key] != other[key]:
            diffs.append(f"{row['task']} {row['episode']} {key}: {row[key]!r} != {other[key]!r}")
print(json.dumps({"rows": [len(mine), len(theirs)], "diffs": diffs}))
