//! A conversation that grows (`ForeignReader::summary_and_conversation_since`): for
//! random files written a piece at a time (appends that extend the conversation,
//! branches, rewinds, compactions, sidechains, repeated ids, torn and malformed
//! lines), the conversation a reader gives as what it added to the last one, and the
//! `conversation.json` layout grown from it, equal byte for byte what a fresh reader
//! of the whole file gives (the full computation), after every append. And the
//! common append is given as growth, not whole.

use fen_fs::sources::agents::reader_for;
use fen_fs::sources::foreign::*;
use fen_fs::views::pieces::{PieceLayout, render};
use proptest::prelude::*;

/// What a reader gives for the file so far.
struct Seen {
    summary: ForeignSummary,
    conversation: Vec<MessagePieces>,
    messages: Vec<MessageRef>,
    history: Vec<MessageRef>,
}

fn fresh(agent: Agent, name: &str, file: &[u8]) -> Seen {
    let mut r = reader_for(agent, name);
    let tail = feed_all(r.as_mut(), file);
    Seen {
        summary: r.summary(tail),
        conversation: r.conversation(tail),
        messages: r.messages(tail, false),
        history: r.messages(tail, true),
    }
}

/// The bytes of a layout against the file.
fn bytes_of(layout: &PieceLayout, file: &[u8]) -> Vec<u8> {
    let pieces: Vec<Piece> = layout.parts().map(|(_, p)| p.to_piece()).collect();
    render(&pieces, file)
}

/// How a step's update came.
#[derive(Default, Debug)]
struct Counts {
    grown: usize,
    whole: usize,
}

/// Writes `file` in `steps` (its lengths after each write, increasing), one reader
/// following it; after each write checks the update against a fresh reader.
fn follow(agent: Agent, name: &str, file: &[u8], steps: &[usize]) -> Counts {
    let mut r = reader_for(agent, name);
    let mut consumed = 0u64;
    let mut mark = None;
    let mut conversation: Vec<MessagePieces> = Vec::new();
    let mut layout = PieceLayout::conversation(Vec::new());
    let mut counts = Counts::default();
    for &end in steps {
        let now = &file[..end];
        consumed += r.feed(consumed, &now[consumed as usize..]);
        let tail = &now[consumed as usize..];
        let (summary, update, next) = r.summary_and_conversation_since(tail, mark);
        let want = fresh(agent, name, now);
        let at = || {
            format!(
                "{agent:?} after {end} bytes:\n{}",
                String::from_utf8_lossy(now)
            )
        };
        match &update {
            ConversationUpdate::Grown(new) => {
                assert!(mark.is_some(), "grown without a mark: {}", at());
                counts.grown += 1;
                layout = layout.grown(new.clone()).expect("a conversation layout");
            }
            ConversationUpdate::Whole(all) => {
                counts.whole += 1;
                layout = PieceLayout::conversation(all.clone());
            }
        }
        conversation = update.apply(&conversation);
        mark = next;
        assert_eq!(summary, want.summary, "summary, {}", at());
        assert_eq!(conversation, want.conversation, "conversation, {}", at());
        let full = PieceLayout::conversation(want.conversation.clone());
        assert_eq!(
            bytes_of(&layout, now),
            bytes_of(&full, now),
            "bytes, {}",
            at()
        );
        assert_eq!(layout, full, "layout, {}", at());
        assert_eq!(layout.size(), full.size(), "size, {}", at());
        // The other ways in give the same as a fresh reader too.
        let (again, _) = r.conversation_since(tail, None);
        assert_eq!(
            again.apply(&[]),
            want.conversation,
            "conversation, {}",
            at()
        );
        assert_eq!(r.summary(tail), want.summary, "summary(), {}", at());
        assert_eq!(r.messages(tail, false), want.messages, "messages, {}", at());
        assert_eq!(r.messages(tail, true), want.history, "history, {}", at());
    }
    counts
}

/// How a line is written: whole, in two writes (a reader sees it torn), or with
/// the next one (a reader sees both at once).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Write {
    Whole,
    Torn,
    WithNext,
}

fn writes(n: usize) -> impl Strategy<Value = Vec<Write>> {
    proptest::collection::vec(
        prop_oneof![5 => Just(Write::Whole), 1 => Just(Write::Torn), 1 => Just(Write::WithNext)],
        n,
    )
}

/// The file's length after each write (`how[k]` for line `k`, whole when missing).
fn steps_of(file: &[u8], how: &[Write]) -> Vec<usize> {
    let mut steps = Vec::new();
    let mut start = 0;
    for (k, nl) in memchr::memchr_iter(b'\n', file).enumerate() {
        match how.get(k).copied().unwrap_or(Write::Whole) {
            Write::Torn if nl > start + 1 => steps.push(start + (nl - start) / 2),
            Write::WithNext if nl + 1 < file.len() => {
                start = nl + 1;
                continue;
            }
            _ => {}
        }
        steps.push(nl + 1);
        start = nl + 1;
    }
    steps
}

// ---------------------------------------------------------------------------
// Claude Code
// ---------------------------------------------------------------------------

/// A Claude Code file made from random choices: each op is (kind, parent, flags, a, b).
fn claude_file(ops: &[(u8, u8, u8, u8, u8)]) -> Vec<u8> {
    let mut out = String::new();
    let mut uuids: Vec<String> = Vec::new();
    let mut last: Option<String> = None;
    let mut assistants: Vec<String> = Vec::new();
    let mut mids: Vec<String> = vec!["msg_0".into()];
    let mut calls: Vec<String> = Vec::new();
    for (n, &(kind, parent_sel, flags, a, b)) in ops.iter().enumerate() {
        let pick =
            |v: &Vec<String>, x: u8| (!v.is_empty()).then(|| v[x as usize % v.len()].clone());
        let uuid = match flags % 13 {
            0 if !uuids.is_empty() => pick(&uuids, a).unwrap(),
            _ => format!("u{n:04}-0000-4000-8000-000000000000"),
        };
        let parent = match parent_sel % 10 {
            0..=6 => last.clone(),
            7 => pick(&uuids, b),
            8 => None,
            _ => Some(format!(
                "u{:04}-0000-4000-8000-000000000000",
                n + 1 + b as usize % 3
            )),
        };
        let parent_json = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let sidechain = flags % 11 == 1;
        let ts = format!(
            "2025-01-01T00:{:02}:{:02}.000Z",
            n / 60,
            (n % 60) / (1 + a as usize % 2)
        );
        let common = format!(
            "\"parentUuid\":{parent_json},\"isSidechain\":{sidechain},\"uuid\":\"{uuid}\",\"timestamp\":\"{ts}\",\"sessionId\":\"s\",\"cwd\":\"/p\""
        );
        let line = match kind % 17 {
            0..=3 => {
                let summary = if flags % 7 == 3 {
                    ",\"isCompactSummary\":true"
                } else {
                    ""
                };
                format!(
                    "{{\"type\":\"user\",{common}{summary},\"message\":{{\"role\":\"user\",\"content\":\"say {n}\"}}}}"
                )
            }
            4..=5 => {
                let call = match b % 4 {
                    2 | 3 => calls.last().cloned(),
                    _ => pick(&calls, a),
                };
                let call = call.unwrap_or_else(|| "toolu_x".into());
                let source = match b % 4 {
                    0 => String::new(),
                    1 => pick(&uuids, a)
                        .map(|u| format!(",\"sourceToolAssistantUUID\":\"{u}\""))
                        .unwrap_or_default(),
                    _ => assistants
                        .last()
                        .map(|u| format!(",\"sourceToolAssistantUUID\":\"{u}\""))
                        .unwrap_or_default(),
                };
                format!(
                    "{{\"type\":\"user\",{common}{source},\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"{call}\",\"content\":\"out {n}\"}}]}}}}"
                )
            }
            6..=9 => {
                let mid = match a % 8 {
                    0 | 1 => {
                        mids.push(format!("msg_{n}"));
                        mids.last().unwrap().clone()
                    }
                    2 => pick(&mids, b).unwrap(),
                    3 => String::new(),
                    _ => mids.last().unwrap().clone(),
                };
                let id = if mid.is_empty() {
                    String::new()
                } else {
                    format!("\"id\":\"{mid}\",")
                };
                let block = match b % 5 {
                    0 | 1 => {
                        let call = if b % 10 == 1 && !calls.is_empty() {
                            pick(&calls, a).unwrap()
                        } else {
                            calls.push(format!("toolu_{n}"));
                            calls.last().unwrap().clone()
                        };
                        format!(
                            "{{\"type\":\"tool_use\",\"id\":\"{call}\",\"name\":\"Bash\",\"input\":{{}}}}"
                        )
                    }
                    2 => format!("{{\"type\":\"thinking\",\"thinking\":\"hm {n}\"}}"),
                    _ => format!("{{\"type\":\"text\",\"text\":\"answer {n}\"}}"),
                };
                assistants.push(uuid.clone());
                format!(
                    "{{\"type\":\"assistant\",{common},\"message\":{{{id}\"role\":\"assistant\",\"model\":\"m\",\"content\":[{block}]}}}}"
                )
            }
            10 => format!(
                "{{\"type\":\"progress\",{common},\"data\":{{\"type\":\"hook_progress\"}}}}"
            ),
            11 => format!(
                "{{\"type\":\"system\",\"subtype\":\"turn_duration\",{common},\"durationMs\":5}}"
            ),
            12 => format!(
                "{{\"type\":\"attachment\",{common},\"attachment\":{{\"type\":\"x\",\"rendered\":[{{\"content\":\"att {n}\"}}]}}}}"
            ),
            13 => format!(
                "{{\"type\":\"system\",\"subtype\":\"local_command\",{common},\"content\":\"<command-name>/x</command-name>\"}}"
            ),
            14 => {
                // A compaction: a boundary with no parent, partial ones naming kept
                // entries, then the chain goes on from it.
                let preserved = match b % 3 {
                    0 => String::new(),
                    _ => {
                        // Entries written before, and now and then ones still to come.
                        let future =
                            |k: usize| format!("u{:04}-0000-4000-8000-000000000000", n + 1 + k);
                        let anchor = match a % 5 {
                            0 => future(1),
                            _ => pick(&uuids, a).unwrap_or_default(),
                        };
                        let kept: Vec<String> = (0..1 + b as usize % 3)
                            .filter_map(|k| match (a as usize + k) % 4 {
                                0 => Some(future(k)),
                                _ => pick(&uuids, a.wrapping_add(k as u8 * 7)),
                            })
                            .map(|u| format!("\"{u}\""))
                            .collect();
                        format!(
                            ",\"compactMetadata\":{{\"trigger\":\"auto\",\"preservedMessages\":{{\"anchorUuid\":\"{anchor}\",\"uuids\":[{}]}}}}",
                            kept.join(",")
                        )
                    }
                };
                let common = common.replacen(
                    &format!("\"parentUuid\":{parent_json}"),
                    "\"parentUuid\":null",
                    1,
                );
                format!(
                    "{{\"type\":\"system\",\"subtype\":\"compact_boundary\",{common},\"content\":\"Conversation compacted\"{preserved}}}"
                )
            }
            15 => match a % 4 {
                0 => "{\"type\":\"last-prompt\",\"lastPrompt\":\"p\",\"sessionId\":\"s\"}".into(),
                1 => "{\"type\":\"ai-title\",\"aiTitle\":\"t\",\"sessionId\":\"s\"}".into(),
                2 => "{\"type\":\"user\",\"broken".into(),
                _ => String::new(),
            },
            _ => format!(
                "{{\"type\":\"assistant\",{common},\"agentId\":\"ag\",\"message\":{{\"id\":\"{}\",\"role\":\"assistant\",\"content\":\"side {n}\"}}}}",
                mids.last().unwrap()
            ),
        };
        out.push_str(&line);
        out.push('\n');
        if line.contains("\"uuid\"") && !line.contains("\"broken") {
            if !uuids.contains(&uuid) {
                uuids.push(uuid.clone());
            }
            last = Some(uuid);
        }
    }
    out.into_bytes()
}

const CLAUDE_NAME: &str = "0b5e8d16-1f0e-4a4b-9a55-2d7a4c7e6f10.jsonl";

/// A turn as Claude Code writes it: a prompt, an assistant response in several
/// entries sharing its id (thinking, tool calls), results, progress lines, the
/// closing system line, all chained.
fn claude_turns(turns: usize) -> Vec<(u8, u8, u8, u8, u8)> {
    let mut ops = Vec::new();
    for t in 0..turns {
        ops.push((0, 0, 2, 0, 0)); // user prompt, on the last entry
        ops.push((6, 0, 2, 0, 2)); // assistant thinking, a new response
        for _ in 0..(t % 3) {
            ops.push((7, 0, 2, 4, 0)); // tool call, same response
            ops.push((4, 0, 2, 4, 2)); // its result
            ops.push((10, 0, 2, 0, 0)); // progress
        }
        ops.push((8, 0, 2, 4, 3)); // the answer
        ops.push((11, 0, 2, 0, 0)); // turn_duration
        ops.push((15, 0, 2, 0, 0)); // last-prompt (no entry)
    }
    ops
}

#[test]
fn claude_appends_that_extend_the_chain_are_growth() {
    let file = claude_file(&claude_turns(12));
    let steps = steps_of(&file, &[]);
    let counts = follow(Agent::Claude, CLAUDE_NAME, &file, &steps);
    // The first read is whole, and so is the first append: a reader makes what
    // growth needs once it sees its file grow. Every later append extends the chain.
    assert_eq!(counts.whole, 2, "{counts:?}");
    assert_eq!(counts.grown, steps.len() - 2);
}

/// A reader restored from its saved state (the daemon follows a large file that
/// way) takes the very next append in as growth, equal to a fresh read.
#[test]
fn claude_restored_reader_grows_at_the_next_append() {
    let file = claude_file(&claude_turns(6));
    // Before the last turn's answer (then its closing lines).
    let ends: Vec<usize> = memchr::memchr_iter(b'\n', &file).map(|i| i + 1).collect();
    let cut = ends[ends.len() - 4];
    let mut r = reader_for(Agent::Claude, CLAUDE_NAME);
    let consumed = r.feed(0, &file[..cut]);
    assert_eq!(consumed as usize, cut);
    let state = r
        .save_state()
        .expect("a Claude Code reader saves its state");
    let mut r = reader_for(Agent::Claude, CLAUDE_NAME);
    assert!(r.restore_state(&state));
    let (before, mark) = r.conversation_since(&[], None);
    assert!(matches!(before, ConversationUpdate::Whole(_)));
    r.feed(consumed, &file[cut..]);
    let (update, _) = r.conversation_since(&[], mark);
    let ConversationUpdate::Grown(new) = &update else {
        panic!("the append after a restore was computed whole")
    };
    assert!(!new.is_empty());
    let all = update.apply(before.messages());
    assert_eq!(all, fresh(Agent::Claude, CLAUDE_NAME, &file).conversation);
}

#[test]
fn claude_torn_lines_and_a_branch_are_checked() {
    let mut ops = claude_turns(4);
    ops.push((0, 7, 2, 0, 1)); // a prompt on an earlier entry: a branch
    ops.extend(claude_turns(2));
    let file = claude_file(&ops);
    let how: Vec<Write> = (0..ops.len())
        .map(|k| [Write::Whole, Write::Torn, Write::WithNext][k % 3])
        .collect();
    let counts = follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &how));
    assert!(counts.whole >= 2, "{counts:?}");
}

fn ops() -> impl Strategy<Value = Vec<(u8, u8, u8, u8, u8)>> {
    proptest::collection::vec(any::<(u8, u8, u8, u8, u8)>(), 0..48)
}

/// Mostly the common case (the last entry as parent, no repeated uuid), so that
/// long runs of growth meet the rare lines.
fn mostly_linear() -> impl Strategy<Value = Vec<(u8, u8, u8, u8, u8)>> {
    proptest::collection::vec(
        (
            any::<u8>(),
            prop_oneof![9 => Just(0u8), 1 => any::<u8>()],
            prop_oneof![9 => Just(2u8), 1 => any::<u8>()],
            any::<u8>(),
            any::<u8>(),
        ),
        0..64,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn claude_growth_equals_the_full_chain(ops in ops(), how in writes(48)) {
        let file = claude_file(&ops);
        follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &how));
    }

    #[test]
    fn claude_growth_equals_the_full_chain_mostly_linear(ops in mostly_linear(), how in writes(64)) {
        let file = claude_file(&ops);
        follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &how));
    }
}

// ---------------------------------------------------------------------------
// pi (and OpenClaw, which writes pi's format)
// ---------------------------------------------------------------------------

/// A pi file from random choices (version 3, or version 1 without ids when `v1`).
fn pi_file(ops: &[(u8, u8, u8, u8, u8)], v1: bool) -> Vec<u8> {
    let mut out = if v1 {
        "{\"type\":\"session\",\"id\":\"s1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n".to_string()
    } else {
        "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n".to_string()
    };
    let mut ids: Vec<String> = Vec::new();
    let mut last: Option<String> = None;
    for (n, &(kind, parent_sel, flags, a, b)) in ops.iter().enumerate() {
        let pick = |x: u8| (!ids.is_empty()).then(|| ids[x as usize % ids.len()].clone());
        let id = match flags % 13 {
            0 if !ids.is_empty() => pick(a).unwrap(),
            _ => format!("e{n}"),
        };
        let parent = match parent_sel % 10 {
            0..=6 => last.clone(),
            7 => pick(b),
            8 => None,
            _ => Some(format!("e{}", n + 1 + b as usize % 2)),
        };
        let link = if v1 {
            String::new()
        } else {
            let p = parent.map_or("null".into(), |p| format!("\"{p}\""));
            format!("\"id\":\"{id}\",\"parentId\":{p},")
        };
        let ts = format!(
            "\"timestamp\":\"2025-01-01T00:{:02}:{:02}.000Z\"",
            n / 60,
            n % 60
        );
        let line = match kind % 12 {
            0..=5 => {
                let role = [
                    "user",
                    "assistant",
                    "toolResult",
                    "user",
                    "assistant",
                    "hookMessage",
                ][kind as usize % 6];
                format!(
                    "{{\"type\":\"message\",{link}{ts},\"message\":{{\"role\":\"{role}\",\"content\":\"m{n}\",\"timestamp\":{n}}}}}"
                )
            }
            6 => {
                let kept = if v1 {
                    format!("\"firstKeptEntryIndex\":{}", a % 8)
                } else {
                    format!("\"firstKeptEntryId\":\"{}\"", pick(a).unwrap_or_default())
                };
                format!(
                    "{{\"type\":\"compaction\",{link}{ts},\"summary\":\"sum {n}\",{kept},\"tokensBefore\":9}}"
                )
            }
            7 => {
                let summary = if b % 4 == 0 { "" } else { "left" };
                format!(
                    "{{\"type\":\"branch_summary\",{link}{ts},\"fromId\":\"e0\",\"summary\":\"{summary}\"}}"
                )
            }
            8 => format!(
                "{{\"type\":\"custom_message\",{link}{ts},\"customType\":\"t\",\"content\":\"c{n}\",\"display\":true}}"
            ),
            9 => format!("{{\"type\":\"session_info\",{link}{ts},\"name\":\"title {n}\"}}"),
            10 => format!(
                "{{\"type\":\"model_change\",{link}{ts},\"provider\":\"x\",\"modelId\":\"m\"}}"
            ),
            _ => match a % 6 {
                0 => "not json".into(),
                1 => "null".into(),
                2 => "7".into(),
                3 => format!("{{\"type\":\"message\",{link}{ts},\"message\":null}}"),
                4 => "[1]".into(),
                _ => String::new(),
            },
        };
        out.push_str(&line);
        out.push('\n');
        if line.starts_with("{\"type\"") {
            if !ids.contains(&id) {
                ids.push(id.clone());
            }
            last = Some(id);
        }
    }
    out.into_bytes()
}

#[test]
fn pi_appends_on_the_leaf_are_growth() {
    let ops: Vec<_> = (0..40u8).map(|k| (k % 6, 0, 2, 0, 0)).collect();
    for v1 in [false, true] {
        let file = pi_file(&ops, v1);
        let steps = steps_of(&file, &[]);
        let counts = follow(Agent::Pi, "p.jsonl", &file, &steps);
        assert_eq!(counts.whole, 1, "v1 {v1}: {counts:?}");
    }
}

// ---------------------------------------------------------------------------
// Codex
// ---------------------------------------------------------------------------

const CODEX_META: &str = r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"11111111-1111-4111-8111-111111111111","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.0.0-test","source":"cli","model_provider":"synthetic"}}"#;

fn codex_item(kind: u8, n: usize) -> String {
    match kind % 7 {
        0 => format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"ask {n}"}}]}}"#
        ),
        1 => format!(
            r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"say {n}"}}]}}"#
        ),
        2 => format!(
            r#"{{"type":"message","role":"developer","content":[{{"type":"input_text","text":"<permissions instructions>{n}"}}]}}"#
        ),
        3 => format!(
            r#"{{"type":"reasoning","summary":[{{"type":"summary_text","text":"think {n}"}}],"encrypted_content":"x"}}"#
        ),
        4 => format!(
            r#"{{"type":"function_call","name":"exec","arguments":"{{}}","call_id":"c{n}"}}"#
        ),
        5 => format!(r#"{{"type":"function_call_output","call_id":"c{n}","output":"out {n}"}}"#),
        _ => format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"<environment_context>{n}</environment_context>"}}]}}"#
        ),
    }
}

fn codex_file(ops: &[(u8, u8, u8, u8, u8)], meta: bool) -> Vec<u8> {
    let mut out = String::new();
    if meta {
        out.push_str(CODEX_META);
        out.push('\n');
    }
    for (n, &(kind, _, _, a, b)) in ops.iter().enumerate() {
        let ts = format!("2026-01-02T03:{:02}:{:02}.000Z", n / 60, n % 60);
        let line = |ty: &str, payload: String| {
            format!(r#"{{"timestamp":"{ts}","type":"{ty}","payload":{payload}}}"#)
        };
        let text = match kind % 12 {
            0..=6 => line("response_item", codex_item(kind, n)),
            7 => line(
                "turn_context",
                format!(
                    r#"{{"cwd":"/w","model":"m{}","approval_policy":"never","sandbox_policy":{{"type":"read-only"}},"summary":"auto"}}"#,
                    a % 3
                ),
            ),
            8 => line(
                "event_msg",
                format!(r#"{{"type":"user_message","message":"ask {n}"}}"#),
            ),
            9 => line(
                "event_msg",
                format!(r#"{{"type":"thread_rolled_back","num_turns":{}}}"#, a % 3),
            ),
            10 => match b % 2 {
                0 => {
                    let items: Vec<String> = (0..1 + a as usize % 3)
                        .map(|k| codex_item((k as u8).wrapping_add(a), n))
                        .collect();
                    line(
                        "compacted",
                        format!(
                            r#"{{"message":"","replacement_history":[{}]}}"#,
                            items.join(",")
                        ),
                    )
                }
                _ => line("compacted", format!(r#"{{"message":"summary {n}"}}"#)),
            },
            _ => match a % 3 {
                0 => line("event_msg", r#"{"type":"token_count","info":null}"#.into()),
                1 => "{\"timestamp\":\"x\",\"broken".into(),
                _ => String::new(),
            },
        };
        out.push_str(&text);
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn codex_appended_items_are_growth() {
    let ops: Vec<_> = (0..40u8).map(|k| (k % 7, 0, 0, 0, 0)).collect();
    let file = codex_file(&ops, true);
    let counts = follow(Agent::Codex, "r.jsonl", &file, &steps_of(&file, &[]));
    assert_eq!(counts.whole, 1, "{counts:?}");
}

// ---------------------------------------------------------------------------
// Gemini CLI (.jsonl)
// ---------------------------------------------------------------------------

const GEMINI_META: &str = r#"{"sessionId":"g1","projectHash":"abc","startTime":"2026-04-29T21:39:22.319Z","lastUpdated":"2026-04-29T21:39:22.319Z","kind":"main"}"#;

fn gemini_record(kind: u8, id: &str, n: usize) -> String {
    let ts = format!("2026-04-29T21:{:02}:{:02}.000Z", n / 60, n % 60);
    match kind % 6 {
        0 | 1 => format!(
            r#"{{"id":"{id}","timestamp":"{ts}","type":"user","content":[{{"text":"ask {n}"}}]}}"#
        ),
        2 => format!(
            r#"{{"id":"{id}","timestamp":"{ts}","type":"gemini","content":"say {n}","model":"gm"}}"#
        ),
        3 => format!(
            r#"{{"id":"{id}","timestamp":"{ts}","type":"gemini","content":"","model":"gm","toolCalls":[{{"id":"t{n}","name":"run","args":{{}},"result":[{{"functionResponse":{{"id":"t{n}","name":"run","response":{{"output":"o{n}"}}}}}}],"status":"success"}}]}}"#
        ),
        4 => format!(r#"{{"id":"{id}","timestamp":"{ts}","type":"info","content":"note {n}"}}"#),
        _ => format!(r#"{{"id":"{id}","timestamp":"{ts}","type":"gemini","content":[null]}}"#),
    }
}

fn gemini_file(ops: &[(u8, u8, u8, u8, u8)], meta: bool) -> Vec<u8> {
    let mut out = String::new();
    if meta {
        out.push_str(GEMINI_META);
        out.push('\n');
    }
    let mut ids: Vec<String> = Vec::new();
    for (n, &(kind, _, flags, a, b)) in ops.iter().enumerate() {
        let pick = |x: u8| (!ids.is_empty()).then(|| ids[x as usize % ids.len()].clone());
        let id = match flags % 11 {
            0 if !ids.is_empty() => pick(a).unwrap(),
            _ => format!("m{n}"),
        };
        let line = match kind % 10 {
            0..=4 => {
                // Mostly messages that convert (the null part only now and then).
                let k = if kind % 5 == 4 && b % 4 != 0 {
                    2
                } else {
                    kind % 5 + b % 2
                };
                gemini_record(k, &id, n)
            }
            5 => format!(
                r#"{{"$rewindTo":"{}"}}"#,
                pick(a).unwrap_or_else(|| "nope".into())
            ),
            6 => format!(
                r#"{{"$set":{{"lastUpdated":"2026-04-29T22:00:{:02}.000Z"}}}}"#,
                n % 60
            ),
            7 => format!(
                r#"{{"$set":{{"messages":[{}]}}}}"#,
                gemini_record(a, &format!("s{n}"), n)
            ),
            8 => match a % 3 {
                0 => format!(
                    r#"{{"sessionId":"g1","projectHash":"abc","kind":"{}"}}"#,
                    if b % 5 == 0 { "subagent" } else { "main" }
                ),
                1 => "{\"id\":\"broken".into(),
                _ => String::new(),
            },
            _ => gemini_record(2, &id, n),
        };
        out.push_str(&line);
        out.push('\n');
        if line.starts_with("{\"id\":\"") && !line.contains("broken") && !ids.contains(&id) {
            ids.push(id);
        }
    }
    out.into_bytes()
}

const GEMINI_NAME: &str = "session-2026-04-29T21-39-g1.jsonl";

#[test]
fn gemini_new_messages_are_growth() {
    let ops: Vec<_> = (0..30u8).map(|k| (k % 4, 0, 1, 0, 0)).collect();
    let file = gemini_file(&ops, true);
    let counts = follow(Agent::Gemini, GEMINI_NAME, &file, &steps_of(&file, &[]));
    assert_eq!(counts.whole, 1, "{counts:?}");
}

// ---------------------------------------------------------------------------
// Copilot CLI
// ---------------------------------------------------------------------------

const COPILOT_START: &str = r#"{"type":"session.start","data":{"sessionId":"c1","version":1,"startTime":"2025-12-18T21:32:04.182Z","context":{"cwd":"/w"}},"id":"e0","timestamp":"2025-12-18T21:32:05.000Z","parentId":null}"#;

fn copilot_file(ops: &[(u8, u8, u8, u8, u8)], start: bool) -> Vec<u8> {
    let mut out = String::new();
    if start {
        out.push_str(COPILOT_START);
        out.push('\n');
    }
    for (n, &(kind, _, flags, a, b)) in ops.iter().enumerate() {
        let id = if flags % 13 == 0 {
            format!("e{}", a % 8)
        } else {
            format!("e{}", n + 1)
        };
        let ev = |ty: &str, data: String| {
            format!(
                r#"{{"type":"{ty}","data":{data},"id":"{id}","timestamp":"2025-12-18T21:{:02}:{:02}.000Z","parentId":null}}"#,
                n / 60,
                n % 60
            )
        };
        let line = match kind % 14 {
            0..=2 => ev("user.message", format!(r#"{{"content":"ask {n}"}}"#)),
            3..=5 => ev(
                "assistant.message",
                format!(r#"{{"content":"say {n}","messageId":"m{n}"}}"#),
            ),
            6 | 7 => ev(
                "tool.execution_complete",
                format!(r#"{{"toolCallId":"c{n}","success":true}}"#),
            ),
            8 => ev(
                "session.compaction_complete",
                match b % 3 {
                    0 => r#"{"success":true,"summaryContent":"sum"}"#.into(),
                    1 => r#"{"success":false}"#.into(),
                    _ => "{}".into(),
                },
            ),
            9 => ev(
                "session.truncation",
                format!(r#"{{"messagesRemovedDuringTruncation":{}}}"#, a % 4),
            ),
            10 => ev(
                "session.context_cleared",
                if b % 2 == 0 {
                    r#"{"initialMessage":"again"}"#.into()
                } else {
                    "{}".into()
                },
            ),
            11 => ev(
                "session.snapshot_rewind",
                format!(r#"{{"upToEventId":"e{}"}}"#, a as usize % (n + 2)),
            ),
            12 => match a % 3 {
                0 => ev(
                    "assistant.message",
                    r#"{"content":"sub","parentToolCallId":"c1"}"#.into(),
                ),
                1 => ev("assistant.turn_start", r#"{"turnId":"t"}"#.into()),
                _ => "{\"type\":\"user.mess".into(),
            },
            _ => ev("session.info", r#"{"infoType":"x","message":"m"}"#.into()),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn copilot_new_message_events_are_growth() {
    let ops: Vec<_> = (0..30u8).map(|k| (k % 8, 0, 1, 0, 0)).collect();
    let file = copilot_file(&ops, true);
    let counts = follow(Agent::Copilot, "events.jsonl", &file, &steps_of(&file, &[]));
    assert_eq!(counts.whole, 1, "{counts:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn pi_growth_equals_the_full_context(ops in ops(), v1 in prop_oneof![4 => Just(false), 1 => Just(true)], how in writes(48)) {
        let file = pi_file(&ops, v1);
        follow(Agent::Pi, "p.jsonl", &file, &steps_of(&file, &how));
    }

    #[test]
    fn pi_growth_mostly_linear(ops in mostly_linear(), how in writes(64)) {
        let file = pi_file(&ops, false);
        follow(Agent::Pi, "p.jsonl", &file, &steps_of(&file, &how));
    }

    #[test]
    fn codex_growth_equals_the_full_history(ops in ops(), meta in prop_oneof![9 => Just(true), 1 => Just(false)], how in writes(48)) {
        let file = codex_file(&ops, meta);
        follow(Agent::Codex, "r.jsonl", &file, &steps_of(&file, &how));
    }

    #[test]
    fn gemini_growth_equals_the_full_replay(ops in ops(), meta in prop_oneof![9 => Just(true), 1 => Just(false)], how in writes(48)) {
        let file = gemini_file(&ops, meta);
        follow(Agent::Gemini, GEMINI_NAME, &file, &steps_of(&file, &how));
    }

    #[test]
    fn copilot_growth_equals_the_full_rebuild(ops in ops(), start in prop_oneof![9 => Just(true), 1 => Just(false)], how in writes(48)) {
        let file = copilot_file(&ops, start);
        follow(Agent::Copilot, "events.jsonl", &file, &steps_of(&file, &how));
    }
}

// ---------------------------------------------------------------------------
// The agents' own files
// ---------------------------------------------------------------------------

/// The session files the agents themselves wrote (the shared fixtures, and Gemini
/// CLI's writes while resuming) for the readers that follow appends.
fn agent_files() -> Vec<(Agent, std::path::PathBuf)> {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../shared/agent-fixtures");
    let mut out = Vec::new();
    for (agent, dir) in [
        (Agent::Claude, root.join("claude")),
        (Agent::Codex, root.join("codex")),
        (Agent::Gemini, root.join("gemini")),
        (Agent::Copilot, root.join("copilot")),
        (Agent::Openclaw, root.join("openclaw")),
        (Agent::Gemini, manifest.join("tests/gemini/recorded")),
    ] {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push((agent, p));
                }
            }
        }
    }
    out.sort();
    out
}

/// What the agents wrote, followed as they wrote it (a line at a time, in the
/// largest files a few lines at a time, every third write torn): the grown
/// conversation and layout equal a fresh reader's after every write, and most
/// writes are taken in as growth. (A torn write is given whole: the tail is read on
/// a copy. So is every line of Claude Code 1.0's inline sidechains, its Task
/// subagents, which the growth rules refuse.)
#[test]
fn the_agents_own_files_grow_as_a_fresh_read() {
    let files = agent_files();
    assert!(files.len() > 30, "{}", files.len());
    let mut total = Counts::default();
    for (agent, path) in &files {
        let file = std::fs::read(path).unwrap();
        let lines = memchr::memchr_iter(b'\n', &file).count();
        // Each step is checked against a fresh read: at most ~24 steps per file.
        let every = lines / 24 + 1;
        let how: Vec<Write> = (0..lines)
            .map(|k| match (k % every, (k / every) % 3) {
                (0, 0) => Write::Torn,
                (0, _) => Write::Whole,
                _ => Write::WithNext,
            })
            .collect();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let counts = follow(*agent, &name, &file, &steps_of(&file, &how));
        total.grown += counts.grown;
        total.whole += counts.whole;
    }
    assert!(total.grown > total.whole, "{total:?}");
}

/// Qwen Code's and Factory Droid's own files (recorded from their real runs),
/// followed as written, a line at a time with every third write torn: after every
/// write the reader, fed only the bytes added since, gives what a fresh reader of the
/// whole file gives. (Their conversations are computed whole at each append, not
/// grown: `docs/performance.md`, AR3.)
#[test]
fn qwen_and_droid_files_followed_as_a_fresh_read() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for (agent, dir) in [
        (Agent::Qwen, manifest.join("tests/fixtures/qwen")),
        (Agent::Droid, manifest.join("tests/fixtures/droid")),
    ] {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push((agent, p));
                }
            }
        }
    }
    files.sort();
    assert!(
        files.iter().filter(|(a, _)| *a == Agent::Qwen).count() >= 2
            && files.iter().filter(|(a, _)| *a == Agent::Droid).count() >= 2,
        "{files:?}"
    );
    for (agent, path) in &files {
        let file = std::fs::read(path).unwrap();
        let lines = memchr::memchr_iter(b'\n', &file).count();
        assert!(lines >= 3, "{}", path.display());
        let how: Vec<Write> = (0..lines)
            .map(|k| {
                if k % 3 == 1 {
                    Write::Torn
                } else {
                    Write::Whole
                }
            })
            .collect();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let steps = steps_of(&file, &how);
        assert!(steps.len() >= lines, "{}", path.display());
        follow(*agent, &name, &file, &steps);
    }
}
