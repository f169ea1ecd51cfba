"""MCP rows of scripts/bench (issue 28): `fen-fs mcp` over the heavy history that
scripts/gen_history.py writes (the search rows', full: ~2.5 GB of Claude Code, Codex and pi
sessions; quick: a few MB), spoken to over its stdio by a plain JSON-RPC client.

  #    scenario (fen-fs side)                       baseline (same run)          target
  M1   server RSS (VmRSS) once idle: after warm      -                            <= 60 MB
       search_sessions calls, the index closed
  M2   warm search_sessions call, p50 over every     `fen-fs search --json WORD`  <= 50 ms
       word (the JSON-RPC round trip, seen by the    on the same store, a process
       client), no mount: the server keeps the       each (start included)
       index up to date at each call

Words: the manifest's planted words and a few common ones, as rows 20/21. The first
call builds the index (each call waits for it at most 10 s, then answers from what is
indexed and says how far the build is); the row's notes say how long that took, the
RSS before any call and at its peak, and the same calls with a mount keeping the index
(the server then only reads it).
"""

import json
import os
import statistics
import subprocess
import time


IDS = ["M1", "M2"]


def add_rows(add):
    add("M1", "mcp server VmRSS once idle", "MB", "<=", 60, "value", "")
    add("M2", "mcp search_sessions warm, p50", "s", "<=", 0.05, "value",
        "fen-fs search --json WORD on the same store, a process each")


class Server:
    """`fen-fs mcp ARGS` with its stdin and stdout as a JSON-RPC channel."""

    def __init__(self, B, args):
        self.p = subprocess.Popen([str(B.BIN), "mcp"] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("fen-fs mcp closed its stdout")
            v = json.loads(line)
            if v.get("id") == rid:
                return v

    def search(self, word, limit=20):
        """(seconds, text) of one search_sessions call."""
        t0 = time.perf_counter()
        v = self.request("tools/call", {"name": "search_sessions",
                                        "arguments": {"query": word, "limit": limit}})
        dt = time.perf_counter() - t0
        r = v.get("result") or {}
        if r.get("isError") or "error" in v:
            raise RuntimeError("search_sessions %r failed: %s" % (word, v))
        return dt, "".join(c.get("text", "") for c in r.get("content", []))

    def status(self, B):
        return B.proc_status(self.p.pid)

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def building(text):
    return "being built" in text


def scenario(B, P, R, R_costly, rows, want):
    mode = P["mode"]
    h, man = B.search_history(mode)
    files = [h / f for f in man["sizes"]]
    B.log("history: %d files, %.0f MB; warming the page cache" % (len(files), man["total_bytes"] / 1e6))
    B.warm_files(files)
    store = B.WORK / "mcp-store"
    store.mkdir(parents=True)
    src = B.source_args(h)
    words = [w["word"] for w in man["words"]] + B.COMMON_WORDS
    m1, m2 = rows["M1"], rows["M2"]

    s = Server(B, ["--store", str(store), "--no-detect"] + src)
    try:
        m1.notes.append("VmRSS %.1f MB after initialize, before any call"
                        % (B.kb_field(s.status(B), "VmRSS") / 1024))
        # The first calls build the index.
        t0 = time.perf_counter()
        calls = 0
        while True:
            calls += 1
            _, text = s.search(words[0])
            if not building(text):
                break
            if time.perf_counter() - t0 > 1800:
                raise B.BenchError("the index was not complete after 30 min")
        build_s = time.perf_counter() - t0
        # Warm calls.
        xs = []
        for _ in range(max(1, R)):
            for w in words:
                dt, text = s.search(w)
                if building(text):
                    m2.checks.append("%r: the index was still being built" % w)
                xs.append(dt)
        m2.fen_samples = [statistics.median(xs)]
        m2.notes.append("%d calls over %d words, p50 %.1f ms, p99 %.1f ms; the first build "
                        "answered after %.1f s (%d calls, each waits at most 10 s); load "
                        "average %.1f" % (len(xs), len(words), statistics.median(xs) * 1e3,
                                          B.percentile(xs, 99) * 1e3, build_s, calls,
                                          os.getloadavg()[0]))
        hwm = B.kb_field(s.status(B), "VmHWM") / 1024
        # Idle: the index is closed 10 s after the last call (checked every 5 s); the
        # quick run (CI's smoke run) does not wait for it.
        idle = 16 if mode == "full" else 0
        time.sleep(idle)
        st = s.status(B)
        m1.fen_samples.append(B.kb_field(st, "VmRSS") / 1024)
        m1.notes.append("%d s after the last call%s; VmHWM %.0f MB (the first build); "
                        "the history %.0f MB" % (idle, "" if idle else " (index still open)",
                                                 hwm, man["total_bytes"] / 1e6))
    finally:
        s.close()

    # Baseline: the CLI, a process per word, the writer too (nobody else holds the index).
    base = [B.run_timed([str(B.BIN), "search", "--json", "--store", str(store), "--no-detect"]
                        + src + [w]) for _ in range(max(1, R)) for w in words]
    m2.base_samples = [statistics.median(base)]

    # With a mount keeping the index, the server only reads it.
    m = B.Mount(store, fsync="no", extra=src)
    m.up()
    try:
        B.wait_search_complete(B.MNT, 1800)
        s = Server(B, ["--store", str(store), "--no-detect"] + src)
        try:
            s.search(words[0])
            ys = [s.search(w)[0] for _ in range(max(1, R)) for w in words]
            m2.notes.append("with a mount keeping the index: p50 %.1f ms, p99 %.1f ms"
                            % (statistics.median(ys) * 1e3, B.percentile(ys, 99) * 1e3))
        finally:
            s.close()
    finally:
        m.down()
