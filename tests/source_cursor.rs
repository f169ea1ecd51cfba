//! The Cursor agent CLI transcript reader against the public fixtures (read in place)
//! and hand-made files: a transcript names its session and first prompt, is never
//! resumable by itself (Cursor resumes from store.db), and its messages still reach
//! search as history.

use fen_fs::sources::cursor::{CursorReader, complete_from_path, cwd_of_path, decode_slug};
use fen_fs::sources::foreign::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn transcripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/agent-fixtures/cursor/projects/tmp-cursor-fixture/agent-transcripts")
}

fn fixture(n: u32) -> (String, Vec<u8>) {
    let id = format!("c0000000-0000-4000-8000-00000000000{n}");
    let bytes = std::fs::read(transcripts().join(&id).join(format!("{id}.jsonl"))).unwrap();
    (id, bytes)
}

fn read(id: &str, bytes: &[u8]) -> (ForeignSummary, Vec<MessagePieces>, Vec<Value>) {
    let mut r = CursorReader::new(&format!("{id}.jsonl"));
    let tail = feed_all(&mut r, bytes);
    let history = r
        .messages(tail, true)
        .iter()
        .map(|m| {
            assert!(!m.in_conversation);
            serde_json::from_slice(&render_message(&m.pieces, bytes)).unwrap()
        })
        .collect();
    (r.summary(tail), r.conversation(tail), history)
}

#[test]
fn transcripts_name_their_session_and_are_not_resumable_alone() {
    for n in 1..=5 {
        let (id, bytes) = fixture(n);
        let (s, conv, _) = read(&id, &bytes);
        assert_eq!(s.id, id);
        assert!(!s.resumable && !s.listed && conv.is_empty(), "{id}");
        assert!(
            s.not_resumable_reason
                .as_deref()
                .unwrap()
                .contains("store.db")
        );
        assert_eq!(s.created_at, None, "no times in the file");
        assert_eq!(s.malformed_lines, 0, "{id}");
    }
    let (id, bytes) = fixture(5);
    let (s, _, history) = read(&id, &bytes);
    assert_eq!(
        s.preview.as_deref(),
        Some("run ls command"),
        "<user_query> unwrapped"
    );
    assert_eq!(history.len(), 6);
    assert_eq!(
        history[0],
        json!({"role":"user","content":[{"type":"text","text":"<user_query>\nrun ls command\n</user_query>"}]})
    );
    // turn_ended lines are entries, not messages.
    let (id, bytes) = fixture(1);
    let (s, _, history) = read(&id, &bytes);
    assert_eq!((s.entries, history.len()), (5, 4));
    assert_eq!(s.preview.as_deref(), Some("List the files."));
    // The first prompt is typed text, never a tool result.
    let (id, bytes) = fixture(2);
    let (s, _, _) = read(&id, &bytes);
    assert_eq!(s.preview.as_deref(), Some("What files are here?"));
}

#[test]
fn damaged_lines_are_counted_and_skipped() {
    let bytes = b"{\"role\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\nnot json\n{\"role\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n{\"role\":\"assi";
    let (s, _, history) = read("x", bytes);
    assert_eq!((s.entries, s.malformed_lines), (2, 2));
    assert_eq!(history.len(), 2);
    // A complete last line without its newline counts.
    let bytes =
        b"{\"role\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"only\"}]}}";
    let (s, _, history) = read("y", bytes);
    assert_eq!((s.entries, history.len()), (1, 1));
    assert_eq!(s.preview.as_deref(), Some("only"));
}

#[test]
fn the_project_folder_is_decoded_by_probing_the_filesystem() {
    let tmp = tempfile::tempdir().unwrap();
    // A name with `-` in it: only probing tells `a-b` from `a/b`.
    let real = tmp.path().join("work").join("my-proj");
    std::fs::create_dir_all(&real).unwrap();
    let real = std::fs::canonicalize(real).unwrap();
    let slug = real
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .replace('/', "-");
    assert_eq!(decode_slug(&slug).as_deref(), Some(real.as_path()));
    assert_eq!(
        decode_slug(&format!("-{slug}")).as_deref(),
        Some(real.as_path())
    );
    assert_eq!(decode_slug("no-such-folder-anywhere-xyz"), None);

    let file = tmp
        .path()
        .join(".cursor/projects")
        .join(&slug)
        .join("agent-transcripts/abc/abc.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "").unwrap();
    assert_eq!(cwd_of_path(&file).as_deref(), real.to_str());
    let mut s = ForeignSummary::default();
    complete_from_path(&file, &mut s);
    assert_eq!(s.cwd.as_deref(), real.to_str());
    let born = chrono::DateTime::parse_from_rfc3339(s.created_at.as_deref().unwrap()).unwrap();
    let age = chrono::Utc::now().signed_duration_since(born);
    assert!(
        age.num_seconds().abs() < 600,
        "the file's birth time: {born}"
    );
    // The fixture's project folder names nothing that exists here.
    let fixture_file = transcripts().join("c0000000-0000-4000-8000-000000000001/x.jsonl");
    if !Path::new("/tmp/cursor-fixture").exists() {
        assert_eq!(cwd_of_path(&fixture_file), None);
    }
}
