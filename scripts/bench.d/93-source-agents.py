"""Rows of scripts/bench for the agents read from their public source only (issue 34:
Goose, Amp, Zed, Warp), over scripts/gen_source_agents.py's stores: 500 sessions of
each (quick: 50), about 75 MB (quick: 7 MB).

  #    scenario (fen-fs side)                        baseline (same run)          target
  A1   first mount (caches deleted) + `ls` + one     cold `cat` of every file of  <= 1.5x time
       `cat` of every index.json, cold               the four stores
  A2   daemon peak RSS (VmHWM) after A1 and one      -                            <= 150 MB
       `cat meta.json` of every session
  A3   a new message in one session of each agent    -                            <= 1 s
       (a row added, a thread file rewritten):
       until a fresh `cat conversation.json` shows
       it (the worst of the four)

These stores are databases and whole-JSON files: a change is read as the session's
whole dump again (their agents rewrite rows and files whole), so A3 measures one
session's re-read, not an append's bytes.
"""

import hashlib
import json
import os
import shutil
import sqlite3
import time

import gen_source_agents

IDS = ["A1", "A2", "A3"]


def add_rows(add):
    add("A1", "source agents: first mount + ls + index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every file of the four stores")
    add("A2", "source agents: daemon VmHWM after every meta.json", "MB", "<=", 150, "value", "")
    add("A3", "source agents: new message seen in conv.json", "s", "<=", 1, "value", "")


def stores(B, P):
    """The generated stores under CACHE/source-agents-<key>/, made again when the
    generator or its parameters change."""
    n = 50 if P.get("history_scale") == "quick" else 500
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update((B.ROOT / "scripts" / "gen_source_agents.py").read_bytes())
    base = B.CACHE / ("source-agents-%s" % h.hexdigest()[:12])
    root = base / "stores"
    B.CACHE.mkdir(parents=True, exist_ok=True)
    for old in B.CACHE.glob("source-agents-*"):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    if (root / "manifest.json").exists():
        return root, json.loads((root / "manifest.json").read_text())
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    B.log("generating %d sessions of each source agent (scripts/gen_source_agents.py) ..." % n)
    return root, gen_source_agents.generate(str(root), n, P["seed"])


def sources(root):
    return ["--source", "goose=%s" % (root / "goose"), "--source", "amp=%s" % (root / "amp"),
            "--source", "zed=%s" % (root / "zed"), "--source", "warp=%s" % (root / "warp-terminal")]


def scenario(B, P, R_cheap, R_costly, rows, want):
    a1, a2, a3 = (rows[i] for i in IDS)
    root, man = stores(B, P)
    files = [str(root / rel) for rel in sorted(man["sizes"]) if rel != "manifest.json"]
    B.first_mount_rows(B.WORK / "source-agents-store", sources(root), files, a1, a2, R_costly)
    a1.notes.append("%d sessions in %d files, %.0f MB" % (
        4 * man["sessions_per_agent"], len(files), man["total_bytes"] / 1e6))
    if "A3" not in want:
        return
    # A3 on a copy: the cached stores stay as generated.
    copy = B.WORK / "source-agents-a3"
    shutil.copytree(root, copy)
    store = B.WORK / "source-agents-a3-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=sources(copy))
    try:
        m.up()
        B.ls_and_indexes()
        worst = 0.0
        word = b"planted%d" % int(time.time())
        # Goose: a message row added; Amp: the thread file rewritten with one more.
        goose = sqlite3.connect(str(copy / "goose/sessions/sessions.db"))
        sid = goose.execute("SELECT id FROM sessions ORDER BY id LIMIT 1").fetchone()[0]
        goose.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json)"
                      " VALUES ('bench', ?, 'user', ?, strftime('%s','now'), '{\"userVisible\":true,\"agentVisible\":true}')",
                      (sid, json.dumps([{"type": "text", "text": word.decode()}])))
        goose.commit()
        goose.close()
        targets = [("goose", sid)]
        amp_file = sorted((copy / "amp/threads").iterdir())[0]
        doc = json.loads(amp_file.read_text())
        doc["messages"].append({"role": "user", "messageId": len(doc["messages"]),
                                "content": [{"type": "text", "text": word.decode()}]})
        amp_file.write_text(json.dumps(doc, indent=2))
        targets.append(("amp", doc["id"]))
        for agent, sid in targets:
            conv = None
            for p in B.meta_files():
                with open(p) as f:
                    v = json.load(f)
                if v.get("agent") == agent and v.get("id") == sid:
                    conv = os.path.join(os.path.dirname(p), "conversation.json")
            took = B.wait_seen(conv, word, 10) if conv else None
            if took is None:
                a3.error = "%s %s: the new message not seen within 10 s" % (agent, sid)
                return
            worst = max(worst, took)
        a3.fen_samples.append(worst)
        a3.notes.append("the worst of Goose (a row added) and Amp (the thread file rewritten)")
    finally:
        m.down()
