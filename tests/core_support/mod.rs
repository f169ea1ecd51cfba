//! Shared helpers for the `core_*` integration tests (store, views, grammar; no FUSE).
#![allow(dead_code)]

use fen_fs::ctl::grammar::{check_against, parse_root_line, parse_session_line};
use fen_fs::store::Store;
use fen_fs::store::durability::FsyncMode;
use fen_fs::store::index::SessionIndex;
use fen_fs::store::session::Session;
use fen_fs::views::{ViewKind, snapshot};
use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

/// A store in a fresh temporary folder (fsync off: these tests are about bytes).
pub fn temp_store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("store"), FsyncMode::No).expect("open store");
    (dir, store)
}

/// Creates a session from a root-ctl line, e.g. `{"cwd":"/p","role":"user","content":"hi"}`.
pub fn create(store: &Store, root_line: &str) -> (Arc<Session>, String) {
    let req = parse_root_line(root_line.as_bytes()).expect("valid root line");
    store
        .create_session(
            &req.cwd,
            req.session_id.as_deref(),
            &req.first,
            &check_against,
        )
        .expect("create session")
}

/// Creates a session in `cwd` whose first entry is a user message with `content`.
pub fn create_simple(store: &Store, cwd: &str, content: &str) -> (Arc<Session>, String) {
    let line = format!(
        "{{\"cwd\":{},\"role\":\"user\",\"content\":{}}}",
        q(cwd),
        q(content)
    );
    create(store, &line)
}

/// Appends session-ctl lines as one batch.
pub fn try_append(store: &Store, s: &Session, lines: &[&str]) -> fen_fs::Result<Vec<String>> {
    let mut entries = Vec::new();
    for l in lines {
        entries.push(parse_session_line(l.as_bytes())?);
    }
    s.append(&entries, &check_against, store.append)
}

pub fn append(store: &Store, s: &Session, lines: &[&str]) -> Vec<String> {
    try_append(store, s, lines).expect("append")
}

/// JSON-quotes a string.
pub fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Reads a whole view, checking that `size()` is exactly what a read returns and that
/// reading in small pieces gives the same bytes as one big read.
pub fn read_view(s: &Session, kind: ViewKind) -> Vec<u8> {
    let snap = snapshot(s, kind, 0).expect("snapshot");
    let size = snap.size();
    let all = snap.read_at(0, (size as usize) + 4096).expect("read");
    assert_eq!(
        all.len() as u64,
        size,
        "{kind:?}: stat size must equal bytes read"
    );
    for chunk in [1usize, 5, 64] {
        if size > 20_000 && chunk < 64 {
            continue;
        }
        let mut pieced = Vec::new();
        let mut off = 0u64;
        loop {
            let part = snap.read_at(off, chunk).expect("read piece");
            if part.is_empty() {
                break;
            }
            assert!(part.len() <= chunk);
            off += part.len() as u64;
            pieced.extend(part);
        }
        assert_eq!(
            pieced, all,
            "{kind:?}: reading in {chunk}-byte pieces differs"
        );
    }
    assert!(
        snap.read_at(size, 10).unwrap().is_empty(),
        "read at EOF is empty"
    );
    assert!(
        snap.read_at(size + 100, 10).unwrap().is_empty(),
        "read past EOF is empty"
    );
    all
}

pub fn conversation_bytes(s: &Session) -> Vec<u8> {
    read_view(s, ViewKind::Conversation)
}

/// The items of `conversation.json` as the exact bytes of each message, after checking
/// the framing `[\n{…},\n{…}\n]\n` (or `[]\n`) and that the whole is valid JSON.
pub fn conversation_items(s: &Session) -> Vec<String> {
    split_conversation(&conversation_bytes(s))
}

pub fn split_conversation(bytes: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(bytes).expect("conversation.json is UTF-8");
    let parsed: Value = serde_json::from_str(text).expect("conversation.json parses");
    let arr = parsed
        .as_array()
        .expect("conversation.json is an array")
        .clone();
    if text == "[]\n" {
        assert!(arr.is_empty());
        return Vec::new();
    }
    let body = text
        .strip_prefix("[\n")
        .and_then(|t| t.strip_suffix("\n]\n"))
        .unwrap_or_else(|| panic!("bad framing: {text:?}"));
    let items: Vec<String> = body.split(",\n").map(String::from).collect();
    assert_eq!(items.len(), arr.len(), "one message per line");
    for (raw, v) in items.iter().zip(&arr) {
        let again: Value = serde_json::from_str(raw).expect("each line is one message");
        assert_eq!(&again, v);
        assert!(
            v.get("role").and_then(Value::as_str).is_some(),
            "every item has a role"
        );
    }
    items
}

/// The rendering `conversation.json` must have for these items.
pub fn render_conversation(items: &[String]) -> Vec<u8> {
    if items.is_empty() {
        return b"[]\n".to_vec();
    }
    format!("[\n{}\n]\n", items.join(",\n")).into_bytes()
}

/// The synthetic message §3 puts in place of compacted history.
pub fn synthetic(summary: &str) -> String {
    let text = format!("The conversation before this point was compacted. Summary:\n\n{summary}");
    format!("{{\"role\":\"user\",\"content\":{}}}", q(&text))
}

pub fn tokens(items: &[String]) -> u64 {
    items.iter().map(|m| (m.len() as u64).div_ceil(4)).sum()
}

pub fn meta(s: &Session) -> Value {
    serde_json::from_slice(&read_view(s, ViewKind::Meta)).expect("meta.json parses")
}

pub fn summary(s: &Session) -> String {
    String::from_utf8(read_view(s, ViewKind::Summary)).expect("summary is UTF-8")
}

/// Every line of a transcript file, parsed (panics on any line that does not parse).
pub fn file_lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.ends_with(b"\n"), "file ends with a newline");
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!("line does not parse ({e}): {}", String::from_utf8_lossy(l))
            })
        })
        .collect()
}

/// Checks a file written only by fen-fs: a v2 header, then entries whose ids are
/// UUIDv7, strictly increasing, each `parent-id` the id before it (null first), with
/// RFC 3339 millisecond UTC timestamps. Returns the entries (header excluded).
pub fn assert_well_formed(path: &Path) -> Vec<Value> {
    let lines = file_lines(path);
    let header = &lines[0];
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 2);
    assert!(header["id"].is_string());
    assert!(header["cwd"].as_str().unwrap().starts_with('/'));
    assert_timestamp(header["timestamp"].as_str().unwrap());
    let mut prev: Option<String> = None;
    for e in &lines[1..] {
        let id = e["id"].as_str().expect("entry id").to_string();
        let u = uuid::Uuid::parse_str(&id).expect("id is a UUID");
        assert_eq!(u.get_version_num(), 7, "id is a UUIDv7");
        assert_eq!(id, u.hyphenated().to_string(), "lowercase hyphenated");
        match &prev {
            None => assert!(e["parent-id"].is_null(), "first entry's parent-id is null"),
            Some(p) => {
                assert_eq!(
                    e["parent-id"].as_str(),
                    Some(p.as_str()),
                    "linear parent chain"
                );
                assert!(
                    u > uuid::Uuid::parse_str(p).unwrap(),
                    "ids strictly increase"
                );
                assert!(id > *p, "ids also increase as strings");
            }
        }
        assert_timestamp(e["timestamp"].as_str().expect("timestamp"));
        assert!(e["type"].is_string());
        prev = Some(id);
    }
    lines[1..].to_vec()
}

pub fn assert_timestamp(t: &str) {
    assert_eq!(t.len(), 24, "{t}: YYYY-MM-DDTHH:MM:SS.mmmZ");
    assert!(t.ends_with('Z'), "{t}");
    chrono::DateTime::parse_from_rfc3339(t).unwrap_or_else(|e| panic!("{t}: {e}"));
}

/// A UUIDv7-shaped id that sorts by `n` (for hand-written transcripts).
pub fn uid(n: u64) -> String {
    format!("01900000-0000-7000-8000-{n:012x}")
}

/// Writes a hand-made transcript into the store as `<ns>/<dir>.jsonl` (mode 0600) and
/// returns the session.
pub fn hand_session(store: &Store, ns: &str, dir: &str, bytes: &[u8]) -> Arc<Session> {
    let nsdir = store.root.join(ns);
    std::fs::create_dir_all(&nsdir).unwrap();
    let path = nsdir.join(format!("{dir}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    f.write_all(bytes).unwrap();
    store.session(ns, dir).expect("hand-written session")
}

/// Appends raw bytes to a file the way a foreign writer would (no lock, no checks).
pub fn raw_append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

pub fn header_line(id: &str, cwd: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":2,\"id\":{},\"timestamp\":\"2026-01-02T03:04:05.006Z\",\"cwd\":{}}}\n",
        q(id),
        q(cwd)
    )
}

/// Asserts that an incrementally maintained index matches a from-scratch load.
pub fn assert_index_eq(inc: &SessionIndex, full: &SessionIndex) {
    assert_eq!(inc.parsed_len, full.parsed_len, "parsed_len");
    assert_eq!(inc.lines, full.lines, "lines");
    assert_eq!(inc.header, full.header, "header");
    assert_eq!(inc.entries, full.entries, "entries");
    assert_eq!(inc.malformed_lines, full.malformed_lines, "malformed_lines");
    assert_eq!(inc.torn_tail, full.torn_tail, "torn_tail");
    assert_eq!(
        inc.malformed_total(),
        full.malformed_total(),
        "malformed_total"
    );
    assert_eq!(
        *inc.messages.read().unwrap(),
        *full.messages.read().unwrap(),
        "message table"
    );
    assert_eq!(inc.roles, full.roles, "roles");
    assert_eq!(inc.compactions, full.compactions, "compactions");
    assert_eq!(
        inc.latest_valid_compaction, full.latest_valid_compaction,
        "latest valid compaction"
    );
    assert_eq!(inc.custom_entries, full.custom_entries, "custom entries");
    assert_eq!(inc.title, full.title, "title");
    assert_eq!(inc.metadata, full.metadata, "metadata");
    assert_eq!(inc.preview, full.preview, "preview");
    assert_eq!(
        inc.first_user_message, full.first_user_message,
        "first user message"
    );
    assert_eq!(inc.updated_at, full.updated_at, "updated_at");
    assert_eq!(inc.last_entry_id, full.last_entry_id, "last_entry_id");
    assert_eq!(inc.ids_monotonic, full.ids_monotonic, "ids_monotonic");
    assert_eq!(
        inc.transcript_tokens, full.transcript_tokens,
        "transcript_tokens"
    );
    assert_eq!(inc.file.dev, full.file.dev, "file dev");
    assert_eq!(inc.file.ino, full.file.ino, "file ino");
    assert_eq!(inc.file.size, full.file.size, "file size");
}

pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

pub fn path_of(s: &Session) -> PathBuf {
    s.path.clone()
}

/// The error of a result whose success type need not be `Debug` (sessions are not).
pub fn err_of<T>(r: fen_fs::Result<T>) -> fen_fs::Error {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}
