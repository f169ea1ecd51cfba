"""Appends (rows 1, 2a, 2b): fen's own sessions written through ctl.

  #   scenario (fen-fs side)                        baseline (same run)          target
  1   appends via one held-open ctl fd, --fsync no  "\\n" writes on the same fd  >= 0.8x rate
      (entries/s)
  2a  durable appends, --fsync always, 8 writer     1 writer, same mode          >= 3x rate
      processes on one session (total entries/s)
  2b  same                                          sqlite3 WAL, synchronous=    >= 1x rate
                                                    FULL, 1 INSERT+COMMIT per
                                                    entry, 8 processes

Row 1 also runs with the search indexer off (FEN_FS_SEARCH=off) beside it; a note
gives both rates.
"""

import json
import multiprocessing
import os
import sqlite3
import time
from pathlib import Path

from harness import (WORK, BenchError, Mount, Row, create_session, fmt_rate, gen,  # noqa: F401
                     read_meta)

IDS = ["1", "2a", "2b"]


def add_rows(add):
    add("1", "ctl appends, 1 held fd, --fsync no", "entries/s", ">=", 0.8, "fen/base",
        '"\\n" (empty line) writes on the same fd')
    add("2a", "8 writer procs, --fsync always", "entries/s", ">=", 3, "fen/base",
        "1 writer process, --fsync always")
    add("2b", "8 writer procs, --fsync always", "entries/s", ">=", 1, "fen/base",
        "sqlite3 WAL synchronous=FULL, INSERT+COMMIT per entry, 8 procs")


# ------------------------------------------------------------------- scenario 1

def scenario_1(P, R, rows):
    row = rows["1"]
    _appends_1(P, R, row, WORK / "s1-store")
    # The same with no search indexer, side by side: what the indexer's wake-ups cost
    # the appends (issue 24: row 1 >= 0.5x with it on, in every run).
    off = Row("1-off", "", "entries/s", ">=", 0, "fen/base")
    os.environ[SEARCH_ENV] = "off"
    try:
        _appends_1(P, R, off, WORK / "s1-store-off")
    finally:
        del os.environ[SEARCH_ENV]
    row.checks.extend("indexer off: " + c for c in off.checks)
    if off.ratio is not None and row.ratio is not None:
        row.notes.append("with the search indexer off (FEN_FS_SEARCH=off), same run: %s, %.2fx; "
                         "with it on %.2fx (%.0f%% of the rate without it)" % (
                             fmt_rate(off.fen), off.ratio, row.ratio, 100.0 * row.fen / off.fen))


SEARCH_ENV = "FEN_FS_SEARCH"


def _appends_1(P, R, row, store):
    store.mkdir(mode=0o700)
    m = Mount(store, "no").up()
    try:
        sess = create_session("/bench/append")
        n = P["s1_entries"]
        payloads = gen.ctl_payloads(n, P["seed"], max_bytes=P["s1_max_bytes"])
        mean = sum(map(len, payloads)) / n
        fd = os.open(str(sess / "ctl"), os.O_RDWR)
        written = 0
        replies = []

        def drain():
            # As a client that reads its replies between bursts: a handle keeps only
            # the most recent 1 MiB of unread replies (docs/ctl.md).
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                replies.extend(b.decode(errors="replace").splitlines())
        try:
            warm = min(200, n)
            for line in payloads[:warm]:
                os.write(fd, line)
            written += warm
            for _ in range(warm):
                os.write(fd, b"\n")
            drain()
            for _ in range(R):
                t0 = time.perf_counter()
                for _ in range(n):
                    os.write(fd, b"\n")
                row.base_samples.append(n / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                for line in payloads:
                    os.write(fd, line)
                row.fen_samples.append(n / (time.perf_counter() - t0))
                written += n
                drain()
            # one "ok <id>" per entry
            oks = sum(1 for r in replies if r.startswith("ok "))
            errs = [r for r in replies if not r.startswith("ok ")]
            if oks != written or errs:
                row.checks.append("handle replies: %d ok for %d writes, %d other lines (%r)" % (
                    oks, written, len(errs), errs[:2]))
        finally:
            os.close(fd)
        meta = read_meta(sess)
        if meta.get("entries") != written + 1:
            row.checks.append("meta.json entries=%s, expected %d" % (meta.get("entries"), written + 1))
        row.notes.append("%d entries per run, payloads 50 B-%d B log-uniform (mean %.0f B), "
                         "user/assistant/tool/bash-output lines" % (n, P["s1_max_bytes"], mean))
    finally:
        m.down()


# ------------------------------------------------------------------- scenario 2

def _fen_writer(ctl, lines, barrier, q):
    try:
        fd = os.open(ctl, os.O_RDWR)
        barrier.wait()
        t0 = time.perf_counter()
        for line in lines:
            os.write(fd, line)
        t1 = time.perf_counter()
        os.close(fd)
        q.put(("ok", t0, t1, len(lines)))
    except BaseException as e:  # noqa: BLE001
        q.put(("err", repr(e), 0, 0))


def _sqlite_writer(db, lines, barrier, q):
    try:
        conn = sqlite3.connect(db, timeout=120, isolation_level=None)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=120000")
        sid = "bench-session"
        barrier.wait()
        t0 = time.perf_counter()
        for line in lines:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO entries(session, ts, body) VALUES (?, ?, ?)",
                         (sid, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), line))
            conn.execute("COMMIT")
        t1 = time.perf_counter()
        conn.close()
        q.put(("ok", t0, t1, len(lines)))
    except BaseException as e:  # noqa: BLE001
        q.put(("err", repr(e), 0, 0))


def run_procs(target, arg, chunks):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(chunks))
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(arg, c, barrier, q)) for c in chunks]
    for p in procs:
        p.start()
    results = []
    try:
        for _ in procs:
            results.append(q.get(timeout=900))
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errs = [r[1] for r in results if r[0] != "ok"]
    if errs:
        raise BenchError("writer failed: %s" % errs[0])
    t0 = min(r[1] for r in results)
    t1 = max(r[2] for r in results)
    total = sum(r[3] for r in results)
    return total / (t1 - t0)


def sqlite_setup(db):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    conn = sqlite3.connect(db, isolation_level=None)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    conn.execute("CREATE TABLE entries(id INTEGER PRIMARY KEY, session TEXT NOT NULL, "
                 "ts TEXT NOT NULL, body BLOB NOT NULL)")
    conn.close()
    if mode.lower() != "wal":
        raise BenchError("sqlite refused WAL mode (%s)" % mode)


def sqlite_count(db):
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    conn.close()
    return n


def scenario_2(P, R, rows):
    ra, rb = rows["2a"], rows["2b"]
    store = WORK / "s2-store"
    store.mkdir(mode=0o700)
    nw, per, single = P["s2_writers"], P["s2_per_writer"], P["s2_single"]
    payloads = gen.ctl_payloads(nw * per, P["seed"] + 1, max_bytes=P["s1_max_bytes"])
    chunks = [payloads[i * per:(i + 1) * per] for i in range(nw)]
    db = str(WORK / "sqlite" / "bench.db")
    (WORK / "sqlite").mkdir()
    m = Mount(store, "always").up()
    expected = 1
    try:
        sess = create_session("/bench/durable")
        ctl = str(sess / "ctl")
        # warm-up: open/close path, first fdatasync
        run_procs(_fen_writer, ctl, [payloads[:10]])
        expected += 10
        for _ in range(R):
            r8 = run_procs(_fen_writer, ctl, chunks)
            expected += nw * per
            r1 = run_procs(_fen_writer, ctl, [payloads[:single] if single <= len(payloads)
                                              else (payloads * (single // len(payloads) + 1))[:single]])
            expected += single
            sqlite_setup(db)
            rs = run_procs(_sqlite_writer, db, chunks)
            got = sqlite_count(db)
            if got != nw * per:
                rb.checks.append("sqlite has %d rows, expected %d" % (got, nw * per))
            ra.fen_samples.append(r8)
            rb.fen_samples.append(r8)
            ra.base_samples.append(r1)
            rb.base_samples.append(rs)
        meta = read_meta(sess)
        if meta.get("entries") != expected:
            ra.checks.append("meta.json entries=%s, expected %d" % (meta.get("entries"), expected))
        # parent-id chain must be intact with concurrent writers
        broken = check_chain(Path(store), sess.name)
        if broken:
            ra.checks.append(broken)
        note = ("%d writers x %d entries (1 writer: %d entries); same payloads for fen-fs and "
                "sqlite; sqlite db in %s" % (nw, per, single, WORK / "sqlite"))
        ra.notes.append(note)
        rb.notes.append(note)
    finally:
        m.down()


def check_chain(store, dirname):
    for ns in os.listdir(store):
        p = store / ns / (dirname + ".jsonl")
        if p.exists():
            prev = None
            with open(p, "rb") as f:
                next(f)
                for i, line in enumerate(f):
                    e = json.loads(line)
                    if e.get("parent-id") != prev or (prev is not None and not e["id"] > prev):
                        return "parent-id chain broken at entry %d of %s" % (i + 1, p.name)
                    prev = e["id"]
            return None
    return "backing file of %s not found" % dirname


SCENARIOS = [
    (["1"], lambda B, P, R_cheap, R_costly, rows, want: scenario_1(P, R_cheap, rows)),
    (["2a", "2b"], lambda B, P, R_cheap, R_costly, rows, want: scenario_2(P, R_costly, rows)),
]
