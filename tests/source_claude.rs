//! The Claude Code reader against the public fixtures (read in place) and hostile input.

use fen_fs::sources::{claude::ClaudeReader, foreign::*};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/claude/projects")
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

fn all_fixtures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    jsonl_files(&root(), &mut v);
    v.sort();
    assert!(
        v.len() >= 20,
        "fixtures not found under {}",
        root().display()
    );
    v
}

fn name_of(p: &Path) -> &str {
    p.file_name().unwrap().to_str().unwrap()
}

/// Reads `bytes` whole: summary and the rendered conversation lines.
fn read(name: &str, bytes: &[u8]) -> (ForeignSummary, Vec<String>) {
    let mut r = ClaudeReader::new(name);
    let tail = feed_all(&mut r, bytes);
    let conv = r.conversation(tail);
    let lines = conv
        .iter()
        .map(|m| {
            for p in m {
                if let Piece::Range { start, len } = p {
                    assert!(start + len <= bytes.len() as u64, "range past the file");
                }
            }
            String::from_utf8(render_message(m, bytes)).expect("messages are UTF-8")
        })
        .collect::<Vec<_>>();
    for l in &lines {
        assert!(!l.contains('\n'), "a message spans lines: {l}");
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v["role"].is_string() && v.get("content").is_some(), "{l}");
    }
    (r.summary(tail), lines)
}

fn fixture(rel: &str) -> (ForeignSummary, Vec<Value>) {
    let p = root().join(rel);
    let bytes = std::fs::read(&p).unwrap();
    let (s, lines) = read(name_of(&p), &bytes);
    let vals = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (s, vals)
}

/// A message's text, whatever its content shape (string, blocks, tool results).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join(" "),
        Value::Object(o) => ["text", "content", "name", "id", "tool_use_id"]
            .iter()
            .filter_map(|k| o.get(*k))
            .map(text_of)
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Each message's role and a bit of its content, in order.
fn assert_messages(msgs: &[Value], expected: &[(&str, &str)]) {
    let got: Vec<(String, String)> = msgs
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                text_of(&m["content"]),
            )
        })
        .collect();
    assert_eq!(got.len(), expected.len(), "messages: {got:#?}");
    for (i, ((role, text), (er, et))) in got.iter().zip(expected).enumerate() {
        assert_eq!(role, er, "role of message {i}: {got:#?}");
        assert!(text.contains(et), "message {i} lacks {et:?}: {text}");
    }
}

fn user_text(t: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": t}]})
}

fn assistant_text(t: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": t}]})
}

const SUMMARY: &str = "This session is being continued from a previous conversation that ran out of context. Summary: the user asked for a plan.";

#[test]
fn compact_after_rewind_starts_at_the_summary() {
    let (s, msgs) = fixture("-tmp/43c4655e-4b11-5485-86a9-64e7d606a1b2.jsonl");
    assert_eq!(
        msgs,
        vec![
            user_text(SUMMARY),
            user_text("After compaction"),
            assistant_text("Final answer")
        ]
    );
    assert_eq!(s.id, "43c4655e-4b11-5485-86a9-64e7d606a1b2");
    assert_eq!(s.cwd.as_deref(), Some("/tmp"));
    assert_eq!(s.created_at.as_deref(), Some("2025-07-01T10:00:00.000Z"));
    assert_eq!(s.preview.as_deref(), Some("Start"));
    assert_eq!(s.title, None);
    assert!(s.listed && s.resumable);
    assert_eq!((s.messages, s.compactions, s.entries), (3, 1, 12));
}

#[test]
fn partial_compaction_keeps_the_preserved_messages() {
    let (s, msgs) = fixture("-tmp/dd8453a6-f287-50d3-89f0-eac0ad61576d.jsonl");
    assert_eq!(
        msgs,
        vec![
            user_text(SUMMARY),
            assistant_text("Second answer"),
            user_text("Keep going"),
            assistant_text("Kept going"),
            user_text("After compaction"),
            assistant_text("Final answer"),
        ]
    );
    assert_eq!(s.roles.get("assistant"), Some(&3));
    assert_eq!(s.roles.get("user"), Some(&3));
}

#[test]
fn preserved_segment_alone_is_ignored() {
    let (_, msgs) = fixture("-tmp/8a5f6b74-b4d5-542c-99c9-c8d3f406870b.jsonl");
    assert_eq!(
        msgs,
        vec![
            user_text(SUMMARY),
            assistant_text("Kept going"),
            user_text("After compaction"),
            assistant_text("Final answer"),
        ]
    );
}

const BRANCH_2: [(&str, &str); 5] = [
    ("user", "Hello"),
    ("assistant", "Hi there"),
    ("user", "Fork point"),
    ("user", "Branch 2 start"),
    ("assistant", "Branch 2 reply"),
];

#[test]
fn rewind_resumes_the_newest_branch() {
    let (s, msgs) = fixture("-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl");
    assert_messages(&msgs, &BRANCH_2);
    assert_eq!(s.preview.as_deref(), Some("Hello"));
}

#[test]
fn meta_newest_leaf_is_still_resumed() {
    let (_, msgs) = fixture("-tmp/8946713b-92f7-55df-b77e-7ede087a76fc.jsonl");
    let mut want = BRANCH_2.to_vec();
    want.push(("user", "Caveat: The messages below were generated"));
    assert_messages(&msgs, &want);
}

#[test]
fn trailing_local_commands_are_resumed() {
    let (_, msgs) = fixture("-tmp/5d611556-72d4-5156-8bd1-d7c985e9fefa.jsonl");
    let mut want = BRANCH_2.to_vec();
    want.extend([
        (
            "user",
            "<local-command-caveat>Caveat</local-command-caveat>",
        ),
        ("user", "<command-name>/exit</command-name>"),
        (
            "user",
            "<local-command-stdout>See ya!</local-command-stdout>",
        ),
    ]);
    assert_messages(&msgs, &want);
    assert_eq!(
        msgs[5],
        json!({"role": "user", "content": "<local-command-caveat>Caveat</local-command-caveat>"})
    );

    let (_, msgs) = fixture("-tmp/c83cecc8-4cd8-5141-9d19-3e68e6c3d048.jsonl");
    let mut want = BRANCH_2.to_vec();
    want.extend([
        ("user", "<command-name>/exit</command-name>"),
        (
            "user",
            "<local-command-stdout>See ya!</local-command-stdout>",
        ),
    ]);
    assert_messages(&msgs, &want);
}

#[test]
fn sessions_in_one_file_resume_only_the_newest_branch() {
    let (s, msgs) = fixture("-tmp/e6940b68-6dd9-520a-9760-7265a0f15d57.jsonl");
    assert_messages(
        &msgs,
        &[
            ("user", "Start"),
            ("assistant", "Reply 1"),
            ("user", "Middle"),
            ("user", "Fork from c"),
            ("assistant", "Forked reply"),
            ("user", "End of s3"),
        ],
    );
    assert_eq!(
        s.id, "e6940b68-6dd9-520a-9760-7265a0f15d57",
        "the file name's uuid"
    );
}

#[test]
fn inline_sidechain_entries_are_never_shown() {
    let (s, msgs) = fixture(
        "e--Workspace-src-github-claude-code-log/88a8d761-7b9a-4bf1-a8ca-c1febe6bf358.jsonl",
    );
    assert_messages(
        &msgs,
        &[
            ("assistant", "toolu_01JA2mLseQCAW3MdwPE4qWEk"),
            ("user", "Perfect! Now I have a complete"),
            ("assistant", "Excellent research!"),
        ],
    );
    assert_eq!(
        s.cwd.as_deref(),
        Some("e:\\Workspace\\src\\github\\claude-code-log")
    );
    // No user prompt, title or summary: the SDK's listing skips it; resume still works.
    assert!(!s.listed && s.resumable);
    assert_eq!(s.preview, None);
}

#[test]
fn parallel_tool_calls_keep_every_call_and_result() {
    let (s, msgs) = fixture("-workspace-example-app/55550000-0000-4000-8000-000000000001.jsonl");
    assert_messages(
        &msgs,
        &[
            ("user", "Give me a tour of the repository"),
            ("assistant", "toolu_sc_inspect"),
            ("user", "toolu_sc_inspect"),
            ("assistant", "toolu_sc_refresh"),
            ("user", "toolu_sc_refresh"),
            ("assistant", "toolu_sc_wake"),
            ("user", "toolu_sc_wake"),
            ("assistant", "toolu_sc_showcol1"),
            ("user", "toolu_sc_showcol1"),
            ("user", "toolu_sc_showcol2"),
            ("assistant", "Both modules are surveyed"),
        ],
    );
    assert!(text_of(&msgs[7]["content"]).contains("toolu_sc_showcol2"));
    assert_eq!(s.cwd.as_deref(), Some("/workspace/example-app"));
    assert_eq!(s.created_at.as_deref(), Some("2026-06-15T10:00:01.000Z"));
}

#[test]
fn split_responses_are_put_back_together() {
    // Old CLIs wrote one assistant entry per block; the three Task calls fan out and
    // the walk alone would keep one of them.
    let (s, msgs) = fixture("-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(msgs.len(), 32);
    let calls = [
        "toolu_014i9ThHMNShCHocf9xMKasf",
        "toolu_01EbxY94wRUAGyMLj5wh699C",
        "toolu_01LS6tcVd796SbQKmZqeVnWY",
    ];
    for (k, c) in calls.iter().enumerate() {
        assert!(text_of(&msgs[11 + k]["content"]).contains(c), "call {c}");
        assert!(
            msgs[14..17]
                .iter()
                .any(|m| text_of(&m["content"]).contains(c)),
            "result {c}"
        );
    }
    assert_eq!(
        &roles[11..17],
        [
            "assistant",
            "assistant",
            "assistant",
            "user",
            "user",
            "user"
        ]
    );
    assert!(text_of(&msgs[0]["content"]).contains("<command-name>/orchestrator</command-name>"));
    assert!(text_of(&msgs[31]["content"]).contains("CLAUDE.md has been created"));
    // 405 inline sidechain entries, none shown.
    assert!(
        !msgs
            .iter()
            .any(|m| text_of(&m["content"]).starts_with("Create React components"))
    );
    assert_eq!(s.cwd.as_deref(), Some("/path/to/Demo"));
    assert!(s.listed && s.resumable);
}

#[test]
fn teammate_entries_are_sent() {
    let (s, msgs) =
        fixture("-home-synthetic-test-fixture/ef000000-0000-4000-8000-000000000001.jsonl");
    assert_eq!(msgs.len(), 22);
    assert!(text_of(&msgs[0]["content"]).contains("Start a test-coverage team"));
    assert!(
        msgs.iter()
            .any(|m| text_of(&m["content"]).contains("<teammate-message"))
    );
    assert!(text_of(&msgs[21]["content"]).contains("Shut down bob before retrying"));
    assert_eq!(
        s.preview.as_deref(),
        Some("Start a test-coverage team and dispatch two teammates.")
    );
}

/// The real transcripts: size of the conversation, both ends, the listing facts.
#[test]
fn real_transcripts() {
    struct Case {
        rel: &'static str,
        messages: usize,
        users: u64,
        first: &'static str,
        last: &'static str,
        cwd: &'static str,
        preview: &'static str,
        created: &'static str,
    }
    let cases = [
        Case {
            rel: "-Users-dain-workspace-claude-code-log/326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl",
            messages: 38,
            users: 18,
            first: "Caveat: The messages below were generated by the user",
            last: "Both type checking issues have been resolved",
            cwd: "/Users/dain/workspace/claude-code-log",
            // The summary lines sit beyond the 64 KiB tail the SDK reads.
            preview: "<bash-input>uv run ty check</bash-input>",
            created: "2025-07-13T21:17:00.244Z",
        },
        Case {
            rel: "-Users-dain-workspace-danieldemmel-me-next/3680252d-d4e3-4416-bddd-8f5b5b4fdb7f.jsonl",
            messages: 3,
            users: 3,
            first: "Caveat: The messages below were generated by the user",
            last: "<local-command-stdout>Set model to",
            cwd: "/Users/dain/workspace/danieldemmel.me-next",
            // The last `summary` line (small file: all of it is the tail).
            preview: "HTML Ruby Tokenizer Conversion for Better Browser Support",
            created: "2025-09-29T19:36:50.541Z",
        },
        Case {
            rel: "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
            messages: 107,
            users: 45,
            first: "OK, we're going to make a little experiment here.",
            last: "<local-command-stdout>See ya!</local-command-stdout>",
            cwd: "-experiments/worktrees",
            preview: "Well, the subagents seem to be either stuck or done... can you check?",
            created: "2026-04-18T13:10:51.686Z",
        },
        Case {
            rel: "-home-user-project/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
            messages: 24,
            users: 9,
            first: "Ok, so there's isn't much to see here",
            last: "<local-command-stdout>See ya!</local-command-stdout>",
            cwd: "/home/user/project",
            preview: "Ok, so there's isn't much to see here, mostly one idea",
            created: "2026-02-16T18:46:55.028Z",
        },
        Case {
            rel: "-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
            messages: 29,
            users: 14,
            first: "<command-name>/init</command-name>",
            last: "I've created a basic CLAUDE.md file",
            cwd: "/path/to/Demo",
            preview: "/init",
            created: "2025-09-03T00:47:19.293Z",
        },
        Case {
            rel: "-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
            messages: 31,
            users: 15,
            first: "<command-name>/orchestrator</command-name>",
            last: "CLAUDE.mdファイルを最新の状態にアップデートしました",
            cwd: "/path/to/Demo",
            preview: "Examine the package.json file(s) in /path/to/Demo",
            created: "2025-09-07T09:52:03.071Z",
        },
        Case {
            rel: "-src-experiments-claude-p/256ba646-2c15-437a-98e9-4171aafd030e.jsonl",
            messages: 9,
            users: 4,
            first: "Search if claude -p can make use of WebSearch and Task tool.",
            last: "## Summary: Claude Code `-p` with WebSearch and Task Tool",
            cwd: "/src/experiments/claude_p",
            preview: "Search if claude -p can make use of WebSearch",
            created: "2026-01-23T17:19:55.583Z",
        },
    ];
    for c in cases {
        let (s, msgs) = fixture(c.rel);
        assert_eq!(msgs.len(), c.messages, "{}", c.rel);
        assert_eq!(s.messages as usize, c.messages, "{}", c.rel);
        assert_eq!(
            s.roles.get("user").copied().unwrap_or(0),
            c.users,
            "{}",
            c.rel
        );
        assert_eq!(
            s.roles.get("assistant").copied().unwrap_or(0) + c.users,
            c.messages as u64,
            "{}",
            c.rel
        );
        assert!(
            text_of(&msgs[0]["content"]).contains(c.first),
            "{}: first",
            c.rel
        );
        assert!(
            text_of(&msgs[c.messages - 1]["content"]).contains(c.last),
            "{}: last",
            c.rel
        );
        assert_eq!(s.cwd.as_deref(), Some(c.cwd), "{}", c.rel);
        assert!(
            s.preview.as_deref().unwrap_or("").starts_with(c.preview),
            "{}: {:?}",
            c.rel,
            s.preview
        );
        assert_eq!(s.created_at.as_deref(), Some(c.created), "{}", c.rel);
        assert_eq!(s.title, None, "{}", c.rel);
        // The last entry's time (§12: from the content, not the file's mtime).
        let last_time = std::fs::read_to_string(root().join(c.rel))
            .unwrap()
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|v| v["timestamp"].as_str().map(String::from));
        assert_eq!(s.updated_at, last_time, "{}: the last entry's time", c.rel);
        assert!(s.listed && s.resumable, "{}", c.rel);
        assert_eq!(s.malformed_lines, 0, "{}", c.rel);
        let id = Path::new(c.rel).file_stem().unwrap().to_str().unwrap();
        assert_eq!(s.id, id);
    }
}

#[test]
fn long_first_prompts_are_cut_at_200_chars() {
    let (s, _) = fixture("-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl");
    let p = s.preview.unwrap();
    assert!(
        p.ends_with('…') && p.chars().count() <= 201 && !p.contains('\n'),
        "{p}"
    );
}

#[test]
fn usage_only_file_cannot_be_resumed() {
    let (s, msgs) = fixture("project-alpha/2fd460fa-35c1-5e0b-92a5-9a0792e11f60.jsonl");
    assert!(msgs.is_empty());
    assert!(!s.resumable && !s.listed);
    assert!(
        s.not_resumable_reason
            .unwrap()
            .contains("No conversation found with session ID")
    );
    assert_eq!((s.entries, s.messages), (3, 0));
}

#[test]
fn agent_files_are_not_sessions() {
    for f in all_fixtures() {
        let name = name_of(&f);
        let session = fen_fs::sources::claude::is_session_file_name(name);
        assert_eq!(session, !name.starts_with("agent-"), "{name}");
        if !session {
            let (s, msgs) = read(name, &std::fs::read(&f).unwrap());
            assert!(!s.listed && !s.resumable && msgs.is_empty(), "{name}");
        }
    }
    use fen_fs::sources::claude::is_session_file_name as is;
    assert!(is("5C0375B4-57a5-4f26-b12d-d022ee4e51b7.jsonl"));
    assert!(!is("5c0375b4-57a5-4f26-b12d-d022ee4e51b7.json"));
    assert!(!is("5c0375b4-57a5-4f26-b12d-d022ee4e51b.jsonl"));
    assert!(!is(".jsonl"));
}

/// Feeds `bytes` cut at `cuts` (any points): each feed gets what the previous left
/// unconsumed plus the next chunk, as a follower of an appended file does.
fn read_in_chunks(
    name: &str,
    bytes: &[u8],
    cuts: &[usize],
) -> (ForeignSummary, Vec<MessagePieces>) {
    let mut r = ClaudeReader::new(name);
    let mut consumed = 0usize;
    for &cut in cuts.iter().chain([&bytes.len()]) {
        let cut = cut.clamp(consumed, bytes.len());
        consumed += r.feed(consumed as u64, &bytes[consumed..cut]) as usize;
        assert!(consumed <= cut);
    }
    let tail = &bytes[consumed..];
    (r.summary(tail), r.conversation(tail))
}

fn whole(name: &str, bytes: &[u8]) -> (ForeignSummary, Vec<MessagePieces>) {
    let mut r = ClaudeReader::new(name);
    let tail = feed_all(&mut r, bytes);
    (r.summary(tail), r.conversation(tail))
}

#[test]
fn incremental_feed_equals_a_whole_read() {
    for f in all_fixtures() {
        let name = name_of(&f);
        let bytes = std::fs::read(&f).unwrap();
        let want = whole(name, &bytes);
        let nl: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        let at_lines = [
            vec![nl[nl.len() / 2]],
            vec![nl[nl.len() / 3], nl[2 * nl.len() / 3]],
        ];
        let n = bytes.len();
        let anywhere = [
            vec![n / 2],
            vec![n / 3, n / 3 + 7],
            vec![1, n - 1],
            vec![0, 0, n / 5],
        ];
        for cuts in at_lines.iter().chain(&anywhere) {
            assert_eq!(
                read_in_chunks(name, &bytes, cuts),
                want,
                "{name} cut at {cuts:?}"
            );
        }
    }
}

#[test]
fn tail_is_judged_as_the_agent_would() {
    let p = root().join("-tmp/43c4655e-4b11-5485-86a9-64e7d606a1b2.jsonl");
    let bytes = std::fs::read(&p).unwrap();
    let name = name_of(&p);
    let full = whole(name, &bytes);
    // The last line without its newline: the SDK still parses it.
    let unterminated = &bytes[..bytes.len() - 1];
    assert_eq!(whole(name, unterminated), full);
    // A torn last line is bad JSON, skipped: the previous leaf is resumed.
    let torn = &bytes[..bytes.len() - 40];
    let (s, conv) = whole(name, torn);
    assert_eq!(s.messages, 2);
    assert_eq!(conv.len(), 2);
    assert!(s.resumable);
    // The same torn line, complete later: the reader gives the whole-file answer.
    let mut r = ClaudeReader::new(name);
    let c = r.feed(0, torn) as usize;
    r.feed(c as u64, &bytes[c..]);
    assert_eq!((r.summary(&[]), r.conversation(&[])), full);
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

const ID: &str = "00000000-0000-4000-8000-000000000000.jsonl";

#[test]
fn local_commands_attachments_and_repeated_uuids() {
    let mut f = String::new();
    f += &line(json!({"type":"permission-mode","permissionMode":"default","sessionId":"x"}));
    f += &line(
        json!({"type":"user","uuid":"u1","parentUuid":null,"cwd":"/w","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"first"}}),
    );
    f += &line(
        json!({"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"old"}]}}),
    );
    f += &line(
        json!({"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"new"}]}}),
    );
    f += &line(
        json!({"type":"system","subtype":"local_command","uuid":"l1","parentUuid":"a1","content":"<command-name>/rename</command-name>"}),
    );
    f += &line(
        json!({"type":"system","subtype":"turn_duration","uuid":"t1","parentUuid":"l1","durationMs":5}),
    );
    f += &line(
        json!({"type":"attachment","uuid":"at1","parentUuid":"t1","attachment":{"type":"x","rendered":[{"content":"one"},{"content":7},{"content":"two"}]}}),
    );
    f += &line(
        json!({"type":"attachment","uuid":"at2","parentUuid":"at1","attachment":{"type":"hook_success","content":""}}),
    );
    f += &line(json!({"type":"progress","uuid":"p1","parentUuid":"at2","data":{}}));
    f += &line(
        json!({"type":"user","uuid":"u2","parentUuid":"p1","isMeta":true,"message":{"role":"user","content":"meta"}}),
    );
    f += &line(json!({"type":"custom-title","customTitle":"Renamed","sessionId":"x"}));
    f += &line(json!({"type":"ai-title","aiTitle":"AI","sessionId":"x"}));
    f += &line(json!({"type":"last-prompt","lastPrompt":"latest ask","sessionId":"x"}));
    let (s, lines) = read(ID, f.as_bytes());
    let got: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        got,
        vec![
            json!({"role":"user","content":"first"}),
            assistant_text("new"),
            json!({"role":"user","content":"<command-name>/rename</command-name>"}),
            json!({"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}),
            json!({"role":"user","content":"meta"}),
        ]
    );
    assert_eq!(s.title.as_deref(), Some("Renamed"));
    assert_eq!(s.preview.as_deref(), Some("latest ask"));
    assert_eq!(s.cwd.as_deref(), Some("/w"));
    assert_eq!(s.created_at.as_deref(), Some("2026-01-01T00:00:00Z"));
    assert_eq!((s.entries, s.malformed_lines), (13, 0));
    assert!(s.listed && s.resumable);

    // The CLI stops at a trailing local command: it is the leaf.
    let mut g = String::new();
    g += &line(
        json!({"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"}}),
    );
    g += &line(
        json!({"type":"user","uuid":"u9","parentUuid":null,"isSidechain":true,"message":{"role":"user","content":"side"}}),
    );
    g += &line(
        json!({"type":"system","subtype":"local_command","uuid":"l1","parentUuid":"u1","content":"<local-command-stdout>ok</local-command-stdout>"}),
    );
    let (s, lines) = read(ID, g.as_bytes());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(s.preview.as_deref(), Some("hi"));
}

#[test]
fn first_line_sidechain_is_not_listed() {
    let f = line(
        json!({"type":"user","uuid":"u1","parentUuid":null,"isSidechain":true,"message":{"role":"user","content":"hi"}}),
    );
    let (s, lines) = read(ID, f.as_bytes());
    assert!(!s.listed && lines.is_empty());
}

#[test]
fn invalid_utf8_is_not_resumable() {
    let p = root().join("-tmp/8d05f615-19e7-55e3-98d9-eaf889ba4cd5.jsonl");
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.windows(5).position(|w| w == b"Hello").unwrap();
    bytes[at + 1] = 0xff;
    let (s, conv) = whole(name_of(&p), &bytes);
    assert!(!s.resumable && conv.is_empty());
    assert!(s.not_resumable_reason.unwrap().contains("UTF-8"));
    // The listing decodes with replacement and still shows the session.
    assert!(s.listed);
    assert_eq!(s.preview.as_deref(), Some("H\u{fffd}llo"));
    // A tail cut inside a character fails the strict read too.
    let ok = std::fs::read(&p).unwrap();
    let mut torn = ok.clone();
    torn.extend_from_slice("{\"x\":\"é".as_bytes());
    torn.pop();
    let (s, _) = whole(name_of(&p), &torn);
    assert!(!s.resumable);
}

#[test]
fn garbage_never_panics() {
    let p = root().join("-workspace-example-app/55550000-0000-4000-8000-000000000001.jsonl");
    let real = std::fs::read(&p).unwrap();
    let mut inputs: Vec<Vec<u8>> = vec![
        vec![],
        b"\n\n\n".to_vec(),
        vec![0; 100],
        b"\0\n\0{\n}\n[]\nnull\n\"x\"\n{\"type\":\"user\"}\n".to_vec(),
        vec![0xff, 0xfe, b'\n', 0xc3, b'\n', 0x80],
        b"{\"type\":\"user\",\"uuid\":5}\n{\"type\":\"assistant\",\"uuid\":\"a\",\"parentUuid\":\"a\",\"message\":{\"id\":\"m\",\"content\":[1,{\"type\":\"tool_use\",\"id\":[]}]}}\n".to_vec(),
        b"{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"b\",\"message\":{\"content\":\"x\"}}\n{\"type\":\"user\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"message\":{\"content\":\"y\"}}\n".to_vec(),
        b"{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"uuid\":\"c\",\"compactMetadata\":{\"preservedMessages\":{\"anchorUuid\":\"c\",\"uuids\":[\"c\",\"c\",\"x\",5]}}}\n".to_vec(),
        "[".repeat(10_000).into_bytes(),
    ];
    // Truncations and byte flips of a real file.
    for cut in (0..real.len()).step_by(97) {
        inputs.push(real[..cut].to_vec());
        let mut m = real.clone();
        m[cut] = [0, b'\n', b'"', b'}', 0xff][cut % 5];
        inputs.push(m);
    }
    for input in &inputs {
        for name in [ID, "agent-x.jsonl", "weird"] {
            let (s, conv) = whole(name, input);
            for m in &conv {
                let out = render_message(m, input);
                assert!(!out.contains(&b'\n'));
            }
            assert!(s.messages as usize == conv.len());
            let _ = read_in_chunks(name, input, &[input.len() / 2]);
        }
    }
}

#[test]
fn stored_values_are_served_from_the_file() {
    // Only the glue is made by the reader: every role and content is a byte range.
    let glue = [
        "{\"role\":",
        ",\"content\":",
        "}",
        "{\"role\":\"user\",\"content\":",
        "{\"role\":\"user\",\"content\":[",
        "{\"type\":\"text\",\"text\":",
        ",{\"type\":\"text\",\"text\":",
        "]}",
    ];
    for f in all_fixtures() {
        let bytes = std::fs::read(&f).unwrap();
        let (_, conv) = whole(name_of(&f), &bytes);
        for m in conv {
            assert!(
                m.iter()
                    .filter(|p| matches!(p, Piece::Range { .. }))
                    .count()
                    >= 1
            );
            for p in m {
                if let Piece::Text(t) = p {
                    assert!(glue.contains(&t.as_str()), "{t}");
                }
            }
        }
    }
    assert!(ClaudeReader::is_session_file_name(ID));
}
