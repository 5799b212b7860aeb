"""Harbor's own task loader as an oracle for the differential test of `plugins/harbor`.

Reads JSON lines ``{"id": ..., "dir": ...}`` on stdin (one Harbor task directory each), loads
each directory with Harbor's ``Task`` (``TaskConfig.model_validate_toml`` plus Harbor's
instruction and test-script checks) and writes one JSON line per input:

    {"id": ..., "accepted": false, "error": "<exception type>: <first line>"}
    {"id": ..., "accepted": true, "mapped": {...}}

``mapped`` holds the normalised values of the fields the host maps (see ``mapped``), so the
Rust side can compare them with its own loader's ``TaskSpec``. One process serves a whole
batch; it needs Harbor 0.25.0 (``pip install harbor==0.25.0``) and nothing else.
"""

import json
import math
import sys
import warnings
from pathlib import PurePosixPath

import harbor
from harbor.models.task.artifacts import (
    source_relative_path,
    with_convention_entry,
    convention_source_for_os,
)
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import (
    resolve_task_verifier_mode,
    resolve_verifier_environment_definition,
)
from harbor.models.trial.config import AgentConfig as TrialAgentConfig
from harbor.models.trial.config import EnvironmentConfig as TrialEnvironmentConfig
from harbor.models.trial.config import VerifierConfig as TrialVerifierConfig
from harbor.trial.network_policy import resolve_trial_network_plan

EXPECTED_VERSION = "0.25.0"


def policy(p):
    """A resolved network policy as JSON (``None`` stays ``None``)."""
    if p is None:
        return None
    return {"network_mode": p.network_mode.value, "allowed_hosts": list(p.allowed_hosts)}


def declared(model, field):
    """The value of ``field`` when it was given (or migrated into it), else ``None``."""
    return getattr(model, field) if field in model.model_fields_set else None


def setup(env):
    """The environment setup the host maps: image, workdir, build timeout, OS."""
    return {
        "image": env.docker_image,
        "workdir": env.workdir,
        "build_timeout_sec": declared(env, "build_timeout_sec"),
        "os": env.os.value if "os" in env.model_fields_set else None,
    }


def verifier_setup(task, verifier_env):
    """A separate verifier environment's setup, its image as Harbor resolves it (its own
    ``docker_image``, none when ``tests/`` has a Dockerfile, else the task's image)."""
    out = setup(verifier_env)
    definition = resolve_verifier_environment_definition(task.config, task.paths)
    if definition is not None:
        out["image"] = definition.config.docker_image
    return out


def resources(env):
    """cpus, memory_mb, storage_mb, gpus (as declared; ``None`` when absent)."""
    return {
        "cpus": env.cpus,
        "memory_mb": env.memory_mb,
        "storage_mb": env.storage_mb,
        "gpus": env.gpus,
    }


def artifacts(config):
    """The collection set: the convention entry (unless declared) and the declared entries,
    each later entry whose output path overlaps a kept one skipped (Harbor keeps the first
    claim)."""
    full = with_convention_entry(
        config.artifacts, convention_source=convention_source_for_os(config.environment.os)
    )
    kept = []
    for entry in full:
        output = source_relative_path(entry.destination or entry.source)
        if any(overlaps(output, other) for _, other in kept):
            continue
        kept.append((entry, output))
    return [
        {"source": e.source, "output": str(o), "exclude": list(e.exclude)} for e, o in kept
    ]


def overlaps(a, b):
    a, b = PurePosixPath(a), PurePosixPath(b)
    return a == b or a in b.parents or b in a.parents


def mapped(task):
    """The normalised values of every field the host maps."""
    config = task.config
    env = config.environment
    verifier = config.verifier
    mode = resolve_task_verifier_mode(config)
    plan = resolve_trial_network_plan(
        config,
        TrialAgentConfig(),
        TrialEnvironmentConfig(),
        TrialVerifierConfig(),
        None,
        verifier_mode=mode,
    )
    verifier_env = verifier.environment
    return {
        "instruction": task.instruction,
        "schema_version": config.schema_version,
        "source": config.source,
        "package": config.task.model_dump(mode="json", exclude_unset=True)
        if config.task is not None
        else None,
        "metadata": config.metadata,
        "run_timeout_sec": declared(config.agent, "timeout_sec"),
        "evaluation_timeout_sec": declared(verifier, "timeout_sec"),
        "setup": setup(env),
        "resources": resources(env),
        "env": env.env,
        "verifier_env": verifier.env,
        "solution_env": config.solution.env,
        "verifier_mode": mode.value,
        "verifier_environment": None
        if verifier_env is None
        else {
            "setup": verifier_setup(task, verifier_env),
            "resources": resources(verifier_env),
            "env": verifier_env.env,
        },
        "network": {
            "agent_env_baseline": policy(plan.agent_env_baseline),
            "agent_phase": policy(plan.agent_phase),
            "verifier_env_baseline": policy(plan.verifier_env_baseline),
            "verifier_phase": policy(plan.verifier_phase),
        },
        "artifacts": artifacts(config),
        "collect": [
            {"command": c.command, "timeout_sec": c.timeout_sec, "service": c.service}
            for c in verifier.collect
        ],
        "steps": [s.name for s in config.steps] if config.steps else None,
    }


def json_safe(value):
    """``value`` with non-finite floats as text (JSON has no NaN or infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def first_line(error):
    """One line naming the error: the first pydantic error's location and message, or the
    exception's first line."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{type(error).__name__}: {where}: {first.get('msg', '')}"
        except Exception:  # noqa: BLE001 - fall back to the text
            pass
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def main():
    found = getattr(harbor, "__version__", None)
    if found != EXPECTED_VERSION:
        print(f"expected harbor {EXPECTED_VERSION}, found {found}", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        out = {"id": request["id"]}
        try:
            task = Task(request["dir"])
            out["accepted"] = True
            out["mapped"] = json_safe(mapped(task))
        except Exception as error:  # noqa: BLE001 - every refusal is an answer
            out["accepted"] = False
            out["error"] = first_line(error)
        print(json.dumps(out, default=str, allow_nan=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
