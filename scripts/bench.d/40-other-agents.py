"""Other agents' stores (rows 9, 10, 11, 19): 10,000 pi sessions of one cwd against
pi's own SessionManager.list, and a 100 MB Claude Code transcript.

  #   scenario (fen-fs side)                        baseline (same run)          target
  9   list a cwd's 10,000 pi sessions (cat          pi's SessionManager.list     >= 10x faster
      index.json)
  10  cold `cat conversation.json` of a 100 MB      cold `cat` of the            <= 1.5x time
      Claude Code transcript, after a remount       transcript
  11  daemon peak RSS, 10,000 pi sessions indexed   -                            <= 150 MB
      and listed, until the first pass (every
      session kept and indexed) is over
  19  `fen-fs list --json --cwd` of pi's 10,000     pi's SessionManager.list,    >= 2x faster
      sessions, no mount, page cache dropped        page cache dropped

pi is installed with scripts/install-pi when missing (target/pi-agent); when that is
not possible (no node or npm, no network) rows 9 and 19 say SKIPPED.
"""

import json
import os
import shutil
import subprocess

import harness as H
from harness import (MNT, ROOT, WORK, BenchError, Mount, cached_data, cat, drop_caches, fmt_time,
                     first_pass_note, kb_field, log, median, mount_name, run_timed,
                     wait_first_pass, write_claude_session, write_pi_store)

IDS = ["9", "10", "11", "19"]


def add_rows(add):
    add("9", "list a cwd's pi sessions (index.json)", "s", ">=", 10, "base/fen",
        "pi's own SessionManager.list(cwd), in-process time of a fresh node")
    add("10", "cold cat conversation.json, Claude", "s", "<=", 1.5, "fen/base",
        "cold cat of the Claude Code transcript on the native fs")
    add("11", "daemon VmHWM, 10k pi listed + first pass", "MB", "<=", 150, "value", "")
    add("19", "pi 10k: cold fen-fs list --json --cwd", "s", ">=", 2, "base/fen",
        "pi's own SessionManager.list(cwd), cold, in-process time of a fresh node")


# ------------------------------------------------------- other agents' stores

PI_DIR = ROOT / "target" / "pi-agent"
PI_LIST_JS = r"""
const { pathToFileURL } = require("node:url");
(async () => {
  const pkg = process.env.PI_DIR + "/node_modules/@mariozechner/pi-coding-agent/dist/index.js";
  const { SessionManager } = await import(pathToFileURL(pkg).href);
  const t0 = performance.now();
  const list = await SessionManager.list(process.argv[1]);
  const t1 = performance.now();
  console.log(JSON.stringify({ ms: t1 - t0, n: list.length }));
})();
"""


def pi_available():
    """None when pi's package is there (installed with scripts/install-pi when it is
    missing), else why not."""
    pkg = PI_DIR / "node_modules/@mariozechner/pi-coding-agent/package.json"
    if pkg.exists():
        return None
    if shutil.which("node") is None:
        return "node is not installed (pi is the baseline): apt-get install nodejs npm"
    log("%s missing: running scripts/install-pi" % pkg)
    try:
        r = subprocess.run([str(ROOT / "scripts" / "install-pi")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "pi is not installed and scripts/install-pi failed: %s" % e
    if pkg.exists():
        return None
    return "pi is not installed and scripts/install-pi failed: %s" % (
        r.stdout.strip()[-300:] or "exit %d" % r.returncode)


def scenario_9_11(P, R, rows, want):
    r9, r11 = rows["9"], rows["11"]
    cwd = "/bench/pi-project"
    params = {"sessions": P["pi_sessions"], "messages": P["pi_messages"], "seed": P["seed"],
              "mode": P["mode"]}
    root, _ = cached_data("pi", params, lambda out: write_pi_store(
        out, cwd, P["pi_sessions"], P["pi_messages"], P["seed"]))
    pi_files = list((root / "sessions").glob("*/*.jsonl"))
    man = {"total_bytes": sum(f.stat().st_size for f in pi_files)}
    if len(pi_files) != P["pi_sessions"]:
        raise BenchError("pi data: %d files, expected %d" % (len(pi_files), P["pi_sessions"]))
    # pi is the baseline of 9 and 19: installed when missing, else those two say
    # SKIPPED (their fen-fs side still measured) and 11 runs.
    pi_missing = pi_available()
    if pi_missing:
        r9.skip(pi_missing)
        rows["19"].skip(pi_missing)
    store = WORK / "pi-store"
    store.mkdir(mode=0o700)
    ns = "--" + cwd.strip("/").replace("/", "-") + "--"
    env = dict(os.environ, PI_DIR=str(PI_DIR), PI_CODING_AGENT_DIR=str(root), HOME=str(WORK))
    m = Mount(store, "always", extra=["--source", "pi=%s" % root])
    try:
        m.up()
        first = cat(MNT / mount_name(ns) / "index.json")
        n = len(json.loads((MNT / mount_name(ns) / "index.json").read_bytes()))
        if n != P["pi_sessions"]:
            r9.checks.append("index.json lists %d sessions, pi wrote %d" % (n, P["pi_sessions"]))
        for _ in range(R):
            r9.fen_samples.append(cat(MNT / mount_name(ns) / "index.json"))
            if pi_missing:
                continue
            out = subprocess.run(["node", "-e", PI_LIST_JS, cwd], env=env, capture_output=True,
                                 text=True, check=True)
            res = json.loads(out.stdout)
            if res["n"] != P["pi_sessions"]:
                r9.checks.append("pi listed %d sessions" % res["n"])
            r9.base_samples.append(res["ms"] / 1000)
        r9.notes.append("%d pi sessions, %.0f MB; first cat index.json after mount (initial "
                        "index built in the background) %s; fen side is a whole `cat` process" % (
                            P["pi_sessions"], man["total_bytes"] / 1e6, fmt_time(first)))
        if "11" in want:
            # Throughout the first pass: every session kept and indexed.
            before = kb_field(m.status(), "VmHWM") / 1024
            waited, top, finished = wait_first_pass(m, 900)
            r11.fen_samples.append(kb_field(m.status(), "VmHWM") / 1024)
            r11.notes.append("after indexing and listing %d pi sessions; %s" % (
                P["pi_sessions"], first_pass_note(waited, top, finished, before)))
    finally:
        m.down()
    if "19" in want:
        # No mount: a fresh `fen-fs list` process over the store whose caches the mount
        # above left, and a fresh node running pi's list, each after the page cache is
        # dropped.
        r19 = rows["19"]
        argv = [str(H.BIN), "list", "--json", "--cwd", cwd, "--store", str(store), "--no-detect",
                "--source", "pi=%s" % root]
        out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
        if len(json.loads(out)) != P["pi_sessions"]:
            r19.checks.append("fen-fs list printed %d sessions, pi wrote %d" % (
                len(json.loads(out)), P["pi_sessions"]))
        cold = True
        warm = []
        for _ in range(R):
            warm.append(run_timed(argv))
            cold = drop_caches() and cold
            r19.fen_samples.append(run_timed(argv))
            if pi_missing:
                continue
            cold = drop_caches() and cold
            out = subprocess.run(["node", "-e", PI_LIST_JS, cwd], env=env, capture_output=True,
                                 text=True, check=True)
            r19.base_samples.append(json.loads(out.stdout)["ms"] / 1000)
        r19.notes.append("fen side is a whole `fen-fs list` process; %s; warm: %s (pi warm: row 9's "
                         "baseline)" % ("page cache dropped before each side" if cold else
                                        "WARM (drop_caches refused)", fmt_time(median(warm))))


def scenario_10(P, R, rows):
    r10 = rows["10"]
    cwd = "/bench/claude-project"
    root, _ = cached_data("claude", {"bytes": P["claude_bytes"], "seed": P["seed"], "mode": P["mode"]},
                          lambda out: write_claude_session(out, cwd, P["claude_bytes"], P["seed"]))
    raw = next((root / "projects").glob("*/*.jsonl"))
    man = {"total_bytes": raw.stat().st_size}
    store = WORK / "claude-store"
    store.mkdir(mode=0o700)
    m = Mount(store, "always", extra=["--source", "claude=%s" % root])
    ns = "--" + cwd.strip("/").replace("/", "-") + "--"
    cold = True
    try:
        # A first mount builds and persists the index; each measured read is after a remount.
        m.up()
        sessions = [d for d in os.listdir(MNT / mount_name(ns)) if d not in ("latest", "index.json")]
        conv = MNT / mount_name(ns) / sessions[0] / "conversation.json"
        expect = json.loads(conv.read_bytes())
        m.down()
        for _ in range(R):
            cold = drop_caches() and cold
            r10.base_samples.append(cat(raw))
            cold = drop_caches() and cold
            m.up()
            r10.fen_samples.append(cat(conv))
            m.down()
        m.up()
        if json.loads(conv.read_bytes()) != expect:
            r10.checks.append("conversation.json differs between mounts")
        r10.notes.append("%.0f MB transcript, %d messages; %s; each read right after a remount" % (
            man["total_bytes"] / 1e6, len(expect), "page cache dropped" if cold else "WARM (drop_caches refused)"))
    finally:
        m.down()


SCENARIOS = [
    (["9", "11", "19"], lambda B, P, R_cheap, R_costly, rows, want: scenario_9_11(P, R_cheap, rows, want)),
    (["10"], lambda B, P, R_cheap, R_costly, rows, want: scenario_10(P, R_costly, rows)),
]
