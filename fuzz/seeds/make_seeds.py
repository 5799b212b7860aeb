#!/usr/bin/env python3
"""Writes the seed corpora (fuzz/corpus/<target>/seed-*) from files and test snippets in the
repository: Harbor task.toml files, plugin manifests, and the TOML/YAML/JSON configuration and
orchestration texts of the end-to-end and unit tests. Run from anywhere; idempotent."""

import hashlib
import json
import pathlib
import re
import tomllib

try:
    import yaml
except ImportError:  # YAML snippets are then skipped.
    yaml = None

FUZZ = pathlib.Path(__file__).resolve().parent.parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"
FORMAT_BYTE = {"toml": b"0", "yaml": b"1", "json": b"2"}
CONFIG_KEYS = {"benchmarks", "harnesses", "environments", "execution", "runtime", "models"}
ORCH_KEYS = {"version", "name", "task_concurrency", "runtime", "defaults", "requests"}


# Orchestration files (YAML) with the bundled plugins' ids and every section.
ORCHESTRATIONS = [
    """\
version: 1
name: nightly
task_concurrency: 4
runtime:
  results_dir: results
  timeout_seconds: 600
defaults:
  model: {id: gpt-4o-mini, base_url: "http://127.0.0.1:8000/v1", api_key: "${OPENAI_API_KEY}", api_protocol: openai-chat}
  benchmark: {id: harbor, path: examples/harbor}
  harness: {id: terminus}
  environment:
    id: docker
    setup: {image: "python:3.12-slim", workdir: /app}
    resources: {cpu: 2, memory_mb: 2048}
    baseline_network_policy: {network_mode: allowlist, allowed_hosts: [pypi.org, "*.github.com"]}
    env_variables: {PIP_INDEX_URL: "${PIP_INDEX_URL:-https://pypi.org/simple}"}
  execution: {max_retries: 1, attempts: {k: 2, strategy: pass}, enabled_recipes: [example_recipe]}
  runtime: {reuse: true, checkpoint_resume: true}
  output: {run_name: nightly/harbor}
requests:
  - name: oracle
    harness: {id: oracle}
  - name: terminus-small
    model: {id: small}
    harness: {max_turns: 20}
    benchmark: {sample_ids: [hello-file]}
    execution: {max_retries: 0, run_timeout_seconds: 30}
""",
    """\
requests:
  - name: a
    model: {id: m, api_protocol: auto}
    benchmark: {id: example_exact_match, size: 2, seed: 7, case_sensitive: true}
    harness: {id: example_calculator, delay_ms: 0, wrong_every: 3}
    environment: {id: sandbox, run_network_policy: {network_mode: no-network}}
    output: {run_id: r1}
  - name: b
    model: {id: m}
    benchmark: {id: qa, path: data.jsonl, match: normalized}
    harness: {id: openai_chat}
    runtime: {reuse: true, reuse_run_id: r1}
  - name: self-check
    benchmark: {id: example_self_check, size: 3}
    harness: {id: none}
    model: {id: m}
    environment: {id: host_process, workdir: /tmp/x}
""",
]


def put(target, data):
    out = CORPUS / target
    out.mkdir(parents=True, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    (out / name).write_bytes(data)


def rust_strings(path):
    """Raw string literals and plain multi-key string literals of a Rust file."""
    text = path.read_text(errors="replace")
    for m in re.finditer(r'r(#+)"(.*?)"\1', text, re.S):
        yield m.group(2)
    for m in re.finditer(r'"((?:[^"\\\n]|\\.){8,})"', text):
        body = m.group(1)
        if "\\n" in body:
            try:
                yield body.encode().decode("unicode_escape")
            except UnicodeDecodeError:
                pass


def unformat(text):
    """A format! template as text: `{name}` placeholders dropped, `{{`/`}}` unescaped."""
    text = re.sub(r"(?<!\{)\{[a-z_]*(:[^}]*)?\}(?!\})", "", text)
    return text.replace("{{", "{").replace("}}", "}")


def parse(text):
    """(format, value) of the first format that parses `text` into a mapping."""
    for fmt in ("json", "toml", "yaml"):
        try:
            if fmt == "json":
                value = json.loads(text)
            elif fmt == "toml":
                value = tomllib.loads(text)
            elif yaml is not None:
                value = yaml.safe_load(text)
            else:
                continue
        except Exception:
            continue
        if isinstance(value, dict) and value:
            return fmt, value
    return None, None


def main():
    # Harbor task.toml files.
    for path in sorted(ROOT.glob("examples/harbor/*/task.toml")) + sorted(
        ROOT.glob("tests/fixtures/harbor/*/task.toml")
    ):
        put("harbor_task_toml", path.read_bytes())
    for text in rust_strings(ROOT / "plugins/harbor/src/tests.rs"):
        text = unformat(text)
        fmt, value = parse(text)
        if fmt == "toml":
            put("harbor_task_toml", text.encode())

    # Plugin manifests (written by `agentcompass-host plugin package`) and test snippets.
    for path in sorted(ROOT.glob("target/*/plugins/*.plugin.toml")):
        put("plugin_manifest", path.read_bytes())
    for text in rust_strings(ROOT / "host/src/loader/manifest.rs"):
        if "sha256" in text or "[[components]]" in text:
            put("plugin_manifest", unformat(text).encode())

    # Configuration and orchestration texts.
    sources = sorted(ROOT.glob("tests/e2e/*.rs")) + sorted(ROOT.glob("host/src/**/*.rs"))
    for path in sources:
        for text in rust_strings(path):
            text = unformat(text)
            fmt, value = parse(text)
            if fmt is None:
                continue
            keys = set(value)
            data = FORMAT_BYTE[fmt] + text.encode()
            if "requests" in keys and keys <= ORCH_KEYS | {"requests"}:
                put("orchestration_loader", data)
            elif keys & CONFIG_KEYS or "defaults" in keys:
                put("config_loader", data)
                if "defaults" in keys:
                    put("orchestration_loader", data)
    for text in ORCHESTRATIONS:
        put("orchestration_loader", b"1" + text.encode())
    # Each config and orchestration seed in the other two formats too.
    for target in ("config_loader", "orchestration_loader"):
        for path in sorted((CORPUS / target).glob("seed-*")):
            raw = path.read_bytes()
            fmt, value = parse(raw[1:].decode())
            if fmt is None:
                continue
            try:
                put(target, b"2" + json.dumps(value, indent=1).encode())
            except TypeError:  # TOML datetimes
                continue
            if yaml is not None:
                put(target, b"1" + yaml.safe_dump(value).encode())


if __name__ == "__main__":
    main()
    for target in sorted(CORPUS.iterdir()):
        print(target.name, len(list(target.glob("seed-*"))))
