//! The OpenHands CLI reader against a conversation OpenHands CLI 1.16.0 wrote here
//! against a mock model (tests/fixtures/openhands: a prompt with a `terminal` call
//! and `finish`, then `--resume` with a second prompt; the system prompt and tool
//! descriptions cut short), a condensation, a cut-off and an unknown event, and the
//! usage its `base_state.json` recorded.

use fen_fs::sources::foreign::*;
use fen_fs::sources::kind::AgentKind;
use fen_fs::sources::openhands::{
    ConversationUnits, OpenhandsReader, kind::Openhands, to_neutral, usage::OpenhandsUsage,
};
use fen_fs::sources::units::UnitSource;
use serde_json::Value;
use std::path::{Path, PathBuf};

const ID: &str = "5e4274e3516047f385c171092a8ad825";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openhands")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn dump(root: &Path) -> Vec<u8> {
    let units = ConversationUnits::new(root);
    let list = units.list();
    assert_eq!(list.len(), 1);
    units.dump(&list[0].key).unwrap().bytes
}

fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>, Vec<MessageRef>) {
    let mut r = OpenhandsReader::new();
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, bytes)).unwrap())
        .collect();
    (r.summary(tail), conv, r.messages(tail, true))
}

#[test]
fn a_recorded_conversation_reads_as_openhands_resumed_it() {
    let bytes = dump(&root());
    let (s, conv, refs) = read(&bytes);
    assert_eq!(s.id, ID);
    assert_eq!(s.cwd.as_deref(), Some("/home/u/oh-proj"));
    assert_eq!(s.preview.as_deref(), Some("list files please"));
    assert!(s.resumable && s.listed, "{s:?}");
    assert!(s.created_at.as_deref().unwrap().ends_with('Z'));
    // What OpenHands sent on --resume before the new prompt (seen at the mock): system,
    // user, assistant with its terminal call, its result, assistant with finish, its
    // result, then the second prompt.
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(s.messages, 9);
    assert!(refs[0].injected);
    assert_eq!(conv[2]["content"][0]["text"], "Listing them.");
    assert_eq!(conv[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(conv[2]["tool_calls"][0]["function"]["name"], "terminal");
    let args: Value = serde_json::from_str(
        conv[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args["command"], "ls");
    assert_eq!(conv[3]["tool_call_id"], "call_1");
    assert!(
        conv[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("README.md")
    );
    assert_eq!(conv[6]["content"][0]["text"], "a second question");
    assert_eq!(refs[2].model.as_ref().unwrap().model, "openai/mock");
    let call = to_neutral(&conv[2]).unwrap();
    assert!(format!("{:?}", call.parts).contains("ToolCall"));
    let result = to_neutral(&conv[3]).unwrap();
    assert!(format!("{:?}", result.parts).contains("README.md"));
    assert_eq!(
        Openhands.resume_command(ID).unwrap().args,
        ["--resume".to_string(), ID.to_string()]
    );
}

#[test]
fn a_condensation_drops_what_it_forgot_and_puts_its_summary_in() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root(), tmp.path());
    let conv_dir = tmp.path().join("conversations").join(ID);
    let events = conv_dir.join("events");
    let names: Vec<String> = {
        let mut n: Vec<String> = std::fs::read_dir(&events)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    let id_of = |i: usize| -> String {
        let v: Value =
            serde_json::from_slice(&std::fs::read(events.join(&names[i])).unwrap()).unwrap();
        v["id"].as_str().unwrap().to_string()
    };
    // Forget the first turn's call, result, finish and its result (events 2-5).
    let forgotten: Vec<String> = (2..=5).map(id_of).collect();
    let condensation = serde_json::json!({
        "id": "c0ffee00-0000-4000-8000-000000000001",
        "timestamp": "2026-11-27T18:02:00.000000",
        "source": "environment",
        "forgotten_event_ids": forgotten,
        "summary": "The user asked for the files; README.md is there.",
        "summary_offset": 2,
        "llm_response_id": "rc",
        "kind": "Condensation",
    });
    std::fs::write(
        events.join("event-00009-c0ffee00-0000-4000-8000-000000000001.json"),
        condensation.to_string(),
    )
    .unwrap();
    let (s, conv, refs) = read(&dump(tmp.path()));
    assert!(s.resumable, "{s:?}");
    assert_eq!(s.compactions, 1);
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "user", "user", "assistant", "tool"]
    );
    assert!(refs[2].summary && refs[2].injected);
    assert_eq!(
        conv[2]["content"][0]["text"],
        "The user asked for the files; README.md is there."
    );
}

#[test]
fn a_cut_off_or_unknown_event_shows_unresumable_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root(), tmp.path());
    let events = tmp.path().join("conversations").join(ID).join("events");
    let unknown = events.join("event-00009-0000aaaa-0000-4000-8000-000000000002.json");
    std::fs::write(
        &unknown,
        r#"{"id":"0000aaaa-0000-4000-8000-000000000002","timestamp":"2026-11-27T18:03:00","source":"agent","kind":"BranchEvent"}"#,
    )
    .unwrap();
    let (s, conv, _) = read(&dump(tmp.path()));
    assert!(!s.resumable);
    assert!(
        s.not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("BranchEvent"),
        "{s:?}"
    );
    assert_eq!(conv.len(), 9, "the rest still shows");
    std::fs::remove_file(&unknown).unwrap();
    // An event file cut short (OpenHands killed while writing it).
    std::fs::write(
        events.join("event-00009-0000bbbb-0000-4000-8000-000000000003.json"),
        r#"{"id":"0000bbbb-0000-4000-8000-000000000003","timestamp":"2026-11-27T18:0"#,
    )
    .unwrap();
    let (s, _, _) = read(&dump(tmp.path()));
    assert!(!s.resumable);
    assert!(
        s.not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("event-00009"),
        "{s:?}"
    );
}

#[test]
fn usage_is_each_response_base_state_recorded() {
    let bytes = dump(&root());
    let mut u = OpenhandsUsage::new(fen_fs::usage_record::UnitFacts {
        agent: fen_fs::agent::Agent::Openhands,
        ..Default::default()
    });
    let out = fen_fs::usage_record::read_all(&mut u, &bytes);
    // Three responses (r1, r2, then r3 after the resume), 120 prompt tokens each of
    // which 20 cached, 7 out.
    assert_eq!(out.records.len(), 3, "{:?}", out.records);
    for r in &out.records {
        assert_eq!(&*r.session, ID);
        assert_eq!(r.model.as_deref(), Some("openai/mock"));
        assert_eq!(r.cwd.as_deref(), Some("/home/u/oh-proj"));
        assert_eq!(
            (r.tokens.input, r.tokens.cache_read, r.tokens.output),
            (100, 20, 7)
        );
    }
    let keys: std::collections::HashSet<_> = out.records.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 3);
}
