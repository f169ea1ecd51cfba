//! Cursor's (the editor's) reader without a mount, built from the public readers of
//! its databases (Cursor is closed source: no build of it runs here): a user folder
//! made with VS Code's and Cursor's key/value tables and rows shaped as those readers
//! document them, read as units: the conversation in Cursor's order, the listing
//! facts and cwd, the token counts, older composers and chats, databases Cursor could
//! not have written, and proof that reading changes nothing in Cursor's folder.

mod cursor_ide_support;

use cursor_ide_support::*;
use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role};
use fen_fs::sources::cursor_ide::usage::CursorIdeUsage;
use fen_fs::sources::cursor_ide::{CursorIdeReader, CursorIdeUnits, to_neutral};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, UsageRecord, read_all};
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

fn units(user: &Path) -> Units {
    Units::new(Box::new(CursorIdeUnits::new(user)))
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
    let mut reader = CursorIdeReader::new(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(&mut reader, &bytes);
    assert!(tail.is_empty());
    let parse = |p: &Vec<fen_fs::sources::foreign::Piece>| {
        serde_json::from_slice::<Value>(&render_message(p, &bytes)).unwrap()
    };
    Shown {
        conversation: reader.conversation(tail).iter().map(parse).collect(),
        history: reader
            .messages(tail, true)
            .iter()
            .map(|m| (parse(&m.pieces), m.in_conversation))
            .collect(),
        summary: reader.summary(tail),
        bytes,
    }
}

fn usage(bytes: &[u8]) -> Vec<UsageRecord> {
    let mut r = CursorIdeUsage::new(UnitFacts {
        agent: Agent::CursorIde,
        ..UnitFacts::default()
    });
    read_all(&mut r, bytes).records
}

fn roles(conv: &[Value]) -> Vec<String> {
    conv.iter()
        .map(|m| to_neutral(m).unwrap().role.name().to_string())
        .collect()
}

#[test]
fn a_composer_is_its_bubbles_in_cursors_order_each_tool_result_after_its_call() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    sample(&conn);
    // An empty composer (opened, left without a message) is not a session.
    composer(
        &conn,
        "empty-1",
        r#"{"_v":10,"composerId":"empty-1","fullConversationHeadersOnly":[],"createdAt":1786850000000}"#,
    );
    let u = units(&user);
    assert_eq!(keys(&u), vec![db.join(COMPOSER)]);
    let s = show(&u, &db.join(COMPOSER));
    let sum = &s.summary;
    assert_eq!(sum.id, COMPOSER);
    assert_eq!(sum.title.as_deref(), Some("Fix the failing parser test"));
    assert_eq!(
        sum.cwd.as_deref(),
        Some("/home/u/cproj"),
        "the header's URI"
    );
    assert_eq!(sum.preview.as_deref(), Some("Why does test_parse fail?"));
    assert_eq!(sum.created_at.as_deref(), Some("2026-08-16T04:20:00.000Z"));
    assert_eq!(sum.updated_at.as_deref(), Some("2026-08-16T04:26:10.512Z"));
    assert!(sum.resumable && sum.listed && !sum.archived, "{sum:?}");
    assert!(
        sum.resume_rules
            .as_deref()
            .unwrap()
            .starts_with("best effort"),
        "{sum:?}"
    );
    assert_eq!(
        roles(&s.conversation),
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(sum.messages, 8);
    // The reverted answer is history, not conversation: found by search, not resumed.
    let reverted: Vec<&(Value, bool)> = s
        .history
        .iter()
        .filter(|(m, _)| m["bubbleId"] == "b9-reverted-0009")
        .collect();
    assert_eq!(reverted.len(), 1);
    assert!(!reverted[0].1);
    assert_eq!(s.history.iter().filter(|(_, c)| *c).count(), 8);
    // The dump: the composer without its keys, then each bubble as stored.
    let text = String::from_utf8(s.bytes.clone()).unwrap();
    assert!(!text.contains("c2VjcmV0") && !text.contains("EncryptionKey"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["cursor_ide"], "composer");
    assert_eq!(lines[0]["workspace"], HEADER_WS);
    assert_eq!(
        lines[0]["composer"]["modelConfig"]["modelName"],
        "claude-4.5-sonnet"
    );
    assert_eq!(lines[0]["header"]["workspaceIdentifier"]["id"], HEADER_WS);
    let stored: Vec<&str> = String::from_utf8(fixture("bubbles.jsonl"))
        .unwrap()
        .lines()
        .map(|l| Box::leak(l.to_string().into_boxed_str()) as &str)
        .collect();
    for l in &stored {
        assert!(
            text.contains(l),
            "a bubble is not in the dump as stored: {l}"
        );
    }
    assert_eq!(
        s.conversation[0],
        serde_json::from_str::<Value>(stored[0]).unwrap()
    );
    // The call and its thinking, then its result from the same bubble.
    let call = to_neutral(&s.conversation[1]).unwrap();
    assert!(
        matches!(&call.parts[0], Part::Reasoning { text, .. } if text == "Run the test first to see the failure.")
    );
    assert_eq!(
        call.parts[1],
        Part::ToolCall {
            id: "toolu_01A".into(),
            name: "run_terminal_cmd".into(),
            input: json!({"command": "cargo test test_parse", "is_background": false})
        }
    );
    assert_eq!(
        s.conversation[2]["cursor_tool_result"]["toolFormerData"],
        serde_json::from_str::<Value>(stored[1]).unwrap()["toolFormerData"]
    );
    let result = to_neutral(&s.conversation[2]).unwrap();
    assert_eq!(result.role, Role::Tool);
    assert!(
        matches!(&result.parts[0], Part::ToolResult { call_id, name: Some(n), content, is_error: false }
        if call_id == "toolu_01A" && n == "run_terminal_cmd"
            && content == &vec![Part::Text { text: "thread 'test_parse' panicked at src/lib.rs:12: unwrap on Err".into() }])
    );
    // Usage: each bubble with tokens once, the reverted answer's too (it was paid for).
    let recs = usage(&s.bytes);
    let got: Vec<(u64, u64, i64, String)> = recs
        .iter()
        .map(|r| {
            (
                r.tokens.input,
                r.tokens.output,
                r.time_ms,
                r.model.as_deref().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                5200,
                340,
                1_786_854_030_000,
                "claude-4.5-sonnet".to_string()
            ),
            (
                1800,
                120,
                1_786_854_370_000,
                "claude-4.5-sonnet-thinking".to_string()
            ),
            (900, 60, 1_786_854_120_000, "claude-4.5-sonnet".to_string()),
        ]
    );
    assert!(recs.iter().all(|r| &*r.session == COMPOSER
        && r.cwd.as_deref() == Some("/home/u/cproj")
        && r.key.is_some()));
}

#[test]
fn older_composers_and_the_first_chats_read_from_their_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    let (ws_db, _ws) = older(&user, &conn);
    let u = units(&user);
    assert_eq!(keys(&u), vec![db.join(INLINE), ws_db.join("tab-5e1f")]);
    // The inline conversation; the cwd from the workspace that lists the composer.
    let s = show(&u, &db.join(INLINE));
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/legacy proj"));
    assert_eq!(s.summary.title.as_deref(), Some("Rename the config loader"));
    assert!(s.summary.resumable, "{:?}", s.summary);
    assert_eq!(roles(&s.conversation), ["user", "assistant"]);
    assert_eq!(
        to_neutral(&s.conversation[1]).unwrap().plain_text(),
        "Renamed it in 3 files."
    );
    let recs = usage(&s.bytes);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].tokens.input, recs[0].tokens.output, recs[0].time_ms),
        (700, 45, 1_760_000_090_000),
        "no bubble time: the composer's last update"
    );
    assert_eq!(recs[0].model.as_deref(), Some("gpt-4o"));
    // A chat tab of the first chats (the empty tab is no session).
    let t = show(&u, &ws_db.join("tab-5e1f"));
    assert_eq!(t.summary.id, "tab-5e1f");
    assert_eq!(t.summary.cwd.as_deref(), Some("/home/u/legacy proj"));
    assert_eq!(t.summary.title.as_deref(), Some("What does the bench do"));
    assert_eq!(
        t.summary.updated_at.as_deref(),
        Some("2024-07-03T09:47:40.000Z")
    );
    assert_eq!(roles(&t.conversation), ["user", "assistant"]);
    assert_eq!(
        to_neutral(&t.conversation[0]).unwrap().plain_text(),
        "What does scripts/bench measure?"
    );
    // Cursor 3 names the workspace in the global header instead: its id's folder.
    put(
        &conn,
        "ItemTable",
        "composer.composerHeaders",
        &json!({"allComposers": [{"composerId": INLINE, "workspaceIdentifier": {"id": HEADER_WS}}]})
            .to_string(),
    );
    let _ = workspace(&user, HEADER_WS, "file:///home/u/moved");
    let u = units(&user);
    let listed: Vec<_> = u.list();
    let inline = listed.iter().find(|i| i.key == db.join(INLINE)).unwrap();
    assert_eq!(inline.cwd.as_deref(), Some("/home/u/moved"));
    assert_eq!(
        show(&u, &db.join(INLINE)).summary.cwd.as_deref(),
        Some("/home/u/moved")
    );
}

#[test]
fn a_new_bubble_changes_the_composer_and_an_unchanged_one_keeps_its_stamp() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    sample(&conn);
    composer(
        &conn,
        "other",
        &compact("composerData.json").replace(COMPOSER, "other"),
    );
    bubble(
        &conn,
        "other",
        r#"{"_v":3,"type":1,"bubbleId":"b1-user-0001","text":"hi"}"#,
    );
    let u = units(&user);
    assert_eq!(keys(&u).len(), 2);
    let key = db.join(COMPOSER);
    let first = u.stamp(&key).unwrap();
    let other = u.stamp(&db.join("other")).unwrap();
    assert_eq!(u.stamp(&key).unwrap(), first, "unchanged rows, same stamp");
    // Cursor writes a new bubble (here as a BLOB: both storage classes read), then
    // names it in the header list.
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?1, CAST(?2 AS BLOB))",
        [
            format!("bubbleId:{COMPOSER}:b7-user-0007"),
            r#"{"_v":3,"type":1,"bubbleId":"b7-user-0007","text":"one more thing: quokka","createdAt":"2026-08-16T04:30:00.000Z"}"#.to_string(),
        ],
    )
    .unwrap();
    let second = u.stamp(&key).unwrap();
    assert_ne!(second, first, "a bubble written changes the composer");
    let mut c: Value = serde_json::from_slice(&fixture("composerData.json")).unwrap();
    c["fullConversationHeadersOnly"]
        .as_array_mut()
        .unwrap()
        .push(json!({"bubbleId": "b7-user-0007", "type": 1}));
    c["lastUpdatedAt"] = json!(1_786_854_600_000i64);
    composer(&conn, COMPOSER, &c.to_string());
    let third = u.stamp(&key).unwrap();
    assert_ne!(third, second);
    assert_eq!(third.mtime_ns, 1_786_854_600_000_000_000);
    let s = show(&u, &key);
    assert_eq!(
        s.conversation.last().unwrap()["text"],
        "one more thing: quokka"
    );
    // A bubble rewritten in place (its text streamed on) changes it too.
    bubble(
        &conn,
        COMPOSER,
        r#"{"_v":3,"type":1,"bubbleId":"b7-user-0007","text":"one more thing: quokkas","createdAt":"2026-08-16T04:30:00.000Z"}"#,
    );
    assert_ne!(u.stamp(&key).unwrap(), third);
    assert_eq!(
        u.stamp(&db.join("other")).unwrap(),
        other,
        "the other composer kept its stamp"
    );
}

/// Every file under `dir`: size, mtime, content. What "nothing changed" means.
fn folder_state(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(
                    e.path(),
                    (
                        m.len(),
                        m.mtime(),
                        m.mtime_nsec(),
                        std::fs::read(e.path()).unwrap(),
                    ),
                );
            }
        }
    }
    out
}

#[test]
fn reading_changes_no_byte_of_cursors_folder_and_creates_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    sample(&conn);
    let (ws_db, ws) = older(&user, &conn);
    drop(ws);
    // The rows live only in the WAL; Cursor has gone (no -shm left behind).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    drop(conn);
    let shm = PathBuf::from(format!("{}-shm", db.display()));
    let _ = std::fs::remove_file(&shm);
    assert!(
        std::fs::metadata(format!("{}-wal", db.display()))
            .unwrap()
            .len()
            > 0
    );
    let before = folder_state(&user);
    let u = units(&user);
    let k = keys(&u);
    assert_eq!(k.len(), 3);
    for key in &k {
        let s = show(&u, key);
        assert!(s.summary.resumable, "{key:?}: {:?}", s.summary);
        usage(&s.bytes);
    }
    assert_eq!(
        folder_state(&user),
        before,
        "reading changed Cursor's folder"
    );
    assert!(!shm.exists());
    for d in [&db, &ws_db] {
        for suffix in ["-journal", "-shm"] {
            assert!(!PathBuf::from(format!("{}{suffix}", d.display())).exists());
        }
    }
    assert!(!PathBuf::from(format!("{}-wal", ws_db.display())).exists());
}

#[test]
fn damaged_rows_and_unknown_formats_show_why_and_the_rest_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    sample(&conn);
    composer(
        &conn,
        "broken",
        "{\"_v\":10,\"composerId\":\"broken\",\"name\":\"cut sh",
    );
    composer(
        &conn,
        "future",
        r#"{"_v":99,"composerId":"future","name":"From a later Cursor","createdAt":1786850000000,"messages":{"order":["x"]}}"#,
    );
    bubble(
        &conn,
        "future",
        r#"{"_v":9,"type":1,"bubbleId":"x","text":"hello from the future"}"#,
    );
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES ('composerData:null', NULL)",
        [],
    )
    .unwrap();
    let u = units(&user);
    assert_eq!(keys(&u).len(), 4);
    let null = show(&u, &db.join("null"));
    assert!(!null.summary.resumable, "{:?}", null.summary);
    let broken = show(&u, &db.join("broken"));
    assert!(!broken.summary.resumable && broken.conversation.is_empty());
    assert!(
        broken
            .summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("not a JSON object"),
        "{:?}",
        broken.summary
    );
    assert_eq!(broken.summary.id, "broken");
    let future = show(&u, &db.join("future"));
    assert!(!future.summary.resumable && future.conversation.is_empty());
    let why = future.summary.not_resumable_reason.clone().unwrap();
    assert!(
        why.contains("_v 99") && why.contains("does not know"),
        "{why}"
    );
    assert_eq!(future.summary.title.as_deref(), Some("From a later Cursor"));
    // Its message is still found by search (history), outside the conversation.
    assert_eq!(future.history.len(), 1);
    assert!(!future.history[0].1);
    // The good composer reads as before.
    assert!(show(&u, &db.join(COMPOSER)).summary.resumable);
}

#[test]
fn a_truncated_or_foreign_database_is_one_unreadable_session_that_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let (db, conn) = create(&user);
    sample(&conn);
    for i in 0..40 {
        composer(
            &conn,
            &format!("c{i}"),
            &compact("composerData.json").replace(COMPOSER, &format!("c{i}")),
        );
        bubble(
            &conn,
            &format!("c{i}"),
            &format!(
                r#"{{"_v":3,"type":1,"bubbleId":"b1-user-0001","text":"{}"}}"#,
                "x".repeat(3000)
            ),
        );
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(conn);
    let full = std::fs::read(&db).unwrap();
    std::fs::write(&db, &full[..full.len() / 3]).unwrap();
    let u = units(&user);
    let k = keys(&u);
    assert_eq!(k, vec![db.join("unreadable")]);
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
    // Not a state database at all.
    std::fs::remove_file(&db).unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", db.display()));
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("CREATE TABLE t (x);").unwrap();
    drop(other);
    let u = units(&user);
    let s = show(&u, &keys(&u)[0]);
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("not a VS Code state database"),
        "{:?}",
        s.summary
    );
}

#[test]
fn a_locked_database_is_reported_busy_within_seconds_never_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("User");
    let dir = user.join("globalStorage");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.vscdb");
    // A writer in rollback-journal mode holding its exclusive transaction open, its
    // journal hot beside the database.
    let w = rusqlite::Connection::open(&path).unwrap();
    w.execute_batch(&std::fs::read_to_string(format!("{FIXTURES}/schema.sql")).unwrap())
        .unwrap();
    w.execute_batch("PRAGMA cache_size = 1; BEGIN EXCLUSIVE;")
        .unwrap();
    for i in 0..200 {
        composer(
            &w,
            &format!("c{i}"),
            &compact("composerData-inline.json").replace(INLINE, &format!("c{i}")),
        );
        put(&w, "ItemTable", &format!("pad{i}"), &"x".repeat(2000));
    }
    assert!(dir.join("state.vscdb-journal").exists());
    let started = Instant::now();
    let u = units(&user);
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
    // Once the writer is done the composers show.
    assert_eq!(keys(&u).len(), 200);
}
