//! The Copilot CLI reader against the public fixtures (read in place) and hand-made
//! logs pinning one rule each. Copilot is closed source: the rebuild is the guess of
//! AGENT-FORMATS-MORE.md §3, marked `resume_rules: "best effort"`.

use fen_fs::sources::copilot::{CopilotReader, complete_from_workspace, id_of_path};
use fen_fs::sources::foreign::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/copilot/session-state")
}

fn read_bytes(place_id: Option<&str>, bytes: &[u8]) -> (ForeignSummary, Vec<Value>) {
    let mut r = CopilotReader::new(place_id);
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| {
            let text = render_message(m, bytes);
            assert!(!text.contains(&b'\n'));
            serde_json::from_slice(&text).expect("message is JSON")
        })
        .collect();
    (r.summary(tail), conv)
}

fn read(rel: &str) -> (ForeignSummary, Vec<Value>) {
    let path = fixtures().join(rel);
    read_bytes(id_of_path(&path).as_deref(), &std::fs::read(path).unwrap())
}

fn check_incremental(bytes: &[u8]) {
    let mut whole = CopilotReader::new(Some("x"));
    let tail = feed_all(&mut whole, bytes);
    let want = (whole.summary(tail), whole.conversation(tail));
    for step in [1usize, 7, 64, 1000] {
        let mut r = CopilotReader::new(Some("x"));
        let mut consumed = 0usize;
        let mut avail = 0usize;
        while avail < bytes.len() {
            avail = (avail + step).min(bytes.len());
            consumed += r.feed(consumed as u64, &bytes[consumed..avail]) as usize;
            let _ = r.summary(&bytes[consumed..avail]);
        }
        let tail = &bytes[consumed..];
        assert_eq!((r.summary(tail), r.conversation(tail)), want, "step {step}");
    }
}

fn event_ids(c: &[Value]) -> Vec<&str> {
    c.iter().map(|m| m["id"].as_str().unwrap()).collect()
}

#[test]
fn directory_layout_fixture() {
    let (s, c) = read("aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl");
    assert_eq!(s.id, "aaaabbbb-1111-2222-3333-ccccddddeeee");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/project"));
    assert_eq!(s.created_at.as_deref(), Some("2026-03-26T17:50:34.263Z"));
    assert_eq!(s.updated_at.as_deref(), Some("2026-03-26T17:50:37.100Z"));
    assert_eq!(s.preview.as_deref(), Some("List the files"));
    assert!(s.listed && s.resumable);
    assert_eq!(s.resume_rules.as_deref(), Some("best effort"));
    assert_eq!(event_ids(&c), ["e2", "e4", "e6", "e8"]);
    assert_eq!(c[0]["type"], "user.message", "the events themselves");
    assert_eq!(s.roles.get("tool"), Some(&1));
    assert_eq!((s.entries, s.malformed_lines), (8, 0));
}

#[test]
fn flat_layout_fixture_with_sub_agent_events() {
    let (s, c) = read("copilot_stage0_small.jsonl");
    assert_eq!(s.id, "copilot_stage0_small");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/repo"));
    assert!(s.resumable, "{s:?}");
    // Sub-agent events (data.parentToolCallId) are not the main history.
    assert!(
        c.iter()
            .all(|e| e["data"].get("parentToolCallId").is_none())
    );
    assert_eq!(c[0]["id"], "e7");
    assert_eq!(c[0]["type"], "user.message");
}

#[test]
fn logs_copilot_refuses() {
    // A session.truncation that does not match Copilot's schema (reason/droppedTokens
    // instead of messagesRemovedDuringTruncation...): Copilot's loader rejects it.
    for f in ["copilot_stage0_drift.jsonl", "copilot_stage0_large.jsonl"] {
        let (s, c) = read(f);
        assert!(!s.resumable && c.is_empty(), "{f}");
        let why = s.not_resumable_reason.unwrap();
        assert!(why.contains("session.truncation"), "{f}: {why}");
        assert!(s.listed, "{f}: still named and listed");
        assert_eq!(s.id, f.trim_end_matches(".jsonl"));
    }
}

const START: &str = r#"{"type":"session.start","data":{"sessionId":"s-1","version":1,"producer":"copilot-agent","copilotVersion":"1.0.90","startTime":"2026-06-01T09:00:00.000Z","context":{"cwd":"/home/u/repo"}},"id":"e0","timestamp":"2026-06-01T09:00:00.000Z","parentId":null}"#;

fn ev(id: &str, ty: &str, data: Value) -> String {
    json!({"type": ty, "data": data, "id": id, "timestamp": "2026-06-01T09:00:01.000Z", "parentId": null})
        .to_string()
}

fn user(id: &str, text: &str) -> String {
    ev(
        id,
        "user.message",
        json!({"content": text, "attachments": []}),
    )
}

fn assistant(id: &str, text: &str) -> String {
    ev(
        id,
        "assistant.message",
        json!({"messageId": id, "content": text, "toolRequests": []}),
    )
}

fn log(lines: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.into_bytes()
}

fn truncation(id: &str, n: u64) -> String {
    ev(
        id,
        "session.truncation",
        json!({"tokenLimit": 100, "preTruncationTokensInMessages": 90, "preTruncationMessagesLength": 4,
               "postTruncationTokensInMessages": 50, "postTruncationMessagesLength": 2,
               "tokensRemovedDuringTruncation": 40, "messagesRemovedDuringTruncation": n,
               "performedBy": "BasicTruncator"}),
    )
}

fn crafted() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "compaction",
            log(&[
                START,
                &user("u1", "one"),
                &assistant("a1", "r1"),
                &ev(
                    "c0",
                    "session.compaction_complete",
                    json!({"success": false, "error": "x"}),
                ),
                &user("u2", "two"),
                &ev(
                    "c1",
                    "session.compaction_complete",
                    json!({"success": true, "summaryContent": "summary of one and two"}),
                ),
                &user("u3", "three"),
                &assistant("a3", "r3"),
            ]),
        ),
        (
            "truncation",
            log(&[
                START,
                &user("u1", "one"),
                &assistant("a1", "r1"),
                &user("u2", "two"),
                &truncation("t1", 2),
                &assistant("a2", "r2"),
            ]),
        ),
        (
            "cleared",
            log(&[
                START,
                &user("u1", "one"),
                &ev(
                    "x1",
                    "session.context_cleared",
                    json!({"messagesCleared": 1}),
                ),
                &user("u2", "two"),
                &ev(
                    "x2",
                    "session.context_cleared",
                    json!({"messagesCleared": 1, "initialMessage": "start over"}),
                ),
                &assistant("a2", "r2"),
            ]),
        ),
        (
            "rewind",
            log(&[
                START,
                &user("u1", "one"),
                &assistant("a1", "r1"),
                &user("u2", "two"),
                &assistant("a2", "r2"),
                &ev(
                    "r",
                    "session.snapshot_rewind",
                    json!({"upToEventId": "u2", "eventsRemoved": 2}),
                ),
                &user("u3", "three"),
            ]),
        ),
        (
            "titled",
            log(&[
                START,
                &user("u1", "  first\n  prompt "),
                &ev("t", "session.title_changed", json!({"title": "Old"})),
                &ev("t2", "session.title_changed", json!({"title": "Renamed"})),
                &ev(
                    "sub",
                    "assistant.message",
                    json!({"content": "from a sub-agent", "toolRequests": []}),
                )
                .replace("\"parentId\"", "\"agentId\":\"ag-1\",\"parentId\""),
            ]),
        ),
        (
            // Crash padding: NUL bytes after the last line, and a NUL-only line.
            "nul-padding",
            {
                let mut b = log(&[START, &user("u1", "one"), "\0\0\0\0"]);
                b.extend_from_slice(&[0u8; 64]);
                b
            },
        ),
        (
            // U+2028 raw inside a string: one line for a `\n` splitter.
            "u2028",
            log(&[START, &user("u1", "a\u{2028}b"), &assistant("a1", "ok")]),
        ),
        (
            // A torn event followed by a whole one on the same line (copilot-cli#4098).
            "torn-concatenated",
            log(&[
                START,
                &user("u1", "one"),
                &format!(
                    "{}{}",
                    &assistant("a1", "truncat")[..40],
                    assistant("a1", "complete")
                ),
                &user("u2", "two"),
            ]),
        ),
        (
            // A writer caught mid-append: the last line is torn.
            "torn-tail",
            {
                let mut b = log(&[START, &user("u1", "one")]);
                b.extend_from_slice(&assistant("a1", "r1").as_bytes()[..30]);
                b
            },
        ),
        (
            // A complete last line without its newline counts.
            "complete-tail",
            {
                let mut b = log(&[START, &user("u1", "one")]);
                b.extend_from_slice(assistant("a1", "r1").as_bytes());
                b
            },
        ),
        (
            "unknown-version",
            log(&[
                &START.replace("\"version\":1", "\"version\":2"),
                &user("u1", "one"),
            ]),
        ),
        (
            "no-start",
            log(&[&user("u1", "one"), &assistant("a1", "r1")]),
        ),
        ("empty", Vec::new()),
        (
            // Raw newlines inside a string (copilot-cli#2649): the event spans lines.
            "raw-newline",
            log(&[
                START,
                "{\"type\":\"tool.execution_complete\",\"data\":{\"toolCallId\":\"c\",\"success\":true,\"result\":{\"content\":\"a",
                "b\"}},\"id\":\"t\"}",
            ]),
        ),
    ]
}

fn crafted_one(name: &str) -> (ForeignSummary, Vec<Value>) {
    let (_, b) = crafted().into_iter().find(|(n, _)| *n == name).unwrap();
    read_bytes(Some("from-path"), &b)
}

#[test]
fn history_rebuild() {
    let (s, c) = crafted_one("compaction");
    assert_eq!(
        event_ids(&c),
        ["c1", "u3", "a3"],
        "from the newest successful compaction"
    );
    assert_eq!(c[0]["data"]["summaryContent"], "summary of one and two");
    assert_eq!((s.compactions, s.messages), (1, 3));
    let (_, c) = crafted_one("truncation");
    assert_eq!(event_ids(&c), ["u2", "a2"], "the two oldest messages went");
    let (_, c) = crafted_one("cleared");
    assert_eq!(
        event_ids(&c),
        ["x2", "a2"],
        "cleared, the initial message kept"
    );
    let (_, c) = crafted_one("rewind");
    assert_eq!(event_ids(&c), ["u1", "a1", "u3"], "u2 and after it removed");
    let (s, c) = crafted_one("titled");
    assert_eq!(s.title.as_deref(), Some("Renamed"));
    assert_eq!(s.preview.as_deref(), Some("first prompt"));
    assert_eq!(
        event_ids(&c),
        ["u1"],
        "sub-agent events are not the main history"
    );
    assert_eq!(s.id, "s-1", "session.start names the session");
}

#[test]
fn tolerated_damage() {
    let (s, c) = crafted_one("nul-padding");
    assert!(
        s.resumable,
        "NUL padding is skipped (Copilot 1.0.57+): {s:?}"
    );
    assert_eq!(event_ids(&c), ["u1"]);
    assert_eq!(s.malformed_lines, 0);
    let (s, c) = crafted_one("u2028");
    assert!(s.resumable);
    assert_eq!(c[0]["data"]["content"], "a\u{2028}b");
    let (s, c) = crafted_one("complete-tail");
    assert_eq!(event_ids(&c), ["u1", "a1"]);
    assert!(s.resumable);
}

#[test]
fn logs_copilot_would_refuse_appear_not_resumable() {
    for (name, why) in [
        ("torn-concatenated", "line 3"),
        ("torn-tail", "line 3"),
        ("no-start", "session.start"),
        ("empty", "no event"),
        ("raw-newline", "line 2"),
        ("unknown-version", "version 2"),
    ] {
        let (s, c) = crafted_one(name);
        assert!(!s.resumable && c.is_empty(), "{name}");
        let reason = s.not_resumable_reason.clone().unwrap();
        assert!(reason.contains(why), "{name}: {reason}");
    }
    // The whole event after the torn one still counts for the listing.
    let (s, _) = crafted_one("torn-concatenated");
    assert_eq!(s.preview.as_deref(), Some("one"));
    assert_eq!(s.id, "s-1");
    let (s, _) = crafted_one("empty");
    assert_eq!(s.id, "from-path", "no events: the id its place gives");
}

#[test]
fn crafted_logs_incremental_equals_whole() {
    for (name, bytes) in crafted() {
        eprintln!("case {name}");
        check_incremental(&bytes);
    }
    for f in ["copilot_stage0_small.jsonl", "copilot_stage0_drift.jsonl"] {
        check_incremental(&std::fs::read(fixtures().join(f)).unwrap());
    }
}

#[test]
fn workspace_yaml_completes_the_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session-state/s-9");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("workspace.yaml"),
        "id: s-9\ncwd: /home/u/w\nname: 'It''s named'\nsummary: \"An AI summary\"\ncreated_at: 2026-06-01T09:00:00Z\nupdated_at: 2026-06-02T10:00:00Z\nuser_named: true\n",
    )
    .unwrap();
    let path = dir.join("events.jsonl");
    assert_eq!(id_of_path(&path).as_deref(), Some("s-9"));
    let mut s = ForeignSummary::default();
    complete_from_workspace(&path, &mut s);
    assert_eq!(s.title.as_deref(), Some("It's named"));
    assert_eq!(s.cwd.as_deref(), Some("/home/u/w"));
    assert_eq!(s.created_at.as_deref(), Some("2026-06-01T09:00:00Z"));
    assert_eq!(s.updated_at.as_deref(), Some("2026-06-02T10:00:00Z"));
    // What the events say wins.
    let mut s = ForeignSummary {
        title: Some("From events".into()),
        cwd: Some("/from/start".into()),
        ..ForeignSummary::default()
    };
    complete_from_workspace(&path, &mut s);
    assert_eq!(s.title.as_deref(), Some("From events"));
    assert_eq!(s.cwd.as_deref(), Some("/from/start"));
    // The flat layout's sidecar folder, when it exists.
    let flat = tmp.path().join("session-state/s-9.jsonl");
    assert_eq!(id_of_path(&flat).as_deref(), Some("s-9"));
    let mut s = ForeignSummary::default();
    complete_from_workspace(&flat, &mut s);
    assert_eq!(s.title.as_deref(), Some("It's named"));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(START.as_bytes().to_vec()),
            Just(user("u1", "q").into_bytes()),
            Just(assistant("a1", "r").into_bytes()),
            Just(truncation("t", 1).into_bytes()),
            Just(ev("r", "session.snapshot_rewind", json!({"upToEventId": "u1"})).into_bytes()),
            Just(ev("c", "session.compaction_complete", json!({"success": true})).into_bytes()),
            Just(vec![0u8; 5]),
            Just(b"\n".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..40),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn never_panics_and_incremental_matches(parts in proptest::collection::vec((piece(), any::<bool>()), 0..12)) {
            let mut bytes = Vec::new();
            for (p, nl) in parts {
                bytes.extend_from_slice(&p);
                if nl { bytes.push(b'\n'); }
            }
            let (_, c) = read_bytes(None, &bytes);
            prop_assert!(c.iter().all(Value::is_object));
            check_incremental(&bytes);
        }
    }
}
