"""Rows of scripts/bench for the editors' agents read from their public readers only
(issue 34: Cursor IDE), over scripts/gen_ide_agents.py's store: 500 composers (quick:
50), about 26 MB (quick: 3 MB) in one `state.vscdb`.

  #    scenario (fen-fs side)                        baseline (same run)          target
  I1   first mount (caches deleted) + `ls` + one     cold `cat` of every file of  <= 1.5x time
       `cat` of every index.json, cold               the store
  I2   daemon peak RSS (VmHWM) after I1 and one      -                            <= 150 MB
       `cat meta.json` of every session
  I3   a new message in one composer (a bubble row   -                            <= 1 s
       added and the composer's header list
       rewritten, as Cursor writes them): until a
       fresh `cat conversation.json` shows it

The store is one database whose sessions are rows: a change is read as the composer's
whole dump again (Cursor rewrites its composer row), found from the keys' index
without reading any other composer, so I3 measures one composer's re-read.
"""

import hashlib
import json
import os
import shutil
import sqlite3
import time

import gen_ide_agents

IDS = ["I1", "I2", "I3"]


def add_rows(add):
    add("I1", "editor agents: first mount + ls + index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every file of the store")
    add("I2", "editor agents: daemon VmHWM after every meta.json", "MB", "<=", 150, "value", "")
    add("I3", "editor agents: new message seen in conv.json", "s", "<=", 1, "value", "")


def stores(B, P):
    """The generated store under CACHE/ide-agents-<key>/, made again when the generator
    or its parameters change."""
    n = 50 if P.get("history_scale") == "quick" else 500
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update((B.ROOT / "scripts" / "gen_ide_agents.py").read_bytes())
    base = B.CACHE / ("ide-agents-%s" % h.hexdigest()[:12])
    root = base / "stores"
    B.CACHE.mkdir(parents=True, exist_ok=True)
    for old in B.CACHE.glob("ide-agents-*"):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    if (root / "manifest.json").exists():
        return root, json.loads((root / "manifest.json").read_text())
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    B.log("generating %d composers of Cursor (scripts/gen_ide_agents.py) ..." % n)
    return root, gen_ide_agents.generate(str(root), n, P["seed"])


def sources(root):
    return ["--source", "cursor-ide=%s" % (root / "Cursor" / "User")]


def scenario(B, P, R_cheap, R_costly, rows, want):
    i1, i2, i3 = (rows[i] for i in IDS)
    root, man = stores(B, P)
    files = [str(root / rel) for rel in sorted(man["sizes"]) if rel != "manifest.json"]
    B.first_mount_rows(B.WORK / "ide-agents-store", sources(root), files, i1, i2, R_costly)
    i1.notes.append("%d composers in one database, %.0f MB" % (
        man["sessions_per_agent"], man["total_bytes"] / 1e6))
    if "I3" not in want:
        return
    # I3 on a copy: the cached store stays as generated.
    copy = B.WORK / "ide-agents-i3"
    shutil.copytree(root, copy)
    store = B.WORK / "ide-agents-i3-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=sources(copy))
    try:
        m.up()
        B.ls_and_indexes()
        word = b"planted%d" % int(time.time())
        db = sqlite3.connect(str(copy / "Cursor/User/globalStorage/state.vscdb"))
        db.execute("PRAGMA journal_mode = WAL")
        key, value = db.execute(
            "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%' ORDER BY key LIMIT 1").fetchone()
        cid = key.split(":", 1)[1]
        composer = json.loads(value)
        bid = "bench-%d" % int(time.time())
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                   ("bubbleId:%s:%s" % (cid, bid),
                    json.dumps({"_v": 3, "type": 1, "bubbleId": bid, "text": word.decode()})))
        composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": 1})
        composer["lastUpdatedAt"] = int(time.time() * 1000)
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (key, json.dumps(composer)))
        db.commit()
        db.close()
        conv = None
        for p in B.meta_files():
            with open(p) as f:
                v = json.load(f)
            if v.get("agent") == "cursor-ide" and v.get("id") == cid:
                conv = os.path.join(os.path.dirname(p), "conversation.json")
        took = B.wait_seen(conv, word, 10) if conv else None
        if took is None:
            i3.error = "cursor-ide %s: the new message not seen within 10 s" % cid
            return
        i3.fen_samples.append(took)
        i3.notes.append("a bubble row added and the composer row rewritten")
    finally:
        m.down()
