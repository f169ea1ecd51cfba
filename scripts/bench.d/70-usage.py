"""Usage rows of scripts/bench (issue 27), over the heavy user's history of rows 12-18
(scripts/gen_history.py: ~2.5 GB of Claude Code, Codex and pi sessions; quick: a few
MB), with ccusage 20.0.24 (scripts/install-agents ccusage) reading the same files.

  #    scenario (fen-fs side)                        baseline (same run)          target
  U1   `fen-fs usage daily --json`, warm (its        `ccusage daily --offline     >= 5x faster
       ledger saved, page cache warm)                --json` on the same files,
                                                     warm
  U2   `fen-fs usage daily --json`, cold (no         cold `cat` of every file of  <= 1.5x time
       ledger; page cache dropped)                   the history
  U3   the same right after one response is          U1's fen-fs side (nothing    <= 2x time
       appended to the 300 MB session                changed)
  U4   daemon peak RSS (VmHWM): a first mount of     -                            <= 150 MB
       the history, then `cat usage/daily.json`
       (waits for the count); the search indexer
       off (rows 25, 25b measure it)

U1 also checks that both tools count the same tokens per day and model and costs
within 1% (a note says how many rows were compared). U3's append is taken back after
each run (the file is truncated to its size and its times restored).
"""

import json
import os
import shutil
import subprocess
import time

IDS = ["U1", "U2", "U3", "U4"]
CCUSAGE = ("ccusage", "20.0.24", "node_modules/.bin/ccusage")


def add_rows(add):
    add("U1", "usage daily --json, warm", "s", ">=", 5, "base/fen",
        "ccusage daily --offline --json on the same files, warm")
    add("U2", "usage daily --json, cold (no ledger)", "s", "<=", 1.5, "fen/base",
        "cold cat of every file of the history")
    add("U3", "usage daily after one appended response", "s", "<=", 2, "fen/base",
        "usage daily --json warm, nothing changed (U1's fen-fs side)")
    add("U4", "daemon VmHWM, first mount + usage/daily.json", "MB", "<=", 150, "value", "")


def env_for(B, home):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update(HOME=str(home), TZ="UTC", XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"))
    return env


def fen_cmd(B, root, store):
    return [str(B.BIN), "usage", "daily", "--json", "--breakdown", "--store", str(store), "--no-detect",
            "--source", "claude=%s" % (root / "claude"), "--source", "codex=%s" % (root / "codex"),
            "--source", "pi=%s" % (root / "pi")]


def timed(argv, env):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise B_ERR("%s exited %d: %s" % (argv[0], r.returncode, r.stderr.decode(errors="replace")[-300:]))
    return dt, r.stdout


class B_ERR(Exception):
    pass


def compare(fen_out, cc_out):
    """(rows compared, problems) between fen-fs's --breakdown lines and ccusage's JSON."""
    ours = {}
    for line in fen_out.decode().splitlines():
        v = json.loads(line)
        ours[(v["period"], v["model"])] = v
    theirs = {}
    for d in json.loads(cc_out)["daily"]:
        for m in d["modelBreakdowns"]:
            # ccusage names pi's models "[pi] <model>".
            name = m["modelName"].split("] ", 1)[-1]
            key = (d["period"], name)
            prev = theirs.get(key)
            if prev:
                for k in ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "cost"):
                    prev[k] += m[k]
            else:
                theirs[key] = dict(m)
    problems = []
    if set(ours) != set(theirs):
        problems.append("(day, model) rows differ: %d only in fen-fs, %d only in ccusage" % (
            len(set(ours) - set(theirs)), len(set(theirs) - set(ours))))
    for k in sorted(set(ours) & set(theirs)):
        a, b = ours[k], theirs[k]
        pairs = [("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                 ("cache_write_tokens", "cacheCreationTokens"), ("cache_read_tokens", "cacheReadTokens")]
        for x, y in pairs:
            if a[x] != b[y]:
                problems.append("%s %s: %s %d != %d" % (k[0], k[1], x, a[x], b[y]))
        if a["cost_usd"] is not None and b["cost"] > 0 and abs(a["cost_usd"] - b["cost"]) > 0.01 * b["cost"]:
            problems.append("%s %s: cost %.6f != %.6f" % (k[0], k[1], a["cost_usd"], b["cost"]))
    return len(set(ours) & set(theirs)), problems[:10]


def append_response(path, sid, k):
    line = json.dumps({
        "parentUuid": None, "isSidechain": False, "type": "assistant",
        "uuid": "bench-usage-%d-%s" % (k, os.urandom(4).hex()),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "cwd": "/home/dev", "sessionId": sid, "requestId": "req_bench_%s" % os.urandom(6).hex(),
        "message": {"id": "msg_bench_%s" % os.urandom(6).hex(), "model": "claude-opus-4-7",
                    "role": "assistant", "type": "message", "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": 3, "output_tokens": 120, "cache_creation_input_tokens": 400,
                              "cache_read_input_tokens": 90000}}}, separators=(",", ":")) + "\n"
    with open(path, "a") as f:
        f.write(line)


def scenario(B, P, R_cheap, R_costly, rows, want):
    u1, u2, u3, u4 = (rows[i] for i in IDS)
    root, man = B.history_data(P)
    files = [str(root / rel) for rel in sorted(man["sizes"])]
    # ccusage is U1's baseline only: installed when missing, else U1 says SKIPPED
    # (its fen-fs side still measured, U3's baseline) and the others run.
    cc, why = B.agent_tool(*CCUSAGE)
    if cc is None:
        u1.skip(why)
    home = B.WORK / "usage-home"
    home.mkdir(parents=True)
    env = env_for(B, home)
    cc_env = dict(env, CLAUDE_CONFIG_DIR=str(root / "claude"), CODEX_HOME=str(root / "codex"),
                  PI_AGENT_DIR=str(root / "pi"))
    store = B.WORK / "usage-store"
    store.mkdir(mode=0o700)
    fen = fen_cmd(B, root, store)
    ledger = store / ".fen-cache" / "usage"
    big = root / man["big_session"]["path"]
    big_size = big.stat().st_size
    big_times = (big.stat().st_atime_ns, big.stat().st_mtime_ns)

    if "U2" in want:
        cold = True
        for _ in range(R_costly):
            shutil.rmtree(ledger, ignore_errors=True)
            cold = B.drop_caches() and cold
            u2.fen_samples.append(timed(fen, env)[0])
            cold = B.drop_caches() and cold
            u2.base_samples.append(B.run_timed(["cat"] + files))
        u2.notes.append("%d files, %.0f MB; %s" % (
            len(files), man["total_bytes"] / 1e6,
            "page cache dropped before each side" if cold else "WARM (drop_caches refused)"))

    # U1: warm, the ledger saved by a first run.
    B.warm_files(files)
    timed(fen, env)
    fen_out = cc_out = None
    for _ in range(R_cheap):
        dt, fen_out = timed(fen, env)
        u1.fen_samples.append(dt)
        if cc is not None:
            dt, cc_out = timed([str(cc), "daily", "--offline", "--json"], cc_env)
            u1.base_samples.append(dt)
    if cc is not None:
        compared, problems = compare(fen_out, cc_out)
        u1.notes.append("both count the history's %d (day, model) rows the same (tokens; cost within 1%%)"
                        % compared if not problems else "compared %d (day, model) rows" % compared)
        u1.checks.extend(problems)

    if "U3" in want:
        try:
            for k in range(R_cheap):
                append_response(big, man["big_session"]["id"], k)
                u3.fen_samples.append(timed(fen, env)[0])
                os.truncate(big, big_size)
                os.utime(big, ns=big_times)
                # The truncation is a change too: counted again off the clock.
                timed(fen, env)
        finally:
            os.truncate(big, big_size)
            os.utime(big, ns=big_times)
        u3.base_samples = list(u1.fen_samples)
        u3.notes.append("one response appended to the %.0f MB session before each run" % (big_size / 1e6))

    if "U4" in want:
        mstore = B.WORK / "usage-mount-store"
        mstore.mkdir(mode=0o700)
        src = ["--source", "claude=%s" % (root / "claude"), "--source", "codex=%s" % (root / "codex"),
               "--source", "pi=%s" % (root / "pi")]
        m = B.Mount(mstore, fsync="no", extra=src)
        # The search index's build has rows of its own (25, 25b): off here, so the
        # row is the daemon with usage counted.
        saved = os.environ.get("FEN_FS_SEARCH")
        os.environ["FEN_FS_SEARCH"] = "off"
        try:
            t0 = time.perf_counter()
            try:
                m.up()
            finally:
                if saved is None:
                    del os.environ["FEN_FS_SEARCH"]
                else:
                    os.environ["FEN_FS_SEARCH"] = saved
            with open(B.MNT / "usage" / "daily.json", "rb") as f:
                data = f.read()
            dt = time.perf_counter() - t0
            rows_n = len(json.loads(data))
            st = m.status()
            u4.fen_samples.append(B.kb_field(st, "VmHWM") / 1024)
            u4.notes.append("mount + first cat usage/daily.json (%d days) in %s, the agents' first index "
                            "built meanwhile, the search indexer off (FEN_FS_SEARCH=off); VmRSS now %.1f MB" % (
                                rows_n, B.fmt_time(dt), B.kb_field(st, "VmRSS") / 1024))
        finally:
            m.down()
