//! VS Code Copilot Chat's reader without a mount, on a VS Code user folder written
//! from VS Code's and Copilot Chat's source (`tests/fixtures/vscode-copilot/`): session
//! documents and operation logs as turns in the namespace of their workspace's
//! folder, the log replayed as VS Code reads it and followed reading only what was
//! appended, Copilot's tool call rounds as neutral messages, its token counts, and
//! nothing in VS Code's folder touched.

mod support;

use fen_fs::agent::Agent;
use fen_fs::neutral::Part;
use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::registry::kind;
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, read_all};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

const WS: &str = "workspaceStorage/5f1e0c2d9a7b3e4f/chatSessions";
const DOC: &str = "8d9f2c1e-4b7a-4e21-9c3d-0a1b2c3d4e5f";
const LOG: &str = "3a4b5c6d-7e8f-4a0b-8c1d-2e3f4a5b6c7d";

fn user_dir(tmp: &Path) -> PathBuf {
    let to = tmp.join("User");
    copy_dir(Path::new("tests/fixtures/vscode-copilot/User"), &to);
    to
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

fn units(root: &Path) -> Units {
    kind(Agent::VscodeCopilot).units(root).unwrap()
}

fn show(u: &Units, key: &Path) -> (ForeignSummary, Vec<Value>, Vec<u8>) {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut r = kind(Agent::VscodeCopilot).reader_for("x");
    let tail = feed_all(r.as_mut(), &bytes);
    let conversation = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conversation, bytes)
}

fn texts(conversation: &[Value]) -> Vec<String> {
    conversation
        .iter()
        .map(|m| {
            let n = kind(Agent::VscodeCopilot).to_neutral(m).unwrap();
            format!("{}: {}", m["role"].as_str().unwrap(), n.plain_text())
        })
        .collect()
}

#[test]
fn sessions_are_listed_in_their_workspaces_folder_and_empty_windows_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = user_dir(tmp.path());
    assert!(kind(Agent::VscodeCopilot).present(&root));
    let mut listed: Vec<(PathBuf, Option<String>)> = units(&root)
        .list()
        .into_iter()
        .map(|u| (u.key, u.cwd))
        .collect();
    listed.sort();
    let proj = Some("/home/u/vs proj".to_string());
    assert_eq!(
        listed,
        [
            (
                root.join("globalStorage/emptyWindowChatSessions/e1e2e3e4-0000-4000-8000-000000000001.json"),
                None
            ),
            (root.join(WS).join(format!("{LOG}.jsonl")), proj.clone()),
            (root.join(WS).join(format!("{DOC}.json")), proj),
        ]
    );
}

#[test]
fn a_session_document_is_its_turns_with_copilots_tool_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let root = user_dir(tmp.path());
    let (s, conversation, _) = show(&units(&root), &root.join(WS).join(format!("{DOC}.json")));
    assert_eq!(s.id, DOC);
    assert_eq!(s.cwd.as_deref(), Some("/home/u/vs proj"));
    assert_eq!(s.title.as_deref(), Some("Parser questions"));
    assert_eq!(s.preview.as_deref(), Some("What does parse() return?"));
    assert!(s.resumable);
    assert_eq!(s.resume_rules.as_deref(), Some("best effort"));
    assert_eq!(s.created_at.as_deref(), Some("2026-10-14T17:46:30.000Z"));
    assert_eq!(conversation.len(), 4);
    // The stored fields kept as stored.
    assert_eq!(conversation[0]["message"]["parts"][0]["kind"], "text");
    assert_eq!(conversation[1]["result"]["metadata"]["promptTokens"], 5200);
    let t = texts(&conversation);
    assert_eq!(t[0], "user: What does parse() return?");
    assert!(t[1].contains("Result<Ast, Error>"), "{t:?}");
    let agent = kind(Agent::VscodeCopilot)
        .to_neutral(&conversation[3])
        .unwrap();
    assert_eq!(agent.model.as_ref().unwrap().model, "claude-sonnet-4.5");
    assert!(matches!(&agent.parts[0], Part::Text { text } if text == "I'll run them."));
    assert!(matches!(&agent.parts[1],
        Part::ToolCall { id, name, input } if id == "tc-1" && name == "run_in_terminal"
            && input["command"] == "cargo test"));
    assert!(matches!(&agent.parts[2], Part::ToolResult { call_id, .. } if call_id == "tc-1"));
    assert!(agent.plain_text().contains("12 passed"));
}

#[test]
fn an_operation_log_is_replayed_and_followed_reading_only_what_was_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let root = user_dir(tmp.path());
    let log = root.join(WS).join(format!("{LOG}.jsonl"));
    // A first entry larger than what the reader keeps to prove the file (4 KiB).
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["v"]["inputState"]["inputText"] = json!("x".repeat(10_000));
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, body).unwrap();
    let u = units(&root);
    let (s, conversation, _) = show(&u, &log);
    assert_eq!(s.id, LOG);
    assert_eq!(s.title.as_deref(), Some("Cache explained"));
    assert!(s.resumable, "{:?}", s.not_resumable_reason);
    assert_eq!(
        texts(&conversation),
        [
            "user: Explain the cache",
            "assistant: The cache keeps the last 32 dumps."
        ]
    );
    // Damage the first entry in place (same file, same size): a fresh replay would
    // fail on it; following the log reads only the appended entry.
    let mut bytes = std::fs::read(&log).unwrap();
    let at = bytes.iter().position(|&b| b == b'x').unwrap();
    bytes[at] = b'"';
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        f.write_all_at(&bytes[at..at + 1], at as u64).unwrap();
    }
    let push = json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "request_bb",
        "timestamp": 1792000110000_i64, "message": {"text": "And the index?", "parts": []},
        "response": [], "modelState": {"value": 0}}]});
    writeln!(
        std::fs::OpenOptions::new().append(true).open(&log).unwrap(),
        "{push}"
    )
    .unwrap();
    let (s, conversation, _) = show(&u, &log);
    assert!(s.resumable, "{:?}", s.not_resumable_reason);
    assert_eq!(texts(&conversation).last().unwrap(), "user: And the index?");
    // Read afresh (a new reader of the folder), the damaged entry stops VS Code's load.
    let (s, conversation, _) = show(&units(&root), &log);
    assert!(!s.resumable);
    assert!(s.not_resumable_reason.unwrap().contains("entry 1"));
    assert!(conversation.is_empty());
}

#[test]
fn usage_is_each_answered_requests_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let root = user_dir(tmp.path());
    let u = units(&root);
    let (_, _, bytes) = show(&u, &root.join(WS).join(format!("{DOC}.json")));
    let facts = UnitFacts {
        agent: Agent::VscodeCopilot,
        ..UnitFacts::default()
    };
    let mut r = kind(Agent::VscodeCopilot)
        .usage_reader(Path::new("x"), facts)
        .unwrap();
    let out = read_all(r.as_mut(), &bytes);
    assert_eq!(out.records.len(), 2);
    assert_eq!(
        (out.records[0].tokens.input, out.records[0].tokens.output),
        (5200, 40)
    );
    assert_eq!(out.records[1].model.as_deref(), Some("claude-sonnet-4.5"));
    assert_eq!(&*out.records[0].session, DOC);
    assert_eq!(out.records[0].cwd.as_deref(), Some("/home/u/vs proj"));
    assert_eq!(out.records[0].recorded_cost, None);
}

#[test]
fn reading_changes_nothing_in_vs_codes_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = user_dir(tmp.path());
    let before = support::folder_state(&root);
    let u = units(&root);
    for info in u.list() {
        show(&u, &info.key);
    }
    assert_eq!(support::folder_state(&root), before);
}
