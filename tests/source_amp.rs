//! Amp's reader without a mount. Amp's CLI is closed source: the fixtures follow
//! what its public readers read (AgentsView, ccusage, cass); the thread files are
//! read as units: the dump, what is shown, Anthropic blocks and Amp's own tool
//! results, both usage shapes, and a file caught half written.

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role, Vendor};
use fen_fs::sources::amp::usage::AmpUsage;
use fen_fs::sources::amp::{AmpReader, AmpUnits, to_neutral};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::Units;
use fen_fs::usage_record::{UnitFacts, UsageRecord, read_all};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/amp/threads");
const CURRENT: &str = "T-7f3c2a10-1b2c-4d5e-8f90-a1b2c3d4e5f6.json";
const LEDGER: &str = "T-00000000-aaaa-4bbb-8ccc-000000000001.json";

fn data_with(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("amp");
    std::fs::create_dir_all(data.join("threads")).unwrap();
    for f in files {
        std::fs::copy(format!("{FIXTURES}/{f}"), data.join("threads").join(f)).unwrap();
    }
    (tmp, data)
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
    let mut reader = AmpReader::new(&key.file_name().unwrap().to_string_lossy());
    let tail = feed_all(&mut reader, &bytes);
    assert!(tail.is_empty());
    let conversation = reader
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    Shown {
        summary: reader.summary(tail),
        bytes,
        conversation,
    }
}

fn usage(bytes: &[u8]) -> Vec<UsageRecord> {
    let mut r = AmpUsage::new(UnitFacts {
        agent: Agent::Amp,
        ..UnitFacts::default()
    });
    read_all(&mut r, bytes).records
}

#[test]
fn a_thread_is_its_header_then_its_messages_as_stored() {
    let (_tmp, data) = data_with(&[CURRENT]);
    let u = Units::new(Box::new(AmpUnits::new(&data)));
    let keys: Vec<PathBuf> = u.list().into_iter().map(|i| i.key).collect();
    assert_eq!(keys, vec![data.join("threads").join(CURRENT)]);
    let s = show(&u, &keys[0]);
    let lines: Vec<&[u8]> = s
        .bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 5);
    let header: Value = serde_json::from_slice(lines[0]).unwrap();
    assert!(header.get("messages").is_none());
    assert_eq!(header["title"], "Count the TODOs");
    // The stored message's bytes, without the file's indentation.
    let stored: Value =
        serde_json::from_slice(&std::fs::read(format!("{FIXTURES}/{CURRENT}")).unwrap()).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(lines[2]).unwrap(),
        stored["messages"][1]
    );
    assert!(!lines[2].contains(&b'\n') && !lines[2].starts_with(b"{ "));
    let sum = &s.summary;
    assert_eq!(sum.id, "T-7f3c2a10-1b2c-4d5e-8f90-a1b2c3d4e5f6");
    assert_eq!(
        sum.cwd.as_deref(),
        Some("/home/u/amp proj"),
        "env.initial.trees[0].uri, decoded"
    );
    assert_eq!(sum.title.as_deref(), Some("Count the TODOs"));
    assert_eq!(
        sum.preview.as_deref(),
        Some("How many TODOs are left in src?")
    );
    assert_eq!(sum.created_at.as_deref(), Some("2026-08-16T04:20:00.000Z"));
    assert_eq!(
        sum.updated_at.as_deref(),
        Some("2026-08-16T04:20:07.000Z"),
        "the last trace's end"
    );
    assert!(sum.resumable && sum.listed);
    assert_eq!(sum.resume_rules.as_deref(), Some("best effort"));
    assert_eq!(s.conversation.len(), 4);
    assert_eq!(
        s.conversation,
        stored["messages"].as_array().unwrap().clone()
    );
}

#[test]
fn anthropic_blocks_and_amp_own_tool_results_become_neutral() {
    let (_tmp, data) = data_with(&[CURRENT]);
    let u = Units::new(Box::new(AmpUnits::new(&data)));
    let s = show(&u, &data.join("threads").join(CURRENT));
    let a = to_neutral(&s.conversation[1]).unwrap();
    assert_eq!(a.role, Role::Assistant);
    assert!(
        matches!(&a.parts[0], Part::Reasoning { vendor: Vendor::Anthropic, text, .. } if text == "grep is enough.")
    );
    assert!(
        matches!(&a.parts[2], Part::ToolCall { id, name, .. } if id == "toolu_01Amp" && name == "Bash")
    );
    let r = to_neutral(&s.conversation[2]).unwrap();
    assert_eq!(r.role, Role::User);
    assert_eq!(
        r.parts,
        vec![Part::ToolResult {
            call_id: "toolu_01Amp".into(),
            name: None,
            content: vec![Part::Text { text: "7\n".into() }],
            is_error: false
        }]
    );
    let failed = to_neutral(&json!({"role": "user", "content": [
        {"type": "tool_result", "toolUseID": "t", "run": {"status": "error", "error": {"message": "no such file"}}},
        {"type": "tool_result", "tool_use_id": "c", "content": "canonical"}
    ]}))
    .unwrap();
    assert!(
        matches!(&failed.parts[0], Part::ToolResult { is_error: true, content, .. } if content == &vec![Part::Text { text: "no such file".into() }])
    );
    assert!(matches!(&failed.parts[1], Part::ToolResult { call_id, .. } if call_id == "c"));
}

#[test]
fn usage_is_each_inference_once_from_messages_or_the_ledger() {
    let (_tmp, data) = data_with(&[CURRENT, LEDGER]);
    let u = Units::new(Box::new(AmpUnits::new(&data)));
    let recs = usage(&show(&u, &data.join("threads").join(CURRENT)).bytes);
    assert_eq!(recs.len(), 2);
    let t = &recs[0].tokens;
    assert_eq!(
        (t.input, t.output, t.cache_write_5m, t.cache_read),
        (3, 120, 4200, 11000)
    );
    assert_eq!(recs[0].time_ms, 1_786_854_003_100);
    assert_eq!(recs[0].model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(recs[0].cwd.as_deref(), Some("/home/u/amp proj"));
    assert_eq!(&*recs[0].session, "T-7f3c2a10-1b2c-4d5e-8f90-a1b2c3d4e5f6");
    assert_ne!(recs[0].key, recs[1].key);
    // The ledger's event, its cache counts from the message it names.
    let recs = usage(&show(&u, &data.join("threads").join(LEDGER)).bytes);
    assert_eq!(recs.len(), 1);
    let t = &recs[0].tokens;
    assert_eq!((t.input, t.output, t.cache_write_5m), (10, 5, 300));
    // OpenAI models: the uncached prompt Amp calls cache creation is input.
    let gpt = br#"{"id":"T-g"}
{"role":"assistant","messageId":1,"content":[],"usage":{"model":"gpt-5","inputTokens":0,"outputTokens":7,"cacheCreationInputTokens":900,"cacheReadInputTokens":100,"timestamp":"2026-01-01T00:00:00Z"}}
"#;
    let r = usage(gpt);
    assert_eq!(
        (
            r[0].tokens.input,
            r[0].tokens.cache_write_5m,
            r[0].tokens.cache_read
        ),
        (900, 0, 100)
    );
}

#[test]
fn a_file_caught_half_written_shows_why_then_reads_whole_once_rewritten() {
    let (_tmp, data) = data_with(&[CURRENT]);
    let path = data.join("threads").join(CURRENT);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let u = Units::new(Box::new(AmpUnits::new(&data)));
    let s = show(&u, &path);
    assert!(!s.summary.resumable && s.conversation.is_empty());
    assert!(
        s.summary
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("not whole JSON")
    );
    assert_eq!(s.summary.id, "T-7f3c2a10-1b2c-4d5e-8f90-a1b2c3d4e5f6");
    let before = u.stamp(&path).unwrap();
    std::fs::write(&path, &whole).unwrap();
    assert_ne!(u.stamp(&path).unwrap(), before);
    let s = show(&u, &path);
    assert!(s.summary.resumable);
    assert_eq!(s.conversation.len(), 4);
    // Reading left the file as it was.
    assert_eq!(std::fs::read(&path).unwrap(), whole);
}
