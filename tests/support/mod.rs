//! Shared harness for mounted tests: a temp store mounted through the real `fen-fs`
//! binary, unmounted on drop. Without FUSE the tests print SKIPPED loudly and pass,
//! unless FEN_FS_REQUIRE_FUSE=1 (CI), where they fail instead.
#![allow(dead_code)]

pub mod mock_model;
pub mod syncthing;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `fen-fs` with other agents' roots pointed at a folder that does not exist, so no
/// test ever reads this machine's real agent history (tests that want other agents'
/// sessions pass `--source KIND=DIR` or set the variables themselves).
pub fn fen_fs() -> Command {
    let mut cmd = Command::new(bin());
    for var in [
        "PI_CODING_AGENT_DIR",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "COPILOT_HOME",
        "OPENCLAW_STATE_DIR",
        // Cursor's root is ~/.cursor, with no variable of its own.
        "HOME",
    ] {
        cmd.env(var, "/nonexistent/fen-fs-tests");
    }
    // OpenCode's data folder ($XDG_DATA_HOME/opencode) and its $OPENCODE_DB.
    cmd.env("XDG_DATA_HOME", "/nonexistent/fen-fs-tests");
    cmd.env("OPENCODE_DB", "/nonexistent/fen-fs-tests/opencode.db");
    // Kilo's ($XDG_DATA_HOME/kilo) and its $KILO_DB; Cline's data folder; VS Code's
    // and its forks' user folders ($XDG_CONFIG_HOME/<product>/User: Roo Code,
    // Copilot Chat, Cursor).
    cmd.env("KILO_DB", "/nonexistent/fen-fs-tests/kilo.db");
    cmd.env("CLINE_DIR", "/nonexistent/fen-fs-tests");
    cmd.env("CLINE_DATA_DIR", "/nonexistent/fen-fs-tests");
    cmd.env("XDG_CONFIG_HOME", "/nonexistent/fen-fs-tests");
    // Nor its state folder: a daemon without --log-file logs there by default.
    let state = std::env::temp_dir().join(format!("fen-fs-tests-state-{}", std::process::id()));
    // Nor its cache folder: usage and resume without a store keep their caches there.
    cmd.env("XDG_CACHE_HOME", state.join("cache"));
    cmd.env("XDG_STATE_HOME", state);
    cmd
}

/// `fen-fs ARGS --store STORE`, run to completion.
pub fn fen_on(store: &Path, args: &[&str]) -> Output {
    fen_fs()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .expect("run fen-fs")
}

/// `sh -c script sh ARGS` in `cwd`: the script gets `args` as `$1`, `$2`, ….
pub fn sh_in(cwd: &Path, script: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run sh")
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fen-fs")
}

/// Whether this machine can mount FUSE as this user; if not, SKIPPED (or a panic
/// when FEN_FS_REQUIRE_FUSE=1).
pub fn fuse_available(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = Path::new("/dev/fuse").exists() && (root || which("fusermount3"));
    if !ok {
        if std::env::var("FEN_FS_REQUIRE_FUSE").as_deref() == Ok("1") {
            panic!(
                "FUSE is required (FEN_FS_REQUIRE_FUSE=1) but /dev/fuse or permission is missing"
            );
        }
        eprintln!(
            "\n*** SKIPPED {test}: FUSE not available (no /dev/fuse, or not root and no fusermount3) ***\n"
        );
    }
    ok
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).exists()))
        .unwrap_or(false)
}

pub struct Mount {
    pub tmp: tempfile::TempDir,
    pub mp: PathBuf,
    pub store: PathBuf,
    pub args: Vec<String>,
    /// The daemon's environment beyond `fen_fs()`'s (e.g. `FEN_FS_USAGE=off`).
    pub env: Vec<(String, String)>,
}

impl Mount {
    /// Mounts a fresh temp store (`None`: FUSE unavailable, test skipped).
    pub fn new(test: &str) -> Option<Mount> {
        Self::with_args(test, &[])
    }

    /// As `new`, with extra `fen-fs mount` arguments (e.g. `["--fsync", "no"]`).
    pub fn with_args(test: &str, args: &[&str]) -> Option<Mount> {
        if !fuse_available(test) {
            return None;
        }
        let m = Mount::unmounted(args);
        m.mount();
        Some(m)
    }

    /// A fresh temp store and mount point, not mounted yet (for tests that mount
    /// their own way); `mount()` mounts it with `args`.
    pub fn unmounted(args: &[&str]) -> Mount {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mp = tmp.path().join("mnt");
        let store = tmp.path().join("store");
        std::fs::create_dir(&mp).unwrap();
        Mount {
            tmp,
            mp,
            store,
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
        }
    }

    /// As `with_args`, the daemon started with `env` set.
    pub fn with_env(test: &str, args: &[&str], env: &[(&str, &str)]) -> Option<Mount> {
        if !fuse_available(test) {
            return None;
        }
        let mut m = Mount::unmounted(args);
        m.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        m.mount();
        Some(m)
    }

    /// Mounts a given store (e.g. a tmpfs) at a fresh mount point.
    pub fn on_store(test: &str, store: &Path, args: &[&str]) -> Option<Mount> {
        if !fuse_available(test) {
            return None;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let mp = tmp.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let m = Mount {
            tmp,
            mp,
            store: store.to_path_buf(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
        };
        m.mount();
        Some(m)
    }

    /// `fen-fs mount` (detached daemon); panics with its stderr if it fails.
    pub fn mount(&self) {
        let log = self.tmp.path().join("daemon.log");
        let out = fen_fs()
            .arg("mount")
            .arg(&self.mp)
            .arg("--store")
            .arg(&self.store)
            .arg("--log-file")
            .arg(&log)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run fen-fs mount");
        assert!(
            out.status.success(),
            "fen-fs mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn umount(&self) -> Output {
        fen_fs()
            .arg("umount")
            .arg(&self.mp)
            .output()
            .expect("run fen-fs umount")
    }

    /// The daemon's pid (found by its command line).
    pub fn daemon_pid(&self) -> Option<i32> {
        self.daemon_pid_other_than(0)
    }

    /// A live daemon's pid other than `old` (a lazily detached mount's daemon can
    /// outlive its mount beside a new one).
    pub fn daemon_pid_other_than(&self, old: i32) -> Option<i32> {
        let needle = format!("mount\0{}\0--foreground", self.mp.display());
        for entry in std::fs::read_dir("/proc").ok()? {
            let entry = entry.ok()?;
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let zombie = std::fs::read_to_string(entry.path().join("status"))
                .map_or(true, |s| s.contains("State:\tZ"));
            if pid == old || zombie {
                continue;
            }
            if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
                && String::from_utf8_lossy(&cmd).contains(&needle)
            {
                return Some(pid);
            }
        }
        None
    }

    /// `kill -9` of the daemon; the mount is left stale (ENOTCONN).
    pub fn kill9(&self) {
        let pid = self.daemon_pid().expect("daemon running");
        // SAFETY: signalling a process we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        // Gone once reaped, or a zombie with no thread left: a thread of an idle
        // class, starved on a loaded machine, can still be leaving (with the store's
        // files, and its keeper's lock, open) after the first thread is a zombie.
        let deadline = Instant::now() + Duration::from_secs(10);
        let leaving = || {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .is_ok_and(|s| s.contains("State:\tZ"));
            let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
            threads > 0 && !(zombie && threads == 1)
        };
        while leaving() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.mp.join(rel)
    }

    /// Runs `sh -c script` with the mount point as working directory.
    pub fn sh(&self, script: &str) -> Output {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&self.mp)
            .output()
            .expect("run sh")
    }

    /// Creates a session through the root ctl; returns its folder's path in the mount.
    pub fn create_session(&self, cwd: &str, content: &str) -> PathBuf {
        use std::io::{Read, Write};
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.path("ctl"))
            .unwrap();
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let line = format!(
            "{{\"cwd\":{},\"role\":\"user\",\"content\":{}}}",
            q(cwd),
            q(content)
        );
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut reply = String::new();
        f.read_to_string(&mut reply).unwrap();
        let rel = reply
            .split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("reply {reply:?}"));
        self.mp.join(rel)
    }

    /// The backing file of a session folder in the mount.
    pub fn backing_file(&self, session_dir: &Path) -> PathBuf {
        let dir = session_dir.file_name().unwrap().to_string_lossy();
        self.backing_namespace(session_dir.parent().unwrap())
            .join(format!("{dir}.jsonl"))
    }

    /// The store folder behind a namespace folder of the mount (mount names are the
    /// slugs without their `--`).
    pub fn backing_namespace(&self, ns_dir: &Path) -> PathBuf {
        let name = ns_dir.file_name().unwrap().to_string_lossy();
        let ns = fen_fs::store::naming::namespaces_of_mount_name(&name).remove(0);
        self.store.join(ns)
    }

    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("daemon.log")).unwrap_or_default()
    }

    /// Waits (up to 20 s) until the daemon's search index finds `word`: its
    /// background indexer has then built, committed and settled, so a test that
    /// measures the daemon (its memory, its requests) measures only what it does.
    pub fn wait_indexed(&self, word: &str) {
        let hits = self.path("search").join(word).join("hits.jsonl");
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            let text = std::fs::read_to_string(&hits).unwrap_or_default();
            if text.lines().any(|l| l.contains("\"id\"")) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("search never found {word}; log:\n{}", self.daemon_log());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // A just-closed file's RELEASE may still be in flight (busy for a moment);
        // a test that leaves something open still gets its mount detached.
        for attempt in 0.. {
            let out = self.umount();
            if out.status.success() || !String::from_utf8_lossy(&out.stderr).contains("busy") {
                return;
            }
            if attempt == 100 {
                eprintln!("note: detaching lazily, still busy: {}", out_text(&out));
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = fen_fs().arg("umount").arg("--lazy").arg(&self.mp).output();
    }
}

/// A promise's bound in a test: what the product promises (and `scripts/bench`
/// measures) on an idle machine, times three. A loaded 2-core machine's scheduling
/// adds to every wait, and the bugs these bounds catch (waiting for the whole pass,
/// for the next full scan) take far longer than that.
pub fn under_load(promise: std::time::Duration) -> std::time::Duration {
    promise * 3
}

/// A command's status and output, for assertion messages.
pub fn out_text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Writes `line` (plus `\n`) on an `O_RDWR` handle of `ctl` and returns the reply.
pub fn ctl(ctl: &Path, line: &str) -> String {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ctl)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut reply = String::new();
    f.read_to_string(&mut reply).unwrap();
    reply
}

/// Appends `line` through the session's `ctl`; returns the new entry's id.
pub fn ctl_ok(session: &Path, line: &str) -> String {
    let reply = ctl(&session.join("ctl"), line);
    let id = reply
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("reply to {line}: {reply:?}"))
        .trim()
        .to_string();
    uuid::Uuid::parse_str(&id).unwrap_or_else(|e| panic!("id {id:?}: {e}"));
    id
}

/// The id of the last entry of a transcript on disk.
pub fn last_id(backing: &Path) -> String {
    std::fs::read_to_string(backing)
        .unwrap()
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l).ok()?["id"]
                .as_str()
                .map(String::from)
        })
        .unwrap()
}

/// The session's `meta.json`, parsed.
pub fn meta(session: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(session.join("meta.json")).unwrap()).unwrap()
}

/// A small xorshift generator: no extra dependency, reproducible by seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Every session file in a store: `<ns>/*.jsonl` (not the `.fen-cache` folder, nor
/// anything else the spec says readers ignore).
pub fn session_files(store: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for ns in std::fs::read_dir(store).unwrap().flatten() {
        if !ns.file_type().unwrap().is_dir() || ns.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(ns.path()).unwrap().flatten() {
            if f.file_type().unwrap().is_file()
                && f.file_name().to_string_lossy().ends_with(".jsonl")
            {
                out.push(f.path());
            }
        }
    }
    out
}

/// The entries of a session's backing file (every line after the header), parsed.
pub fn backing_entries(m: &Mount, session_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(m.backing_file(session_dir))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A real agent's command installed by `scripts/install-agents NAME` (NAME: claude,
/// codex, pi, opencode, opencode-json, gemini, qwen, continue, droid, aider, ccusage): `None` (SKIPPED, loudly) when it is not
/// installed, or a panic when FEN_FS_REQUIRE_AGENTS=1 (CI).
pub fn agent_bin(test: &str, name: &str) -> Option<PathBuf> {
    let (version, cmd) = match name {
        "claude" => ("2.1.330", "claude"),
        "codex" => ("0.169.0", "codex"),
        "pi" => ("0.73.1", "pi"),
        "opencode" => ("1.18.33", "opencode"),
        "opencode-json" => ("1.1.65", "opencode"),
        "gemini" => ("0.61.0", "gemini"),
        "qwen" => ("0.24.4", "qwen"),
        "continue" => ("1.5.47", "cn"),
        "droid" => ("0.225.2", "droid"),
        "kilo" => ("7.7.7", "kilo"),
        "cline" => ("3.0.65", "cline"),
        // PyPI (scripts/install-pypi-agents): a virtual environment.
        "aider" => ("0.86.2", "aider"),
        "openhands" => ("1.16.0", "openhands"),
        // Its entry point only prints that it is archived: its Typer CLI is run by
        // the venv's python (tests/agent_kimi.rs).
        "kimi" => ("1.52.0", "python"),
        // Not an agent: the usage report's oracle.
        "ccusage" => ("20.0.24", "ccusage"),
        _ => panic!("agent_bin: unknown agent {name}"),
    };
    let base = std::env::var_os("FEN_FS_AGENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents"));
    let dir = base.join(format!("{name}-{version}"));
    let bin = match name {
        "aider" | "openhands" | "kimi" => dir.join("venv/bin").join(cmd),
        // The platform package declares no command: its binary.
        "droid" => dir
            .join("node_modules/@factory/cli-linux-x64/bin")
            .join(cmd),
        _ => dir.join("node_modules/.bin").join(cmd),
    };
    if dir.join(".installed").exists() && bin.exists() {
        return Some(bin);
    }
    if std::env::var("FEN_FS_REQUIRE_AGENTS").as_deref() == Ok("1") {
        panic!(
            "{test}: {name} {version} is required (FEN_FS_REQUIRE_AGENTS=1) but not installed: run scripts/install-agents {name} (or scripts/install-pypi-agents {name})"
        );
    }
    eprintln!(
        "\n*** SKIPPED {test}: {name} {version} not installed (scripts/install-agents {name}, or scripts/install-pypi-agents {name}) ***\n"
    );
    None
}

/// Every file under `dir`, links not followed: (size, mtime, ctime, content hash) —
/// what "reading changed nothing in another agent's folder" compares, a database's
/// `-shm` and `-wal` included.
pub fn folder_state(dir: &Path) -> std::collections::BTreeMap<PathBuf, (u64, i128, i128, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
            out.insert(
                e.path(),
                (
                    m.len(),
                    ns(m.mtime(), m.mtime_nsec()),
                    ns(m.ctime(), m.ctime_nsec()),
                    fen_fs::store::atomic::checksum(&[&bytes]),
                ),
            );
        }
    }
    out
}

/// Rewrites Cline's `<id>.messages.json` whole, as Cline saves it, with one more user
/// prompt (`text`; its id and time made from `round`).
pub fn cline_rewrite_with_prompt(messages_file: &Path, round: u64, text: &str) {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(messages_file).unwrap()).unwrap();
    doc["messages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "id": format!("appended-{round}"),
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "ts": 1795792390000u64 + round,
        }));
    std::fs::write(messages_file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}
