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
    let pieces: Vec<Piece> = layout.parts().map(|(_, p)| p.clone()).collect();
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

/// Every line end as a step, and with `torn` also the middle of the lines it marks.
fn steps_of(file: &[u8], torn: &[bool]) -> Vec<usize> {
    let mut steps = Vec::new();
    let mut start = 0;
    for (k, nl) in memchr::memchr_iter(b'\n', file).enumerate() {
        if torn.get(k).copied().unwrap_or(false) && nl > start + 1 {
            steps.push(start + (nl - start) / 2);
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
    // Only the first read is whole: every later append extends the chain.
    assert_eq!(counts.whole, 1, "{counts:?}");
    assert_eq!(counts.grown, steps.len() - 1);
}

#[test]
fn claude_torn_lines_and_a_branch_are_checked() {
    let mut ops = claude_turns(4);
    ops.push((0, 7, 2, 0, 1)); // a prompt on an earlier entry: a branch
    ops.extend(claude_turns(2));
    let file = claude_file(&ops);
    let torn: Vec<bool> = (0..ops.len()).map(|k| k % 3 == 1).collect();
    let counts = follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &torn));
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
    fn claude_growth_equals_the_full_chain(ops in ops(), torn in proptest::collection::vec(any::<bool>(), 48)) {
        let file = claude_file(&ops);
        follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &torn));
    }

    #[test]
    fn claude_growth_equals_the_full_chain_mostly_linear(ops in mostly_linear(), torn in proptest::collection::vec(prop_oneof![7 => Just(false), 1 => Just(true)], 64)) {
        let file = claude_file(&ops);
        follow(Agent::Claude, CLAUDE_NAME, &file, &steps_of(&file, &torn));
    }
}
