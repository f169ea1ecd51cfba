"""A namespace of many sessions (rows 6, 7, 7b, 8).

  #   scenario (fen-fs side)                        baseline (same run)          target
  6   `ls -l` of a namespace of 10,000 sessions     `ls -l` of the backing       <= 3x time
      (~1 GB)                                       folder
  7   mount + first `cat index.json` after a        mount + first `cat` after    >= 20x faster
      remount                                       the very first mount (cache
                                                    files deleted: full scan)
  7b  full-scan throughput (store bytes / time)     -                            >= 400 MB/s
  8   daemon peak RSS (VmHWM) after reading every   -                            <= 150 MB
      meta.json of scenario 6's store, until its
      first pass (the search index's build) is over

For 7/7b the page cache is warmed first (the store is read once) so the full scan
measures the daemon, not the disk. Scenario 8 finds the daemon by scanning
/proc/*/cmdline for "mount\\0<MP>\\0--foreground".
"""

import json
import os
import time

from harness import (MNT, Mount, cached_data, cat, clean_store_caches, first_pass_note, fmt_time,
                     gen, kb_field, ls_l, mount_name, wait_first_pass, warm_files)

IDS = ["6", "7", "7b", "8"]


def add_rows(add):
    add("6", "ls -l namespace (many sessions)", "s", "<=", 3, "fen/base",
        "ls -l of the backing folder")
    add("7", "mount+cat index.json after remount", "s", ">=", 20, "base/fen",
        "mount+cat index.json after the very first mount (full scan)")
    add("7b", "full scan throughput (first mount)", "MB/s", ">=", 400, "value", "")
    add("8", "daemon VmHWM, all meta.json + first pass", "MB", "<=", 150, "value", "")


# -------------------------------------------------------------- scenarios 6, 7, 8

def scenario_6_7_8(P, R_cheap, R_costly, rows, want):
    r6, r7, r7b, r8 = rows["6"], rows["7"], rows["7b"], rows["8"]
    params = {"sessions": P["many_sessions"], "mean": P["many_mean_bytes"], "seed": P["seed"],
              "mode": P["mode"]}
    store, man = cached_data("many", params, lambda out: gen.write_store(
        out, "/bench/many", P["many_sessions"], P["many_mean_bytes"], P["seed"]))
    total = man["total_bytes"]
    nsess = len(man["files"])
    ns = sorted(os.listdir(store))
    ns = [x for x in ns if x.startswith("--")][0]
    mns = mount_name(ns)
    t0 = time.perf_counter()
    warm_files(store / ns / f for f in sorted(os.listdir(store / ns)) if f.endswith(".jsonl"))
    warm_time = time.perf_counter() - t0
    m = Mount(store, "always")
    index_full = index_cached = None
    hwm_scan = []
    try:
        if "7" in want or "7b" in want:
            for i in range(R_costly):
                removed = clean_store_caches(store)
                if i == 0 and removed:
                    r7.notes.append("deleted before first mounts: %s" % ", ".join(removed[:5]))
                m.up()
                t = cat(MNT / mns / "index.json")
                r7.base_samples.append(m.mount_time + t)
                r7b.fen_samples.append(total / 1e6 / (m.mount_time + t))
                if index_full is None:
                    with open(MNT / mns / "index.json", "rb") as f:
                        index_full = f.read()
                hwm_scan.append(kb_field(m.status(), "VmHWM") / 1024)
                m.down()
            left = [e.name for e in os.scandir(store) if not e.name.startswith("--")]
            r7.notes.append("cache files the daemon leaves in the store: %s" % (", ".join(left) or "none"))
            for i in range(R_costly):
                m.up()
                t = cat(MNT / mns / "index.json")
                r7.fen_samples.append(m.mount_time + t)
                if i < R_costly - 1:
                    m.down()
            with open(MNT / mns / "index.json", "rb") as f:
                index_cached = f.read()
            if index_full != index_cached:
                r7.checks.append("index.json differs between the full scan and the remount "
                                 "(%d vs %d bytes)" % (len(index_full), len(index_cached)))
            try:
                n_idx = len(json.loads(index_cached))
                if n_idx != nsess:
                    r7.checks.append("index.json lists %d sessions, the store has %d" % (n_idx, nsess))
            except ValueError as e:
                r7.checks.append("index.json is not valid JSON: %s" % e)
            r7.notes.append("%d sessions, %.0f MB; page cache warmed first (read in %s); figures include "
                            "the `fen-fs mount` command (median mount alone on remount: %s)" % (
                                nsess, total / 1e6, fmt_time(warm_time), fmt_time(m.mount_time)))
            r7b.notes.append("store bytes / (mount + first cat index.json) with no cache files; "
                             "page cache warm")
        else:
            m.up()
        if "6" in want:
            first = ls_l(MNT / mns)
            ls_l(store / ns)
            for _ in range(R_cheap):
                r6.fen_samples.append(ls_l(MNT / mns))
                r6.base_samples.append(ls_l(store / ns))
            r6.notes.append("%d sessions; first ls -l after the remount %s; medians exclude it" % (
                nsess, fmt_time(first)))
        if "8" in want:
            t0 = time.perf_counter()
            nread = 0
            for d in os.listdir(MNT / mns):
                p = MNT / mns / d / "meta.json"
                if os.path.isdir(MNT / mns / d) and not os.path.islink(MNT / mns / d):
                    with open(p, "rb") as f:
                        f.read()
                    nread += 1
            dt = time.perf_counter() - t0
            # Throughout the first pass (the search index's build of the store).
            before = kb_field(m.status(), "VmHWM") / 1024
            waited, top, finished = wait_first_pass(m, 900)
            st = m.status()
            r8.fen_samples.append(kb_field(st, "VmHWM") / 1024)
            if nread != nsess:
                r8.checks.append("read %d meta.json, the store has %d sessions" % (nread, nsess))
            r8.notes.append("read %d meta.json in %s; %s; VmRSS now %.1f MB; VmHWM of the "
                            "full-scan daemons (7) %s" % (
                                nread, fmt_time(dt), first_pass_note(waited, top, finished, before),
                                kb_field(st, "VmRSS") / 1024,
                                ", ".join("%.1f MB" % x for x in hwm_scan) or "-"))
    finally:
        m.down()


def scenario(B, P, R_cheap, R_costly, rows, want):
    scenario_6_7_8(P, R_cheap, R_costly, rows, want)
