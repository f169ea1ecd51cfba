//! Zed's reader without a mount (built from Zed's public source: no Zed build
//! installs here): `threads.db` made with Zed's own table, threads stored as Zed's
//! `save_thread_sync` stores them (zstd JSON) and as older rows (`json`, the first
//! agent's versions), read as units: what Zed sends when the thread goes on, the
//! listing facts, its token usage, and threads or databases Zed could not load.

mod zed_support;

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role, Vendor};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::Units;
use fen_fs::sources::zed::usage::ZedUsage;
use fen_fs::sources::zed::{ZedReader, ZedUnits, to_neutral};
use fen_fs::usage_record::{UnitFacts, UsageRecord, read_all};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use zed_support::{create, fixture, save};

struct Shown {
    bytes: Vec<u8>,
    summary: ForeignSummary,
    conversation: Vec<Value>,
}

fn show(u: &Units, key: &Path) -> Shown {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut reader = ZedReader::new(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(&mut reader, &bytes);
    assert!(tail.is_empty());
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    Shown {
        summary: reader.summary(tail),
        bytes,
        conversation,
    }
}

fn keys(u: &Units) -> Vec<PathBuf> {
    let mut k: Vec<PathBuf> = u.list().into_iter().map(|i| i.key).collect();
    k.sort();
    k
}

fn usage(bytes: &[u8]) -> Vec<UsageRecord> {
    let mut r = ZedUsage::new(UnitFacts {
        agent: Agent::Zed,
        ..UnitFacts::default()
    });
    read_all(&mut r, bytes).records
}

#[test]
fn a_thread_is_what_zed_sends_for_each_of_its_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("zed");
    let (db, conn) = create(&data, true);
    let id = "5d1f2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b";
    save(
        &conn,
        id,
        &fixture("thread-0.3.0.json"),
        &["/home/u/zproj", "/home/u/a-lib"],
        None,
    );
    let u = Units::new(Box::new(ZedUnits::new(&data)));
    assert_eq!(keys(&u), vec![db.join(id)]);
    let s = show(&u, &db.join(id));
    let sum = &s.summary;
    assert_eq!(sum.id, id);
    assert_eq!(sum.title.as_deref(), Some("Fix the failing test"));
    // The first folder the user opened, though it sorts second.
    assert_eq!(sum.cwd.as_deref(), Some("/home/u/zproj"));
    assert_eq!(sum.preview.as_deref(), Some("Why does test_parse fail?"));
    assert_eq!(sum.updated_at.as_deref(), Some("2026-08-16T04:26:10.512Z"));
    assert_eq!(
        sum.created_at, sum.updated_at,
        "Zed's created_at: the first save's updated_at"
    );
    assert!(sum.resumable && sum.listed, "{sum:?}");
    assert!(
        sum.resume_rules.is_some(),
        "a mention's context is simplified"
    );
    // User, assistant + its tool results, assistant, user, and Resume.
    let roles: Vec<&str> = s
        .conversation
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user", "user"]
    );
    assert_eq!(sum.messages, 6);
    assert_eq!(
        s.conversation[5]["content"][0]["Text"],
        "Continue where you left off"
    );
    // The transcript keeps each message as stored before what is sent for it.
    let lines: Vec<Value> = s
        .bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["folder_paths"],
        json!(["/home/u/zproj", "/home/u/a-lib"])
    );
    assert_eq!(lines[0]["thread"]["model"]["model"], "claude-sonnet-4-5");
    assert!(lines[0]["thread"].get("messages").is_none());
    assert!(lines[1]["zed_message"]["User"].is_object());
    assert_eq!(
        lines[3]["zed_message"]["Agent"]["tool_results"]["toolu_01A"]["output"]["exit_status"],
        101
    );
    // Neutral: thinking signed (Anthropic's), the call, its result in the next user
    // message, the mention's content in the context block.
    let a = to_neutral(&s.conversation[1]).unwrap();
    assert_eq!(a.role, Role::Assistant);
    assert!(
        matches!(&a.parts[0], Part::Reasoning { vendor: Vendor::Anthropic, text, .. } if text == "Read the test first.")
    );
    assert_eq!(
        a.parts[2],
        Part::ToolCall {
            id: "toolu_01A".into(),
            name: "terminal".into(),
            input: json!({"command": "cargo test test_parse", "cd": "zproj"})
        }
    );
    let r = to_neutral(&s.conversation[2]).unwrap();
    assert!(
        matches!(&r.parts[0], Part::ToolResult { call_id, name: Some(n), is_error: false, .. }
        if call_id == "toolu_01A" && n == "terminal")
    );
    let first = to_neutral(&s.conversation[0]).unwrap().plain_text();
    assert!(
        first.contains("Why does test_parse fail?") && first.contains("fn parse"),
        "{first}"
    );
    // Usage: one record per user message, at the thread's last update.
    let recs = usage(&s.bytes);
    assert_eq!(recs.len(), 2);
    let by_input: Vec<(u64, u64, u64, u64)> = recs
        .iter()
        .map(|r| {
            (
                r.tokens.input,
                r.tokens.output,
                r.tokens.cache_write_5m,
                r.tokens.cache_read,
            )
        })
        .collect();
    assert!(by_input.contains(&(2410, 96, 2048, 0)) && by_input.contains(&(312, 40, 0, 2048)));
    assert!(
        recs.iter()
            .all(|r| r.time_ms == 1_786_854_370_512 && &*r.session == id)
    );
    assert_eq!(recs[0].model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(recs[0].cwd.as_deref(), Some("/home/u/zproj"));
}

#[test]
fn a_first_agent_thread_in_an_older_row_is_upgraded_as_zed_loads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("zed");
    // The table before parent, folders and created_at; the data stored as text.
    let (db, conn) = create(&data, false);
    let json = fixture("thread-0.2.0.json");
    conn.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('old-1', 'List the files', '2025-04-10T09:00:05Z', 'json', ?1)",
        [&json],
    )
    .unwrap();
    let u = Units::new(Box::new(ZedUnits::new(&data)));
    let s = show(&u, &db.join("old-1"));
    assert!(s.summary.resumable, "{:?}", s.summary);
    assert_eq!(
        s.summary.cwd.as_deref(),
        Some("/home/u/legacy"),
        "from the project snapshot"
    );
    assert_eq!(s.summary.created_at, None);
    let roles: Vec<&str> = s
        .conversation
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // user; assistant (thinking, text, call) + its result; assistant.
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let call = to_neutral(&s.conversation[1]).unwrap();
    assert!(matches!(&call.parts[2], Part::ToolCall { name, .. } if name == "list_directory"));
    let result = to_neutral(&s.conversation[2]).unwrap();
    assert!(
        matches!(&result.parts[0], Part::ToolResult { name: Some(n), content, .. }
        if n == "list_directory" && content == &vec![Part::Text { text: "Cargo.toml\nsrc".into() }])
    );
    // The per-message usage list maps to the user message, the later one winning.
    let recs = usage(&s.bytes);
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].tokens.input, recs[0].tokens.output), (400, 30));
    assert_eq!(recs[0].model.as_deref(), Some("claude-3-7-sonnet-latest"));
}

#[test]
fn threads_zed_could_not_load_still_show_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("zed");
    let (db, conn) = create(&data, true);
    let mut doc: Value = serde_json::from_slice(&fixture("thread-0.3.0.json")).unwrap();
    doc["version"] = json!("0.9.0");
    save(&conn, "newer", doc.to_string().as_bytes(), &["/p"], None);
    conn.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data, folder_paths) VALUES ('brotli', 'Compressed otherwise', '2026-01-01T00:00:00Z', 'brotli', x'00', '/q')",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('cut', 'Cut', '2026-01-01T00:00:00Z', 'zstd', x'28b52ffd0058')",
        [],
    )
    .unwrap();
    let u = Units::new(Box::new(ZedUnits::new(&data)));
    let reason = |id: &str| {
        let s = show(&u, &db.join(id));
        assert!(!s.summary.resumable && s.conversation.is_empty());
        s.summary
    };
    let newer = reason("newer");
    assert!(
        newer
            .not_resumable_reason
            .unwrap()
            .contains("unrecognized serialized thread version")
    );
    assert_eq!(newer.title.as_deref(), Some("Fix the failing test"));
    let brotli = reason("brotli");
    assert!(
        brotli
            .not_resumable_reason
            .unwrap()
            .contains("unknown data_type")
    );
    assert_eq!(brotli.cwd.as_deref(), Some("/q"));
    assert!(reason("cut").not_resumable_reason.unwrap().contains("zstd"));
    // A subagent's thread: shown, not in Zed's history list.
    save(
        &conn,
        "child",
        &fixture("thread-0.3.0.json"),
        &["/p"],
        Some("parent-id"),
    );
    let child = show(&u, &db.join("child")).summary;
    assert!(!child.listed && child.resumable);
    assert_eq!(child.parent_id.as_deref(), Some("parent-id"));
}

#[test]
fn a_resave_changes_the_thread_and_reading_never_touches_zed_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("zed");
    let (db, conn) = create(&data, true);
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    save(&conn, "t", &fixture("thread-0.3.0.json"), &["/p"], None);
    let u = Units::new(Box::new(ZedUnits::new(&data)));
    let key = db.join("t");
    let first = u.stamp(&key).unwrap();
    let before = listing(&data);
    assert_eq!(show(&u, &key).summary.messages, 6);
    assert_eq!(listing(&data), before, "reading changed Zed's folder");
    // Zed saves the whole thread again with one more message.
    let mut doc: Value = serde_json::from_slice(&fixture("thread-0.3.0.json")).unwrap();
    doc["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"User": {"id": "u3", "content": [{"Text": "and the docs"}]}}));
    doc["updated_at"] = json!("2026-08-16T05:00:00Z");
    save(&conn, "t", doc.to_string().as_bytes(), &["/p"], None);
    let second = u.stamp(&key).unwrap();
    assert_ne!(second, first);
    let s = show(&u, &key);
    assert_eq!(
        s.conversation.last().unwrap()["content"][0]["Text"],
        "and the docs"
    );
    // A damaged database: one unreadable session saying why.
    drop(conn);
    let _ = std::fs::remove_file(format!("{}-wal", db.display()));
    let _ = std::fs::remove_file(format!("{}-shm", db.display()));
    let full = std::fs::read(&db).unwrap();
    std::fs::write(&db, &full[..full.len().min(1000)]).unwrap();
    let u = Units::new(Box::new(ZedUnits::new(&data)));
    let k = keys(&u);
    assert_eq!(k, vec![db.join("unreadable")]);
    assert!(!show(&u, &k[0]).summary.resumable);
}

/// Every file under `dir`: name, size, mtime and bytes.
fn listing(dir: &Path) -> Vec<(PathBuf, u64, i64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("threads")).unwrap().flatten() {
        let m = e.metadata().unwrap();
        out.push((
            e.path(),
            m.len(),
            m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            std::fs::read(e.path()).unwrap(),
        ));
    }
    out.sort();
    out
}
