//! OpenCode itself is the oracle: the real agent (1.18.33, which stores sessions in
//! SQLite, and 1.1.65, which writes JSON files under `storage/`) runs against a mock
//! model on 127.0.0.1 with a temporary home (AGENT-FORMATS-MORE.md §7), through its
//! own server (`opencode serve`, the code path of `opencode run` and the TUI): a
//! prompt, a tool call, a compaction (1.18.33: keeping a tail turn), more prompts and
//! an `/undo` left pending. A fen-fs mount over its data folder, mounted before
//! OpenCode starts (so the rows are read live, from the WAL), must then show as
//! `conversation.json` exactly the messages OpenCode sends when the session is
//! resumed with a new prompt. The scenario is `tests/opencode_server` (Kilo, a fork,
//! runs it too).

mod opencode_server;
mod support;

use opencode_server::{OPENCODE, Opencode, Shown};
use serde_json::{Value, json};
use support::mock_model::MockModel;
use support::{Mount, agent_bin};

fn scenario(test: &str, agent: &str, sqlite: bool) {
    let Some(bin) = agent_bin(test, agent) else {
        return;
    };
    let mock = MockModel::start(opencode_server::model);
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let home = opencode_server::home(&OPENCODE, tmp, &mock, sqlite);
    let data = opencode_server::data_dir(&OPENCODE, &home);
    std::fs::create_dir_all(&data).unwrap();
    let proj = tmp.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // Mounted first: OpenCode's rows are then read live, while it writes them.
    let source = format!("opencode={}", data.display());
    let Some(m) = Mount::with_args(test, &["--no-detect", "--source", &source]) else {
        return;
    };
    let oc = Opencode::start(&OPENCODE, &bin, &home, &proj, sqlite);
    opencode_server::scenario(&OPENCODE, &oc, &mock, sqlite, |session| {
        let ns = fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(
            &proj.to_string_lossy(),
        ));
        let dir = std::fs::read_dir(m.mp.join(&ns))
            .unwrap_or_else(|e| panic!("namespace {ns}: {e}\n{}", m.daemon_log()))
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.to_string_lossy()
                    .ends_with(&format!("_opencode-{session}"))
            })
            .unwrap_or_else(|| panic!("no folder for {session}"));
        let meta = support::meta(&dir);
        let source_path = if sqlite {
            data.join("opencode.db")
        } else {
            data.join("storage")
        };
        assert_eq!(meta["source_path"], json!(source_path), "{meta}");
        let conversation: Vec<Value> = serde_json::from_slice(
            &std::fs::read(dir.join("conversation.json")).expect("conversation.json"),
        )
        .expect("conversation.json is a JSON array");
        Shown {
            meta,
            conversation,
            transcript: std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap(),
        }
    });
}

#[test]
fn opencode_sqlite_sessions_resume_as_conversation_json_says() {
    scenario(
        "opencode_sqlite_sessions_resume_as_conversation_json_says",
        "opencode",
        true,
    );
}

#[test]
fn opencode_json_storage_sessions_resume_as_conversation_json_says() {
    scenario(
        "opencode_json_storage_sessions_resume_as_conversation_json_says",
        "opencode-json",
        false,
    );
}
