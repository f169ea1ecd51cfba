#!/usr/bin/env python3
"""Generate the stores of the editors' agents fen-fs reads from their public readers
only (Cursor IDE), N sessions each, in each editor's own layout, for benchmarks.

usage: gen_ide_agents.py OUT [--sessions N] [--seed S]

Writes (point fen-fs at it with `--source cursor-ide=OUT/Cursor/User`):

  OUT/Cursor/User/globalStorage/state.vscdb   VS Code's ItemTable and Cursor's
                                              cursorDiskKV (tests/fixtures/cursor-ide/
                                              schema.sql), WAL mode: one composerData
                                              row per composer, one bubbleId row per
                                              message, Cursor 3's composer.composerHeaders
  OUT/Cursor/User/workspaceStorage/<hash>/    workspace.json and an empty state.vscdb
                                              per project folder
  OUT/manifest.json                           files, bytes, sessions per agent

Composers have 4 to 200 bubbles (log-normal): a person's prompt, the model's tool
calls (toolFormerData with its result) and answer per turn, with tokenCount on the
answer. Deterministic: the same N and seed give the same rows. Stdlib only.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import random
import sqlite3
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("parse token buffer index reader writer mount session cache query schema "
         "thread commit branch merge result error retry stream batch lock file path").split()
T0 = 1_786_000_000_000


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def turns(rng):
    """(prompt, [(call name, args, output)], answer) per turn."""
    n = max(1, min(60, int(math.exp(rng.gauss(1.6, 0.9)))))
    out = []
    for _ in range(n):
        calls = [("run_terminal_cmd", {"command": "grep -rn %s src" % rng.choice(WORDS)},
                  text(rng, rng.randint(20, 600))) for _ in range(rng.randint(0, 3))]
        out.append((text(rng, rng.randint(5, 60)), calls, text(rng, rng.randint(20, 300))))
    return out


def kv(path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    with open(os.path.join(ROOT, "tests", "fixtures", "cursor-ide", "schema.sql")) as f:
        db.executescript(f.read())
    return db


def gen_cursor(out, n, rng):
    user = os.path.join(out, "Cursor", "User")
    gdir = os.path.join(user, "globalStorage")
    os.makedirs(gdir)
    projects = {}
    for p in range(41):
        folder = "/home/u/proj-%d" % p
        h = hashlib.md5(folder.encode()).hexdigest()
        wdir = os.path.join(user, "workspaceStorage", h)
        os.makedirs(wdir)
        with open(os.path.join(wdir, "workspace.json"), "w") as f:
            json.dump({"folder": "file://" + folder}, f)
        kv(os.path.join(wdir, "state.vscdb")).close()
        projects[p] = (folder, h)
    db = kv(os.path.join(gdir, "state.vscdb"))
    heads = []
    for i in range(n):
        cid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        folder, wsid = projects[rng.randint(0, 40)]
        t = T0 + i * 600_000
        created = t
        headers = []

        def bubble(b):
            headers.append({"bubbleId": b["bubbleId"], "type": b["type"]})
            db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                       ("bubbleId:%s:%s" % (cid, b["bubbleId"]), json.dumps(b, separators=(",", ":"))))

        k = 0
        for prompt, calls, answer in turns(rng):
            k += 1
            t += 1000
            bubble({"_v": 3, "type": 1, "bubbleId": "%s-u%d" % (cid[:8], k), "text": prompt,
                    "createdAt": iso(t), "tokenCount": {"inputTokens": 0, "outputTokens": 0}})
            for j, (name, args, output) in enumerate(calls):
                t += 1000
                bubble({"_v": 3, "type": 2, "bubbleId": "%s-t%d-%d" % (cid[:8], k, j), "text": "",
                        "createdAt": iso(t), "capabilityType": 15,
                        "toolFormerData": {"tool": 15, "toolCallId": "toolu_%d_%d_%d" % (i, k, j), "name": name,
                                           "status": "completed", "rawArgs": json.dumps(args),
                                           "result": json.dumps({"output": output, "exitCodeV2": 0})},
                        "tokenCount": {"inputTokens": 0, "outputTokens": 0}})
            t += 2000
            bubble({"_v": 3, "type": 2, "bubbleId": "%s-a%d" % (cid[:8], k), "text": answer,
                    "createdAt": iso(t), "tokenCount": {"inputTokens": 2000 + k * 50, "outputTokens": 80}})
        name = text(rng, 4)
        composer = {"_v": 10, "composerId": cid, "name": name, "text": "", "richText": "",
                    "fullConversationHeadersOnly": headers, "conversationMap": {}, "status": "completed",
                    "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
                    "unifiedMode": "agent", "createdAt": created, "lastUpdatedAt": t}
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                   ("composerData:" + cid, json.dumps(composer, separators=(",", ":"))))
        heads.append({"type": "head", "composerId": cid, "name": name, "createdAt": created,
                      "lastUpdatedAt": t, "unifiedMode": "agent", "isArchived": False,
                      "workspaceIdentifier": {"id": wsid, "uri": {"$mid": 1, "fsPath": folder,
                                                                  "external": "file://" + folder,
                                                                  "path": folder, "scheme": "file"}}})
    db.execute("INSERT INTO ItemTable VALUES (?, ?)",
               ("composer.composerHeaders", json.dumps({"allComposers": heads})))
    db.commit()
    db.close()


def generate(out, n, seed):
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    gen_cursor(out, n, rng)
    sizes = {}
    for d, _, names in os.walk(out):
        for name in names:
            p = os.path.join(d, name)
            sizes[os.path.relpath(p, out)] = os.path.getsize(p)
    man = {"sessions_per_agent": n, "sizes": sizes, "total_bytes": sum(sizes.values())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1, sort_keys=True)
    return man


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if os.path.exists(a.out) and os.listdir(a.out):
        sys.exit("%s is not empty" % a.out)
    man = generate(a.out, a.sessions, a.seed)
    print("%d sessions, %.1f MB" % (man["sessions_per_agent"], man["total_bytes"] / 1e6))


if __name__ == "__main__":
    main()
