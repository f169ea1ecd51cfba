//! The Continue CLI (`cn`) reader against a session cn 1.5.47 wrote
//! (tests/fixtures/continue: a prompt with a `List` tool call, its result kept in the
//! calling item, a resumed second and third turn) and hand-made files pinning one rule
//! each (a compaction, a file being rewritten, no id).

use fen_fs::sources::continue_cli::{
    ContinueReader, complete_from_index, is_session_file_name, to_neutral, usage::ContinueUsage,
};
use fen_fs::sources::foreign::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/continue/sessions/c18299bf-7ac4-4667-be0a-a8772ac87b6a.json")
}

fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>) {
    let mut r = ContinueReader::new();
    let tail = feed_all(&mut r, bytes);
    assert_eq!(tail.len(), bytes.len(), "a whole-file session is all tail");
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| {
            let text = render_message(m, bytes);
            assert!(!text.contains(&b'\n'), "one message per line");
            serde_json::from_slice(&text).unwrap()
        })
        .collect();
    (r.summary(tail), conv)
}

#[test]
fn a_recorded_session_reads_as_cn_resumes_it() {
    assert!(is_session_file_name(
        "c18299bf-7ac4-4667-be0a-a8772ac87b6a.json"
    ));
    assert!(!is_session_file_name("sessions.json"));
    let bytes = std::fs::read(fixture()).unwrap();
    let (mut s, conv) = read(&bytes);
    assert_eq!(s.id, "c18299bf-7ac4-4667-be0a-a8772ac87b6a");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/c/proj"));
    assert_eq!(s.title, None, "cn's placeholder title is no title");
    assert_eq!(s.preview.as_deref(), Some("first prompt USE_LIST"));
    assert!(s.resumable && s.listed);
    complete_from_index(&fixture(), &mut s);
    assert!(s.listed, "sessions.json lists it");
    assert!(s.created_at.as_deref().unwrap().starts_with("2026-11-27T"));
    // Every item, as stored: the tool call's result stays in its item.
    let stored: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(conv, *stored["history"].as_array().unwrap());
    let calling = to_neutral(&conv[1]).unwrap();
    assert!(
        calling
            .parts
            .iter()
            .any(|p| matches!(p, fen_fs::neutral::Part::ToolCall { name, .. } if name == "List"))
    );
    assert!(calling.parts.iter().any(|p| matches!(
        p,
        fen_fs::neutral::Part::ToolResult { content, .. }
            if format!("{content:?}").contains("a.txt")
    )));
}

#[test]
fn a_compaction_starts_the_conversation() {
    let doc = json!({
        "sessionId": "s1", "title": "Named", "workspaceDirectory": "/p",
        "history": [
            {"message": {"role": "user", "content": "old"}, "contextItems": []},
            {"message": {"role": "assistant", "content": "summary"}, "contextItems": [],
             "conversationSummary": "summary"},
            {"message": {"role": "user", "content": "new"}, "contextItems": []}
        ]
    });
    let bytes = serde_json::to_vec_pretty(&doc).unwrap();
    let (s, conv) = read(&bytes);
    assert_eq!(s.title.as_deref(), Some("Named"));
    assert_eq!(s.compactions, 1);
    assert_eq!(conv.len(), 2);
    assert_eq!(conv[0]["conversationSummary"], "summary");
    let mut r = ContinueReader::new();
    let tail = feed_all(&mut r, &bytes);
    let all = r.messages(tail, true);
    assert_eq!(all.len(), 3);
    assert!(!all[0].in_conversation && all[1].summary);
}

#[test]
fn a_file_cn_cannot_load_is_shown_not_resumable() {
    for (bytes, why) in [
        (&b""[..], "empty"),
        (
            &b"{\"sessionId\": \"x\", \"history\": ["[..],
            "not valid JSON",
        ),
        (&b"{\"sessionId\": \"x\"}"[..], "no history"),
        (&b"{\"history\": []}"[..], "sessionId"),
    ] {
        let (s, conv) = read(bytes);
        assert!(!s.resumable, "{why}");
        assert!(s.not_resumable_reason.unwrap().contains(why), "{why}");
        assert!(conv.is_empty());
    }
}

#[test]
fn usage_counts_each_response_once_forks_included() {
    let bytes = std::fs::read(fixture()).unwrap();
    let mut u = ContinueUsage::at(Default::default(), 1_000);
    let out = fen_fs::usage_record::read_all(&mut u, &bytes);
    assert_eq!(out.records.len(), 4, "four answers");
    let r = &out.records[0];
    assert_eq!(
        (r.tokens.input, r.tokens.cache_read, r.tokens.output),
        (99, 3, 5)
    );
    assert_eq!(r.model.as_deref(), Some("mock-model"));
    assert_eq!(
        r.recorded_cost, None,
        "a cost of 0 cents is no recorded cost"
    );
    assert_eq!(&*r.session, "c18299bf-7ac4-4667-be0a-a8772ac87b6a");
    // A fork copies the history into a new session: the same responses.
    let mut fork: Value = serde_json::from_slice(&bytes).unwrap();
    fork["sessionId"] = json!("forked");
    let mut u = ContinueUsage::at(Default::default(), 2_000);
    let forked = fen_fs::usage_record::read_all(&mut u, &serde_json::to_vec(&fork).unwrap());
    let keys = |o: &fen_fs::usage_record::UsageOut| {
        o.records.iter().map(|r| r.key.unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(keys(&out), keys(&forked));
    let mut sorted = keys(&out);
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 4);
}
