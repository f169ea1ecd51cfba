//! "Nothing lost": crash torture and concurrent writers.
//!
//! Writers are child processes: this test binary re-runs itself with
//! `--exact child_process` and `FEN_FS_TORTURE_CHILD` set, so every writer is a real,
//! separate process (its own `open`, its own pid, its own `flock` for the core writer).
//! Each writer records every entry id it got an `ok` for in its own acks file, written
//! (unbuffered) right after the reply is read.
//!
//! `FEN_FS_TORTURE_ROUNDS` sets the number of crash rounds (default 20);
//! `FEN_FS_TORTURE_SEED` replays the random kill moments of an earlier run.

mod support;
use support::Rng;

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "FEN_FS_TORTURE_CHILD";

// ---------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------

/// Not a test of its own: the entry point of the writer processes the other tests
/// spawn. Without `FEN_FS_TORTURE_CHILD` it does nothing.
#[test]
fn child_process() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("child needs {k}"));
    let acks = PathBuf::from(env("FEN_FS_ACKS"));
    let tag = env("FEN_FS_TAG");
    let count: Option<usize> = std::env::var("FEN_FS_COUNT")
        .ok()
        .map(|c| c.parse().unwrap());
    let pad: usize = std::env::var("FEN_FS_PAD")
        .ok()
        .map_or(0, |p| p.parse().unwrap());
    let pause_ms: u64 = std::env::var("FEN_FS_PAUSE_MS")
        .ok()
        .map_or(0, |p| p.parse().unwrap());
    if let Ok(go) = std::env::var("FEN_FS_GO") {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Path::new(&go).exists() {
            assert!(Instant::now() < deadline, "no go signal");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let w = Writer {
        acks: OpenOptions::new()
            .create(true)
            .append(true)
            .open(&acks)
            .unwrap(),
        tag,
        count,
        pad,
        pause: Duration::from_millis(pause_ms),
    };
    match role.as_str() {
        "ctl" => w.ctl(Path::new(&env("FEN_FS_CTL")), false, false),
        "ctl-reopen" => w.ctl(Path::new(&env("FEN_FS_CTL")), true, false),
        "root" => w.ctl(Path::new(&env("FEN_FS_CTL")), false, true),
        "core" => w.core(
            Path::new(&env("FEN_FS_STORE_DIR")),
            &env("FEN_FS_NS"),
            &env("FEN_FS_DIR"),
        ),
        other => panic!("unknown child role {other}"),
    }
}

struct Writer {
    acks: File,
    tag: String,
    /// `None`: until the first failure (the daemon was killed); `Some(n)`: exactly n
    /// appends, every failure is fatal.
    count: Option<usize>,
    pad: usize,
    pause: Duration,
}

impl Writer {
    fn line(&self, n: usize, root: bool) -> String {
        let pad = "x".repeat(self.pad);
        let content = format!("{}-{n}{}", self.tag, pad);
        if root {
            format!(
                "{{\"cwd\":\"/torture/created\",\"role\":\"user\",\"content\":\"{content}\"}}\n"
            )
        } else {
            format!("{{\"role\":\"user\",\"content\":\"{content}\"}}\n")
        }
    }

    /// Stops the writer: fatal when a fixed count was asked, normal after a crash.
    fn stop(&self, why: String) {
        if self.count.is_some() {
            panic!("{}: {why}", self.tag);
        }
    }

    fn ack(&mut self, n: usize, reply_rest: &str) {
        // One unbuffered write(2) per ack: it is in the page cache before the next
        // append starts, and the writer process itself is never killed.
        self.acks
            .write_all(format!("{}-{n} {reply_rest}\n", self.tag).as_bytes())
            .unwrap();
    }

    /// Appends through a ctl file, reading each `ok` back on the same handle.
    fn ctl(mut self, ctl: &Path, reopen: bool, root: bool) {
        let mut handle: Option<File> = None;
        let mut n = 0;
        while self.count.is_none_or(|c| n < c) {
            if handle.is_none() {
                match OpenOptions::new().read(true).write(true).open(ctl) {
                    Ok(f) => handle = Some(f),
                    Err(e) => return self.stop(format!("open: {e}")),
                }
            }
            let f = handle.as_mut().unwrap();
            let line = self.line(n, root);
            match f.write(line.as_bytes()) {
                Ok(k) if k == line.len() => {}
                Ok(k) => return self.stop(format!("short write {k} of {}", line.len())),
                Err(e) => return self.stop(format!("write: {e}")),
            }
            let reply = match read_reply(f) {
                Ok(r) => r,
                Err(e) => return self.stop(format!("read: {e}")),
            };
            let Some(rest) = reply.strip_prefix("ok ") else {
                return self.stop(format!("reply {reply:?}"));
            };
            self.ack(n, rest.trim_end());
            if reopen {
                handle = None;
            }
            n += 1;
            if !self.pause.is_zero() {
                std::thread::sleep(self.pause);
            }
        }
    }

    /// Appends to the backing file directly "with the core": the library's locked
    /// append, as an agent that links fen-fs would.
    fn core(mut self, store_dir: &Path, ns: &str, dir: &str) {
        use fen_fs::ctl::grammar::{check_against, parse_session_line};
        use fen_fs::store::Store;
        use fen_fs::store::durability::FsyncMode;
        let store = Store::open(store_dir, FsyncMode::No).expect("open store");
        let session = store.session(ns, dir).expect("session");
        for n in 0..self.count.expect("core writer needs a count") {
            let line = self.line(n, false);
            let entry = parse_session_line(line.trim_end().as_bytes()).expect("valid line");
            let ids = session
                .append(&[entry], &check_against, store.append)
                .unwrap_or_else(|e| panic!("core append: {e}"));
            self.ack(n, &ids[0]);
        }
    }
}

/// Reads one reply line from a ctl handle opened O_RDWR.
fn read_reply(f: &mut File) -> std::io::Result<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.contains(&b'\n') {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other(format!(
                "no reply (got {:?})",
                String::from_utf8_lossy(&out)
            )));
        }
        out.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Spawns this test binary as a writer process.
fn spawn_child(role: &str, log: &Path, env: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, role)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(File::create(log).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child writer")
}

/// Waits for a child; kills it (by its own pid) if it hangs past `timeout`.
fn wait_child(mut c: Child, log: &Path, timeout: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = c.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = c.kill();
            let _ = c.wait();
            panic!(
                "writer {} hung; its stderr:\n{}",
                c.id(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `tag -> reply` (the entry id, plus the session for root-ctl writers).
fn read_acks(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| {
            let (tag, rest) = l.split_once(' ').unwrap_or_else(|| panic!("ack {l:?}"));
            (tag.to_string(), rest.to_string())
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Transcript checks
// ---------------------------------------------------------------------------------

struct Scan {
    /// (entry id, content) of every valid entry, in file order.
    entries: Vec<(String, String)>,
    /// Offset of an unterminated last line, if any.
    torn_tail: Option<u64>,
    last_id: Option<String>,
}

/// Checks the format rules a crash must not break, and returns the entries:
/// - every `\n`-terminated line is a JSON object, except lines that were torn tails
///   earlier (`old_torn`, offsets; the daemon then terminated them with `\n`);
/// - only the last line may lack its `\n`;
/// - line 1 is the header; entry ids strictly increase; each `parent-id` is the id of
///   the entry before it (one linear chain).
fn scan(path: &Path, old_torn: &HashSet<u64>) -> Scan {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut entries = Vec::new();
    let mut torn_tail = None;
    let mut last_id: Option<String> = None;
    let mut off = 0usize;
    let mut lineno = 0;
    while off < bytes.len() {
        lineno += 1;
        let Some(len) = bytes[off..].iter().position(|&b| b == b'\n') else {
            torn_tail = Some(off as u64);
            break;
        };
        let line = &bytes[off..off + len];
        let start = off;
        off += len + 1;
        let v: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                assert!(
                    old_torn.contains(&(start as u64)),
                    "{}: line {lineno} (offset {start}) is not JSON and was not a torn tail: {:?}",
                    path.display(),
                    String::from_utf8_lossy(&line[..line.len().min(200)])
                );
                continue;
            }
        };
        if lineno == 1 {
            assert_eq!(v["type"], "session", "{}: header {v}", path.display());
            continue;
        }
        let id = v["id"].as_str().expect("entry id").to_string();
        let parent = v["parent-id"].as_str().map(String::from);
        assert_eq!(
            parent,
            last_id,
            "{}: line {lineno}: parent-id does not chain to the entry before",
            path.display()
        );
        if let Some(prev) = &last_id {
            assert!(
                id.as_str() > prev.as_str(),
                "{}: line {lineno}: id {id} not greater than {prev}",
                path.display()
            );
        }
        let content = v["message"]["content"].as_str().unwrap_or("").to_string();
        entries.push((id.clone(), content));
        last_id = Some(id);
    }
    Scan {
        entries,
        torn_tail,
        last_id,
    }
}

/// Acknowledged entries (`id -> tag`) missing from `scan`; a found id must carry its tag.
fn missing(scan: &Scan, acked: &HashMap<String, String>) -> Vec<String> {
    let found: HashMap<&str, &str> = scan
        .entries
        .iter()
        .map(|(id, c)| (id.as_str(), c.as_str()))
        .collect();
    let mut lost = Vec::new();
    for (id, tag) in acked {
        match found.get(id.as_str()) {
            Some(content) => assert!(
                content.starts_with(tag.as_str()) && content[tag.len()..].chars().all(|c| c == 'x'),
                "entry {id} acknowledged for {tag} holds {content:?}"
            ),
            None => lost.push(format!("{tag} {id}")),
        }
    }
    lost
}

/// The store's namespace and the session's folder name of a session folder in the mount.
fn session_rel(m: &support::Mount, session: &Path) -> (String, String) {
    let ns = m.backing_namespace(session.parent().unwrap());
    let ns = ns.file_name().unwrap().to_string_lossy().into_owned();
    let dir = session.file_name().unwrap().to_string_lossy().into_owned();
    (ns, dir)
}

// ---------------------------------------------------------------------------------
// Crash torture
// ---------------------------------------------------------------------------------

/// Per session file: what was acknowledged in it and which lines were torn tails.
#[derive(Default)]
struct Book {
    acked: HashMap<String, String>,
    torn: HashSet<u64>,
}

#[test]
fn crash_torture() {
    let Some(m) = support::Mount::with_args("crash_torture", &["--fsync", "no"]) else {
        return;
    };
    let rounds: usize = std::env::var("FEN_FS_TORTURE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("FEN_FS_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("torture: seed={seed} (FEN_FS_TORTURE_SEED to replay)");
    let mut rng = Rng(seed);
    let work = m.tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();

    let mut books: HashMap<PathBuf, Book> = HashMap::new();
    let mut session = m.create_session("/torture/project", "start");
    let (mut total_acked, mut natural_torn, mut planted_torn) = (0usize, 0usize, 0usize);
    let started = Instant::now();

    for round in 0..rounds {
        // A fresh session every 5 rounds keeps the files small; within a session the
        // rounds pile crash on crash.
        if round > 0 && round % 5 == 0 {
            session = m.create_session("/torture/project", &format!("start-{round}"));
        }
        let file = m.backing_file(&session);
        let ctl = session.join("ctl").to_string_lossy().into_owned();
        let root_ctl = m.path("ctl").to_string_lossy().into_owned();
        let writers: [(&str, &str, usize, u64); 5] = [
            ("ctl", &ctl, 0, 0),
            ("ctl", &ctl, 0, 0),
            ("ctl-reopen", &ctl, 0, 0),
            // Big lines: the daemon's write(2) takes long enough to be cut by the kill.
            ("ctl", &ctl, 64 << 10, 2),
            ("root", &root_ctl, 0, 10),
        ];
        let mut children = Vec::new();
        for (k, (role, target, pad, pause)) in writers.iter().enumerate() {
            let tag = format!("r{round}w{k}");
            let acks = work.join(format!("{tag}.acks"));
            let log = work.join(format!("{tag}.err"));
            let child = spawn_child(
                role,
                &log,
                &[
                    ("FEN_FS_CTL", target.to_string()),
                    ("FEN_FS_ACKS", acks.to_string_lossy().into_owned()),
                    ("FEN_FS_TAG", tag.clone()),
                    ("FEN_FS_PAD", pad.to_string()),
                    ("FEN_FS_PAUSE_MS", pause.to_string()),
                ],
            );
            children.push((child, tag, acks, log, *role));
        }
        // Kill at a random moment once every writer is under way (has an `ok`).
        let deadline = Instant::now() + Duration::from_secs(20);
        while !children
            .iter()
            .all(|(_, _, acks, _, _)| std::fs::metadata(acks).is_ok_and(|m| m.len() > 0))
        {
            assert!(
                Instant::now() < deadline,
                "round {round}: writers never got going"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.range(50, 400)));
        m.kill9();
        let mut round_acked = 0;
        let mut touched = HashSet::new();
        for (child, tag, acks, log, role) in children {
            let status = wait_child(child, &log, Duration::from_secs(30));
            assert!(
                status.success(),
                "writer {tag} failed: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            for (entry_tag, reply) in read_acks(&acks) {
                round_acked += 1;
                if role == "root" {
                    // `<entry-id> <namespace>/<session-dir>`
                    let (id, rel) = reply.split_once(' ').expect("root reply");
                    let path = m.backing_file(&m.mp.join(rel));
                    touched.insert(path.clone());
                    books
                        .entry(path)
                        .or_default()
                        .acked
                        .insert(id.to_string(), entry_tag);
                } else {
                    books
                        .entry(file.clone())
                        .or_default()
                        .acked
                        .insert(reply, entry_tag);
                }
            }
        }
        total_acked += round_acked;

        // Every other round, play a writer that died mid-line (unless the kill did).
        let mut bytes = std::fs::read(&file).unwrap();
        if round % 2 == 1 && bytes.last() == Some(&b'\n') {
            let torn = format!(
                "{{\"type\":\"message\",\"id\":\"torn-{round}\",\"message\":{{\"role\":\"us"
            );
            OpenOptions::new()
                .append(true)
                .open(&file)
                .unwrap()
                .write_all(torn.as_bytes())
                .unwrap();
            planted_torn += 1;
            bytes = std::fs::read(&file).unwrap();
        } else if bytes.last() != Some(&b'\n') {
            natural_torn += 1;
        }

        let out = m.umount();
        assert!(
            out.status.success(),
            "umount of the stale mount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        m.mount();

        // Nothing acknowledged is lost, in any file this round wrote (all files are
        // checked again at the end).
        let mut lost = Vec::new();
        for path in touched.iter().chain([&file]) {
            let book = books.entry(path.clone()).or_default();
            let s = scan(path, &book.torn);
            lost.extend(missing(&s, &book.acked));
        }
        assert!(
            lost.is_empty(),
            "round {round}: {} acknowledged entries lost: {lost:?}",
            lost.len()
        );

        // Appending works again, and lands after a torn line on a line of its own.
        let before = scan(&file, &books.entry(file.clone()).or_default().torn);
        let out = m.sh(&format!(
            "echo '{{\"role\":\"user\",\"content\":\"after-crash-{round}\"}}' >> '{ctl}'"
        ));
        assert!(
            out.status.success(),
            "round {round}: append after remount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after_bytes = std::fs::read(&file).unwrap();
        assert!(
            after_bytes.starts_with(&bytes),
            "round {round}: the transcript was rewritten across the crash"
        );
        let mut rest = &after_bytes[bytes.len()..];
        if let Some(t) = before.torn_tail {
            assert_eq!(
                rest.first(),
                Some(&b'\n'),
                "round {round}: new entry glued to the torn line"
            );
            rest = &rest[1..];
            books.get_mut(&file).unwrap().torn.insert(t);
        }
        assert_eq!(
            rest.iter().filter(|&&b| b == b'\n').count(),
            1,
            "round {round}: expected exactly one new line, got {:?}",
            String::from_utf8_lossy(rest)
        );
        assert_eq!(rest.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(rest).expect("new entry is JSON");
        assert_eq!(v["message"]["content"], format!("after-crash-{round}"));
        assert_eq!(v["parent-id"].as_str(), before.last_id.as_deref());
        let book = books.get_mut(&file).unwrap();
        let after = scan(&file, &book.torn);
        assert_eq!(after.torn_tail, None);
        book.acked.insert(
            v["id"].as_str().unwrap().to_string(),
            format!("after-crash-{round}"),
        );
        total_acked += 1;
        eprintln!(
            "torture: round {round}: acked {round_acked} (+1 after remount), torn tail: {}",
            before.torn_tail.is_some()
        );
    }

    // A last look at everything, and at every file in the store: only whole lines,
    // except torn tails.
    let mut lost = Vec::new();
    for (path, book) in &books {
        lost.extend(missing(&scan(path, &book.torn), &book.acked));
    }
    let (mut files, mut empty) = (0, 0);
    for path in support::session_files(&m.store) {
        let torn = books.get(&path).map(|b| b.torn.clone()).unwrap_or_default();
        scan(&path, &torn);
        files += 1;
        if std::fs::metadata(&path).unwrap().len() == 0 {
            empty += 1;
        }
    }
    eprintln!(
        "torture: rounds={rounds} acked={total_acked} lost={} torn_tails(natural={natural_torn} planted={planted_torn}) files={files} empty_files={empty} in {:.1}s",
        lost.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(lost.is_empty(), "lost: {lost:?}");
}

/// §1.1: "a session file exists only once its first entry is written" — also when the
/// daemon dies in the middle of creating one. Root-ctl writers create sessions as fast
/// as they can while the daemon is killed; afterwards no session file may be empty or
/// start with anything but a whole header.
#[test]
fn crash_during_create_leaves_no_empty_session_file() {
    let Some(m) = support::Mount::with_args(
        "crash_during_create_leaves_no_empty_session_file",
        &["--fsync", "no"],
    ) else {
        return;
    };
    let rounds: usize = std::env::var("FEN_FS_TORTURE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let work = m.tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let root_ctl = m.path("ctl").to_string_lossy().into_owned();
    let mut bad = Vec::new();
    let mut created = 0;
    for round in 0..rounds {
        let mut children = Vec::new();
        for k in 0..3 {
            let tag = format!("r{round}c{k}");
            let acks = work.join(format!("{tag}.acks"));
            let log = work.join(format!("{tag}.err"));
            let env = [
                ("FEN_FS_CTL", root_ctl.clone()),
                ("FEN_FS_ACKS", acks.to_string_lossy().into_owned()),
                ("FEN_FS_TAG", tag),
            ];
            children.push((spawn_child("root", &log, &env), log, acks));
        }
        std::thread::sleep(Duration::from_millis(rng.range(30, 200)));
        m.kill9();
        for (child, log, acks) in children {
            assert!(wait_child(child, &log, Duration::from_secs(30)).success());
            created += read_acks(&acks).len();
        }
        let out = m.umount();
        assert!(out.status.success());
        m.mount();
        for path in support::session_files(&m.store) {
            let bytes = std::fs::read(&path).unwrap();
            let header = bytes
                .split(|&b| b == b'\n')
                .next()
                .and_then(|l| serde_json::from_slice::<Value>(l).ok());
            let whole = bytes.contains(&b'\n') && header.is_some_and(|h| h["type"] == "session");
            if !whole && !bad.contains(&path) {
                bad.push(path);
            }
        }
    }
    eprintln!(
        "create torture: rounds={rounds} sessions acknowledged={created} files without a whole header={}",
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "session files without a whole header: {bad:?}"
    );
}

// ---------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------

/// 8 processes × 500 appends through one session's `ctl`, plus one process appending
/// 500 entries to the backing file directly with the library: every entry exactly once,
/// one linear parent-id chain, ids strictly increasing in file order.
/// `FEN_FS_CONCURRENCY_PER` changes the 500.
#[test]
fn concurrent_writers_one_chain() {
    concurrent_writers("concurrent_writers_one_chain", &["--fsync", "no"]);
}

/// The same with `--fsync always` (the default): concurrent writers share fdatasyncs
/// (group commit), and the chain is still one line.
#[test]
fn concurrent_writers_one_chain_fsync_always() {
    concurrent_writers(
        "concurrent_writers_one_chain_fsync_always",
        &["--fsync", "always"],
    );
}

fn concurrent_writers(test: &str, args: &[&str]) {
    const PROCS: usize = 8;
    let per: usize = std::env::var("FEN_FS_CONCURRENCY_PER")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(500);
    let Some(m) = support::Mount::with_args(test, args) else {
        return;
    };
    let session = m.create_session("/concurrency/project", "first");
    let file = m.backing_file(&session);
    let (ns, dir) = session_rel(&m, &session);
    let work = m.tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let go = work.join("go");
    let ctl = session.join("ctl").to_string_lossy().into_owned();

    let started = Instant::now();
    let mut children = Vec::new();
    for k in 0..=PROCS {
        let tag = format!("c{k}");
        let acks = work.join(format!("{tag}.acks"));
        let log = work.join(format!("{tag}.err"));
        let mut env = vec![
            ("FEN_FS_ACKS", acks.to_string_lossy().into_owned()),
            ("FEN_FS_TAG", tag.clone()),
            ("FEN_FS_COUNT", per.to_string()),
            ("FEN_FS_GO", go.to_string_lossy().into_owned()),
        ];
        let role = if k == PROCS {
            env.push(("FEN_FS_STORE_DIR", m.store.to_string_lossy().into_owned()));
            env.push(("FEN_FS_NS", ns.clone()));
            env.push(("FEN_FS_DIR", dir.clone()));
            "core"
        } else {
            env.push(("FEN_FS_CTL", ctl.clone()));
            // Half keep one handle, half open one per append (close = flush).
            if k % 2 == 0 { "ctl" } else { "ctl-reopen" }
        };
        children.push((spawn_child(role, &log, &env), tag, acks, log));
    }
    File::create(&go).unwrap();
    let mut acked: HashMap<String, String> = HashMap::new();
    for (child, tag, acks, log) in children {
        let status = wait_child(child, &log, Duration::from_secs(60 + per as u64));
        assert!(
            status.success(),
            "writer {tag} failed: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let got = read_acks(&acks);
        assert_eq!(got.len(), per, "writer {tag} acknowledged {}", got.len());
        for (entry_tag, id) in got {
            assert!(
                acked.insert(id.clone(), entry_tag).is_none(),
                "id {id} acknowledged twice"
            );
        }
    }
    let elapsed = started.elapsed();

    let s = scan(&file, &HashSet::new());
    assert_eq!(s.torn_tail, None);
    assert!(missing(&s, &acked).is_empty());
    assert_eq!(
        s.entries.len(),
        (PROCS + 1) * per + 1,
        "entries in the file"
    );
    let mut seen = HashSet::new();
    for (_, content) in &s.entries {
        assert!(seen.insert(content.as_str()), "{content} appears twice");
    }
    for k in 0..=PROCS {
        for n in 0..per {
            assert!(
                seen.contains(format!("c{k}-{n}").as_str()),
                "c{k}-{n} missing"
            );
        }
    }
    // Each writer's own entries keep their order.
    let mut next = [0usize; PROCS + 1];
    for (_, content) in s.entries.iter().skip(1) {
        let (k, n) = content[1..].split_once('-').unwrap();
        let (k, n): (usize, usize) = (k.parse().unwrap(), n.parse().unwrap());
        assert_eq!(n, next[k], "writer c{k}'s entries out of order");
        next[k] += 1;
    }
    eprintln!(
        "concurrency ({}): {} entries from {} processes in {:.2}s, one chain",
        args.join(" "),
        s.entries.len(),
        PROCS + 1,
        elapsed.as_secs_f64()
    );
}
