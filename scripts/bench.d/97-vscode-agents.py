"""Rows of scripts/bench for Kilo Code CLI, Cline, Roo Code and VS Code Copilot Chat
(issue 34), over scripts/gen_vscode_agents.py's stores: 500 sessions of each (quick:
50), about 100 MB (quick: 10 MB).

  #    scenario (fen-fs side)                        baseline (same run)          target
  V1   first mount (caches deleted) + `ls` + one     cold `cat` of every file of  <= 1.5x time
       `cat` of every index.json, cold               the four stores
  V2   daemon peak RSS (VmHWM) after V1 and one      -                            <= 150 MB
       `cat meta.json` of every session
  V3   a new message in one session of each agent    -                            <= 1 s
       (Kilo: a row added; Cline and Roo Code: the
       session's JSON file rewritten; VS Code: an
       entry appended to a log): until a fresh
       `cat conversation.json` shows it (the worst)

These stores are databases and whole-JSON files: a change is read as the session's
whole dump again (the agents rewrite rows and files whole), so V3 measures one
session's re-read; VS Code's operation log is the exception (only the appended entry
is parsed, then the dump is written again).
"""

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import time

import gen_vscode_agents

IDS = ["V1", "V2", "V3"]


def add_rows(add):
    add("V1", "kilo/cline/roo/vscode: first mount + ls + index.json", "s", "<=", 1.5,
        "fen/base", "cold cat of every file of the four stores")
    add("V2", "kilo/cline/roo/vscode: daemon VmHWM after every meta.json", "MB", "<=", 150,
        "value", "")
    add("V3", "kilo/cline/roo/vscode: new message seen in conv.json", "s", "<=", 1, "value", "")


def stores(B, P):
    """The generated stores under CACHE/source-agents-<key>/, made again when the
    generator or its parameters change."""
    n = 50 if P.get("history_scale") == "quick" else 500
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update((B.ROOT / "scripts" / "gen_vscode_agents.py").read_bytes())
    base = B.CACHE / ("vscode-agents-%s" % h.hexdigest()[:12])
    root = base / "stores"
    B.CACHE.mkdir(parents=True, exist_ok=True)
    for old in B.CACHE.glob("vscode-agents-*"):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    if (root / "manifest.json").exists():
        return root, json.loads((root / "manifest.json").read_text())
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    B.log("generating %d sessions of each of Kilo, Cline, Roo Code (scripts/gen_vscode_agents.py) ..." % n)
    return root, gen_vscode_agents.generate(str(root), n, P["seed"])


def sources(root):
    return ["--source", "kilo=%s" % (root / "kilo"), "--source", "cline=%s" % (root / "cline"),
            "--source", "roo=%s" % (root / "roo"), "--source", "vscode-copilot=%s" % (root / "code")]


def scenario(B, P, R_cheap, R_costly, rows, want):
    v1, v2, v3 = (rows[i] for i in IDS)
    root, man = stores(B, P)
    files = [str(root / rel) for rel in sorted(man["sizes"]) if rel != "manifest.json"]
    B.first_mount_rows(B.WORK / "vscode-agents-store", sources(root), files, v1, v2, R_costly)
    v1.notes.append("%d sessions in %d files, %.0f MB" % (
        4 * man["sessions_per_agent"], len(files), man["total_bytes"] / 1e6))
    if "V3" not in want:
        return
    # V3 on a copy: the cached stores stay as generated.
    copy = B.WORK / "vscode-agents-v3"
    shutil.copytree(root, copy)
    store = B.WORK / "vscode-agents-v3-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=sources(copy))
    try:
        m.up()
        B.ls_and_indexes()
        worst = 0.0
        word = b"planted%d" % int(time.time())
        # Kilo: a message row (and its part) added; Cline and Roo: the file rewritten.
        kilo = sqlite3.connect(str(copy / "kilo/kilo.db"))
        sid = kilo.execute("SELECT id FROM session ORDER BY id LIMIT 1").fetchone()[0]
        now = int(time.time() * 1000)
        kilo.execute("INSERT INTO message VALUES ('msg_zbench', ?, ?, ?, ?)",
                     (sid, now, now, json.dumps({"role": "user", "time": {"created": now}})))
        kilo.execute("INSERT INTO part VALUES ('prt_zbench', 'msg_zbench', ?, ?, ?, ?)",
                     (sid, now, now, json.dumps({"type": "text", "text": word.decode()})))
        kilo.execute("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", (sid,))
        kilo.commit()
        kilo.close()
        targets = [("kilo", sid)]
        cdir = sorted((copy / "cline/sessions").iterdir())[0]
        cfile = cdir / (cdir.name + ".messages.json")
        doc = json.loads(cfile.read_text())
        doc["messages"].append({"id": "zbench", "role": "user", "ts": now,
                                "content": [{"type": "text", "text": word.decode()}]})
        cfile.write_text(json.dumps(doc, indent=2))
        targets.append(("cline", cdir.name))
        rdir = sorted((copy / "roo/tasks").iterdir())[0]
        rfile = rdir / "api_conversation_history.json"
        api = json.loads(rfile.read_text())
        api.append({"role": "user", "ts": now, "content": [{"type": "text", "text": word.decode()}]})
        rfile.write_text(json.dumps(api))
        targets.append(("roo", rdir.name))
        logs = sorted((copy / "code/workspaceStorage").glob("*/chatSessions/*.jsonl"))
        with open(logs[0], "a") as f:
            f.write(json.dumps({"kind": 2, "k": ["requests"], "v": [{
                "requestId": "zbench", "timestamp": now,
                "message": {"text": word.decode(), "parts": []}}]}) + "\n")
        targets.append(("vscode-copilot", logs[0].stem))
        for agent, sid in targets:
            conv = None
            for p in B.meta_files():
                with open(p) as f:
                    v = json.load(f)
                if v.get("agent") == agent and v.get("id") == sid:
                    conv = os.path.join(os.path.dirname(p), "conversation.json")
            took = B.wait_seen(conv, word, 10) if conv else None
            if took is None:
                v3.error = "%s %s: the new message not seen within 10 s" % (agent, sid)
                return
            worst = max(worst, took)
        v3.fen_samples.append(worst)
        v3.notes.append("the worst of Kilo (a row added), Cline and Roo Code (a file rewritten), VS Code (a log entry appended)")
    finally:
        m.down()
