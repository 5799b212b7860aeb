#!/usr/bin/env python3
"""Regenerates litellm.json, the model gateway's price table (issue 57), from LiteLLM's own
price list as one release of the `litellm` package on PyPI ships it
(`litellm/model_prices_and_context_window_backup.json` inside the wheel, the file LiteLLM and
Harbor read when offline).

  python3 host/gateway/prices/update.py VERSION        e.g. 1.110.2

Downloads the wheel with `pip download litellm==VERSION --no-deps` into a temporary directory,
keeps the models a chat call can be priced by (`mode` chat, completion or responses, or none,
with `input_cost_per_token` or `output_cost_per_token`), and of each only the fields the gateway
reads: `input_cost_per_token`, `output_cost_per_token`, `cache_read_input_token_cost`,
`litellm_provider`, `mode`. One model per line, keys sorted, so an update's diff shows what
changed. Needs only pip and the standard library; commit the file it writes."""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile

MEMBER = 'litellm/model_prices_and_context_window_backup.json'
FIELDS = ('input_cost_per_token', 'output_cost_per_token', 'cache_read_input_token_cost',
          'litellm_provider', 'mode')
MODES = ('chat', 'completion', 'responses', None)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'litellm.json')


def is_price(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def trimmed(models):
    out = {}
    for key, entry in sorted(models.items()):
        if key == 'sample_spec' or not isinstance(entry, dict) or entry.get('mode') not in MODES:
            continue
        if not (is_price(entry.get('input_cost_per_token'))
                or is_price(entry.get('output_cost_per_token'))):
            continue
        kept = {f: entry[f] for f in FIELDS if f in entry and entry[f] is not None}
        for f in FIELDS[:3]:
            if f in kept and not is_price(kept[f]):
                del kept[f]
        out[key] = kept
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    version = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, '-m', 'pip', 'download', f'litellm=={version}',
                        '--no-deps', '--quiet', '-d', tmp], check=True)
        wheels = [n for n in os.listdir(tmp) if n.endswith('.whl')]
        if len(wheels) != 1:
            sys.exit(f'expected one wheel in {tmp}, found {wheels}')
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as wheel:
            raw = wheel.read(MEMBER)
    models = trimmed(json.loads(raw))
    lines = ['{',
             f'"litellm_version": {json.dumps(version)},',
             f'"source": {json.dumps("litellm " + version + " wheel: " + MEMBER)},',
             f'"sha256": {json.dumps(hashlib.sha256(raw).hexdigest())},',
             '"models": {']
    rows = [f'{json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(",", ":"))}'
            for k, v in models.items()]
    lines.append(',\n'.join(rows))
    lines += ['}', '}']
    with open(OUT, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')
    print(f'{OUT}: {len(models)} models from litellm {version}')


if __name__ == '__main__':
    main()
