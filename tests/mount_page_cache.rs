//! Views in the kernel's page cache: a view read once is read again from the cache,
//! and when it grows by a message (fen's `ctl` append, another agent's append to its
//! file) only the pages from its first changed byte on go through FUSE again, right
//! after the append and a second later alike. How many bytes the daemon served is
//! read from its `/proc/PID/io` (`wchar`: its replies to the kernel), so the tests
//! count what crossed FUSE rather than timing it. A handle opened before a change
//! still reads its own snapshot; a transcript read through the mount's cache follows
//! growth without stale bytes.

mod support;

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Mount, fen_fs, out_text};

/// Bytes the daemon has written so far (almost all of it replies to the kernel).
fn served(m: &Mount) -> u64 {
    let pid = m.daemon_pid().expect("daemon");
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Reads `path` whole, returning its bytes and how many the daemon served for it.
fn read_counted(m: &Mount, path: &Path) -> (Vec<u8>, u64) {
    let before = served(m);
    let bytes = std::fs::read(path).unwrap();
    (bytes, served(m) - before)
}

/// `a == b`, said briefly (views are megabytes).
#[track_caller]
fn same(a: &[u8], b: &[u8], what: &str) {
    if a != b {
        let at = a.iter().zip(b).position(|(x, y)| x != y);
        panic!(
            "{what}: {} bytes against {} expected, first difference at {at:?}",
            a.len(),
            b.len()
        );
    }
}

/// Mounts a fresh store with `args`, the search index off (its writes would be
/// counted) and `env`.
fn mount(test: &str, args: &[&str], env: &[(&str, &str)]) -> Option<Mount> {
    if !support::fuse_available(test) {
        return None;
    }
    let m = Mount::unmounted(args);
    let out = fen_fs()
        .env("FEN_FS_SEARCH", "off")
        .envs(env.iter().copied())
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
    Some(m)
}

fn message(i: usize, bytes: usize) -> String {
    serde_json::json!({"role": "user", "content": format!("message {i} {}", "x".repeat(bytes))})
        .to_string()
}

/// Appends `lines` to a session through its `ctl`, in writes under 1 MiB.
fn append_all(session: &Path, lines: &[String]) {
    let mut ctl = std::fs::OpenOptions::new()
        .append(true)
        .open(session.join("ctl"))
        .unwrap();
    let mut chunk = String::new();
    for l in lines {
        if chunk.len() + l.len() > 900 << 10 {
            ctl.write_all(chunk.as_bytes()).unwrap();
            chunk.clear();
        }
        chunk.push_str(l);
        chunk.push('\n');
    }
    ctl.write_all(chunk.as_bytes()).unwrap();
}

/// `fen-fs show` of a view, straight from the store (the oracle of a view's bytes).
fn shown(m: &Mount, session: &str, view: &str, extra: &[&str]) -> Vec<u8> {
    let out = fen_fs()
        .args(["show", session, "--view", view, "--store"])
        .arg(&m.store)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    out.stdout
}

/// The checks of a view that grew by one message at its end: read right after the
/// append and a second later, both equal to `expected()`, and only the tail served.
fn reread_after_append(
    m: &Mount,
    view: &Path,
    append: impl FnOnce(),
    expected: impl Fn() -> Vec<u8>,
) {
    let (first, _) = read_counted(m, view);
    let (warm, warm_served) = read_counted(m, view);
    same(&warm, &first, "a warm read");
    let size = first.len() as u64;
    assert!(
        warm_served < size / 20,
        "a warm read of {size} bytes served {warm_served} through FUSE"
    );
    append();
    let (right_after, served_after) = read_counted(m, view);
    same(&right_after, &expected(), "right after the append");
    assert_eq!(
        std::fs::metadata(view).unwrap().len(),
        right_after.len() as u64
    );
    // The old bytes but for the closing `\n]\n` are the new bytes' start.
    same(
        &right_after[..first.len() - 3],
        &first[..first.len() - 3],
        "the unchanged prefix",
    );
    // The changed page and the new message: nothing near the whole view.
    let grown = right_after.len() as u64 - size;
    assert!(
        served_after < grown + (256 << 10),
        "right after the append: {served_after} bytes served for a {grown}-byte growth of a {size}-byte view"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let (later, served_later) = read_counted(m, view);
    same(&later, &right_after, "a second after the append");
    assert!(
        served_later < size / 20,
        "a second after the append: {served_later} bytes served"
    );
}

#[test]
fn a_fen_conversation_that_grows_keeps_its_prefix_in_the_page_cache() {
    let Some(m) = mount(
        "a_fen_conversation_that_grows_keeps_its_prefix_in_the_page_cache",
        &["--fsync", "no", "--no-detect"],
        &[],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/p", "first");
    let lines: Vec<String> = (0..600).map(|i| message(i, 10_000)).collect();
    append_all(&s, &lines);
    let id = support::meta(&s)["id"].as_str().unwrap().to_string();
    let conv = s.join("conversation.json");
    reread_after_append(
        &m,
        &conv,
        || append_all(&s, &[message(600, 100)]),
        || shown(&m, &id, "conversation", &[]),
    );
    // conversation.md and index.json: right after an append, what the store says.
    let md = s.join("conversation.md");
    std::fs::read(&md).unwrap();
    append_all(&s, &[message(601, 100)]);
    same(
        &std::fs::read(&md).unwrap(),
        &shown(&m, &id, "md", &[]),
        "conversation.md",
    );
    let index = s.parent().unwrap().join("index.json");
    std::fs::read(&index).unwrap();
    append_all(&s, &[message(602, 100)]);
    let rows: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(rows[0]["messages"], 604, "{rows}");
}

/// A Claude Code transcript of about `bytes`, its prompts chained; returns the file
/// and its last uuid.
fn claude_file(root: &Path, id: &str, bytes: usize) -> (PathBuf, String) {
    let project = root.join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{id}.jsonl"));
    let mut text = String::new();
    let mut parent = Value::Null;
    let mut i = 0;
    while text.len() < bytes {
        let line = claude_line(id, i, &parent);
        text.push_str(&line);
        parent = Value::String(format!("00000000-0000-4000-8000-{i:012}"));
        i += 1;
    }
    std::fs::write(&file, text).unwrap();
    (file, parent.as_str().unwrap().to_string())
}

fn claude_line(id: &str, i: usize, parent: &Value) -> String {
    let line = serde_json::json!({
        "type": "user", "uuid": format!("00000000-0000-4000-8000-{i:012}"),
        "parentUuid": parent, "sessionId": id, "cwd": "/w",
        "timestamp": "2025-07-01T10:00:00.000Z",
        "message": {"role": "user", "content": format!("line {i} {}", "x".repeat(4000))}
    });
    format!("{line}\n")
}

#[test]
fn another_agents_conversation_that_grows_keeps_its_prefix_in_the_page_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let id = "0b0b0b0b-0000-4000-8000-000000000001";
    let (file, last) = claude_file(&root, id, 6 << 20);
    let source = format!("claude={}", root.display());
    let Some(m) = mount(
        "another_agents_conversation_that_grows_keeps_its_prefix_in_the_page_cache",
        &["--no-detect", "--source", &source],
        &[],
    ) else {
        return;
    };
    let dir = std::fs::read_dir(m.path("w"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let conv = dir.join("conversation.json");
    let append = || {
        let n: usize = 1_000_000;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(claude_line(id, n, &Value::String(last.clone())).as_bytes())
            .unwrap();
    };
    reread_after_append(&m, &conv, append, || {
        shown(
            &m,
            id,
            "conversation",
            &["--no-detect", "--source", &source],
        )
    });
}

/// A handle opened before an append reads its own snapshot to its end, though the
/// file now looks longer to everyone (its last page is not served zero-filled); a
/// handle opened after reads the new state; afterwards the cache serves the new one.
#[test]
fn a_handle_held_across_an_append_still_reads_its_snapshot() {
    let Some(m) = mount(
        "a_handle_held_across_an_append_still_reads_its_snapshot",
        &["--fsync", "no", "--no-detect"],
        &[],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/p", "first");
    let lines: Vec<String> = (0..300).map(|i| message(i, 3_333)).collect();
    append_all(&s, &lines);
    let id = support::meta(&s)["id"].as_str().unwrap().to_string();
    let conv = s.join("conversation.json");
    let before = std::fs::read(&conv).unwrap();
    let mut held = std::fs::File::open(&conv).unwrap();
    let mut start = vec![0u8; before.len() / 2];
    held.read_exact(&mut start).unwrap();
    append_all(&s, &[message(300, 100)]);
    let grown = std::fs::metadata(&conv).unwrap().len();
    assert!(grown > before.len() as u64);
    same(
        &std::fs::read(&conv).unwrap(),
        &shown(&m, &id, "conversation", &[]),
        "a handle opened after the append",
    );
    let mut rest = Vec::new();
    held.read_to_end(&mut rest).unwrap();
    start.extend_from_slice(&rest);
    same(&start, &before, "the held handle's snapshot");
    // Its end again, after the new size was told once more.
    std::fs::metadata(&conv).unwrap();
    held.seek(SeekFrom::Start(before.len() as u64 - 100))
        .unwrap();
    let mut tail = Vec::new();
    held.read_to_end(&mut tail).unwrap();
    same(
        &tail,
        &before[before.len() - 100..],
        "the held handle's end",
    );
    drop(held);
    let (after, _) = read_counted(&m, &conv);
    same(
        &after,
        &shown(&m, &id, "conversation", &[]),
        "after it closed",
    );
    let (again, served_again) = read_counted(&m, &conv);
    same(&again, &after, "again");
    assert!(served_again < after.len() as u64 / 20, "{served_again}");
}

/// Where the kernel does not read transcripts itself, a transcript is read through
/// the mount's page cache: a handle at its end reads an append's bytes, not the
/// zeros its cached last page held past the old end.
#[test]
fn a_cached_transcript_follows_growth_without_stale_bytes() {
    let Some(m) = mount(
        "a_cached_transcript_follows_growth_without_stale_bytes",
        &["--fsync", "no", "--no-detect"],
        &[("FEN_FS_PASSTHROUGH", "off")],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/p", "first");
    append_all(&s, &(0..50).map(|i| message(i, 999)).collect::<Vec<_>>());
    let path = s.join("transcript.jsonl");
    let backing = m.backing_file(&s);
    let mut held = std::fs::File::open(&path).unwrap();
    let mut seen = Vec::new();
    held.read_to_end(&mut seen).unwrap();
    same(&seen, &std::fs::read(&backing).unwrap(), "the transcript");
    for i in 0..3 {
        append_all(&s, &[message(100 + i, 10)]);
        // What `tail -f` does: the size, then the new bytes from the same handle.
        let size = std::fs::metadata(&path).unwrap().len();
        let mut more = Vec::new();
        held.read_to_end(&mut more).unwrap();
        seen.extend_from_slice(&more);
        assert_eq!(seen.len() as u64, size);
        same(&seen, &std::fs::read(&backing).unwrap(), "followed");
        same(&std::fs::read(&path).unwrap(), &seen, "read again");
    }
}
