//! The Codex rollout reader against the public fixtures (read in place) and hand-made
//! files pinning one rule each.

use fen_fs::sources::{codex::CodexReader, foreign::*};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/codex/sessions")
}

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).expect("fixture")
}

fn all_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Summary and conversation (each message parsed) of a whole file.
fn read(bytes: &[u8]) -> (ForeignSummary, Vec<Value>) {
    let mut r = CodexReader::new();
    let tail = feed_all(&mut r, bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| {
            let text = render_message(m, bytes);
            assert!(!text.contains(&b'\n'));
            serde_json::from_slice(&text).expect("message is JSON")
        })
        .collect();
    (r.summary(tail), conv)
}

fn roles(conv: &[Value]) -> Vec<&str> {
    conv.iter().map(|m| m["role"].as_str().unwrap()).collect()
}

const F1: &str =
    "2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl";
const F2: &str =
    "2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl";
const F3: &str =
    "2026/01/03/rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl";
const F4: &str =
    "2026/01/04/rollout-2026-01-04T05-06-07-44444444-4444-4444-8444-444444444444.jsonl";
const F5: &str =
    "2024/01/01/rollout-2024-01-01T00-00-00-55555555-5555-4555-8555-555555555555.jsonl";
const F6: &str =
    "2026/02/01/rollout-2026-02-01T00-00-00-66666666-6666-4666-8666-666666666666.jsonl";
const F7: &str =
    "2026/05/13/rollout-2026-05-13T09-00-00-9e01c008-d9c9-5cae-9765-4d60c07e28e2.jsonl";
const R1: &str =
    "2026/02/23/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl";
const R2: &str =
    "2026/02/23/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
const R3: &str =
    "2026/02/23/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl";
const R4: &str =
    "2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl";
const NO_META: &str = "the rollout file does not start with session metadata";

#[test]
fn synthetic_tool_calls() {
    let (s, c) = read(&fixture(F1));
    assert_eq!(s.id, "11111111-1111-4111-8111-111111111111");
    assert_eq!(s.cwd.as_deref(), Some("/workspace/synthetic-project"));
    assert_eq!(s.preview.as_deref(), Some("List the synthetic files."));
    assert_eq!(s.created_at.as_deref(), Some("2026-01-02T03:04:05.000Z"));
    assert!(s.listed && s.resumable && s.not_resumable_reason.is_none());
    assert_eq!(s.title, None);
    // The last line's time (§12: from the content, not the file's mtime), a record
    // codex-cli does not know included: it was written then.
    assert_eq!(s.updated_at.as_deref(), Some("2026-01-02T03:04:16.000Z"));
    // turn_context without `summary`, the output_text tool output and the unknown
    // record type do not deserialize.
    assert_eq!((s.entries, s.malformed_lines), (11, 3));
    assert_eq!(s.messages, 8);
    let expected = json!([
        {"role":"user","content":[{"type":"input_text","text":"List the synthetic files."}]},
        {"role":"assistant","content":[{"type":"reasoning","summary":[{"type":"summary_text","text":"I will inspect the synthetic directory."}],"encrypted_content":"SYNTHETIC_ENCRYPTED_CONTENT_MUST_NOT_RENDER"}]},
        {"role":"assistant","content":[{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"find . -maxdepth 1 -type f\"}","call_id":"call-structured-001"}]},
        {"role":"tool","content":[{"type":"function_call_output","call_id":"call-structured-001","output":"./alpha.txt\n./beta.txt"}]},
        {"role":"assistant","content":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch","call_id":"call-custom-001"}]},
        {"role":"assistant","content":[{"type":"function_call","name":"mcp__synthetic__lookup","arguments":"{\"query\":\"fixture\"}","call_id":"call-mcp-001"}]},
        {"role":"tool","content":[{"type":"function_call_output","call_id":"call-mcp-001","output":"{\"status\":\"ok\"}"}]},
        {"role":"assistant","content":[{"type":"output_text","text":"The synthetic files are alpha.txt and beta.txt."}]}
    ]);
    assert_eq!(Value::Array(c), expected);
    // Stored bytes kept: key order of a message is role, content, then the rest.
    let bytes = fixture(F1);
    let mut r = CodexReader::new();
    let tail = feed_all(&mut r, &bytes);
    let first = render_message(&r.conversation(tail)[0], &bytes);
    assert_eq!(
        String::from_utf8(first).unwrap(),
        r#"{"role":"user","content":[{"type":"input_text","text":"List the synthetic files."}]}"#
    );
}

#[test]
fn synthetic_parent_thread() {
    let (s, c) = read(&fixture(F2));
    assert_eq!(s.id, "22222222-2222-4222-8222-222222222222");
    assert_eq!(s.preview.as_deref(), Some("Spawn a synthetic researcher."));
    assert!(s.listed && s.resumable);
    // `collab_tool_call` is not an event type.
    assert_eq!((s.entries, s.malformed_lines), (4, 1));
    assert_eq!(
        Value::Array(c),
        json!([
            {"role":"assistant","content":[{"type":"function_call","name":"spawn_agent","arguments":"{\"task_name\":\"synthetic_researcher\",\"message\":\"Inspect fixtures.\"}","call_id":"call-spawn-001"}]},
            {"role":"tool","content":[{"type":"function_call_output","call_id":"call-spawn-001","output":"agent 33333333-3333-4333-8333-333333333333 spawned"}]}
        ])
    );
}

#[test]
fn not_resumable_fixtures() {
    // Subagent source without `depth`: the meta line does not deserialize.
    let (s, c) = read(&fixture(F3));
    assert_eq!(s.id, "33333333-3333-4333-8333-333333333333");
    assert!(!s.listed && !s.resumable && c.is_empty());
    assert_eq!(s.not_resumable_reason.as_deref(), Some(NO_META));
    assert_eq!(s.messages, 0);

    // Legacy pre-RolloutLine format: nothing deserializes.
    let (s, c) = read(&fixture(F4));
    assert_eq!(s.id, "44444444-4444-4444-8444-444444444444");
    assert_eq!((s.cwd, s.preview), (None, None));
    assert_eq!((s.entries, s.malformed_lines), (0, 3));
    assert!(!s.listed && !s.resumable && c.is_empty());

    // Meta without timestamp/originator.
    for (f, preview, entries, malformed) in [
        (F5, "Archived synthetic prompt.", 1, 1),
        (F6, "Safe line before malformed input.", 1, 2),
    ] {
        let (s, c) = read(&fixture(f));
        assert_eq!(s.cwd.as_deref(), Some("/workspace/synthetic-project"));
        assert_eq!(s.preview.as_deref(), Some(preview));
        assert_eq!((s.entries, s.malformed_lines), (entries, malformed));
        assert_eq!(s.created_at, None);
        assert!(!s.listed && !s.resumable && c.is_empty());
        assert_eq!(s.not_resumable_reason.as_deref(), Some(NO_META));
    }

    // turn_context + token_count only.
    let (s, c) = read(&fixture(F7));
    assert_eq!(s.id, "");
    assert_eq!(s.cwd, None);
    assert_eq!((s.entries, s.malformed_lines), (2, 1));
    assert!(!s.listed && !s.resumable && c.is_empty());
}

fn text_of(m: &Value) -> String {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

#[test]
fn real_desktop_session_with_commentary() {
    let (s, c) = read(&fixture(R1));
    assert_eq!(s.id, "019c8a70-dda7-7f33-98ea-f30553347322");
    assert_eq!(s.cwd.as_deref(), Some("/redacted/path/da0ba47443"));
    assert_eq!(
        s.preview.as_deref(),
        Some("[REDACTED_MESSAGE len=86 sha=2239bcba]")
    );
    assert_eq!(s.created_at.as_deref(), Some("2026-02-23T12:19:38.535Z"));
    assert!(s.listed && s.resumable);
    assert_eq!((s.entries, s.malformed_lines), (19, 0));
    assert_eq!(
        roles(&c),
        [
            "developer",
            "developer",
            "user",
            "user",
            "developer",
            "developer",
            "user",
            "user",
            "assistant",
            "assistant",
            "assistant"
        ]
    );
    // Texts are redacted in this fixture, so no message reads as contextual.
    assert_eq!(text_of(&c[6]), "[REDACTED_TEXT len=86 sha=2239bcba]");
    // `phase` kept after role and content; the unanswered call is last, as stored.
    assert!(c.iter().any(|m| m["phase"] == "commentary"));
    assert_eq!(c.last().unwrap()["content"][0]["type"], "function_call");
}

#[test]
fn real_sessions_with_tool_calls() {
    let (s, c) = read(&fixture(R2));
    assert_eq!(s.id, "019c8bfe-ec25-79e0-97d7-bda6a9c575ff");
    assert!(s.listed && s.resumable);
    assert_eq!(c.len(), 29);
    assert_eq!(s.roles.get("tool"), Some(&5));
    let (s, c) = read(&fixture(R3));
    assert_eq!(s.id, "019c8a4d-8f45-7010-8b5d-7fad920aa6f9");
    assert_eq!((s.entries, s.malformed_lines), (417, 0));
    assert_eq!(c.len(), 286);
    let calls = c
        .iter()
        .filter(|m| m["content"][0]["type"] == "function_call")
        .count();
    assert_eq!(calls, 118);
    assert_eq!(s.roles.get("tool"), Some(&118));
}

#[test]
fn real_session_with_remote_compaction() {
    let bytes = fixture(R4);
    let (s, c) = read(&bytes);
    assert_eq!(s.id, "019c8a59-e9dd-71f0-9ae3-4079fe9726a9");
    assert!(s.listed && s.resumable);
    assert_eq!(s.compactions, 1);
    assert_eq!(c.len(), 454);
    assert_eq!(s.messages, 454);
    // The history starts with the replacement history: its user messages, then the
    // encrypted compaction item (nothing from before the compaction line).
    let compaction = c
        .iter()
        .position(|m| m["content"][0]["type"] == "compaction")
        .expect("compaction item");
    assert!(c[..compaction].iter().all(|m| m["role"] != "tool"));
    assert!(
        c.iter()
            .any(|m| m["content"][0]["type"] == "web_search_call")
    );
}

fn tmp_read(text: &str) -> (ForeignSummary, Vec<Value>) {
    // Hand-made files live in a temp dir, read back as bytes like any other.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(&path, text).unwrap();
    read(&std::fs::read(&path).unwrap())
}

const META: &str = r#"{"timestamp":"2026-03-01T00:00:00Z","type":"session_meta","payload":{"id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa","timestamp":"2026-03-01T00:00:00Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.169.0"}}"#;

fn item(payload: Value) -> String {
    json!({"timestamp":"2026-03-01T00:00:01Z","type":"response_item","payload":payload}).to_string()
}

fn event(payload: Value) -> String {
    json!({"timestamp":"2026-03-01T00:00:01Z","type":"event_msg","payload":payload}).to_string()
}

fn user(text: &str) -> String {
    item(json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]}))
}

fn assistant(text: &str) -> String {
    item(
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":text}]}),
    )
}

fn file(lines: &[String]) -> String {
    let mut out = format!("{META}\n");
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[test]
fn legacy_compaction_without_replacement_history() {
    let compacted =
        json!({"timestamp":"t","type":"compacted","payload":{"message":"SUMMARY"}}).to_string();
    let text = file(&[
        user("<environment_context>x</environment_context>"),
        user("first"),
        assistant("a1"),
        user("second"),
        item(json!({"type":"function_call","name":"f","arguments":"{}","call_id":"c"})),
        compacted,
        user("third"),
    ]);
    let (s, c) = tmp_read(&text);
    assert!(s.resumable);
    assert_eq!(s.compactions, 1);
    let u = |t: &str| json!({"role":"user","content":[{"type":"input_text","text":t}]});
    assert_eq!(
        Value::Array(c),
        json!([u("first"), u("second"), u("SUMMARY"), u("third")])
    );
    // Empty summary; newest first up to 20 000 tokens: an 80 004-byte message is cut.
    let big = "x".repeat(80_004);
    let compacted =
        json!({"timestamp":"t","type":"compacted","payload":{"message":""}}).to_string();
    let (_, c) = tmp_read(&file(&[user("old"), user(&big), compacted]));
    assert_eq!(c.len(), 2);
    let kept = text_of(&c[0]);
    assert!(
        kept.contains("…1 tokens truncated…"),
        "{}",
        &kept[39_990..40_030]
    );
    assert_eq!(kept.len(), 80_000 + "…1 tokens truncated…".len());
    assert_eq!(text_of(&c[1]), "(no summary available)");
}

#[test]
fn replacement_history_newest_wins() {
    let rh = |t: &str| {
        json!({"timestamp":"t","type":"compacted","payload":{"message":"","replacement_history":[
            {"type":"message","role":"user","content":[{"type":"input_text","text":t}]},
            {"type":"compaction","encrypted_content":"E"}
        ]}})
        .to_string()
    };
    let (s, c) = tmp_read(&file(&[
        user("a"),
        rh("r1"),
        user("b"),
        rh("r2"),
        user("c"),
    ]));
    assert_eq!(s.compactions, 2);
    assert_eq!(
        Value::Array(c),
        json!([
            {"role":"user","content":[{"type":"input_text","text":"r2"}]},
            {"role":"assistant","content":[{"type":"compaction","encrypted_content":"E"}]},
            {"role":"user","content":[{"type":"input_text","text":"c"}]}
        ])
    );
}

#[test]
fn thread_rolled_back() {
    let dev = item(
        json!({"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>p</permissions instructions>"}]}),
    );
    let env = user("<environment_context>e</environment_context>");
    let rb = |n: u32| event(json!({"type":"thread_rolled_back","num_turns":n}));
    let lines = [
        dev.clone(),
        user("one"),
        assistant("r1"),
        dev.clone(),
        env.clone(),
        user("two"),
        assistant("r2"),
        rb(1),
    ];
    let (_, c) = tmp_read(&file(&lines));
    assert_eq!(roles(&c), ["developer", "user", "assistant"]);
    assert_eq!(text_of(&c[2]), "r1");
    // More turns than exist: everything before the first user message stays.
    let (_, c) = tmp_read(&file(&[dev.clone(), user("one"), assistant("r1"), rb(5)]));
    assert_eq!(roles(&c), ["developer"]);
    // A ghost snapshot is history but never shown.
    let ghost = item(json!({"type":"ghost_snapshot","ghost_commit":{"id":"g"}}));
    let (s, c) = tmp_read(&file(&[user("one"), ghost]));
    assert_eq!((c.len(), s.messages), (1, 1));
}

#[test]
fn titles_and_previews() {
    let name = |n: &str| {
        event(
            json!({"type":"thread_name_updated","thread_id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa","thread_name":n}),
        )
    };
    let text = file(&[
        event(json!({"type":"user_message","message":"## My request for Codex:\n  do it  "})),
        name("first"),
        name("second"),
    ]);
    let (s, _) = tmp_read(&text);
    assert_eq!(s.title.as_deref(), Some("second"));
    assert_eq!(s.preview.as_deref(), Some("do it"));
    assert!(s.listed);
    // 0.169: the prompt comes as item_completed UserMessage.
    let text = file(&[event(
        json!({"type":"item_completed","thread_id":"x","turn_id":"t","item":{
        "type":"UserMessage","id":"i","content":[{"type":"text","text":"hello","text_elements":[]}]}}),
    )]);
    let (s, _) = tmp_read(&text);
    assert_eq!(s.preview.as_deref(), Some("hello"));
    assert!(s.listed);
    // The head is 210 records once the metadata is seen: a user event as record 211
    // is not found, so the file is not listed (but resumable); as record 210 it is.
    let mut lines: Vec<String> = (0..209).map(|i| assistant(&i.to_string())).collect();
    lines.push(event(json!({"type":"user_message","message":"late"})));
    let (s, _) = tmp_read(&file(&lines));
    assert!(!s.listed && s.resumable);
    lines.remove(0);
    let (s, _) = tmp_read(&file(&lines));
    assert!(s.listed);
}

#[test]
fn session_index_latest_wins() {
    let idx = b"{\"id\":\"a\",\"thread_name\":\"one\",\"updated_at\":\"2026-01-01T00:00:00Z\"}\n\
        not json\n\
        {\"id\":\"b\",\"thread_name\":\"bee\",\"updated_at\":\"2026-01-01T00:00:00Z\"}\n\
        {\"id\":\"a\",\"thread_name\":\"two\",\"updated_at\":\"2026-01-02T00:00:00Z\"}";
    let m = CodexReader::read_session_index(idx);
    assert_eq!(m.len(), 2);
    assert_eq!(m["a"], "two");
    assert_eq!(m["b"], "bee");
    assert!(CodexReader::read_session_index(b"\xff\x00garbage").is_empty());
}

#[test]
fn rollout_file_names() {
    assert!(CodexReader::is_rollout_file_name(
        "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
    ));
    for bad in [
        "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.json",
        "rollout-11111111-1111-4111-8111-111111111111.jsonl",
        "session-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
        "rollout-2026-01-02T03-04-05-zzzzzzzz-1111-4111-8111-111111111111.jsonl",
        "rollout-é.jsonl",
    ] {
        assert!(!CodexReader::is_rollout_file_name(bad), "{bad}");
    }
}

#[test]
fn invalid_utf8_and_blank_files() {
    let mut bytes = file(&[user("hi")]).into_bytes();
    bytes.extend_from_slice(b"{\"x\":\"\xff\"}\n");
    let (s, c) = read(&bytes);
    assert!(!s.resumable && c.is_empty());
    assert!(s.not_resumable_reason.unwrap().contains("UTF-8"));
    for blank in ["", "\n\n  \n", "   "] {
        let (s, c) = read(blank.as_bytes());
        assert!(!s.resumable && c.is_empty() && !s.listed);
        assert_eq!(
            s.not_resumable_reason.as_deref(),
            Some("the rollout file is empty")
        );
    }
    // A blank first line is skipped; metadata is still the first line.
    let (s, _) = read(format!("\n{}", file(&[user("hi")])).as_bytes());
    assert!(s.resumable);
}

#[test]
fn torn_tail_is_read_as_a_line() {
    let text = file(&[user("hi")]);
    let torn = format!("{text}{}", assistant("bye"));
    let (s, c) = read(torn.as_bytes());
    assert_eq!((s.messages, c.len()), (2, 2));
    let (s, _) = read(format!("{text}{{\"trunc").as_bytes());
    assert_eq!((s.messages, s.malformed_lines), (1, 1));
}

/// Feeds `bytes` in chunks ending at each of `cuts`, re-feeding what was not consumed.
fn feed_split(bytes: &[u8], cuts: &[usize]) -> CodexReader {
    let mut r = CodexReader::new();
    let mut consumed = 0usize;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let cut = cut.clamp(consumed, bytes.len());
        consumed += r.feed(consumed as u64, &bytes[consumed..cut]) as usize;
    }
    assert!(bytes[consumed..].iter().all(|&b| b != b'\n'));
    r
}

fn same(a: &CodexReader, b: &CodexReader, tail: &[u8]) {
    assert_eq!(a.summary(tail), b.summary(tail));
    assert_eq!(a.conversation(tail), b.conversation(tail));
}

#[test]
fn incremental_feed_matches_whole_read() {
    for p in all_fixtures() {
        let bytes = std::fs::read(&p).unwrap();
        let mut whole = CodexReader::new();
        let tail = feed_all(&mut whole, &bytes);
        let lines: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        same(&feed_split(&bytes, &lines), &whole, tail);
        let step = (bytes.len() / 37).max(1);
        let arbitrary: Vec<usize> = (1..bytes.len()).step_by(step).collect();
        same(&feed_split(&bytes, &arbitrary), &whole, tail);
        let odd: Vec<usize> = (0..bytes.len()).step_by(7).map(|i| i * 3 + 1).collect();
        same(&feed_split(&bytes, &odd), &whole, tail);
    }
}

#[test]
fn garbage_never_panics() {
    let mut inputs: Vec<Vec<u8>> = vec![
        b"\0\0\0\n\xff\xfe\n{}\n[]\n\"s\"\n{\"type\":\"session_meta\"}\n".to_vec(),
        b"{\"timestamp\":1,\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"x\"}}\n".to_vec(),
        b"{\"timestamp\":\"t\",\"type\":\"compacted\",\"payload\":{\"message\":\"m\",\"replacement_history\":[1,{}]}}\n".to_vec(),
        b"{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{\"type\":\"thread_rolled_back\",\"num_turns\":-1}}\n".to_vec(),
        "{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"é## My request for Codex:\"}}\n".as_bytes().to_vec(),
        "\r\n\r\n{\"a\":\u{0}}\n".as_bytes().to_vec(),
    ];
    for p in all_fixtures() {
        let b = std::fs::read(&p).unwrap();
        let mut flipped = b.clone();
        for i in (0..flipped.len()).step_by(13) {
            flipped[i] ^= 0x5a;
        }
        inputs.push(flipped);
        inputs.push(b[..b.len() / 2].to_vec());
    }
    let mut seed = 0x1234_5678_u64;
    for _ in 0..200 {
        let len = (seed % 300) as usize;
        let v: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"{}[]\":,\n tx\\0\xffnul"[(seed >> 33) as usize % 17]
            })
            .collect();
        inputs.push(v);
    }
    for bytes in inputs {
        let (_s, _c) = {
            let mut r = CodexReader::new();
            let tail = feed_all(&mut r, &bytes);
            (r.summary(tail), r.conversation(tail))
        };
        let _ = feed_split(&bytes, &[3, 10, 11, 50]);
    }
}
