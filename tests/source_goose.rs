//! Goose's reader without a mount (built from Goose's public source: no Goose build
//! installs here): `sessions.db` made with Goose's own CREATE statements and rows as
//! its writer stores them, a pre-database JSONL file, read as units; what Goose
//! resumes with, the listing facts, the usage ledger, and damaged, locked, newer and
//! truncated databases, none of which may change a byte of Goose's folder.

mod goose_support;

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::goose::usage::GooseUsage;
use fen_fs::sources::goose::{GooseReader, GooseUnits, to_neutral};
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, UsageRecord, read_all};
use goose_support::{FIXTURES, GooseDb, text, tool_request, two_turns, visible};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Shown {
    bytes: Vec<u8>,
    summary: ForeignSummary,
    conversation: Vec<Value>,
    history: Vec<(Value, bool)>,
}

fn units(data: &Path) -> Units {
    Units::new(Box::new(GooseUnits::new(data)))
}

fn keys(u: &Units) -> Vec<PathBuf> {
    let mut k: Vec<PathBuf> = u.list().into_iter().map(|i| i.key).collect();
    k.sort();
    k
}

fn show(u: &Units, key: &Path) -> Shown {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let name = key.file_name().unwrap().to_string_lossy().to_string();
    let mut reader = GooseReader::new(&name);
    let tail = feed_all(&mut reader, &bytes);
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    let history = reader
        .messages(tail, true)
        .iter()
        .map(|m| {
            (
                serde_json::from_slice(&render_message(&m.pieces, &bytes)).unwrap(),
                m.in_conversation,
            )
        })
        .collect();
    Shown {
        summary: reader.summary(tail),
        bytes,
        conversation,
        history,
    }
}

fn usage(bytes: &[u8], session: &str) -> Vec<UsageRecord> {
    let facts = UnitFacts {
        agent: Agent::Goose,
        session: Some(session.into()),
        ..UnitFacts::default()
    };
    let mut r = GooseUsage::new(facts);
    read_all(&mut r, bytes).records
}

/// Every file of a folder tree: (size, mtime, ctime, content).
fn folder_state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            out.insert(
                e.path(),
                (
                    m.len(),
                    m.mtime() * 1_000_000_000 + m.mtime_nsec(),
                    m.ctime() * 1_000_000_000 + m.ctime_nsec(),
                    std::fs::read(e.path()).unwrap(),
                ),
            );
        }
    }
    out
}

#[test]
fn a_session_is_its_row_then_goose_messages_then_its_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "20260816_3", "/home/u/proj");
    db.ledger(
        "20260816_3",
        1_786_854_321,
        Some("claude-sonnet-4-5"),
        7466,
        15,
        None,
        None,
        None,
        None,
        false,
    );
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k, vec![db.path.join("20260816_3")]);
    let s = show(&u, &k[0]);
    let lines: Vec<Value> = s
        .bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1 + 4 + 1);
    assert_eq!(lines[0]["id"], "20260816_3");
    assert_eq!(lines[0]["working_dir"], "/home/u/proj");
    assert_eq!(lines[0]["schema_version"], 16);
    assert_eq!(lines[0]["provider_name"], "anthropic");
    // Goose's `Message` as it serializes, content and metadata as stored.
    assert_eq!(
        lines[1],
        json!({"id": "msg_u1", "role": "user", "created": 1_786_854_320,
               "content": [{"type": "text", "text": "Run the tests"}],
               "metadata": {"userVisible": true, "agentVisible": true}})
    );
    assert_eq!(lines[5]["usage_ledger"]["input_tokens"], 7466);
    let sum = &s.summary;
    assert_eq!(sum.id, "20260816_3");
    assert_eq!(sum.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(sum.title.as_deref(), Some("Fix the tests"));
    assert_eq!(sum.preview.as_deref(), Some("Run the tests"));
    assert_eq!(sum.created_at.as_deref(), Some("2026-08-16T04:25:20.000Z"));
    assert_eq!(sum.updated_at.as_deref(), Some("2026-08-16T04:25:23.000Z"));
    assert!(sum.resumable && sum.listed && !sum.archived, "{sum:?}");
    assert_eq!((sum.messages, sum.malformed_lines), (4, 0));
    assert_eq!(sum.roles.get("assistant"), Some(&2));
    // conversation.json: the messages, the stored bytes of each.
    assert_eq!(s.conversation, lines[1..5].to_vec());
}

#[test]
fn goose_resumes_with_the_agent_visible_messages_in_its_order() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "s1", "/p");
    // A compaction: what came before is hidden from the agent (still shown to the
    // user), a summary only the agent sees stands for it.
    db.conn
        .execute("UPDATE messages SET metadata_json = '{\"userVisible\":true,\"agentVisible\":false}' WHERE session_id = 's1'", [])
        .unwrap();
    let t = 1_786_854_400;
    db.message(
        "s1",
        "msg_sum",
        "user",
        t,
        text("Summary: the tests were run and pass."),
        json!({"userVisible": false, "agentVisible": true}),
    );
    // A notification for the user only, and a later turn written in the same second
    // (the row id breaks the tie).
    db.message("s1", "msg_note", "assistant", t, json!([{"type": "systemNotification", "notificationType": "inlineMessage", "msg": "Compacted"}]),
        json!({"userVisible": true, "agentVisible": false}));
    db.message("s1", "msg_u3", "user", t, text("Now add a test"), visible());
    db.message(
        "s1",
        "msg_a3",
        "assistant",
        t + 1,
        text("Added."),
        visible(),
    );
    // A role Goose skips on load.
    db.conn
        .execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp) VALUES ('x', 's1', 'system', '[]', ?1)", [t + 2])
        .unwrap();
    let u = units(&data);
    let s = show(&u, &db.path.join("s1"));
    let ids: Vec<&str> = s
        .conversation
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["msg_sum", "msg_u3", "msg_a3"]);
    assert!(s.summary.resumable);
    assert_eq!(s.summary.messages, 3);
    // The history keeps what the compaction took out, marked so.
    let hist: Vec<(&str, bool)> = s
        .history
        .iter()
        .map(|(m, inc)| (m["id"].as_str().unwrap(), *inc))
        .collect();
    assert_eq!(
        hist,
        [
            ("msg_u1", false),
            ("chatcmpl-1", false),
            ("msg_u2", false),
            ("chatcmpl-2", false),
            ("msg_sum", true),
            ("msg_note", false),
            ("msg_u3", true),
            ("msg_a3", true)
        ]
    );
    // Neutral: tool call and result, the agent-only summary as injected context.
    let call = to_neutral(&s.history[1].0).unwrap();
    assert_eq!(call.role, Role::Assistant);
    assert_eq!(
        call.parts[1],
        Part::ToolCall {
            id: "call_1".into(),
            name: "developer__shell".into(),
            input: json!({"command": "cargo test"})
        }
    );
    let result = to_neutral(&s.history[2].0).unwrap();
    assert!(
        matches!(&result.parts[0], Part::ToolResult { call_id, content, is_error: false, .. }
        if call_id == "call_1" && content == &vec![Part::Text { text: "test result: ok. 3 passed".into() }])
    );
    let summary = to_neutral(&s.history[4].0).unwrap();
    assert!(summary.injected && summary.in_conversation);
    assert!(!to_neutral(&s.history[0].0).unwrap().in_conversation);
}

#[test]
fn listing_facts_follow_goose_session_list() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "parent", "/p");
    two_turns(&db, "child", "/p");
    db.set("child", "session_type", &"sub_agent");
    db.set("child", "parent_session_id", &"parent");
    two_turns(&db, "old", "/p");
    db.set("old", "archived_at", &"2026-08-17 00:00:00");
    db.set("old", "name", &"");
    db.set("old", "description", &"Older description");
    let u = units(&data);
    let child = show(&u, &db.path.join("child")).summary;
    assert!(!child.listed && child.resumable);
    assert_eq!(child.parent_id.as_deref(), Some("parent"));
    let old = show(&u, &db.path.join("old")).summary;
    assert!(old.archived && old.listed);
    assert_eq!(old.title.as_deref(), Some("Older description"));
}

#[test]
fn the_ledger_is_the_usage_each_call_once_cached_tokens_out_of_the_input() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "s", "/home/u/proj");
    // Input counts the cache (1500 fresh + 9000 read + 1500 written); a compaction's
    // call; the carried-forward gap filler (no model); an all-zero row.
    db.ledger(
        "s",
        1_786_860_000,
        Some("claude-sonnet-4-5"),
        12000,
        400,
        Some(9000),
        Some(1500),
        Some(0.0365),
        Some("provider_reported"),
        false,
    );
    db.ledger(
        "s",
        1_786_860_100,
        Some("claude-sonnet-4-5"),
        900,
        120,
        None,
        None,
        Some(0.0015),
        Some("estimated"),
        true,
    );
    db.ledger(
        "s",
        1_786_860_200,
        None,
        20,
        0,
        Some(0),
        Some(0),
        None,
        Some("carried_forward"),
        false,
    );
    db.ledger(
        "s",
        1_786_860_400,
        Some("claude-sonnet-4-5"),
        0,
        0,
        Some(0),
        Some(0),
        None,
        None,
        false,
    );
    db.set("s", "accumulated_input_tokens", &999_999i64);
    let u = units(&data);
    let s = show(&u, &db.path.join("s"));
    let recs = usage(&s.bytes, "s");
    assert_eq!(recs.len(), 3, "{recs:?}");
    let first = &recs[0];
    assert_eq!(first.time_ms, 1_786_860_000_000);
    assert_eq!(
        (
            first.tokens.input,
            first.tokens.output,
            first.tokens.cache_read,
            first.tokens.cache_write_5m
        ),
        (1500, 400, 9000, 1500)
    );
    assert_eq!(first.recorded_cost, Some(0.0365));
    assert_eq!(first.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(first.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(&*first.session, "s");
    assert_eq!(recs[1].tokens.input, 900);
    // No model on the row: the session's.
    assert_eq!(recs[2].model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(recs[2].tokens.input, 20);
    let keys: std::collections::HashSet<_> = recs.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 3, "one key per ledger row");
    // Read again (a kept copy, a new dump): the same keys.
    let again = usage(&show(&u, &db.path.join("s")).bytes, "s");
    assert_eq!(
        again.iter().map(|r| r.key).collect::<Vec<_>>(),
        recs.iter().map(|r| r.key).collect::<Vec<_>>()
    );
}

#[test]
fn a_database_before_the_ledger_reads_and_counts_its_running_totals() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v5");
    db.session("20250901_1", "/home/u/v5", "", "2025-09-01 10:00:00");
    db.message(
        "20250901_1",
        "",
        "user",
        1_756_720_800,
        text("hello"),
        visible(),
    );
    db.message(
        "20250901_1",
        "",
        "assistant",
        1_756_720_805,
        text("hi"),
        visible(),
    );
    db.set("20250901_1", "accumulated_input_tokens", &2400i64);
    db.set("20250901_1", "accumulated_output_tokens", &230i64);
    let u = units(&data);
    let s = show(&u, &db.path.join("20250901_1"));
    assert!(s.summary.resumable, "{:?}", s.summary);
    // Before migration 7 a message had no id: Goose names it msg_<session>_<row>.
    assert_eq!(s.conversation[0]["id"], "msg_20250901_1_1");
    assert_eq!(s.summary.preview.as_deref(), Some("hello"));
    let recs = usage(&s.bytes, "20250901_1");
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].tokens.input, recs[0].tokens.output), (2400, 230));
    assert_eq!(
        recs[0].time_ms, 1_756_720_805_000,
        "at the session's last update"
    );
}

#[test]
fn a_legacy_jsonl_file_shows_unless_the_database_holds_its_id() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let sessions = data.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let name = "20250301_101500.jsonl";
    let legacy = std::fs::read(format!("{FIXTURES}/legacy/{name}")).unwrap();
    std::fs::write(sessions.join(name), &legacy).unwrap();
    let u = units(&data);
    assert_eq!(keys(&u), vec![sessions.join(name)]);
    let s = show(&u, &sessions.join(name));
    assert_eq!(s.bytes, legacy, "transcript: the file's bytes");
    let sum = &s.summary;
    assert_eq!(sum.id, "20250301_101500");
    assert_eq!(sum.cwd.as_deref(), Some("/home/u/old-proj"));
    assert_eq!(sum.title.as_deref(), Some("Rename the helper"));
    assert_eq!(sum.created_at.as_deref(), Some("2025-03-01T10:15:00.000Z"));
    assert_eq!(sum.updated_at.as_deref(), Some("2025-03-01T10:15:10.000Z"));
    assert!(sum.resumable && sum.listed);
    assert_eq!(s.conversation.len(), 4);
    // The older tool result form (a bare content list).
    let result = to_neutral(&s.conversation[2]).unwrap();
    assert!(matches!(&result.parts[0], Part::ToolResult { content, .. }
        if content == &vec![Part::Text { text: "def helper():\n    return 1\n".into() }]));
    let recs = usage(&s.bytes, "20250301_101500");
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].tokens.input, recs[0].tokens.output), (2400, 230));
    // Once Goose's database has imported it, the file is not a session of its own.
    let db = GooseDb::create(&data, "v16");
    db.session(
        "20250301_101500",
        "/home/u/old-proj",
        "Rename the helper",
        "2025-03-01 10:15:00",
    );
    assert_eq!(keys(&u), vec![db.path.join("20250301_101500")]);
}

#[test]
fn a_damaged_row_a_newer_schema_and_a_cut_line_show_why_goose_would_not_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "bad", "/p");
    db.raw_message(
        "bad",
        "m9",
        "user",
        1_786_854_330,
        "[{\"type\":\"text\",\"text\":\"cut",
    );
    let u = units(&data);
    let s = show(&u, &db.path.join("bad"));
    assert!(!s.summary.resumable);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("cannot load"),
        "{:?}",
        s.summary
    );
    assert!(s.conversation.is_empty());
    assert_eq!(s.summary.id, "bad");
    assert_eq!(s.summary.cwd.as_deref(), Some("/p"));

    two_turns(&db, "fine", "/p");
    db.conn
        .execute("INSERT INTO schema_version (version) VALUES (17)", [])
        .unwrap();
    let s = show(&u, &db.path.join("fine"));
    assert!(!s.summary.resumable);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("unknown schema version 17")
    );
    assert_eq!(
        s.summary.title.as_deref(),
        Some("Fix the tests"),
        "still shown"
    );

    // A legacy file cut mid-line.
    let sessions = data.join("sessions");
    let legacy = std::fs::read(format!("{FIXTURES}/legacy/20250301_101500.jsonl")).unwrap();
    std::fs::write(
        sessions.join("20250302_1.jsonl"),
        &legacy[..legacy.len() - 20],
    )
    .unwrap();
    let s = show(&u, &sessions.join("20250302_1.jsonl"));
    assert!(!s.summary.resumable);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("cut short")
    );
}

#[test]
fn a_truncated_or_foreign_database_is_one_unreadable_session_that_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    for i in 0..50 {
        two_turns(&db, &format!("s{i}"), "/p");
    }
    db.conn
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let path = db.path.clone();
    drop(db);
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() / 3]).unwrap();
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k, vec![path.join("unreadable")]);
    let s = show(&u, &k[0]);
    assert!(!s.summary.resumable);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("database"),
        "{:?}",
        s.summary
    );
    // Not a Goose database at all.
    std::fs::remove_file(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("CREATE TABLE t (x);").unwrap();
    drop(other);
    let u = units(&data);
    let s = show(&u, &keys(&u)[0]);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("unknown schema")
    );
}

#[test]
fn a_locked_database_is_reported_busy_within_seconds_never_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let sessions = data.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let path = sessions.join("sessions.db");
    // A writer in rollback-journal mode holding its exclusive transaction open, its
    // journal hot beside the database.
    let w = rusqlite::Connection::open(&path).unwrap();
    w.execute_batch(&std::fs::read_to_string(format!("{FIXTURES}/schema-v16.sql")).unwrap())
        .unwrap();
    w.execute_batch("PRAGMA cache_size = 1; BEGIN EXCLUSIVE;")
        .unwrap();
    for i in 0..200 {
        w.execute(
            "INSERT INTO sessions (id, working_dir, name) VALUES (?1, '/p', ?2)",
            rusqlite::params![format!("s{i}"), "x".repeat(2000)],
        )
        .unwrap();
    }
    assert!(sessions.join("sessions.db-journal").exists());
    let started = Instant::now();
    let u = units(&data);
    let k = keys(&u);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(k, vec![path.join("unreadable")]);
    let s = show(&u, &k[0]);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("busy"),
        "{:?}",
        s.summary
    );
    w.execute_batch("COMMIT;").unwrap();
    // Once the writer is done the sessions show.
    assert_eq!(keys(&u).len(), 200);
}

#[test]
fn reading_changes_no_byte_of_goose_folder_and_creates_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    db.conn
        .execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    for i in 0..5 {
        two_turns(&db, &format!("s{i}"), "/p");
        db.ledger(
            &format!("s{i}"),
            1_786_860_000,
            Some("m"),
            10,
            2,
            None,
            None,
            None,
            None,
            false,
        );
    }
    let legacy = std::fs::read(format!("{FIXTURES}/legacy/20250301_101500.jsonl")).unwrap();
    std::fs::write(data.join("sessions/20250301_101500.jsonl"), &legacy).unwrap();
    // The rows live only in the WAL; Goose has gone (no -shm left behind).
    db.conn
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
    let path = db.path.clone();
    drop(db);
    let shm = PathBuf::from(format!("{}-shm", path.display()));
    let _ = std::fs::remove_file(&shm);
    assert!(
        std::fs::metadata(format!("{}-wal", path.display()))
            .unwrap()
            .len()
            > 0
    );
    let before = folder_state(&data);
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k.len(), 6);
    for key in &k {
        let s = show(&u, key);
        assert!(s.summary.resumable, "{key:?}: {:?}", s.summary);
        usage(&s.bytes, "x");
    }
    assert_eq!(
        folder_state(&data),
        before,
        "reading changed Goose's folder"
    );
    assert!(!shm.exists());
    assert!(!PathBuf::from(format!("{}-journal", path.display())).exists());
}

#[test]
fn a_new_message_changes_the_session_and_shows_on_the_next_read() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("goose");
    let db = GooseDb::create(&data, "v16");
    two_turns(&db, "s", "/p");
    let u = units(&data);
    let key = db.path.join("s");
    let first = u.stamp(&key).unwrap();
    assert_eq!(u.stamp(&key).unwrap(), first, "unchanged rows, same stamp");
    db.message(
        "s",
        "msg_u3",
        "user",
        1_786_854_400,
        text("and again"),
        visible(),
    );
    let second = u.stamp(&key).unwrap();
    assert_ne!(second, first);
    assert_eq!(second.mtime_ns, 1_786_854_400_000_000_000);
    let s = show(&u, &key);
    assert_eq!(s.conversation.last().unwrap()["id"], "msg_u3");
    // A row changed in place (Goose's tool title patch) changes it too.
    db.conn
        .execute(
            "UPDATE messages SET content_json = ?1 WHERE message_id = 'chatcmpl-1'",
            [json!([tool_request(
                "call_1",
                "developer__shell",
                json!({"command": "cargo test -q"})
            )])
            .to_string()],
        )
        .unwrap();
    assert_ne!(u.stamp(&key).unwrap(), second);
}
