//! The usage readers of the agents the ccusage comparison does not cover (pi and
//! OpenClaw, Copilot CLI, OpenCode's dumps, Gemini CLI's legacy `.json`), in-process:
//! what each counts from lines shaped as the agent writes them (the public Copilot
//! fixtures; the others hand-made from AGENT-FORMATS*.md), and that a file read in two
//! parts from a mark gives what one reading gives.

use fen_fs::agent::Agent;
use fen_fs::sources::agents::usage_reader_for;
use fen_fs::usage_record::{Tokens, UnitFacts, UsageOut, read_all};
use std::path::Path;

fn read(agent: Agent, name: &str, bytes: &[u8]) -> UsageOut {
    let facts = UnitFacts {
        agent,
        session: Some("from-the-name".into()),
        ..UnitFacts::default()
    };
    let mut r = usage_reader_for(agent, Path::new(name), facts).expect("a usage reader");
    read_all(r.as_mut(), bytes)
}

fn tokens(input: u64, output: u64, cache_write_5m: u64, cache_read: u64, reasoning: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_write_5m,
        cache_read,
        reasoning,
        ..Tokens::default()
    }
}

const PI: &str = concat!(
    r#"{"type":"session","version":3,"id":"0199aaaa-0000-7000-8000-000000000001","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/u/p"}"#,
    "\n",
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}"#,
    "\n",
    r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T10:00:02.000Z","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":100,"output":10,"cacheRead":1000,"cacheWrite":50,"totalTokens":1160,"cost":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"total":0.25}},"stopReason":"stop","timestamp":2}}"#,
    "\n",
    r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-01-02T10:00:02.000Z","message":{"role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input":"many","output":1},"timestamp":3}}"#,
    "\n",
);

#[test]
fn pi_and_openclaw_count_assistant_usage_with_the_cost_pi_recorded() {
    for agent in [Agent::Pi, Agent::Openclaw] {
        let out = read(agent, "s.jsonl", PI.as_bytes());
        assert_eq!(out.records.len(), 1, "{agent:?}");
        let r = &out.records[0];
        assert_eq!(r.tokens, tokens(100, 10, 50, 1000, 0));
        assert_eq!(r.recorded_cost, Some(0.25));
        assert_eq!(&*r.session, "0199aaaa-0000-7000-8000-000000000001");
        assert_eq!(r.cwd.as_deref(), Some("/home/u/p"));
        assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5"));
        assert!(r.key.is_some());
        assert_eq!(out.malformed, 1, "the bad count is skipped, not fatal");
        assert!(out.first_malformed.as_deref().unwrap().contains("input"));
    }
}

#[test]
fn a_file_read_in_two_parts_gives_what_one_reading_gives() {
    // Codex: the running totals and model carry over the mark.
    let codex = concat!(
        r#"{"timestamp":"2026-01-01T10:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000001","cwd":"/p"}}"#,
        "\n",
        r#"{"timestamp":"2026-01-01T10:00:01.000Z","type":"turn_context","payload":{"model":"gpt-5.2-codex"}}"#,
        "\n",
        r#"{"timestamp":"2026-01-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":100,"reasoning_output_tokens":0,"total_tokens":1100}}}}"#,
        "\n",
        r#"{"timestamp":"2026-01-01T10:00:03.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":3000,"cached_input_tokens":700,"output_tokens":300,"reasoning_output_tokens":0,"total_tokens":3300}}}}"#,
        "\n",
    );
    let whole = read(Agent::Codex, "r.jsonl", codex.as_bytes()).records;
    assert_eq!(whole.len(), 2);
    assert_eq!(
        whole[1].tokens,
        tokens(1500, 200, 0, 500, 0),
        "the totals' growth"
    );
    assert_eq!(whole[1].model.as_deref(), Some("gpt-5.2-codex"));
    let cut = codex.match_indices('\n').nth(2).unwrap().0 + 1;
    let facts = UnitFacts {
        agent: Agent::Codex,
        ..UnitFacts::default()
    };
    let mut first = usage_reader_for(Agent::Codex, Path::new("r.jsonl"), facts.clone()).unwrap();
    let mut out = UsageOut::default();
    assert_eq!(
        first.feed(0, &codex.as_bytes()[..cut], &mut out),
        cut as u64
    );
    let state = first.save();
    let mut second = usage_reader_for(Agent::Codex, Path::new("r.jsonl"), facts).unwrap();
    assert!(second.restore(&state));
    second.feed(cut as u64, &codex.as_bytes()[cut..], &mut out);
    assert_eq!(out.records, whole);
}

#[test]
fn copilot_counts_each_runs_model_metrics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/agent-fixtures/copilot/session-state");
    let mut all = Vec::new();
    for f in [
        "copilot_stage0_small.jsonl",
        "copilot_stage0_large.jsonl",
        "copilot_stage0_drift.jsonl",
    ] {
        let Ok(bytes) = std::fs::read(dir.join(f)) else {
            panic!("fixture {f} missing");
        };
        all.extend(read(Agent::Copilot, "events.jsonl", &bytes).records);
    }
    // As ccusage 20.0.24 counts these fixtures: one run with modelMetrics usage
    // (gpt-4.1: 1000 input of which 800 cached, 50 output); the tokenDetails-shaped
    // shutdown names no model and is not counted.
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].tokens, tokens(200, 50, 0, 800, 0));
    assert_eq!(all[0].model.as_deref(), Some("gpt-4.1"));
}

#[test]
fn opencode_counts_assistant_messages_not_their_parts() {
    let dump = concat!(
        r#"{"id":"ses_1","directory":"/home/u/o","title":"t"}"#,
        "\n",
        r#"{"role":"assistant","modelID":"claude-sonnet-4-5","providerID":"anthropic","cost":0.5,"tokens":{"input":10,"output":20,"reasoning":5,"cache":{"read":100,"write":7}},"time":{"created":1767261600000},"id":"msg_1","sessionID":"ses_1"}"#,
        "\n",
        r#"{"type":"step-finish","tokens":{"input":10,"output":20,"reasoning":5,"cache":{"read":100,"write":7}},"cost":0.5,"id":"prt_1","sessionID":"ses_1","messageID":"msg_1"}"#,
        "\n",
        r#"{"role":"user","time":{"created":1767261500000},"id":"msg_0","sessionID":"ses_1"}"#,
        "\n",
    );
    let out = read(Agent::Opencode, "ses_1", dump.as_bytes());
    assert_eq!(out.records.len(), 1);
    let r = &out.records[0];
    assert_eq!(r.tokens, tokens(10, 20, 7, 100, 5));
    assert_eq!(r.recorded_cost, Some(0.5));
    assert_eq!(&*r.session, "ses_1");
    assert_eq!(r.cwd.as_deref(), Some("/home/u/o"));
}

#[test]
fn gemini_legacy_json_chats_are_read_whole() {
    let doc = serde_json::json!({
        "sessionId": "5e551011-0000-4000-8000-000000000001", "projectHash": "ab",
        "startTime": "2026-01-01T10:00:00Z", "lastUpdated": "2026-01-01T10:00:00Z",
        "messages": [
            {"id": "u1", "timestamp": "2026-01-01T10:00:00Z", "type": "user", "content": "hi"},
            {"id": "g1", "timestamp": "2026-01-01T10:00:01Z", "type": "gemini", "content": "ok",
             "tokens": {"input": 1000, "output": 100, "cached": 300, "thoughts": 50, "tool": 7, "total": 1157},
             "model": "gemini-2.5-pro"}
        ]
    });
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let out = read(
        Agent::Gemini,
        "session-2026-01-01T10-00-5e551011.json",
        text.as_bytes(),
    );
    assert_eq!(out.records.len(), 1);
    // As ccusage counts Gemini: tool tokens are input, thoughts are reasoning.
    assert_eq!(out.records[0].tokens, tokens(707, 100, 0, 300, 50));
    assert_eq!(out.records[0].tokens.total(), 1157);
}
