"""A heavy user's history (rows 12-18): scripts/gen_history.py's 1,500 Claude Code
sessions, 600 Codex, 300 pi, 2.5 GB, one Claude Code session of 300 MB, mounted with
--source.

  #   scenario (fen-fs side)                        baseline (same run)          target
  12  first mount (caches deleted) + `ls` + one    cold `cat` of every session  <= 1.5x time
      `cat` of every index.json, cold               file
  13  the same after a remount, cold                row 12's fen-fs side         <= 0.1x time
  14  cold `cat conversation.json` of the 300 MB    cold `cat` of its file       <= 2x time
      session right after the first mount
  15  the same read after the agent appends a line  the warm read just before    <= 1.5x time
      (100 other sessions' meta.json read between)
  15b the same read again 1 s after that append     the warm read just before    <= 1.5x time
      (the watcher has seen the append by then);
      15, 15b and 16 run on a remount after the
      copies and the search index were deleted:
      during a first pass (keeping, indexing)
  16  an agent's append seen by a fresh open of     -                            <= 1 s
      conversation.json
  17  warm `cat transcript.jsonl` of the 300 MB     warm `cat` of the file       <= 1.2x time
      session through the mount
  18  daemon peak RSS after the first mount and     -                            <= 150 MB
      every meta.json, until its first pass (every
      session kept and indexed) is over
"""

import json
import os
import shutil
import time

from harness import (MNT, WORK, BenchError, Mount, cat, claude_append, clean_store_caches,
                     conv_ends_with, drop_caches, first_pass_note, first_pass_running, fmt_time,
                     history_data, history_sources, kb_field, last_uuid, ls_and_indexes,
                     mount_name, run_timed, slug_of, wait_first_pass)

IDS = ["12", "13", "14", "15", "15b", "16", "17", "18"]


def add_rows(add):
    add("12", "history: first mount, ls + every index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every session file of the history")
    add("13", "history: the same after a remount", "s", "<=", 0.1, "fen/base",
        "the same on a first mount (row 12's fen-fs side)")
    add("14", "history: cold conversation.json, big sess.", "s", "<=", 2, "fen/base",
        "cold cat of the big Claude Code session's file")
    add("15", "history: that read after the agent appends", "s", "<=", 1.5, "fen/base",
        "the warm read just before (other sessions' meta.json read in between)")
    add("15b", "history: that read 1 s after, first pass", "s", "<=", 1.5, "fen/base",
        "the warm read before the append (row 15's baseline)")
    add("16", "history: agent's append seen in conv.json", "s", "<=", 1, "value", "")
    add("17", "history: warm cat transcript.jsonl, big", "s", "<=", 1.2, "fen/base",
        "warm cat of the file on the native fs")
    add("18", "history: VmHWM, meta.json + first pass", "MB", "<=", 150, "value", "")


def scenario_history(P, R_cheap, R_costly, rows, want):
    r12, r13, r14, r15, r16, r17, r18 = (rows[i] for i in ("12", "13", "14", "15", "16", "17", "18"))
    r15b = rows["15b"]
    root, man = history_data(P)
    files = [str(root / rel) for rel in sorted(man["sizes"])]
    big_info = man["big_session"]
    big = root / big_info["path"]
    big_size = big.stat().st_size
    big_times = (big.stat().st_atime_ns, big.stat().st_mtime_ns)
    store = WORK / "hist-store"
    store.mkdir(mode=0o700)
    m = Mount(store, "no", extra=history_sources(root))
    ns_name = mount_name(slug_of(big_info["cwd"]))
    view = None
    sessions = []
    cold = True
    try:
        # 12 and 14: first mounts (fen's caches of the other stores deleted each time).
        for i in range(R_costly):
            clean_store_caches(store)
            cold = drop_caches() and cold
            r12.base_samples.append(run_timed(["cat"] + files))
            drop_caches()
            r14.base_samples.append(cat(big))
            drop_caches()
            t0 = time.perf_counter()
            m.up()
            names = ls_and_indexes()
            r12.fen_samples.append(time.perf_counter() - t0)
            if view is None:
                for n in names:
                    for row in json.loads((MNT / n / "index.json").read_bytes()):
                        sessions.append((n, row["dir"]))
                        if row["id"] == big_info["id"]:
                            view = MNT / n / row["dir"]
                if view is None or view.parent.name != ns_name:
                    raise BenchError("the big session %s is not in %s" % (big_info["id"], ns_name))
                if len(sessions) != sum(man["files"].values()):
                    r12.checks.append("the index.json files list %d sessions, the history has %d" % (
                        len(sessions), sum(man["files"].values())))
            drop_caches()
            r14.fen_samples.append(cat(view / "conversation.json"))
            if i == R_costly - 1 and "18" in want:
                t0 = time.perf_counter()
                for n, d in sessions:
                    with open(MNT / n / d / "meta.json", "rb") as f:
                        f.read()
                dt = time.perf_counter() - t0
                # Throughout the first pass: every session kept and indexed.
                before = kb_field(m.status(), "VmHWM") / 1024
                waited, top, finished = wait_first_pass(m, 1200)
                st = m.status()
                r18.fen_samples.append(kb_field(st, "VmHWM") / 1024)
                r18.notes.append("a first mount's daemon (index built, big conversation.json read), "
                                 "then %d meta.json read in %s; %s; VmRSS now %.1f MB" % (
                                     len(sessions), fmt_time(dt),
                                     first_pass_note(waited, top, finished, before),
                                     kb_field(st, "VmRSS") / 1024))
            m.down()
        conv = view / "conversation.json"
        # 13: remounts with the caches the first mounts left.
        for i in range(R_costly):
            drop_caches()
            t0 = time.perf_counter()
            m.up()
            ls_and_indexes()
            r13.fen_samples.append(time.perf_counter() - t0)
            if i < R_costly - 1:
                m.down()
        r13.base_samples = list(r12.fen_samples)
        # 17: the raw transcript, warm, through the mount and natively.
        trans = view / "transcript.jsonl"
        cat(trans)
        cat(big)
        for _ in range(R_cheap):
            r17.fen_samples.append(cat(trans))
            r17.base_samples.append(cat(big))
        if os.stat(trans).st_size != big_size:
            r17.checks.append("transcript.jsonl size %d != %d" % (os.stat(trans).st_size, big_size))
        # 15, 15b, 16 during a first pass: the copies and the search index deleted, a
        # remount starts keeping and indexing the whole history again (the agents'
        # first index comes from its cache).
        m.down()
        for gone in (store / ".kept", store / ".fen-cache" / "search",
                     store / ".fen-cache" / "kept-lists"):
            shutil.rmtree(gone, ignore_errors=True)
        m.up()
        ls_and_indexes()
        during = 0
        # 15, 16: the agent appends; in between, other sessions are read.
        step = max(1, len(sessions) // P["history_others"])
        others = [s for s in sessions[::step] if MNT / s[0] / s[1] != view][:P["history_others"]]
        parent = last_uuid(big)
        cat(conv)
        try:
            for k in range(R_cheap):
                warm = cat(conv)
                r15.base_samples.append(warm)
                for n, d in others:
                    with open(MNT / n / d / "meta.json", "rb") as f:
                        f.read()
                marker = "bench append %d %s" % (k, os.urandom(6).hex())
                parent = claude_append(big, parent, marker, big_info["cwd"], big_info["id"])
                r15.fen_samples.append(cat(conv))
                if not conv_ends_with(conv, marker):
                    r15.checks.append("conversation.json does not end with append %d" % k)
                # 15b: a second later, when the daemon has long seen the append (the
                # first pass still running).
                t_append = time.perf_counter()
                running = first_pass_running(m)
                time.sleep(max(0.0, 1 - (time.perf_counter() - t_append)))
                r15b.base_samples.append(warm)
                r15b.fen_samples.append(cat(conv))
                during += running
                if not conv_ends_with(conv, marker):
                    r15b.checks.append("conversation.json does not end with append %d" % k)
                marker = "bench seen %d %s" % (k, os.urandom(6).hex())
                parent = claude_append(big, parent, marker, big_info["cwd"], big_info["id"])
                t0 = time.perf_counter()
                while not conv_ends_with(conv, marker):
                    if time.perf_counter() - t0 > 10:
                        r16.checks.append("append %d not seen after 10 s" % k)
                        break
                    time.sleep(0.001)
                r16.fen_samples.append(time.perf_counter() - t0)
        finally:
            os.truncate(big, big_size)
            os.utime(big, ns=big_times)
        conv_size = os.stat(conv).st_size
        total = man["total_bytes"]
        r12.notes.append("%d files (%s), %.0f MB; fen-fs side: `fen-fs mount` + `ls` + one `cat` of every "
                         "index.json, caches of the other stores deleted; %s" % (
                             len(files), ", ".join("%s %d" % kv for kv in sorted(man["files"].items())),
                             total / 1e6, "page cache dropped before each" if cold else
                             "WARM (drop_caches refused)"))
        r14.notes.append("big session %.0f MB (%d compactions), conversation.json %.0f MB; read right "
                         "after row 12's first mount" % (big_size / 1e6, big_info["compactions"], conv_size / 1e6))
        r15.notes.append("%d other sessions' meta.json read between the warm read and the append; "
                         "a remount after the copies and the search index were deleted: a first "
                         "pass runs" % len(others))
        r15b.notes.append("%d of %d reads while the first pass (keeping, indexing) ran" % (
            during, len(r15b.fen_samples)))
        if not during:
            r15b.checks.append("the first pass was over before 15b was read")
        r16.notes.append("from the append to a fresh open of conversation.json ending with it")
    finally:
        m.down()


def scenario(B, P, R_cheap, R_costly, rows, want):
    scenario_history(P, R_cheap, R_costly, rows, want)
