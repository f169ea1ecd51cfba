//! The Qwen Code reader against files Qwen Code 0.24.4 wrote (tests/fixtures/qwen:
//! a prompt with a tool call, a second turn, a `/compress`, a third turn; and a
//! `--fork-session` of it), hand-made files pinning one rule each, and Qwen's own
//! code: the installed bundle lists and loads every file as its picker and
//! `--resume ID` do (tests/qwen/oracle.mjs), and must agree with the listing facts
//! and `conversation.json`.

mod support;

use fen_fs::sources::foreign::*;
use fen_fs::sources::qwen::{QwenReader, is_session_file_name};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const CWD: &str = "/tmp/q/proj";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qwen")
        .join(name)
}

/// Summary and conversation (each message parsed) of a whole file.
fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>) {
    let mut r = QwenReader::new();
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| {
            let text = render_message(m, bytes);
            assert!(!text.contains(&b'\n'), "one message per line");
            serde_json::from_slice(&text).expect("message is JSON")
        })
        .collect();
    (r.summary(tail), conv)
}

/// Feeds `bytes` in uneven chunks, saving and restoring the state on the way, and
/// checks the result equals one whole read.
fn check_incremental(bytes: &[u8]) {
    let mut whole = QwenReader::new();
    let tail = feed_all(&mut whole, bytes);
    let want = (whole.summary(tail), whole.conversation(tail));
    for step in [1usize, 7, 64, 1000] {
        let mut r = QwenReader::new();
        let mut consumed = 0usize;
        let mut avail = 0usize;
        while avail < bytes.len() {
            avail = (avail + step).min(bytes.len());
            consumed += r.feed(consumed as u64, &bytes[consumed..avail]) as usize;
            let _ = r.summary(&bytes[consumed..avail]);
            if avail.is_multiple_of(3) {
                let saved = r.save_state().expect("saves");
                r = QwenReader::new();
                assert!(r.restore_state(&saved));
            }
        }
        let tail = &bytes[consumed..];
        assert_eq!(
            (r.summary(tail), r.conversation(tail)),
            want,
            "fed {step} bytes at a time"
        );
    }
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

fn rec(uuid: &str, parent: Option<&str>, session: &str, kind: &str, extra: Value) -> Value {
    let mut v = json!({
        "uuid": uuid, "parentUuid": parent, "sessionId": session,
        "timestamp": format!("2026-11-27T10:00:{:02}.000Z", uuid.len() % 60),
        "type": kind, "cwd": CWD, "version": "0.24.4",
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

fn user(uuid: &str, parent: Option<&str>, s: &str, text: &str) -> Value {
    rec(
        uuid,
        parent,
        s,
        "user",
        json!({"message": {"role": "user", "parts": [{"text": text}]}}),
    )
}

fn model(uuid: &str, parent: &str, s: &str, parts: Value) -> Value {
    rec(
        uuid,
        Some(parent),
        s,
        "assistant",
        json!({"model": "mock-model", "message": {"role": "model", "parts": parts}}),
    )
}

fn system(uuid: &str, parent: &str, s: &str, subtype: &str, payload: Value) -> Value {
    rec(
        uuid,
        Some(parent),
        s,
        "system",
        json!({"subtype": subtype, "systemPayload": payload}),
    )
}

/// Hand-made files, each pinning one of Qwen's rules: (file name, bytes).
fn crafted() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let id = |n: u32| format!("{n:08x}-0000-4000-8000-000000000000");
    // 1: a rewind: the last record's chain leaves the first branch out.
    let s = id(1);
    out.push((
        s.clone(),
        [
            user("u1", None, &s, "first"),
            model("a1", "u1", &s, json!([{"text": "one"}])),
            user("u2", Some("a1"), &s, "rewound"),
            model("a2", "u2", &s, json!([{"text": "gone"}])),
            user("u3", Some("a1"), &s, "instead"),
            model("a3", "u3", &s, json!([{"text": "kept"}])),
        ]
        .map(line)
        .concat(),
    ));
    // 2: fragments of one record (same uuid): their parts joined; glued lines.
    let s = id(2);
    let glued = format!(
        "{}{}\n",
        model("a1", "u1", &s, json!([{"text": "half"}])),
        model(
            "a1",
            "u1",
            &s,
            json!([{"functionCall": {"id": "c1", "name": "glob", "args": {"pattern": "*"}}}])
        )
    );
    out.push((
        s.clone(),
        [
            line(user("u1", None, &s, "go")),
            glued,
            line(rec(
                "t1",
                Some("a1"),
                &s,
                "tool_result",
                json!({"message": {"role": "user", "parts": [
                    {"functionResponse": {"id": "c1", "name": "glob", "response": {"output": "a.txt"}}}]}}),
            )),
            // A mid-turn message joins the user turn before it.
            line(rec(
                "m1",
                Some("t1"),
                &s,
                "user",
                json!({"subtype": "mid_turn_user_message",
                       "message": {"role": "user", "parts": [{"text": "also this"}]}}),
            )),
            line(model("a2", "m1", &s, json!([{"text": "done"}]))),
        ]
        .concat(),
    ));
    // 3: a slash command answered locally takes its echoed prompt back; a title, a
    // shown prompt, a realtime message, a torn last line.
    let s = id(3);
    out.push((
        s.clone(),
        [
            line(rec(
                "u0",
                None,
                &s,
                "user",
                json!({"message": {"role": "user", "parts": [{"text": "raw @file"}]},
                       "systemPayload": {"displayText": "shown prompt", "hookContext": "x"}}),
            )),
            line(model("a0", "u0", &s, json!([{"text": "ok"}]))),
            line(user("u1", Some("a0"), &s, "/stats")),
            line(system(
                "c1",
                "u1",
                &s,
                "slash_command",
                json!({"phase": "result", "rawCommand": "/stats",
                       "outputHistoryItems": [{"type": "assistant", "text": "stats"}]}),
            )),
            line(system(
                "t1",
                "c1",
                &s,
                "custom_title",
                json!({"customTitle": "old title", "titleSource": "auto"}),
            )),
            line(rec(
                "r1",
                Some("t1"),
                &s,
                "user",
                json!({"subtype": "realtime_message",
                       "message": {"role": "user", "parts": [{"text": "live"}]}}),
            )),
            line(system(
                "t2",
                "r1",
                &s,
                "custom_title",
                json!({"customTitle": "new title", "titleSource": "manual"}),
            )),
            line(user("u2", Some("t2"), &s, "next")),
            r#"{"uuid":"x9","parentUuid":"u2","sessi"#.to_string(),
        ]
        .concat(),
    ));
    // 4: records of two session ids: Qwen refuses to load the file.
    let s = id(4);
    out.push((
        s.clone(),
        [
            user("u1", None, &s, "mine"),
            model("a1", "u1", &id(5), json!([{"text": "theirs"}])),
        ]
        .map(line)
        .concat(),
    ));
    // 6: a part that is not an object: Qwen's history copy throws.
    let s = id(6);
    out.push((
        s.clone(),
        [
            user("u1", None, &s, "hi"),
            model("a1", "u1", &s, json!(["bare string"])),
        ]
        .map(line)
        .concat(),
    ));
    // 7: a compression whose saved history is no list.
    let s = id(7);
    out.push((
        s.clone(),
        [
            user("u1", None, &s, "hi"),
            system(
                "z1",
                "u1",
                &s,
                "chat_compression",
                json!({"compressedHistory": {"role": "user"}}),
            ),
            user("u2", Some("z1"), &s, "after"),
        ]
        .map(line)
        .concat(),
    ));
    // 8: a cut first line and a bad record before the good ones; blank lines.
    let s = id(8);
    out.push((
        s.clone(),
        [
            "{\"uuid\":\"q\n".to_string(),
            "\n  \n".to_string(),
            line(json!({"uuid": "nope", "type": "user", "sessionId": s, "cwd": CWD})),
            line(user("u1", None, &s, "after junk")),
        ]
        .concat(),
    ));
    out
}

#[test]
fn session_file_names_are_qwens() {
    assert!(is_session_file_name(
        "1bcfcf91-b839-4004-8401-5638859c38e3.jsonl"
    ));
    assert!(is_session_file_name(
        "1BCFCF91B8394004840156388598E3AA.jsonl"
    ));
    assert!(!is_session_file_name("notes.jsonl"));
    assert!(!is_session_file_name(
        "1bcfcf91-b839-4004-8401-5638859c38e3.json"
    ));
    assert!(!is_session_file_name("1bcfcf91.jsonl"));
}

#[test]
fn a_recorded_session_reads_as_qwen_resumes_it() {
    let bytes = std::fs::read(fixture("compressed.jsonl")).unwrap();
    let (s, conv) = read(&bytes);
    assert_eq!(s.id, "1bcfcf91-b839-4004-8401-5638859c38e3");
    assert_eq!(s.cwd.as_deref(), Some(CWD));
    assert_eq!(s.preview.as_deref(), Some("first prompt USE_TOOL"));
    assert_eq!(s.created_at.as_deref(), Some("2026-11-27T14:22:24.111Z"));
    assert_eq!(s.updated_at.as_deref(), Some("2026-11-27T14:22:49.566Z"));
    assert!(s.resumable && s.listed, "{s:?}");
    assert_eq!(s.compactions, 1);
    assert_eq!(s.malformed_lines, 0);
    // The compression replaced the first turns: its summary, the model's
    // acknowledgement, then the turn after it.
    let texts: Vec<(&str, &str)> = conv
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["parts"][0]["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(texts.len(), 4, "{conv:?}");
    assert!(texts[0].1.starts_with("<state_snapshot>the summary 6"));
    assert_eq!(texts[1].0, "model");
    assert_eq!(texts[2], ("user", "third prompt"));
    assert_eq!(texts[3].0, "model");
    let mut r = QwenReader::new();
    let tail = feed_all(&mut r, &bytes);
    let all = r.messages(tail, true);
    assert!(all[0].in_conversation.eq(&false), "history first");
    assert!(
        all.iter().any(|m| !m.in_conversation
            && render_message(&m.pieces, &bytes)
                .windows(8)
                .any(|w| w == b"USE_TOOL")),
        "the compressed turns stay searchable"
    );
    assert!(all.iter().any(|m| m.summary && m.in_conversation));
    check_incremental(&bytes);
}

#[test]
fn a_fork_is_its_own_session() {
    let bytes = std::fs::read(fixture("forked.jsonl")).unwrap();
    let (s, conv) = read(&bytes);
    assert_eq!(s.id, "63e38dc2-d246-4f22-b64e-4f6a8da5590b");
    assert!(s.resumable);
    assert_eq!(
        conv.last().unwrap()["parts"][0]["text"],
        "<state_snapshot>the summary 9</state_snapshot>"
    );
    assert_eq!(conv[conv.len() - 2]["parts"][0]["text"], "fork prompt");
    check_incremental(&bytes);
}

#[test]
fn crafted_files_pin_the_rules() {
    for (name, text) in crafted() {
        check_incremental(text.as_bytes());
        let (s, conv) = read(text.as_bytes());
        let texts: Vec<String> = conv.iter().map(|m| m["parts"].to_string()).collect();
        match name.chars().next().unwrap() {
            '0' if name.starts_with("00000001") => {
                assert_eq!(conv.len(), 4, "{texts:?}");
                assert!(texts[2].contains("instead") && texts[3].contains("kept"));
            }
            '0' if name.starts_with("00000002") => {
                assert_eq!(conv.len(), 4, "{texts:?}");
                assert!(texts[1].contains("half") && texts[1].contains("functionCall"));
                assert!(texts[2].contains("functionResponse") && texts[2].contains("also this"));
            }
            '0' if name.starts_with("00000003") => {
                assert_eq!(s.title.as_deref(), Some("new title"));
                assert_eq!(s.preview.as_deref(), Some("shown prompt"));
                assert_eq!(s.malformed_lines, 1, "the torn tail");
                assert_eq!(conv.len(), 3, "{texts:?}");
                assert!(
                    !texts
                        .iter()
                        .any(|t| t.contains("/stats") || t.contains("live"))
                );
            }
            '0' if name.starts_with("00000004") => {
                assert!(!s.resumable);
                assert!(s.not_resumable_reason.unwrap().contains("more than one"));
                assert!(conv.is_empty());
            }
            '0' if name.starts_with("00000006") || name.starts_with("00000007") => {
                assert!(!s.resumable, "{name}");
                assert!(s.not_resumable_reason.unwrap().contains("throws"));
            }
            '0' if name.starts_with("00000008") => {
                assert_eq!(s.malformed_lines, 1);
                assert_eq!(
                    s.entries, 2,
                    "the record without identity is read, not kept"
                );
                assert!(s.resumable);
                assert_eq!(conv.len(), 1);
            }
            _ => panic!("{name}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Qwen's own code as the oracle

/// Runs tests/qwen/oracle.mjs over the project `cwd` of the store at `root`.
fn oracle(test: &str, root: &Path, cwd: &str) -> Option<Value> {
    let bin = support::agent_bin(test, "qwen")?;
    let bundle = bin
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("@qwen-code/qwen-code");
    let out = std::process::Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/qwen/oracle.mjs"))
        .arg(&bundle)
        .arg(cwd)
        .env("QWEN_RUNTIME_DIR", root)
        .env("HOME", root.parent().unwrap())
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "oracle: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("oracle output"))
}

#[test]
fn every_file_reads_as_qwen_loads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".qwen");
    let chats = root.join("projects/-tmp-q-proj/chats");
    std::fs::create_dir_all(chats.join("archive")).unwrap();
    let mut files = Vec::new();
    for f in ["compressed.jsonl", "forked.jsonl"] {
        let bytes = std::fs::read(fixture(f)).unwrap();
        let (s, _) = read(&bytes);
        files.push((s.id.clone(), bytes));
    }
    for (name, text) in crafted() {
        files.push((name, text.into_bytes()));
    }
    for (id, bytes) in &files {
        std::fs::write(chats.join(format!("{id}.jsonl")), bytes).unwrap();
    }
    // One archived copy: listed apart, marked archived.
    std::fs::write(
        chats.join("archive/aaaaaaaa-0000-4000-8000-000000000000.jsonl"),
        files[0]
            .1
            .replace_id(&files[0].0, "aaaaaaaa-0000-4000-8000-000000000000"),
    )
    .unwrap();
    let Some(o) = oracle("every_file_reads_as_qwen_loads_it", &root, CWD) else {
        return;
    };
    let listed: Vec<&Value> = o["active"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), files.len(), "{o}");
    assert_eq!(o["archived"].as_array().unwrap().len(), 1);
    let loaded = o["loaded"].as_object().unwrap();
    let resumed = loaded.values().filter(|l| l["history"].is_array()).count();
    assert_eq!(
        resumed, 6,
        "Qwen resumes all but the three broken files: {o}"
    );
    for (id, bytes) in &files {
        let (s, conv) = read(bytes);
        let item = listed
            .iter()
            .find(|i| i["sessionId"] == json!(id))
            .unwrap_or_else(|| panic!("{id} not listed by Qwen"));
        assert!(s.listed, "{id}");
        assert_eq!(json!(s.id), item["sessionId"], "{id}");
        assert_eq!(json!(s.cwd), item["cwd"], "{id}");
        assert_eq!(json!(s.created_at), item["startTime"], "{id}");
        let prompt = item["prompt"].as_str().unwrap();
        assert_eq!(s.preview.as_deref().unwrap_or(""), prompt, "{id}");
        assert_eq!(json!(s.title), item["customTitle"], "{id}");
        let loaded = &o["loaded"][id];
        match loaded.get("history") {
            Some(Value::Array(history)) => {
                assert!(s.resumable, "{id}: {s:?}");
                assert_eq!(&conv, history, "{id}");
            }
            _ => {
                assert!(!s.resumable, "{id}: Qwen says {loaded}");
                assert!(conv.is_empty());
            }
        }
    }
}

trait ReplaceId {
    fn replace_id(&self, from: &str, to: &str) -> Vec<u8>;
}

impl ReplaceId for Vec<u8> {
    fn replace_id(&self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8(self.clone())
            .unwrap()
            .replace(from, to)
            .into_bytes()
    }
}

#[test]
fn a_first_record_without_cwd_is_neither_listed_nor_resumable() {
    // Qwen's picker hashes the first record's cwd and throws without one (its whole
    // listing fails): fen-fs shows the file, not listed, not resumable.
    let s = "00000009-0000-4000-8000-000000000000";
    let mut first = user("u1", None, s, "hi");
    first.as_object_mut().unwrap().remove("cwd");
    let text = [first, model("a1", "u1", s, json!([{"text": "yo"}]))]
        .map(line)
        .concat();
    let (sum, conv) = read(text.as_bytes());
    assert!(!sum.listed && !sum.resumable, "{sum:?}");
    assert!(sum.not_resumable_reason.unwrap().contains("cwd"));
    assert!(conv.is_empty());
}

// ---------------------------------------------------------------------------
// Usage

fn usage_of(bytes: &[u8]) -> fen_fs::usage_record::UsageOut {
    let mut r = fen_fs::sources::qwen::usage::QwenUsage::new(Default::default());
    fen_fs::usage_record::read_all(&mut r, bytes)
}

#[test]
fn usage_counts_every_model_call_once_forks_included() {
    use fen_fs::usage_record::Tokens;
    let original = usage_of(&std::fs::read(fixture("compressed.jsonl")).unwrap());
    let fork = usage_of(&std::fs::read(fixture("forked.jsonl")).unwrap());
    assert_eq!(original.malformed, 0);
    // Seven calls: three turns' four answers, the compression's request and the memory
    // extractor's two (those two leave no assistant record).
    assert_eq!(original.records.len(), 7);
    let r = &original.records[0];
    assert_eq!(&*r.session, "1bcfcf91-b839-4004-8401-5638859c38e3");
    assert_eq!(r.cwd.as_deref(), Some(CWD));
    assert_eq!(r.model.as_deref(), Some("mock-model"));
    assert_eq!(
        r.tokens,
        Tokens {
            input: 99,
            output: 5,
            cache_read: 3,
            ..Tokens::default()
        },
        "input without its cached part; an OpenAI-compatible total adds no reasoning"
    );
    // The fork copies the original's records with their uuids: counted once.
    let mut keys: Vec<u64> = original
        .records
        .iter()
        .chain(&fork.records)
        .map(|r| r.key.expect("keyed by uuid"))
        .collect();
    assert_eq!(keys.len(), 7 + 9);
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 9, "the fork adds its own two calls");
    // A file read in two parts gives what one reading gives.
    let bytes = std::fs::read(fixture("forked.jsonl")).unwrap();
    let cut = bytes.len() / 2;
    let mut r = fen_fs::sources::qwen::usage::QwenUsage::new(Default::default());
    let mut out = fen_fs::usage_record::UsageOut::default();
    use fen_fs::usage_record::UsageReader;
    let used = r.feed(0, &bytes[..cut], &mut out) as usize;
    let used = used + r.feed(used as u64, &bytes[used..], &mut out) as usize;
    r.finish(used as u64, &bytes[used..], &mut out);
    assert_eq!(out.records, fork.records);
}

#[test]
fn usage_of_the_gemini_api_counts_thoughts_as_reasoning() {
    let line = r#"{"uuid":"t1","parentUuid":null,"sessionId":"s","timestamp":"2026-11-27T10:00:00.000Z","type":"system","subtype":"ui_telemetry","cwd":"/p","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","model":"gemini-2.5-pro","input_token_count":100,"output_token_count":10,"cached_content_token_count":40,"thoughts_token_count":7,"total_token_count":117}}}"#;
    let bad = line.replace("\"input_token_count\":100", "\"input_token_count\":\"x\"");
    let out = usage_of(format!("{line}\n{bad}\n{line}").as_bytes());
    assert_eq!(out.records.len(), 2, "a torn-free last line counts too");
    assert_eq!(out.malformed, 1);
    let t = out.records[0].tokens;
    assert_eq!(
        (t.input, t.cache_read, t.output, t.reasoning),
        (60, 40, 10, 7)
    );
}
