//! A reader's saved state (`ForeignReader::save_state`) taken back by a fresh reader
//! goes on exactly as the reader that never stopped: same summary, conversation and
//! messages, whatever line the file was cut at. Over the public fixtures of every
//! agent and hand-made pi files (pi's own are made by its package in source_pi).

use fen_fs::sources::agents::reader_for;
use fen_fs::sources::foreign::*;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn fixtures(agent: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root.join(agent)];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

const PI_V3: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
{"type":"model_change","id":"a0","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","provider":"x","modelId":"m"}
{"type":"message","id":"a1","parentId":"a0","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"timestamp":2}}
{"type":"message","id":"a3","parentId":"a2","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"hookMessage","content":"h","timestamp":3}}
{"type":"compaction","id":"a4","parentId":"a3","timestamp":"2025-01-01T00:00:05.000Z","summary":"sum","firstKeptEntryId":"a2","tokensBefore":9}
{"type":"branch_summary","id":"a5","parentId":"a4","timestamp":"2025-01-01T00:00:06.000Z","fromId":"a1","summary":"left"}
{"type":"custom_message","id":"a6","parentId":"a5","timestamp":"2025-01-01T00:00:07.000Z","customType":"t","content":"c","display":true}
{"type":"session_info","id":"a7","parentId":"a6","timestamp":"2025-01-01T00:00:08.000Z","name":"title"}
{"type":"message","id":"a8","parentId":"a2","timestamp":"2025-01-01T00:00:09.000Z","message":{"role":"user","content":"branch","timestamp":4}}
not json
{"type":"message","id":"a9","parentId":"a8","timestamp":"2025-01-01T00:00:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"end"}],"timestamp":5}}
"#;

const PI_V1: &str = r#"{"type":"session","id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"two","timestamp":2}}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":7}
{"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"three","timestamp":3}}
"#;

struct Read {
    summary: ForeignSummary,
    conversation: Vec<MessagePieces>,
    history: Vec<MessageRef>,
}

fn read_rest(r: &mut dyn ForeignReader, bytes: &[u8], from: u64) -> Read {
    let used = r.feed(from, &bytes[from as usize..]);
    let tail = &bytes[(from + used) as usize..];
    Read {
        summary: r.summary(tail),
        conversation: r.conversation(tail),
        history: r.messages(tail, true),
    }
}

/// The file cut after `lines` lines: fed up to there, saved, restored on a fresh
/// reader, fed the rest; compared with one reader fed the whole file.
fn check_cut(agent: Agent, name: &str, bytes: &[u8], cut: usize) {
    let mut whole = reader_for(agent, name);
    let want = read_rest(whole.as_mut(), bytes, 0);
    check_cut_against(agent, name, bytes, cut, &want);
}

fn check_cut_against(agent: Agent, name: &str, bytes: &[u8], cut: usize, want: &Read) {
    let mut first = reader_for(agent, name);
    let consumed = first.feed(0, &bytes[..cut]);
    let state = first
        .save_state()
        .unwrap_or_else(|| panic!("{agent:?} {name}: no state"));
    let mut again = reader_for(agent, name);
    assert!(
        again.restore_state(&state),
        "{agent:?} {name}: state refused"
    );
    let got = read_rest(again.as_mut(), bytes, consumed);
    assert_eq!(got.summary, want.summary, "{agent:?} {name} cut at {cut}");
    assert_eq!(
        got.conversation, want.conversation,
        "{agent:?} {name} cut at {cut}"
    );
    assert_eq!(got.history, want.history, "{agent:?} {name} cut at {cut}");
}

/// Every line end (and the file's start and end) as a cut.
fn check_every_cut(agent: Agent, name: &str, bytes: &[u8]) {
    let mut cuts = vec![0];
    cuts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
    cuts.push(bytes.len());
    // Long fixtures: about 12 cuts spread over the file.
    let step = (cuts.len() / 12).max(1);
    let mut whole = reader_for(agent, name);
    let want = read_rest(whole.as_mut(), bytes, 0);
    for cut in cuts.iter().step_by(step).chain(cuts.last()) {
        check_cut_against(agent, name, bytes, *cut, &want);
    }
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn claude_states_resume_exactly() {
    let files = fixtures("claude");
    assert!(files.len() > 10);
    for f in files {
        check_every_cut(Agent::Claude, &name_of(&f), &std::fs::read(&f).unwrap());
    }
}

#[test]
fn codex_states_resume_exactly() {
    let files = fixtures("codex");
    assert!(files.len() > 10);
    for f in files {
        check_every_cut(Agent::Codex, &name_of(&f), &std::fs::read(&f).unwrap());
    }
}

#[test]
fn pi_states_resume_exactly() {
    for (name, text) in [("v3.jsonl", PI_V3), ("v1.jsonl", PI_V1)] {
        check_every_cut(Agent::Pi, name, text.as_bytes());
    }
}

#[test]
fn a_state_that_is_not_one_is_refused() {
    for agent in [Agent::Pi, Agent::Claude, Agent::Codex] {
        let mut r = reader_for(agent, "x.jsonl");
        let state = r.save_state().unwrap();
        for bad in [
            &b""[..],
            b"\xff\xff\xff",
            &state[..state.len().saturating_sub(1)],
        ] {
            let mut fresh = reader_for(agent, "x.jsonl");
            assert!(!fresh.restore_state(bad), "{agent:?} took {bad:?}");
        }
        // One more byte after a whole state: not one state either.
        let mut longer = state.clone();
        longer.push(0);
        assert!(!reader_for(agent, "x.jsonl").restore_state(&longer));
        assert!(r.restore_state(&state));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// pi's lines shuffled, some cut short or doubled: any cut still resumes exactly.
    #[test]
    fn pi_any_file_any_cut(picks in proptest::collection::vec((0usize..12, any::<bool>()), 0..16), cut in 0usize..16) {
        let lines: Vec<&str> = PI_V3.lines().collect();
        let mut text = String::new();
        for (i, short) in picks {
            let l = lines[i % lines.len()];
            text.push_str(if short { &l[..l.len() / 2] } else { l });
            text.push('\n');
        }
        let ends: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        check_cut(Agent::Pi, "p.jsonl", text.as_bytes(), ends[cut % ends.len()]);
    }
}
