//! Reading transcripts through FUSE passthrough, and `fen-fs status` on a mount of
//! other agents' stores.

mod support;

use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Mount, fen_fs, out_text};

const ID: &str = "11111111-1111-4111-8111-111111111111";

/// A Claude Code store with one session of about `bytes` bytes.
fn claude_store(tmp: &Path, bytes: usize) -> (PathBuf, PathBuf) {
    let root = tmp.join("claude");
    let project = root.join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    let mut text = String::new();
    let mut parent = Value::Null;
    let mut i = 0;
    while text.len() < bytes {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        let line = serde_json::json!({
            "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": ID, "cwd": "/w",
            "timestamp": "2025-07-01T10:00:00.000Z",
            "message": {"role": "user", "content": format!("line {i} {}", "x".repeat(4000))}
        });
        text.push_str(&format!("{line}\n"));
        parent = Value::String(uuid);
        i += 1;
    }
    std::fs::write(&file, text).unwrap();
    (root, file)
}

fn status_of(m: &Mount) -> Value {
    let out = fen_fs().args(["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| Path::new(r["mountpoint"].as_str().unwrap()) == m.mp)
        .expect("the mount is in status")
}

/// Bytes the daemon has read through read(2)-like calls so far.
fn daemon_reads(m: &Mount) -> u64 {
    let pid = m.daemon_pid().expect("daemon");
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn append(path: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Another agent's transcript, and fen's, read through the mount: byte for byte, the
/// true size, an agent's append seen by the next read and by `tail -f`. Where the
/// kernel reads the files itself (status says passthrough is on), the daemon reads
/// almost none of their bytes.
#[test]
fn transcripts_are_read_as_the_files_are_and_by_the_kernel_where_it_can() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, file) = claude_store(tmp.path(), 8 << 20);
    let source = format!("claude={}", root.display());
    // Usage is not counted in the background and nothing is kept: their reading of the
    // file (a count, a copy) would count among the daemon's reads this test measures.
    let Some(m) = Mount::with_env(
        "transcripts_are_read_as_the_files_are_and_by_the_kernel_where_it_can",
        &["--no-detect", "--no-keep", "--source", &source],
        &[("FEN_FS_USAGE", "off")],
    ) else {
        return;
    };
    let dir = std::fs::read_dir(m.path("w"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(ID))
        .unwrap()
        .path();
    let transcript = dir.join("transcript.jsonl");
    let fen = m.create_session("/w", "fen's own");
    let before = daemon_reads(&m);
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        std::fs::read(&file).unwrap()
    );
    assert_eq!(
        std::fs::read(fen.join("transcript.jsonl")).unwrap(),
        std::fs::read(m.backing_file(&fen)).unwrap()
    );
    let read = daemon_reads(&m) - before;
    let passthrough = status_of(&m)["passthrough"].as_str().unwrap().to_string();
    if passthrough == "on" {
        assert!(read < 1 << 20, "the daemon read {read} bytes of 8 MiB");
    } else {
        assert!(passthrough.starts_with("off ("), "{passthrough}");
        assert!(m.daemon_log().contains("FUSE passthrough is off"));
    }

    // One handle held open (`tail -f`), the agent appends: the size is true, the next
    // read and the follower see the new line.
    // From the byte after the present end, so whenever tail starts (a loaded machine
    // may start it after the append) it follows from the same place.
    let from = format!("+{}", std::fs::metadata(&transcript).unwrap().len() + 1);
    let mut tail = std::process::Command::new("tail")
        .args(["-c", &from, "-f", "-s", "0.1"])
        .arg(&transcript)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = serde_json::json!({
        "type": "user", "uuid": "new", "parentUuid": "00000000-0000-4000-8000-000000000000",
        "sessionId": ID, "cwd": "/w", "timestamp": "2025-07-01T11:00:00.000Z",
        "message": {"role": "user", "content": "appended by the agent"}
    })
    .to_string();
    append(&file, &line);
    assert_eq!(
        std::fs::metadata(&transcript).unwrap().len(),
        std::fs::metadata(&file).unwrap().len()
    );
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        std::fs::read(&file).unwrap()
    );
    let mut seen = Vec::new();
    let mut out = tail.stdout.take().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("appended by the agent")
        && std::time::Instant::now() < deadline
    {
        let n = out.read(&mut buf).unwrap();
        seen.extend_from_slice(&buf[..n]);
    }
    tail.kill().unwrap();
    tail.wait().unwrap();
    assert_eq!(String::from_utf8_lossy(&seen), format!("{line}\n"));
}

/// `fen-fs status` counts the sessions of every source a mount shows, not only fen's.
#[test]
fn status_counts_every_sources_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, _) = claude_store(tmp.path(), 10_000);
    let project = root.join("projects/-w");
    for id in [
        "22222222-2222-4222-8222-222222222222",
        "33333333-3333-4333-8333-333333333333",
    ] {
        std::fs::copy(
            project.join(format!("{ID}.jsonl")),
            project.join(format!("{id}.jsonl")),
        )
        .unwrap();
    }
    let source = format!("claude={}", root.display());
    let Some(m) = Mount::with_args(
        "status_counts_every_sources_sessions",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let row = status_of(&m);
    assert_eq!(row["sessions"], 3, "{row}");
    assert_eq!(row["sessions_by_agent"]["claude"], 3, "{row}");
    assert_eq!(row["sessions_by_agent"]["fen"], 0, "{row}");
    m.create_session("/w", "one of fen's");
    let row = status_of(&m);
    assert_eq!(row["sessions"], 4, "{row}");
    let table = fen_fs().arg("status").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    let ours = table
        .lines()
        .find(|l| l.starts_with(&m.mp.display().to_string()))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(ours.split_whitespace().nth(2) == Some("4"), "{table}");
    assert!(
        table.lines().next().unwrap().contains("PASSTHROUGH"),
        "{table}"
    );
}

/// With passthrough off (here by FEN_FS_PASSTHROUGH=off; else when the kernel or the
/// privileges refuse it) transcripts are served through the daemon: same bytes, one
/// line in the log saying so, and status says off and why.
#[test]
fn without_passthrough_the_daemon_serves_transcripts_and_says_so_once() {
    if !support::fuse_available(
        "without_passthrough_the_daemon_serves_transcripts_and_says_so_once",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (root, file) = claude_store(tmp.path(), 2 << 20);
    let source = format!("claude={}", root.display());
    let m = Mount::unmounted(&["--no-detect", "--source", &source]);
    let out = fen_fs()
        .env("FEN_FS_PASSTHROUGH", "off")
        .arg("mount")
        .arg(&m.mp)
        .arg("--store")
        .arg(&m.store)
        .arg("--log-file")
        .arg(m.tmp.path().join("daemon.log"))
        .args(&m.args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let dir = std::fs::read_dir(m.path("w"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let before = daemon_reads(&m);
    for _ in 0..3 {
        assert_eq!(
            std::fs::read(dir.join("transcript.jsonl")).unwrap(),
            std::fs::read(&file).unwrap()
        );
    }
    // (Later reads may come from the mount's page cache.)
    assert!(daemon_reads(&m) - before >= std::fs::metadata(&file).unwrap().len());
    assert_eq!(
        status_of(&m)["passthrough"],
        "off (turned off by FEN_FS_PASSTHROUGH=off)"
    );
    assert_eq!(m.daemon_log().matches("FUSE passthrough is off").count(), 1);
}
