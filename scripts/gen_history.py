#!/usr/bin/env python3
"""Generate a heavy user's history of other agents' sessions, each in its agent's own
format, for benchmarks and search checks.

usage: gen_history.py OUT [--scale full|quick] [--seed N]

Writes under OUT, laid out as each agent lays out its store (point fen-fs at them with
`--source claude=OUT/claude --source codex=OUT/codex --source pi=OUT/pi`):

  OUT/claude/projects/<cwd slug>/<uuid>.jsonl          Claude Code (v2.1.x shapes)
  OUT/codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl   Codex CLI rollouts
  OUT/pi/sessions/--<cwd slug>--/<time>_<uuid>.jsonl   pi (format version 3)
  OUT/manifest.json                                    totals and planted words

full: ~1,500 Claude Code sessions, ~600 Codex sessions, ~300 pi sessions, ~2.5 GB in
all, sizes log-normal up to a few tens of MB, plus ONE Claude Code session of ~300 MB
that is mostly tool output. quick: the same shapes, a few MB.

Shapes (from the agents' real files): Claude Code entries chained by uuid/parentUuid
(user prompts, one assistant entry per content block sharing `message.id`: thinking,
text, tool_use; tool_result user entries carrying the output twice, in the message
and in `toolUseResult`, as the CLI writes it; hook progress entries in the chain, a
SessionStart attachment, turn_duration system entries, file-history-snapshot,
ai-title and last-prompt lines) and, in larger sessions, compactions
(`compact_boundary` with a null parent + an `isCompactSummary` user entry). Codex:
session_meta, developer and contextual user messages, per turn task_started,
turn_context, the user message and its user_message event, reasoning items with
agent_reasoning events, function_call/function_call_output pairs, token_count
events, the final answer and its agent_message event, task_complete; larger
sessions have `compacted` lines with a replacement_history. pi: the session header,
model/thinking-level changes, user/assistant(thinking, text, toolCall)/toolResult
messages chained by parentId, compactions (firstKeptEntryId), a session_info name.

Planted words (manifest "words"): each is written into a known set of sessions, in
one kind of place, so a search can be checked by its hit counts:
  where "user_text"   the text of a user prompt of the resumed conversation
  where "assistant_text"  an assistant's text block of the resumed conversation
  where "tool_output" only inside tool outputs (Claude tool_result + toolUseResult,
                      Codex function_call_output, pi toolResult), in the conversation
  where "compacted"   only in an assistant message that a later compaction removed
                      from the resumed conversation (still in the file's history)
Each entry lists the files (relative to OUT) holding the word; a word occurs in no
other file. `in_conversation` says whether it is in `conversation.json`.

Token usage as each agent records it (for `fen-fs usage` and ccusage): Claude Code's
`message.usage` with the 5-minute/1-hour split of cache writes, Codex's token_count
events with the call's `last_token_usage` beside the running total, pi's usage with the
cost it records.

Deterministic: the same --scale and --seed give byte-identical files (and mtimes: each
file's mtime is its last entry's time). Stdlib only.
"""

import argparse
import json
import math
import os
import random
import sys
import time

SCALES = {
    "full": dict(claude=1500, codex=600, pi=300, total=2500 * 10**6, big=300 * 10**6,
                 projects=40, max_session=40 * 10**6, compact_min=3 * 10**6,
                 words={"rare": 1, "forty": 40, "many": 400, "tool": 100, "gone": 20}),
    "quick": dict(claude=24, codex=12, pi=8, total=6 * 10**6, big=2 * 10**6,
                  projects=5, max_session=600 * 10**3, compact_min=120 * 10**3,
                  words={"rare": 1, "forty": 4, "many": 12, "tool": 6, "gone": 3}),
}

# The planted words: (key, word, where). None of them can come out of the corpus.
WORDS = [
    ("rare", "zanzibarquux", "user_text"),
    ("forty", "quokkalantern", "user_text"),
    ("many", "fjordbramble", "assistant_text"),
    ("tool", "glimmerwrench", "tool_output"),
    ("gone", "obsidianpelican", "compacted"),
]

START_MS = 1740787200000   # 2025-03-01T00:00:00Z
SPAN_MS = 365 * 86400 * 1000

_WORDS = (
    "the of and to in is for on that with as at by from this it be are or an not "
    "function return value error file path config session agent model token context "
    "request response buffer index entry append read write open close sync flush "
    "struct impl trait async await match Some None Ok Err let mut pub fn use mod "
    "def class import self True False yield lambda except raise "
    "const var Promise export default interface type string number "
    "test passed failed warning note help expected found line column "
    "cargo build release debug target src main lib json serde tokio fuse inode "
    "git commit diff branch merge status origin HEAD master "
    "über naïve café résumé → ✓ ✗ 日本語 中文 données Größe 🚀"
).split()

# Already JSON-escaped (no `\\`: every backslash starts a two-character escape, so a
# slice can be repaired at both ends; see Corpus.take).
_CODE_LINES = [
    'fn main() {\\n    println!(\\"hello, {}\\", name);\\n}\\n',
    "    if let Some(x) = map.get(&key) {\\n        return Ok(x.clone());\\n    }\\n",
    "def handler(event, ctx):\\n\\treturn {\\\"status\\\": 200, \\\"body\\\": json.dumps(event)}\\n",
    "error[E0382]: borrow of moved value: `buf`\\n  --> src/store/line.rs:42:17\\n",
    "$ ls -la\\ntotal 48\\ndrwxr-xr-x  5 user user 4096 Jan  1 12:00 .\\n",
    "test store::tests::roundtrip ... ok\\ntest ctl::tests::grammar ... ok\\n",
    "diff --git a/src/lib.rs b/src/lib.rs\\n@@ -1,4 +1,5 @@\\n-use std::io;\\n+use std::io::{self, Write};\\n",
    "{\\\"key\\\": \\\"value\\\", \\\"list\\\": [1, 2, 3], \\\"nested\\\": {\\\"a\\\": null}}\\n",
    "SELECT id, name FROM users WHERE created_at > '2025-01-01' ORDER BY id;\\n",
    "    at Object.<anonymous> (/home/dev/app/index.js:10:15)\\n    at Module._compile (node:internal)\\n",
    "  Compiling fen-fs v0.1.0 (/home/dev/src/fen-fs)\\n    Finished `release` profile [optimized] target(s) in 41.2s\\n",
]

B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


class Corpus:
    """A few MiB of JSON-escaped UTF-8 text; every payload is a slice of it."""

    def __init__(self, seed):
        rnd = random.Random("corpus-%d" % seed)
        parts, size = [], 0
        while size < (4 << 20):
            if rnd.random() < 0.2:
                s = rnd.choice(_CODE_LINES)
            else:
                s = " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(4, 18)))
                s += rnd.choice([". ", ".\\n", ", ", "\\n", ": ", "; ", " - ", "\\n\\n"])
            parts.append(s)
            size += len(s)
        self.text = "".join(parts).encode()
        self.n = len(self.text)
        self.sig = bytes(B64[rnd.randrange(64)] for _ in range(1 << 16))

    def take(self, rnd, n):
        """About n bytes of valid escaped UTF-8 JSON string content."""
        n = max(1, int(n))
        if n > self.n // 2:
            chunks, left = [], n
            while left > 0:
                c = self.take(rnd, min(left, self.n // 2))
                chunks.append(c)
                left -= len(c) + 1
            return b" ".join(chunks)
        t = self.text
        a = rnd.randrange(0, self.n - n)
        b = a + n
        while a < b and (t[a] & 0xC0) == 0x80:
            a += 1
        if a > 0 and t[a - 1] == 0x5C:   # just after a backslash: skip the escaped char
            a += 1
        while b > a and b < self.n and (t[b] & 0xC0) == 0x80:
            b -= 1
        s = t[a:b]
        if s.endswith(b"\\"):
            s = s[:-1]
        return s

    def signature(self, rnd, n):
        a = rnd.randrange(0, len(self.sig) - n)
        return self.sig[a:a + n]


def log_uniform(rnd, lo, hi):
    return int(math.exp(rnd.uniform(math.log(lo), math.log(hi))))


def uuid4(rnd):
    v = rnd.getrandbits(128)
    h = "%032x" % v
    return "%s-%s-4%s-%s%s-%s" % (h[:8], h[8:12], h[13:16], "89ab"[v & 3], h[17:20], h[20:32])


def uuid7(ms, rnd):
    v = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rnd.getrandbits(12) << 64 | 0b10 << 62 | rnd.getrandbits(62)
    h = "%032x" % v
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


_ts = {}


def iso(ms):
    sec, frac = divmod(ms, 1000)
    base = _ts.get(sec)
    if base is None:
        if len(_ts) > 100000:
            _ts.clear()
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)).encode()
        _ts[sec] = base
    return b"%s.%03dZ" % (base, frac)


class Out:
    """One session file written in large blocks; counts its bytes."""

    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.f = open(path, "wb")
        self.parts = []
        self.pending = 0
        self.size = 0

    def add(self, line):
        self.parts.append(line)
        self.pending += len(line)
        self.size += len(line)
        if self.pending >= (16 << 20):
            self.flush()

    def flush(self):
        self.f.write(b"".join(self.parts))
        self.parts, self.pending = [], 0

    def close(self, mtime_ms):
        self.flush()
        self.f.close()
        os.utime(self.path, ns=(mtime_ms * 10**6, mtime_ms * 10**6))


def cut(text, n):
    """The first ~n bytes of escaped text, cut at a character and escape boundary."""
    if len(text) <= n:
        return text
    while n > 0 and (text[n] & 0xC0) == 0x80:
        n -= 1
    s = text[:n]
    return s[:-1] if s.endswith(b"\\") else s


def with_words(text, words, rnd):
    """`text` with each planted word put in at a space."""
    for w in words:
        at = text.find(b" ", rnd.randrange(0, max(1, len(text))))
        if at < 0:
            text = text + b" " + w.encode()
        else:
            text = text[:at] + b" " + w.encode() + text[at:]
    return text


class Plan:
    """What one session must hold: its size, compaction points, planted words."""

    def __init__(self, agent, rel, cwd, size, start_ms, compactions):
        self.agent, self.rel, self.cwd, self.size = agent, rel, cwd, size
        self.start_ms = start_ms
        self.compactions = compactions
        self.words = {"user_text": [], "assistant_text": [], "tool_output": [], "compacted": []}


    def cut_points(self):
        fractions = (0.45, 0.75) if self.compactions >= 2 else (0.5,)
        return [int(self.size * f) for f in fractions][:self.compactions]

    def done(self, size, compactions_written):
        """Whether a session may end: big enough, every compaction written and the
        words planted (a turn can jump past a compaction's point or the end)."""
        return (size >= self.size and compactions_written >= self.compactions
                and getattr(self, "_planted", False))


class Turn:
    """A turn's texts, with the words planted in it (decided by the writer)."""

    def __init__(self, corpus, rnd, plan, scale_out, first_turn, after_compactions):
        self.prompt = corpus.take(rnd, log_uniform(rnd, 40, 2000))
        n_tools = rnd.choice((0, 1, 1, 2, 3, 4, 6))
        self.tools = []
        for _ in range(n_tools):
            out = corpus.take(rnd, log_uniform(rnd, *scale_out))
            cmd = corpus.take(rnd, rnd.randint(10, 80)).replace(b"\\n", b" ").replace(b"\\t", b" ")
            self.tools.append((cmd, out, corpus.take(rnd, rnd.randint(30, 400))))
        self.thinking = corpus.take(rnd, log_uniform(rnd, 100, 4000))
        self.answer = corpus.take(rnd, log_uniform(rnd, 50, 3000))
        words = plan.words
        # Words of the conversation go into the first turn after the last compaction;
        # the compacted word into the first turn, which the first compaction removes.
        if after_compactions and not getattr(plan, "_planted", False):
            plan._planted = True
            self.prompt = with_words(self.prompt, words["user_text"], rnd)
            self.answer = with_words(self.answer, words["assistant_text"], rnd)
            if words["tool_output"]:
                if not self.tools:
                    self.tools.append((b"cat build.log", corpus.take(rnd, 2000), b"read"))
                cmd, out, note = self.tools[-1]
                self.tools[-1] = (cmd, with_words(out, words["tool_output"], rnd), note)
        if first_turn and words["compacted"]:
            self.answer = with_words(self.answer, words["compacted"], rnd)


def output_range(size, big):
    if big:
        # Many medium outputs (the CLI truncates a command's output; files read and
        # search results are what make a session this big), so the file has tens of
        # thousands of entries, not a few huge ones.
        return (200, min(200_000, size // 15))
    hi = max(2_000, min(400_000, size // 12))
    return (min(200, hi // 2), hi)


# ----------------------------------------------------------------- Claude Code

def claude_slug(cwd):
    return "".join(c if c.isalnum() else "-" for c in cwd)


def write_claude(path, sid, plan, corpus, rnd, big=False):
    o = Out(path)
    cwd = plan.cwd.encode()
    sidb = sid.encode()
    common = (b'"userType":"external","entrypoint":"cli","cwd":"%s","sessionId":"%s",'
              b'"version":"2.1.114","gitBranch":"main"' % (cwd, sidb))
    t = plan.start_ms
    parent = b"null"

    def tick(lo=5, hi=4000):
        nonlocal t
        t += rnd.randint(lo, hi)
        return iso(t)

    def new_uuid():
        return uuid4(rnd).encode()

    o.add(b'{"type":"permission-mode","permissionMode":"acceptEdits","sessionId":"%s"}\n' % sidb)
    u = new_uuid()
    o.add(b'{"parentUuid":null,"isSidechain":false,"attachment":{"type":"hook_success",'
          b'"hookName":"SessionStart:startup","toolUseID":"%s","hookEvent":"SessionStart",'
          b'"content":"","stdout":"","stderr":"","exitCode":0,"command":"echo started",'
          b'"durationMs":%d},"type":"attachment","uuid":"%s","timestamp":"%s",%s}\n'
          % (new_uuid(), rnd.randint(50, 2000), u, tick(), common))
    parent = b'"%s"' % u
    cut_points = plan.cut_points()
    done_compactions = 0
    turn_no = 0
    scale_out = output_range(plan.size, big)
    while not plan.done(o.size, done_compactions):
        if done_compactions < len(cut_points) and o.size >= cut_points[done_compactions]:
            cb = new_uuid()
            o.add(b'{"parentUuid":null,"logicalParentUuid":%s,"isSidechain":false,"type":"system",'
                  b'"subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,'
                  b'"timestamp":"%s","uuid":"%s","level":"info","compactMetadata":{"trigger":"auto",'
                  b'"preTokens":%d},%s}\n' % (parent, tick(), cb, o.size // 4, common))
            su = new_uuid()
            o.add(b'{"parentUuid":"%s","isSidechain":false,"type":"user","message":{"role":"user",'
                  b'"content":"This session is being continued from a previous conversation that ran out '
                  b'of context. The conversation is summarized below:\\n%s"},"isVisibleInTranscriptOnly":true,'
                  b'"isCompactSummary":true,"uuid":"%s","timestamp":"%s",%s}\n'
                  % (cb, corpus.take(rnd, rnd.randint(2000, 12000)), su, tick(), common))
            parent = b'"%s"' % su
            done_compactions += 1
        turn = Turn(corpus, rnd, plan, scale_out, turn_no == 0,
                    done_compactions == len(cut_points))
        turn_no += 1
        prompt_id = new_uuid()
        u = new_uuid()
        o.add(b'{"type":"file-history-snapshot","messageId":"%s","snapshot":{"messageId":"%s",'
              b'"trackedFileBackups":{},"timestamp":"%s"},"isSnapshotUpdate":false}\n' % (u, u, iso(t)))
        o.add(b'{"parentUuid":%s,"isSidechain":false,"promptId":"%s","type":"user","message":'
              b'{"role":"user","content":"%s"},"uuid":"%s","timestamp":"%s",%s}\n'
              % (parent, prompt_id, turn.prompt, u, tick(), common))
        parent = b'"%s"' % u
        if turn_no == 1:
            o.add(b'{"type":"ai-title","aiTitle":"%s","sessionId":"%s"}\n'
                  % (corpus.take(rnd, rnd.randint(20, 60)).replace(b"\\n", b" "), sidb))
        msg_id = b"msg_01%s" % corpus.signature(rnd, 22)
        req = b"req_011C%s" % corpus.signature(rnd, 18)
        u_in, u_write, u_read, u_out = (rnd.randint(1, 20), rnd.randint(0, 30000), rnd.randint(0, 200000),
                                        rnd.randint(1, 4000))
        # The split of cache writes Claude Code records (5-minute and 1-hour), from the
        # counts already drawn (no draw of its own: the rest of the history stays as it was).
        hour = u_write if turn_no % 3 == 0 else (u_write // 4 if turn_no % 3 == 1 else 0)
        usage = b'{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,' \
                b'"output_tokens":%d,"service_tier":"standard","cache_creation":{' \
                b'"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d}}' % (
                    u_in, u_write, u_read, u_out, u_write - hour, hour)

        def assistant(block, stop):
            nonlocal parent
            a = new_uuid()
            o.add(b'{"parentUuid":%s,"isSidechain":false,"message":{"model":"claude-opus-4-7","id":"%s",'
                  b'"type":"message","role":"assistant","content":[%s],"stop_reason":%s,'
                  b'"stop_sequence":null,"usage":%s},"requestId":"%s","type":"assistant","uuid":"%s",'
                  b'"timestamp":"%s",%s}\n' % (parent, msg_id, block, stop, usage, req, a, tick(), common))
            parent = b'"%s"' % a
            return a

        assistant(b'{"type":"thinking","thinking":"%s","signature":"%s"}'
                  % (turn.thinking, corpus.signature(rnd, rnd.randint(200, 1200))), b"null")
        for cmd, out, note in turn.tools:
            tool_id = b"toolu_01%s" % corpus.signature(rnd, 22)
            a = assistant(b'{"type":"tool_use","id":"%s","name":"Bash","input":{"command":"%s",'
                          b'"description":"%s"}}' % (tool_id, cmd, cut(note, 80)), b'"tool_use"')
            r = new_uuid()
            o.add(b'{"parentUuid":"%s","isSidechain":false,"promptId":"%s","type":"user","message":'
                  b'{"role":"user","content":[{"tool_use_id":"%s","type":"tool_result","content":"%s",'
                  b'"is_error":false}]},"uuid":"%s","timestamp":"%s","toolUseResult":{"stdout":"%s",'
                  b'"stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false},'
                  b'"sourceToolAssistantUUID":"%s",%s}\n'
                  % (a, prompt_id, tool_id, out, r, tick(), out, a, common))
            p = new_uuid()
            o.add(b'{"parentUuid":"%s","isSidechain":false,%s,"type":"progress","data":{"type":'
                  b'"hook_progress","hookEvent":"PostToolUse","hookName":"PostToolUse:Bash","command":'
                  b'"callback"},"parentToolUseID":"%s","toolUseID":"%s","timestamp":"%s","uuid":"%s"}\n'
                  % (r, common, tool_id, tool_id, tick(1, 30), p))
            parent = b'"%s"' % p
        assistant(b'{"type":"text","text":"%s"}' % turn.answer, b'"end_turn"')
        d = new_uuid()
        o.add(b'{"parentUuid":%s,"isSidechain":false,"type":"system","subtype":"turn_duration",'
              b'"durationMs":%d,"messageCount":%d,"timestamp":"%s","uuid":"%s","isMeta":false,%s}\n'
              % (parent, rnd.randint(1000, 300000), 2 + 2 * len(turn.tools), tick(1, 20), d, common))
        parent = b'"%s"' % d
        o.add(b'{"type":"last-prompt","lastPrompt":"%s","sessionId":"%s"}\n'
              % (cut(turn.prompt, 200), sidb))
    o.close(t)
    return o.size, t


# ----------------------------------------------------------------------- Codex

SUMMARY_PREFIX = (b"Another language model started to solve this problem and produced a summary of its "
                  b"thinking process. You also have access to the state of the tools that were used by "
                  b"that language model. Use this to build on the work that has already been done and "
                  b"avoid duplicating work. Here is the summary produced by the other language model, use "
                  b"the information in this summary to assist with your own analysis:")


def write_codex(path, sid, plan, corpus, rnd):
    o = Out(path)
    cwd = plan.cwd.encode()
    t = plan.start_ms

    def tick(lo=5, hi=4000):
        nonlocal t
        t += rnd.randint(lo, hi)
        return iso(t)

    def line(kind, payload):
        o.add(b'{"timestamp":"%s","type":"%s","payload":%s}\n' % (tick(1, 50), kind, payload))

    def msg(role, kind, text, extra=b""):
        return (b'{"type":"message","role":"%s","content":[{"type":"%s","text":"%s"}]%s}'
                % (role, kind, text, extra))

    line(b"session_meta",
         b'{"id":"%s","timestamp":"%s","cwd":"%s","originator":"codex_cli_rs","cli_version":"0.169.0",'
         b'"source":"cli","model_provider":"openai","base_instructions":{"text":"%s"},"git":{"commit_hash":'
         b'"%s","branch":"main","repository_url":"https://git.example/dev/repo.git"}}'
         % (sid.encode(), iso(t), cwd, corpus.take(rnd, rnd.randint(6000, 14000)),
            ("%040x" % rnd.getrandbits(160)).encode()))
    line(b"response_item", msg(b"developer", b"input_text",
                               b"<permissions instructions>%s</permissions instructions>"
                               % corpus.take(rnd, rnd.randint(500, 3000))))
    line(b"response_item", msg(b"user", b"input_text",
                               b"<environment_context>\\n  <cwd>%s</cwd>\\n  <shell>bash</shell>\\n"
                               b"</environment_context>" % cwd))
    cut_points = plan.cut_points()
    done = 0
    turn_no = 0
    scale_out = output_range(plan.size, False)
    tokens = 0
    while not plan.done(o.size, done):
        if done < len(cut_points) and o.size >= cut_points[done]:
            summary = corpus.take(rnd, rnd.randint(2000, 10000))
            line(b"compacted", b'{"message":"%s","replacement_history":[%s]}'
                 % (summary, msg(b"user", b"input_text", SUMMARY_PREFIX + b"\\n" + summary)))
            line(b"event_msg", b'{"type":"context_compacted"}')
            done += 1
        turn = Turn(corpus, rnd, plan, scale_out, turn_no == 0, done == len(cut_points))
        turn_no += 1
        turn_id = uuid7(t, rnd).encode()
        line(b"event_msg", b'{"type":"task_started","turn_id":"%s","model_context_window":258400,'
                           b'"collaboration_mode_kind":"default"}' % turn_id)
        line(b"turn_context",
             b'{"turn_id":"%s","cwd":"%s","approval_policy":"on-request","sandbox_policy":{"type":'
             b'"workspace-write","writable_roots":["%s"],"network_access":false,"exclude_tmpdir_env_var":'
             b'false,"exclude_slash_tmp":false},"model":"gpt-5.3-codex","personality":"pragmatic",'
             b'"effort":"medium","summary":"auto","truncation_policy":{"mode":"tokens","limit":10000}}'
             % (turn_id, cwd, cwd))
        line(b"response_item", msg(b"user", b"input_text", turn.prompt))
        line(b"event_msg", b'{"type":"user_message","message":"%s","images":[],"local_images":[],'
                           b'"text_elements":[]}' % turn.prompt)
        summary = cut(turn.thinking, 300)
        line(b"event_msg", b'{"type":"agent_reasoning","text":"%s"}' % summary)
        line(b"response_item", b'{"type":"reasoning","summary":[{"type":"summary_text","text":"%s"}],'
                               b'"content":null,"encrypted_content":"%s"}'
             % (summary, corpus.signature(rnd, rnd.randint(400, 3000))))
        for cmd, out, _ in turn.tools:
            call = b"call_%s" % corpus.signature(rnd, 24).replace(b"+", b"x").replace(b"/", b"y")
            line(b"response_item", b'{"type":"function_call","name":"shell","arguments":'
                                   b'"{\\"command\\":[\\"bash\\",\\"-lc\\",\\"%s\\"]}","call_id":"%s"}'
                 % (cmd.replace(b'\\"', b"'"), call))
            line(b"response_item", b'{"type":"function_call_output","call_id":"%s","output":"%s"}'
                 % (call, out))
            before = tokens
            tokens += len(out) // 4 + 500
            # The call's own usage (`last_token_usage`), as Codex writes it beside the
            # running total: the total's growth.
            li, lc, lo, lr = (tokens - before, tokens // 2 - before // 2, tokens // 20 - before // 20,
                              tokens // 40 - before // 40)
            line(b"event_msg", b'{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,'
                               b'"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":%d,'
                               b'"total_tokens":%d},"last_token_usage":{"input_tokens":%d,'
                               b'"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":%d,'
                               b'"total_tokens":%d},"model_context_window":258400},"rate_limits":null}'
                 % (tokens, tokens // 2, tokens // 20, tokens // 40, tokens + tokens // 20,
                    li, lc, lo, lr, li + lo))
        line(b"response_item", msg(b"assistant", b"output_text", turn.answer, b',"phase":"final_answer"'))
        line(b"event_msg", b'{"type":"agent_message","message":"%s"}' % turn.answer)
        line(b"event_msg", b'{"type":"task_complete","turn_id":"%s","last_agent_message":null}' % turn_id)
    o.close(t)
    return o.size, t


# -------------------------------------------------------------------------- pi

def write_pi(path, sid, plan, corpus, rnd):
    o = Out(path)
    t = plan.start_ms
    ids = set()

    def tick(lo=5, hi=4000):
        nonlocal t
        t += rnd.randint(lo, hi)
        return t

    def new_id():
        while True:
            i = b"%08x" % rnd.getrandbits(32)
            if i not in ids:
                ids.add(i)
                return i

    o.add(b'{"type":"session","version":3,"id":"%s","timestamp":"%s","cwd":"%s"}\n'
          % (sid.encode(), iso(t), plan.cwd.encode()))
    parent = b"null"

    def entry(body):
        nonlocal parent
        i = new_id()
        o.add(b'{"type":%s,"id":"%s","parentId":%s,"timestamp":"%s"}\n' % (body, i, parent, iso(tick())))
        parent = b'"%s"' % i
        return i

    # `body` starts with the type's JSON string and goes on with the entry's fields.
    entry(b'"model_change","provider":"anthropic","modelId":"claude-sonnet-4-5"')
    entry(b'"thinking_level_change","thinkingLevel":"medium"')
    cut_points = plan.cut_points()
    done = 0
    turn_no = 0
    scale_out = output_range(plan.size, False)
    turn_starts = []
    while not plan.done(o.size, done):
        if done < len(cut_points) and o.size >= cut_points[done]:
            # Keep the last turn before the compaction (it starts after the planted one).
            kept = turn_starts[-1] if len(turn_starts) > 1 else b"ffffffff"
            entry(b'"compaction","summary":"%s","firstKeptEntryId":"%s","tokensBefore":%d'
                  % (corpus.take(rnd, rnd.randint(2000, 10000)), kept, o.size // 4))
            done += 1
        turn = Turn(corpus, rnd, plan, scale_out, turn_no == 0, done == len(cut_points))
        turn_no += 1
        first = entry(b'"message","message":{"role":"user","content":[{"type":"text","text":"%s"}],'
                      b'"timestamp":%d}' % (turn.prompt, t))
        turn_starts.append(first)
        p_in, p_out, p_read, p_total = (rnd.randint(100, 90000), rnd.randint(10, 4000), rnd.randint(0, 80000),
                                        rnd.randint(100, 99000))
        # The cost pi records with each response (claude-sonnet-4-5's prices per token).
        costs = (p_in * 3e-6, p_out * 15e-6, p_read * 0.3e-6)
        usage = (b'"usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d,'
                 b'"cost":{"input":%.6f,"output":%.6f,"cacheRead":%.6f,"cacheWrite":0,"total":%.6f}}'
                 % ((p_in, p_out, p_read, p_total) + costs + (sum(costs),)))
        head = b'"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",%s' % usage
        thinking = b'{"type":"thinking","thinking":"%s","thinkingSignature":"%s"}' % (
            turn.thinking, corpus.signature(rnd, rnd.randint(200, 800)))
        for k, (cmd, out, _) in enumerate(turn.tools):
            call = b"toolu_%s" % corpus.signature(rnd, 20).replace(b"+", b"x").replace(b"/", b"y")
            blocks = (thinking + b"," if k == 0 else b"") + (
                b'{"type":"toolCall","id":"%s","name":"bash","arguments":{"command":"%s"}}' % (call, cmd))
            entry(b'"message","message":{"role":"assistant","content":[%s],%s,"stopReason":"toolUse",'
                  b'"timestamp":%d}' % (blocks, head, t))
            entry(b'"message","message":{"role":"toolResult","toolCallId":"%s","toolName":"bash",'
                  b'"content":[{"type":"text","text":"%s"}],"isError":false,"timestamp":%d}' % (call, out, t))
        blocks = (b"" if turn.tools else thinking + b",") + b'{"type":"text","text":"%s"}' % turn.answer
        entry(b'"message","message":{"role":"assistant","content":[%s],%s,"stopReason":"stop",'
              b'"timestamp":%d}' % (blocks, head, t))
        if turn_no == 1:
            entry(b'"session_info","name":"%s"' % corpus.take(rnd, rnd.randint(15, 50)).replace(b"\\n", b" "))
    o.close(t)
    return o.size, t


# ---------------------------------------------------------------------- driver

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--scale", choices=sorted(SCALES), default="full")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    started = time.time()
    manifest = generate(a.out, a.scale, a.seed)
    print("%s: %d files, %.1f MB in %.1f s" % (
        a.out, sum(manifest["files"].values()), manifest["total_bytes"] / 1e6, time.time() - started),
        file=sys.stderr)
    return 0


def generate(out, scale, seed):
    S = SCALES[scale]
    out = os.path.abspath(out)
    if os.path.exists(out) and os.listdir(out):
        raise SystemExit("gen_history.py: %s is not empty" % out)
    rnd = random.Random("history-%d-%s" % (seed, scale))
    corpus = Corpus(seed)
    projects = ["/home/dev/src/%s-%d" % (rnd.choice(("api", "web", "cli", "infra", "ml", "docs", "app")), i)
                for i in range(S["projects"])]
    weights = [1.0 / (i + 1) for i in range(len(projects))]

    # Sizes: log-normal, scaled so that everything but the big session sums to the total.
    counts = {"claude": S["claude"], "codex": S["codex"], "pi": S["pi"]}
    plans = []
    raw = []
    for agent, n in counts.items():
        for _ in range(n - (1 if agent == "claude" else 0)):
            raw.append((agent, rnd.lognormvariate(0, 1.6)))
    scale_to = (S["total"] - S["big"]) / sum(x for _, x in raw)
    for agent, x in raw:
        size = int(min(S["max_session"], max(4000, x * scale_to)))
        cwd = rnd.choices(projects, weights)[0]
        start = START_MS + rnd.randrange(SPAN_MS)
        compactions = 0 if size < S["compact_min"] else (2 if size >= 4 * S["compact_min"] else 1)
        plans.append(Plan(agent, None, cwd, size, start, compactions))
    big = Plan("claude", None, projects[0], S["big"], START_MS + SPAN_MS - 86400000, 2)
    plans.append(big)
    # At least a few sessions of each agent with compactions (quick scale).
    for agent in counts:
        mine = sorted((p for p in plans if p.agent == agent and p is not big), key=lambda p: -p.size)
        for p in mine[:2]:
            p.compactions = max(p.compactions, 1)

    # File names (ids from the plan's own random stream: stable whatever else changes).
    for i, p in enumerate(plans):
        r = random.Random("name-%d-%s-%d" % (seed, scale, i))
        if p.agent == "claude":
            p.id = uuid4(r)
            p.rel = "claude/projects/%s/%s.jsonl" % (claude_slug(p.cwd), p.id)
        elif p.agent == "codex":
            p.id = uuid7(p.start_ms, r)
            st = time.gmtime(p.start_ms // 1000)
            p.rel = "codex/sessions/%s/rollout-%s-%s.jsonl" % (
                time.strftime("%Y/%m/%d", st), time.strftime("%Y-%m-%dT%H-%M-%S", st), p.id)
        else:
            p.id = uuid7(p.start_ms, r)
            st = time.gmtime(p.start_ms // 1000)
            p.rel = "pi/sessions/--%s--/%s-%03dZ_%s.jsonl" % (
                p.cwd.strip("/").replace("/", "-"), time.strftime("%Y-%m-%dT%H-%M-%S", st),
                p.start_ms % 1000, p.id)

    # Planted words.
    words_out = []
    others = [p for p in plans if p is not big]
    for key, word, where in WORDS:
        n = S["words"][key]
        if key == "rare":
            chosen = [big]
        elif where == "compacted":
            pool = [p for p in others if p.compactions > 0]
            chosen = rnd.sample(pool, min(n, len(pool)))
        else:
            chosen = rnd.sample(others, n)
        for p in chosen:
            p.words[where].append(word)
        words_out.append({
            "word": word, "where": where, "sessions": len(chosen),
            "in_conversation": where != "compacted",
            "by_agent": {a: sum(1 for p in chosen if p.agent == a) for a in counts},
            "files": sorted(p.rel for p in chosen),
        })

    files = {a: 0 for a in counts}
    sizes = {a: 0 for a in counts}
    listing = {}
    for i, p in enumerate(plans):
        r = random.Random("session-%d-%s-%d" % (seed, scale, i))
        path = os.path.join(out, p.rel)
        if p.agent == "claude":
            size, _ = write_claude(path, p.id, p, corpus, r, big=p is big)
        elif p.agent == "codex":
            size, _ = write_codex(path, p.id, p, corpus, r)
        else:
            size, _ = write_pi(path, p.id, p, corpus, r)
        files[p.agent] += 1
        sizes[p.agent] += size
        listing[p.rel] = size
    manifest = {
        "generator": "scripts/gen_history.py",
        "scale": scale,
        "seed": seed,
        "files": files,
        "bytes": sizes,
        "total_bytes": sum(sizes.values()),
        "roots": {"claude": "claude", "codex": "codex", "pi": "pi"},
        "big_session": {"path": big.rel, "bytes": listing[big.rel], "id": big.id, "cwd": big.cwd,
                        "compactions": big.compactions},
        "compacted_sessions": sum(1 for p in plans if p.compactions),
        "words": words_out,
        "sizes": listing,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


if __name__ == "__main__":
    sys.exit(main())
