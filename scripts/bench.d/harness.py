"""The shared harness of scripts/bench: paths, mounts, timing helpers, the Row of the
table, and the generated data every group of rows draws on (cached under
target/bench/cache/).

A group of rows is a file beside this one, `NN-name.py` (NN orders the table); the
entry point scripts/bench loads every such file. A group defines

  IDS = [...]                  its rows' ids, in the order of the table
  add_rows(add)                declares each row: add(id, title, unit, op, target,
                               ratio_def, baseline_desc) (see Row)
  scenario(B, P, R_cheap, R_costly, rows, want)
                               measures them; B is this module, P the parameters
                               (PARAMS[mode] plus seed and mode), R_* the repeats,
                               rows the Row of every id, want the ids asked for

and, when parts of it should fail separately, SCENARIOS = [(ids, fn), ...] with fn
taking the same arguments as scenario (the default is [(IDS, scenario)]). A scenario
that raises marks its rows ERROR and the run goes on; a row it cannot run on this
machine (a tool missing and not installable) it marks with row.skip(reason): the
table says SKIPPED and the exit status stays 0.
"""

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gen_sessions as gen  # noqa: E402,F401 (the groups use it)
import gen_history  # noqa: E402

# BIN is set by scripts/bench (--debug: target/debug/fen-fs): read it as B.BIN, never
# copy it at import time.
BIN = ROOT / "target" / "release" / "fen-fs"
BENCH = ROOT / "target" / "bench"
WORK = BENCH / "work"
CACHE = BENCH / "cache"
MNT = WORK / "mnt"
LOGS = WORK / "logs"

PARAMS = {
    "full": dict(
        s1_entries=10000, s1_max_bytes=8192,
        s2_per_writer=400, s2_writers=8, s2_single=1000,
        big_bytes=100 * 1000 * 1000,
        meta_entries=1_000_000,
        many_sessions=10_000, many_mean_bytes=100_000,
        pi_sessions=10_000, pi_messages=20, claude_bytes=100 * 1000 * 1000,
        history_scale="full", history_others=100,
        rep_cheap=5, rep_costly=5,
    ),
    "quick": dict(
        s1_entries=2000, s1_max_bytes=8192,
        s2_per_writer=40, s2_writers=8, s2_single=100,
        big_bytes=2 * 1000 * 1000,
        meta_entries=20_000,
        many_sessions=200, many_mean_bytes=100_000,
        pi_sessions=300, pi_messages=20, claude_bytes=5 * 1000 * 1000,
        history_scale="quick", history_others=20,
        rep_cheap=3, rep_costly=1,
    ),
}

class BenchError(Exception):
    pass


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- mounts

def _unescape_mount(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and s[i + 1:i + 4].isdigit():
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mounted_paths():
    with open("/proc/mounts") as f:
        return [_unescape_mount(line.split()[1]) for line in f if len(line.split()) > 2]


def is_mounted(path):
    return str(path) in mounted_paths()


def find_daemon_pid(mp):
    needle = b"mount\0" + str(mp).encode() + b"\0--foreground"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if needle in f.read():
                    return int(name)
        except OSError:
            continue
    return None


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def kb_field(status, key):
    v = status.get(key, "0 kB").split()
    return int(v[0]) if v else 0


def keeping_state(m):
    """What `fen-fs status --json` says of the mounted daemon's keeping ("" if none)."""
    r = subprocess.run([str(BIN), "status", "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    for line in r.stdout.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if v.get("mountpoint") == str(m.mp):
            return v.get("keeping") or ""
    return ""


def index_complete(m):
    """Whether the mount's search index says it is complete (a query's hits.jsonl
    begins with {"index":...} while it is not)."""
    try:
        with open(m.mp / "search" / "zzzzfirstpassq" / "hits.jsonl") as f:
            return not f.readline().startswith('{"index"')
    except OSError:
        return False


def first_pass_running(m, search=True):
    """Whether the daemon's first pass (keeping every session, indexing every
    session) is still under way."""
    k = keeping_state(m)
    keeping = k.startswith("on:") or k in ("starting", "waiting for the first index")
    return keeping or (search and not index_complete(m))


def wait_first_pass(m, limit, search=True):
    """Waits until the daemon's first pass is over (at most `limit` s), sampling
    VmRSS twice a second: (seconds waited, highest VmRSS sampled in MB, finished)."""
    t0 = time.perf_counter()
    top = 0.0
    while True:
        top = max(top, kb_field(m.status(), "VmRSS") / 1024)
        if not first_pass_running(m, search):
            return time.perf_counter() - t0, top, True
        if time.perf_counter() - t0 > limit:
            return time.perf_counter() - t0, top, False
        time.sleep(0.5)


def first_pass_note(waited, top, finished, hwm_before):
    return ("VmHWM %.1f MB before the first pass was waited for; then %s (VmRSS sampled "
            "every 0.5 s: at most %.1f MB)" % (
                hwm_before, ("its end waited for, %s" % fmt_time(waited)) if finished else
                ("NOT over after %s: the row stops there" % fmt_time(waited)), top))


class Mount:
    seq = 0
    active = []

    def __init__(self, store, fsync="always", mp=MNT, extra=()):
        self.store = Path(store)
        self.fsync = fsync
        self.extra = list(extra)
        self.mp = Path(mp)
        self.pid = None
        self.mount_time = None
        self.log = None

    def up(self):
        Mount.seq += 1
        self.log = LOGS / ("daemon-%02d.log" % Mount.seq)
        self.mp.mkdir(parents=True, exist_ok=True)
        if is_mounted(self.mp):
            raise BenchError("%s is already mounted" % self.mp)
        t0 = time.perf_counter()
        r = subprocess.run(
            [str(BIN), "mount", str(self.mp), "--store", str(self.store), "--fsync", self.fsync,
             "--log-file", str(self.log), "--no-detect"] + self.extra,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.mount_time = time.perf_counter() - t0
        if r.returncode != 0:
            raise BenchError("fen-fs mount exited %d: %s%s" % (
                r.returncode, r.stderr.strip()[-500:], self._log_tail()))
        Mount.active.append(self)
        if not is_mounted(self.mp):
            raise BenchError("fen-fs mount returned 0 but %s is not in /proc/mounts" % self.mp)
        self.pid = find_daemon_pid(self.mp)
        return self

    def _log_tail(self):
        try:
            with open(self.log, errors="replace") as f:
                tail = f.read()[-800:]
            return ("\n  daemon log: " + tail) if tail.strip() else ""
        except OSError:
            return ""

    def status(self):
        if self.pid is None:
            raise BenchError("daemon pid not found (no /proc/*/cmdline with mount\\0%s\\0--foreground)" % self.mp)
        return proc_status(self.pid)

    def down(self):
        if self not in Mount.active:
            return
        Mount.active.remove(self)
        err = None
        r = subprocess.run([str(BIN), "umount", str(self.mp)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        if r.returncode != 0:
            err = "fen-fs umount exited %d: %s" % (r.returncode, r.stderr.strip()[-300:])
        deadline = time.time() + 60
        while time.time() < deadline:
            alive = self.pid is not None and os.path.exists("/proc/%d" % self.pid) and \
                find_daemon_pid(self.mp) == self.pid
            if not is_mounted(self.mp) and not alive:
                break
            time.sleep(0.05)
        else:
            if is_mounted(self.mp):
                subprocess.run(["umount", "-l", str(self.mp)], stderr=subprocess.DEVNULL)
                err = (err or "") + " mount still present 60 s after umount (lazy-unmounted)"
            else:
                err = (err or "") + " daemon %s still running 60 s after umount" % self.pid
        if err:
            raise BenchError(err.strip())

    @classmethod
    def down_all(cls):
        for m in list(cls.active):
            try:
                m.down()
            except Exception as e:  # noqa: BLE001
                log("unmount problem: %s" % e)


def clear_stale_mounts():
    """Unmount leftovers of an earlier, killed run (only paths under our work dir)."""
    prefix = str(WORK) + "/"
    for p in mounted_paths():
        if p.startswith(prefix) or p == str(WORK):
            log("clearing leftover mount %s" % p)
            subprocess.run([str(BIN), "umount", p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if is_mounted(p):
                subprocess.run(["umount", "-l", p], stderr=subprocess.DEVNULL)


# ------------------------------------------------------------------------ helpers

def run_timed(argv, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise BenchError("%s exited %d: %s" % (" ".join(map(str, argv)), r.returncode,
                                               r.stderr.decode(errors="replace").strip()[-300:]))
    return dt


def cat(path):
    return run_timed(["cat", str(path)])


LS_ENV = dict(os.environ, LC_ALL="C")


def ls_l(path):
    return run_timed(["ls", "-l", str(path)], env=LS_ENV)


def drop_caches():
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def ctl_call(path, line):
    fd = os.open(str(path), os.O_RDWR)
    try:
        os.write(fd, line)
        reply = os.read(fd, 1 << 16).decode(errors="replace")
    finally:
        os.close(fd)
    if not reply.startswith("ok"):
        raise BenchError("ctl %s replied %r" % (path, reply[:200]))
    return reply.strip()


def mount_name(ns):
    """The mount folder of store namespace `ns` (fen-fs's naming::mount_name): the slug
    without its `--` wrapping; `_` in front of an empty name or one starting - or _."""
    body = ns[2:-2] if len(ns) >= 4 and ns.startswith("--") and ns.endswith("--") else ns
    return "_" + body if body == "" or body[0] in "-_" else body


def create_session(cwd, content="bench session"):
    line = (json.dumps({"cwd": cwd, "role": "user", "content": content}) + "\n").encode()
    reply = ctl_call(MNT / "ctl", line)
    parts = reply.split()
    if len(parts) < 3 or "/" not in parts[2]:
        raise BenchError("unexpected root ctl reply %r" % reply)
    ns, d = parts[2].split("/", 1)
    return MNT / ns / d


def read_meta(session_dir):
    with open(session_dir / "meta.json", "rb") as f:
        return json.loads(f.read())


def median(xs):
    return statistics.median(xs) if xs else None


def warm_files(paths):
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(8 << 20)
                if not b:
                    break
                total += len(b)
    return total


def fmt_rate(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "%.2fM ent/s" % (v / 1e6)
    if v >= 1e4:
        return "%.1fk ent/s" % (v / 1e3)
    if v >= 1e3:
        return "%.2fk ent/s" % (v / 1e3)
    return "%.0f ent/s" % v


def fmt_time(v):
    if v is None:
        return "-"
    if v >= 10:
        return "%.1f s" % v
    if v >= 1:
        return "%.2f s" % v
    if v >= 0.01:
        return "%.0f ms" % (v * 1e3)
    if v >= 0.001:
        return "%.1f ms" % (v * 1e3)
    return "%.0f us" % (v * 1e6)


FORMATTERS = {
    "entries/s": fmt_rate,
    "s": fmt_time,
    "MB/s": lambda v: "-" if v is None else "%.0f MB/s" % v,
    "MB": lambda v: "-" if v is None else "%.1f MB" % v,
    "%": lambda v: "-" if v is None else "%.1f %%" % v,
    "count": lambda v: "-" if v is None else "%d" % v,
}


class Row:
    def __init__(self, rid, title, unit, op, target, ratio_def, baseline_desc=""):
        self.id = rid
        self.title = title
        self.unit = unit
        self.op = op            # ">=" or "<="
        self.target = target
        self.ratio_def = ratio_def  # "fen/base", "base/fen" or "value"
        self.baseline_desc = baseline_desc
        self.fen_samples = []
        self.base_samples = []
        self.notes = []
        self.checks = []        # correctness problems seen while measuring
        self.error = None
        self.skipped = None     # why the row could not run here (a tool missing)

    @property
    def fen(self):
        return median(self.fen_samples)

    @property
    def base(self):
        return median(self.base_samples)

    @property
    def ratio(self):
        if self.ratio_def == "value":
            return self.fen
        if self.fen is None or self.base is None:
            return None
        if self.ratio_def == "fen/base":
            return self.fen / self.base if self.base else None
        return self.base / self.fen if self.fen else None

    def skip(self, reason):
        """This row cannot run on this machine: the table says SKIPPED and why."""
        self.skipped = reason

    @property
    def status(self):
        if self.error:
            return "ERROR"
        if self.skipped:
            return "SKIPPED"
        r = self.ratio
        if r is None:
            return "ERROR"
        ok = r >= self.target if self.op == ">=" else r <= self.target
        return "pass" if ok else "FAIL"

    def target_text(self):
        if self.ratio_def == "value":
            return "%s %g %s" % (self.op, self.target, self.unit)
        what = "rate" if self.unit == "entries/s" else "time"
        if self.ratio_def == "base/fen":
            return "%s %gx faster" % (self.op, self.target)
        return "%s %gx (fen/base %s)" % (self.op, self.target, what)

    def cells(self):
        f = FORMATTERS[self.unit]
        ratio = self.ratio
        if (self.error or self.skipped) and not self.fen_samples:
            return [self.id, self.title, "-", "-", "-", self.target_text(), self.status]
        rtxt = "-" if ratio is None else (
            f(ratio) if self.ratio_def == "value" else "%.2fx" % ratio)
        return [self.id, self.title, f(self.fen),
                f(self.base) if self.base_samples else "-", rtxt, self.target_text(), self.status]

    def to_json(self):
        return {
            "id": self.id, "scenario": self.title, "unit": self.unit,
            "fen": self.fen, "baseline": self.base if self.base_samples else None,
            "baseline_desc": self.baseline_desc,
            "ratio": self.ratio, "ratio_definition": self.ratio_def,
            "target": {"op": self.op, "value": self.target, "text": self.target_text()},
            "status": self.status, "error": self.error, "skipped": self.skipped,
            "samples": {"fen": self.fen_samples, "baseline": self.base_samples},
            "notes": self.notes, "checks": self.checks,
        }


# ------------------------------------------------------------------------ data

def _key(kind, params):
    h = hashlib.sha256()
    h.update(json.dumps([kind, params], sort_keys=True).encode())
    h.update((ROOT / "scripts" / "gen_sessions.py").read_bytes())
    return h.hexdigest()[:12]


def cached_data(kind, params, build):
    """A generated store under CACHE/<kind>-<key>/store, regenerated when its manifest
    does not match (missing/changed .jsonl files). Returns (store_dir, manifest)."""
    kind = "%s-%s" % (kind, params.get("mode", "x"))  # quick and full data coexist
    key = _key(kind, params)
    base = CACHE / ("%s-%s" % (kind, key))
    store = base / "store"
    man_path = base / "manifest.json"
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(kind + "-*"):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    if man_path.exists():
        try:
            man = json.loads(man_path.read_text())
            ok = True
            seen = 0
            for ns in os.scandir(store):
                # only namespaces: a mounted daemon may keep its own cache in the store
                if not ns.is_dir(follow_symlinks=False) or not ns.name.startswith("--"):
                    continue
                for f in os.scandir(ns.path):
                    if f.name.endswith(".jsonl"):
                        seen += 1
                        rel = ns.name + "/" + f.name
                        if man["files"].get(rel) != f.stat(follow_symlinks=False).st_size:
                            ok = False
                            break
            if ok and seen == len(man["files"]):
                return store, man
            log("cached %s data changed; regenerating" % kind)
        except (OSError, ValueError, KeyError):
            log("cached %s data unreadable; regenerating" % kind)
    if base.exists():
        shutil.rmtree(base)
    store.mkdir(parents=True, mode=0o700)
    t0 = time.time()
    log("generating %s data %s ..." % (kind, params))
    build(str(store))
    files = {}
    total = 0
    for ns in sorted(os.listdir(store)):
        for name in sorted(os.listdir(store / ns)):
            if name.endswith(".jsonl"):
                size = (store / ns / name).stat().st_size
                files[ns + "/" + name] = size
                total += size
    man = {"params": params, "kind": kind, "files": files, "total_bytes": total,
           "generated_in_s": round(time.time() - t0, 2)}
    man_path.write_text(json.dumps(man))
    log("generated %s: %d files, %.1f MB in %.1f s" % (kind, len(files), total / 1e6, time.time() - t0))
    return store, man


def copy_store(src, dst):
    """Copy a cached store into the work dir (for scenarios that append to it)."""
    for ns in os.listdir(src):
        if not ns.startswith("--"):
            continue
        (dst / ns).mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in os.listdir(src / ns):
            if name.endswith(".jsonl"):
                shutil.copyfile(src / ns / name, dst / ns / name)
                os.chmod(dst / ns / name, 0o600)
    for ns in os.listdir(dst):
        files = [f for f in os.listdir(dst / ns) if f.endswith(".jsonl")]
        if files:
            return dst / ns / files[0]
    raise BenchError("empty store copy %s" % src)


def clean_store_caches(store):
    """Delete everything in the store that is not a namespace's *.jsonl file."""
    removed = []
    for e in os.scandir(store):
        is_ns = e.is_dir(follow_symlinks=False) and e.name.startswith("--") and e.name.endswith("--")
        if not is_ns:
            removed.append(e.name)
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            continue
        for f in os.scandir(e.path):
            if f.is_file(follow_symlinks=False) and f.name.endswith(".jsonl"):
                continue
            removed.append(e.name + "/" + f.name)
            if f.is_dir(follow_symlinks=False):
                shutil.rmtree(f.path)
            else:
                os.unlink(f.path)
    return removed


# ------------------------------------------------------ a heavy user's history

def history_data(P):
    """The generated history (scripts/gen_history.py) under CACHE/history-<scale>-<key>/,
    regenerated when the generator or its parameters change, or a file's size differs
    from its manifest (an interrupted append scenario leaves the big session longer)."""
    scale = P["history_scale"]
    h = hashlib.sha256()
    h.update(json.dumps([scale, P["seed"]]).encode())
    h.update((ROOT / "scripts" / "gen_history.py").read_bytes())
    base = CACHE / ("history-%s-%s" % (scale, h.hexdigest()[:12]))
    root = base / "history"
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob("history-%s-*" % scale):
        if old != base and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    man_path = root / "manifest.json"
    if man_path.exists():
        try:
            man = json.loads(man_path.read_text())
            if all((root / rel).stat().st_size == size for rel, size in man["sizes"].items()):
                return root, man
            log("cached history changed; regenerating")
        except (OSError, ValueError, KeyError):
            log("cached history unreadable; regenerating")
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    t0 = time.time()
    log("generating the %s history (scripts/gen_history.py) ..." % scale)
    man = gen_history.generate(str(root), scale, P["seed"])
    log("generated the history: %d files, %.1f MB in %.1f s" % (
        sum(man["files"].values()), man["total_bytes"] / 1e6, time.time() - t0))
    return root, man


def history_sources(root):
    return ["--source", "claude=%s" % (root / "claude"), "--source", "codex=%s" % (root / "codex"),
            "--source", "pi=%s" % (root / "pi")]


def slug_of(cwd):
    s = cwd[1:] if cwd.startswith("/") else cwd
    for c in "/\\:":
        s = s.replace(c, "-")
    return "--" + s + "--"


def ls_and_indexes():
    """`ls` of the mount root, then one `cat` of every namespace's index.json; returns
    the namespaces' mount names."""
    r = subprocess.run(["ls", str(MNT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=LS_ENV)
    if r.returncode != 0:
        raise BenchError("ls %s: %s" % (MNT, r.stderr.decode(errors="replace")[-300:]))
    names = [n for n in r.stdout.decode().split("\n") if n and n not in ("ctl", "search", "usage")]
    run_timed(["cat"] + [str(MNT / n / "index.json") for n in names])
    return names


def meta_files():
    """Every `meta.json` under the mount."""
    out = []
    for d, _, names in os.walk(MNT):
        if "meta.json" in names:
            out.append(os.path.join(d, "meta.json"))
    return out


def wait_seen(path, word, limit):
    """Seconds until `word` is in the file at `path` (read whole each time), or None
    after `limit` seconds."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        try:
            with open(path, "rb") as f:
                if word in f.read():
                    return time.perf_counter() - t0
        except OSError:
            pass
        time.sleep(0.01)
    return None


def first_mount_rows(store, sources, files, time_row, rss_row, repeats):
    """The first-index rows of an agents' group: a cold `cat` of `files` against a
    first mount (its caches cleaned) + `ls` + every `index.json`, `repeats` times;
    after the first, every `meta.json` read and the daemon's VmHWM into `rss_row`."""
    store.mkdir(mode=0o700)
    m = Mount(store, "no", extra=sources)
    try:
        for i in range(repeats):
            clean_store_caches(store)
            drop_caches()
            time_row.base_samples.append(run_timed(["cat"] + files))
            drop_caches()
            t0 = time.perf_counter()
            m.up()
            ls_and_indexes()
            time_row.fen_samples.append(time.perf_counter() - t0)
            if i == 0:
                for p in meta_files():
                    with open(p, "rb") as f:
                        f.read()
                rss_row.fen_samples.append(kb_field(m.status(), "VmHWM") / 1024)
            m.down()
    finally:
        m.down()


def claude_append(path, parent, marker, cwd, sid):
    """Appends one user entry to a Claude Code transcript as the CLI would (chained to
    `parent`); returns its uuid."""
    uid = "%08x-%04x-4%03x-8%03x-%012x" % tuple(
        int.from_bytes(os.urandom(8), "big") % m for m in (1 << 32, 1 << 16, 1 << 12, 1 << 12, 1 << 48))
    line = json.dumps({"parentUuid": parent, "isSidechain": False, "type": "user",
                       "message": {"role": "user", "content": marker}, "uuid": uid,
                       "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                       "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.1.114"},
                      separators=(",", ":")) + "\n"
    with open(path, "a") as f:
        f.write(line)
    return uid


def last_uuid(path):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (1 << 20)))
        tail = f.read()
    for line in reversed(tail.split(b"\n")):
        try:
            u = json.loads(line).get("uuid")
        except ValueError:
            continue
        if u:
            return u
    raise BenchError("no uuid in the last MiB of %s" % path)


def conv_ends_with(conv, marker):
    """Opens conversation.json (a fresh snapshot) and checks its last bytes."""
    fd = os.open(str(conv), os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 4096, max(0, size - 4096))
    finally:
        os.close(fd)
    return marker.encode() in tail




# ------------------------------------------------- other agents' stores (9-11, 19, ...)

def write_pi_store(out, cwd, sessions, messages, seed):
    """pi v3 session files of one cwd, laid out as pi lays them out."""
    import random
    rnd = random.Random(seed)
    folder = Path(out) / "sessions" / ("--" + cwd.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    total = 0
    base = 1767225600000  # 2026-01-01
    for i in range(sessions):
        t = base + i * 60000
        sid = "%08x-0000-4000-8000-%012x" % (seed, i)
        iso = lambda ms: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + ".%03dZ" % (ms % 1000)
        lines = [json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": iso(t), "cwd": cwd})]
        parent = None
        for j in range(messages):
            eid = "%08x" % rnd.getrandbits(32)
            role = "user" if j % 2 == 0 else "assistant"
            text = " ".join("word%d" % rnd.randrange(1000) for _ in range(rnd.randrange(20, 120)))
            msg = {"role": role, "content": text, "timestamp": t + j} if role == "user" else {
                "role": role, "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
                "provider": "anthropic", "model": "claude-x", "stopReason": "stop", "timestamp": t + j,
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}}
            lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent,
                                     "timestamp": iso(t + j), "message": msg}))
            parent = eid
        data = ("\n".join(lines) + "\n").encode()
        name = iso(t).replace(":", "-").replace(".", "-") + "_" + sid + ".jsonl"
        (folder / name).write_bytes(data)
        total += len(data)
    return {"files": sessions, "total_bytes": total}


def write_claude_session(out, cwd, target_bytes, seed):
    """One Claude Code transcript of about target_bytes: a chain of user/assistant turns."""
    import random
    rnd = random.Random(seed)
    slug = "".join(c if c.isalnum() else "-" for c in cwd)
    folder = Path(out) / "projects" / slug
    folder.mkdir(parents=True)
    sid = "%08x-1111-4111-8111-%012x" % (seed, 1)
    path = folder / (sid + ".jsonl")
    total = 0
    parent = None
    i = 0
    with open(path, "w") as f:
        while total < target_bytes:
            uid = "%08x-2222-4222-8222-%012x" % (seed, i)
            user = i % 2 == 0
            text = " ".join("w%d" % rnd.randrange(10000) for _ in range(rnd.randrange(50, 400)))
            msg = {"role": "user", "content": text} if user else {
                "id": "msg_%d" % i, "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}}
            line = json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                               "cwd": cwd, "sessionId": sid, "version": "2.1.0",
                               "type": "user" if user else "assistant", "message": msg, "uuid": uid,
                               "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (i // 60 % 60, i % 60)}) + "\n"
            f.write(line)
            total += len(line)
            parent = uid
            i += 1
    return {"files": [str(path.relative_to(out))], "total_bytes": total}


# ---------------------------------------- the search history (rows 20-25, M1-M2)

COMMON_WORDS = ["function", "error", "config", "session", "return"]


def search_history(mode):
    """The generated history the search and MCP rows query (scripts/gen_history.py;
    cached under CACHE, regenerated when the generator changes or a file is missing):
    (dir, manifest)."""
    gen_py = ROOT / "scripts" / "gen_history.py"
    key = hashlib.sha256(gen_py.read_bytes() + mode.encode()).hexdigest()[:12]
    base = CACHE / ("search-history-%s-%s" % (mode, key))
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob("search-history-%s-*" % mode):
        if old != base:
            shutil.rmtree(old, ignore_errors=True)
    man = base / "manifest.json"
    if man.exists():
        m = json.loads(man.read_text())
        if all((base / f).exists() for f in m["sizes"]):
            return base, m
        shutil.rmtree(base)
    log("generating the %s history (scripts/gen_history.py) ..." % mode)
    r = subprocess.run(["python3", str(gen_py), str(base), "--scale", mode],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise BenchError("gen_history.py failed: %s" % r.stderr[-500:])
    return base, json.loads(man.read_text())


def source_args(h):
    out = []
    for agent in ("claude", "codex", "pi"):
        out += ["--source", "%s=%s" % (agent, h / agent)]
    return out


def search_index_state(mp):
    """(complete, indexed, sessions) from a query's hits.jsonl."""
    with open(mp / "search" / "zzzzstatusq" / "hits.jsonl") as f:
        first = f.readline()
    if first.startswith('{"index"'):
        i = json.loads(first)["index"]
        return False, i["indexed"], i["sessions"]
    return True, None, None


def wait_search_complete(mp, limit):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        if search_index_state(mp)[0]:
            return time.perf_counter()
        time.sleep(0.05)
    raise BenchError("the search index was not complete after %d s" % limit)


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(p / 100 * (len(xs) - 1)))))
    return xs[k]


# ------------------------------------------------------------- tools a row needs

def agent_tool(name, version, rel_bin):
    """The path of an npm tool scripts/install-agents installs (NAME-VERSION under
    target/agents, or FEN_FS_AGENTS_DIR), installing it first when it is missing.
    Returns (path, None), or (None, why) when it is not there and could not be
    installed (no npm, no network): the caller marks its rows SKIPPED."""
    base = Path(os.environ.get("FEN_FS_AGENTS_DIR") or ROOT / "target" / "agents")
    path = base / ("%s-%s" % (name, version)) / rel_bin
    if path.exists():
        return path, None
    log("%s missing: running scripts/install-agents %s" % (path, name))
    try:
        r = subprocess.run([str(ROOT / "scripts" / "install-agents"), name], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s %s is not installed and scripts/install-agents %s failed: %s" % (
            name, version, name, e)
    if path.exists():
        return path, None
    return None, "%s %s is not installed and scripts/install-agents %s failed: %s" % (
        name, version, name, r.stdout.strip()[-300:] or "exit %d" % r.returncode)
