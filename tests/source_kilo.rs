//! Kilo Code CLI's reader without a mount, on a database Kilo 7.7.7 wrote
//! (`tests/fixtures/kilo/kilo.db`: two sessions, one with a tool call, a compaction
//! and a turn after it; sanitised: the project folder renamed `/home/u/proj`, the
//! tables fen-fs never reads dropped, vacuumed). Kilo is OpenCode's reader over
//! Kilo's names, so these check the names and that Kilo's rows read as OpenCode's
//! rules say; OpenCode's rules themselves are `tests/source_opencode.rs`'s.

mod support;

use fen_fs::agent::Agent;
use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::kilo;
use fen_fs::usage_record::{Tokens, UnitFacts, read_all};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/kilo/kilo.db";
const TOOL_SESSION: &str = "ses_de27f3cedffeJkvpNJ44a4d1PA";
const OTHER_SESSION: &str = "ses_de27f0b6fffecF4H3XAgkj6EQz";

/// A data folder holding a copy of the fixture as `kilo.db`.
fn data_folder(tmp: &Path) -> PathBuf {
    let data = tmp.join("kilo");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(FIXTURE, data.join("kilo.db")).unwrap();
    data
}

struct Shown {
    bytes: Vec<u8>,
    summary: ForeignSummary,
    conversation: Vec<Value>,
}

fn show(units: &fen_fs::sources::units::Units, key: &Path) -> Shown {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = units.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut reader = kilo::reader_for(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(reader.as_mut(), &bytes);
    assert!(tail.is_empty(), "a dump is whole lines");
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    Shown {
        summary: reader.summary(tail),
        conversation,
        bytes,
    }
}

/// `role: texts` of each message (a compaction as `[compaction]`, a tool call as
/// `[tool]`).
fn outline(conversation: &[Value]) -> Vec<String> {
    conversation
        .iter()
        .map(|m| {
            let parts: Vec<String> = m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| !matches!(p["type"].as_str(), Some("step-start" | "step-finish")))
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

#[test]
fn kilo_finds_its_data_folder_and_databases_by_its_own_names() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    // OpenCode's databases in the same folder are not Kilo's.
    std::fs::copy(FIXTURE, data.join("opencode.db")).unwrap();
    assert!(kilo::present(&data));
    assert!(!kilo::present(tmp.path()));
    let units = kilo::units(&data);
    let mut keys: Vec<PathBuf> = units.list().into_iter().map(|u| u.key).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            data.join("kilo.db").join(OTHER_SESSION),
            data.join("kilo.db").join(TOOL_SESSION)
        ]
    );
    assert!(
        units
            .list()
            .iter()
            .all(|u| u.cwd.as_deref() == Some("/home/u/proj"))
    );
    assert_eq!(units.source().source_path(&keys[0]), data.join("kilo.db"));
}

#[test]
fn a_kilo_session_resumes_from_its_compaction_as_opencode_would() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    let units = kilo::units(&data);
    let s = show(&units, &data.join("kilo.db").join(TOOL_SESSION));
    // The dump: the session row, then each message followed by its parts.
    let first: Value =
        serde_json::from_slice(s.bytes.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["id"], TOOL_SESSION);
    assert_eq!(first["version"], "7.7.7");
    let text = String::from_utf8(s.bytes.clone()).unwrap();
    for prompt in [
        "first prompt",
        "RUNTOOL second",
        "third",
        "after compaction",
    ] {
        assert!(text.contains(prompt), "{prompt} is in the dump");
    }
    assert!(text.contains("call_mock_1"), "the tool call is in the dump");
    assert_eq!(s.summary.id, TOOL_SESSION);
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(s.summary.title.as_deref(), Some("Mock reply"));
    assert!(s.summary.resumable, "{:?}", s.summary.not_resumable_reason);
    assert_eq!(s.summary.compactions, 1);
    // From the compaction on: its prompt, the summary, the turn it kept (the run's
    // config kept one tail turn), the turn after it.
    assert_eq!(
        outline(&s.conversation),
        [
            "user: [compaction]",
            "assistant: Mock reply",
            "user: third",
            "assistant: Mock reply",
            "user: after compaction",
            "assistant: Mock reply"
        ]
    );
    assert_eq!(s.conversation[1]["info"]["summary"], true);
    // conversation.json's messages become neutral messages by OpenCode's conversion.
    let n = kilo::to_neutral(&s.conversation[4]).unwrap();
    assert_eq!(n.plain_text(), "after compaction");
    let compaction = kilo::to_neutral(&s.conversation[0]).unwrap();
    assert_eq!(compaction.plain_text(), "What did we do so far?");
}

#[test]
fn kilo_usage_counts_each_assistant_message_once_under_kilos_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    let units = kilo::units(&data);
    let s = show(&units, &data.join("kilo.db").join(TOOL_SESSION));
    let facts = UnitFacts {
        agent: Agent::Opencode,
        ..UnitFacts::default()
    };
    let out = read_all(kilo::usage_reader(facts).as_mut(), &s.bytes);
    assert_eq!(out.malformed, 0, "{:?}", out.first_malformed);
    // Five answers of 10 in / 5 out (the tool call, the answer after it, three more)
    // and the compaction's summary (Kilo records the mock's usage for it too).
    let assistants = s
        .bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|v| v["role"] == "assistant" && v.get("tokens").is_some())
        .count();
    assert_eq!(out.records.len(), assistants);
    assert!(out.records.len() >= 5, "{}", out.records.len());
    let mut total = Tokens::default();
    for r in &out.records {
        total.add(&r.tokens);
        assert_eq!(&*r.session, TOOL_SESSION);
        assert_eq!(r.cwd.as_deref(), Some("/home/u/proj"));
        assert_eq!(r.model.as_deref(), Some("mock-model"));
        assert_eq!(r.recorded_cost, Some(0.0));
    }
    assert_eq!(total.output % 5, 0);
    // Kilo's keys are its own: the same message id under OpenCode's reader differs.
    let oc = read_all(
        &mut fen_fs::sources::opencode::usage::OpencodeUsage::new(UnitFacts::default()),
        &s.bytes,
    );
    assert_eq!(oc.records.len(), out.records.len());
    assert_ne!(oc.records[0].key, out.records[0].key);
    let keys: std::collections::HashSet<_> = out.records.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), out.records.len(), "one key per response");
}

#[test]
fn reading_a_live_kilo_database_changes_nothing_in_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    // Kilo running: WAL mode, a new row in the -wal, the writer's -shm mapped.
    let writer = rusqlite::Connection::open(data.join("kilo.db")).unwrap();
    writer
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    writer
        .execute(
            "INSERT INTO message VALUES ('msg_zzz_live', ?1, 1895791400000, 1895791400000, ?2)",
            rusqlite::params![
                OTHER_SESSION,
                json!({"role": "user", "time": {"created": 1895791400000_i64}}).to_string()
            ],
        )
        .unwrap();
    writer
        .execute(
            "INSERT INTO part VALUES ('prt_zzz_live', 'msg_zzz_live', ?1, 1895791400000, 1895791400000, ?2)",
            rusqlite::params![OTHER_SESSION, json!({"type": "text", "text": "a live row"}).to_string()],
        )
        .unwrap();
    assert!(data.join("kilo.db-wal").metadata().unwrap().len() > 0);
    let before = support::folder_state(&data);
    let units = kilo::units(&data);
    for u in units.list() {
        let s = show(&units, &u.key);
        if u.key.ends_with(OTHER_SESSION) {
            assert!(
                outline(&s.conversation).contains(&"user: a live row".to_string()),
                "the row in the -wal is read: {:?}",
                outline(&s.conversation)
            );
        }
    }
    assert_eq!(
        support::folder_state(&data),
        before,
        "reading changed Kilo's folder"
    );

    // The writer gone without a checkpoint, its -shm removed: read the same, none made.
    writer
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
    drop(writer);
    let _ = std::fs::remove_file(data.join("kilo.db-shm"));
    let before = support::folder_state(&data);
    let units = kilo::units(&data);
    let keys: Vec<PathBuf> = units.list().into_iter().map(|u| u.key).collect();
    assert_eq!(keys.len(), 2);
    for k in &keys {
        show(&units, k);
    }
    assert_eq!(support::folder_state(&data), before);
    assert!(!data.join("kilo.db-shm").exists(), "a -shm was created");
}

#[test]
fn a_damaged_kilo_database_shows_as_one_unreadable_session() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("kilo");
    std::fs::create_dir_all(&data).unwrap();
    let bytes = std::fs::read(FIXTURE).unwrap();
    std::fs::write(data.join("kilo.db"), &bytes[..bytes.len() / 3]).unwrap();
    let units = kilo::units(&data);
    let keys: Vec<PathBuf> = units.list().into_iter().map(|u| u.key).collect();
    assert_eq!(keys, [data.join("kilo.db/unreadable")]);
    let s = show(&units, &keys[0]);
    assert!(!s.summary.resumable);
    assert!(s.conversation.is_empty());
    let why = String::from_utf8(s.bytes).unwrap();
    assert!(why.contains("fen_unreadable"), "{why}");
}
