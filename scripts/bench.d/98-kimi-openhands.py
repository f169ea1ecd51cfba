"""Rows of scripts/bench for Kimi CLI and OpenHands CLI (issue 34), over
scripts/gen_kimi_openhands.py's sessions (full: 500 of each; quick: 20 of each).

  #    scenario (fen-fs side)                        baseline (same run)          target
  KO1  first mount (caches deleted) + `ls` + every   cold `cat` of every file     <= 1.5x time
       index.json, page cache dropped
  KO2  daemon peak RSS (VmHWM) after KO1's mount     -                            <= 150 MB
  KO3  `cat conversation.json` of a Kimi session     the warm read just before    <= 1.5x time
       right after one message is appended to its
       context.jsonl (its new bytes only are read)

OpenHands' conversations are folders of one file per event: a change is read as the
conversation's whole dump again (docs/agents.md), so it has no append row.
"""

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import gen_kimi_openhands  # scripts/ (on the path the harness sets)

IDS = ["KO1", "KO2", "KO3"]


def add_rows(add):
    add("KO1", "Kimi + OpenHands: first mount + ls + index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every file")
    add("KO2", "Kimi + OpenHands: daemon VmHWM after the first index", "MB", "<=", 150, "value", "")
    add("KO3", "Kimi: conversation.json after an append", "s", "<=", 1.5, "fen/base",
        "the warm read just before the append")


def data(B, P):
    """The generated sessions under CACHE/kimi-openhands-<n>-<key>/ (made again when
    the generator changes)."""
    n = 500 if P["history_scale"] == "full" else 20
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update((B.ROOT / "scripts" / "gen_kimi_openhands.py").read_bytes())
    base = B.CACHE / ("kimi-openhands-%d-%s" % (n, h.hexdigest()[:12]))
    root = base / "data"
    for old in B.CACHE.glob("kimi-openhands-%d-*" % n):
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
    B.log("generating Kimi's and OpenHands' sessions (scripts/gen_kimi_openhands.py) ...")
    man = gen_kimi_openhands.generate(str(root), n, P["seed"])
    return root, man


def scenario(B, P, R_cheap, R_costly, rows, want):
    ko1, ko2, ko3 = (rows[i] for i in IDS)
    root, man = data(B, P)
    files = [str(root / rel) for rel in sorted(man["sizes"])]
    sources = gen_kimi_openhands.sources(str(root))
    store = B.WORK / "kimi-openhands-store"
    store.mkdir(mode=0o700, exist_ok=True)
    m = B.Mount(store, "no", extra=sources)
    # OpenHands keeps a file per event: more than one command line holds.
    listing = B.WORK / "kimi-openhands-files.txt"
    listing.write_text("\n".join(files) + "\n")
    cat_all = ["xargs", "-a", str(listing), "-d", "\n", "cat"]
    cold = True
    try:
        for i in range(R_costly):
            cold = B.drop_caches() and cold
            ko1.base_samples.append(B.run_timed(cat_all))
            B.clean_store_caches(store)
            cold = B.drop_caches() and cold
            t0 = time.perf_counter()
            m.up()
            B.ls_and_indexes()
            ko1.fen_samples.append(time.perf_counter() - t0)
            if i == 0:
                st = m.status()
                ko2.fen_samples.append(B.kb_field(st, "VmHWM") / 1024)
            if i + 1 < R_costly:
                m.down()
        ko1.notes.append("%d files, %.0f MB (%d sessions of each agent); %s" % (
            len(files), man["total_bytes"] / 1e6, man["sessions"],
            "page cache dropped before each" if cold else "WARM (drop_caches refused)"))
        if "KO3" in want:
            ctx = sorted(p for p in files if p.endswith("/context.jsonl"))[0]
            sid = os.path.basename(os.path.dirname(ctx))
            kimi_json = json.loads((root / "kimi" / "kimi.json").read_text())
            folder_md5 = os.path.basename(os.path.dirname(os.path.dirname(ctx)))
            cwd = next(w["path"] for w in kimi_json["work_dirs"]
                       if hashlib.md5(w["path"].encode()).hexdigest() == folder_md5)
            ns = B.MNT / cwd.strip("/").replace("/", "-")
            folder = None
            for e in os.scandir(ns):
                if e.is_dir() and e.name.endswith(sid):
                    folder = Path(e.path)
            if folder is None:
                raise B.BenchError("the Kimi session %s is not in %s" % (sid, ns))
            conv = str(folder / "conversation.json")
            for _ in range(R_costly):
                B.run_timed(["cat", conv])
                ko3.base_samples.append(B.run_timed(["cat", conv]))
                line = json.dumps({"role": "user", "content": "appended %d" % time.time_ns()},
                                  separators=(",", ":")) + "\n"
                with open(ctx, "a") as f:
                    f.write(line)
                ko3.fen_samples.append(B.run_timed(["cat", conv]))
            ko3.notes.append("one user message appended to a Kimi context.jsonl of %d bytes" %
                             os.path.getsize(ctx))
    finally:
        m.down()
        # The appended messages would change the cached data: made again next time.
        man_path = root / "manifest.json"
        if "KO3" in want and man_path.exists():
            man_path.unlink()
