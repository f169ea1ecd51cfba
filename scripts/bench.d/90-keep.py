"""Keeping rows of scripts/bench (issue 25), over the heavy user's history of rows
12-18 (scripts/gen_history.py: full ~2.5 GB of Claude Code, Codex and pi sessions;
quick: a few MB).

  #    scenario (fen-fs side)                        baseline (same run)          target
  K1   first `fen-fs keep` of the history, no mount, cold `cat` of every session  <= 2x time
       page cache dropped, sessions quiet for two   file, page cache dropped
       days (each written compressed at once)
  K2   kept copies' bytes on disk / the sessions'    -                            <= 25 %
       bytes, after that first `fen-fs keep`
  K3a  first mount + `ls` + every index.json (row   the same with FEN_FS_KEEP=   <= 1.15x time
       12's fen-fs side), keeping on: the keeper     off, alternated
       starts copying as soon as the index is built
  K3b  the same after a remount, the copies made    the same with FEN_FS_KEEP=   <= 1.15x time
       (row 13's fen-fs side)                        off, alternated
  K4   daemon peak RSS (VmHWM) once its first keep   -                            <= 150 MB
       of the history is done (search indexer off:
       its build's peak is row 25's)

The other rows run with keeping on (the default) too. Row 1 (ctl appends) is fen's own
store, which is never kept: keeping does not look at it.
"""

import json
import os
import subprocess
import time

IDS = ["K1", "K2", "K3a", "K3b", "K4"]


def add_rows(add):
    add("K1", "first fen-fs keep of the history, cold", "s", "<=", 2, "fen/base",
        "cold cat of every session file of the history")
    add("K2", "kept copies / sessions, quiet history", "%", "<=", 25, "value", "")
    add("K3a", "history: first mount + ls + index.json, keeping", "s", "<=", 1.15, "fen/base",
        "the same with FEN_FS_KEEP=off (alternated)")
    add("K3b", "history: the same after a remount, keeping", "s", "<=", 1.15, "fen/base",
        "the same with FEN_FS_KEEP=off (alternated)")
    add("K4", "daemon VmHWM after its first keep", "MB", "<=", 150, "value", "")


def tree_bytes(path):
    total = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(d, n)).st_size
            except OSError:
                pass
    return total


def keeping_status(B, m):
    r = subprocess.run([str(B.BIN), "status", "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    for line in r.stdout.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if v.get("mountpoint") == str(m.mp):
            return v.get("keeping") or ""
    return ""


def wait_first_keep(B, m, timeout):
    """Waits until `fen-fs status` says the daemon's first keep is done (`on`)."""
    t0 = time.time()
    said = ""
    while time.time() - t0 < timeout:
        said = keeping_status(B, m)
        if said == "on":
            return time.time() - t0
        time.sleep(0.2)
    raise B.BenchError("no first keep within %d s (status: %s)%s" % (timeout, said, m._log_tail()))


def up(B, m, keep):
    """Mounts `m` with keeping on or off (FEN_FS_KEEP in the daemon's environment)."""
    old = os.environ.get("FEN_FS_KEEP")
    if keep:
        os.environ.pop("FEN_FS_KEEP", None)
    else:
        os.environ["FEN_FS_KEEP"] = "off"
    try:
        return m.up()
    finally:
        if old is None:
            os.environ.pop("FEN_FS_KEEP", None)
        else:
            os.environ["FEN_FS_KEEP"] = old


def scenario(B, P, R_cheap, R_costly, rows, want):
    k1, k2, k3a, k3b, k4 = (rows[i] for i in IDS)
    root, man = B.history_data(P)
    files = [str(root / rel) for rel in sorted(man["sizes"])]
    total = man["total_bytes"]
    sources = B.history_sources(root)
    cold = True
    if "K1" in want or "K2" in want:
        # Quiet for two days (their times put back after).
        times = {f: (os.stat(f).st_atime_ns, os.stat(f).st_mtime_ns) for f in files}
        back = time.time() - 2 * 86400
        try:
            for f in files:
                os.utime(f, (back, back))
            for i in range(R_costly):
                store = B.WORK / ("keep-store-%d" % i)
                cold = B.drop_caches() and cold
                k1.base_samples.append(B.run_timed(["cat"] + files))
                B.drop_caches()
                keep = [str(B.BIN), "keep", "--quiet", "--store", str(store), "--no-detect"] + sources
                k1.fen_samples.append(B.run_timed(keep))
                # What the first keep wrote: every quiet session compressed at once.
                kept = tree_bytes(store / ".kept")
                k2.fen_samples.append(100.0 * kept / total)
                if i == 0:
                    # A second keep has nothing left to compress.
                    took = B.run_timed(keep)
                    again = tree_bytes(store / ".kept")
                    k2.notes.append("%.0f MB kept for %.0f MB of sessions by the first `fen-fs keep`; "
                                    "a second one took %s and left %.0f MB" % (
                                        kept / 1e6, total / 1e6, B.fmt_time(took), again / 1e6))
        finally:
            for f, t in times.items():
                os.utime(f, ns=t)
            # Only now: ext4 without a journal skips inodes freed in the last 30 s
            # when it allocates new ones (`recently_deleted`), so a store deleted just
            # before a keep made that keep's 8,000 creates cost 0.4 s of CPU more
            # than a user's first keep does (docs/performance.md).
            for i in range(R_costly):
                subprocess.run(["rm", "-rf", str(B.WORK / ("keep-store-%d" % i))])
        k1.notes.append("%d files, %.0f MB; fen-fs side: `fen-fs keep` on a new store (no index, "
                        "no copies): the agents' first indexes, every session copied, compressed; %s" % (
                            len(files), total / 1e6,
                            "page cache dropped before each" if cold else "WARM (drop_caches refused)"))
    if not any(i in want for i in ("K3a", "K3b", "K4")):
        return
    store = B.WORK / "keep-mount-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=sources)
    try:
        # K3a: first mounts, alternated with keeping off (the store's caches and copies
        # deleted before each).
        for i in range(R_costly):
            for keep in (True, False):
                subprocess.run(["rm", "-rf", str(store / ".kept")])
                B.clean_store_caches(store)
                B.drop_caches()
                t0 = time.perf_counter()
                up(B, m, keep)
                B.ls_and_indexes()
                (k3a.fen_samples if keep else k3a.base_samples).append(time.perf_counter() - t0)
                m.down()
        # K4: a mount that keeps the whole history (the search indexer off: its own
        # build's peak is row 25's, and would hide what keeping costs).
        subprocess.run(["rm", "-rf", str(store / ".kept")])
        B.clean_store_caches(store)
        B.drop_caches()
        os.environ["FEN_FS_SEARCH"] = "off"
        try:
            up(B, m, True)
        finally:
            os.environ.pop("FEN_FS_SEARCH", None)
        B.ls_and_indexes()
        took = wait_first_keep(B, m, 3600)
        st = m.status()
        k4.fen_samples.append(B.kb_field(st, "VmHWM") / 1024)
        k4.notes.append("a first mount's daemon (FEN_FS_SEARCH=off), index built, then every session "
                        "kept in the background (%s after the index.json were read); VmRSS now %.1f MB" % (
                            B.fmt_time(took), B.kb_field(st, "VmRSS") / 1024))
        m.down()
        # K3b: remounts with the copies (and caches) made, alternated.
        for i in range(R_costly):
            for keep in (True, False):
                B.drop_caches()
                t0 = time.perf_counter()
                up(B, m, keep)
                B.ls_and_indexes()
                (k3b.fen_samples if keep else k3b.base_samples).append(time.perf_counter() - t0)
                m.down()
    finally:
        m.down()
