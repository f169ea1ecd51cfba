//! The Kimi CLI reader against a session written from Kimi's public source
//! (tests/fixtures/kimi: `kimi.json`, and one session's `context.jsonl`, `wire.jsonl`
//! and `state.json`), a cut-off and an unknown record, and the usage of its wire.

use fen_fs::sources::foreign::*;
use fen_fs::sources::kimi::{KimiReader, kind::Kimi, to_neutral, usage::KimiUsage};
use fen_fs::sources::kind::AgentKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

const ID: &str = "4f7c2a10-5b3e-4d8a-9c21-6e0f8b7d1a23";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi")
}

fn session_dir() -> PathBuf {
    root()
        .join("sessions/9413e71e4e637bdd9e5dc6443c2d621e")
        .join(ID)
}

fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>, Vec<MessageRef>) {
    let mut r = KimiReader::new(ID);
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, bytes)).unwrap())
        .collect();
    (r.summary(tail), conv, r.messages(tail, true))
}

#[test]
fn a_session_reads_as_kimi_resumes_it() {
    let path = session_dir().join("context.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let (mut s, conv, refs) = read(&bytes);
    Kimi.complete_summary(&root(), &path, &mut s);
    assert_eq!(s.id, ID);
    assert_eq!(
        s.cwd.as_deref(),
        Some("/home/u/kimi-proj"),
        "from kimi.json"
    );
    assert_eq!(s.title.as_deref(), Some("Kimi lists files"), "state.json");
    // Its start from wire.jsonl's first record (context.jsonl has no time).
    assert_eq!(s.created_at.as_deref(), Some("2026-11-18T11:06:40.500Z"));
    assert_eq!(s.preview.as_deref(), Some("list the files in kimi-proj"));
    assert!(s.resumable && s.listed && !s.archived, "{s:?}");
    // The stored system prompt first, then the messages; bookkeeping records not.
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(s.messages, 7);
    assert!(
        conv[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are Kimi")
    );
    assert!(refs[0].injected && !refs[1].injected);
    // Each message is its line as stored.
    let lines: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(conv[2], lines[3]);
    let call = to_neutral(&conv[2]).unwrap();
    let parts = format!("{:?}", call.parts);
    assert!(
        parts.contains("Reasoning") && parts.contains("ToolCall"),
        "{parts}"
    );
    assert!(parts.contains("\"ls\""), "{parts}");
    let result = to_neutral(&conv[3]).unwrap();
    assert!(format!("{:?}", result.parts).contains("README.md"));
    assert_eq!(
        Kimi.resume_command(ID).unwrap().args,
        ["--session".to_string(), ID.to_string()]
    );
}

#[test]
fn a_compacted_context_marks_its_summary() {
    let bytes = concat!(
        "{\"role\": \"_system_prompt\", \"content\": \"sys\"}\n",
        "{\"role\":\"user\",\"content\":\"<system>Previous context has been compacted. Here is the compaction output:</system>\"}\n",
        "{\"role\":\"assistant\",\"content\":\"We listed the files.\"}\n",
        "{\"role\":\"user\",\"content\":\"go on\"}\n",
    );
    let (s, conv, refs) = read(bytes.as_bytes());
    assert!(s.resumable);
    assert_eq!(s.compactions, 1);
    assert_eq!(conv.len(), 4);
    assert!(refs[1].summary && refs[1].injected);
    assert_eq!(s.preview.as_deref(), Some("go on"));
    assert!(to_neutral(&conv[1]).unwrap().injected);
}

#[test]
fn a_cut_off_or_unknown_file_shows_unresumable_with_the_reason() {
    let good = std::fs::read(session_dir().join("context.jsonl")).unwrap();
    // Cut in the middle of its last line.
    let cut = &good[..good.len() - 10];
    let (s, conv, _) = read(cut);
    assert!(!s.resumable);
    assert!(
        s.not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("cut off"),
        "{s:?}"
    );
    assert_eq!(s.malformed_lines, 1);
    assert_eq!(conv.len(), 7, "the whole lines still show");
    // A record of a kind a newer Kimi might write.
    let mut newer = good.clone();
    newer.extend_from_slice(b"{\"role\":\"_branch\",\"id\":3}\n");
    let (s, conv, _) = read(&newer);
    assert!(!s.resumable);
    assert!(
        s.not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("_branch"),
        "{s:?}"
    );
    assert_eq!(conv.len(), 7);
    // Nothing but a system prompt: not listed, nothing to resume.
    let (s, _, _) = read(b"{\"role\": \"_system_prompt\", \"content\": \"sys\"}\n");
    assert!(!s.resumable && !s.listed);
}

#[test]
fn usage_is_each_step_of_its_wire() {
    let files = Kimi.usage_files(&root()).unwrap();
    assert_eq!(files, [session_dir().join("wire.jsonl")]);
    let path = &files[0];
    let facts = fen_fs::usage_record::UnitFacts {
        agent: fen_fs::agent::Agent::Kimi,
        session: None,
        cwd: Kimi.usage_cwd(&root(), path),
        host: None,
    };
    assert_eq!(facts.cwd.as_deref(), Some("/home/u/kimi-proj"));
    let mut u = KimiUsage::new(facts, path);
    let out = fen_fs::usage_record::read_all(&mut u, &std::fs::read(path).unwrap());
    assert_eq!(out.records.len(), 3);
    let r = &out.records[0];
    assert_eq!(&*r.session, ID);
    assert_eq!(r.time_ms, 1_795_000_002_500);
    assert_eq!(r.cwd.as_deref(), Some("/home/u/kimi-proj"));
    let sum = |f: fn(&fen_fs::usage_record::Tokens) -> u64| -> u64 {
        out.records.iter().map(|r| f(&r.tokens)).sum()
    };
    assert_eq!(sum(|t| t.input), 2000 + 100 + 50);
    assert_eq!(sum(|t| t.output), 30 + 12 + 8);
    assert_eq!(sum(|t| t.cache_read), 200 + 2200 + 2300);
    // Each step is counted once, whichever copy of the wire it is read from.
    let keys: std::collections::HashSet<_> = out.records.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 3);
}

/// A session Kimi CLI 1.52.0 wrote here (its Typer CLI, Python 3.13) against a mock
/// model: a `Shell` call, its answer, then `-S ID -p` with a second prompt
/// (tests/fixtures/kimi-run, its system prompt cut short).
#[test]
fn a_recorded_session_reads_as_kimi_resumed_it() {
    const RUN: &str = "e1e7eb4b-8a55-4dbf-a71a-ef2f6fa17dfc";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi-run");
    let dir = root
        .join("sessions/38e8c58db7e65e0e3bf2a500dadd5f08")
        .join(RUN);
    let path = dir.join("context.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let mut r = KimiReader::new(RUN);
    let tail = feed_all(&mut r, &bytes);
    let mut s = r.summary(tail);
    Kimi.complete_summary(&root, &path, &mut s);
    assert!(s.resumable, "{s:?}");
    assert_eq!(s.cwd.as_deref(), Some("/home/u/kimi-run"));
    assert_eq!(s.title.as_deref(), Some("list files please"));
    let conv: Vec<Value> = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    // What Kimi sent on `-S ID` (seen at the mock): the stored system prompt, the
    // messages as stored, then the new prompt, which is stored next.
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(conv[2]["tool_calls"][0]["function"]["name"], "Shell");
    assert_eq!(conv[3]["tool_call_id"], "call_1");
    assert_eq!(conv[5]["content"], "a second question");
    // Usage: each StatusUpdate once, though the mock gave each response one id.
    let wire = dir.join("wire.jsonl");
    let facts = fen_fs::usage_record::UnitFacts {
        agent: fen_fs::agent::Agent::Kimi,
        session: None,
        cwd: Kimi.usage_cwd(&root, &wire),
        host: None,
    };
    let mut u = KimiUsage::new(facts, &wire);
    let out = fen_fs::usage_record::read_all(&mut u, &std::fs::read(&wire).unwrap());
    assert_eq!(out.records.len(), 3);
    let keys: std::collections::HashSet<_> = out.records.iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 3);
    for r in &out.records {
        assert_eq!(&*r.session, RUN);
        assert_eq!(
            (r.tokens.input, r.tokens.cache_read, r.tokens.output),
            (100, 20, 7)
        );
    }
}
