//! Mounted tests of the control files (§4): creating sessions through the root `ctl`,
//! replies read back on the same handle, and bad lines failing with the spec's errno,
//! visibly to a shell, leaving the transcript untouched and the reason in the log.
mod support;
use support::out_text;

use std::ffi::CString;
use std::io::{Read, Write};
use std::ops::Deref;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{PoisonError, RwLock};

/// `flush` comes with every close of a descriptor of an open file, including the
/// copies a forked child closes at `exec` (O_CLOEXEC) or exit. While this process
/// holds a ctl handle with a partial line, a process started by any other test thread
/// makes the daemon process that partial line early (see
/// `a_fork_does_not_split_a_partial_line`). So: starting a process takes the read
/// side of this lock, holding a partial line in this process the write side.
static SPAWN: RwLock<()> = RwLock::new(());

fn spawning<T>(f: impl FnOnce() -> T) -> T {
    let _guard = SPAWN.read().unwrap_or_else(PoisonError::into_inner);
    f()
}

/// A `support::Mount` whose mount and unmount (both run `fen-fs`) go through `spawning`.
struct Mounted(Option<support::Mount>);

impl Deref for Mounted {
    type Target = support::Mount;
    fn deref(&self) -> &support::Mount {
        self.0.as_ref().unwrap()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        spawning(|| drop(self.0.take()));
    }
}

fn mount(test: &str, args: &[&str]) -> Option<Mounted> {
    spawning(|| support::Mount::with_args(test, args)).map(|m| Mounted(Some(m)))
}

/// Writes `bytes` on an `O_RDWR` handle and returns the reply read back (the write
/// itself may fail: the reply says why).
fn ctl_rw(ctl: &Path, bytes: &[u8]) -> String {
    ctl_rw_errno(ctl, bytes).1
}

/// As `ctl_rw`, with the errno of the write.
fn ctl_rw_errno(ctl: &Path, bytes: &[u8]) -> (Option<i32>, String) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ctl)
        .unwrap();
    let errno = f.write_all(bytes).err().map(|e| e.raw_os_error().unwrap());
    let mut reply = String::new();
    f.read_to_string(&mut reply).unwrap();
    (errno, reply)
}

/// `sh -c script "$@"`: the script gets `args` as `$1`, `$2`, ….
fn sh_args(cwd: &Path, script: &str, args: &[&str]) -> Output {
    spawning(|| support::sh_in(cwd, script, args))
}

/// `sh -c script` in the mount point.
fn sh(m: &support::Mount, script: &str) -> Output {
    spawning(|| m.sh(script))
}

/// The errno of `write(2)` and of `close(2)` on a fresh `O_WRONLY|O_APPEND` descriptor.
fn write_then_close(path: &Path, data: &[u8]) -> (Option<i32>, Option<i32>) {
    let _no_forks = SPAWN.write().unwrap_or_else(PoisonError::into_inner);
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C string; the descriptor is ours and closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_APPEND) };
    assert!(
        fd >= 0,
        "open {path:?}: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: valid buffer and descriptor.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let write_err = if n < 0 {
        std::io::Error::last_os_error().raw_os_error()
    } else {
        assert_eq!(n as usize, data.len(), "short write");
        None
    };
    // SAFETY: closing our own descriptor once.
    let r = unsafe { libc::close(fd) };
    let close_err = (r < 0)
        .then(|| std::io::Error::last_os_error().raw_os_error())
        .flatten();
    (write_err, close_err)
}

fn is_stamp(s: &str) -> bool {
    // YYYY-MM-DDTHH-MM-SS-mmmZ
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 | 13 | 16 | 19 => c == b'-',
            10 => c == b'T',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn index(m: &support::Mount, ns: &str) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(m.path(ns).join("index.json")).unwrap();
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn sessions_in(m: &support::Mount, ns: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(m.path(ns))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "latest" && n != "index.json")
        .collect();
    v.sort();
    v
}

/// (2) The root ctl: reply on the same handle, `latest`, index.json, `>` and `>>`,
/// `session-id`, duplicate session-id.
#[test]
fn root_ctl_creates_sessions() {
    let Some(m) = mount("root_ctl_creates_sessions", &[]) else {
        return;
    };
    let reply = ctl_rw(
        &m.path("ctl"),
        b"{\"cwd\":\"/home/u/proj\",\"role\":\"user\",\"content\":\"first\"}\n",
    );
    let words: Vec<&str> = reply.split_whitespace().collect();
    assert_eq!(words.len(), 3, "reply {reply:?}");
    assert_eq!(words[0], "ok");
    assert!(
        reply.ends_with('\n') && reply.lines().count() == 1,
        "{reply:?}"
    );
    let entry_id = uuid::Uuid::parse_str(words[1]).expect("entry id is a UUID");
    assert_eq!(entry_id.get_version_num(), 7);
    let (ns, dir) = words[2].split_once('/').unwrap();
    assert_eq!(ns, "home-u-proj", "the mount folder name");
    let (stamp, sid) = dir.split_once('_').unwrap();
    assert!(is_stamp(stamp), "{dir}");
    let sid = uuid::Uuid::parse_str(sid).expect("session id is a UUID");
    assert_eq!(sid.get_version_num(), 7);
    assert_eq!(sid.to_string(), dir.split_once('_').unwrap().1, "lowercase");
    assert_ne!(sid, entry_id);
    let s = m.path(words[2]);
    assert!(s.is_dir());
    assert!(m.backing_file(&s).is_file());

    // latest points at it; index.json lists it; meta.json knows the entry.
    let latest = std::fs::read_link(m.path(ns).join("latest")).unwrap();
    assert_eq!(latest, PathBuf::from(dir));
    let out = sh(&m, &format!("readlink './{ns}/latest'"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), dir);
    let idx = index(&m, ns);
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0]["dir"], dir);
    assert_eq!(idx[0]["id"], sid.to_string());
    assert_eq!(idx[0]["cwd"], "/home/u/proj");
    assert_eq!(idx[0]["preview"], "first");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["last_entry_id"], words[1]);
    assert_eq!(meta["id"], sid.to_string());

    // The truncating form `echo … > ctl`, from a shell, on the root ctl.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = sh(
        &m,
        r#"echo '{"cwd":"/home/u/proj","role":"user","content":"second"}' > ctl"#,
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let sessions = sessions_in(&m, ns);
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let second = sessions.iter().find(|d| d.as_str() != dir).unwrap().clone();
    assert_eq!(
        std::fs::read_link(m.path(ns).join("latest")).unwrap(),
        PathBuf::from(&second)
    );
    let idx = index(&m, ns);
    assert_eq!(idx.len(), 2);
    assert_eq!(idx[0]["dir"], second.as_str(), "newest first");
    assert_eq!(idx[1]["dir"], dir);

    // And `>` / `>>` on a session ctl.
    let sd = m.path(ns).join(&second);
    let out = sh(
        &m,
        &format!(
            r#"echo '{{"role":"assistant","content":"a"}}' > '{0}/ctl' && echo '{{"role":"user","content":"b"}}' >> '{0}/ctl'"#,
            sd.display()
        ),
    );
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(
        std::fs::read_to_string(sd.join("conversation.json")).unwrap(),
        "[\n{\"role\":\"user\",\"content\":\"second\"},\n{\"role\":\"assistant\",\"content\":\"a\"},\n{\"role\":\"user\",\"content\":\"b\"}\n]\n"
    );

    // A chosen session-id names the folder `<stamp>_<session-id>`.
    let reply = ctl_rw(
        &m.path("ctl"),
        b"{\"cwd\":\"/srv/other\",\"session-id\":\"my-Session_01\",\"role\":\"user\",\"content\":\"named\"}\n",
    );
    assert!(reply.starts_with("ok "), "{reply:?}");
    let rel = reply.split_whitespace().nth(2).unwrap();
    let (ns2, dir2) = rel.split_once('/').unwrap();
    assert_eq!(ns2, "srv-other");
    let (stamp2, sid2) = dir2.split_once('_').unwrap();
    assert!(is_stamp(stamp2), "{dir2}");
    assert_eq!(sid2, "my-Session_01");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.path(rel).join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["id"], "my-Session_01");
    assert_eq!(meta["cwd"], "/srv/other");

    // A duplicate session-id fails, visibly, and creates nothing.
    let before = sessions_in(&m, ns2);
    let out = sh(
        &m,
        r#"echo '{"cwd":"/srv/other","session-id":"my-Session_01","role":"user","content":"again"}' >> ctl"#,
    );
    assert!(
        !out.status.success(),
        "duplicate accepted: {}",
        out_text(&out)
    );
    assert!(!out.stderr.is_empty());
    let (errno, reply) = ctl_rw_errno(
        &m.path("ctl"),
        b"{\"cwd\":\"/elsewhere\",\"session-id\":\"my-Session_01\",\"role\":\"user\",\"content\":\"again\"}\n",
    );
    assert!(errno.is_some(), "duplicate session-id accepted: {reply:?}");
    assert!(reply.starts_with("err E"), "{reply:?}");
    assert_eq!(sessions_in(&m, ns2), before);
    assert!(!m.path("elsewhere").exists());

    // A bad session-id and a missing cwd are refused.
    for bad in [
        r#"{"cwd":"/p","session-id":"a/b","role":"user","content":"x"}"#,
        r#"{"cwd":"/p","session-id":"","role":"user","content":"x"}"#,
        r#"{"role":"user","content":"no cwd"}"#,
        r#"{"cwd":"relative","role":"user","content":"x"}"#,
    ] {
        let (w, _) = write_then_close(&m.path("ctl"), format!("{bad}\n").as_bytes());
        assert_eq!(w, Some(libc::EINVAL), "{bad}");
    }
    assert!(!m.path("p").exists());
    assert!(!m.path("relative").exists());
}

/// One bad-line case for a session ctl: what to write, the errno, whether it shows at
/// close (unterminated) instead of at write, and a word of the logged reason.
struct Bad {
    name: &'static str,
    bytes: Vec<u8>,
    errno: i32,
    at_close: bool,
    reason: &'static str,
}

fn check_bad_lines(m: &support::Mount, s: &Path, cases: &[Bad]) {
    let ctl = s.join("ctl");
    let backing = m.backing_file(s);
    for case in cases {
        let before = std::fs::read(&backing).unwrap();
        let conv_before = std::fs::read(s.join("conversation.json")).unwrap();

        // Through libc: the errno, at write or at close.
        let (w, c) = write_then_close(&ctl, &case.bytes);
        if case.at_close {
            assert_eq!(w, None, "{}: write should succeed", case.name);
            assert_eq!(c, Some(case.errno), "{}: close errno", case.name);
        } else {
            assert_eq!(w, Some(case.errno), "{}: write errno", case.name);
        }
        assert_eq!(
            std::fs::read(&backing).unwrap(),
            before,
            "{}: the transcript changed",
            case.name
        );

        // Through a shell: a non-zero exit and a message. `env printf` is the coreutils
        // printf, which reports errors of the final close of stdout, too.
        let out = sh_args(
            s,
            r#"env printf '%s' "$1" >> ctl"#,
            &[std::str::from_utf8(&case.bytes).unwrap_or("")],
        );
        if std::str::from_utf8(&case.bytes).is_ok() {
            assert!(
                !out.status.success(),
                "{}: the shell did not see the error: {}",
                case.name,
                out_text(&out)
            );
            let msg = String::from_utf8_lossy(&out.stderr);
            let expected = if case.errno == libc::EFBIG {
                "File too large"
            } else {
                "Invalid argument"
            };
            assert!(msg.contains(expected), "{}: stderr {msg:?}", case.name);
        }
        assert_eq!(
            std::fs::read(&backing).unwrap(),
            before,
            "{}: the transcript changed (shell)",
            case.name
        );
        assert_eq!(
            std::fs::read(s.join("conversation.json")).unwrap(),
            conv_before,
            "{}",
            case.name
        );

        // A fresh read of ctl shows the reason, with the writer's pid.
        let log = std::fs::read_to_string(&ctl).unwrap();
        let name = if case.errno == libc::EFBIG {
            "EFBIG"
        } else {
            "EINVAL"
        };
        let last = log.lines().last().unwrap_or_default();
        assert!(
            last.contains(&format!("err {name} ")) && last.contains("pid="),
            "{}: last log line {last:?}\nlog:\n{log}",
            case.name
        );
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("err {name} ")) && l.contains(case.reason)),
            "{}: reason {:?} not in the log:\n{log}",
            case.name,
            case.reason
        );
    }
}

/// (6) Bad lines fail with EINVAL, visibly, leaving the transcript byte-identical.
#[test]
fn bad_lines_fail_with_einval_and_change_nothing() {
    let Some(m) = mount("bad_lines_fail_with_einval_and_change_nothing", &[]) else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let good = br#"{"role":"assistant","content":"fine"}"#;
    let mut mixed = good.to_vec();
    mixed.extend_from_slice(b"\nnot json\n");
    let mut bad_utf8 = br#"{"role":"user","content":"caf"#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe\"}\n");
    let cases = vec![
        Bad {
            name: "not JSON",
            bytes: b"this is not json\n".to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "not JSON",
        },
        Bad {
            name: "a JSON array",
            bytes: b"[{\"role\":\"user\",\"content\":\"x\"}]\n".to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "array",
        },
        Bad {
            name: "unknown first-kept id",
            bytes: br#"{"type":"compaction","summary":"s","first-kept-entry-id":"01939f3c-0000-7000-8000-000000000000"}
"#
            .to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "first-kept-entry-id",
        },
        Bad {
            name: "reserved id",
            bytes: br#"{"role":"user","content":"x","id":"01939f3c-0000-7000-8000-000000000000"}
"#
            .to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "\"id\"",
        },
        Bad {
            name: "reserved parent-id",
            bytes: br#"{"type":"message","message":{"role":"user","content":"x"},"parent-id":null}
"#
            .to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "parent-id",
        },
        Bad {
            name: "reserved timestamp",
            bytes: br#"{"role":"user","content":"x","timestamp":"2026-01-01T00:00:00.000Z"}
"#
            .to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "timestamp",
        },
        Bad {
            name: "invalid UTF-8",
            bytes: bad_utf8,
            errno: libc::EINVAL,
            at_close: false,
            reason: "UTF-8",
        },
        Bad {
            name: "a good line and a bad one in one write",
            bytes: mixed,
            errno: libc::EINVAL,
            at_close: false,
            reason: "not JSON",
        },
        Bad {
            name: "compaction without summary",
            bytes: br#"{"type":"compaction","first-kept-entry-id":null}
"#
            .to_vec(),
            errno: libc::EINVAL,
            at_close: false,
            reason: "summary",
        },
        Bad {
            name: "unterminated bad line at close",
            bytes: b"[1,2,3]".to_vec(),
            errno: libc::EINVAL,
            at_close: true,
            reason: "array",
        },
    ];
    check_bad_lines(&m, &s, &cases);

    // The invalid UTF-8 line through a shell too (printf octal escapes).
    let backing = m.backing_file(&s);
    let before = std::fs::read(&backing).unwrap();
    let out = sh_args(
        &s,
        r#"printf '{"role":"user","content":"caf\377"}\n' >> ctl"#,
        &[],
    );
    assert!(!out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(&backing).unwrap(), before);

    // Lines of earlier writes stay; the session still works.
    let reply = ctl_rw(
        &s.join("ctl"),
        b"{\"role\":\"user\",\"content\":\"after\"}\n",
    );
    assert!(reply.starts_with("ok "), "{reply:?}");
    let conv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.join("conversation.json")).unwrap()).unwrap();
    assert_eq!(
        conv,
        serde_json::json!([{"role":"user","content":"hi"},{"role":"user","content":"after"}])
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["malformed_lines"], 0);

    // On the O_RDWR handle the reply says why, one line per line written.
    let (errno, reply) = ctl_rw_errno(&s.join("ctl"), b"{\"role\":\"user\"}\n[]\n");
    assert_eq!(errno, Some(libc::EINVAL));
    let lines: Vec<&str> = reply.lines().collect();
    assert_eq!(lines.len(), 2, "{reply:?}");
    assert!(lines.iter().all(|l| l.starts_with("err ")), "{reply:?}");
    assert!(lines[1].starts_with("err EINVAL "), "{reply:?}");
}

/// (6, EFBIG) A line over `--max-entry-bytes` fails with EFBIG, terminated or not.
#[test]
fn oversized_lines_fail_with_efbig() {
    let Some(m) = mount(
        "oversized_lines_fail_with_efbig",
        &["--max-entry-bytes", "4096"],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let big = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(5000));
    assert!(big.len() > 4096);
    let cases = vec![
        Bad {
            name: "a 5000-byte line",
            bytes: format!("{big}\n").into_bytes(),
            errno: libc::EFBIG,
            at_close: false,
            reason: "max-entry-bytes",
        },
        Bad {
            name: "an unterminated 5000-byte buffer",
            bytes: big.clone().into_bytes(),
            errno: libc::EFBIG,
            at_close: false,
            reason: "max-entry-bytes",
        },
    ];
    check_bad_lines(&m, &s, &cases);

    // Small lines still pass, including one just under the limit.
    let ok = format!(r#"{{"role":"user","content":"{}"}}"#, "y".repeat(4000));
    assert!(ok.len() <= 4096);
    let reply = ctl_rw(&s.join("ctl"), format!("{ok}\n").as_bytes());
    assert!(reply.starts_with("ok "), "{reply:?}");
    // The limit also applies to the root ctl.
    let root_big = format!(
        r#"{{"cwd":"/home/u/proj","role":"user","content":"{}"}}"#,
        "z".repeat(5000)
    );
    let (w, _) = write_then_close(&m.path("ctl"), format!("{root_big}\n").as_bytes());
    assert_eq!(w, Some(libc::EFBIG));
    let sessions: Vec<_> = std::fs::read_dir(m.path("home-u-proj")).unwrap().collect();
    assert_eq!(sessions.len(), 3, "latest, index.json and one session");
}

/// §4 framing: lines split across writes, per-handle buffers, a final line without
/// `\n` processed at close, several lines per write, blank lines, ignored offsets,
/// and `meta.json`'s count of open writers.
#[test]
fn ctl_frames_lines_per_handle() {
    use std::os::unix::fs::FileExt;
    let Some(m) = mount("ctl_frames_lines_per_handle", &[]) else {
        return;
    };
    let s = m.create_session("/home/u/proj", "m0");
    let ctl = s.join("ctl");
    let open_rw = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&ctl)
            .unwrap()
    };
    let read_reply = |f: &mut std::fs::File| {
        let mut r = String::new();
        f.read_to_string(&mut r).unwrap();
        r
    };

    // One line split over two writes of one handle, while another handle writes a
    // whole line in between: buffers are per handle.
    let no_forks = SPAWN.write().unwrap_or_else(PoisonError::into_inner);
    let mut a = open_rw();
    let mut b = open_rw();
    a.write_all(br#"{"role":"user","#).unwrap();
    b.write_all(b"{\"role\":\"user\",\"content\":\"B\"}\n")
        .unwrap();
    a.write_all(b"\"content\":\"A\"}\n").unwrap();
    let ra = read_reply(&mut a);
    let rb = read_reply(&mut b);
    assert!(ra.starts_with("ok ") && ra.lines().count() == 1, "{ra:?}");
    assert!(rb.starts_with("ok ") && rb.lines().count() == 1, "{rb:?}");
    drop(no_forks);

    // Several lines (and blank ones) in one write: one reply per line, in order.
    let mut c = open_rw();
    c.write_all(b"{\"role\":\"user\",\"content\":\"c1\"}\n\n   \n{\"role\":\"assistant\",\"content\":\"c2\"}\n")
        .unwrap();
    let rc = read_reply(&mut c);
    let ids: Vec<&str> = rc
        .lines()
        .map(|l| l.strip_prefix("ok ").unwrap_or_else(|| panic!("{rc:?}")))
        .collect();
    assert_eq!(ids.len(), 2, "{rc:?}");
    assert!(ids[0] < ids[1]);

    // A handle open for writing is a stream (no position, so writers run
    // concurrently): a positional write fails with ESPIPE, as on a pipe, and
    // appends nothing; a plain write appends.
    let mut d = open_rw();
    let e = d
        .write_all_at(b"{\"role\":\"user\",\"content\":\"lost\"}\n", 123_456)
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ESPIPE));
    d.write_all(b"{\"role\":\"user\",\"content\":\"at offset\"}\n")
        .unwrap();

    // meta.json counts the ctl handles open for writing.
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(s.join("meta.json")).unwrap())
            .unwrap()["writers"],
        4
    );
    drop((a, b, c, d));
    // The kernel sends RELEASE after close() has returned: give it a moment.
    let writers = || {
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(s.join("meta.json")).unwrap())
            .unwrap()["writers"]
            .clone()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while writers() != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(writers(), 0);

    // A final line without `\n` is processed at close; the shell sees success.
    let out = sh(
        &m,
        &format!(
            r#"env printf '{{"role":"user","content":"no newline"}}' >> '{}'"#,
            ctl.display()
        ),
    );
    assert!(out.status.success(), "{}", out_text(&out));

    let conv = std::fs::read_to_string(s.join("conversation.json")).unwrap();
    assert_eq!(
        conv,
        "[\n{\"role\":\"user\",\"content\":\"m0\"},\n{\"role\":\"user\",\"content\":\"B\"},\n\
         {\"role\":\"user\",\"content\":\"A\"},\n{\"role\":\"user\",\"content\":\"c1\"},\n\
         {\"role\":\"assistant\",\"content\":\"c2\"},\n{\"role\":\"user\",\"content\":\"at offset\"},\n\
         {\"role\":\"user\",\"content\":\"no newline\"}\n]\n"
    );
    // The ids chain: each entry's parent-id is the entry before it.
    let entries = support::backing_entries(&m, &s);
    assert_eq!(entries.len(), 7);
    assert_eq!(entries[0]["parent-id"], serde_json::Value::Null);
    for w in entries.windows(2) {
        assert_eq!(w[1]["parent-id"], w[0]["id"]);
        assert!(w[1]["id"].as_str() > w[0]["id"].as_str());
    }
}

/// A partial line held by a writer survives another process's close of a copy of the
/// descriptor (a child started with fork+exec closes its inherited O_CLOEXEC copy,
/// which sends FLUSH): §4, "a final line without `\n` is processed at flush (close)"
/// means the writer's close, and "data is buffered per open handle".
#[test]
fn a_fork_does_not_split_a_partial_line() {
    let Some(m) = mount("a_fork_does_not_split_a_partial_line", &[]) else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let _no_other_forks = SPAWN.write().unwrap_or_else(PoisonError::into_inner);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(s.join("ctl"))
        .unwrap();
    f.write_all(br#"{"role":"user","#).unwrap();
    // Any process started meanwhile: it inherits (and at exec closes) our descriptor.
    let st = Command::new("true").status().unwrap();
    assert!(st.success());
    let second = f.write_all(b"\"content\":\"whole\"}\n");
    let mut reply = String::new();
    f.read_to_string(&mut reply).unwrap();
    assert!(second.is_ok(), "{second:?}, replies {reply:?}");
    assert!(
        reply.starts_with("ok ") && reply.lines().count() == 1,
        "{reply:?}"
    );
    drop(f);
    assert_eq!(
        std::fs::read_to_string(s.join("conversation.json")).unwrap(),
        "[\n{\"role\":\"user\",\"content\":\"hi\"},\n{\"role\":\"user\",\"content\":\"whole\"}\n]\n"
    );
}
