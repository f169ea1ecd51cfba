"""Export rows of scripts/bench (issue 33): `fen-fs export` of row 10's Claude Code
session (full: 100 MB) in each format, its memory, and the redaction's false positives
over the heavy user's history of rows 12-18 (scripts/gen_history.py: full ~2.5 GB; no
secret is planted there, so every redaction is a false one).

  #    scenario (fen-fs side)                        baseline (same run)          target
  E1   `fen-fs export ID -o FILE` (html) of the      `fen-fs show ID --view md`   <= 2x time
       100 MB Claude Code session, page cache        + a cold `cat` of its file
       dropped
  E1m  the same, --format md                         same                         <= 2x time
  E1j  the same, --format json                       same                         <= 2x time
  E2   peak RSS of E1's export process               -                            <= 150 MB
  E3   redactions in `fen-fs export --format md` of  -                            <= 0
       every session of the history (none planted)

E3 exports each session in its own process, as many at once as there are cores; its
note gives the time and the bytes scanned.
"""

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

IDS = ["E1", "E1m", "E1j", "E2", "E3"]


def add_rows(add):
    base = "fen-fs show --view md + a cold cat of the session file"
    add("E1", "export html, big Claude session, cold", "s", "<=", 2, "fen/base", base)
    add("E1m", "export md, big Claude session, cold", "s", "<=", 2, "fen/base", base)
    add("E1j", "export json, big Claude session, cold", "s", "<=", 2, "fen/base", base)
    add("E2", "export html peak RSS, big Claude session", "MB", "<=", 150, "value", "")
    add("E3", "history: redactions where none was planted", "count", "<=", 0, "value", "")


def peak_rss_run(argv):
    """Runs argv (output to /dev/null); its wall time and peak RSS in MB."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(argv), p.returncode, err[-300:]))
    return dt, usage.ru_maxrss / 1024.0


def session_of(B, store, sources):
    out = subprocess.run([str(B.BIN), "list", "--all", "--json", "--no-detect", "--store", str(store)]
                         + sources, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    return [(s["dir"], s["agent"]) for s in json.loads(out)]


def scenario(B, P, R_cheap, R_costly, rows, want):
    if any(i in want for i in ("E1", "E1m", "E1j", "E2")):
        big(B, P, R_costly, rows, want)
    if "E3" in want:
        history(B, P, rows)


def big(B, P, R, rows, want):
    cwd = "/bench/claude-project"
    root, _ = B.cached_data("claude", {"bytes": P["claude_bytes"], "seed": P["seed"], "mode": P["mode"]},
                            lambda out: B.write_claude_session(out, cwd, P["claude_bytes"], P["seed"]))
    raw = next((root / "projects").glob("*/*.jsonl"))
    store = B.WORK / "export-store"
    store.mkdir(mode=0o700)
    sources = ["--source", "claude=%s" % root]
    # The first index is built (and kept in the store) before anything is timed.
    (dir_, _), = session_of(B, store, sources)
    common = ["--no-detect", "--store", str(store)] + sources
    out = B.WORK / "export-out"
    cold = True
    for _ in range(R):
        cold = B.drop_caches() and cold
        t_cat = B.cat(raw)
        t_show = B.run_timed([str(B.BIN), "show", dir_, "--view", "md"] + common)
        base = t_cat + t_show
        for rid, fmt in (("E1", "html"), ("E1m", "md"), ("E1j", "json")):
            if rid not in want and not (rid == "E1" and "E2" in want):
                continue
            cold = B.drop_caches() and cold
            dt, rss = peak_rss_run([str(B.BIN), "export", dir_, "--format", fmt, "-o", str(out)] + common)
            rows[rid].base_samples.append(base)
            rows[rid].fen_samples.append(dt)
            if rid == "E1":
                rows["E2"].fen_samples.append(rss)
    size = raw.stat().st_size
    for rid in ("E1", "E1m", "E1j"):
        rows[rid].notes.append("%.0f MB Claude Code transcript (row 10's); %s; the baseline's show runs "
                               "right after its cold cat" % (size / 1e6, "page cache dropped before each"
                                                             if cold else "WARM (drop_caches refused)"))
    if out.exists():
        rows["E1"].notes.append("html export: %.0f MB" % (out.stat().st_size / 1e6))
    rows["E2"].notes.append("ru_maxrss of the export process (wait4), %.0f MB session" % (size / 1e6))


def history(B, P, rows):
    e3 = rows["E3"]
    root, man = B.history_data(P)
    sources = B.history_sources(root)
    store = B.WORK / "export-history-store"
    store.mkdir(mode=0o700)
    sessions = session_of(B, store, sources)
    common = ["--no-detect", "--store", str(store)] + sources

    def one(s):
        r = subprocess.run([str(B.BIN), "export", s[0], "--format", "md"] + common,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        said = r.stderr.decode(errors="replace").strip().splitlines()
        last = said[-1] if said else ""
        if r.returncode != 0 or not last.startswith("fen-fs: redacted "):
            return s, None, last
        n = int(last[len("fen-fs: redacted "):].split(":")[0])
        return s, n, last

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, sessions))
    took = time.perf_counter() - t0
    failed = [(s, why) for s, n, why in results if n is None]
    found = [(s, n, why) for s, n, why in results if n]
    e3.fen_samples.append(sum(n for _, n, _ in found))
    for (dir_, agent), why in failed[:5]:
        e3.checks.append("export of %s (%s) failed: %s" % (dir_, agent, why))
    for (dir_, agent), n, why in found[:5]:
        e3.notes.append("%s (%s): %s" % (dir_, agent, why))
    e3.notes.append("%d sessions, %.0f MB of session files, exported in %s (%d at once, a process "
                    "each); every text scanned, thinking and tool input and output included" % (
                        len(sessions), man["total_bytes"] / 1e6, B.fmt_time(took), os.cpu_count() or 2))
