//! OpenCode's reader without a mount: databases and storage folders made here with
//! OpenCode's own tables, read as units, each rule of AGENT-FORMATS-MORE.md §1 in turn
//! (hydration and order, a pending undo, compactions with and without a kept tail,
//! the JSON files, OpenCode 2 rows, child and archived sessions, damaged input).

mod opencode_support;

use fen_fs::agent::Agent;
use fen_fs::sources::agents;
use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::opencode::OpencodeUnits;
use fen_fs::sources::units::Units;
use opencode_support::{Db, Storage};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A session as fen-fs shows it.
struct Shown {
    raw: String,
    summary: ForeignSummary,
    conversation: Vec<Value>,
    transcript: Vec<Value>,
}

fn units(data: &Path) -> Units {
    Units::new(Box::new(OpencodeUnits::new(data)))
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
    assert_eq!(file.metadata().unwrap().len(), stamp.size);
    let name = key.file_name().unwrap().to_string_lossy().to_string();
    let mut reader = agents::reader_for(Agent::Opencode, &name);
    let tail = feed_all(reader.as_mut(), &bytes);
    assert!(tail.is_empty(), "a dump is whole lines");
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    let transcript = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    Shown {
        raw: String::from_utf8(bytes.clone()).unwrap(),
        summary: reader.summary(tail),
        conversation,
        transcript,
    }
}

/// `role: texts` of each message (a compaction as `[compaction]`).
fn outline(conversation: &[Value]) -> Vec<String> {
    conversation
        .iter()
        .map(|m| {
            let parts: Vec<String> = m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| match p["type"].as_str().unwrap() {
                    "text" => p["text"].as_str().unwrap().to_string(),
                    other => format!("[{other}]"),
                })
                .collect();
            format!(
                "{}: {}",
                m["info"]["role"].as_str().unwrap(),
                parts.join(" ")
            )
        })
        .collect()
}

fn db_in(tmp: &Path) -> (PathBuf, Db) {
    let data = tmp.join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = Db::create(&data.join("opencode.db"));
    (data, db)
}

#[test]
fn the_dump_is_the_rows_as_opencode_hydrates_them_in_stored_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/home/u/proj", "Fix the bug");
    db.user("ses_a", "msg_2", "first");
    db.assistant("ses_a", "msg_1", "msg_2", "answer");
    // A part written before the one with the smaller id still comes after it.
    db.part(
        "ses_a",
        "msg_1",
        "prt_msg_1_0",
        json!({"type": "step-start"}),
    );
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k, vec![data.join("opencode.db/ses_a")]);
    let s = show(&u, &k[0]);
    let t = &s.transcript;
    assert_eq!(t[0]["id"], "ses_a");
    assert_eq!(t[0]["directory"], "/home/u/proj");
    assert_eq!(t[0]["title"], "Fix the bug");
    assert_eq!(t[0]["time"]["created"], t[0]["time"]["updated"]);
    // Messages by (time_created, id), each followed by its parts by id.
    let ids: Vec<&str> = t[1..].iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "msg_2",
            "prt_msg_2_1",
            "msg_1",
            "prt_msg_1_0",
            "prt_msg_1_1"
        ]
    );
    assert_eq!(t[1]["sessionID"], "ses_a");
    assert_eq!(t[2]["messageID"], "msg_2");
    // {...data, id, sessionID}: the stored keys first, in their order.
    let stored: String = db
        .conn
        .query_row("SELECT data FROM message WHERE id = 'msg_2'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(
        s.raw.lines().nth(1).unwrap(),
        format!(
            "{},\"id\":\"msg_2\",\"sessionID\":\"ses_a\"}}",
            &stored[..stored.len() - 1]
        )
    );
    assert_eq!(s.summary.id, "ses_a");
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(s.summary.title.as_deref(), Some("Fix the bug"));
    assert_eq!(s.summary.preview.as_deref(), Some("first"));
    assert!(s.summary.resumable && s.summary.listed && !s.summary.archived);
    assert_eq!(
        outline(&s.conversation),
        ["user: first", "assistant: [step-start] answer"]
    );
}

#[test]
fn the_dump_keeps_the_stored_bytes_of_each_row() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/p", "t");
    // Stored text with odd number forms and escapes: re-encoding would change them.
    let data_text = r#"{"role":"user","time":{"created":1.50e3},"text":"caf\u00e9 \"q\""}"#;
    db.conn
        .execute(
            "INSERT INTO message VALUES ('msg_1', 'ses_a', 5, 5, ?1)",
            [data_text],
        )
        .unwrap();
    let u = units(&data);
    let (f, stamp) = u.open(&data.join("opencode.db/ses_a")).unwrap();
    let mut dump = vec![0; stamp.size as usize];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut dump, 0).unwrap();
    let dump = String::from_utf8(dump).unwrap();
    let line = dump.lines().nth(1).unwrap();
    assert_eq!(
        line,
        r#"{"role":"user","time":{"created":1.50e3},"text":"caf\u00e9 \"q\"","id":"msg_1","sessionID":"ses_a"}"#
    );
}

#[test]
fn a_pending_undo_is_applied_as_opencode_cleans_it_up() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/p", "t");
    db.user("ses_a", "msg_01", "one");
    db.assistant("ses_a", "msg_02", "msg_01", "two");
    db.user("ses_a", "msg_03", "three");
    db.assistant("ses_a", "msg_04", "msg_03", "four");
    db.part(
        "ses_a",
        "msg_04",
        "prt_msg_04_2",
        json!({"type": "text", "text": "more"}),
    );
    let key = data.join("opencode.db/ses_a");
    let u = units(&data);
    keys(&u);
    let conv = |u: &Units| outline(&show(u, &key).conversation);
    assert_eq!(conv(&u).len(), 4);
    // `/undo` of the second turn: it and everything after it go.
    db.set(
        "ses_a",
        "revert",
        Some(r#"{"messageID":"msg_03","snapshot":"x"}"#),
    );
    assert_eq!(conv(&u), ["user: one", "assistant: two"]);
    // Undo from a part: that message stays, cut before the part.
    db.set(
        "ses_a",
        "revert",
        Some(r#"{"messageID":"msg_04","partID":"prt_msg_04_2"}"#),
    );
    assert_eq!(
        conv(&u),
        [
            "user: one",
            "assistant: two",
            "user: three",
            "assistant: four"
        ]
    );
    // A revert naming no stored message removes nothing.
    db.set("ses_a", "revert", Some(r#"{"messageID":"msg_99"}"#));
    assert_eq!(conv(&u).len(), 4);
    // The undone rows are still stored: the transcript has them.
    db.set("ses_a", "revert", Some(r#"{"messageID":"msg_03"}"#));
    let s = show(&u, &key);
    assert_eq!(s.transcript.len(), 1 + 4 + 5);
    assert_eq!(s.summary.messages, 2);
}

#[test]
fn history_starts_at_the_newest_finished_compaction_with_its_kept_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/p", "t");
    db.user("ses_a", "msg_01", "one");
    db.assistant("ses_a", "msg_02", "msg_01", "two");
    db.compaction("ses_a", "msg_03", "msg_04", None);
    db.user("ses_a", "msg_05", "five");
    db.assistant("ses_a", "msg_06", "msg_05", "six");
    let key = data.join("opencode.db/ses_a");
    let u = units(&data);
    keys(&u);
    let conv = |u: &Units| outline(&show(u, &key).conversation);
    assert_eq!(
        conv(&u),
        [
            "user: [compaction]",
            "assistant: the summary",
            "user: five",
            "assistant: six"
        ]
    );
    // A newer compaction that keeps the turn before it: the summary first, then the
    // kept turn, then what came after.
    db.user("ses_a", "msg_07", "seven");
    db.assistant("ses_a", "msg_08", "msg_07", "eight");
    db.compaction("ses_a", "msg_09", "msg_10", Some("msg_07"));
    db.user("ses_a", "msg_11", "eleven");
    assert_eq!(
        conv(&u),
        [
            "user: [compaction]",
            "assistant: the summary",
            "user: seven",
            "assistant: eight",
            "user: eleven"
        ]
    );
    let s = show(&u, &key);
    assert_eq!(s.summary.compactions, 2);
}

#[test]
fn a_compaction_whose_summary_failed_is_not_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/p", "t");
    db.user("ses_a", "msg_01", "one");
    db.compaction("ses_a", "msg_02", "msg_03", None);
    db.user("ses_a", "msg_04", "four");
    db.compaction("ses_a", "msg_05", "msg_06", None);
    db.user("ses_a", "msg_07", "seven");
    let key = data.join("opencode.db/ses_a");
    let u = units(&data);
    keys(&u);
    let conv = |u: &Units| outline(&show(u, &key).conversation);
    assert_eq!(
        conv(&u)[..2],
        ["user: [compaction]", "assistant: the summary"]
    );
    assert_eq!(conv(&u).len(), 3);
    db.conn
        .execute(
            "UPDATE message SET data = json_set(data, '$.error', json('{\"name\":\"APIError\"}')) WHERE id = 'msg_06'",
            [],
        )
        .unwrap();
    db.set("ses_a", "title", Some("t2"));
    assert_eq!(
        conv(&u),
        [
            "user: [compaction]",
            "assistant: the summary",
            "user: four",
            "user: [compaction]",
            "assistant: the summary",
            "user: seven"
        ]
    );
}

#[test]
fn opencode_2_rows_resume_from_the_newest_completed_compaction_best_effort() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_v", "/p", "Two");
    let row = |db: &Db, id: &str, seq: i64, kind: &str, data: Value| {
        db.conn
            .execute(
                "INSERT INTO session_message VALUES (?1, 'ses_v', ?2, ?3, ?3, ?3, ?4)",
                rusqlite::params![id, kind, seq, data.to_string()],
            )
            .unwrap();
    };
    row(&db, "m1", 1, "user", json!({"text": "hello"}));
    row(
        &db,
        "m2",
        2,
        "assistant",
        json!({"content": [{"type": "text", "text": "hi"}]}),
    );
    row(
        &db,
        "m3",
        3,
        "compaction",
        json!({"status": "completed", "summary": "s"}),
    );
    row(&db, "m4", 4, "user", json!({"text": "again"}));
    row(
        &db,
        "m5",
        5,
        "compaction",
        json!({"status": "completed", "summary": "native", "providerContext": {"p": 1}}),
    );
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k, vec![data.join("opencode.db/ses_v.v2")]);
    let s = show(&u, &k[0]);
    let ids: Vec<&str> = s
        .conversation
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m3", "m4"]);
    assert_eq!(s.conversation[1]["type"], "user");
    assert_eq!(s.summary.resume_rules.as_deref(), Some("best effort"));
    assert_eq!(s.summary.preview.as_deref(), Some("hello"));
}

#[test]
fn child_and_archived_sessions_show_marked_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_p", "/p", "Parent");
    db.user("ses_p", "msg_1", "go");
    db.session("ses_c", "/p", "Child session - x");
    db.set("ses_c", "parent_id", Some("ses_p"));
    db.user("ses_c", "msg_2", "subtask");
    db.session("ses_z", "/p", "Old");
    db.user("ses_z", "msg_3", "old");
    db.conn
        .execute(
            "UPDATE session SET time_archived = 5 WHERE id = 'ses_z'",
            [],
        )
        .unwrap();
    let u = units(&data);
    let shown: Vec<ForeignSummary> = keys(&u).iter().map(|k| show(&u, k).summary).collect();
    let by = |id: &str| shown.iter().find(|s| s.id == id).unwrap();
    assert_eq!(by("ses_c").parent_id.as_deref(), Some("ses_p"));
    assert!(!by("ses_c").listed && by("ses_c").resumable);
    assert!(by("ses_z").archived && !by("ses_z").listed);
    assert!(by("ses_p").listed && !by("ses_p").archived && by("ses_p").parent_id.is_none());
}

#[test]
fn a_change_in_the_rows_changes_the_stamp_and_nothing_else_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_a", "/p", "t");
    db.user("ses_a", "msg_1", "one");
    db.session("ses_b", "/q", "t");
    let u = units(&data);
    keys(&u);
    let (a, b) = (
        data.join("opencode.db/ses_a"),
        data.join("opencode.db/ses_b"),
    );
    let (sa, sb) = (u.stamp(&a).unwrap(), u.stamp(&b).unwrap());
    assert_eq!(u.stamp(&a), Some(sa), "unchanged rows, same stamp");
    db.part(
        "ses_a",
        "msg_1",
        "prt_x",
        json!({"type": "text", "text": "more"}),
    );
    let sa2 = u.stamp(&a).unwrap();
    assert_ne!(sa2, sa);
    assert!(sa2.size > sa.size);
    assert_ne!(sa2.ino, sa.ino, "a new dump, not an append");
    assert_eq!(u.stamp(&b), Some(sb), "the other session is untouched");
    // A part updated in place (same size, same count) still changes it.
    db.conn
        .execute(
            "UPDATE part SET data = replace(data, 'more', 'mork') WHERE id = 'prt_x'",
            [],
        )
        .unwrap();
    db.conn
        .execute(
            "UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = 'ses_a'",
            [],
        )
        .unwrap();
    assert_ne!(u.stamp(&a), Some(sa2));
}

#[test]
fn json_files_of_opencode_1_1_are_read_when_no_database_holds_them() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    let st = Storage::new(&data);
    st.session("ses_old", "/home/u/old", "Old session");
    st.message("ses_old", "msg_1", "user", "from the files");
    st.message("ses_old", "msg_2", "assistant", "reply");
    st.session("ses_both", "/home/u/both", "Migrated");
    st.message("ses_both", "msg_3", "user", "migrated");
    let u = units(&data);
    assert_eq!(keys(&u).len(), 2, "no database: every file session");
    let key = data.join("storage/session/global/ses_old.json");
    let s = show(&u, &key);
    assert_eq!(
        outline(&s.conversation),
        ["user: from the files", "assistant: reply"]
    );
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/old"));
    assert!(s.summary.resumable);
    // Pretty-printed files become one line each, their strings untouched.
    assert_eq!(s.transcript.len(), 5);
    // 1.2 migrated one of them into the database: shown once, from the database.
    let mut db = Db::create(&data.join("opencode.db"));
    db.session("ses_both", "/home/u/both", "Migrated");
    db.user("ses_both", "msg_3", "migrated");
    let k = keys(&u);
    assert_eq!(
        k,
        vec![
            data.join("opencode.db/ses_both"),
            data.join("storage/session/global/ses_old.json")
        ]
    );
}

#[test]
fn a_json_file_being_rewritten_is_never_shown_half() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    let st = Storage::new(&data);
    st.session("ses_old", "/p", "t");
    st.message("ses_old", "msg_1", "user", "one");
    let (_, part) = st.message("ses_old", "msg_2", "assistant", "two");
    let u = units(&data);
    let key = data.join("storage/session/global/ses_old.json");
    keys(&u);
    assert!(show(&u, &key).summary.resumable);
    // OpenCode truncates and rewrites in place: caught empty, then half written.
    let whole = std::fs::read(&part).unwrap();
    for half in [&whole[..0], &whole[..whole.len() / 2]] {
        std::fs::write(&part, half).unwrap();
        let s = show(&u, &key);
        assert!(!s.summary.resumable);
        let why = s.summary.not_resumable_reason.unwrap();
        assert!(why.contains("prt_msg_2.json"), "{why}");
        assert!(s.conversation.is_empty(), "never half a conversation");
    }
    std::fs::write(&part, &whole).unwrap();
    let s = show(&u, &key);
    assert!(s.summary.resumable);
    assert_eq!(outline(&s.conversation), ["user: one", "assistant: two"]);
}

#[test]
fn damaged_databases_show_as_one_unreadable_session_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    // Garbage, a database cut in half, and a schema this reader does not know.
    std::fs::write(data.join("opencode-junk.db"), vec![b'x'; 10_000]).unwrap();
    {
        let path = data.join("opencode-cut.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(opencode_support::DDL).unwrap();
        c.execute_batch("BEGIN").unwrap();
        for i in 0..300 {
            c.execute(
                "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?1, 'g', 's', '/p', 't', 'v', 1, 1)",
                [format!("ses_{i:04}_{}", "x".repeat(200))],
            )
            .unwrap();
        }
        c.execute_batch("COMMIT").unwrap();
        drop(c);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    {
        let c = rusqlite::Connection::open(data.join("opencode-future.db")).unwrap();
        c.execute_batch("CREATE TABLE session (id TEXT PRIMARY KEY, cwd TEXT);")
            .unwrap();
    }
    let u = units(&data);
    let k = keys(&u);
    assert_eq!(k.len(), 3, "{k:?}");
    for key in &k {
        assert!(key.ends_with("unreadable"), "{key:?}");
        let s = show(&u, key);
        assert!(!s.summary.resumable);
        assert!(s.conversation.is_empty());
        let why = s.summary.not_resumable_reason.unwrap();
        assert!(!why.is_empty());
        if key.to_string_lossy().contains("future") {
            assert!(why.contains("unknown schema"), "{why}");
        }
    }
}

#[test]
fn a_session_opencode_cannot_load_is_shown_not_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, mut db) = db_in(tmp.path());
    db.session("ses_empty", "/p", "Nothing yet");
    db.session("ses_bad", "/p", "Bad row");
    db.user("ses_bad", "msg_1", "one");
    db.conn
        .execute(
            "INSERT INTO message VALUES ('msg_2', 'ses_bad', 9e15, 9e15, '{\"role\": \"assis')",
            [],
        )
        .unwrap();
    let u = units(&data);
    keys(&u);
    let empty = show(&u, &data.join("opencode.db/ses_empty"));
    assert!(!empty.summary.resumable);
    assert!(
        empty
            .summary
            .not_resumable_reason
            .unwrap()
            .contains("No user message")
    );
    let bad = show(&u, &data.join("opencode.db/ses_bad"));
    assert!(!bad.summary.resumable);
    assert_eq!(bad.summary.malformed_lines, 1);
    assert!(bad.conversation.is_empty());
}

#[test]
fn messages_become_neutral_messages() {
    use fen_fs::neutral::{Part, Role};
    let m = json!({
        "info": {"id": "msg_1", "role": "assistant", "providerID": "anthropic", "modelID": "claude-x",
                 "time": {"created": 1_790_000_000_000_i64}},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "thinking", "metadata": {"anthropic": {"signature": "s"}}},
            {"type": "text", "text": "Let me look."},
            {"type": "tool", "callID": "call_1", "tool": "bash",
             "state": {"status": "completed", "input": {"command": "ls"}, "output": "a\nb"}},
            {"type": "step-finish"}
        ]
    });
    let n = agents::to_neutral(Agent::Opencode, &m).unwrap();
    assert_eq!(n.role, Role::Assistant);
    assert_eq!(n.entry.as_deref(), Some("msg_1"));
    assert_eq!(n.model.as_ref().unwrap().model, "claude-x");
    assert!(
        matches!(&n.parts[0], Part::Reasoning { text, opaque: Some(_), .. } if text == "thinking")
    );
    assert_eq!(
        n.parts[1],
        Part::Text {
            text: "Let me look.".into()
        }
    );
    assert!(
        matches!(&n.parts[2], Part::ToolCall { id, name, .. } if id == "call_1" && name == "bash")
    );
    assert!(
        matches!(&n.parts[3], Part::ToolResult { call_id, is_error: false, .. } if call_id == "call_1")
    );
    assert_eq!(n.parts.len(), 4);
    let c = json!({"info": {"id": "m", "role": "user"}, "parts": [{"type": "compaction", "auto": true}]});
    let n = agents::to_neutral(Agent::Opencode, &c).unwrap();
    assert_eq!(n.plain_text(), "What did we do so far?");
    let s = json!({"info": {"id": "m", "role": "assistant", "summary": true}, "parts": [{"type": "text", "text": "sum"}]});
    assert!(agents::to_neutral(Agent::Opencode, &s).unwrap().summary);
    let synthetic = json!({"info": {"id": "m", "role": "user"},
        "parts": [{"type": "text", "text": "Continue if you have next steps", "synthetic": true}]});
    assert!(
        agents::to_neutral(Agent::Opencode, &synthetic)
            .unwrap()
            .injected
    );
}
