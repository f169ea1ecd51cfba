//! Cursor agent CLI's `store.db`: no real one with messages is public, so the tests
//! build them the way the reverse-engineered readers describe (AGENT-FORMATS-MORE.md
//! §4): a `meta` row of hex JSON, JSON message blobs and protobuf index nodes, each
//! blob named by the SHA-256 of its bytes (here any unique hex does). The public
//! metadata-only fixture is read in place.

mod support;

use fen_fs::agent::Agent;
use fen_fs::sources::agents;
use fen_fs::sources::cursor_store::CursorStoreUnits;
use fen_fs::sources::foreign::{feed_all, render_message};
use fen_fs::sources::units::Units;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A protobuf length-delimited field.
fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let varint = |mut v: u64, out: &mut Vec<u8>| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    varint((number << 3) | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A made-up 32-byte blob id.
fn blob_id(n: u8) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[0] = n;
    id[31] = 0xaa;
    id
}

/// A store with `messages` (JSON blobs) and a root listing `listed` of them; also an
/// older root and a stray message blob the root does not list.
struct Store {
    conn: rusqlite::Connection,
}

impl Store {
    fn create(dir: &Path, agent_id: &str) -> Store {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("store.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB);
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);",
        )
        .unwrap();
        let s = Store { conn };
        s.meta(agent_id, None);
        s
    }

    fn meta(&self, agent_id: &str, root: Option<&[u8; 32]>) {
        let meta = json!({"agentId": agent_id, "name": "Refactor the parser", "mode": "default",
                          "createdAt": 1_781_256_145_540_i64,
                          "latestRootBlobId": root.map(|r| hex(r)).unwrap_or_default(),
                          "lastUsedModel": "claude-fable-5"});
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('0', ?1)",
                [hex(meta.to_string().as_bytes())],
            )
            .unwrap();
    }

    fn blob(&self, id: &[u8; 32], data: &[u8]) {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO blobs (id, data) VALUES (?1, ?2)",
                rusqlite::params![hex(id), data],
            )
            .unwrap();
    }

    fn message(&self, n: u8, v: Value) -> [u8; 32] {
        let id = blob_id(n);
        self.blob(&id, v.to_string().as_bytes());
        id
    }

    /// A root node listing `messages` (field 1) with a workspace string (field 9).
    fn root(&self, n: u8, messages: &[[u8; 32]]) -> [u8; 32] {
        let mut data: Vec<u8> = messages.iter().flat_map(|m| field(1, m)).collect();
        data.extend(field(9, b"file:///ws"));
        let id = blob_id(n);
        self.blob(&id, &data);
        id
    }
}

fn md5_dir(cwd: &str) -> String {
    // The same folder name Cursor makes: md5 hex of the cwd (computed by the system's
    // md5sum, not by the code under test).
    let out = std::process::Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(cwd.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_string()
}

struct Shown {
    summary: fen_fs::sources::foreign::ForeignSummary,
    conversation: Vec<Value>,
}

fn show(u: &Units, key: &Path) -> Shown {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut reader = agents::reader_for(Agent::Cursor, "store.db");
    let tail = feed_all(reader.as_mut(), &bytes);
    Shown {
        summary: reader.summary(tail),
        conversation: reader
            .conversation(tail)
            .iter()
            .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
            .collect(),
    }
}

#[test]
fn the_conversation_is_the_roots_message_blobs_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let cursor = tmp.path().join(".cursor");
    let cwd = "/home/u/my-proj";
    let dir = cursor.join("chats").join(md5_dir(cwd)).join("agent-1");
    let s = Store::create(&dir, "agent-1");
    let q = s.message(
        1,
        json!({"role": "user", "content": [{"type": "text",
        "text": "<user_query>\nRename the parser\n</user_query>"}]}),
    );
    let a = s.message(
        2,
        json!({"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool-call", "toolCallId": "t1", "toolName": "grep", "args": {"q": "parse"}}]}),
    );
    let t = s.message(
        3,
        json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "t1", "toolName": "grep", "result": "src/p.rs"}]}),
    );
    let stray = s.message(4, json!({"role": "user", "content": "an older branch"}));
    let old_root = s.root(10, &[q, stray]);
    let root = s.root(11, &[q, a, t]);
    let _ = old_root;
    s.meta("agent-1", Some(&root));
    // The agent's readable transcript of the same session, under its lossy slug.
    let transcript = cursor.join("projects/home-u-my-proj/agent-transcripts/agent-1/agent-1.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(
        &transcript,
        "{\"role\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Rename the parser\"}]}}\n",
    )
    .unwrap();

    let u = Units::new(Box::new(CursorStoreUnits::new(&cursor)));
    let listed = u.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key, dir.join("store.db"));
    // The cwd: the slug read every way, the one whose md5 is the folder's name.
    assert_eq!(listed[0].cwd.as_deref(), Some(cwd));
    assert_eq!(
        u.source().transcript(&listed[0].key),
        Some(transcript.clone())
    );
    assert!(u.source().claims(&transcript), "one session, not two");
    let shown = show(&u, &listed[0].key);
    let roles: Vec<&str> = shown
        .conversation
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert_eq!(shown.conversation[1]["content"][1]["toolName"], "grep");
    let sm = &shown.summary;
    assert_eq!(sm.id, "agent-1");
    assert_eq!(sm.cwd.as_deref(), Some(cwd));
    assert_eq!(sm.title.as_deref(), Some("Refactor the parser"));
    assert_eq!(sm.preview.as_deref(), Some("Rename the parser"));
    assert_eq!(sm.created_at.as_deref(), Some("2026-06-12T09:22:25.540Z"));
    assert!(sm.resumable);
    assert_eq!(sm.resume_rules.as_deref(), Some("best effort"));
    assert_eq!(sm.messages, 3);

    // A new root (the agent answered again) changes the stamp and the conversation.
    let before = u.stamp(&listed[0].key).unwrap();
    let b = s.message(5, json!({"role": "assistant", "content": "Done."}));
    let root2 = s.root(12, &[q, a, t, b]);
    s.meta("agent-1", Some(&root2));
    assert_ne!(u.stamp(&listed[0].key), Some(before));
    assert_eq!(show(&u, &listed[0].key).conversation.len(), 4);

    // Neutral messages: the prompt without Cursor's wrapper, the call and its result.
    use fen_fs::neutral::{Part, Role};
    let n: Vec<_> = shown
        .conversation
        .iter()
        .map(|m| agents::to_neutral(Agent::Cursor, m).unwrap())
        .collect();
    assert_eq!(n[0].plain_text(), "Rename the parser");
    assert!(
        matches!(&n[1].parts[1], Part::ToolCall { id, name, .. } if id == "t1" && name == "grep")
    );
    assert_eq!(n[2].role, Role::Tool);
    assert!(matches!(&n[2].parts[0], Part::ToolResult { call_id, .. } if call_id == "t1"));
}

#[test]
fn a_store_without_a_known_cwd_or_root_still_shows_and_says_why() {
    // The public fixture: metadata only, its root blob absent; read in place.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/cursor");
    let u = Units::new(Box::new(CursorStoreUnits::new(&fixture)));
    let listed = u.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].cwd, None, "no cwd has the md5 00000…");
    let s = show(&u, &listed[0].key);
    assert_eq!(s.summary.id, "a1b2c3d4-e5f6-7890-abcd-ef1234567890");
    assert_eq!(s.summary.title.as_deref(), Some("Test Session"));
    assert!(!s.summary.resumable);
    assert!(
        s.summary
            .not_resumable_reason
            .unwrap()
            .contains("root blob deadbeef")
    );
    assert!(s.conversation.is_empty());
    // Not a store at all.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("chats/abc/agent-x");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("store.db"), b"not sqlite").unwrap();
    let u = Units::new(Box::new(CursorStoreUnits::new(tmp.path())));
    let listed = u.list();
    let s = show(&u, &listed[0].key);
    assert!(!s.summary.resumable);
    assert!(s.summary.not_resumable_reason.unwrap().contains("database"));
}

#[test]
fn a_store_in_the_mount_changes_nothing_and_shows_the_agents_transcript() {
    let Some(_) = support::fuse_available("a_store_in_the_mount_changes_nothing").then_some(())
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cursor = tmp.path().join(".cursor");
    let cwd = "/home/u/proj";
    let dir = cursor.join("chats").join(md5_dir(cwd)).join("agent-2");
    let s = Store::create(&dir, "agent-2");
    let q = s.message(1, json!({"role": "user", "content": "hello"}));
    let root = s.root(2, &[q]);
    s.meta("agent-2", Some(&root));
    let transcript = cursor.join("projects/home-u-proj/agent-transcripts/agent-2.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let line =
        "{\"role\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n";
    std::fs::write(&transcript, line).unwrap();
    let files = |p: &Path| -> Vec<(PathBuf, u64, i64)> {
        use std::os::unix::fs::MetadataExt;
        let mut v: Vec<_> = walk(p)
            .into_iter()
            .map(|f| {
                let m = std::fs::metadata(&f).unwrap();
                (f, m.len(), m.mtime_nsec() + m.ctime_nsec())
            })
            .collect();
        v.sort();
        v
    };
    let before = files(&cursor);
    let source = format!("cursor={}", cursor.display());
    let Some(m) = support::Mount::with_args(
        "a_store_in_the_mount_changes_nothing",
        &["--no-detect", "--source", &source],
    ) else {
        return;
    };
    let session = m.mp.join("home-u-proj").join(
        std::fs::read_dir(m.mp.join("home-u-proj"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .find(|n| n.to_string_lossy().ends_with("_cursor-agent-2"))
            .expect("the store's session folder"),
    );
    assert_eq!(
        std::fs::read_to_string(session.join("transcript.jsonl")).unwrap(),
        line,
        "transcript.jsonl is the agent's own transcript"
    );
    let conv: Vec<Value> =
        serde_json::from_slice(&std::fs::read(session.join("conversation.json")).unwrap()).unwrap();
    assert_eq!(conv, vec![json!({"role": "user", "content": "hello"})]);
    let meta = support::meta(&session);
    assert_eq!(meta["agent"], "cursor");
    assert_eq!(meta["resume_rules"], "best effort");
    assert_eq!(meta["source_path"], json!(dir.join("store.db")));
    assert_eq!(files(&cursor), before, "the mount changed Cursor's folder");
}

fn walk(p: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}
