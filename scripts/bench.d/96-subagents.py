"""Rows of scripts/bench for Claude Code's subagents shown as sessions (issue 34): a
Claude Code tree of N sessions (quick: 100, full: 2,000) in 10 project folders, every
session with its own `<uuid>/` folder (`tool-results/`, as Claude Code 2.1 writes),
every other one with `<uuid>/subagents/`: two subagents' transcripts with their
`.meta.json`, and one forked helper run (a side question replaying the session).

  #    scenario (fen-fs side)                        baseline (same run)          target
  C1   first mount (caches deleted) + `ls` + one     cold `cat` of every .jsonl   <= 1.5x time
       `cat` of every index.json, cold               of the tree
  C2   a remount's `ls` + every index.json (the      the same on the tree without <= 1.3x time
       index cache kept: the walk into the           its `<uuid>/` folders
       sessions' folders is what differs), warm
  C3   a subagent's transcript created while         -                            <= 1 s
       mounted: until `ls` of its namespace shows
       it beside its parent
"""

import hashlib
import json
import os
import random
import shutil
import subprocess
import time

IDS = ["C1", "C2", "C3"]


def add_rows(add):
    add("C1", "subagents: first mount + ls + index.json", "s", "<=", 1.5, "fen/base",
        "cold cat of every .jsonl of the tree")
    add("C2", "subagents: remount ls + index.json", "s", "<=", 1.3, "fen/base",
        "the same without the sessions' folders")
    add("C3", "subagents: a new subagent seen by ls", "s", "<=", 1, "value", "")


def uuid4(rnd):
    h = "%032x" % rnd.getrandbits(128)
    return "%s-%s-4%s-8%s-%s" % (h[:8], h[8:12], h[13:16], h[17:20], h[20:32])


def lines(rnd, sid, cwd, turns, agent=None, first=None):
    """A chain of user/assistant lines (sidechain lines of `agent` when given)."""
    out = []
    parent = None
    for t in range(turns):
        for role in ("user", "assistant"):
            uid = uuid4(rnd)
            text = first if (first and t == 0 and role == "user") else " ".join(
                rnd.choice(("parse", "index", "mount", "reader", "cache", "branch", "query"))
                for _ in range(rnd.randint(20, 200)))
            msg = {"role": role, "content": text} if role == "user" else {
                "id": "msg_%s" % uid[:8], "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 10, "output_tokens": 5}}
            line = {"parentUuid": parent, "isSidechain": agent is not None, "type": role,
                    "message": msg, "uuid": uid, "cwd": cwd, "sessionId": sid,
                    "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (t % 60, len(out) % 60),
                    "version": "2.1.330"}
            if agent:
                line["agentId"] = agent
            out.append(json.dumps(line))
            parent = uid
    return "\n".join(out) + "\n"


def generate(out, n, seed, folders=True):
    rnd = random.Random(seed)
    files = []
    for i in range(n):
        cwd = "/bench/sub-project-%d" % (i % 10)
        proj = os.path.join(out, "projects", cwd.replace("/", "-"))
        os.makedirs(proj, exist_ok=True)
        sid = uuid4(rnd)
        path = os.path.join(proj, sid + ".jsonl")
        with open(path, "w") as f:
            f.write(lines(rnd, sid, cwd, rnd.randint(3, 30)))
        files.append(path)
        if not folders:
            continue
        own = os.path.join(proj, sid)
        os.makedirs(os.path.join(own, "tool-results"))
        with open(os.path.join(own, "tool-results", "toolu_1.txt"), "w") as f:
            f.write("output\n")
        if i % 2:
            continue
        subs = os.path.join(own, "subagents")
        os.makedirs(subs)
        for k in range(2):
            aid = "a%016x" % rnd.getrandbits(64)
            p = os.path.join(subs, "agent-%s.jsonl" % aid)
            with open(p, "w") as f:
                f.write(lines(rnd, sid, cwd, rnd.randint(2, 20), agent=aid))
            with open(os.path.join(subs, "agent-%s.meta.json" % aid), "w") as f:
                json.dump({"agentType": "general-purpose", "description": "step %d" % k}, f)
            files.append(p)
        helper = "aside_question-%016x" % rnd.getrandbits(64)
        p = os.path.join(subs, "agent-%s.jsonl" % helper)
        with open(p, "w") as f:
            f.write(lines(rnd, sid, cwd, 5, agent=helper))
        files.append(p)
    return files


def trees(B, P):
    """The two trees under CACHE/subagents-<key>/ (with and without the sessions'
    folders), made again when this file or the parameters change."""
    n = 100 if P.get("history_scale") == "quick" else 2000
    h = hashlib.sha256()
    h.update(json.dumps([n, P["seed"]]).encode())
    h.update(open(__file__, "rb").read())
    base = B.CACHE / ("subagents-%s" % h.hexdigest()[:12])
    B.CACHE.mkdir(parents=True, exist_ok=True)
    for old in B.CACHE.glob("subagents-*"):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    done = base / "files.json"
    if done.exists():
        return base, json.loads(done.read_text())
    if base.exists():
        shutil.rmtree(base)
    B.log("generating a Claude Code tree of %d sessions with subagents ..." % n)
    files = generate(str(base / "with"), n, P["seed"])
    generate(str(base / "without"), n, P["seed"], folders=False)
    done.write_text(json.dumps(files))
    return base, files


def timed_listing(B, m):
    t0 = time.perf_counter()
    m.up()
    B.ls_and_indexes()
    return time.perf_counter() - t0


def scenario(B, P, R_cheap, R_costly, rows, want):
    c1, c2, c3 = (rows[i] for i in IDS)
    base, files = trees(B, P)
    store = B.WORK / "subagents-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=["--source", "claude=%s" % (base / "with")])
    plain_store = B.WORK / "subagents-plain-store"
    plain_store.mkdir(mode=0o700)
    plain = B.Mount(plain_store, "no", extra=["--source", "claude=%s" % (base / "without")])
    try:
        for _ in range(R_costly):
            B.clean_store_caches(store)
            B.drop_caches()
            c1.base_samples.append(B.run_timed(["cat"] + files))
            B.drop_caches()
            c1.fen_samples.append(timed_listing(B, m))
            m.down()
        c1.notes.append("%d files (sessions, subagents, helper runs)" % len(files))
        # C2: both index caches made, then remounts timed warm.
        for mount in (m, plain):
            mount.up()
            B.ls_and_indexes()
            mount.down()
        for _ in range(R_costly):
            c2.fen_samples.append(timed_listing(B, m))
            m.down()
            c2.base_samples.append(timed_listing(B, plain))
            plain.down()
    finally:
        m.down()
        plain.down()
    if "C3" not in want:
        return
    copy = B.WORK / "subagents-c3"
    shutil.copytree(base / "with", copy)
    store = B.WORK / "subagents-c3-store"
    store.mkdir(mode=0o700)
    m = B.Mount(store, "no", extra=["--source", "claude=%s" % copy])
    try:
        m.up()
        B.ls_and_indexes()
        proj = copy / "projects" / "-bench-sub-project-0"
        parent = sorted(p for p in proj.iterdir() if p.suffix == ".jsonl")[0]
        sid = parent.stem
        subs = proj / sid / "subagents"
        subs.mkdir(parents=True, exist_ok=True)
        aid = "a%016x" % int(time.time() * 1000)
        ns = B.MNT / "bench-sub-project-0"
        rnd = random.Random(1)
        t0 = time.perf_counter()
        (subs / ("agent-%s.jsonl" % aid)).write_text(
            lines(rnd, sid, "/bench/sub-project-0", 2, agent=aid))
        seen = None
        while time.perf_counter() - t0 < 10:
            r = subprocess.run(["ls", str(ns)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if (".agent-%s" % aid).encode() in r.stdout:
                seen = time.perf_counter() - t0
                break
            time.sleep(0.01)
        if seen is None:
            c3.error = "the new subagent %s not in ls %s within 10 s" % (aid, ns)
            return
        c3.fen_samples.append(seen)
    finally:
        m.down()
