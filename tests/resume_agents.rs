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

#[test]
fn claude_code_continues_a_session_whose_project_folder_has_spaces_dots_accents_an_emoji_and_a_link()
 {
    let Some(bin) = agent_bin("resume_agents::claude_odd_cwd", "claude") else {
        return;
    };
    // Claude Code names its project folder after the real path, one `-` per UTF-16
    // unit that is not ASCII alphanumeric (an emoji is two); `--continue` looks there
    // only (`--resume ID` would find the file in any project folder).
    let mut sb = Sandbox::new("claude");
    let real = sb
        .tmp
        .path()
        .join("my proj.v2")
        .join("e\u{301}t\u{e9} \u{1F600}");
    std::fs::create_dir_all(&real).unwrap();
    let link = sb.tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    sb.project = link;
    let session = sample(Agent::Pi, &source_file(&sb), &sb.cwd(), false);
    let target = Target::Agent {
        agent: Agent::Claude,
        root: sb.root.clone(),
    };
    make(&session, &target, &sb.cwd(), &ledger(&sb)).unwrap();
    let mock = MockModel::any_api("Resumed.");
    let out = claude_with(&bin, &sb, &mock, &["-p", "--continue", PROMPT]);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let body = bodies
        .last()
        .unwrap_or_else(|| panic!("no request: {}", text_of(&out)));
    in_order(
        &anthropic_steps(body),
        &[Step::user("Please list the files."), Step::user(PROMPT)],
    )
    .unwrap();
}

// ---------------------------------------------------------------------------
// Through the command line, from other agents' real sessions (the public fixtures,
// read in place) and a pi session file.
// ---------------------------------------------------------------------------

const CLAUDE_FIXTURE: &str = "1af7fc5e-8455-4414-9ccd-011d40f70b2a";
const CODEX_FIXTURE: &str = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff";

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

/// `fen-fs resume SESSION --in AGENT --cwd PROJECT` with `sources` (KIND=DIR), the
/// sandbox's root as the target's; returns the id of the session it printed.
fn resume_cli(sb: &Sandbox, session: &str, agent: &str, sources: &[String]) -> String {
    let store = sb.tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let mut cmd = support::fen_fs();
    cmd.args(["resume", session, "--in", agent, "--no-detect", "--cwd"])
        .arg(&sb.project)
        .arg("--store")
        .arg(&store)
        .arg("--source")
        .arg(format!("{agent}={}", sb.root.display()));
    for s in sources {
        cmd.arg("--source").arg(s);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text_of(&out));
    let line = String::from_utf8(out.stdout).unwrap();
    line.trim_end().rsplit(' ').next().unwrap().to_string()
}

fn claude_fixture_source() -> String {
    format!("claude={}", fixtures().join("claude").display())
}

#[test]
fn a_claude_code_session_continues_in_codex() {
    let Some(bin) = agent_bin("resume_agents::claude_to_codex", "codex") else {
        return;
    };
    let sb = Sandbox::new("codex");
    let id = resume_cli(&sb, CLAUDE_FIXTURE, "codex", &[claude_fixture_source()]);
    let mock = MockModel::any_api("Resumed.");
    let out = codex(&bin, &sb, &mock, &id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("parse errors: 0"));
    let bodies = conversations(&mock);
    let steps = responses_steps(bodies.last().expect("a request"));
    in_order(
        &steps,
        &[
            Step::user("Please analyze this codebase and create a CLAUDE.md file"),
            Step::assistant("I'll analyze the codebase and create a CLAUDE.md file"),
            Step::assistant("[external_agent_tool_call: TodoWrite]"),
            Step::assistant("[external_agent_tool_result]\nTodos have been modified successfully"),
            // A message's text and its calls are one text, as the importer joins them.
            Step::assistant(
                "The directory appears to be empty. This is a completely new/empty repository",
            ),
            Step::assistant("[external_agent_tool_result: error]\nClaude requested permissions"),
            Step::assistant("[external_agent_tool_call: TodoWrite]"),
            Step::assistant("I've created a basic CLAUDE.md file"),
            Step::user(PROMPT),
        ],
    )
    .unwrap();
    assert!(steps.iter().any(|s| matches!(s, Step::Text(_, t)
        if t.contains("The directory appears to be empty.")
            && t.contains("[external_agent_tool_call: Write]\nfile: /path/to/Demo/CLAUDE.md"))));
    assert!(
        !steps
            .iter()
            .any(|s| matches!(s, Step::Text(_, t) if t.contains("<command-name>/init"))),
        "{steps:#?}"
    );
}

#[test]
fn a_codex_session_continues_in_claude_code() {
    let Some(bin) = agent_bin("resume_agents::codex_to_claude", "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let codex_src = format!("codex={}", fixtures().join("codex").display());
    let id = resume_cli(&sb, CODEX_FIXTURE, "claude", &[codex_src]);
    let mock = MockModel::any_api("Resumed.");
    let out = claude(&bin, &sb, &mock, &id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let steps = anthropic_steps(bodies.last().expect("a request"));
    in_order(
        &steps,
        &[
            Step::user("[REDACTED_TEXT len=98 sha=c002ff99]"),
            Step::assistant("[REDACTED_TEXT len=156 sha=2a40230f]"),
            Step::assistant("[external_agent_tool_call: mcp__cloud-associates__search_workflows]"),
            Step::assistant(
                "[external_agent_tool_result]\n[REDACTED_OUTPUT len=4215 sha=9a9d94de]",
            ),
            Step::assistant("[REDACTED_TEXT len=647 sha=10502814]"),
            Step::user(PROMPT),
        ],
    )
    .unwrap();
    // Codex's developer instructions stayed behind.
    assert!(
        !steps
            .iter()
            .any(|s| matches!(s, Step::Text(_, t) if t.contains("len=4508 sha=c490750a"))),
        "{steps:#?}"
    );
}

#[test]
fn a_claude_code_session_continues_in_pi() {
    let Some(bin) = agent_bin("resume_agents::claude_to_pi", "pi") else {
        return;
    };
    let sb = Sandbox::new("pi-agent");
    let id = resume_cli(&sb, CLAUDE_FIXTURE, "pi", &[claude_fixture_source()]);
    let mock = MockModel::any_api("Resumed.");
    let out = pi(&bin, &sb, &mock, &id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let steps = anthropic_steps(bodies.last().expect("a request"));
    in_order(
        &steps,
        &[
            Step::user("Please analyze this codebase and create a CLAUDE.md file"),
            Step::assistant("I'll analyze the codebase and create a CLAUDE.md file"),
            Step::Call("TodoWrite".into()),
            Step::Result("Todos have been modified successfully".into()),
            Step::assistant("The directory appears to be empty."),
            Step::Call("Write".into()),
            Step::Result("Claude requested permissions to write".into()),
            Step::assistant("I've created a basic CLAUDE.md file"),
            Step::user(PROMPT),
        ],
    )
    .unwrap();
}

#[test]
fn a_pi_session_continues_in_claude_code() {
    let Some(bin) = agent_bin("resume_agents::pi_to_claude", "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let pi_root = sb.tmp.path().join("pi-agent");
    let pi_id = pi_session(&pi_root, &sb.cwd());
    let id = resume_cli(
        &sb,
        &pi_id,
        "claude",
        &[format!("pi={}", pi_root.display())],
    );
    let mock = MockModel::any_api("Resumed.");
    let out = claude(&bin, &sb, &mock, &id, PROMPT);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies = conversations(&mock);
    let steps = anthropic_steps(bodies.last().expect("a request"));
    in_order(
        &steps,
        &[
            Step::user("Count the lines of notes.txt."),
            Step::assistant("Counting."),
            Step::Call("bash".into()),
            Step::Result("42 notes.txt".into()),
            Step::assistant("notes.txt has 42 lines."),
            Step::user(PROMPT),
        ],
    )
    .unwrap();
}
