#!/usr/bin/env python3
"""Generate sessions of the agents issue 34 added (Qwen Code, Aider, Continue's cn,
Factory Droid, Crush), each in its agent's own format, for the benchmark rows of
scripts/bench.d/91-agents-run.py.

usage: gen_agents_run.py OUT [--sessions N] [--seed S]

Writes under OUT (point fen-fs at them with the --source options gen() returns):

  OUT/qwen/projects/<cwd slug>/chats/<uuid>.jsonl      Qwen Code 0.24.4 records
  OUT/aider/<project>/.aider.chat.history.md           Aider 0.86.2, 10 runs a file
  OUT/continue/sessions/<uuid>.json + sessions.json    cn 1.5.47 (pretty-printed JSON)
  OUT/factory/sessions/<cwd slug>/<uuid>.jsonl         Droid 0.225.2 (+ .settings.json)
  OUT/crush/<project>/.crush/crush.db                  Crush's SQLite, 10 sessions a project
  OUT/manifest.json                                    files and sizes

N sessions of each (Aider: N runs, ten per project file; Crush: ten per database), each of 10 to 40 turns with
a tool call in most, shaped as the files the agents wrote in tests/fixtures/.
Deterministic for a seed; stdlib only.
"""

import argparse
import json
import os
import random
import sqlite3
import uuid

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega function return struct impl trait "
         "module import export class method value error result option vector string").split()


def text(rnd, lo, hi):
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(lo, hi)))


def uid(rnd):
    return str(uuid.UUID(int=rnd.getrandbits(128), version=4))


def iso(ms):
    s, ms = divmod(ms, 1000)
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%03dZ" % ms


def slug(cwd):
    return "".join(c if c.isalnum() else "-" for c in cwd)


def write_qwen(out, rnd, i, t0):
    sid = uid(rnd)
    cwd = "/home/u/proj%d" % (i % 40)
    path = os.path.join(out, "qwen/projects", slug(cwd), "chats", sid + ".jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    parent = None
    t = t0
    lines = []

    def rec(kind, extra):
        nonlocal parent, t
        t += rnd.randint(100, 5000)
        u = uid(rnd)
        r = {"uuid": u, "parentUuid": parent, "sessionId": sid, "timestamp": iso(t),
             "type": kind, "cwd": cwd, "version": "0.24.4"}
        r.update(extra)
        lines.append(json.dumps(r, separators=(",", ":")))
        parent = u

    for turn in range(rnd.randint(10, 40)):
        rec("user", {"message": {"role": "user", "parts": [{"text": text(rnd, 5, 40)}]}})
        if rnd.random() < 0.7:
            cid = "call_%d" % turn
            rec("assistant", {"model": "qwen3-coder-plus", "message": {"role": "model", "parts": [
                {"functionCall": {"id": cid, "name": "read_file", "args": {"path": "src/a.rs"}}}]},
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 20,
                                  "totalTokenCount": 1020}})
            rec("tool_result", {"message": {"role": "user", "parts": [{"functionResponse": {
                "id": cid, "name": "read_file", "response": {"output": text(rnd, 50, 400)}}}]}})
        rec("system", {"subtype": "ui_telemetry", "systemPayload": {"uiEvent": {
            "event.name": "qwen-code.api_response", "model": "qwen3-coder-plus",
            "input_token_count": 1200, "output_token_count": 80,
            "cached_content_token_count": 900, "total_token_count": 1280}}})
        rec("assistant", {"model": "qwen3-coder-plus", "message": {"role": "model", "parts": [
            {"text": text(rnd, 20, 200)}]}})
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def write_aider(out, rnd, project, runs, t0):
    path = os.path.join(out, "aider", "proj%d" % project, ".aider.chat.history.md")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    import time
    parts = []
    t = t0
    for _ in range(runs):
        t += rnd.randint(3600, 86400) * 1000
        parts.append("\n# aider chat started at %s\n\n" % time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(t / 1000)))
        parts.append("> aider --model openai/gpt-4o  \n> Aider v0.86.2  \n"
                     "> Model: openai/gpt-4o with diff edit format  \n")
        for _ in range(rnd.randint(10, 40)):
            parts.append("\n#### %s  \n\n" % text(rnd, 5, 40))
            parts.append(text(rnd, 20, 200) + "\n\n")
            if rnd.random() < 0.5:
                parts.append("src/a.rs\n```\n<<<<<<< SEARCH\n%s\n=======\n%s\n>>>>>>> REPLACE\n```\n\n"
                             % (text(rnd, 5, 30), text(rnd, 5, 30)))
            parts.append("> Tokens: 2.5k sent, 147 received. Cost: $0.0081 message, $0.02 session.  \n")
    with open(path, "w") as f:
        f.write("".join(parts))
    return path


def write_continue(out, rnd, i, t0, index):
    sid = uid(rnd)
    cwd = "/home/u/proj%d" % (i % 40)
    path = os.path.join(out, "continue/sessions", sid + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    history = []
    for turn in range(rnd.randint(10, 40)):
        prompt = text(rnd, 5, 40)
        history.append({"message": {"role": "user", "content": prompt}, "contextItems": [],
                        "editorState": prompt})
        usage = {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                 "prompt_tokens_details": {"cached_tokens": 900}, "model": "gpt-4o", "cost_cents": 0}
        if rnd.random() < 0.7:
            call = {"id": "call_%d" % turn, "type": "function",
                    "function": {"name": "Read", "arguments": "{\"filepath\":\"src/a.rs\"}"}}
            history.append({"message": {"role": "assistant", "content": "", "toolCalls": [call],
                                        "usage": usage}, "contextItems": [],
                            "toolCallStates": [{"toolCallId": call["id"], "toolCall": call, "status": "done",
                                                "parsedArgs": {"filepath": "src/a.rs"},
                                                "output": [{"content": text(rnd, 50, 400),
                                                            "name": "Tool Result",
                                                            "description": "Tool execution result"}]}]})
        history.append({"message": {"role": "assistant", "content": text(rnd, 20, 200), "usage": usage},
                        "contextItems": []})
    doc = {"sessionId": sid, "title": "Untitled Session", "workspaceDirectory": cwd, "history": history,
           "usage": {"totalCost": 0, "promptTokens": 0, "completionTokens": 0}}
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    index.append({"sessionId": sid, "title": "Untitled Session", "dateCreated": str(t0),
                  "workspaceDirectory": cwd, "messageCount": len(history)})
    return path


def write_droid(out, rnd, i, t0):
    sid = uid(rnd)
    cwd = "/home/u/proj%d" % (i % 40)
    base = os.path.join(out, "factory/sessions", slug(cwd))
    os.makedirs(base, exist_ok=True)
    path = os.path.join(base, sid + ".jsonl")
    lines = [json.dumps({"type": "session_start", "id": sid, "title": "a session", "owner": "unknown",
                         "version": 2, "cwd": cwd}, separators=(",", ":"))]
    parent = None
    t = t0

    def msg(role, content, extra=None):
        nonlocal parent, t
        t += rnd.randint(100, 5000)
        mid = uid(rnd)
        m = {"role": role, "content": content}
        m.update(extra or {})
        lines.append(json.dumps({"type": "message", "id": mid, "parentId": parent, "timestamp": iso(t),
                                 "message": m}, separators=(",", ":")))
        parent = mid

    for turn in range(rnd.randint(10, 40)):
        msg("user", [{"type": "text", "text": text(rnd, 5, 40)}])
        if rnd.random() < 0.7:
            cid = "call_%d" % turn
            msg("assistant", [{"type": "tool_use", "id": cid, "name": "Read", "input": {"file_path": "/a"}}],
                {"modelId": "custom:gpt-4o"})
            msg("user", [{"type": "tool_result", "tool_use_id": cid, "is_error": False,
                          "content": text(rnd, 50, 400)}])
        msg("assistant", [{"type": "text", "text": text(rnd, 20, 200)}], {"modelId": "custom:gpt-4o"})
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(base, sid + ".settings.json"), "w") as f:
        json.dump({"model": "custom:gpt-4o", "tokenUsage": {"inputTokens": 30000, "outputTokens": 2000,
                                                            "cacheReadTokens": 20000}}, f)
    return path


CRUSH_DDL = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
  updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
  parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
  is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE INDEX idx_messages_session_id ON messages (session_id);
"""


def write_crush(out, rnd, project, sessions, t0):
    path = os.path.join(out, "crush", "proj%d" % project, ".crush", "crush.db")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(CRUSH_DDL)
    t = t0 // 1000
    for _ in range(sessions):
        sid = uid(rnd)
        db.execute("INSERT INTO sessions (id, title, prompt_tokens, completion_tokens, cost, "
                   "updated_at, created_at) VALUES (?, ?, 30000, 2000, 0.05, ?, ?)",
                   (sid, text(rnd, 2, 6), t, t))
        for turn in range(rnd.randint(10, 40)):
            t += 1
            rows = [("user", [{"type": "text", "data": {"text": text(rnd, 5, 40)}}])]
            if rnd.random() < 0.7:
                cid = "call_%d" % turn
                rows.append(("assistant", [{"type": "tool_call", "data": {
                    "id": cid, "name": "view", "input": "{\"file_path\":\"a.rs\"}",
                    "provider_executed": False, "finished": True}}]))
                rows.append(("tool", [{"type": "tool_result", "data": {
                    "tool_call_id": cid, "name": "view", "content": text(rnd, 50, 400),
                    "data": "", "mime_type": "", "metadata": "", "is_error": False}}]))
            rows.append(("assistant", [{"type": "text", "data": {"text": text(rnd, 20, 200)}},
                                       {"type": "finish", "data": {"reason": "end_turn", "time": t}}]))
            for role, parts in rows:
                db.execute("INSERT INTO messages (id, session_id, role, parts, model, provider, "
                           "created_at, updated_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (uid(rnd), sid, role, json.dumps(parts),
                            "gpt-4o" if role == "assistant" else None,
                            "openai" if role == "assistant" else None, t, t, t))
    db.commit()
    db.close()
    return path


def generate(out, sessions=500, seed=1):
    rnd = random.Random(seed)
    t0 = 1_790_000_000_000
    files = []
    for i in range(sessions):
        files.append(write_qwen(out, rnd, i, t0 + i * 60_000))
    runs_per_file = 10
    for p in range(max(1, sessions // runs_per_file)):
        files.append(write_aider(out, rnd, p, runs_per_file, t0))
    index = []
    for i in range(sessions):
        files.append(write_continue(out, rnd, i, t0 + i * 60_000, index))
    with open(os.path.join(out, "continue/sessions/sessions.json"), "w") as f:
        json.dump(index, f)
    for i in range(sessions):
        files.append(write_droid(out, rnd, i, t0 + i * 60_000))
    for p in range(max(1, sessions // 10)):
        files.append(write_crush(out, rnd, p, 10, t0))
    sizes = {os.path.relpath(p, out): os.path.getsize(p) for p in files}
    man = {"sessions": sessions, "sizes": sizes, "total_bytes": sum(sizes.values())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f)
    return man


def sources(out):
    """The --source options that show the generated sessions."""
    return ["--source", "qwen=%s" % os.path.join(out, "qwen"),
            "--source", "aider=%s" % os.path.join(out, "aider"),
            "--source", "continue=%s" % os.path.join(out, "continue"),
            "--source", "droid=%s" % os.path.join(out, "factory"),
            "--source", "crush=%s" % os.path.join(out, "crush")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    man = generate(a.out, a.sessions, a.seed)
    print("%d files, %.1f MB" % (len(man["sizes"]), man["total_bytes"] / 1e6))


if __name__ == "__main__":
    main()
