//! `FenSource::messages`: a fen session's messages as neutral values, exactly
//! `conversation.json`'s (§3 projection, compaction items first) with their entry ids
//! and times, and with `history` every message the transcript holds.

mod core_support;

use core_support::*;
use fen_fs::agent::Agent;
use fen_fs::neutral::{Message, Part, Role};
use fen_fs::sources::SessionSource;
use fen_fs::sources::agents::to_neutral;
use fen_fs::sources::fen::FenSource;
use serde_json::Value;
use std::sync::Arc;

fn converted(items: &[String]) -> Vec<Message> {
    items
        .iter()
        .map(|i| to_neutral(Agent::Fen, &serde_json::from_str(i).unwrap()).unwrap())
        .collect()
}

/// Entry id and timestamp of every line of the transcript, by id.
fn lines_by_id(path: &std::path::Path) -> Vec<Value> {
    file_lines(path)
}

#[test]
fn the_conversation_with_ids_and_the_history_beside_it() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let (s, _) = create_simple(&store, "/p", "first question");
    let ids = append(
        &store,
        &s,
        &[
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}"#,
            r#"{"type":"title","title":"Listing files"}"#,
            r#"{"type":"bash-output","command":"ls","exit":0}"#,
            r#"{"role":"assistant","content":"two files"}"#,
        ],
    );
    let kept = ids[1].clone();
    append(
        &store,
        &s,
        &[&format!(
            r#"{{"type":"compaction","summary":"listed files","first-kept-entry-id":"{kept}"}}"#
        )],
    );
    append(&store, &s, &[r#"{"role":"user","content":"and now?"}"#]);
    let source = FenSource::new(store.clone());
    let got = source.messages(&s.namespace, &s.dir, false).unwrap();
    let items = conversation_items(&s);
    let want = converted(&items);
    assert_eq!(got.messages.len(), want.len());
    for (g, w) in got.messages.iter().zip(&want) {
        assert_eq!(g.role, w.role);
        assert!(g.in_conversation);
        // Tool results are named after their calls when the call is there.
        let named: Vec<Part> = g.parts.clone();
        assert_eq!(named.len(), w.parts.len());
    }
    // The synthetic summary first, then the kept messages from `kept` on.
    assert!(got.messages[0].summary);
    assert_eq!(got.messages[0].plain_text(), "listed files");
    assert!(matches!(
        &got.messages[1].parts[0],
        Part::ToolResult { name: None, .. }
    ));
    assert_eq!(got.messages[1].entry.as_deref(), Some(kept.as_str()));
    let lines = lines_by_id(&path_of(&s));
    for m in &got.messages {
        let id = m.entry.as_deref().expect("every message has its entry id");
        let line = lines.iter().find(|l| l["id"] == id).unwrap();
        assert_eq!(m.timestamp.as_deref(), line["timestamp"].as_str());
    }
    assert_eq!(got.facts.agent, Agent::Fen);
    assert_eq!(got.facts.title.as_deref(), Some("Listing files"));
    assert_eq!(got.facts.cwd.as_deref(), Some("/p"));
    assert_eq!(got.facts.dir, s.dir);
    assert_eq!(got.facts.source_path, path_of(&s));
    assert!(got.facts.resumable);

    let all = source
        .messages(&s.namespace, &s.dir, true)
        .unwrap()
        .messages;
    let texts: Vec<(String, bool)> = all
        .iter()
        .map(|m| (m.plain_text(), m.in_conversation))
        .collect();
    assert_eq!(
        texts,
        [
            ("first question".to_string(), false),
            ("Bash\n{\"command\":\"ls\"}".to_string(), false),
            ("a\nb".to_string(), true),
            ("two files".to_string(), true),
            ("listed files".to_string(), true),
            ("and now?".to_string(), true),
        ]
    );
    // In the history the call is there: the result is named after it.
    assert!(matches!(&all[2].parts[0], Part::ToolResult { name: Some(n), .. } if n == "Bash"));
}

#[test]
fn replacement_messages_and_older_compactions() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let (s, _) = create_simple(&store, "/p", "one");
    append(
        &store,
        &s,
        &[
            r#"{"type":"compaction","summary":"old","first-kept-entry-id":null}"#,
            r#"{"role":"assistant","content":"two"}"#,
            r#"{"type":"compaction","summary":"new","messages":[{"role":"user","content":"carried over"},{"role":"assistant","content":[{"type":"text","text":"kept"}]}]}"#,
        ],
    );
    // An invalid compaction (ignored by §3), as another writer could leave it.
    raw_append(
        &path_of(&s),
        br#"{"type":"compaction","summary":"bad","first-kept-entry-id":"nope"}
"#,
    );
    append(&store, &s, &[r#"{"role":"user","content":"three"}"#]);
    let source = FenSource::new(store.clone());
    let conv = source
        .messages(&s.namespace, &s.dir, false)
        .unwrap()
        .messages;
    let texts: Vec<String> = conv.iter().map(Message::plain_text).collect();
    assert_eq!(texts, ["carried over", "kept", "three"]);
    assert_eq!(conv.len(), conversation_items(&s).len());
    assert!(conv.iter().all(|m| !m.summary));
    assert_eq!(conv[1].role, Role::Assistant);
    let all = source
        .messages(&s.namespace, &s.dir, true)
        .unwrap()
        .messages;
    let texts: Vec<(String, bool, bool)> = all
        .iter()
        .map(|m| (m.plain_text(), m.in_conversation, m.summary))
        .collect();
    assert_eq!(
        texts,
        [
            ("one".to_string(), false, false),
            ("old".to_string(), false, true),
            ("two".to_string(), false, false),
            ("carried over".to_string(), true, false),
            ("kept".to_string(), true, false),
            ("three".to_string(), true, false),
        ]
    );
}

#[test]
fn a_hand_written_file_with_odd_lines() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let mut text = header_line("h", "/p");
    text.push_str("garbage\n");
    text.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"{}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":{{\"odd\":1}}}}}}\n",
        uid(1)
    ));
    text.push_str(
        "\0\0{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"no id\"}}\n",
    );
    text.push_str("{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"torn");
    let s = hand_session(
        &store,
        "--p--",
        "2026-01-01T00-00-00-000Z_h",
        text.as_bytes(),
    );
    let source = FenSource::new(store.clone());
    let m = source
        .messages(&s.namespace, &s.dir, false)
        .unwrap()
        .messages;
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].entry.as_deref(), Some(uid(1).as_str()));
    assert_eq!(m[0].plain_text(), r#"{"content":{"odd":1},"role":"user"}"#);
    assert_eq!(m[1].entry, None);
    assert_eq!(m[1].plain_text(), "no id");
}

/// `each_message` gives, one at a time, exactly what `messages` gives (the latest
/// compaction's items first, read from their line before the pass: a first-kept
/// compaction whose kept messages come before it in the file, and replacement
/// messages after older compactions), with and without history.
#[test]
fn each_message_streams_what_messages_gives() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let (a, _) = create_simple(&store, "/p", "first question");
    let ids = append(
        &store,
        &a,
        &[
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a"}}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"x"}]}"#,
        ],
    );
    append(
        &store,
        &a,
        &[&format!(
            r#"{{"type":"compaction","summary":"listed files","first-kept-entry-id":"{}"}}"#,
            ids[1]
        )],
    );
    append(&store, &a, &[r#"{"role":"user","content":"and now?"}"#]);
    let (b, _) = create_simple(&store, "/q", "one");
    append(
        &store,
        &b,
        &[
            r#"{"type":"compaction","summary":"old","first-kept-entry-id":null}"#,
            r#"{"role":"assistant","content":"two"}"#,
            r#"{"type":"compaction","summary":"new","messages":[{"role":"user","content":"carried over"},{"role":"assistant","content":[{"type":"text","text":"kept"}]}]}"#,
            r#"{"role":"user","content":"three"}"#,
        ],
    );
    let source = FenSource::new(store.clone());
    for s in [&a, &b] {
        for history in [false, true] {
            let whole = source.messages(&s.namespace, &s.dir, history).unwrap();
            let mut each = Vec::new();
            let facts = source
                .each_message(&s.namespace, &s.dir, history, &mut |_, m| each.push(m))
                .unwrap();
            assert_eq!(each, whole.messages, "{} history={history}", s.dir);
            assert_eq!(facts, whole.facts);
        }
    }
    let first = source
        .messages(&a.namespace, &a.dir, false)
        .unwrap()
        .messages;
    assert!(first[0].summary, "the summary first");
    assert!(
        matches!(&first[2].parts[0], Part::ToolCall { name, .. } if name == "Read"),
        "then the kept messages"
    );
    assert!(
        matches!(&first[3].parts[0], Part::ToolResult { name: Some(n), .. } if n == "Read"),
        "a result named after its call, in the conversation"
    );
}
