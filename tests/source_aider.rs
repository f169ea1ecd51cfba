//! The Aider reader: a history file Aider 0.86.2 wrote (tests/fixtures/aider: a run
//! with an edit, then a `--restore-chat-history` run), hand-made files pinning one
//! rule each, and Aider's own parser as the oracle (`split_chat_history_markdown` in
//! the installed package): every run's messages, one after another, are what Aider
//! restores from the file. Runs are found in the folders a root names, as units.

mod support;

use fen_fs::sources::aider::{AiderReader, AiderUnits, HISTORY_FILE, parse, usage::AiderUsage};
use fen_fs::sources::foreign::*;
use fen_fs::sources::units::UnitSource;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/aider/two-runs.aider.chat.history.md"),
    )
    .unwrap()
}

/// A project folder under `root` holding `history` as Aider's history file.
fn project(root: &Path, name: &str, history: &[u8]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(HISTORY_FILE), history).unwrap();
    dir
}

/// Every run of the history files under `root`: (summary, conversation, dump).
fn runs(root: &Path) -> Vec<(ForeignSummary, Vec<Value>, Vec<u8>)> {
    let units = AiderUnits::new(vec![root.to_path_buf()], false);
    let mut out = Vec::new();
    for u in units.list() {
        let dump = units.dump(&u.key).unwrap();
        assert_eq!(
            units.signature(&u.key),
            Some(dump.signature),
            "the listing's signature is the dump's"
        );
        let bytes = dump.bytes;
        let mut r = AiderReader::new();
        let tail = feed_all(&mut r, &bytes);
        assert!(tail.is_empty());
        let conv = r
            .conversation(tail)
            .iter()
            .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
            .collect();
        out.push((r.summary(tail), conv, bytes));
    }
    out.sort_by(|a, b| a.0.created_at.cmp(&b.0.created_at));
    out
}

#[test]
fn a_recorded_history_is_one_session_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = project(tmp.path(), "proj", &fixture());
    let runs = runs(tmp.path());
    assert_eq!(runs.len(), 2);
    let (first, second) = (&runs[0], &runs[1]);
    assert_eq!(first.0.cwd.as_deref(), dir.to_str());
    assert_eq!(first.0.preview.as_deref(), Some("first prompt EDIT"));
    assert!(
        first
            .0
            .created_at
            .as_deref()
            .unwrap()
            .starts_with("2026-11-27T")
            && first.0.created_at < second.0.created_at
    );
    assert_eq!(first.0.updated_at, second.0.created_at);
    assert!(!first.0.resumable, "only the latest run resumes");
    assert!(
        first
            .0
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("latest run")
    );
    assert!(second.0.resumable, "{:?}", second.0);
    assert_eq!(first.0.id.len(), 16);
    assert_ne!(first.0.id, second.0.id);
    assert_eq!(
        first.1,
        vec![
            json!({"role": "user", "content": "first prompt EDIT  \n"}),
            json!({"role": "assistant",
                   "content": "\nHere is the change.\n\na.txt\n```\nchanged 1\n```\n\n"}),
        ]
    );
    assert_eq!(second.1.len(), 2);
    // The dump: a header, then every message, Aider's own output included.
    let dump = String::from_utf8(first.2.clone()).unwrap();
    let lines: Vec<Value> = dump
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "run");
    assert_eq!(lines[0]["latest"], false);
    assert_eq!(lines[1]["role"], "tool");
    assert!(
        lines[1]["content"]
            .as_str()
            .unwrap()
            .contains("Aider v0.86.2")
    );
    // Ids stay when the file grows; the earlier latest run stops resuming.
    let mut grown = fixture();
    grown.extend_from_slice(
        b"\n# aider chat started at 2026-11-28 09:00:00\n\n#### third  \n\nok\n\n",
    );
    std::fs::write(dir.join(HISTORY_FILE), &grown).unwrap();
    let after = self::runs(tmp.path());
    assert_eq!(after.len(), 3);
    assert_eq!(after[1].0.id, second.0.id);
    assert!(!after[1].0.resumable && after[2].0.resumable);
}

/// Runs Aider's own parser over `text`: (without tool output, with it).
fn aider_parse(test: &str, text: &str) -> Option<(Value, Value)> {
    let bin = support::agent_bin(test, "aider")?;
    let python = bin.parent().unwrap().join("python");
    let script = "import sys, json\nfrom aider.utils import split_chat_history_markdown as s\n\
                  t = open(sys.argv[1], encoding='utf-8').read()\n\
                  print(json.dumps([s(t), s(t, include_tool=True)]))";
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), text).unwrap();
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(tmp.path())
        .output()
        .expect("run aider's python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    Some((v[0].clone(), v[1].clone()))
}

/// Hand-made histories, each pinning a rule of Aider's parser.
fn crafted() -> Vec<String> {
    vec![
        String::from_utf8(fixture()).unwrap(),
        // Content before any run, a run whose last answer runs into the next run's
        // blank lines, a user message on several lines.
        "notes before\n\n# aider chat started at 2026-01-01 10:00:00\n\n#### a  \n#### b  \n\nanswer\n\n\n# aider chat started at 2026-01-02 10:00:00\n\n\n#### c  \n\nlast\n".into(),
        // Windows line ends, a lone `\r`, separators Python splits lines at, a `# `
        // heading inside an answer (skipped, as Aider skips it).
        "# aider chat started at 2026-01-01 10:00:00\r\n\r\n> tool\r\n#### q  \r\n\r\nline\u{2028}two\rthree\n# Heading\nmore\n> Tokens: 1.2k sent, 3 received.\n".into(),
        // No run header at all, nothing but whitespace after the last header.
        "#### only  \n\nanswer\n".into(),
        "# aider chat started at 2026-01-01 10:00:00\n\n  \n".into(),
    ]
}

#[test]
fn runs_one_after_another_are_what_aider_restores() {
    for text in crafted() {
        let (runs, messages, _) = parse(&text);
        if runs.is_empty() {
            assert!(messages.is_empty());
        }
        let tmp = tempfile::tempdir().unwrap();
        project(tmp.path(), "p", text.as_bytes());
        let shown = self::runs(tmp.path());
        assert_eq!(shown.len(), runs.len(), "{text:?}");
        assert_eq!(
            shown.iter().filter(|r| r.0.resumable).count(),
            usize::from(!runs.is_empty()),
            "the latest run resumes"
        );
        let Some((restored, with_tool)) = aider_parse("runs_one_after_another", &text) else {
            return;
        };
        let all: Vec<Value> = shown.iter().flat_map(|r| r.1.clone()).collect();
        assert_eq!(Value::Array(all), restored, "{text:?}");
        let dumped: Vec<Value> = shown
            .iter()
            .flat_map(|r| {
                String::from_utf8(r.2.clone())
                    .unwrap()
                    .lines()
                    .skip(1)
                    .map(|l| serde_json::from_str::<Value>(l).unwrap())
                    // Aider's output at the file's end, which its parser leaves out.
                    .filter(|m| m.get("trailing").is_none())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(Value::Array(dumped), with_tool, "{text:?}");
    }
}

#[test]
fn a_file_aider_cannot_read_back_is_one_unresumable_session() {
    let tmp = tempfile::tempdir().unwrap();
    project(
        tmp.path(),
        "p",
        b"# aider chat started at 2026-01-01 10:00:00\n\xff\xfe\n",
    );
    let shown = runs(tmp.path());
    assert_eq!(shown.len(), 1);
    assert!(!shown[0].0.resumable);
    assert!(
        shown[0]
            .0
            .not_resumable_reason
            .as_deref()
            .unwrap()
            .contains("UTF-8")
    );
}

#[test]
fn usage_is_the_tokens_lines_each_once() {
    let tmp = tempfile::tempdir().unwrap();
    project(tmp.path(), "proj", &fixture());
    let mut records = Vec::new();
    for (s, _, dump) in runs(tmp.path()) {
        let mut u = AiderUsage::new(Default::default());
        let out = fen_fs::usage_record::read_all(&mut u, &dump);
        assert_eq!(out.malformed, 0);
        for r in &out.records {
            assert_eq!(&*r.session, s.id);
        }
        records.extend(out.records);
    }
    assert_eq!(records.len(), 2);
    assert_eq!(
        (records[0].tokens.input, records[0].tokens.output),
        (101, 5)
    );
    assert_eq!(records[0].recorded_cost, Some(0.00011));
    assert_eq!(records[0].model.as_deref(), Some("openai/mock-model"));
    assert_ne!(records[0].key, records[1].key);
    assert!(records[0].time_ms < records[1].time_ms);
}
