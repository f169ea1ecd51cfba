//! The real agents are the oracles of `fen-fs resume --in AGENT`'s writers: a session
//! written for Claude Code, Codex or pi is resumed by that agent (installed by
//! `scripts/install-agents`) against a mock model server on 127.0.0.1, and the request
//! it sent must hold the conversation's messages in order, in the form the conversion
//! chose (structured tool calls, or text between Claude Code and Codex). Each run has
//! its own HOME and agent root.

mod resume_support;
mod support;

use fen_fs::agent::Agent;
use fen_fs::resume::codex::SUMMARY_PREFIX;
use fen_fs::resume::ledger::Ledger;
use fen_fs::resume::{Target, make};
use resume_support::*;
use support::agent_bin;
use support::mock_model::MockModel;

const PROMPT: &str = "What did we do so far?";

fn source_file(sb: &Sandbox) -> std::path::PathBuf {
    let p = sb.tmp.path().join("source.jsonl");
    std::fs::write(&p, "{}\n").unwrap();
    p
}

fn ledger(sb: &Sandbox) -> Ledger {
    let store = sb.tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    Ledger::for_store(&store)
}

/// The steps every target must show, tool calls structured.
fn structured(summary: &str) -> Vec<Step> {
    vec![
        Step::user(summary),
        Step::user("Please list the files."),
        Step::assistant("I'll list them."),
        Step::Call("Bash".into()),
        Step::Result("a.txt\nb.txt".into()),
        Step::assistant("There are two files: a.txt and b.txt."),
        Step::user("Thanks. Now read a.txt."),
        Step::Call("Read".into()),
        Step::Result("[no result recorded]".into()),
        Step::user("Never mind, that is all."),
        Step::user(PROMPT),
    ]
}

fn no_injected_context(steps: &[Step]) {
    assert!(
        !steps
            .iter()
            .any(|s| matches!(s, Step::Text(_, t) if t.contains("<cwd>/elsewhere</cwd>"))),
        "the source's injected context was sent: {steps:#?}"
    );
}

#[test]
fn a_session_written_for_claude_code_is_resumed_by_claude_code_whole() {
    let Some(bin) = agent_bin("resume_agents::claude", "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let session = sample(Agent::Pi, &source_file(&sb), &sb.cwd(), true);
    let target = Target::Agent {
        agent: Agent::Claude,
        root: sb.root.clone(),
    };
    let made = make(&session, &target, &sb.cwd(), &ledger(&sb)).unwrap();
    assert!(made.path.starts_with(sb.root.join("projects")));
    let mock = MockModel::any_api("Resumed.");
    let out = claude(&bin, &sb, &mock, &made.id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let body = bodies
        .last()
        .unwrap_or_else(|| panic!("no request: {}", text_of(&out)));
    let steps = anthropic_steps(body);
    in_order(
        &steps,
        &structured("Earlier we set up the project skeleton."),
    )
    .unwrap();
    no_injected_context(&steps);
    // Claude Code's own resume kept appending to the file fen-fs made.
    assert!(
        std::fs::read_to_string(&made.path)
            .unwrap()
            .contains("Resumed.")
    );
}

#[test]
fn a_session_written_for_codex_is_resumed_by_codex_whole_with_tool_calls_as_text() {
    let Some(bin) = agent_bin("resume_agents::codex", "codex") else {
        return;
    };
    let sb = Sandbox::new("codex");
    let session = sample(Agent::Claude, &source_file(&sb), &sb.cwd(), true);
    let target = Target::Agent {
        agent: Agent::Codex,
        root: sb.root.clone(),
    };
    let made = make(&session, &target, &sb.cwd(), &ledger(&sb)).unwrap();
    assert!(made.path.starts_with(sb.root.join("sessions")));
    assert!(!sb.root.join("state_5.sqlite").exists());
    let mock = MockModel::any_api("Resumed.");
    let out = codex(&bin, &sb, &mock, &made.id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("parse errors: 0"),
        "Codex could not parse every line fen-fs wrote: {log}"
    );
    let bodies = conversations(&mock);
    let body = bodies
        .last()
        .unwrap_or_else(|| panic!("no request: {}", text_of(&out)));
    let steps = responses_steps(body);
    let want = vec![
        Step::user(&format!(
            "{SUMMARY_PREFIX}\nEarlier we set up the project skeleton."
        )),
        Step::user("Please list the files."),
        Step::assistant(
            "I'll list them.\n\n[external_agent_tool_call: Bash]\ndescription: List files\ncommand: ls\n[/external_agent_tool_call]",
        ),
        Step::assistant(
            "[external_agent_tool_result]\na.txt\nb.txt\n[/external_agent_tool_result]",
        ),
        Step::assistant("There are two files: a.txt and b.txt."),
        Step::user("Thanks. Now read a.txt."),
        Step::assistant(
            "[external_agent_tool_call: Read]\nfile: a.txt\n[/external_agent_tool_call]",
        ),
        Step::assistant(
            "[external_agent_tool_result: error]\n[no result recorded]\n[/external_agent_tool_result]",
        ),
        Step::user("Never mind, that is all."),
        Step::user(PROMPT),
    ];
    in_order(&steps, &want).unwrap();
    assert!(
        !steps.iter().any(|s| matches!(s, Step::Call(_))),
        "Claude Code's tool calls reached Codex structured: {steps:#?}"
    );
    no_injected_context(&steps);
}

#[test]
fn a_session_written_for_pi_is_resumed_by_pi_whole() {
    let Some(bin) = agent_bin("resume_agents::pi", "pi") else {
        return;
    };
    let sb = Sandbox::new("pi-agent");
    let session = sample(Agent::Codex, &source_file(&sb), &sb.cwd(), true);
    let target = Target::Agent {
        agent: Agent::Pi,
        root: sb.root.clone(),
    };
    let made = make(&session, &target, &sb.cwd(), &ledger(&sb)).unwrap();
    let before = std::fs::read(&made.path).unwrap();
    let mock = MockModel::any_api("Resumed.");
    let out = pi(&bin, &sb, &mock, &made.id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let body = bodies
        .last()
        .unwrap_or_else(|| panic!("no request: {}", text_of(&out)));
    let steps = anthropic_steps(body);
    in_order(
        &steps,
        &structured("Earlier we set up the project skeleton."),
    )
    .unwrap();
    no_injected_context(&steps);
    // pi took the file as it was (a version it would migrate is rewritten) and
    // appended to it.
    let after = std::fs::read(&made.path).unwrap();
    assert!(after.starts_with(&before), "pi rewrote the file");
}
