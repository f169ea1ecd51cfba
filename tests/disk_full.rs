//! Disk full (§4): an append that does not fit fails with ENOSPC and leaves no partial
//! line (a short write is rolled back by truncating); once space is back, appends work
//! and chain on from the last acknowledged entry.
//!
//! Needs root (a 1 MiB tmpfs holds the store); without it, SKIPPED unless
//! FEN_FS_REQUIRE_FUSE=1.

mod support;

use serde_json::Value;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A small tmpfs, unmounted on drop (after the FUSE mount on it is gone: declare the
/// guard before the `Mount`).
struct Tmpfs {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(test: &str, size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        std::fs::create_dir(&path).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir, path }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("FEN_FS_REQUIRE_FUSE").as_deref() == Ok("1") {
                    panic!("{test}: cannot mount a tmpfs (FEN_FS_REQUIRE_FUSE=1): {why}");
                }
                eprintln!("\n*** SKIPPED {test}: cannot mount a tmpfs (needs root): {why} ***\n");
                None
            }
        }
    }

    fn avail(&self) -> u64 {
        let p = CString::new(self.path.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C string and out-pointer.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(p.as_ptr(), &mut s) }, 0);
        s.f_bavail * s.f_frsize
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let p = CString::new(self.path.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C string. Lazy detach if something still holds it.
        unsafe {
            if libc::umount2(p.as_ptr(), 0) != 0 {
                libc::umount2(p.as_ptr(), libc::MNT_DETACH);
            }
        }
        let _ = &self.dir;
    }
}

struct Ctl(File);

impl Ctl {
    fn open(path: &Path) -> Ctl {
        Ctl(OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap())
    }

    /// One write(2) and its reply, or the errno (its `err` reply is read and checked).
    fn send(&mut self, line: &[u8]) -> Result<String, i32> {
        match self.0.write(line) {
            Ok(n) if n == line.len() => Ok(self.replies()),
            Ok(n) => panic!("short write {n} of {}", line.len()),
            Err(e) => {
                let errno = e.raw_os_error().unwrap();
                let reply = self.replies();
                if errno == libc::ENOSPC {
                    assert!(reply.starts_with("err ENOSPC "), "reply {reply:?}");
                }
                Err(errno)
            }
        }
    }

    fn replies(&mut self) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = self.0.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(out).unwrap()
    }
}

/// Every line whole JSON and `\n`-terminated; entries chained; returns them.
fn whole_lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        bytes.last(),
        Some(&b'\n'),
        "the transcript ends in a partial line"
    );
    let lines: Vec<Value> = bytes[..bytes.len() - 1]
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "line {} is not whole JSON ({e}): {:?}…",
                    i + 1,
                    String::from_utf8_lossy(&l[..l.len().min(120)])
                )
            })
        })
        .collect();
    let mut parent = Value::Null;
    for e in &lines[1..] {
        assert_eq!(e["parent-id"], parent, "parent-id chain");
        parent = e["id"].clone();
    }
    lines
}

fn line(n: usize, pad: usize) -> Vec<u8> {
    // Not page-sized, so the failing write is usually a short one (a partial page
    // fits, the next page does not): the rollback must undo it.
    format!(
        "{{\"role\":\"user\",\"content\":\"entry {n} {}\"}}\n",
        "f".repeat(pad)
    )
    .into_bytes()
}

fn disk_full_with(test: &str, args: &[&str]) {
    let Some(small) = Tmpfs::mount(test, "1m") else {
        return;
    };
    let store = small.path.join("store");
    let Some(m) = support::Mount::on_store(test, &store, args) else {
        return;
    };
    let session = m.create_session("/disk/full", "first");
    let file = m.backing_file(&session);

    // Leave about 20 KB.
    let filler_path = small.path.join("filler");
    let room = small.avail();
    assert!(room > 64 << 10, "tmpfs has {room} bytes free");
    let mut filler = File::create(&filler_path).unwrap();
    let chunk = vec![0xA5u8; 4096];
    let mut left = room - (20 << 10);
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        filler.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    filler.sync_all().unwrap();
    drop(filler);

    let mut acked = Vec::new();
    let mut ctl = Ctl::open(&session.join("ctl"));
    let mut enospc = None;
    for n in 0..200 {
        let before = std::fs::metadata(&file).unwrap().len();
        match ctl.send(&line(n, 2900)) {
            Ok(reply) => {
                let id = reply
                    .strip_prefix("ok ")
                    .unwrap_or_else(|| panic!("reply {reply:?}"));
                acked.push(id.trim_end().to_string());
            }
            Err(e) => {
                assert_eq!(
                    e,
                    libc::ENOSPC,
                    "append {n}: expected ENOSPC, got errno {e}"
                );
                let after = std::fs::metadata(&file).unwrap().len();
                assert_eq!(after, before, "the failed append left bytes behind");
                enospc = Some(n);
                break;
            }
        }
    }
    let Some(failed_at) = enospc else {
        panic!("200 appends of 3 KB into ~20 KB never hit ENOSPC");
    };
    assert!(!acked.is_empty(), "not one append fit in ~20 KB");
    // Keep pushing: different sizes, all must fail cleanly or succeed whole.
    for (k, pad) in [10usize, 500, 1500, 4000, 9000, 70_000]
        .into_iter()
        .enumerate()
    {
        let before = std::fs::read(&file).unwrap();
        match ctl.send(&line(failed_at + 1 + k, pad)) {
            Ok(reply) => acked.push(reply.trim_end()[3..].to_string()),
            Err(e) => {
                assert_eq!(e, libc::ENOSPC, "pad {pad}");
                assert!(std::fs::read(&file).unwrap() == before, "pad {pad}");
            }
        }
    }
    let entries = whole_lines(&file);
    let ids: Vec<&str> = entries[2..]
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids, acked,
        "the file holds exactly the acknowledged entries"
    );

    // A new session cannot be created on a full disk either, and leaves no file
    // behind (a session file exists only once its first entry is written).
    let mut root = Ctl::open(&m.path("ctl"));
    let big_first = format!(
        "{{\"cwd\":\"/disk/other\",\"role\":\"user\",\"content\":\"{}\"}}\n",
        "g".repeat(64 << 10)
    );
    match root.send(big_first.as_bytes()) {
        Err(e) => {
            assert_eq!(e, libc::ENOSPC, "create on a full disk");
            let ns = store.join("--disk-other--");
            let files: Vec<_> = std::fs::read_dir(&ns)
                .map(|d| d.map(|e| e.unwrap().file_name()).collect())
                .unwrap_or_default();
            assert!(files.is_empty(), "left behind: {files:?}");
        }
        Ok(reply) => panic!("a 64 KiB session was created on a full disk: {reply}"),
    }
    // The daemon still answers reads.
    let conv: Value =
        serde_json::from_slice(&std::fs::read(session.join("conversation.json")).unwrap()).unwrap();
    assert_eq!(conv.as_array().unwrap().len(), acked.len() + 1);

    // Space back: appends work again and chain on from the last acknowledged entry.
    std::fs::remove_file(&filler_path).unwrap();
    let reply = ctl
        .send(&line(999, 2900))
        .expect("append after freeing space");
    let id = reply.strip_prefix("ok ").unwrap().trim_end().to_string();
    let entries = whole_lines(&file);
    let last = entries.last().unwrap();
    assert_eq!(last["id"], id.as_str());
    assert_eq!(last["parent-id"], acked.last().unwrap().as_str());
    // Assigned, not shadowed: the first handle must close, or the umount is busy.
    root = Ctl::open(&m.path("ctl"));
    let reply = root
        .send(big_first.as_bytes())
        .expect("create after freeing");
    assert!(reply.starts_with("ok "), "{reply}");

    drop(ctl);
    drop(root);
    drop(m);
}

#[test]
fn disk_full_fsync_always() {
    disk_full_with("disk_full_fsync_always", &[]);
}

#[test]
fn disk_full_fsync_no() {
    disk_full_with("disk_full_fsync_no", &["--fsync", "no"]);
}
