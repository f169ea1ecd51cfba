#!/usr/bin/env python3
"""Stores of Kilo Code CLI, Cline, Roo Code and VS Code Copilot Chat for scripts/bench's
V rows (issue 34): N sessions of each, shaped as each agent writes
them (Kilo: OpenCode's SQLite tables in kilo.db; Cline 3.x: sessions/<id>/<id>.json
and <id>.messages.json, pretty printed as Cline writes them; Roo Code: tasks/<id>/
with history_item.json, api_conversation_history.json and ui_messages.json; VS Code:
workspaceStorage/<hash>/chatSessions/, half documents, half operation logs).
Standard library only.

    scripts/gen_vscode_agents.py OUT [--sessions N] [--seed S]

OUT gets kilo/, cline/, roo/ and code/ (each the DIR of --source
KIND=DIR) and manifest.json (every file's size).
"""

import argparse
import json
import os
import random
import sqlite3

WORDS = ("parser token buffer module index cache widget layout render query schema "
         "thread queue signal vector matrix kernel socket stream future").split()

KILO_DDL = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
  time_created integer NOT NULL, time_updated integer NOT NULL, sandboxes text NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, workspace_id text,
  parent_id text, slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, metadata text, cost real DEFAULT 0 NOT NULL,
  tokens_input integer DEFAULT 0 NOT NULL, tokens_output integer DEFAULT 0 NOT NULL,
  tokens_reasoning integer DEFAULT 0 NOT NULL, tokens_cache_read integer DEFAULT 0 NOT NULL,
  tokens_cache_write integer DEFAULT 0 NOT NULL, revert text, permission text, agent text,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text NOT NULL,
  seq integer, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE event_sequence (aggregate_id text PRIMARY KEY, seq integer NOT NULL, owner_id text);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""

BASE_MS = 1_790_000_000_000


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def turns(rng):
    """(prompt, answer, tool output) per turn: about 50 KB a session."""
    return [(text(rng, rng.randint(5, 40)), text(rng, rng.randint(100, 600)),
             text(rng, rng.randint(50, 300))) for _ in range(rng.randint(8, 16))]


def kilo(out, n, rng):
    os.makedirs(out, exist_ok=True)
    db = sqlite3.connect(os.path.join(out, "kilo.db"))
    db.executescript(KILO_DDL)
    db.execute("INSERT INTO project VALUES ('global', '/', NULL, NULL, 0, 0, '[]')")
    for s in range(n):
        sid = "ses_bench%06d" % s
        t = BASE_MS + s * 3_600_000
        cwd = "/home/u/kilo-%d" % (s % 20)
        db.execute("INSERT INTO session (id, project_id, slug, directory, path, title, version,"
                   " time_created, time_updated) VALUES (?, 'global', 'bench', ?, '', ?, '7.7.7', ?, ?)",
                   (sid, cwd, "Session %d" % s, t, t + 60_000))
        for i, (prompt, answer, tool) in enumerate(turns(rng)):
            u, a = "msg_%s_%03du" % (sid, i), "msg_%s_%03da" % (sid, i)
            tu, ta = t + i * 1000, t + i * 1000 + 500
            db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (u, sid, tu, tu, json.dumps(
                {"role": "user", "time": {"created": tu}, "agent": "code",
                 "model": {"providerID": "mock", "modelID": "mock-model"}})))
            db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", ("prt_%s_%03du" % (sid, i), u, sid, tu, tu,
                       json.dumps({"type": "text", "text": prompt})))
            db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (a, sid, ta, ta, json.dumps(
                {"parentID": u, "role": "assistant", "mode": "code", "agent": "code",
                 "path": {"cwd": cwd, "root": "/"}, "cost": 0,
                 "tokens": {"total": 1500, "input": 1000, "output": 500, "reasoning": 0,
                            "cache": {"write": 0, "read": 0}},
                 "modelID": "mock-model", "providerID": "mock",
                 "time": {"created": ta, "completed": ta + 100}, "finish": "stop"})))
            for j, part in enumerate([
                    {"type": "step-start"},
                    {"type": "tool", "callID": "call_%d" % i, "tool": "bash",
                     "state": {"status": "completed", "input": {"command": "ls"}, "output": tool}},
                    {"type": "text", "text": answer},
                    {"type": "step-finish", "reason": "stop"}]):
                db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                           ("prt_%s_%03da%d" % (sid, i, j), a, sid, ta, ta, json.dumps(part)))
        db.execute("INSERT INTO event_sequence VALUES (?, ?, NULL)", (sid, 1))
    db.commit()
    db.close()


def cline(out, n, rng):
    for s in range(n):
        sid = "%d_b%04d" % (BASE_MS + s * 3_600_000, s)
        d = os.path.join(out, "sessions", sid)
        os.makedirs(d, exist_ok=True)
        cwd = "/home/u/cline-%d" % (s % 20)
        messages = []
        ts = BASE_MS + s * 3_600_000
        for i, (prompt, answer, tool) in enumerate(turns(rng)):
            metrics = {"inputTokens": 1000, "outputTokens": 500, "cacheReadTokens": 0,
                       "cacheWriteTokens": 0}
            info = {"id": "mock-model", "provider": "openai-compatible"}
            messages += [
                {"id": "u%d" % i, "role": "user", "ts": ts + i * 1000, "content": [
                    {"type": "text", "text": "<user_input mode=\"act\">%s</user_input>" % prompt}]},
                {"id": "t%d" % i, "role": "assistant", "ts": ts + i * 1000 + 100, "content": [
                    {"type": "tool_use", "id": "call_%d" % i, "name": "run_commands",
                     "input": {"commands": ["ls"]}}], "modelInfo": info, "metrics": metrics},
                {"id": "r%d" % i, "role": "user", "ts": ts + i * 1000 + 200, "content": [
                    {"type": "tool_result", "tool_use_id": "call_%d" % i, "name": "run_commands",
                     "content": [{"query": "ls", "result": tool, "success": True}]}]},
                {"id": "a%d" % i, "role": "assistant", "ts": ts + i * 1000 + 300, "content": [
                    {"type": "text", "text": answer}], "modelInfo": info, "metrics": metrics},
            ]
        record = {"version": 1, "session_id": sid, "source": "cli", "status": "completed",
                  "provider": "openai-compatible", "model": "mock-model", "cwd": cwd,
                  "workspace_root": cwd, "started_at": "2026-09-21T14:13:20.000Z",
                  "metadata": {"title": "Session %d" % s}}
        with open(os.path.join(d, sid + ".json"), "w") as f:
            json.dump(record, f, indent=2)
        with open(os.path.join(d, sid + ".messages.json"), "w") as f:
            json.dump({"version": 1, "updated_at": "2026-09-21T15:13:20.000Z", "agent": "lead",
                       "sessionId": sid, "messages": messages}, f, indent=2)


def roo(out, n, rng):
    for s in range(n):
        tid = "roo-bench-%04d" % s
        d = os.path.join(out, "tasks", tid)
        os.makedirs(d, exist_ok=True)
        ts = BASE_MS + s * 3_600_000
        api, ui = [], []
        for i, (prompt, answer, tool) in enumerate(turns(rng)):
            api += [
                {"role": "user", "ts": ts + i * 1000, "content": [
                    {"type": "text", "text": "<user_message>\n%s\n</user_message>" % prompt}]},
                {"role": "assistant", "ts": ts + i * 1000 + 100, "content": [
                    {"type": "tool_use", "id": "tu_%d" % i, "name": "read_file", "input": {"path": "a"}}]},
                {"role": "user", "ts": ts + i * 1000 + 200, "content": [
                    {"type": "tool_result", "tool_use_id": "tu_%d" % i, "content": tool}]},
                {"role": "assistant", "ts": ts + i * 1000 + 300, "content": [{"type": "text", "text": answer}]},
            ]
            ui += [{"ts": ts + i * 1000, "type": "say", "say": "text", "text": prompt},
                   {"ts": ts + i * 1000 + 50, "type": "say", "say": "api_req_started",
                    "text": json.dumps({"tokensIn": 1000, "tokensOut": 500, "cacheWrites": 0,
                                        "cacheReads": 0, "cost": 0.01})}]
        item = {"id": tid, "number": s + 1, "ts": ts, "task": "Task %d" % s, "tokensIn": 0,
                "tokensOut": 0, "totalCost": 0, "workspace": "/home/u/roo-%d" % (s % 20), "mode": "code"}
        for name, doc in (("history_item.json", item), ("api_conversation_history.json", api),
                          ("ui_messages.json", ui)):
            with open(os.path.join(d, name), "w") as f:
                json.dump(doc, f, indent="\t" if name == "history_item.json" else None)


def code(out, n, rng):
    """VS Code: 20 workspaces; even sessions as documents, odd ones as logs."""
    for s in range(n):
        ws = os.path.join(out, "workspaceStorage", "ws%02d" % (s % 20))
        os.makedirs(os.path.join(ws, "chatSessions"), exist_ok=True)
        with open(os.path.join(ws, "workspace.json"), "w") as f:
            json.dump({"folder": "file:///home/u/code-%d" % (s % 20)}, f)
        sid = "00000000-0000-4000-8000-%012d" % s
        ts = BASE_MS + s * 3_600_000
        requests = []
        for i, (prompt, answer, _tool) in enumerate(turns(rng)):
            requests.append({
                "requestId": "request_%d" % i, "timestamp": ts + i * 1000,
                "message": {"text": prompt, "parts": []}, "variableData": {"variables": []},
                "response": [{"value": answer}], "responseId": "response_%d" % i,
                "result": {"metadata": {"promptTokens": 1000, "outputTokens": 500,
                                        "resolvedModel": "gpt-4.1"}},
                "modelId": "copilot/gpt-4.1", "modelState": {"value": 1}})
        doc = {"version": 3, "sessionId": sid, "creationDate": ts, "requests": requests}
        if s % 2 == 0:
            with open(os.path.join(ws, "chatSessions", sid + ".json"), "w") as f:
                json.dump(doc, f, indent=2)
        else:
            with open(os.path.join(ws, "chatSessions", sid + ".jsonl"), "w") as f:
                first = dict(doc, requests=[])
                f.write(json.dumps({"kind": 0, "v": first}) + "\n")
                for r in requests:
                    f.write(json.dumps({"kind": 2, "k": ["requests"], "v": [r]}) + "\n")


def generate(out, n, seed):
    rng = random.Random(seed)
    kilo(os.path.join(out, "kilo"), n, rng)
    cline(os.path.join(out, "cline"), n, rng)
    roo(os.path.join(out, "roo"), n, rng)
    code(os.path.join(out, "code"), n, rng)
    sizes = {}
    for d, _, names in os.walk(out):
        for name in names:
            p = os.path.join(d, name)
            sizes[os.path.relpath(p, out)] = os.path.getsize(p)
    man = {"sessions_per_agent": n, "sizes": sizes, "total_bytes": sum(sizes.values())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f)
    return man


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    man = generate(a.out, a.sessions, a.seed)
    print("%d sessions of each, %.1f MB" % (man["sessions_per_agent"], man["total_bytes"] / 1e6))


if __name__ == "__main__":
    main()
