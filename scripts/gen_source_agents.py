#!/usr/bin/env python3
"""Generate the stores of the agents fen-fs reads from their public source only (Goose,
Amp, Zed, Warp), N sessions each, in each agent's own layout, for benchmarks.

usage: gen_source_agents.py OUT [--sessions N] [--seed S]

Writes (point fen-fs at them with `--source goose=OUT/goose --source amp=OUT/amp
--source zed=OUT/zed --source warp=OUT/warp-terminal`):

  OUT/goose/sessions/sessions.db        Goose schema 16 (tests/fixtures/goose/schema-v16.sql),
                                        WAL mode: sessions, messages as add_message writes
                                        them, one usage_ledger row per assistant message
  OUT/amp/threads/T-<uuid>.json         Amp threads, pretty-printed, per-message usage
  OUT/zed/threads/threads.db            Zed's threads table, data_type `json` (Zed's
                                        current rows are zstd; the standard library has
                                        no zstd, and `json` rows are read the same way
                                        after decompression)
  OUT/warp-terminal/warp.sqlite         Warp's agent_conversations / agent_tasks /
                                        ai_queries, each task a protobuf Task
  OUT/manifest.json                     files, bytes, sessions per agent

Sessions have 4 to 200 messages (log-normal), one user prompt per turn, tool calls and
results, text of a few hundred bytes to a few KB. Deterministic: the same N and seed
give the same rows (database files may differ in page layout). Stdlib only.
"""

import argparse
import datetime
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
T0 = 1_786_000_000


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
        calls = [("shell", {"command": "grep -rn %s src" % rng.choice(WORDS)},
                  text(rng, rng.randint(20, 600))) for _ in range(rng.randint(0, 3))]
        out.append((text(rng, rng.randint(5, 60)), calls, text(rng, rng.randint(20, 300))))
    return out


def cwd_of(rng):
    return "/home/u/proj-%d" % rng.randint(0, 40)


def gen_goose(out, n, rng):
    d = os.path.join(out, "goose", "sessions")
    os.makedirs(d)
    db = sqlite3.connect(os.path.join(d, "sessions.db"))
    db.execute("PRAGMA journal_mode = WAL")
    with open(os.path.join(ROOT, "tests", "fixtures", "goose", "schema-v16.sql")) as f:
        db.executescript(f.read())
    for i in range(n):
        sid = "20260801_%d" % (i + 1)
        t = T0 + i * 600
        cwd = cwd_of(rng)
        db.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, updated_at, provider_name, model_config_json)"
                   " VALUES (?, ?, 'user', ?, datetime(?, 'unixepoch'), datetime(?, 'unixepoch'), 'anthropic', ?)",
                   (sid, text(rng, 4), cwd, t, t, json.dumps({"model_name": "claude-sonnet-4-5"})))
        meta = json.dumps({"userVisible": True, "agentVisible": True})
        k = 0

        def msg(role, content):
            nonlocal k, t
            k += 1
            t += 1
            db.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json)"
                       " VALUES (?, ?, ?, ?, ?, ?)",
                       ("msg_%s_%d" % (sid, k), sid, role, json.dumps(content), t, meta))

        for prompt, calls, answer in turns(rng):
            msg("user", [{"type": "text", "text": prompt}])
            for j, (name, args, output) in enumerate(calls):
                cid = "call_%d_%d" % (k, j)
                msg("assistant", [{"type": "toolRequest", "id": cid, "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}])
                msg("user", [{"type": "toolResponse", "id": cid, "toolResult": {"status": "success", "value": {"content": [{"type": "text", "text": output}], "isError": False}}}])
            msg("assistant", [{"type": "text", "text": answer}])
            db.execute("INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens, output_tokens, total_tokens)"
                       " VALUES (?, ?, 'claude-sonnet-4-5', ?, ?, ?)", (sid, t, 2000 + k * 50, 80, 2080 + k * 50))
        db.execute("UPDATE sessions SET updated_at = datetime(?, 'unixepoch') WHERE id = ?", (t, sid))
    db.commit()
    db.close()


def gen_amp(out, n, rng):
    d = os.path.join(out, "amp", "threads")
    os.makedirs(d)
    for i in range(n):
        tid = "T-%s" % uuid.UUID(int=rng.getrandbits(128), version=4)
        t = (T0 + i * 600) * 1000
        messages = []
        for prompt, calls, answer in turns(rng):
            messages.append({"role": "user", "messageId": len(messages), "content": [{"type": "text", "text": prompt}], "meta": {"sentAt": t}})
            content = [{"type": "text", "text": "Looking."}]
            for j, (name, args, _) in enumerate(calls):
                content.append({"type": "tool_use", "complete": True, "id": "toolu_%d_%d" % (i, len(messages) + j), "name": "Bash", "input": args})
            t += 2000
            messages.append({"role": "assistant", "messageId": len(messages), "content": content,
                             "usage": {"model": "claude-sonnet-4-5-20250929", "inputTokens": 5, "outputTokens": 90,
                                       "cacheCreationInputTokens": 400, "cacheReadInputTokens": 9000,
                                       "timestamp": iso(t)}})
            if calls:
                messages.append({"role": "user", "messageId": len(messages), "content": [
                    {"type": "tool_result", "toolUseID": c["id"], "run": {"status": "done", "result": {"output": out_, "exitCode": 0}}}
                    for c, (_, _, out_) in zip([b for b in content if b["type"] == "tool_use"], calls)]})
                messages.append({"role": "assistant", "messageId": len(messages), "content": [{"type": "text", "text": answer}]})
        doc = {"v": 40, "id": tid, "created": (T0 + i * 600) * 1000, "title": text(rng, 4), "messages": messages,
               "env": {"initial": {"trees": [{"displayName": "p", "uri": "file://" + cwd_of(rng)}]}}}
        with open(os.path.join(d, tid + ".json"), "w") as f:
            json.dump(doc, f, indent=2)


def gen_zed(out, n, rng):
    d = os.path.join(out, "zed", "threads")
    os.makedirs(d)
    db = sqlite3.connect(os.path.join(d, "threads.db"))
    with open(os.path.join(ROOT, "tests", "fixtures", "zed", "schema.sql")) as f:
        db.executescript(f.read())
    for i in range(n):
        tid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        messages, usage = [], {}
        for prompt, calls, answer in turns(rng):
            uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            messages.append({"User": {"id": uid, "content": [{"Text": prompt}]}})
            content, results = [{"Text": "Looking."}], {}
            for j, (name, args, output) in enumerate(calls):
                cid = "toolu_%d_%d" % (len(messages), j)
                content.append({"ToolUse": {"id": cid, "name": "terminal", "raw_input": json.dumps(args), "input": args, "is_input_complete": True}})
                results[cid] = {"tool_use_id": cid, "tool_name": "terminal", "is_error": False, "content": {"Text": output}, "output": None}
            messages.append({"Agent": {"content": content, "tool_results": results, "reasoning_details": None}})
            messages.append({"Agent": {"content": [{"Text": answer}], "tool_results": {}, "reasoning_details": None}})
            usage[uid] = {"input_tokens": 1200, "output_tokens": 90, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 8000}
        updated = "2026-08-%02dT10:00:00Z" % (1 + i % 28)
        doc = {"title": text(rng, 4), "messages": messages, "updated_at": updated, "request_token_usage": usage,
               "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"}, "version": "0.3.0"}
        db.execute("INSERT INTO threads (id, summary, updated_at, data_type, data, folder_paths, folder_paths_order, created_at)"
                   " VALUES (?, ?, ?, 'json', ?, ?, '0', ?)", (tid, doc["title"], updated, json.dumps(doc).encode(), cwd_of(rng), updated))
    db.commit()
    db.close()


def pb_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_ld(n, b):
    if isinstance(b, str):
        b = b.encode()
    return pb_varint(n << 3 | 2) + pb_varint(len(b)) + b


def gen_warp(out, n, rng):
    d = os.path.join(out, "warp-terminal")
    os.makedirs(d)
    db = sqlite3.connect(os.path.join(d, "warp.sqlite"))
    with open(os.path.join(ROOT, "tests", "fixtures", "warp", "schema.sql")) as f:
        db.executescript(f.read())
    for i in range(n):
        cid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        cwd = cwd_of(rng)
        msgs = []
        t = T0 + i * 600
        for prompt, calls, answer in turns(rng):
            t += 1
            ts = pb_ld(14, pb_varint(1 << 3) + pb_varint(t))
            msgs.append(pb_ld(1, "m%d" % len(msgs)) + ts + pb_ld(2, pb_ld(1, prompt) + pb_ld(2, pb_ld(1, pb_ld(1, cwd)))))
            for j, (_, args, output) in enumerate(calls):
                call = "call_%d" % len(msgs)
                msgs.append(pb_ld(1, "m%d" % len(msgs)) + ts + pb_ld(4, pb_ld(1, call) + pb_ld(2, pb_ld(1, args["command"]))))
                msgs.append(pb_ld(1, "m%d" % len(msgs)) + ts + pb_ld(5, pb_ld(1, call) + pb_ld(2, pb_ld(1, args["command"]) + pb_ld(2, output))))
            msgs.append(pb_ld(1, "m%d" % len(msgs)) + ts + pb_ld(3, pb_ld(1, answer)))
        task = pb_ld(1, "root") + pb_ld(2, text(rng, 4)) + b"".join(pb_ld(5, m) for m in msgs)
        data = {"server_conversation_token": None, "conversation_usage_metadata": {
            "was_summarized": False, "context_window_usage": 0.1, "credits_spent": 1.0,
            "token_usage": [{"model_id": "claude-4-sonnet", "warp_tokens": 5000}], "tool_usage_metadata": {}}}
        summary = {"initial_query": "", "title": text(rng, 4), "initial_working_directory": cwd, "is_restorable": True}
        db.execute("INSERT INTO agent_conversations (conversation_id, conversation_data, summary, last_modified_at)"
                   " VALUES (?, ?, ?, datetime(?, 'unixepoch'))", (cid, json.dumps(data), json.dumps(summary), t))
        db.execute("INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES (?, ?, ?)", (cid, cid + "-root", task))
    db.commit()
    db.close()


def generate(out, n=500, seed=1):
    rng = random.Random(seed)
    os.makedirs(out)
    gen_goose(out, n, rng)
    gen_amp(out, n, rng)
    gen_zed(out, n, rng)
    gen_warp(out, n, rng)
    sizes = {}
    for d, _, names in os.walk(out):
        for name in names:
            p = os.path.join(d, name)
            sizes[os.path.relpath(p, out)] = os.path.getsize(p)
    man = {"sessions_per_agent": n, "seed": seed, "sizes": sizes, "total_bytes": sum(sizes.values())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1, sort_keys=True)
    return man


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if os.path.exists(a.out):
        sys.exit("%s exists" % a.out)
    man = generate(a.out, a.sessions, a.seed)
    print("%d files, %.1f MB" % (len(man["sizes"]), man["total_bytes"] / 1e6))


if __name__ == "__main__":
    main()
