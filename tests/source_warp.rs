//! Warp's reader without a mount (built from Warp's public source: no Warp build
//! installs here): `warp.sqlite` made with Warp's own migrations, a conversation's
//! tasks encoded as Warp's protobuf `Task`, read as units; what is shown and sent,
//! the per-model usage, and tasks Warp could not restore.

mod warp_support;

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::Units;
use fen_fs::sources::warp::usage::WarpUsage;
use fen_fs::sources::warp::{WarpReader, WarpUnits, to_neutral};
use fen_fs::usage_record::{UnitFacts, read_all};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use warp_support::{conversation, create, ld, message, sample, task, user_query};

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
            agent: Agent::Warp,
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
