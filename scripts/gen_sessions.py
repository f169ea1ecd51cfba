#!/usr/bin/env python3
"""Generate synthetic fen session stores (fen session format, version 2) for benchmarks.

Deterministic: the same arguments and --seed always produce byte-identical files.
Stdlib only (Python 3.8+).

Shapes ("realistic" profile): agent turns made of a user message (20 B - 2 KB), a loop
of assistant tool calls (structured content with text + tool_use blocks), tool results
of 50 B to 200 KB (log-uniform), the occasional custom transcript-only entry
(bash-output, reasoning, diff), a title and a metadata entry, and a few compactions
whose first-kept-entry-id names an earlier message entry. The "small" profile keeps
every payload between 10 B and ~400 B, for sessions with a very large entry count.

Usage:
  gen_sessions.py session --out STORE --cwd /abs (--bytes N | --entries N)
                          [--profile realistic|small] [--compactions K] [--seed S]
      one session file under STORE/<namespace>/; prints its path
  gen_sessions.py store --out STORE --cwd /abs --sessions N [--mean-bytes B] [--seed S]
      N sessions in one namespace, sizes log-normal around --mean-bytes; prints a summary
  gen_sessions.py payloads --count N [--max-bytes B] [--seed S]
      N ctl lines (what an agent writes to a session's ctl), one per line, to stdout

Sizes passed as N accept suffixes k, M, G (powers of 1024).
"""

import argparse
import json
import math
import os
import random
import sys
import time

# 2025-01-01T00:00:00Z: generated timestamps start here, so they are deterministic and
# always in the past (ids the daemon assigns to later appends stay larger).
EPOCH_MS = 1735689600000

_WORDS = (
    "the of and to in is for on that with as at by from this it be are or an not "
    "function return value error file path config session agent model token context "
    "request response buffer index entry append read write open close sync flush "
    "struct impl trait async await match Some None Ok Err let mut pub fn use mod "
    "def class import self None True False yield lambda except raise "
    "const var await Promise export default interface type string number "
    "test passed failed warning note help expected found line column "
    "cargo build release debug target src main lib json serde tokio fuse inode "
    "git commit diff branch merge status origin HEAD master main "
    "über naïve café résumé → ← ✓ ✗ 日本語 中文 données Größe 🚀 🙂"
).split()

_CODE_LINES = [
    'fn main() {\n    println!("hello, {}", name);\n}\n',
    "    if let Some(x) = map.get(&key) {\n        return Ok(x.clone());\n    }\n",
    "def handler(event, ctx):\n\treturn {\"status\": 200, \"body\": json.dumps(event)}\n",
    "error[E0382]: borrow of moved value: `buf`\n  --> src/store/line.rs:42:17\n",
    'C:\\Users\\dev\\project\\src\\main.rs:12:5: warning: unused variable "x"\n',
    "$ ls -la\ntotal 48\ndrwxr-xr-x  5 user user 4096 Jan  1 12:00 .\n",
    "test store::tests::roundtrip ... ok\ntest ctl::tests::grammar ... ok\n",
    "diff --git a/src/lib.rs b/src/lib.rs\n@@ -1,4 +1,5 @@\n-use std::io;\n+use std::io::{self, Write};\n",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null}}\n',
    "SELECT id, name FROM users WHERE created_at > '2025-01-01' ORDER BY id;\n",
    "    at Object.<anonymous> (/home/u/app/index.js:10:15)\n    at Module._compile (node:internal)\n",
]


def parse_size(text):
    text = str(text).strip()
    mult = 1
    if text and text[-1] in "kKmMgG":
        mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[text[-1].lower()]
        text = text[:-1]
    return int(float(text) * mult)


class Corpus:
    """A ~1 MiB text pool; payloads are slices of it (fast, varied, JSON-escaped later)."""

    def __init__(self, seed):
        rnd = random.Random(("corpus", seed).__repr__())
        parts = []
        size = 0
        while size < (1 << 20):
            if rnd.random() < 0.15:
                s = rnd.choice(_CODE_LINES)
            else:
                n = rnd.randint(4, 18)
                s = " ".join(rnd.choice(_WORDS) for _ in range(n))
                s += rnd.choice([". ", ".\n", ", ", "\n", ": ", "; ", " - ", "\n\n"])
            parts.append(s)
            size += len(s)
        self.text = "".join(parts)
        self.n = len(self.text)

    def take(self, rnd, nchars):
        nchars = max(1, int(nchars))
        if nchars >= self.n:
            reps = nchars // self.n + 1
            return (self.text * reps)[:nchars]
        start = rnd.randrange(0, self.n - nchars)
        return self.text[start:start + nchars]


def log_uniform(rnd, lo, hi):
    return int(math.exp(rnd.uniform(math.log(lo), math.log(hi))))


def uuid7(ts_ms, rnd):
    v = (ts_ms & ((1 << 48) - 1)) << 80
    v |= 0x7 << 76
    v |= rnd.getrandbits(12) << 64
    v |= 0b10 << 62
    v |= rnd.getrandbits(62)
    h = "%032x" % v
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


_ts_cache = {}


def rfc3339(ts_ms):
    sec, ms = divmod(ts_ms, 1000)
    base = _ts_cache.get(sec)
    if base is None:
        if len(_ts_cache) > 4096:
            _ts_cache.clear()
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _ts_cache[sec] = base
    return "%s.%03dZ" % (base, ms)


def stamp(ts_ms):
    sec, ms = divmod(ts_ms, 1000)
    return time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(sec)) + "-%03dZ" % ms


def slug(cwd):
    s = cwd[1:] if cwd.startswith("/") else cwd
    for c in "/\\:":
        s = s.replace(c, "-")
    return "--" + s + "--"


def jstr(s):
    return json.dumps(s, ensure_ascii=False)


# ---------------------------------------------------------------------------------
# Payload shapes. Each function returns (kind, body) where kind is "message" with body
# the JSON text of the message object, or a custom type with body the JSON text of the
# extra fields (without braces), or "title"/"metadata".
# ---------------------------------------------------------------------------------


class Shapes:
    def __init__(self, corpus, rnd, profile):
        self.c = corpus
        self.r = rnd
        self.small = profile == "small"
        self.call_no = 0

    def text(self, lo, hi):
        if self.small:
            lo, hi = min(lo, 10), min(hi, 300)
            lo = max(lo, 10)
        return self.c.take(self.r, log_uniform(self.r, lo, hi))

    def user(self):
        return '{"role":"user","content":%s}' % jstr(self.text(20, 2000))

    def assistant_text(self):
        return '{"role":"assistant","content":%s}' % jstr(self.text(100, 8000))

    def assistant_call(self):
        self.call_no += 1
        call_id = "call_%06d%04x" % (self.call_no, self.r.getrandbits(16))
        tool = self.r.choice(["bash", "read_file", "edit_file", "grep", "write_file"])
        arg = jstr(self.text(10, 400))
        body = (
            '{"role":"assistant","content":[{"type":"text","text":%s},'
            '{"type":"tool_use","id":"%s","name":"%s","input":{"command":%s}}]}'
            % (jstr(self.text(20, 600)), call_id, tool, arg)
        )
        return call_id, body

    def tool_result(self, call_id):
        out = self.text(50, 200000)
        return '{"role":"tool","tool-call-id":"%s","content":%s}' % (call_id, jstr(out))

    def custom(self):
        kind = self.r.choice(["bash-output", "bash-output", "reasoning", "diff"])
        if kind == "bash-output":
            return kind, '"command":%s,"exit-code":%d,"output":%s' % (
                jstr(self.text(5, 80)), self.r.choice([0, 0, 0, 1, 2]), jstr(self.text(50, 20000)))
        if kind == "reasoning":
            return kind, '"text":%s' % jstr(self.text(50, 4000))
        return kind, '"path":"src/%s.rs","patch":%s' % (
            self.r.choice(["lib", "main", "store", "ctl"]), jstr(self.text(100, 10000)))


def session_entries(shapes, rnd):
    """Endless stream of (kind, body) in agent-turn order."""
    n_turn = 0
    while True:
        n_turn += 1
        yield "message", shapes.user()
        if n_turn == 1:
            yield "title", '"title":%s' % jstr(shapes.text(10, 60).replace("\n", " ").strip() or "untitled")
            yield "metadata", '"data":{"model":"bench-model-%d","agent":"fen-bench","turn":%d}' % (
                rnd.randint(1, 5), n_turn)
        for _ in range(rnd.choice([0, 1, 1, 2, 2, 3, 4, 6])):
            call_id, body = shapes.assistant_call()
            yield "message", body
            if rnd.random() < 0.3:
                yield shapes.custom()
            yield "message", shapes.tool_result(call_id)
        yield "message", shapes.assistant_text()
        if rnd.random() < 0.05:
            yield "message", '{"role":"system","content":%s}' % jstr(shapes.text(20, 500))


def write_session(out, cwd, seed, index=0, target_bytes=None, n_entries=None,
                  profile="realistic", compactions=None, corpus=None, start_ms=None):
    """Write one session file; returns (path, bytes, entries)."""
    if target_bytes is None and n_entries is None:
        raise ValueError("need target_bytes or n_entries")
    rnd = random.Random("%r/%r/%r" % (seed, cwd, index))
    corpus = corpus or Corpus(seed)
    shapes = Shapes(corpus, rnd, profile)
    ts = start_ms if start_ms is not None else EPOCH_MS + index * 3_600_000 + rnd.randrange(3_000_000)
    sid = uuid7(ts, rnd)
    ns = slug(cwd)
    os.makedirs(os.path.join(out, ns), mode=0o700, exist_ok=True)
    path = os.path.join(out, ns, "%s_%s.jsonl" % (stamp(ts), sid))

    if compactions is None:
        size = target_bytes if target_bytes is not None else n_entries * 300
        compactions = 0
        if size > 300_000:
            compactions = 1 + int(math.log2(size / 300_000) // 2)
        elif rnd.random() < 0.05:
            compactions = 1
        compactions = min(compactions, 4)
    # Compaction k happens once progress crosses (k+1)/(compactions+1) of the target and
    # keeps the messages from the midpoint since the previous compaction on.
    marks = [(k + 1) / (compactions + 1) for k in range(compactions)]

    header = '{"type":"session","version":2,"id":"%s","timestamp":"%s","cwd":%s}\n' % (
        sid, rfc3339(ts), jstr(cwd))
    buf = [header]
    buffered = len(header)
    total = len(header.encode())
    count = 0
    parent = None
    msg_ids = []  # ids of message entries since the last compaction point
    msg_bytes = 0
    last_compaction_tokens = 0
    gap_small = profile == "small"

    f = open(path, "w", encoding="utf-8", buffering=1 << 20)
    try:
        os.fchmod(f.fileno(), 0o600)
        stream = session_entries(shapes, rnd)
        while True:
            if target_bytes is not None:
                progress = total / target_bytes
                if total >= target_bytes:
                    break
            else:
                progress = count / n_entries
                if count >= n_entries:
                    break
            if marks and progress >= marks[0] and len(msg_ids) >= 4:
                marks.pop(0)
                keep_from = msg_ids[len(msg_ids) // 2]
                tokens_before = msg_bytes // 4 + last_compaction_tokens
                tokens_after = tokens_before // 2
                last_compaction_tokens = tokens_after
                kind, body = "compaction", (
                    '"summary":%s,"first-kept-entry-id":"%s","tokens-before":%d,'
                    '"tokens-after":%d,"trigger":"auto"'
                    % (jstr("Summary of the work so far: " + shapes.text(200, 3000)),
                       keep_from, tokens_before, tokens_after))
                msg_ids = msg_ids[len(msg_ids) // 2:]
                msg_bytes = 0
            else:
                kind, body = next(stream)
            ts += rnd.randint(1, 40) if gap_small else rnd.randint(5, 20000)
            eid = uuid7(ts, rnd)
            pid = 'null' if parent is None else '"%s"' % parent
            if kind == "message":
                line = '{"type":"message","id":"%s","parent-id":%s,"timestamp":"%s","message":%s}\n' % (
                    eid, pid, rfc3339(ts), body)
                msg_ids.append(eid)
                msg_bytes += len(body)
            else:
                line = '{"type":"%s","id":"%s","parent-id":%s,"timestamp":"%s",%s}\n' % (
                    kind, eid, pid, rfc3339(ts), body)
            parent = eid
            count += 1
            buf.append(line)
            n = len(line)
            total += n if line.isascii() else len(line.encode())
            buffered += n
            if buffered > (1 << 20):
                f.write("".join(buf))
                buf = []
                buffered = 0
        f.write("".join(buf))
    finally:
        f.close()
    os.utime(path, ns=(ts * 1_000_000, ts * 1_000_000))
    return path, os.path.getsize(path), count


def write_store(out, cwd, n_sessions, mean_bytes, seed, progress=None):
    """n_sessions sessions in one namespace; sizes log-normal (sigma 1.2) around mean_bytes."""
    corpus = Corpus(seed)
    rnd = random.Random("store/%r/%r" % (seed, cwd))
    sigma = 1.2
    # Sessions end with the turn that crosses their target, overshooting it by ~40%
    # on average at 100 KB: aim lower so the mean lands near mean_bytes.
    mu = math.log(mean_bytes * 0.6) - sigma * sigma / 2
    total = 0
    entries = 0
    for i in range(n_sessions):
        size = int(min(max(rnd.lognormvariate(mu, sigma), 2_000), mean_bytes * 40))
        _, b, e = write_session(out, cwd, seed, index=i, target_bytes=size, corpus=corpus)
        total += b
        entries += e
        if progress and (i + 1) % 1000 == 0:
            progress(i + 1, total)
    return total, entries


def ctl_payloads(count, seed, max_bytes=8192, min_bytes=50):
    """ctl lines an agent would write (bytes, '\\n'-terminated), payloads log-uniform."""
    corpus = Corpus(seed)
    rnd = random.Random("payloads/%r" % (seed,))
    lines = []
    for i in range(count):
        size = log_uniform(rnd, min_bytes, max_bytes)
        text = jstr(corpus.take(rnd, size))
        k = rnd.random()
        if k < 0.25:
            line = '{"role":"user","content":%s}' % text
        elif k < 0.55:
            line = ('{"role":"assistant","content":[{"type":"text","text":%s},'
                    '{"type":"tool_use","id":"call_%08d","name":"bash","input":{"command":"ls"}}]}'
                    % (text, i))
        elif k < 0.9:
            line = '{"role":"tool","tool-call-id":"call_%08d","content":%s}' % (i, text)
        else:
            line = '{"type":"bash-output","command":"make","exit-code":0,"output":%s}' % text
        lines.append((line + "\n").encode())
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("session", help="one session file")
    s.add_argument("--out", required=True)
    s.add_argument("--cwd", required=True)
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--bytes", type=parse_size)
    g.add_argument("--entries", type=parse_size)
    s.add_argument("--profile", choices=["realistic", "small"], default="realistic")
    s.add_argument("--compactions", type=int, default=None)
    s.add_argument("--index", type=int, default=0)
    s.add_argument("--seed", type=int, default=1)
    st = sub.add_parser("store", help="many sessions in one namespace")
    st.add_argument("--out", required=True)
    st.add_argument("--cwd", required=True)
    st.add_argument("--sessions", type=int, required=True)
    st.add_argument("--mean-bytes", type=parse_size, default=100_000)
    st.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("payloads", help="ctl lines to stdout")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--max-bytes", type=parse_size, default=8192)
    p.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.cmd == "session":
        if not a.cwd.startswith("/"):
            ap.error("--cwd must be absolute")
        path, b, e = write_session(a.out, a.cwd, a.seed, index=a.index, target_bytes=a.bytes,
                                   n_entries=a.entries, profile=a.profile, compactions=a.compactions)
        print(path)
        print("%d bytes, %d entries" % (b, e), file=sys.stderr)
    elif a.cmd == "store":
        if not a.cwd.startswith("/"):
            ap.error("--cwd must be absolute")
        t = time.time()
        total, entries = write_store(
            a.out, a.cwd, a.sessions, a.mean_bytes, a.seed,
            progress=lambda i, b: print("  %d sessions, %.0f MB" % (i, b / 1e6), file=sys.stderr))
        print("%d sessions, %d entries, %d bytes in %.1f s" % (a.sessions, entries, total, time.time() - t))
    else:
        out = sys.stdout.buffer
        for line in ctl_payloads(a.count, a.seed, a.max_bytes):
            out.write(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
