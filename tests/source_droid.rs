//! The Factory Droid reader against sessions Droid 0.225.2 wrote
//! (tests/fixtures/droid: a prompt with an `LS` tool call, and a `--fork` of it), and
//! the usage of their settings files.

use fen_fs::sources::droid::{DroidReader, to_neutral, usage::DroidUsage};
use fen_fs::sources::foreign::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const ORIGINAL: &str = "f8f78dfb-c9d2-43ac-953c-1f1134fc376d";
const FORK: &str = "e1af1106-9446-4820-8cd9-7da8ecbd60cb";

fn file(id: &str, ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/droid/sessions/-tmp-d-proj")
        .join(format!("{id}.{ext}"))
}

fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>, Vec<MessageRef>) {
    let mut r = DroidReader::new();
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, bytes)).unwrap())
        .collect();
    (r.summary(tail), conv, r.messages(tail, true))
}

#[test]
fn recorded_sessions_read_as_droid_forks_them() {
    let bytes = std::fs::read(file(ORIGINAL, "jsonl")).unwrap();
    let (s, conv, refs) = read(&bytes);
    assert_eq!(s.id, ORIGINAL);
    assert_eq!(s.cwd.as_deref(), Some("/tmp/d/proj"));
    assert_eq!(s.title.as_deref(), Some("first prompt USE_LS"));
    assert_eq!(s.preview.as_deref(), Some("first prompt USE_LS"));
    assert!(s.resumable && s.listed);
    assert_eq!(s.resume_rules.as_deref(), Some("best effort"));
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "user", "assistant", "user", "assistant"]);
    assert!(refs[0].injected, "Droid's context message");
    let call = to_neutral(&conv[2]).unwrap();
    assert!(format!("{:?}", call.parts).contains("ToolCall"));
    let fork = std::fs::read(file(FORK, "jsonl")).unwrap();
    let (f, fconv, _) = read(&fork);
    assert_eq!(f.id, FORK);
    assert_eq!(
        &fconv[..conv.len()],
        &conv[..],
        "a fork copies the messages"
    );
    assert_eq!(fconv.last().unwrap()["content"][0]["text"], "reply 4");
}

#[test]
fn usage_is_each_sessions_own_total() {
    let mut total = 0;
    for id in [ORIGINAL, FORK] {
        let path = file(id, "jsonl");
        let mut u = DroidUsage::new(Default::default(), &path);
        let out = fen_fs::usage_record::read_all(&mut u, &std::fs::read(&path).unwrap());
        assert_eq!(out.records.len(), 1);
        let r = &out.records[0];
        assert_eq!(&*r.session, id);
        assert_eq!(r.model.as_deref(), Some("custom:Mock-0"));
        total += r.tokens.input;
    }
    // The original's two calls (prompts of 102 and 103 tokens, 3 of each cached) and
    // the fork's own one (104, 3 cached): the fork does not count the original's.
    assert_eq!(total, 199 + 101);
}
