//! `SessionSource::each_message_since`: a session that only grew is read on from
//! the mark of the last reading (only its new messages), and anything else (a new
//! compaction, a rewritten file, an edited earlier message) reads it all again.
//! Search follows growing sessions through it; without it every append to a session
//! of hundreds of MB cost a reading of all of it.

mod core_support;

use core_support::*;
use fen_fs::neutral::{Message, SessionFacts};
use fen_fs::sources::agents::AgentRoot;
use fen_fs::sources::fen::FenSource;
use fen_fs::sources::foreign::Agent;
use fen_fs::sources::foreign_source::ForeignSource;
use fen_fs::sources::{ControlFlow, MessageMark, SessionSource, SinceRead};
use std::io::Write;
use std::sync::Arc;

/// Every message `each_message_since` gives, with its place, and what it said.
fn read(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    since: MessageMark,
) -> (Vec<(u64, String)>, SinceRead) {
    read_stopping(source, ns, dir, since, usize::MAX)
}

/// `read`, asking to stop after the `stop_after`th message given.
fn read_stopping(
    source: &dyn SessionSource,
    ns: &str,
    dir: &str,
    since: MessageMark,
    stop_after: usize,
) -> (Vec<(u64, String)>, SinceRead) {
    let mut got = Vec::new();
    let r = source
        .each_message_since(ns, dir, since, &mut |_: &SessionFacts, at, m: Message| {
            got.push((at, m.plain_text()));
            if got.len() >= stop_after {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    (got, r)
}

/// Asked to stop after any message, a reading stops at its next place to go on
/// from, and goes on from its mark with exactly the messages after those given
/// (background work saved as far as it got).
fn stops_anywhere_and_goes_on(source: &dyn SessionSource, ns: &str, dir: &str) {
    let all = whole(source, ns, dir);
    assert!(all.len() >= 3, "{all:?}");
    for k in 1..=all.len() {
        let (head, r) = read_stopping(source, ns, dir, MessageMark::default(), k);
        assert!(head.len() >= k, "stopped after {k}: {head:?}");
        assert_eq!(head, all[..head.len()], "stopped after {k}");
        assert_eq!(r.stopped, head.len() < all.len(), "stopped after {k}");
        let (rest, r2) = read(source, ns, dir, r.mark);
        assert!(r2.resumed || !r.stopped, "went on after {k}");
        assert!(!r2.stopped);
        let mut joined = head.clone();
        joined.extend(rest);
        assert_eq!(joined, all, "stopped after {k}, then went on");
    }
}

/// The places and texts of the whole history, as `each_message` gives it.
fn whole(source: &dyn SessionSource, ns: &str, dir: &str) -> Vec<(u64, String)> {
    let mut all = Vec::new();
    source
        .each_message(ns, dir, true, &mut |_, m| {
            all.push((all.len() as u64, m.plain_text()))
        })
        .unwrap();
    all
}

#[test]
fn a_fen_session_is_read_on_from_the_mark_until_a_compaction() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let (s, _) = create_simple(&store, "/p", "first question");
    append(
        &store,
        &s,
        &[r#"{"role":"assistant","content":"an answer"}"#],
    );
    let source = FenSource::new(store.clone());
    let (ns, dir) = (s.namespace.as_str(), s.dir.as_str());

    let (first, r1) = read(&source, ns, dir, MessageMark::default());
    assert!(!r1.resumed);
    assert_eq!(first, whole(&source, ns, dir));
    assert_eq!(first.len(), 2);

    // Grown by one message: only it, at its place among all.
    append(&store, &s, &[r#"{"role":"user","content":"a follow-up"}"#]);
    let (next, r2) = read(&source, ns, dir, r1.mark);
    assert!(r2.resumed);
    assert_eq!(next, vec![(2, "a follow-up".to_string())]);
    assert_eq!(whole(&source, ns, dir)[2], next[0]);

    // Grown by a line that is no message: nothing, still from the mark.
    append(&store, &s, &[r#"{"type":"title","title":"Named"}"#]);
    let (none, r3) = read(&source, ns, dir, r2.mark);
    assert!(r3.resumed);
    assert!(none.is_empty());

    // A compaction takes earlier messages out of the conversation: all again.
    append(
        &store,
        &s,
        &[
            r#"{"type":"compaction","summary":"so far","messages":[{"role":"user","content":"recap"}]}"#,
        ],
    );
    let (again, r4) = read(&source, ns, dir, r3.mark);
    assert!(!r4.resumed);
    assert_eq!(again, whole(&source, ns, dir));

    // A mark of another session's file is not taken.
    let (s2, _) = create_simple(&store, "/p", "other");
    let (other, r5) = read(&source, &s2.namespace, &s2.dir, r4.mark);
    assert!(!r5.resumed);
    assert_eq!(other.len(), 1);

    // Stopped anywhere (a compaction's items come from one line: it stops after
    // them), it goes on from its mark.
    append(
        &store,
        &s2,
        &[
            r#"{"role":"assistant","content":"two"}"#,
            r#"{"type":"compaction","summary":"s","messages":[{"role":"user","content":"r1"},{"role":"user","content":"r2"}]}"#,
            r#"{"role":"user","content":"three"}"#,
            r#"{"role":"assistant","content":"four"}"#,
        ],
    );
    let all = whole(&source, &s2.namespace, &s2.dir);
    let (head, r6) = read_stopping(&source, &s2.namespace, &s2.dir, MessageMark::default(), 3);
    assert_eq!(
        head.len(),
        4,
        "the compaction's second item comes with its first"
    );
    assert!(r6.stopped);
    let (rest, _) = read(&source, &s2.namespace, &s2.dir, r6.mark);
    assert_eq!(rest, all[4..]);
    let (ns2, dir2) = (s2.namespace.clone(), s2.dir.clone());
    append(&store, &s2, &[r#"{"role":"user","content":"five"}"#]);
    stops_anywhere_and_goes_on(&source, &ns2, &dir2);
}

const ID: &str = "11111111-1111-4111-8111-111111111111";

fn claude_line(uuid: &str, parent: Option<&str>, text: &str) -> String {
    serde_json::json!({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": ID, "cwd": "/w",
        "timestamp": "2025-07-01T10:00:00.000Z", "message": {"role": "user", "content": text}
    })
    .to_string()
        + "\n"
}

#[test]
fn another_agents_file_is_read_on_from_the_mark_only_while_it_only_grows() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let project = root.join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::write(
        &file,
        claude_line("a", None, "one") + &claude_line("b", Some("a"), "two"),
    )
    .unwrap();
    let fen = tmp.path().join("fen");
    std::fs::create_dir(&fen).unwrap();
    let source = ForeignSource::new(
        &AgentRoot {
            agent: Agent::Claude,
            root: root.clone(),
        },
        Some(&fen),
    );
    source.build_index();
    let ns = "--w--";
    let dir = source.session_dirs(ns).unwrap().remove(0);

    let (first, r1) = read(&source, ns, &dir, MessageMark::default());
    assert!(!r1.resumed);
    assert_eq!(first, whole(&source, ns, &dir));
    assert_eq!(first.len(), 2);

    // The agent appends: only the new message.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(claude_line("c", Some("b"), "three").as_bytes())
        .unwrap();
    drop(f);
    let (next, r2) = read(&source, ns, &dir, r1.mark);
    assert!(r2.resumed);
    assert_eq!(next, vec![(2, "three".to_string())]);
    assert_eq!(whole(&source, ns, &dir)[2], next[0]);

    // A branch from an earlier message: the old tail leaves the conversation, so
    // the earlier messages' flags changed: all again.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(claude_line("d", Some("a"), "another way").as_bytes())
        .unwrap();
    drop(f);
    let (branch, r3) = read(&source, ns, &dir, r2.mark);
    assert!(!r3.resumed);
    assert_eq!(branch, whole(&source, ns, &dir));

    // The file rewritten (a new file in its place, maybe on the same inode: an
    // earlier message edited to the same length, and one more): all again.
    let bytes = String::from_utf8(std::fs::read(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::fs::write(
        &file,
        bytes.replace("\"one\"", "\"ONE\"") + &claude_line("e", Some("d"), "five"),
    )
    .unwrap();
    let (rewritten, r4) = read(&source, ns, &dir, r3.mark);
    assert!(!r4.resumed);
    assert_eq!(rewritten, whole(&source, ns, &dir));
    assert_eq!(rewritten[0], (0, "ONE".to_string()));

    stops_anywhere_and_goes_on(&source, ns, &dir);
}
