//! Neutral messages from every source's messages: each agent's `to_neutral` over every
//! public fixture (Claude Code, Codex) and pi's own sessions, the readers' `messages`
//! (the conversation with entry ids and times, and the whole history), and a property:
//! `to_neutral` never panics, whatever JSON it is given.

use fen_fs::agent::Agent;
use fen_fs::neutral::{Message, Part, Role};
use fen_fs::sources::agents::{reader_for, to_neutral};
use fen_fs::sources::foreign::{ForeignReader, MessageRef, feed_all, render_message};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

fn jsonl_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            jsonl_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Every session file of `agent` among the fixtures (by the agent's own file rule).
fn fixture_files(agent: Agent) -> Vec<PathBuf> {
    let dir = fixtures().join(agent.name());
    let mut v = Vec::new();
    jsonl_under(&dir, &mut v);
    v.sort();
    assert!(v.len() >= 10, "fixtures not found under {}", dir.display());
    v
}

/// A reader fed the whole file, and its unterminated tail.
fn read(agent: Agent, path: &Path, bytes: &[u8]) -> (Box<dyn ForeignReader>, Vec<u8>) {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut r = reader_for(agent, &name);
    let tail = feed_all(r.as_mut(), bytes).to_vec();
    (r, tail)
}

fn value_of(pieces: &[fen_fs::sources::foreign::Piece], bytes: &[u8]) -> Value {
    let text = render_message(pieces, bytes);
    serde_json::from_slice(&text)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&text)))
}

/// The conversation's messages as neutral values.
fn neutral_conversation(agent: Agent, path: &Path) -> (Vec<Value>, Vec<Message>) {
    let bytes = std::fs::read(path).unwrap();
    let (r, tail) = read(agent, path, &bytes);
    let values: Vec<Value> = r
        .conversation(&tail)
        .iter()
        .map(|m| value_of(m, &bytes))
        .collect();
    let msgs = values
        .iter()
        .map(|v| to_neutral(agent, v).unwrap_or_else(|| panic!("no message for {v}")))
        .collect();
    (values, msgs)
}

/// Counts of what the stored JSON holds, to compare with the neutral parts.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    calls: usize,
    results: usize,
    reasoning: usize,
    images: usize,
}

fn count_parts(msgs: &[Message]) -> Counts {
    let mut c = Counts::default();
    for m in msgs {
        for p in &m.parts {
            match p {
                Part::ToolCall { .. } => c.calls += 1,
                Part::ToolResult { content, .. } => {
                    c.results += 1;
                    c.images += content
                        .iter()
                        .filter(|p| matches!(p, Part::Image { .. }))
                        .count();
                }
                Part::Reasoning { .. } => c.reasoning += 1,
                Part::Image { .. } => c.images += 1,
                _ => {}
            }
        }
    }
    c
}

fn count_blocks(values: &[Value], call: &[&str], result: &[&str], reasoning: &[&str]) -> Counts {
    let mut c = Counts::default();
    fn walk(v: &Value, c: &mut Counts, call: &[&str], result: &[&str], reasoning: &[&str]) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, c, call, result, reasoning)),
            Value::Object(o) => {
                let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
                if call.contains(&ty) {
                    c.calls += 1;
                } else if result.contains(&ty) {
                    c.results += 1;
                } else if reasoning.contains(&ty) {
                    c.reasoning += 1;
                } else if ty == "image" || ty == "input_image" {
                    c.images += 1;
                }
                if let Some(content) = o.get("content") {
                    walk(content, c, call, result, reasoning);
                }
                if let Some(output) = o.get("output") {
                    walk(output, c, call, result, reasoning);
                }
            }
            _ => {}
        }
    }
    for v in values {
        walk(v, &mut c, call, result, reasoning);
    }
    c
}

#[test]
fn claude_fixtures_convert_block_for_block() {
    let mut seen = Counts::default();
    let (mut injected, mut summaries) = (0, 0);
    for path in fixture_files(Agent::Claude) {
        let (values, msgs) = neutral_conversation(Agent::Claude, &path);
        let want = count_blocks(
            &values,
            &["tool_use"],
            &["tool_result"],
            &["thinking", "redacted_thinking"],
        );
        let got = count_parts(&msgs);
        assert_eq!(got, want, "{}", path.display());
        for (v, m) in values.iter().zip(&msgs) {
            assert_eq!(m.role.name(), v["role"].as_str().unwrap(), "{v}");
            // Thinking keeps its block, byte-for-byte as a value.
            for p in &m.parts {
                if let Part::Reasoning { opaque, .. } = p {
                    let o = opaque.as_ref().expect("Claude thinking keeps its block");
                    assert!(v["content"].as_array().unwrap().contains(o));
                }
            }
            let text = v["content"].as_str().unwrap_or("");
            if text.contains("<local-command-stdout>") || text.contains("<command-name>") {
                assert!(m.injected, "{v}");
            }
            injected += m.injected as usize;
            summaries += m.summary as usize;
        }
        seen.calls += got.calls;
        seen.results += got.results;
        seen.reasoning += got.reasoning;
    }
    assert!(
        seen.calls > 50 && seen.results > 50 && seen.reasoning > 5,
        "{seen:?}"
    );
    assert!(injected >= 10, "{injected}");
    assert!(summaries >= 3, "{summaries}");
}

#[test]
fn codex_fixtures_convert_item_for_item() {
    let mut seen = Counts::default();
    let (mut injected, mut system) = (0, 0);
    for path in fixture_files(Agent::Codex) {
        let (values, msgs) = neutral_conversation(Agent::Codex, &path);
        let want = count_blocks(
            &values,
            &[
                "function_call",
                "custom_tool_call",
                "local_shell_call",
                "tool_search_call",
            ],
            &[
                "function_call_output",
                "custom_tool_call_output",
                "tool_search_output",
            ],
            &["reasoning"],
        );
        let got = count_parts(&msgs);
        assert_eq!(got, want, "{}", path.display());
        for (v, m) in values.iter().zip(&msgs) {
            let role = v["role"].as_str().unwrap();
            match role {
                "developer" => {
                    assert_eq!(m.role, Role::System);
                    assert!(m.injected);
                    system += 1;
                }
                "tool" => assert!(
                    m.parts
                        .iter()
                        .all(|p| matches!(p, Part::ToolResult { .. } | Part::Other { .. }))
                ),
                _ => assert_eq!(m.role.name(), role),
            }
            let first = v["content"][0]["text"].as_str().unwrap_or("");
            if first.starts_with("<environment_context>") {
                assert!(m.injected, "{v}");
            }
            injected += m.injected as usize;
        }
        seen.calls += got.calls;
        seen.results += got.results;
        seen.reasoning += got.reasoning;
    }
    assert!(
        seen.calls > 100 && seen.results > 100 && seen.reasoning > 10,
        "{seen:?}"
    );
    // The fixtures' user texts are redacted: only developer messages are known context.
    assert!(injected >= system && system > 0, "{injected} {system}");
}

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

fn arb_json() -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(vec![
        "role",
        "content",
        "type",
        "text",
        "thinking",
        "signature",
        "thinkingSignature",
        "data",
        "source",
        "media_type",
        "url",
        "image_url",
        "tool_calls",
        "function",
        "arguments",
        "tool_call_id",
        "id",
        "call_id",
        "name",
        "input",
        "output",
        "summary",
        "tool_use_id",
        "is_error",
        "isError",
        "toolCallId",
        "toolName",
        "provider",
        "model",
        "api",
        "display",
        "excludeFromContext",
        "command",
        "exitCode",
        "encrypted_content",
        "action",
        "query",
        "mimeType",
        "timestamp",
        "redacted",
        "result",
        "tools",
        "status",
    ]);
    let words = prop::sample::select(vec![
        "user",
        "assistant",
        "tool",
        "system",
        "developer",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
        "text",
        "image",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "document",
        "server_tool_use",
        "web_search_tool_result",
        "toolCall",
        "input_text",
        "output_text",
        "input_image",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "reasoning",
        "web_search_call",
        "image_generation_call",
        "tool_search_output",
        "compaction",
        "summary_text",
        "base64",
        "url",
        "anthropic",
        "openai-codex",
        "google",
        "data:image/png;base64,AA",
        "data:",
        "{\"a\":",
        "<system-reminder>",
        "<environment_context>x</environment_context>",
        "The conversation before this point was compacted. Summary:\n\nx",
        "This session is being continued from a previous conversation that ran out of context.",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        words.prop_map(|w| json!(w)),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn to_neutral_never_panics(v in arb_json()) {
        let mut all = Vec::new();
        for agent in [Agent::Fen, Agent::Pi, Agent::Claude, Agent::Codex] {
            if let Some(m) = to_neutral(agent, &v) {
                let _ = m.plain_text();
                serde_json::to_string(&m).unwrap();
                all.push(m);
            }
            // The same value as a message's content.
            let _ = to_neutral(agent, &json!({"role": "assistant", "content": v.clone()}));
            let _ = to_neutral(agent, &json!({"role": "user", "content": [v.clone()]}));
        }
        fen_fs::neutral::fill_tool_names(&mut all);
    }
}

// ---------------------------------------------------------------------------
// pi, with sessions written by pi itself
// ---------------------------------------------------------------------------

/// pi's scenarios (tests/pi/oracle.mjs) written by pi's SessionManager into a temp
/// folder, by name; `None` (SKIPPED) without pi's package.
fn pi_sessions() -> Option<(tempfile::TempDir, Vec<(String, PathBuf)>)> {
    let pi_dir = std::env::var_os("FEN_FS_PI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pi-agent"));
    if !pi_dir
        .join("node_modules/@mariozechner/pi-coding-agent/package.json")
        .exists()
    {
        assert_ne!(
            std::env::var("FEN_FS_REQUIRE_PI").as_deref(),
            Ok("1"),
            "pi package not installed in {}",
            pi_dir.display()
        );
        eprintln!("SKIPPED: pi package not installed (run scripts/install-pi)");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    let out = std::process::Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi/oracle.mjs"))
        .args(["write", dir.to_str().unwrap(), "/proj/x"])
        .env("PI_DIR", &pi_dir)
        .env("HOME", tmp.path().join("home"))
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: serde_json::Map<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
    let files = files
        .into_iter()
        .map(|(k, v)| (k, PathBuf::from(v.as_str().unwrap())))
        .collect();
    Some((tmp, files))
}

#[test]
fn pi_sessions_convert_message_for_message() {
    let Some((_tmp, files)) = pi_sessions() else {
        return;
    };
    let mut roles = std::collections::BTreeMap::new();
    for (name, path) in &files {
        let (values, msgs) = neutral_conversation(Agent::Pi, path);
        for (v, m) in values.iter().zip(&msgs) {
            let role = v["role"].as_str().unwrap();
            *roles.entry(role.to_string()).or_insert(0) += 1;
            match role {
                "assistant" => {
                    let model = m.model.as_ref().expect("pi assistants name their model");
                    assert_eq!(model.model, v["model"].as_str().unwrap());
                    assert_eq!(model.provider.as_deref(), v["provider"].as_str());
                    let calls = v["content"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|b| b["type"] == "toolCall")
                        .count();
                    assert_eq!(count_parts(std::slice::from_ref(m)).calls, calls, "{name}");
                }
                "toolResult" => {
                    assert_eq!(m.role, Role::Tool);
                    assert!(
                        matches!(&m.parts[0], Part::ToolResult { name: Some(n), .. } if n == v["toolName"].as_str().unwrap())
                    );
                }
                "compactionSummary" => {
                    assert!(m.summary, "{name}");
                    assert_eq!(m.plain_text(), v["summary"].as_str().unwrap());
                }
                "custom" => assert_eq!(m.injected, v["display"] == false, "{name}"),
                _ => assert!(!m.summary && !m.injected, "{name}: {v}"),
            }
            // pi's message time, as ISO.
            assert!(m.timestamp.is_some(), "{name}: {v}");
        }
    }
    for r in [
        "user",
        "assistant",
        "toolResult",
        "compactionSummary",
        "branchSummary",
        "custom",
        "bashExecution",
    ] {
        assert!(roles.contains_key(r), "no {r} in pi's scenarios: {roles:?}");
    }
}

// ---------------------------------------------------------------------------
// ForeignReader::messages
// ---------------------------------------------------------------------------

/// `messages(false)` is exactly the conversation, each message with its entry and
/// time; `messages(true)` holds every one of them marked in the conversation, plus
/// the history left out. Returns (conversation, history) as rendered messages.
fn check_messages(agent: Agent, path: &Path) -> (Vec<String>, Vec<(String, bool)>) {
    let bytes = std::fs::read(path).unwrap();
    let (r, tail) = read(agent, path, &bytes);
    let render = |p: &[fen_fs::sources::foreign::Piece]| {
        String::from_utf8(render_message(p, &bytes)).unwrap()
    };
    let conversation: Vec<String> = r.conversation(&tail).iter().map(|m| render(m)).collect();
    let refs = r.messages(&tail, false);
    let got: Vec<String> = refs.iter().map(|m| render(&m.pieces)).collect();
    assert_eq!(got, conversation, "{}", path.display());
    for m in &refs {
        assert!(m.in_conversation);
        if agent != Agent::Pi || !path.to_string_lossy().contains("v1") {
            assert!(m.entry.is_some(), "{}: no entry id", path.display());
        }
    }
    let history = r.messages(&tail, true);
    let keyed = |m: &MessageRef| (m.entry.clone(), render(&m.pieces));
    let mut in_conv: Vec<_> = history
        .iter()
        .filter(|m| m.in_conversation)
        .map(keyed)
        .collect();
    let mut want: Vec<_> = refs.iter().map(keyed).collect();
    in_conv.sort();
    want.sort();
    assert_eq!(in_conv, want, "{}: history's conversation", path.display());
    (
        conversation,
        history
            .iter()
            .map(|m| (render(&m.pieces), m.in_conversation))
            .collect(),
    )
}

#[test]
fn claude_messages_carry_ids_and_the_history() {
    let mut left_out = 0;
    for path in fixture_files(Agent::Claude) {
        let (conv, history) = check_messages(Agent::Claude, &path);
        left_out += history.len() - conv.len();
        let bytes = std::fs::read(&path).unwrap();
        let (r, tail) = read(Agent::Claude, &path, &bytes);
        for m in r.messages(&tail, false) {
            let uuid = m.entry.unwrap();
            let v: Value = String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .rfind(|v| v["uuid"] == uuid.as_str())
                .expect("the entry id is a line's uuid");
            assert_eq!(m.timestamp.as_deref(), v["timestamp"].as_str());
            assert_eq!(m.summary, v["isCompactSummary"] == true);
            if v["type"] == "assistant" {
                assert_eq!(
                    m.model.map(|m| m.model).as_deref(),
                    v["message"]["model"].as_str()
                );
            }
        }
    }
    assert!(
        left_out > 400,
        "sidechains, rewinds and compactions: {left_out}"
    );
    // A rewind then a compaction: the abandoned branch and what came before the
    // boundary are history, not conversation.
    let path = fixtures().join("claude/projects/-tmp/43c4655e-4b11-5485-86a9-64e7d606a1b2.jsonl");
    let (conv, history) = check_messages(Agent::Claude, &path);
    for old in ["First attempt", "Start", "Kept going"] {
        assert!(
            history.iter().any(|(m, kept)| !kept && m.contains(old)),
            "{old}"
        );
        assert!(!conv.iter().any(|m| m.contains(old)), "{old}");
    }
    assert!(conv.iter().any(|m| m.contains("After compaction")));
}

#[test]
fn codex_messages_carry_line_offsets_and_the_history() {
    for path in fixture_files(Agent::Codex) {
        let (conv, history) = check_messages(Agent::Codex, &path);
        assert!(history.len() >= conv.len());
        let bytes = std::fs::read(&path).unwrap();
        let (r, tail) = read(Agent::Codex, &path, &bytes);
        for m in r.messages(&tail, true) {
            let at: usize = m.entry.unwrap().parse().unwrap();
            assert!(
                at == 0 || bytes[at - 1] == b'\n',
                "the entry is a line's offset"
            );
            let line = bytes[at..].split(|&b| b == b'\n').next().unwrap();
            let v: Value = serde_json::from_slice(line).unwrap();
            assert_eq!(m.timestamp.as_deref(), v["timestamp"].as_str());
        }
    }
    // Remote compaction: the history before it is still there, out of the conversation.
    let path = fixtures().join("codex/sessions/2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl");
    let (conv, history) = check_messages(Agent::Codex, &path);
    let out = history.iter().filter(|(_, kept)| !kept).count();
    assert!(
        out > 50,
        "{out} of {} left out, {} kept",
        history.len(),
        conv.len()
    );
}

#[test]
fn codex_rollback_and_legacy_compaction_keep_their_history() {
    let meta = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"11111111-1111-4111-8111-111111111111","timestamp":"2026-01-01T00:00:00Z","cwd":"/p","originator":"x","cli_version":"1","model_provider":"openai"}}"#;
    let user = |t: &str, s: u32| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:00:{s:02}Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{t}"}}]}}}}"#
        )
    };
    let reply = |t: &str, s: u32| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:00:{s:02}Z","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{t}"}}]}}}}"#
        )
    };
    let ctx = r#"{"timestamp":"2026-01-01T00:00:01Z","type":"turn_context","payload":{"cwd":"/p","approval_policy":"never","sandbox_policy":{"mode":"x"},"model":"gpt-5","summary":"auto"}}"#;
    let rollback = r#"{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#;
    let compacted = r#"{"timestamp":"2026-01-01T00:00:08Z","type":"compacted","payload":{"message":"we did A"}}"#;
    let file = [
        meta.to_string(),
        ctx.to_string(),
        user("A", 2),
        reply("a", 3),
        user("B", 4),
        rollback.to_string(),
        user("C", 6),
        reply("c", 7),
        compacted.to_string(),
        user("D", 9),
    ]
    .join("\n")
        + "\n";
    let mut r = reader_for(
        Agent::Codex,
        "rollout-2026-01-01T00-00-00-11111111-1111-4111-8111-111111111111.jsonl",
    );
    let tail = feed_all(r.as_mut(), file.as_bytes()).to_vec();
    let msgs = |history| -> Vec<Message> {
        r.messages(&tail, history)
            .into_iter()
            .map(|m| {
                let v: Value =
                    serde_json::from_slice(&render_message(&m.pieces, file.as_bytes())).unwrap();
                let mut n = to_neutral(Agent::Codex, &v).unwrap();
                n.in_conversation = m.in_conversation;
                n.summary |= m.summary;
                n.model = n.model.or(m.model);
                n.entry = m.entry;
                n
            })
            .collect()
    };
    let conv = msgs(false);
    let texts: Vec<String> = conv.iter().map(Message::plain_text).collect();
    assert_eq!(texts, ["A", "C", "we did A", "D"]);
    assert!(conv[2].summary && !conv[0].summary);
    let all = msgs(true);
    let texts: Vec<(String, bool)> = all
        .iter()
        .map(|m| (m.plain_text(), m.in_conversation))
        .collect();
    assert_eq!(
        texts,
        [
            ("A".into(), false),
            ("a".into(), false),
            ("B".into(), false),
            ("C".into(), false),
            ("c".into(), false),
            ("A".into(), true),
            ("C".into(), true),
            ("we did A".into(), true),
            ("D".into(), true),
        ]
    );
    let a = &all[1];
    assert_eq!(a.model.as_ref().unwrap().model, "gpt-5");
    assert_eq!(
        a.model.as_ref().unwrap().provider.as_deref(),
        Some("openai")
    );
    // The compacted line's items carry its offset.
    let at = file.find(compacted).unwrap().to_string();
    assert_eq!(all[5].entry.as_deref(), Some(at.as_str()));
}

#[test]
fn pi_messages_carry_entry_ids_and_the_history() {
    let Some((_tmp, files)) = pi_sessions() else {
        return;
    };
    for (name, path) in &files {
        let (conv, history) = check_messages(Agent::Pi, path);
        let bytes = std::fs::read(path).unwrap();
        let (r, tail) = read(Agent::Pi, path, &bytes);
        for m in r.messages(&tail, true) {
            let id = m.entry.clone().unwrap();
            let line = String::from_utf8_lossy(&bytes)
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|v| v["id"] == id.as_str())
                .expect("the entry id is an entry's id");
            let ms = chrono::DateTime::parse_from_rfc3339(line["timestamp"].as_str().unwrap())
                .unwrap()
                .timestamp_millis();
            let got = chrono::DateTime::parse_from_rfc3339(&m.timestamp.unwrap())
                .unwrap()
                .timestamp_millis();
            assert_eq!(got, ms, "{name}");
        }
        match name.as_str() {
            "compaction" => {
                for old in ["\"one\"", "\"r1\"", "summary of one"] {
                    assert!(
                        history.iter().any(|(m, kept)| !kept && m.contains(old)),
                        "{old}"
                    );
                }
                assert!(!conv.iter().any(|m| m.contains("\"one\"")));
            }
            "branches" => {
                assert!(
                    history
                        .iter()
                        .any(|(m, kept)| !kept && m.contains("second, abandoned"))
                );
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// ForeignSource::messages
// ---------------------------------------------------------------------------

#[test]
fn foreign_sources_give_the_conversation_as_neutral_messages() {
    use fen_fs::sources::SessionSource;
    use fen_fs::sources::agents::AgentRoot;
    use fen_fs::sources::foreign_source::ForeignSource;
    use fen_fs::views::ViewKind;
    let mut sessions = 0;
    for agent in [Agent::Claude, Agent::Codex] {
        let source = ForeignSource::new(
            &AgentRoot {
                agent,
                root: fixtures().join(agent.name()),
            },
            None,
        );
        source.build_index();
        for ns in source.namespaces().unwrap() {
            for dir in source.session_dirs(&ns).unwrap() {
                sessions += 1;
                let snap = source
                    .snapshot(&ns, &dir, ViewKind::Conversation, 0)
                    .unwrap();
                let bytes = snap.read_at(0, snap.size() as usize).unwrap();
                let conv: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
                let got = source.messages(&ns, &dir, false).unwrap();
                assert_eq!(got.messages.len(), conv.len(), "{ns}/{dir}");
                for (m, v) in got.messages.iter().zip(&conv) {
                    let want = to_neutral(agent, v).unwrap();
                    assert_eq!(m.role, want.role, "{ns}/{dir}");
                    assert_eq!(m.parts.len(), want.parts.len(), "{ns}/{dir}");
                    assert!(m.in_conversation && m.entry.is_some());
                }
                let meta: Value = {
                    let s = source.snapshot(&ns, &dir, ViewKind::Meta, 0).unwrap();
                    serde_json::from_slice(&s.read_at(0, s.size() as usize).unwrap()).unwrap()
                };
                let f = &got.facts;
                assert_eq!(f.agent, agent);
                assert_eq!(f.id, meta["id"].as_str().unwrap());
                assert_eq!(f.dir, dir);
                assert_eq!(f.namespace, ns);
                assert_eq!(f.cwd.as_deref(), meta["cwd"].as_str());
                assert_eq!(f.title.as_deref(), meta["title"].as_str());
                assert_eq!(f.updated_at.as_deref(), meta["updated_at"].as_str());
                assert_eq!(f.source_path.to_str(), meta["source_path"].as_str());
                assert_eq!(f.resumable, meta["resumable"] == true);
                let all = source.messages(&ns, &dir, true).unwrap().messages;
                assert_eq!(
                    all.iter().filter(|m| m.in_conversation).count(),
                    conv.len(),
                    "{ns}/{dir}"
                );
            }
        }
    }
    assert!(sessions >= 25, "{sessions}");
}
