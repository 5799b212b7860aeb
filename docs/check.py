#!/usr/bin/env python3
"""Checks the documentation's links and shell blocks (`./dev.sh test` and `./dev.sh check` run it).

  python3 docs/check.py [--html BOOK_DIR] [--list-external]

- every Markdown file of the guide (docs/src) is in docs/src/SUMMARY.md;
- every relative link of the guide, README.md, CONTRIBUTING.md, ARCHITECTURE.md and
  docs/decisions/ names a file that exists (a link of the guide stays inside the guide) and,
  with `#anchor`, a heading of that file (or of the same file for a bare `#anchor`);
- with --html, every relative `href`/`src` of the built book (mdbook build docs) names a file
  of the book and, with `#anchor`, an `id` of that page;
- every shell block (```bash, ```sh, ```shell, ```console) of README.md and the guide says what
  it needs after the language: `runnable` (tests/e2e/readme.rs runs the README's as written),
  `needs-key`, `needs-docker`, `needs-podman`, `needs-network`, `needs-slurm` or `template`;
- external http(s) links are never fetched: only their syntax is checked (--list-external
  prints them).

Each problem is one line, `FILE: LINK: what is wrong`; the exit code is 1 when there is any.
"""

import html.parser
import os
import re
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, 'docs', 'src')
MARKERS = {'runnable', 'needs-key', 'needs-docker', 'needs-podman', 'needs-network',
           'needs-slurm', 'template'}
SHELLS = {'bash', 'sh', 'shell', 'console'}
FENCE = re.compile(r'^(\s*)(`{3,}|~{3,})(.*)$')
INCLUDE = re.compile(r'\{\{#include ([^}:]+)(?::[^}]*)?\}\}')
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')


def rel(path):
    return os.path.relpath(path, ROOT)


def read_expanded(path):
    """The file's text with mdBook's `{{#include FILE}}` directives replaced by FILE's text."""
    text = open(path, encoding='utf-8').read()

    def include(m):
        target = os.path.join(os.path.dirname(path), m.group(1).strip())
        return read_expanded(target) if os.path.isfile(target) else m.group(0)
    return INCLUDE.sub(include, text)


def split_fences(text):
    """(prose lines, fenced blocks): prose with fenced blocks left out, and each block as
    (first line number, info string, body)."""
    prose, blocks, fence, info, body, start = [], [], None, '', [], 0
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence, info, body, start = m.group(2), m.group(3).strip(), [], n
            prose.append('')
        elif fence is not None and m and m.group(2).startswith(fence) and not m.group(3).strip():
            blocks.append((start, info, '\n'.join(body)))
            fence = None
            prose.append('')
        elif fence is not None:
            body.append(line)
            prose.append('')
        else:
            prose.append(line)
    return prose, blocks


def slug(heading):
    """The id mdBook (and GitHub) gives a heading's text."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)
    text = re.sub(r'<[^>]+>', '', text).replace('`', '')
    out = []
    for ch in text:
        if ch.isalnum() or ch in '_-':
            out.append(ch.lower())
        elif ch.isspace():
            out.append('-')
    return ''.join(out)


def anchors_of(path, cache={}):
    """The heading ids of a Markdown file (duplicates numbered as mdBook numbers them)."""
    if path not in cache:
        prose, _ = split_fences(read_expanded(path))
        seen, ids = {}, set()
        for line in prose:
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            ids.add(base if count == 0 else f'{base}-{count}')
        ids.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', '\n'.join(prose)))
        cache[path] = ids
    return cache[path]


def strip_code_spans(line):
    return re.sub(r'(`+)(?:(?!\1).)+?\1', '', line)


def links_of(path):
    """(line number, target) of every link and reference definition outside code."""
    prose, _ = split_fences(read_expanded(path))
    for n, line in enumerate(prose, 1):
        line = strip_code_spans(line)
        for m in LINK.finditer(line):
            yield n, m.group(1)
        m = REFDEF.match(line)
        if m:
            yield n, m.group(1)


def check_external(target):
    parts = urllib.parse.urlsplit(target)
    if not parts.netloc or ' ' in target:
        return 'not a well-formed URL'
    return None


def check_link(path, target, externals):
    """What is wrong with one link of a Markdown file, or None."""
    if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
        if target.startswith(('http://', 'https://')):
            externals.append((path, target))
            return check_external(target)
        return None if target.startswith('mailto:') else 'unknown scheme'
    file_part, _, anchor = target.partition('#')
    file_part = urllib.parse.unquote(file_part)
    dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
    if not os.path.exists(dest):
        return f'no file {rel(dest)}'
    in_guide = os.path.commonpath([path, GUIDE]) == GUIDE
    if in_guide and os.path.commonpath([dest, GUIDE]) != GUIDE:
        return 'leaves the guide (name the file as `code`, the book is published on its own)'
    if anchor and dest.endswith('.md') and anchor not in anchors_of(dest):
        return f'no heading #{anchor} in {rel(dest)}'
    return None


def check_blocks(path):
    _, blocks = split_fences(read_expanded(path))
    for line, info, _ in blocks:
        words = info.replace(',', ' ').split()
        if words and words[0] in SHELLS and not MARKERS.intersection(words[1:]):
            yield (f'{rel(path)}:{line}: ```{info}: a shell block must say what it needs '
                   f'({", ".join(sorted(MARKERS))})')


def summary_problems():
    listed = {os.path.normpath(t.partition('#')[0]) for _, t in links_of(os.path.join(GUIDE, 'SUMMARY.md'))}
    for base, _, files in os.walk(GUIDE):
        for name in sorted(files):
            path = os.path.relpath(os.path.join(base, name), GUIDE)
            if name.endswith('.md') and name != 'SUMMARY.md' and path not in listed:
                yield f'docs/src/SUMMARY.md: {path}: a chapter file not in SUMMARY.md'


def markdown_files():
    files = [os.path.join(ROOT, n) for n in ('README.md', 'CONTRIBUTING.md', 'ARCHITECTURE.md')]
    for base in (GUIDE, os.path.join(ROOT, 'docs', 'decisions')):
        for dirpath, _, names in os.walk(base):
            files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith('.md')]
    return [f for f in files if os.path.isfile(f)]


class Html(html.parser.HTMLParser):
    """The ids and relative link targets of one HTML page."""

    def __init__(self):
        super().__init__()
        self.ids, self.targets = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ('id', 'name') and value:
                self.ids.add(value)
            if name in ('href', 'src') and value and tag in ('a', 'img', 'link', 'script'):
                self.targets.append(value)


def html_problems(book):
    pages = {}
    for dirpath, _, names in os.walk(book):
        for name in names:
            if name.endswith('.html'):
                parser = Html()
                parser.feed(open(os.path.join(dirpath, name), encoding='utf-8').read())
                pages[os.path.join(dirpath, name)] = parser
    for page, parser in sorted(pages.items()):
        if os.path.basename(page) in ('print.html', '404.html', 'toc.html'):
            continue  # every chapter again (print), and the 404 page's links are site-absolute
        for target in parser.targets:
            if re.match(r'^[a-z][a-z0-9+.-]*:|^//', target, re.I):
                continue
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(file_part))) if file_part else page
            if not os.path.exists(dest):
                yield f'{os.path.relpath(page, book)}: {target}: no file in the built book'
            elif anchor and dest in pages and anchor not in pages[dest].ids:
                yield f'{os.path.relpath(page, book)}: {target}: no id #{anchor} on that page'


def main(argv):
    problems, externals = list(summary_problems()), []
    for path in markdown_files():
        for line, target in links_of(path):
            wrong = check_link(path, target, externals)
            if wrong:
                problems.append(f'{rel(path)}:{line}: {target}: {wrong}')
        if path == os.path.join(ROOT, 'README.md') or path.startswith(GUIDE + os.sep):
            problems.extend(check_blocks(path))
    if '--html' in argv:
        problems.extend(html_problems(argv[argv.index('--html') + 1]))
    if '--list-external' in argv:
        for path, target in externals:
            print(f'{rel(path)}: {target}')
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
