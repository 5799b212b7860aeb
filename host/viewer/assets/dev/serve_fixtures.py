#!/usr/bin/env python3
"""Dev server for the viewer front end, without the Rust server.

Serves ../index.html at /, ../app.js and ../app.css at /assets/, and answers /api/* from the
JSON files in fixtures/ (see the API contract in the issue 16 notes). Loopback only.

    python3 host/viewer/assets/dev/serve_fixtures.py [PORT]   # default 8765
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.dirname(HERE)
FIX = os.path.join(HERE, "fixtures")
START = time.time()


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return json.load(f)


def runs_by_path():
    return {r["path"]: r for r in fixture("runs.json")["runs"]}


def api_run(q):
    path = q.get("run", [""])[0]
    runs = runs_by_path()
    if path not in runs:
        return 404, {"error": "no such run"}
    data = fixture("run-running.json" if runs[path]["status"] == "running" else "run.json")
    data["run"] = runs[path]
    if runs[path]["status"] == "running":
        # Make the progress move so the 2 s polling is visible.
        tick = int(time.time() - START) // 2
        p = data["progress"]
        p["finished_tasks"] = min(p["total_tasks"], p["finished_tasks"] + tick)
        p["completed_tasks"] = min(p["total_tasks"], p["completed_tasks"] + tick)
        p["elapsed_seconds"] = time.time() - START + 1200
        data["run"]["finished_tasks"] = p["finished_tasks"]
    return 200, data


def task_matches(t, flt, category, issue, text):
    if category and t["category"] != category:
        return False
    if issue and issue not in t["issues"]:
        return False
    if text and text.lower() not in t["task_id"].lower():
        return False
    return {
        "all": True,
        "running": t["state"] == "running",
        "completed": t["status"] == "completed",
        "failed": t["state"] == "normal" and t["status"] != "completed",
        "error": t["state"] in ("error", "fatal"),
        "correct": t["correct"] is True,
        "wrong": t["correct"] is False,
    }.get(flt, True)


def api_tasks(q):
    if q.get("run", [""])[0] not in runs_by_path():
        return 404, {"error": "no such run"}
    data = fixture("tasks.json")
    try:
        page = int(q.get("page", ["0"])[0])
        size = int(q.get("size", ["50"])[0])
    except ValueError:
        return 400, {"error": "bad page/size"}
    flt = q.get("filter", ["all"])[0]
    if flt not in ("all", "running", "completed", "failed", "error", "correct", "wrong"):
        return 400, {"error": "bad filter"}
    rows = [t for t in data["tasks"] if task_matches(
        t, flt, q.get("category", [""])[0], q.get("issue", [""])[0], q.get("q", [""])[0])]
    data.update(total=len(rows), page=page, size=size, tasks=rows[page * size:(page + 1) * size])
    return 200, data


def api_task(q):
    ref = q.get("task", [""])[0]
    if ref.startswith("normal/xss--"):
        return 200, fixture("task.json")
    if ref.startswith("running/"):
        return 200, fixture("task-running.json")
    if ".." in ref:
        return 404, {"error": "no such task"}
    return 200, fixture("task-real.json")


def api_compare(q):
    data = fixture("compare.json")
    runs = runs_by_path()
    a, b = q.get("a", [""])[0], q.get("b", [""])[0]
    if a not in runs or b not in runs:
        return 404, {"error": "no such run"}
    data["a"], data["b"] = runs[a], runs[b]
    return 200, data


API = {"/api/runs": lambda q: (200, fixture("runs.json")), "/api/run": api_run,
       "/api/tasks": api_tasks, "/api/task": api_task, "/api/compare": api_compare}
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/assets/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/assets/app.css": ("app.css", "text/css; charset=utf-8")}


class Handler(BaseHTTPRequestHandler):
    def send(self, code, body, ctype, extra=()):
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.send_header("cache-control", "no-store")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        if url.path in STATIC:
            name, ctype = STATIC[url.path]
            with open(os.path.join(ASSETS, name), "rb") as f:
                return self.send(200, f.read(), ctype)
        if url.path == "/api/artifact":
            body = ("artifact %s of %s (fixture bytes)\n" % (q.get("path", [""])[0],
                                                             q.get("task", [""])[0])).encode()
            return self.send(200, body, "application/octet-stream",
                             [("content-disposition", "attachment")])
        if url.path in API:
            code, data = API[url.path](q)
            return self.send(code, json.dumps(data).encode(), "application/json")
        self.send(404, b'{"error": "not found"}', "application/json")

    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    print("serving on http://127.0.0.1:%d/" % port, flush=True)
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
