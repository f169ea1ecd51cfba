"""Rows of scripts/bench for the agents issue 34 added (Qwen Code, Aider, Continue's cn,
Factory Droid, Crush), over scripts/gen_agents_run.py's sessions (full: 500 of each
agent, ~170 MB; quick: 20 of each).

  #    scenario (fen-fs side)                        baseline (same run)          target
  AR1  first mount (caches deleted) + `ls` + every   cold `cat` of every session  <= 1.5x time
       index.json, page cache dropped                file
  AR2  daemon peak RSS (VmHWM) after AR1's mount     -                            <= 150 MB
  AR3  `cat conversation.json` of a Qwen Code        the warm read just before    <= 1.5x time
       session right after it appends one record
       (its new bytes only are read)
"""

import json
import os
import shutil
import time
from pathlib import Path

import gen_agents_run  # scripts/ (on the path the harness sets)

IDS = ["AR1", "AR2", "AR3"]


def add_rows(add):
    add("AR1", "issue-34 agents: first mount + ls + index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every session file")
    add("AR2", "issue-34 agents: daemon VmHWM after the first index", "MB", "<=", 150, "value", "")
    add("AR3", "Qwen Code: conversation.json after an append", "s", "<=", 1.5, "fen/base",
        "the warm read just before the append")


def data(B, P):
    """The generated sessions under CACHE/agents-run-<n>-<key>/ (made again when the
    generator changes)."""
    import hashlib
    n = 500 if P["history_scale"] == "full" else 20
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update((B.ROOT / "scripts" / "gen_agents_run.py").read_bytes())
    base = B.CACHE / ("agents-run-%d-%s" % (n, h.hexdigest()[:12]))
    root = base / "data"
    for old in B.CACHE.glob("agents-run-%d-*" % n):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    man_path = root / "manifest.json"
    if man_path.exists():
        man = json.loads(man_path.read_text())
        if all((root / rel).is_file() and (root / rel).stat().st_size == size
               for rel, size in man["sizes"].items()):
            return root, man
    if base.exists():
        shutil.rmtree(base)
    root.mkdir(parents=True)
    B.log("generating the issue-34 agents' sessions (scripts/gen_agents_run.py) ...")
    man = gen_agents_run.generate(str(root), n, P["seed"])
    return root, man


def scenario(B, P, R_cheap, R_costly, rows, want):
    ar1, ar2, ar3 = (rows[i] for i in IDS)
    root, man = data(B, P)
    files = [str(root / rel) for rel in sorted(man["sizes"])]
    sources = gen_agents_run.sources(str(root))
    store = B.WORK / "agents-run-store"
    store.mkdir(mode=0o700, exist_ok=True)
    m = B.Mount(store, "no", extra=sources)
    cold = True
    try:
        for i in range(R_costly):
            cold = B.drop_caches() and cold
            ar1.base_samples.append(B.run_timed(["cat"] + files))
            B.clean_store_caches(store)
            cold = B.drop_caches() and cold
            t0 = time.perf_counter()
            m.up()
            B.ls_and_indexes()
            ar1.fen_samples.append(time.perf_counter() - t0)
            if i == 0:
                st = m.status()
                ar2.fen_samples.append(B.kb_field(st, "VmHWM") / 1024)
            if i + 1 < R_costly:
                m.down()
        ar1.notes.append("%d files, %.0f MB (%d sessions of each agent); %s" % (
            len(files), man["total_bytes"] / 1e6, man["sessions"],
            "page cache dropped before each" if cold else "WARM (drop_caches refused)"))
        if "AR3" in want:
            qwen = sorted(p for p in files if "/qwen/" in p)[0]
            first = json.loads(open(qwen).readline())
            sid, cwd = first["sessionId"], first["cwd"]
            ns = B.MNT / cwd.strip("/").replace("/", "-")
            folder = None
            for e in os.scandir(ns):
                if e.is_dir() and e.name.endswith(sid):
                    folder = Path(e.path)
            if folder is None:
                raise B.BenchError("the Qwen session %s is not in %s" % (sid, ns))
            conv = str(folder / "conversation.json")
            last = json.loads(open(qwen).read().splitlines()[-1])["uuid"]
            for _ in range(R_costly):
                B.run_timed(["cat", conv])
                ar3.base_samples.append(B.run_timed(["cat", conv]))
                uid = "bench-%d" % time.time_ns()
                line = json.dumps({"uuid": uid, "parentUuid": last, "sessionId": sid,
                                   "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                                   "type": "user", "cwd": cwd,
                                   "message": {"role": "user", "parts": [{"text": "appended"}]}},
                                  separators=(",", ":")) + "\n"
                with open(qwen, "a") as f:
                    f.write(line)
                last = uid
                ar3.fen_samples.append(B.run_timed(["cat", conv]))
            ar3.notes.append("one user record appended to a Qwen Code session of %d bytes" %
                             os.path.getsize(qwen))
    finally:
        m.down()
        # The appended records would change the cached data: made again next time.
        man_path = root / "manifest.json"
        if "AR3" in want and man_path.exists():
            man_path.unlink()
