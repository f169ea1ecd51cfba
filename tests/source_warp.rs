//! Warp's reader without a mount (built from Warp's public source: no Warp build
//! installs here): `warp.sqlite` made with Warp's own migrations, a conversation's
//! tasks encoded as Warp's protobuf `Task`, read as units; what is shown and sent,
//! the per-model usage, and tasks Warp could not restore.

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::Units;
use fen_fs::sources::warp::usage::WarpUsage;
use fen_fs::sources::warp::{WarpReader, WarpUnits, to_neutral};
use fen_fs::usage_record::{UnitFacts, read_all};
use rusqlite::Connection;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SCHEMA: &str = include_str!("fixtures/warp/schema.sql");

/// Protobuf, field by field (what `prost`'s `encode_to_vec` writes).
fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn ld(n: u64, b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(n << 3 | 2, &mut out);
    varint(b.len() as u64, &mut out);
    out.extend_from_slice(b);
    out
}

fn num(n: u64, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(n << 3, &mut out);
    varint(v, &mut out);
    out
}

/// `Message {id = 1, task_id = 11, timestamp = 14, <kind> = k}`.
fn message(id: &str, task: &str, secs: u64, kind: u64, body: Vec<u8>) -> Vec<u8> {
    [
        ld(1, id.as_bytes()),
        ld(11, task.as_bytes()),
        ld(14, &num(1, secs)),
        ld(kind, &body),
    ]
    .concat()
}

fn user_query(q: &str, pwd: &str) -> Vec<u8> {
    // UserQuery {query = 1, context = 2 {directory = 1 {pwd = 1}}}
    [ld(1, q.as_bytes()), ld(2, &ld(1, &ld(1, pwd.as_bytes())))].concat()
}

fn task(id: &str, description: &str, parent: Option<&str>, messages: &[Vec<u8>]) -> Vec<u8> {
    let mut t = [ld(1, id.as_bytes()), ld(2, description.as_bytes())].concat();
    if let Some(p) = parent {
        t.extend(ld(3, &ld(1, p.as_bytes())));
    }
    for m in messages {
        t.extend(ld(5, m));
    }
    t
}

fn create(state: &Path) -> (PathBuf, Connection) {
    std::fs::create_dir_all(state).unwrap();
    let path = state.join("warp.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    (path, conn)
}

/// A conversation as `write_updated_conversation_state` writes it.
fn conversation(conn: &Connection, id: &str, data: Value, summary: Value, tasks: &[Vec<u8>]) {
    conn.execute(
        "INSERT INTO agent_conversations (conversation_id, conversation_data, summary, last_modified_at) VALUES (?1, ?2, ?3, '2026-08-16 04:30:00')",
        rusqlite::params![id, data.to_string(), summary.to_string()],
    )
    .unwrap();
    for (i, t) in tasks.iter().enumerate() {
        conn.execute(
            "INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES (?1, ?2, ?3)",
            rusqlite::params![id, format!("{id}-task-{i}"), t],
        )
        .unwrap();
    }
}

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
    let mut reader = WarpReader::new(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(&mut reader, &bytes);
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

fn sample(conn: &Connection, id: &str) {
    let root = task(
        "root",
        "Find the large files",
        None,
        &[
            message(
                "m1",
                "root",
                1_786_854_600,
                2,
                user_query("Which files are over 1 MB?", "/home/u/wproj"),
            ),
            message(
                "m2",
                "root",
                1_786_854_601,
                15,
                ld(1, b"A find command does it."),
            ),
            // ToolCall {tool_call_id = 1, run_shell_command = 2 {command = 1}}
            message(
                "m3",
                "root",
                1_786_854_602,
                4,
                [ld(1, b"call_1"), ld(2, &ld(1, b"find . -size +1M"))].concat(),
            ),
            // ToolCallResult {tool_call_id = 1, run_shell_command = 2 {…}}
            message(
                "m4",
                "root",
                1_786_854_604,
                5,
                [
                    ld(1, b"call_1"),
                    ld(
                        2,
                        &[ld(1, b"find . -size +1M"), ld(2, b"./data/big.bin\n")].concat(),
                    ),
                ]
                .concat(),
            ),
            message(
                "m5",
                "root",
                1_786_854_606,
                3,
                ld(1, b"One: ./data/big.bin"),
            ),
            // UpdateTodos: not read by the model.
            message("m6", "root", 1_786_854_607, 10, ld(1, &ld(1, b"todo"))),
        ],
    );
    conversation(
        conn,
        id,
        json!({"server_conversation_token": "tok", "conversation_usage_metadata": {
            "was_summarized": false, "context_window_usage": 0.1, "credits_spent": 2.0,
            "total_provider_cost_in_cents": 1.5,
            "token_usage": [{"model_id": "claude-4-sonnet", "warp_tokens": 5200, "byok_tokens": 0}],
            "tool_usage_metadata": {}}}),
        json!({"initial_query": "Which files are over 1 MB?", "title": "Find the large files",
               "initial_working_directory": "/home/u/wproj", "is_restorable": true}),
        &[root],
    );
    conn.execute(
        "INSERT INTO ai_queries (exchange_id, conversation_id, start_ts, input, working_directory, output_status, model_id)
         VALUES ('ex1', ?1, '2026-08-16 04:29:59', '[{\"Query\":{\"text\":\"Which files are over 1 MB?\"}}]', '/home/u/wproj', 'Finished', 'claude-4-sonnet')",
        [id],
    )
    .unwrap();
}

#[test]
fn a_conversation_is_its_tasks_messages_as_the_model_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("warp-terminal");
    let (db, conn) = create(&state);
    sample(&conn, "c-1");
    let u = Units::new(Box::new(WarpUnits::new(&state)));
    let keys: Vec<PathBuf> = u.list().into_iter().map(|i| i.key).collect();
    assert_eq!(keys, vec![db.join("c-1")]);
    let s = show(&u, &keys[0]);
    let sum = &s.summary;
    assert_eq!(sum.id, "c-1");
    assert_eq!(sum.cwd.as_deref(), Some("/home/u/wproj"));
    assert_eq!(sum.title.as_deref(), Some("Find the large files"));
    assert_eq!(sum.preview.as_deref(), Some("Which files are over 1 MB?"));
    assert_eq!(sum.created_at.as_deref(), Some("2026-08-16T04:29:59.000Z"));
    assert_eq!(
        sum.updated_at.as_deref(),
        Some("2026-08-16T04:30:06.000Z"),
        "the last message read"
    );
    assert!(sum.resumable && sum.listed, "{sum:?}");
    // Five messages the model reads; the todo update is not one.
    assert_eq!(s.conversation.len(), 5);
    assert_eq!(
        s.conversation[0]["user_query"]["query"],
        "Which files are over 1 MB?"
    );
    let call = to_neutral(&s.conversation[2]).unwrap();
    assert_eq!(
        call.parts,
        vec![Part::ToolCall {
            id: "call_1".into(),
            name: "run_shell_command".into(),
            input: json!({"command": "find . -size +1M"})
        }]
    );
    let result = to_neutral(&s.conversation[3]).unwrap();
    assert_eq!(result.role, Role::Tool);
    assert!(result.plain_text().contains("./data/big.bin"));
    assert_eq!(
        to_neutral(&s.conversation[4]).unwrap().plain_text(),
        "One: ./data/big.bin"
    );
    assert_eq!(
        to_neutral(&s.conversation[0]).unwrap().timestamp.as_deref(),
        Some("2026-08-16T04:30:00.000Z")
    );
    // Usage: the model's total, once, with the recorded cost.
    let recs = read_all(
        &mut WarpUsage::new(UnitFacts {
            agent: Agent::default(),
            ..UnitFacts::default()
        }),
        &s.bytes,
    )
    .records;
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].tokens.input, recs[0].recorded_cost),
        (5200, Some(0.015))
    );
    assert_eq!(recs[0].model.as_deref(), Some("claude-4-sonnet"));
    assert_eq!(recs[0].time_ms, 1_786_854_600_000);
}

#[test]
fn undecodable_or_rootless_tasks_show_why_warp_would_not_restore() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("warp-terminal");
    let (db, conn) = create(&state);
    conversation(
        &conn,
        "bad",
        json!({"server_conversation_token": null}),
        json!({"title": "Broken", "is_restorable": true}),
        &[b"{not protobuf".to_vec()],
    );
    let child = task(
        "t2",
        "child",
        Some("elsewhere"),
        &[message("x", "t2", 1, 3, ld(1, b"hi"))],
    );
    let other = task("t3", "child", Some("elsewhere"), &[]);
    conversation(
        &conn,
        "rootless",
        json!({"server_conversation_token": null}),
        json!({"title": "No root", "is_restorable": false}),
        &[child, other],
    );
    conversation(
        &conn,
        "kid",
        json!({"server_conversation_token": null, "parent_conversation_id": "c-1"}),
        json!({"title": "Child", "is_restorable": true}),
        &[],
    );
    let u = Units::new(Box::new(WarpUnits::new(&state)));
    let bad = show(&u, &db.join("bad")).summary;
    assert!(
        !bad.resumable
            && bad
                .not_resumable_reason
                .as_deref()
                .unwrap()
                .contains("not a protobuf")
    );
    assert_eq!(bad.title.as_deref(), Some("Broken"));
    let rootless = show(&u, &db.join("rootless")).summary;
    assert!(
        !rootless.resumable
            && rootless
                .not_resumable_reason
                .as_deref()
                .unwrap()
                .contains("restorable")
    );
    let kid = show(&u, &db.join("kid")).summary;
    assert!(!kid.listed && kid.parent_id.as_deref() == Some("c-1"));
}

#[test]
fn a_changed_task_changes_the_conversation_and_reading_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("warp-terminal");
    let (db, conn) = create(&state);
    conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    sample(&conn, "c-1");
    let files = || {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&state)
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = files();
    let u = Units::new(Box::new(WarpUnits::new(&state)));
    let key = db.join("c-1");
    let first = u.stamp(&key).unwrap();
    assert_eq!(show(&u, &key).conversation.len(), 5);
    assert_eq!(files(), before, "reading changed Warp's folder");
    let more = task(
        "root",
        "Find the large files",
        None,
        &[message("m1", "root", 1, 2, user_query("again", "/w"))],
    );
    conn.execute(
        "UPDATE agent_tasks SET task = ?1 WHERE conversation_id = 'c-1'",
        [more],
    )
    .unwrap();
    assert_ne!(u.stamp(&key).unwrap(), first);
    assert_eq!(show(&u, &key).conversation.len(), 1);
}
