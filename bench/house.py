#!/usr/bin/env python3
"""The house figures of issue 34, host-side (the crates under host/), production code only:
files named tests.rs, directories named tests/ and `#[cfg(test)] mod tests` (and the
gateway's test-only `equivalence` oracles) left out.

  python3 bench/house.py [ROOT]   (ROOT: the workspace, default: this script's parent)

Prints the largest file, the longest function (from its `fn` line to its closing brace), the
literal-key JSON lookups (`["key"]`, `.get("key")`, `.get_mut`, `.remove`, `.contains_key`,
`.pointer("/…")`) and the `Result<_, String>` signatures. `duplicates` (the workplace tool)
gives the duplicate pairs."""

import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOKUP = re.compile(
    r'\[\s*"[A-Za-z_0-9.\-]+"\s*\]|\.(get|get_mut|remove|contains_key)\(\s*"[A-Za-z_0-9.\-]+"\s*\)|\.pointer(_mut)?\(\s*"/'
)
STRING_RESULT = re.compile(r'Result<[^<>]*(?:<[^<>]*>[^<>]*)*,\s*String\s*>')
FN = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(unsafe\s+)?(const\s+)?fn\s+(\w+)')


def production_files(base):
    for root, _, files in os.walk(base):
        for name in sorted(files):
            path = os.path.join(root, name)
            if (not name.endswith('.rs') or name == 'tests.rs' or '/tests/' in path
                    or '/equivalence' in path or '/templates/' in path):
                continue
            text = open(path, encoding='utf-8').read()
            cut = text.find('#[cfg(test)]\nmod tests')
            yield os.path.relpath(path, ROOT), text, text[:cut] if cut >= 0 else text


def functions(prod):
    lines = prod.split('\n')
    for n, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(';'):
            continue
        for k in range(n + 1, len(lines)):
            if lines[k] == m.group(1) + '}':
                yield k - n + 1, m.group(7), n + 1
                break


files, fns, lookups, strings = [], [], 0, 0
for path, text, prod in production_files(os.path.join(ROOT, 'host')):
    files.append((text.count('\n'), prod.count('\n'), path))
    fns.extend((length, f'{path}:{line} {name}') for length, name, line in functions(prod))
    lookups += len(LOOKUP.findall(prod))
    strings += len(STRING_RESULT.findall(prod))
largest = max(files)
longest = max(fns)
print(f'largest file: {largest[2]} ({largest[0]} lines, {largest[1]} before its tests)')
print(f'files over 600 lines: {sum(1 for f in files if f[0] > 600)}')
print(f'longest function: {longest[1]} ({longest[0]} lines)')
print(f'functions over 80 lines: {sum(1 for f in fns if f[0] > 80)}')
print(f'literal-key JSON lookups: {lookups}')
print(f'Result<_, String>: {strings}')
