//! Roo Code's reader (Cline's, over Roo's names) without a mount, on a global storage
//! folder written from Roo Code's source (`tests/fixtures/roo/README.md`): its tasks
//! as sessions, `getEffectiveApiHistory` (a condensed task resumes from its summary,
//! a tool result whose call was condensed away dropped), a subtask linked to its
//! parent, its usage, and nothing in its folder touched.

mod support;

use fen_fs::agent::Agent;
use fen_fs::neutral::Part;
use fen_fs::sources::foreign::{feed_all, render_message};
use fen_fs::sources::registry::kind;
use fen_fs::usage_record::{UnitFacts, read_all};
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/roo";

fn show(
    root: &Path,
    id: &str,
) -> (
    fen_fs::sources::foreign::ForeignSummary,
    Vec<Value>,
    Vec<u8>,
) {
    use std::os::unix::fs::FileExt;
    let u = kind(Agent::Roo).units(root).unwrap();
    let key = root.join("tasks").join(id);
    let (file, stamp) = u.open(&key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut r = kind(Agent::Roo).reader_for(id);
    let tail = feed_all(r.as_mut(), &bytes);
    let conversation = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conversation, bytes)
}

fn outline(conversation: &[Value]) -> Vec<String> {
    conversation
        .iter()
        .map(|m| {
            let n = kind(Agent::Roo).to_neutral(m).unwrap();
            let parts: Vec<String> = n
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => text.clone(),
                    Part::ToolCall { id, .. } => format!("[call {id}]"),
                    Part::ToolResult { call_id, .. } => format!("[result {call_id}]"),
                    other => format!("{other:?}"),
                })
                .collect();
            format!("{}: {}", m["role"].as_str().unwrap(), parts.join(" "))
        })
        .collect()
}

#[test]
fn roo_tasks_are_sessions_and_a_subtask_names_its_parent() {
    let root = Path::new(FIXTURE).canonicalize().unwrap();
    assert!(kind(Agent::Roo).present(&root));
    let mut keys: Vec<PathBuf> = kind(Agent::Roo)
        .units(&root)
        .unwrap()
        .list()
        .into_iter()
        .map(|u| u.key)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [root.join("tasks/r-child"), root.join("tasks/r-parent")],
        "tasks/_index.json is not a task"
    );
    let (parent, ..) = show(&root, "r-parent");
    assert_eq!(parent.id, "r-parent");
    assert_eq!(parent.cwd.as_deref(), Some("/home/u/roo-proj"));
    assert_eq!(parent.title.as_deref(), Some("Refactor the parser"));
    assert!(parent.listed && parent.parent_id.is_none());
    let (child, conversation, _) = show(&root, "r-child");
    assert_eq!(child.parent_id.as_deref(), Some("r-parent"));
    assert!(!child.listed, "a subtask is listed under its parent");
    assert_eq!(
        outline(&conversation),
        ["user: Write tests", "assistant: Tests written."]
    );
}

#[test]
fn a_condensed_task_resumes_from_its_summary_as_roo_does() {
    let root = Path::new(FIXTURE).canonicalize().unwrap();
    let (s, conversation, bytes) = show(&root, "r-parent");
    assert!(s.resumable, "{:?}", s.not_resumable_reason);
    assert_eq!(s.compactions, 1);
    assert_eq!(
        outline(&conversation),
        [
            "user: ## Conversation Summary\nThe user asked to refactor the parser; a.ts was read.",
            "user: continue",
            "assistant: Delegating the tests. [call tu_2]"
        ]
    );
    // The orphaned result left out of the message; the message's other keys kept.
    assert_eq!(conversation[1]["content"].as_array().unwrap().len(), 1);
    assert_eq!(conversation[1]["ts"], 1791000003000_i64);
    assert!(
        kind(Agent::Roo)
            .to_neutral(&conversation[0])
            .unwrap()
            .summary
    );
    assert!(String::from_utf8_lossy(&bytes).contains("late result"));
}

#[test]
fn roo_usage_is_each_requests_counts_once() {
    let root = Path::new(FIXTURE).canonicalize().unwrap();
    let (_, _, bytes) = show(&root, "r-parent");
    let facts = UnitFacts {
        agent: Agent::Roo,
        ..UnitFacts::default()
    };
    let mut r = kind(Agent::Roo)
        .usage_reader(Path::new("r-parent"), facts)
        .unwrap();
    let out = read_all(r.as_mut(), &bytes);
    assert_eq!(out.records.len(), 2);
    assert_eq!(out.records[0].tokens.input, 200);
    assert_eq!(out.records[1].tokens.cache_read, 100);
    assert_eq!(out.records[0].recorded_cost, Some(0.015));
    assert_eq!(&*out.records[0].session, "r-parent");
    assert_eq!(out.records[0].cwd.as_deref(), Some("/home/u/roo-proj"));
}

#[test]
fn reading_changes_nothing_in_roos_folder() {
    let root = Path::new(FIXTURE).canonicalize().unwrap();
    let before = support::folder_state(&root);
    for id in ["r-parent", "r-child"] {
        show(&root, id);
    }
    assert_eq!(support::folder_state(&root), before);
}
