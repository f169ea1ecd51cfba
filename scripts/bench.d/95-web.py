"""Web rows of scripts/bench (issue 32): `fen-fs web`, asked over HTTP as the page asks
(its Host, its cookie), no mount. Rows W1 and W6 over the 10,000 pi sessions of rows 9
and 11; the others over the heavy history of rows 12-18 (scripts/gen_history.py: full
~2.5 GB of Claude Code, Codex and pi sessions with ONE Claude Code session of ~300 MB).

  #    scenario (fen-fs side)                        baseline (same run)          target
  W1   Sessions page (`/`, the whole HTML), warm,    -                            <= 200 ms
       10,000 sessions, p50
  W2   search as you type: `/api/search?q=WORD`      -                            <= 50 ms
       warm, p50 over every word (the index kept
       by the server, no mount)
  W3   the 300 MB session's page (`/s/ID`, the       -                            <= 300 ms
       whole HTML of its first screen), p50
  W3s  that page's size                              -                            <= 5 MB
  W4   Usage page (`/usage`, last 30 days) warm,     -                            <= 300 ms
       p50
  W5   server VmHWM after W2-W4                      -                            <= 150 MB
  W6   the first Sessions page right after start     -                            <= 1 s
       (10,000 sessions): never waits for the usage
       counter or the index (a partial answer says
       so: its note tells whether it was partial)

Times are seen by the client (a new connection each, as a browser's first request).
"""

import http.client
import json
import os
import statistics
import subprocess
import time


IDS = ["W1", "W2", "W3", "W3s", "W4", "W5", "W6"]


def add_rows(add):
    add("W1", "web: Sessions page, 10k sessions, warm p50", "s", "<=", 0.2, "value", "")
    add("W2", "web: /api/search as you type, warm p50", "s", "<=", 0.05, "value", "")
    add("W3", "web: 300 MB session's first screen, p50", "s", "<=", 0.3, "value", "")
    add("W3s", "web: 300 MB session's first screen size", "MB", "<=", 5, "value", "")
    add("W4", "web: Usage page, warm p50", "s", "<=", 0.3, "value", "")
    add("W5", "web: server VmHWM after W2-W4", "MB", "<=", 150, "value", "")
    add("W6", "web: first Sessions page after start, 10k", "s", "<=", 1, "value", "")


class Server:
    """`fen-fs web --port 0 ARGS`, asked as its page asks."""

    def __init__(self, B, args):
        self.p = subprocess.Popen([str(B.BIN), "web", "--port", "0"] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL)
        self.started = time.perf_counter()
        url = self.p.stdout.readline().decode().strip()
        self.answering = time.perf_counter()
        if not url.startswith("http://127.0.0.1:"):
            raise B.BenchError("fen-fs web printed %r" % url)
        rest = url[len("http://127.0.0.1:"):]
        port, token = rest.split("/?token=")
        self.port = int(port)
        self.cookie = "fen_fs_web_%s=%s" % (port, token)

    def get(self, path):
        """(seconds, status, body bytes) of one GET on a new connection."""
        t0 = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("GET", path, headers={"Host": "127.0.0.1:%d" % self.port, "Cookie": self.cookie})
        r = c.getresponse()
        body = r.read()
        dt = time.perf_counter() - t0
        c.close()
        return dt, r.status, body

    def ok(self, B, path):
        dt, status, body = self.get(path)
        if status != 200:
            raise B.BenchError("GET %s: %d %s" % (path, status, body[:300]))
        return dt, body

    def until(self, B, path, done, limit=1800):
        t0 = time.perf_counter()
        while True:
            dt, body = self.ok(B, path)
            if done(body):
                return time.perf_counter() - t0
            if time.perf_counter() - t0 > limit:
                raise B.BenchError("GET %s: not done after %d s" % (path, limit))
            time.sleep(0.2)

    def status(self, B):
        return B.proc_status(self.p.pid)

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def scenario(B, P, R, R_costly, rows, want):
    if "W1" in want or "W6" in want:
        sessions_10k(B, P, R, rows)
    if any(i in want for i in ("W2", "W3", "W3s", "W4", "W5")):
        history(B, P, R, rows)


def sessions_10k(B, P, R, rows):
    cwd = "/bench/pi-project"
    params = {"sessions": P["pi_sessions"], "messages": P["pi_messages"], "seed": P["seed"],
              "mode": P["mode"]}
    root, _ = B.cached_data("pi", params, lambda out: B.write_pi_store(
        out, cwd, P["pi_sessions"], P["pi_messages"], P["seed"]))
    store = B.WORK / "web-pi-store"
    store.mkdir(mode=0o700)
    s = Server(B, ["--store", str(store), "--no-detect", "--source", "pi=%s" % root])
    try:
        dt, body = s.ok(B, "/")
        first = time.perf_counter() - s.answering
        partial = b"still being counted" in body
        rows["W6"].fen_samples.append(first)
        rows["W6"].notes.append("%s; %d sessions; the page %.0f KB" % (
            "partial: it said the usage was still being counted" if partial
            else "the usage was already counted", P["pi_sessions"], len(body) / 1e3))
        if ("%d of %d sessions" % (P["pi_sessions"], P["pi_sessions"])).encode() not in body.replace(b",", b""):
            rows["W1"].checks.append("the Sessions page did not count %d sessions" % P["pi_sessions"])
        xs = [s.ok(B, "/")[0] for _ in range(max(5, R * 5))]
        rows["W1"].fen_samples = [statistics.median(xs)]
        rows["W1"].notes.append("%d answers, p99 %.0f ms; page 2: %.0f ms; filtered by agent: %.0f ms" % (
            len(xs), B.percentile(xs, 99) * 1e3, s.ok(B, "/?page=2")[0] * 1e3,
            s.ok(B, "/?agent=pi")[0] * 1e3))
    finally:
        s.close()


def history(B, P, R, rows):
    mode = P["mode"]
    h, man = B.search_history(mode)
    files = [h / f for f in man["sizes"]]
    B.log("history: %d files, %.0f MB; warming the page cache" % (len(files), man["total_bytes"] / 1e6))
    B.warm_files(files)
    store = B.WORK / "web-store"
    store.mkdir(parents=True)
    src = B.source_args(h)
    words = [w["word"] for w in man["words"]] + B.COMMON_WORDS
    s = Server(B, ["--store", str(store), "--no-detect"] + src)
    try:
        # The index's first build, and the first usage count: waited for.
        # (`partial` names why an answer may be partial; null once the index is built.)
        limit = 120 if mode == "quick" else 1800
        build = s.until(B, "/api/search?q=%s" % words[0],
                        lambda b: json.loads(b).get("partial") is None, limit)
        counted = s.until(B, "/api/status", lambda b: b'"usage_counted":true' in b, limit)
        xs = []
        took = []
        for _ in range(max(1, R)):
            for w in words:
                # As one types: each prefix of the word, then the word.
                for n in range(3, len(w) + 1):
                    dt, body = s.ok(B, "/api/search?q=%s" % w[:n])
                    xs.append(dt)
                    if json.loads(body).get("partial") is not None:
                        rows["W2"].checks.append("%r: a partial answer after the build" % w[:n])
                    i = body.find(b'"took_ms":')
                    if i >= 0:
                        took.append(float(body[i + 10:].split(b"}")[0].split(b",")[0]))
        rows["W2"].fen_samples = [statistics.median(xs)]
        rows["W2"].notes.append("%d requests (every prefix of %d words from 3 letters), p99 %.1f ms; "
                                "the server's own time p50 %.1f ms; the first build took %.0f s, "
                                "the first usage count %.0f s after that" % (
                                    len(xs), len(words), B.percentile(xs, 99) * 1e3,
                                    statistics.median(took) if took else float("nan"), build, counted))
        big = max(man["sizes"], key=lambda f: man["sizes"][f])
        sid = os.path.basename(big).rsplit(".", 1)[0]
        ys = []
        size = 0
        for _ in range(max(3, R)):
            dt, body = s.ok(B, "/s/%s" % sid)
            ys.append(dt)
            size = len(body)
        rows["W3"].fen_samples = [statistics.median(ys)]
        rows["W3s"].fen_samples = [size / 1e6]
        rows["W3"].notes.append("%s (%.0f MB); the first answer %.0f ms; the next screen "
                                "(/messages?from=N) %.0f ms" % (
                                    sid, man["sizes"][big] / 1e6, ys[0] * 1e3,
                                    s.ok(B, "/s/%s/messages?from=40" % sid)[0] * 1e3))
        s.ok(B, "/usage")
        zs = [s.ok(B, "/usage")[0] for _ in range(max(5, R * 5))]
        rows["W4"].fen_samples = [statistics.median(zs)]
        rows["W4"].notes.append("p99 %.0f ms; the daily chart %.0f ms" % (
            B.percentile(zs, 99) * 1e3, s.ok(B, "/usage/chart.svg?report=daily")[0] * 1e3))
        st = s.status(B)
        rows["W5"].fen_samples.append(B.kb_field(st, "VmHWM") / 1024)
        rows["W5"].notes.append("VmRSS now %.0f MB; the history %.0f MB" % (
            B.kb_field(st, "VmRSS") / 1024, man["total_bytes"] / 1e6))
    finally:
        s.close()
