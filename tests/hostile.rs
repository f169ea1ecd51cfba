//! Hostile input through the control files (§4): every bad write gets its errno, the
//! transcript is byte-for-byte unchanged by it, and the daemon keeps serving.

mod support;
use support::Rng;

use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A ctl handle opened `O_RDWR`, so replies can be read back.
struct Ctl(File);

impl Ctl {
    fn open(path: &Path) -> Ctl {
        Ctl(OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display())))
    }

    /// One `write(2)`: `Ok` only if all of it was taken, else the errno.
    fn write(&mut self, data: &[u8]) -> Result<(), i32> {
        match self.0.write(data) {
            Ok(n) if n == data.len() => Ok(()),
            Ok(n) => panic!("short write: {n} of {} bytes", data.len()),
            Err(e) => Err(e.raw_os_error().expect("an errno")),
        }
    }

    /// Everything replied so far and not yet read.
    fn replies(&mut self) -> String {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = self.0.read(&mut buf).expect("read replies");
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(out).expect("replies are UTF-8")
    }

    /// Writes and returns the reply (`ok …` or `err …`) or the write's errno.
    fn send(&mut self, data: &[u8]) -> Result<String, i32> {
        self.write(data)?;
        Ok(self.replies())
    }

    /// `close(2)`'s result: a final line without `\n` is processed at flush.
    fn close(self) -> Result<(), i32> {
        let fd = self.0.into_raw_fd();
        // SAFETY: we own the descriptor and close it exactly once.
        if unsafe { libc::close(fd) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap())
        }
    }
}

fn errno_name(e: i32) -> String {
    match e {
        libc::EINVAL => "EINVAL".into(),
        libc::EFBIG => "EFBIG".into(),
        libc::ENOSPC => "ENOSPC".into(),
        libc::ENOENT => "ENOENT".into(),
        libc::EIO => "EIO".into(),
        libc::EEXIST => "EEXIST".into(),
        other => format!("errno {other}"),
    }
}

/// A session with one entry, its ctl path and its backing file.
struct Fixture {
    m: support::Mount,
    session: PathBuf,
    file: PathBuf,
}

impl Fixture {
    fn new(test: &str, args: &[&str]) -> Option<Fixture> {
        let m = support::Mount::with_args(test, args)?;
        let session = m.create_session("/hostile/project", "first");
        let file = m.backing_file(&session);
        Some(Fixture { m, session, file })
    }

    fn ctl(&self) -> Ctl {
        Ctl::open(&self.session.join("ctl"))
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.file).unwrap()
    }

    /// Sends `data` on a fresh handle and asserts it fails with `errno` and leaves the
    /// transcript byte-for-byte as it was.
    fn rejects(&self, data: &[u8], errno: i32, what: &str) {
        let before = self.bytes();
        let mut c = self.ctl();
        let got = c.send(data);
        assert_eq!(
            got.as_ref().err().map(|&e| errno_name(e)),
            Some(errno_name(errno)),
            "{what}: expected {}, got {got:?}",
            errno_name(errno)
        );
        let replies = c.replies();
        assert!(
            replies.contains(&format!("err {}", errno_name(errno))) && !replies.contains("ok "),
            "{what}: replies {replies:?}"
        );
        drop(c);
        assert!(self.bytes() == before, "{what}: the transcript changed");
    }

    /// Sends `data` (one line) and asserts one `ok`; returns the new entry.
    fn accepts(&self, data: &[u8], what: &str) -> Value {
        let before = self.bytes();
        let mut c = self.ctl();
        let reply = c
            .send(data)
            .unwrap_or_else(|e| panic!("{what}: {}", errno_name(e)));
        let id = reply
            .strip_prefix("ok ")
            .unwrap_or_else(|| panic!("{what}: reply {reply:?}"))
            .trim_end()
            .to_string();
        let after = self.bytes();
        assert!(after.starts_with(&before), "{what}: transcript rewritten");
        let new = &after[before.len()..];
        assert_eq!(
            new.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{what}: one new line"
        );
        let v: Value = serde_json::from_slice(new).expect("new line is JSON");
        assert_eq!(
            v["id"],
            id.as_str(),
            "{what}: the reply names the new entry"
        );
        v
    }

    /// The daemon still appends (and it is still the same daemon).
    fn assert_alive(&self) {
        assert!(self.m.daemon_pid().is_some(), "the daemon died");
        self.accepts(b"{\"role\":\"user\",\"content\":\"still here\"}\n", "alive");
    }

    fn entries(&self) -> Vec<Value> {
        entries_of(&self.bytes())
    }
}

/// Every line of a transcript, parsed (all must be JSON objects).
/// The store's namespaces (what a line on the root ctl would create), by name. Not
/// fen's own dot folders: background work (the search index, usage, keeping) creates
/// those whenever it gets to it, and counting them made these checks flaky.
fn namespaces(store: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    out.sort();
    out
}

fn entries_of(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(
        bytes.last(),
        Some(&b'\n'),
        "the transcript ends with a newline"
    );
    bytes[..bytes.len() - 1]
        .split(|&b| b == b'\n')
        .map(|l| serde_json::from_slice(l).expect("every line is JSON"))
        .collect()
}

fn msg(content: &str) -> Vec<u8> {
    format!(
        "{{\"role\":\"user\",\"content\":{}}}\n",
        serde_json::to_string(content).unwrap()
    )
    .into_bytes()
}

fn vm_hwm_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

// ---------------------------------------------------------------------------------

#[test]
fn deep_nesting_does_not_take_the_daemon_down() {
    let Some(f) = Fixture::new("deep_nesting_does_not_take_the_daemon_down", &[]) else {
        return;
    };
    let arrays = format!(
        "{{\"role\":\"user\",\"content\":{}{}}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let objects = format!(
        "{{\"role\":\"user\",\"content\":{}1{}}}\n",
        "{\"a\":".repeat(10_000),
        "}".repeat(10_000)
    );
    let unclosed = format!("{{\"role\":\"user\",\"content\":{}\n", "[".repeat(100_000));
    // fen-fs caps nesting (128 levels, as serde_json does) and refuses deeper input as
    // invalid: a stack overflow here would kill every session's writer.
    f.rejects(arrays.as_bytes(), libc::EINVAL, "10,000 nested arrays");
    f.rejects(objects.as_bytes(), libc::EINVAL, "10,000 nested objects");
    f.rejects(unclosed.as_bytes(), libc::EINVAL, "100,000 unclosed arrays");
    let root_before = namespaces(&f.m.store);
    let mut root = Ctl::open(&f.m.path("ctl"));
    let deep_root = format!(
        "{{\"cwd\":\"/deep\",\"role\":\"user\",\"content\":{}{}}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(root.send(deep_root.as_bytes()), Err(libc::EINVAL));
    assert_eq!(namespaces(&f.m.store), root_before);
    // Moderate nesting is ordinary JSON and is kept byte for byte.
    let moderate = format!(
        "{{\"role\":\"user\",\"content\":{}{}}}\n",
        "[".repeat(100),
        "]".repeat(100)
    );
    f.accepts(moderate.as_bytes(), "100 nested arrays");
    let stored = format!("\"message\":{}}}\n", moderate.trim_end());
    assert!(f.bytes().ends_with(stored.as_bytes()), "kept byte for byte");
    f.assert_alive();
}

#[test]
fn megabyte_strings_are_kept_whole() {
    let Some(f) = Fixture::new("megabyte_strings_are_kept_whole", &[]) else {
        return;
    };
    let big = "a".repeat(1 << 20);
    let v = f.accepts(&msg(&big), "1 MiB string");
    assert_eq!(v["message"]["content"].as_str().unwrap().len(), 1 << 20);
    // Multi-byte characters, and a line longer than one FUSE write request (1 MiB).
    let wide = "é€😀".repeat(200_000);
    let v = f.accepts(&msg(&wide), "2.6 MB of multi-byte characters");
    assert_eq!(v["message"]["content"], wide.as_str());
    // The views carry it too.
    let conv: Value =
        serde_json::from_slice(&std::fs::read(f.session.join("conversation.json")).unwrap())
            .unwrap();
    assert_eq!(conv.as_array().unwrap().last().unwrap()["content"], wide);
    f.assert_alive();
}

#[test]
fn lines_over_max_entry_bytes_are_efbig() {
    const MAX: usize = 64 << 10;
    let Some(f) = Fixture::new(
        "lines_over_max_entry_bytes_are_efbig",
        &["--max-entry-bytes", &MAX.to_string()],
    ) else {
        return;
    };
    // A line of exactly MAX bytes (without its `\n`) is accepted; one more is not.
    let shell = msg("").len() - 1;
    let exact = msg(&"b".repeat(MAX - shell));
    assert_eq!(exact.len(), MAX + 1);
    f.accepts(&exact, "a line of exactly --max-entry-bytes");
    let over = msg(&"b".repeat(MAX - shell + 1));
    f.rejects(&over, libc::EFBIG, "one byte over --max-entry-bytes");
    f.rejects(&msg(&"c".repeat(1 << 20)), libc::EFBIG, "a 1 MiB line");
    f.rejects(&msg(&"c".repeat(3 << 20)), libc::EFBIG, "a 3 MiB line");
    // Also on the root ctl: no session is created.
    let before = namespaces(&f.m.store);
    let mut root = Ctl::open(&f.m.path("ctl"));
    let line = format!(
        "{{\"cwd\":\"/big\",\"role\":\"user\",\"content\":\"{}\"}}\n",
        "d".repeat(MAX)
    );
    assert_eq!(root.send(line.as_bytes()), Err(libc::EFBIG));
    assert_eq!(namespaces(&f.m.store), before);
    f.assert_alive();
}

#[test]
fn endless_line_gets_efbig_not_oom() {
    const MAX: usize = 64 << 10;
    let Some(f) = Fixture::new(
        "endless_line_gets_efbig_not_oom",
        &["--max-entry-bytes", &MAX.to_string()],
    ) else {
        return;
    };
    f.assert_alive();
    // The search indexer's first look at the new session is done before the
    // measure (its writer's memory is not the ctl's).
    f.m.wait_indexed("first");
    let pid = f.m.daemon_pid().unwrap();
    let hwm_before = vm_hwm_kib(pid);
    let before = f.bytes();
    let mut c = f.ctl();
    let chunk = vec![b'x'; 4096];
    // 16 × 4 KiB = MAX buffered: fine. The write that goes past it: EFBIG.
    for i in 0..MAX / chunk.len() {
        assert_eq!(c.write(&chunk), Ok(()), "chunk {i}");
    }
    assert_eq!(
        c.write(&chunk),
        Err(libc::EFBIG),
        "the write past the limit"
    );
    // A writer that keeps going keeps getting EFBIG and never grows the daemon.
    let mut efbig = 0;
    for _ in 0..(32 << 20) / chunk.len() {
        if c.write(&chunk) == Err(libc::EFBIG) {
            efbig += 1;
        }
    }
    assert!(
        efbig >= 400,
        "only {efbig} EFBIGs for 32 MiB without a newline"
    );
    let _ = c.close();
    let grown = vm_hwm_kib(pid).saturating_sub(hwm_before);
    assert!(
        grown < 16 << 10,
        "the daemon's peak memory grew by {grown} KiB while a writer sent 32 MiB without a newline"
    );
    assert!(f.bytes() == before, "the transcript changed");
    f.assert_alive();
}

#[test]
fn endless_line_at_the_default_limit() {
    let Some(f) = Fixture::new("endless_line_at_the_default_limit", &[]) else {
        return;
    };
    let before = f.bytes();
    let mut c = f.ctl();
    // 64 KiB per write(2): each is one FUSE request, so the errno is the write's own.
    let chunk = vec![b'y'; 64 << 10];
    let limit = fen_fs::ctl::DEFAULT_MAX_ENTRY_BYTES;
    for i in 0..limit / chunk.len() {
        assert_eq!(c.write(&chunk), Ok(()), "chunk {i}");
    }
    assert_eq!(c.write(&chunk), Err(libc::EFBIG), "past 16 MiB");
    let _ = c.close();
    assert!(f.bytes() == before, "the transcript changed");
    f.assert_alive();
}

#[test]
fn nul_bytes() {
    let Some(f) = Fixture::new("nul_bytes", &[]) else {
        return;
    };
    f.rejects(
        b"{\"role\":\"user\",\"content\":\"a\0b\"}\n",
        libc::EINVAL,
        "raw NUL in a string",
    );
    f.rejects(
        b"{\"role\":\"user\",\0\"content\":\"ab\"}\n",
        libc::EINVAL,
        "raw NUL between tokens",
    );
    f.rejects(b"\0\0\0\0\0\0\0\0\n", libc::EINVAL, "a line of NULs");
    f.rejects(
        b"{\"role\":\"user\",\"content\":\"ab\"}\0\n",
        libc::EINVAL,
        "trailing NUL",
    );
    // The escape is valid JSON and is stored as the writer sent it.
    let line = b"{\"role\":\"user\",\"content\":\"a\\u0000b\"}\n";
    let v = f.accepts(line, "\\u0000 escape");
    assert_eq!(v["message"]["content"], "a\0b");
    assert!(
        f.bytes()
            .windows(b"a\\u0000b".len())
            .any(|w| w == b"a\\u0000b"),
        "the escape is kept verbatim"
    );
    f.assert_alive();
}

#[test]
fn lone_surrogates() {
    let Some(f) = Fixture::new("lone_surrogates", &[]) else {
        return;
    };
    for (line, what) in [
        (&br#"{"role":"user","content":"\ud800"}"#[..], "lone high"),
        (br#"{"role":"user","content":"\udfff"}"#, "lone low"),
        (br#"{"role":"user","content":"\udc00\ud800"}"#, "reversed"),
        (br#"{"role":"user","content":"\ud800\u0041"}"#, "high + A"),
        (br#"{"role":"user","\ud800":"x"}"#, "in a key"),
        (
            br#"{"type":"note","data":{"k":["\ud800"]}}"#,
            "in a custom entry",
        ),
    ] {
        let mut l = line.to_vec();
        l.push(b'\n');
        f.rejects(&l, libc::EINVAL, what);
    }
    let v = f.accepts(
        b"{\"role\":\"user\",\"content\":\"\\ud83d\\ude00\"}\n",
        "a surrogate pair",
    );
    assert_eq!(v["message"]["content"], "😀");
    f.assert_alive();
}

#[test]
fn invalid_utf8() {
    let Some(f) = Fixture::new("invalid_utf8", &[]) else {
        return;
    };
    for (bad, what) in [
        (&b"\xC0\xAF"[..], "overlong /"),
        (b"\xE0\x80\xAF", "3-byte overlong"),
        (b"\xF0\x80\x80\xAF", "4-byte overlong"),
        (b"\xED\xA0\x80", "UTF-8-encoded surrogate"),
        (b"\xFF", "0xFF"),
        (b"\x80", "stray continuation"),
        (b"\xE2\x82", "truncated sequence"),
        (b"\xF4\x90\x80\x80", "beyond U+10FFFF"),
    ] {
        let mut line = b"{\"role\":\"user\",\"content\":\"a".to_vec();
        line.extend_from_slice(bad);
        line.extend_from_slice(b"b\"}\n");
        f.rejects(&line, libc::EINVAL, what);
        let mut key = b"{\"role\":\"user\",\"k".to_vec();
        key.extend_from_slice(bad);
        key.extend_from_slice(b"\":1}\n");
        f.rejects(&key, libc::EINVAL, what);
    }
    f.accepts(&msg("a€😀b"), "valid multi-byte");
    f.assert_alive();
}

#[test]
fn one_byte_per_write() {
    let Some(f) = Fixture::new("one_byte_per_write", &[]) else {
        return;
    };
    let before = f.bytes();
    let line = b"{\"role\":\"user\",\"content\":\"dribbled \xE2\x82\xAC byte by byte\"}";
    let mut c = f.ctl();
    for (i, b) in line.iter().enumerate() {
        assert_eq!(c.write(&[*b]), Ok(()), "byte {i}");
    }
    assert!(
        f.bytes() == before,
        "nothing is appended before the newline"
    );
    assert_eq!(c.replies(), "", "no reply before the newline");
    // Another handle appends meanwhile: handles never share a buffer.
    let other = f.accepts(&msg("from another handle"), "another handle");
    assert_eq!(c.write(b"\n"), Ok(()));
    let reply = c.replies();
    let id = reply
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("reply {reply:?}"))
        .trim_end();
    c.close().unwrap();
    let entries = f.entries();
    assert_eq!(entries.len(), before.split(|&b| b == b'\n').count() - 1 + 2);
    let last = entries.last().unwrap();
    assert_eq!(last["id"], id);
    assert_eq!(last["message"]["content"], "dribbled € byte by byte");
    assert_eq!(last["parent-id"], other["id"]);
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["message"]["content"] == "dribbled € byte by byte")
            .count(),
        1
    );
}

#[test]
fn binary_garbage() {
    let Some(f) = Fixture::new("binary_garbage", &[]) else {
        return;
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let store_before = namespaces(&f.m.store);
    for i in 0..200 {
        let len = 1 + (rng.next() % 4096) as usize;
        let mut blob: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // One line per blob; some blobs lead with `{` to get past a first-byte check.
        for b in blob.iter_mut() {
            if *b == b'\n' {
                *b = 0xFF;
            }
        }
        if i % 3 == 0 {
            blob[0] = b'{';
        }
        blob.push(b'\n');
        f.rejects(&blob, libc::EINVAL, &format!("garbage blob {i}"));
        if i % 20 == 0 {
            let mut root = Ctl::open(&f.m.path("ctl"));
            assert_eq!(root.send(&blob), Err(libc::EINVAL), "garbage on root ctl");
        }
    }
    // Garbage with newlines in it: several lines, all rejected together.
    let mut multi: Vec<u8> = (0..8192).map(|_| rng.next() as u8).collect();
    multi.push(b'\n');
    f.rejects(&multi, libc::EINVAL, "multi-line garbage");
    assert_eq!(
        namespaces(&f.m.store),
        store_before,
        "garbage on the root ctl created a namespace"
    );
    f.assert_alive();
}

#[test]
fn one_bad_line_fails_the_whole_write() {
    let Some(f) = Fixture::new("one_bad_line_fails_the_whole_write", &[]) else {
        return;
    };
    let mut batch = msg("good 1");
    batch.extend_from_slice(b"{\"role\":\"user\",\"id\":\"forged\"}\n");
    batch.extend_from_slice(&msg("good 2"));
    f.rejects(&batch, libc::EINVAL, "good, reserved field, good");
    let mut batch = msg("good 1");
    batch.extend_from_slice(b"not json\n");
    f.rejects(&batch, libc::EINVAL, "good, garbage");
    // A good batch is appended whole, in order, one reply per line.
    let mut c = f.ctl();
    let mut batch = Vec::new();
    for i in 0..10 {
        batch.extend_from_slice(&msg(&format!("batch {i}")));
    }
    let replies = c.send(&batch).unwrap();
    assert_eq!(replies.lines().filter(|l| l.starts_with("ok ")).count(), 10);
    let entries = f.entries();
    let n = entries.len();
    for i in 0..10 {
        assert_eq!(
            entries[n - 10 + i]["message"]["content"],
            format!("batch {i}")
        );
    }
}

/// §4: "a final line without `\n` is processed at flush (close)": the writer's close.
/// Linux also sends a FUSE flush when any other copy of the descriptor is closed, e.g.
/// the close-on-exec in every child the writer spawns; that must not cut the writer's
/// half-written line short.
#[test]
fn partial_line_survives_fork_exec() {
    let Some(f) = Fixture::new("partial_line_survives_fork_exec", &[]) else {
        return;
    };
    let before = f.bytes();
    let mut c = f.ctl();
    c.write(b"{\"role\":\"user\",\"content\":\"split ").unwrap();
    // Any subprocess: std opens with O_CLOEXEC, so exec closes the inherited copy.
    let st = Command::new("true").status().unwrap();
    assert!(st.success());
    // A child that inherits the descriptor as fd 7 and closes it itself.
    let fd = c.0.as_raw_fd();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec 7>&-; exit 0"]);
    // SAFETY: dup2 is async-signal-safe; fd is open in the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 7) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    assert!(cmd.status().unwrap().success());
    assert!(f.bytes() == before, "the half line was taken as final");
    let got = c.send(b"line\"}\n");
    assert!(
        matches!(&got, Ok(r) if r.starts_with("ok ")),
        "second half of the line: {got:?}"
    );
    let last = f.entries().pop().unwrap();
    assert_eq!(last["message"]["content"], "split line");

    // The writer's own close still processes a final line without `\n`, children or not.
    c.write(b"{\"role\":\"user\",\"content\":\"closed by the writer\"}")
        .unwrap();
    assert!(Command::new("true").status().unwrap().success());
    assert_eq!(f.entries().len(), before_len(&before) + 1);
    assert_eq!(c.close(), Ok(()));
    let last = f.entries().pop().unwrap();
    assert_eq!(last["message"]["content"], "closed by the writer");
    assert_eq!(f.entries().len(), before_len(&before) + 2);
}

fn before_len(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

#[test]
fn many_handles_with_partial_lines() {
    const N: usize = 200;
    let Some(f) = Fixture::new("many_handles_with_partial_lines", &[]) else {
        return;
    };
    let before = f.bytes();
    let mut handles: Vec<Ctl> = (0..N).map(|_| f.ctl()).collect();
    for (i, h) in handles.iter_mut().enumerate() {
        let part = format!("{{\"role\":\"user\",\"content\":\"handle {i}");
        assert_eq!(h.write(part.as_bytes()), Ok(()));
    }
    assert!(f.bytes() == before, "partial lines are not appended");
    let mut expect = Vec::new();
    // Close in an order unrelated to opening, three ways: completed with `\n` (replied
    // on the handle), completed without `\n` (processed at close), left incomplete
    // (EINVAL at close, nothing appended).
    let mut order: Vec<usize> = (0..N).collect();
    let mut rng = Rng(42);
    for i in (1..N).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut slots: Vec<Option<Ctl>> = handles.into_iter().map(Some).collect();
    for &i in &order {
        let mut h = slots[i].take().unwrap();
        match i % 3 {
            0 => {
                let reply = h.send(b"\"}\n").unwrap();
                assert!(reply.starts_with("ok "), "handle {i}: {reply:?}");
                h.close().unwrap();
                expect.push(i);
            }
            1 => {
                h.write(b"\"}").unwrap();
                assert_eq!(h.close(), Ok(()), "handle {i}: a final line at close");
                expect.push(i);
            }
            _ => {
                assert_eq!(h.close(), Err(libc::EINVAL), "handle {i}: incomplete line");
            }
        }
    }
    let after = f.bytes();
    assert!(after.starts_with(&before));
    let new = entries_of(&after[before.len()..]);
    let got: Vec<String> = new
        .iter()
        .map(|e| e["message"]["content"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = expect.iter().map(|i| format!("handle {i}")).collect();
    assert_eq!(
        got, want,
        "exactly the completed lines, in completion order"
    );
    f.assert_alive();
}

#[test]
fn bad_session_ids() {
    let Some(f) = Fixture::new("bad_session_ids", &[]) else {
        return;
    };
    let tree = |root: &Path| -> Vec<(PathBuf, u64)> {
        let mut out = Vec::new();
        for ns in std::fs::read_dir(root).unwrap() {
            let ns = ns.unwrap().path();
            for s in std::fs::read_dir(&ns).unwrap() {
                let p = s.unwrap().path();
                let len = std::fs::symlink_metadata(&p).unwrap().len();
                out.push((p, len));
            }
        }
        out.sort();
        out
    };
    let line = |id: &str| {
        format!(
            "{{\"cwd\":\"/ids\",\"session-id\":{},\"role\":\"user\",\"content\":\"x\"}}\n",
            serde_json::to_string(id).unwrap()
        )
    };
    let before = tree(&f.m.store);
    for (id, what) in [
        ("a/b", "slash"),
        ("/etc", "leading slash"),
        ("..", "dot-dot"),
        ("../../x", "dot-dot path"),
        (".", "dot"),
        ("a.b", "dot inside"),
        ("", "empty"),
        ("é", "non-ASCII"),
        ("a b", "space"),
        ("a\\b", "backslash"),
        ("a\nb", "newline"),
        ("a\u{0}b", "NUL"),
    ] {
        let mut root = Ctl::open(&f.m.path("ctl"));
        assert_eq!(root.send(line(id).as_bytes()), Err(libc::EINVAL), "{what}");
    }
    let mut root = Ctl::open(&f.m.path("ctl"));
    assert_eq!(
        root.send(line(&"a".repeat(65)).as_bytes()),
        Err(libc::EINVAL),
        "65 characters"
    );
    let mut root = Ctl::open(&f.m.path("ctl"));
    assert_eq!(
        root.send(b"{\"cwd\":\"/ids\",\"session-id\":7,\"role\":\"user\"}\n"),
        Err(libc::EINVAL),
        "a number"
    );
    assert_eq!(
        tree(&f.m.store),
        before,
        "a rejected session-id created something"
    );

    // 64 characters is fine, once.
    let id64 = "Z".repeat(64);
    let mut root = Ctl::open(&f.m.path("ctl"));
    let reply = root.send(line(&id64).as_bytes()).unwrap();
    assert!(reply.starts_with("ok "), "{reply:?}");
    assert!(reply.trim_end().ends_with(&format!("_{id64}")), "{reply:?}");
    let with_one = tree(&f.m.store);
    let mut root = Ctl::open(&f.m.path("ctl"));
    assert!(
        root.send(line(&id64).as_bytes()).is_err(),
        "a session-id already in use"
    );
    assert_eq!(tree(&f.m.store), with_one);
    f.assert_alive();
}

#[test]
fn vanished_session_file_is_enoent() {
    let Some(f) = Fixture::new("vanished_session_file_is_enoent", &[]) else {
        return;
    };
    let mut c = f.ctl();
    std::fs::remove_file(&f.file).unwrap();
    assert_eq!(c.send(&msg("too late")), Err(libc::ENOENT));
    assert!(!f.file.exists(), "the session was recreated by an append");
    // The daemon still serves other sessions.
    let other = f.m.create_session("/hostile/other", "hello");
    let mut c = Ctl::open(&other.join("ctl"));
    assert!(c.send(&msg("fine")).unwrap().starts_with("ok "));
}
