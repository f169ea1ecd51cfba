//! Cline's reader without a mount: sessions Cline 3.0.65 wrote (with a compaction it
//! made and resumed from) and task folders of Cline before 3.x written from its
//! source (`tests/fixtures/cline/README.md`), read as units each rule in turn: the
//! compaction applied only while its recorded hash holds, the classic truncation,
//! the wrappers Cline adds to prompts, the usage it records, a file caught half
//! written, and nothing in Cline's folder touched.

mod support;

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role};
use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::registry::kind;
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, read_all};
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/cline/data";
const ONE: &str = "1795792346740_4u564";
const COMPACTED: &str = "1795792383814_xzqel";
const TASK: &str = "1790000000000";
const TRUNCATED: &str = "1790000100000";

/// A copy of the fixture's data folder (tests change it).
fn data(tmp: &Path) -> PathBuf {
    let to = tmp.join("data");
    copy_dir(Path::new(FIXTURE), &to);
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
    kind(Agent::Cline)
        .units(root)
        .expect("Cline's sessions are units")
}

struct Shown {
    bytes: Vec<u8>,
    summary: ForeignSummary,
    conversation: Vec<Value>,
}

fn show(u: &Units, key: &Path) -> Shown {
    use std::os::unix::fs::FileExt;
    let (file, stamp) = u.open(key).unwrap();
    let mut bytes = vec![0; stamp.size as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let mut reader = kind(Agent::Cline).reader_for(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(reader.as_mut(), &bytes);
    assert!(tail.is_empty(), "a dump is whole lines");
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).expect("one JSON object"))
        .collect();
    Shown {
        summary: reader.summary(tail),
        conversation,
        bytes,
    }
}

/// Each message as `role: text`, tool calls and results by id.
fn outline(conversation: &[Value]) -> Vec<String> {
    conversation
        .iter()
        .map(|m| {
            let n = kind(Agent::Cline).to_neutral(m).unwrap();
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
fn sessions_and_task_folders_are_listed_by_their_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    assert!(kind(Agent::Cline).present(&root));
    let mut keys: Vec<PathBuf> = units(&root).list().into_iter().map(|u| u.key).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            root.join("sessions").join(ONE),
            root.join("sessions").join(COMPACTED),
            root.join("tasks").join(TASK),
            root.join("tasks").join(TRUNCATED),
        ]
    );
}

#[test]
fn a_3x_session_resumes_with_its_stored_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let s = show(&units(&root), &root.join("sessions").join(ONE));
    assert_eq!(s.summary.id, ONE);
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(s.summary.title.as_deref(), Some("first prompt"));
    assert_eq!(s.summary.preview.as_deref(), Some("first prompt"));
    assert!(s.summary.resumable, "{:?}", s.summary.not_resumable_reason);
    assert_eq!(
        s.summary.created_at.as_deref(),
        Some("2026-11-27T15:12:26.744Z")
    );
    // Stored as Cline stores it (the prompt wrapped), read as Cline shows it.
    assert_eq!(
        s.conversation[0]["content"][0]["text"],
        "<user_input mode=\"act\">first prompt</user_input>"
    );
    assert_eq!(
        outline(&s.conversation),
        ["user: first prompt", "assistant: Mock reply"]
    );
    let n = kind(Agent::Cline).to_neutral(&s.conversation[1]).unwrap();
    assert_eq!(n.role, Role::Assistant);
    assert_eq!(n.model.unwrap().model, "mock-model");
    assert!(n.timestamp.is_some());
}

#[test]
fn a_compaction_applies_while_its_recorded_hash_of_the_history_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let key = root.join("sessions").join(COMPACTED);
    let s = show(&units(&root), &key);
    assert!(s.summary.resumable, "{:?}", s.summary.not_resumable_reason);
    assert_eq!(s.summary.compactions, 1);
    // What Cline 3.0.65 sent when this session was resumed after `/compact` (a fresh
    // process): the compaction's six messages, then the six stored after its cut.
    let got = outline(&s.conversation);
    assert_eq!(got.len(), 12, "{got:#?}");
    assert!(got[0].starts_with("user: Context summary:"), "{got:#?}");
    assert_eq!(got[1], "assistant: [call call_mock_1]");
    assert_eq!(got[2], "user: [result call_mock_1]");
    assert_eq!(
        got[4..]
            .iter()
            .filter(|m| m.starts_with("user:"))
            .cloned()
            .collect::<Vec<_>>(),
        ["user: third", "user: fourth", "user: fifth", "user: sixth"]
    );
    let summary = kind(Agent::Cline).to_neutral(&s.conversation[0]).unwrap();
    assert!(summary.summary);

    // The history changed under the compaction (another first prompt): Cline no
    // longer projects it, and resumes with every stored message.
    let file = key.join(format!("{COMPACTED}.messages.json"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen("RUNTOOL second", "RUNTOOL changed", 1)).unwrap();
    let s = show(&units(&root), &key);
    let got = outline(&s.conversation);
    assert_eq!(got.len(), 12);
    assert_eq!(got[0], "user: RUNTOOL changed");
    assert!(!got.iter().any(|m| m.contains("Context summary")));
}

#[test]
fn a_classic_task_resumes_with_its_api_history_truncated_as_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let u = units(&root);
    let s = show(&u, &root.join("tasks").join(TASK));
    assert_eq!(s.summary.id, TASK);
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/legacy"));
    assert_eq!(s.summary.title.as_deref(), Some("List the files"));
    assert_eq!(
        s.summary.created_at.as_deref(),
        Some("2026-09-21T14:13:20.000Z")
    );
    assert!(s.summary.resumable);
    // The <task> wrapper and the environment details are not what anyone wrote.
    assert_eq!(
        outline(&s.conversation),
        [
            "user: List the files",
            "assistant: I will list them. [call toolu_01]",
            "user: [result toolu_01]",
            "assistant: There is one file, a.txt."
        ]
    );
    // Truncated [2, 3]: the first pair, then from message 4 on, the results of calls
    // cut away dropped from the first message after the cut.
    let t = show(&u, &root.join("tasks").join(TRUNCATED));
    assert_eq!(
        outline(&t.conversation),
        [
            "user: A long one",
            "assistant: [call toolu_a]",
            "user: <feedback>\nnow c\n</feedback>",
            "assistant: Done with c."
        ]
    );
    assert_eq!(t.conversation[2]["content"].as_array().unwrap().len(), 1);
    assert!(
        String::from_utf8_lossy(&t.bytes).contains("toolu_b"),
        "the dump keeps all"
    );
}

#[test]
fn usage_counts_each_response_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let u = units(&root);
    let read = |id: &str, folder: &str| {
        let s = show(&u, &root.join(folder).join(id));
        let facts = UnitFacts {
            agent: Agent::Cline,
            ..UnitFacts::default()
        };
        let mut r = kind(Agent::Cline)
            .usage_reader(Path::new(id), facts)
            .unwrap();
        read_all(r.as_mut(), &s.bytes)
    };
    // 3.x: the six answers of messages.json (the compaction's copies not again).
    let out = read(COMPACTED, "sessions");
    assert_eq!(out.malformed, 0, "{:?}", out.first_malformed);
    assert_eq!(out.records.len(), 6);
    for r in &out.records {
        assert_eq!((r.tokens.input, r.tokens.output), (10, 5));
        assert_eq!(r.model.as_deref(), Some("mock-model"));
        assert_eq!(&*r.session, COMPACTED);
        assert_eq!(r.cwd.as_deref(), Some("/home/u/proj"));
    }
    let keys: std::collections::HashSet<_> = out.records.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 6);
    // Task folders: each finished request's counts and cost (a request without counts
    // is not one).
    let out = read(TASK, "tasks");
    assert_eq!(out.records.len(), 2);
    assert_eq!(out.records[0].tokens.input, 1200);
    assert_eq!(out.records[0].tokens.cache_write_5m, 1000);
    assert_eq!(out.records[1].tokens.cache_read, 1000);
    assert_eq!(out.records[0].recorded_cost, Some(0.0123));
    assert_eq!(&*out.records[0].session, TASK);
    assert_eq!(out.records[0].cwd.as_deref(), Some("/home/u/legacy"));
    assert!(read(TRUNCATED, "tasks").records.is_empty());
}

#[test]
fn a_file_being_rewritten_shows_the_session_not_resumable_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let key = root.join("sessions").join(ONE);
    let file = key.join(format!("{ONE}.messages.json"));
    let text = std::fs::read(&file).unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let s = show(&units(&root), &key);
    assert_eq!(s.summary.id, ONE);
    assert_eq!(s.summary.cwd.as_deref(), Some("/home/u/proj"));
    assert!(!s.summary.resumable);
    let why = s.summary.not_resumable_reason.unwrap();
    assert!(why.contains("Cline may be rewriting it"), "{why}");
    assert!(s.conversation.is_empty());
    // Whole again: read again (its stamp changed).
    std::fs::write(&file, &text).unwrap();
    assert!(show(&units(&root), &key).summary.resumable);
}

#[test]
fn reading_changes_nothing_in_clines_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let before = support::folder_state(&root);
    let u = units(&root);
    for info in u.list() {
        show(&u, &info.key);
    }
    assert_eq!(support::folder_state(&root), before);
}

/// A rewrite an agent made before a read began is in that read, even while another
/// thread (the keeper's sweep, a root listing) is bringing the same source up to
/// date: a caller that finds the change already taken by another waits for that one
/// to finish instead of serving the index as it was.
#[test]
fn a_rewrite_shows_on_the_next_read_while_another_thread_syncs() {
    use fen_fs::sources::SessionSource;
    use fen_fs::sources::agents::AgentRoot;
    use fen_fs::sources::foreign_source::ForeignSource;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let root = data(tmp.path());
    let fen = tmp.path().join("fen");
    std::fs::create_dir(&fen).unwrap();
    let source = Arc::new(ForeignSource::watching(
        &AgentRoot {
            agent: Agent::Cline,
            root: root.clone(),
        },
        Some(&fen),
    ));
    source.build_index();
    let ns = source
        .namespaces()
        .unwrap()
        .into_iter()
        .find(|ns| {
            source
                .session_dirs(ns)
                .unwrap()
                .iter()
                .any(|d| d.ends_with(COMPACTED))
        })
        .expect("the compacted session's namespace");
    let listed = |source: &ForeignSource| -> u64 {
        let index = source.index(&ns).unwrap();
        let list: Value = serde_json::from_slice(&index.index_json).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == COMPACTED)
            .expect("listed")["messages"]
            .as_u64()
            .unwrap()
    };
    let messages = listed(&source);
    let stop = Arc::new(AtomicBool::new(false));
    let sweeper = {
        let (source, stop) = (source.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                source.namespaces().unwrap();
            }
        })
    };
    let file = root
        .join("sessions")
        .join(COMPACTED)
        .join(format!("{COMPACTED}.messages.json"));
    let mut failed = None;
    for round in 0..300u64 {
        support::cline_rewrite_with_prompt(&file, round, &format!("rewritten {round}"));
        let seen = listed(&source);
        if seen != messages + round + 1 {
            failed = Some((round, seen));
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    sweeper.join().unwrap();
    assert_eq!(
        failed, None,
        "(round, messages listed): a rewrite was missing from the read right after it"
    );
}
