//! Kilo Code CLI (an OpenCode fork) is the oracle of its own reader, which is
//! OpenCode's over Kilo's names (`sources/kilo.rs`): the real agent (7.7.7) runs
//! OpenCode's scenario (`tests/opencode_server`: a tool call, a compaction keeping a
//! tail turn, an `/undo` left pending) against a mock model on 127.0.0.1 with a
//! temporary home, and what fen-fs shows of its `kilo.db`, read live from the WAL
//! while Kilo runs, must be exactly what Kilo sends when the session is resumed.

mod opencode_server;
mod support;

use fen_fs::sources::foreign::{feed_all, render_message};
use fen_fs::sources::kilo;
use opencode_server::{KILO, Opencode, Shown};
use serde_json::json;
use std::path::Path;
use support::agent_bin;
use support::mock_model::MockModel;

/// Kilo's session `id` as fen-fs reads it from the data folder: its unit's dump
/// (`transcript.jsonl`), the reader's listing facts and `conversation.json`.
fn show(data: &Path, id: &str) -> Shown {
    use std::os::unix::fs::FileExt;
    let units = kilo::units(data);
    let key = units
        .list()
        .into_iter()
        .map(|u| u.key)
        .find(|k| k.file_name().is_some_and(|n| n == id))
        .unwrap_or_else(|| panic!("no unit for {id} in {}", data.display()));
    assert_eq!(key.parent(), Some(data.join("kilo.db").as_path()));
    let (file, stamp) = units.open(&key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut reader = kilo::reader_for(id);
    let tail = feed_all(reader.as_mut(), &bytes);
    let summary = reader.summary(tail);
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    Shown {
        meta: json!({"agent": kilo::KIND, "resumable": summary.resumable,
                     "why": summary.not_resumable_reason, "cwd": summary.cwd}),
        conversation,
        transcript: String::from_utf8(bytes).unwrap(),
    }
}

#[test]
fn kilo_sessions_resume_as_conversation_json_says() {
    let test = "kilo_sessions_resume_as_conversation_json_says";
    let Some(bin) = agent_bin(test, "kilo") else {
        return;
    };
    let mock = MockModel::start(opencode_server::model);
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let home = opencode_server::home(&KILO, tmp, &mock, true);
    let data = opencode_server::data_dir(&KILO, &home);
    let proj = tmp.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let oc = Opencode::start(&KILO, &bin, &home, &proj, true);
    opencode_server::scenario(&KILO, &oc, &mock, true, |session| {
        let shown = show(&data, session);
        assert_eq!(shown.meta["cwd"], json!(proj), "{}", shown.meta);
        shown
    });
}
