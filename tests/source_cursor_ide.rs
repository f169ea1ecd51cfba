//! Cursor (IDE)'s reader without a mount, on a user folder made with the keys and
//! shapes the public readers of its `state.vscdb` read (`tests/cursor_ide_support`):
//! composers as sessions in the namespace of the workspace that lists them, their
//! bubbles in Cursor's order, an older composer's inline messages, tool calls and
//! thinking as neutral parts, token counts, a change seen, and every database read
//! without touching Cursor's folder.

mod cursor_ide_support;
mod support;

use cursor_ide_support::{CursorIde, EMPTY, NEW, OLD};
use fen_fs::agent::Agent;
use fen_fs::neutral::Part;
use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::registry::kind;
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, read_all};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn units(root: &Path) -> Units {
    kind(Agent::CursorIde).units(root).unwrap()
}

fn show(u: &Units, key: &Path) -> (ForeignSummary, Vec<Value>, Vec<u8>) {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut r = kind(Agent::CursorIde).reader_for("x");
    let tail = feed_all(r.as_mut(), &bytes);
    let conversation = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conversation, bytes)
}

fn db(root: &Path) -> PathBuf {
    root.join("globalStorage/state.vscdb")
}

#[test]
fn composers_are_sessions_in_the_folder_of_the_workspace_listing_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("User");
    let _ide = CursorIde::create(&root);
    assert!(kind(Agent::CursorIde).present(&root));
    let mut listed: Vec<(PathBuf, Option<String>)> = units(&root)
        .list()
        .into_iter()
        .map(|u| (u.key, u.cwd))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            (db(&root).join(OLD), None),
            (db(&root).join(NEW), Some("/home/u/cursor-proj".into())),
        ],
        "a composer never used ({EMPTY}) is no session"
    );
    let u = units(&root);
    let (s, conversation, bytes) = show(&u, &db(&root).join(NEW));
    assert_eq!(s.id, NEW);
    assert_eq!(s.cwd.as_deref(), Some("/home/u/cursor-proj"));
    assert_eq!(s.title.as_deref(), Some("Fix the tokenizer"));
    assert_eq!(
        s.preview.as_deref(),
        Some("Why does the tokenizer split emoji?")
    );
    assert_eq!(s.created_at.as_deref(), Some("2026-10-26T07:33:20.000Z"));
    assert_eq!(s.resume_rules.as_deref(), Some("best effort"));
    assert!(s.resumable);
    // Listed bubbles holding something, in order (an empty one and a draft out).
    assert_eq!(conversation.len(), 3);
    assert_eq!(conversation[0]["bubbleId"], "b1");
    assert!(String::from_utf8_lossy(&bytes).contains("a draft never sent"));
    let n = kind(Agent::CursorIde).to_neutral(&conversation[1]).unwrap();
    assert!(matches!(&n.parts[0], Part::Reasoning { text, .. } if text.contains("grapheme")));
    assert!(matches!(&n.parts[1],
        Part::ToolCall { id, name, input } if id == "toolu_9" && name == "read_file"
            && input["target_file"] == "src/tok.rs"));
    assert!(matches!(&n.parts[2], Part::ToolResult { call_id, .. } if call_id == "toolu_9"));
    assert_eq!(n.model.unwrap().model, "claude-4-sonnet");
}

#[test]
fn an_older_composer_holds_its_messages_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("User");
    let _ide = CursorIde::create(&root);
    let (s, conversation, _) = show(&units(&root), &db(&root).join(OLD));
    assert_eq!(
        s.cwd.as_deref(),
        Some("/home/u/old proj"),
        "from its bubbles' workspaceUris"
    );
    assert_eq!(s.title.as_deref(), Some("Rename the module"));
    let texts: Vec<String> = conversation
        .iter()
        .map(|m| kind(Agent::CursorIde).to_neutral(m).unwrap().plain_text())
        .collect();
    assert_eq!(texts, ["Rename the module", "Renamed to `lexer`."]);
}

#[test]
fn token_counts_are_usage_and_a_new_bubble_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("User");
    let ide = CursorIde::create(&root);
    let u = units(&root);
    let (_, _, bytes) = show(&u, &db(&root).join(NEW));
    let facts = UnitFacts {
        agent: Agent::CursorIde,
        ..UnitFacts::default()
    };
    let mut r = kind(Agent::CursorIde)
        .usage_reader(Path::new("x"), facts)
        .unwrap();
    let out = read_all(r.as_mut(), &bytes);
    assert_eq!(
        out.records.len(),
        2,
        "bubbles counting nothing are no response"
    );
    assert_eq!(
        (out.records[0].tokens.input, out.records[0].tokens.output),
        (1800, 60)
    );
    assert_eq!(
        out.records[1].model.as_deref(),
        Some("claude-4-sonnet"),
        "the composer's model"
    );
    assert_eq!(&*out.records[0].session, NEW);
    assert_eq!(out.records[0].cwd.as_deref(), Some("/home/u/cursor-proj"));

    let before = u.stamp(&db(&root).join(NEW)).unwrap();
    ide.add_bubble("b5", "and for flags?");
    assert_ne!(u.stamp(&db(&root).join(NEW)).unwrap(), before);
    let (_, conversation, _) = show(&u, &db(&root).join(NEW));
    assert_eq!(conversation.last().unwrap()["text"], "and for flags?");
}

#[test]
fn reading_changes_nothing_in_cursors_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("User");
    let ide = CursorIde::create(&root);
    drop(ide);
    let before = support::folder_state(&root);
    let u = units(&root);
    for info in u.list() {
        show(&u, &info.key);
    }
    assert_eq!(support::folder_state(&root), before);
}

#[test]
fn a_damaged_database_shows_as_one_unreadable_session() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("User");
    drop(CursorIde::create(&root));
    let bytes = std::fs::read(db(&root)).unwrap();
    std::fs::write(db(&root), &bytes[..bytes.len() / 2]).unwrap();
    let keys: Vec<PathBuf> = units(&root).list().into_iter().map(|u| u.key).collect();
    assert_eq!(keys, [db(&root).join("unreadable")]);
    let (s, conversation, _) = show(&units(&root), &keys[0]);
    assert!(!s.resumable);
    assert!(conversation.is_empty());
}
