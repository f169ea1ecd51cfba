#!/usr/bin/env python3
"""Generate sessions of Kimi CLI and OpenHands CLI, each in its agent's own format, for
the benchmark rows of scripts/bench.d/98-kimi-openhands.py.

usage: gen_kimi_openhands.py OUT [--sessions N] [--seed S]

Writes under OUT (point fen-fs at them with the --source options sources() returns):

  OUT/kimi/kimi.json + sessions/<md5 cwd>/<uuid>/{context,wire}.jsonl, state.json
                                                      Kimi CLI 1.52.0's files
  OUT/openhands/conversations/<hex id>/base_state.json + events/event-<n>-<uuid>.json
                                                      OpenHands CLI 1.16.0's files
  OUT/manifest.json                                   files and sizes

N sessions of each, each of 10 to 40 turns with a tool call in most, shaped as the
files the agents wrote in tests/fixtures/kimi-run and tests/fixtures/openhands.
Deterministic for a seed; stdlib only.
"""

import argparse
import hashlib
import json
import os
import random
import time
import uuid

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega function return struct impl trait "
         "module import export class method value error result option vector string").split()


def text(rnd, lo, hi):
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(lo, hi)))


def uid(rnd):
    return uuid.UUID(int=rnd.getrandbits(128), version=4)


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def write_kimi(out, rnd, i, t0, work_dirs):
    cwd = "/home/u/proj%d" % (i % 40)
    if cwd not in work_dirs:
        work_dirs[cwd] = {"path": cwd, "kaos": "local", "last_session_id": None}
    sid = str(uid(rnd))
    work_dirs[cwd]["last_session_id"] = sid
    d = os.path.join(out, "kimi/sessions", hashlib.md5(cwd.encode()).hexdigest(), sid)
    os.makedirs(d, exist_ok=True)
    ctx = [json.dumps({"role": "_system_prompt", "content": "You are Kimi Code CLI. " + text(rnd, 200, 400)})]
    wire = [json.dumps({"type": "metadata", "protocol_version": "1.10"})]
    t = t0 / 1000
    first = None
    for turn in range(rnd.randint(10, 40)):
        prompt = text(rnd, 5, 40)
        first = first or prompt
        ctx.append(json.dumps({"role": "_checkpoint", "id": turn}))
        ctx.append(compact({"role": "user", "content": prompt}))
        wire.append(json.dumps({"timestamp": t, "message": {"type": "TurnBegin", "payload": {"user_input": prompt}}}))
        steps = []
        if rnd.random() < 0.8:
            call = "call_%d" % turn
            steps.append({"role": "assistant", "content": text(rnd, 3, 20), "tool_calls": [
                {"type": "function", "id": call, "function": {"name": "Shell", "arguments": compact({"command": "ls"})}}]})
            steps.append({"role": "tool", "content": text(rnd, 20, 200), "tool_call_id": call})
        steps.append({"role": "assistant", "content": text(rnd, 20, 120)})
        for n, m in enumerate(steps):
            ctx.append(compact(m))
            if m["role"] == "assistant":
                t += 1.5
                usage = {"input_other": rnd.randint(50, 500), "output": rnd.randint(5, 200),
                         "input_cache_read": rnd.randint(0, 5000), "input_cache_creation": 0}
                wire.append(json.dumps({"timestamp": t, "message": {"type": "StatusUpdate", "payload": {
                    "context_usage": 0.01, "token_usage": usage, "message_id": "chatcmpl-%s-%d-%d" % (sid[:8], turn, n)}}}))
                ctx.append(json.dumps({"role": "_usage", "token_count": usage["input_other"] + usage["input_cache_read"]}))
        wire.append(json.dumps({"timestamp": t, "message": {"type": "TurnEnd", "payload": {}}}))
        t += 30
    paths = []
    for name, lines in (("context.jsonl", ctx), ("wire.jsonl", wire)):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(p)
    p = os.path.join(d, "state.json")
    with open(p, "w") as f:
        json.dump({"version": 1, "custom_title": first[:50], "archived": False}, f, indent=2)
    paths.append(p)
    return paths


def oh_time(ms):
    s, ms = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%06d" % (ms * 1000)


def write_openhands(out, rnd, i, t0):
    cid = uid(rnd)
    cwd = "/home/u/proj%d" % (i % 40)
    d = os.path.join(out, "openhands/conversations", cid.hex)
    os.makedirs(os.path.join(d, "events"), exist_ok=True)
    events = [{"id": str(uid(rnd)), "timestamp": oh_time(t0), "source": "agent",
               "system_prompt": {"cache_prompt": False, "type": "text", "text": text(rnd, 300, 600)},
               "tools": [], "kind": "SystemPromptEvent"}]
    usages = []
    t = t0
    for turn in range(rnd.randint(10, 40)):
        t += 30_000
        events.append({"id": str(uid(rnd)), "timestamp": oh_time(t), "source": "user",
                       "llm_message": {"role": "user", "content": [{"cache_prompt": False, "type": "text", "text": text(rnd, 5, 40)}],
                                       "thinking_blocks": []},
                       "activated_skills": [], "extended_content": [], "kind": "MessageEvent"})
        calls = [("terminal", compact({"command": "ls", "security_risk": "LOW"}))] if rnd.random() < 0.8 else []
        calls.append(("finish", compact({"message": text(rnd, 10, 60)})))
        for name, args in calls:
            t += 1500
            resp = "resp-%s-%d-%s" % (cid.hex[:8], turn, name)
            call = "call_%d_%s" % (turn, name)
            action = str(uid(rnd))
            events.append({"id": action, "timestamp": oh_time(t), "source": "agent",
                           "thought": [{"cache_prompt": False, "type": "text", "text": text(rnd, 3, 30)}],
                           "thinking_blocks": [], "tool_name": name, "tool_call_id": call,
                           "tool_call": {"id": call, "name": name, "arguments": args, "origin": "completion"},
                           "llm_response_id": resp, "security_risk": "UNKNOWN", "kind": "ActionEvent"})
            events.append({"id": str(uid(rnd)), "timestamp": oh_time(t + 100), "source": "environment",
                           "tool_name": name, "tool_call_id": call,
                           "observation": {"content": [{"cache_prompt": False, "type": "text", "text": text(rnd, 20, 200)}],
                                           "is_error": False, "kind": "TerminalObservation"},
                           "action_id": action, "kind": "ObservationEvent"})
            usages.append({"model": "openai/mock", "prompt_tokens": rnd.randint(500, 5000),
                           "completion_tokens": rnd.randint(5, 200), "cache_read_tokens": rnd.randint(0, 400),
                           "cache_write_tokens": 0, "reasoning_tokens": 0, "context_window": 0,
                           "per_turn_token": 0, "response_id": resp})
    paths = []
    for n, e in enumerate(events):
        p = os.path.join(d, "events", "event-%05d-%s.json" % (n, e["id"]))
        with open(p, "w") as f:
            f.write(compact(e))
        paths.append(p)
    state = {"id": str(cid), "agent": {"llm": {"model": "openai/mock"}, "kind": "Agent"},
             "workspace": {"working_dir": cwd, "kind": "LocalWorkspace"},
             "persistence_dir": d, "execution_status": "finished",
             "stats": {"usage_to_metrics": {"agent": {"model_name": "openai/mock", "costs": [],
                                                      "token_usages": usages}}}}
    p = os.path.join(d, "base_state.json")
    with open(p, "w") as f:
        json.dump(state, f)
    paths.append(p)
    return paths


def generate(out, sessions=500, seed=1):
    rnd = random.Random(seed)
    t0 = 1_790_000_000_000
    files = []
    work_dirs = {}
    for i in range(sessions):
        files.extend(write_kimi(out, rnd, i, t0 + i * 60_000, work_dirs))
    p = os.path.join(out, "kimi/kimi.json")
    with open(p, "w") as f:
        json.dump({"work_dirs": list(work_dirs.values())}, f, indent=2)
    files.append(p)
    for i in range(sessions):
        files.extend(write_openhands(out, rnd, i, t0 + i * 60_000))
    sizes = {os.path.relpath(p, out): os.path.getsize(p) for p in files}
    man = {"sessions": sessions, "sizes": sizes, "total_bytes": sum(sizes.values())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f)
    return man


def sources(out):
    """The --source options that show the generated sessions."""
    return ["--source", "kimi=%s" % os.path.join(out, "kimi"),
            "--source", "openhands=%s" % os.path.join(out, "openhands")]


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
