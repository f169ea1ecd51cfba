//! Kilo Code CLI (an OpenCode fork) is the oracle of its own reader, which is
//! OpenCode's over Kilo's names (`sources/kilo/`): the real agent (7.7.7) runs
//! OpenCode's scenario (`tests/opencode_server`: a tool call, a compaction keeping a
//! tail turn, an `/undo` left pending) against a mock model on 127.0.0.1 with a
//! temporary home, and what a fen-fs mount over its data folder shows (mounted before
//! Kilo starts, so `kilo.db` is read live from the WAL) must be exactly what Kilo
//! sends when the session is resumed.

mod opencode_server;
mod support;

use opencode_server::{KILO, Opencode, Shown};
use serde_json::{Value, json};
use support::mock_model::MockModel;
use support::{Mount, agent_bin};

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
    std::fs::create_dir_all(&data).unwrap();
    let proj = tmp.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let source = format!("kilo={}", data.display());
    let Some(m) = Mount::with_args(test, &["--no-detect", "--source", &source]) else {
        return;
    };
    let oc = Opencode::start(&KILO, &bin, &home, &proj, true);
    opencode_server::scenario(&KILO, &oc, &mock, true, |session| {
        let ns = fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(
            &proj.to_string_lossy(),
        ));
        let dir = std::fs::read_dir(m.mp.join(&ns))
            .unwrap_or_else(|e| panic!("namespace {ns}: {e}\n{}", m.daemon_log()))
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(&format!("_kilo-{session}")))
            .unwrap_or_else(|| panic!("no folder for {session}"));
        let meta = support::meta(&dir);
        assert_eq!(meta["source_path"], json!(data.join("kilo.db")), "{meta}");
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
    // fen-fs resume prints Kilo's own command for the session.
    let ns =
        fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(&proj.to_string_lossy()));
    let folder = std::fs::read_dir(m.mp.join(&ns))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.contains("_kilo-"))
        .unwrap();
    let id = folder.split("_kilo-").nth(1).unwrap().to_string();
    let out = support::fen_fs()
        .args(["resume", &id, "--no-detect", "--source", &source])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("kilo --session {id}")), "{text}");
}
