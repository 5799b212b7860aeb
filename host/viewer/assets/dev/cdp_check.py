#!/usr/bin/env python3
"""Interactive browser check of the viewer over the Chrome DevTools Protocol (stdlib only).

Starts headless Chromium with --remote-debugging-port, drives the pages (clicks filters, types
in the search box, switches attempt tabs, filters the compare table) and prints PASS/FAIL lines.

    python3 host/viewer/assets/dev/serve_fixtures.py 8765 &
    python3 host/viewer/assets/dev/cdp_check.py http://127.0.0.1:8765

Only the fixture data set is assumed (see fixtures/). Exit status 1 when a check fails.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765"
PORT = 9333
RUN = "claude-test_harbor_claude_code%2F20261201_193035"
RUN_B = "claude-test_harbor_claude_code%2F20261201_181200"
XSS_REF = "normal%2Fxss--" + "ab" * 32


class Ws:
    """A minimal WebSocket client (text frames, client masking) for one CDP target."""

    def __init__(self, url):
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(head.decode(errors="replace"))
        self.next_id = 0

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def send(self, obj):
        data = json.dumps(obj).encode()
        header = bytes([0x81])
        n = len(data)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b1, b2 = self._recv_exact(2)
            n = b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            message += self._recv_exact(n)
            if b1 & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            msg = self.recv()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg.get("result", {})


def js(ws, expr):
    """Evaluates `expr` (may be async) in the page and returns its JSON value."""
    res = ws.call("Runtime.evaluate", expression=f"(async () => {{ {expr} }})()",
                  awaitPromise=True, returnByValue=True)
    if "exceptionDetails" in res:
        raise RuntimeError(res["exceptionDetails"])
    return res["result"].get("value")


WAIT = "const wait = (ms) => new Promise((r) => setTimeout(r, ms));"
UNTIL = WAIT + """const until = async (f) => { for (let i = 0; i < 100; i++) { if (f()) return true; await wait(50); } return false; };"""

failures = 0


def check(name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(("PASS " if ok else "FAIL ") + name + (f"  ({detail})" if detail else ""), flush=True)


def goto(ws, hash_, ready):
    js(ws, f"location.href = {json.dumps(BASE + '/' + hash_)}; return 1;")
    time.sleep(0.3)
    return js(ws, UNTIL + f"return await until(() => {ready});")


def main():
    chrome = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    profile = tempfile.mkdtemp(prefix="cdp-profile-")
    proc = subprocess.Popen([chrome, "--headless=new", "--no-sandbox", "--disable-gpu",
                             f"--remote-debugging-port={PORT}", f"--user-data-dir={profile}",
                             "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    try:
        targets = None
        for _ in range(100):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{PORT}/json/list"))
                if any(t["type"] == "page" for t in targets):
                    break
            except OSError:
                pass
            time.sleep(0.1)
        page = next(t for t in targets if t["type"] == "page")
        ws = Ws(page["webSocketDebuggerUrl"])
        print(f"chromium ready in {time.time() - t0:.2f}s", flush=True)

        check("runs page lists runs", goto(ws, "#/", "document.querySelectorAll('tr[data-run]').length >= 3"))
        n = js(ws, WAIT + """document.querySelectorAll('input[data-side=a]')[1].click();
                 document.querySelectorAll('input[data-side=b]')[0].click(); await wait(50);
                 return document.getElementById('compare-go').disabled;""")
        check("A and B checkboxes enable Compare", n is False)
        h = js(ws, "document.getElementById('compare-go').click(); return location.hash;")
        check("Compare goes to #/compare/A/B", h == "#/compare/" + RUN_B + "/" + RUN, h)

        check("run page loads", goto(ws, f"#/run/{RUN}", "document.querySelectorAll('#task-list [data-task-id]').length > 0"))
        check("headline", js(ws, "return document.getElementById('headline').textContent;") == "0.8833")
        total = js(ws, "return document.getElementById('task-count').textContent;")
        check("task count", total == "64 tasks", total)
        res = js(ws, UNTIL + """document.querySelector('[data-filter=wrong]').click();
                 await until(() => document.getElementById('task-count').textContent !== '64 tasks');
                 return [document.getElementById('task-count').textContent,
                         document.querySelectorAll('#task-list [data-task-id]').length, location.hash];""")
        check("filter wrong", res[0] == "8 tasks" and res[1] == 8 and "filter=wrong" in res[2], res)
        res = js(ws, UNTIL + """document.querySelector('[data-filter=all]').click();
                 await until(() => document.getElementById('task-count').textContent === '64 tasks');
                 const s = document.getElementById('task-search'); s.value = 'TASK-01';
                 s.dispatchEvent(new Event('input'));
                 await until(() => document.getElementById('task-count').textContent === '10 tasks');
                 return [document.getElementById('task-count').textContent,
                         [...document.querySelectorAll('#task-list [data-task-id]')].map((r) => r.dataset.taskId)];""")
        check("search (debounced)", res[0] == "10 tasks" and all(t.startswith("task-01") for t in res[1]), res[0])
        res = js(ws, UNTIL + """const s = document.getElementById('task-search'); s.value = '';
                 s.dispatchEvent(new Event('input'));
                 await until(() => document.getElementById('task-count').textContent === '64 tasks');
                 document.querySelector('[data-page=next]').click();
                 await until(() => document.querySelectorAll('#task-list [data-task-id]').length === 14);
                 return document.querySelectorAll('#task-list [data-task-id]').length;""")
        check("pagination page 2 has 14 rows", res == 14, res)
        res = js(ws, UNTIL + """const sel = document.getElementById('category-select'); sel.value = 'web';
                 sel.dispatchEvent(new Event('change'));
                 await until(() => document.getElementById('task-count').textContent === '21 tasks');
                 return document.getElementById('task-count').textContent;""")
        check("category select", res == "21 tasks", res)

        check("task page loads", goto(ws, f"#/task/{RUN}/{XSS_REF}", "document.querySelectorAll('#trajectory .step').length > 0"))
        res = js(ws, """return [document.querySelectorAll('#trajectory .step').length,
                 [...document.querySelectorAll('.tool-call')].map((e) => e.textContent).join('|').includes('wc -l /app/fizzbuzz.txt'),
                 document.querySelectorAll('.observation').length, document.querySelectorAll('img').length,
                 document.title, document.querySelector('.msg.user').textContent.includes("<script>document.title='pwned'</script>")];""")
        check("trajectory steps / commands / observations", res[0] == 4 and res[1] and res[2] == 3, res[:3])
        check("XSS payload shown as text, not executed", res[3] == 0 and res[4] == "agentcompass viewer" and res[5], res[3:])
        res = js(ws, UNTIL + """document.querySelector('[data-attempt=attempt-1]').click();
                 await until(() => document.querySelectorAll('#trajectory .step').length === 1);
                 return document.querySelectorAll('#trajectory .step').length;""")
        check("attempt tab switch", res == 1, res)
        href = js(ws, "return document.querySelector('[data-attempt=attempt-2]').click(), document.querySelector('a.dl').getAttribute('href');")
        check("artifact link encoded", href.startswith("/api/artifact?run=claude-test_harbor_claude_code%2F"), href)

        check("compare page loads", goto(ws, f"#/compare/{RUN_B}/{RUN}", "document.querySelectorAll('#compare-tasks [data-task-id]').length > 0"))
        res = js(ws, UNTIL + """document.querySelector('#compare-counts [data-change=fixed]').click();
                 await until(() => document.querySelectorAll('#compare-tasks [data-task-id]').length === 5);
                 return [document.querySelectorAll('#compare-tasks [data-task-id]').length,
                         document.querySelector('#compare-counts [data-change=fixed] .n').textContent];""")
        check("compare counts filter", res == [5, "5"], res)
        check("title never pwned", js(ws, "return document.title;") == "agentcompass viewer")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
    print(f"total {time.time() - t0:.2f}s, {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
