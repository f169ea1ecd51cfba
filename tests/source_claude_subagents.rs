//! Claude Code's subagents as sessions, in-process: the transcripts Claude Code
//! 2.1.330 wrote in a real run (tests/fixtures/claude-subagents, sanitised; a workflow
//! run's subagent and a `/btw` side question made from it as older versions write
//! them) and the public fixtures (the new layout, and the older `agent-*.jsonl` beside
//! the parent). Each subagent shows beside its parent, linked both ways, with every
//! view of a session; forked helper runs that replay the parent (side questions,
//! compactions) do not.

use fen_fs::sources::SessionSource;
use fen_fs::sources::agents::AgentRoot;
use fen_fs::sources::foreign::{Agent, feed_all};
use fen_fs::sources::foreign_source::ForeignSource;
use fen_fs::sources::registry::kind;
use fen_fs::views::ViewKind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const PARENT: &str = "ee0daf2e-88ec-4c7f-93ba-330797310f21";
const CHILD: &str = "abd4dc8c7e1aa568a";
const WORKFLOW_CHILD: &str = "a0123456789abcdef";
const SIDE_QUESTION: &str = "aside_question-0123456789abcdef";

fn recorded() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-subagents")
}

fn public() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/claude")
}

fn source(root: &Path) -> ForeignSource {
    let s = ForeignSource::new(
        &AgentRoot {
            agent: Agent::Claude,
            root: root.to_path_buf(),
        },
        None,
    );
    s.build_index();
    s
}

fn ns_of(cwd: &str) -> String {
    fen_fs::store::naming::slug(cwd)
}

fn view(s: &ForeignSource, ns: &str, dir: &str, kind: ViewKind) -> Vec<u8> {
    let snap = s.snapshot(ns, dir, kind, 0).unwrap();
    snap.read_at(0, snap.size() as usize).unwrap()
}

fn text(s: &ForeignSource, ns: &str, dir: &str, kind: ViewKind) -> String {
    String::from_utf8(view(s, ns, dir, kind)).unwrap()
}

fn meta(s: &ForeignSource, ns: &str, dir: &str) -> Value {
    serde_json::from_slice(&view(s, ns, dir, ViewKind::Meta)).unwrap()
}

fn conversation(s: &ForeignSource, ns: &str, dir: &str) -> Vec<Value> {
    serde_json::from_slice(&view(s, ns, dir, ViewKind::Conversation)).unwrap()
}

/// The texts of a `conversation.json` message's content.
fn texts(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn dir_ending(s: &ForeignSource, ns: &str, end: &str) -> String {
    let dirs = s.session_dirs(ns).unwrap();
    dirs.iter()
        .find(|d| d.ends_with(end))
        .unwrap_or_else(|| panic!("no session folder ending {end} in {dirs:?}"))
        .clone()
}

#[test]
fn a_recorded_subagent_shows_beside_its_parent_linked_both_ways() {
    let s = source(&recorded());
    let ns = ns_of("/home/user/project");
    assert_eq!(s.namespaces().unwrap(), vec![ns.clone()]);
    let parent = dir_ending(&s, &ns, PARENT);
    let child = format!("{parent}.agent-{CHILD}");
    let workflow = format!("{parent}.agent-{WORKFLOW_CHILD}");
    let mut dirs = s.session_dirs(&ns).unwrap();
    dirs.sort();
    // The side question replays the parent: not a session.
    let mut want = vec![parent.clone(), child.clone(), workflow.clone()];
    want.sort();
    assert_eq!(dirs, want);

    let pm = meta(&s, &ns, &parent);
    assert_eq!(pm["resumable"], true);
    assert_eq!(
        pm["subagents"],
        json!([child, workflow]),
        "in the order they ran"
    );
    assert!(pm.get("parent").is_none());

    let file = recorded().join(format!(
        "projects/-home-user-project/{PARENT}/subagents/agent-{CHILD}.jsonl"
    ));
    let cm = meta(&s, &ns, &child);
    assert_eq!(cm["id"], CHILD);
    assert_eq!(cm["agent_id"], CHILD);
    assert_eq!(cm["parent"], parent.as_str());
    assert_eq!(cm["parent_id"], PARENT);
    assert_eq!(cm["title"], "Find the word", "the sidecar's description");
    assert_eq!(cm["preview"], "SUBTASK-PROMPT: find the secret word.");
    assert_eq!(cm["cwd"], "/home/user/project");
    assert_eq!(cm["source_path"], file.to_str().unwrap());
    assert_eq!(cm["listed_by_agent"], false);
    assert_eq!(cm["resumable"], false);
    let why = cm["not_resumable_reason"].as_str().unwrap();
    assert!(why.contains("subagent") && why.contains(CHILD), "{why}");
    assert_eq!(
        cm["subagent"],
        json!({"agent_id": CHILD, "agent_type": "general-purpose", "call_id": "toolu_agent_1",
               "depth": 1, "finished": true})
    );
    assert!(cm.get("subagents").is_none());

    // Every view of the child: its file byte for byte, what continuing it loads.
    assert_eq!(
        view(&s, &ns, &child, ViewKind::Transcript),
        std::fs::read(&file).unwrap()
    );
    let conv = conversation(&s, &ns, &child);
    assert_eq!(conv.len() as u64, cm["messages"].as_u64().unwrap());
    assert_eq!(conv[0]["role"], "user");
    assert_eq!(texts(&conv[0]), "SUBTASK-PROMPT: find the secret word.");
    let last = conv.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(texts(last), "Subagent answer: the word is zanzibar.");
    // Nothing of the parent's conversation is in it.
    assert!(conv.iter().all(|m| !texts(m).contains("PARENT-REQUEST")));
    let md = text(&s, &ns, &child, ViewKind::Markdown);
    assert!(md.starts_with("# Find the word\n"), "{md}");
    assert!(
        md.contains(&format!(
            "- subagent of: [{parent}](../{parent}/conversation.md) (as subagent `{CHILD}`)\n"
        )),
        "{md}"
    );
    assert!(
        md.contains("Subagent answer: the word is zanzibar."),
        "{md}"
    );
    let summary = text(&s, &ns, &child, ViewKind::Summary);
    assert!(
        summary.contains(&format!("parent     {parent} ({PARENT})")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("subagent   {CHILD} (general-purpose)")),
        "{summary}"
    );

    // The parent's conversation.md marks where it ran: below the Agent call whose
    // result names it.
    let md = text(&s, &ns, &parent, ViewKind::Markdown);
    let call = md.find("Tool call `Agent`").expect("the Agent call");
    let mark = format!("↳ subagent `{CHILD}` ran here: [{child}](../{child}/conversation.md)");
    let at = md.find(&mark).unwrap_or_else(|| panic!("{md}"));
    assert!(at > call, "{md}");
    assert!(
        md[call..at].contains("SUBTASK-PROMPT"),
        "the call's input is above"
    );
    assert!(
        md.contains(&format!(
            "- subagent `{CHILD}`: [{child}](../{child}/conversation.md)\n"
        )),
        "{md}"
    );

    // The workflow run's subagent: its run and type from its place and sidecar.
    let wm = meta(&s, &ns, &workflow);
    assert_eq!(wm["parent"], parent.as_str());
    assert_eq!(wm["subagent"]["workflow"], "wf_0a1b2c3d-4e5-1");
    assert_eq!(wm["subagent"]["agent_type"], "Explore");
    assert_eq!(wm["title"], "Workflow step");

    // index.json lists the subagents as rows, each naming its parent.
    let rows: Vec<Value> = serde_json::from_slice(&s.index(&ns).unwrap().index_json).unwrap();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        if r["dir"] == parent.as_str() {
            assert!(r.get("parent").is_none());
        } else {
            assert_eq!(r["parent"], parent.as_str(), "{r}");
            assert_eq!(r["parent_id"], PARENT, "{r}");
        }
    }
}

#[test]
fn forked_helper_runs_are_told_from_subagents_by_their_agent_id() {
    use fen_fs::sources::claude::{is_forked_helper_id, is_subagent_file_name};
    for id in [
        "aside_question-0123456789abcdef",
        "acompact-767ece576f2b74e8",
        "aprompt_suggestion-0123456789abcdef",
        "aextract_memories-0123456789abcdef",
    ] {
        assert!(is_forked_helper_id(id), "{id}");
        assert!(!is_subagent_file_name(&format!("agent-{id}.jsonl")), "{id}");
    }
    for id in [
        "a0123456789abcdef",
        "aef063ba534d73153",
        "a1b2c3d",
        "test-hash-123",
        "a-0123456789abcdef",
        "aside_question-0123456789abcdeX",
    ] {
        assert!(!is_forked_helper_id(id), "{id}");
        assert!(is_subagent_file_name(&format!("agent-{id}.jsonl")), "{id}");
    }
    assert!(!is_subagent_file_name("agent-.jsonl"));
    assert!(!is_subagent_file_name("agent-a0123456789abcdef.meta.json"));
    // The recorded tree's side question is there, and shown nowhere.
    let s = source(&recorded());
    let ns = ns_of("/home/user/project");
    assert!(
        recorded()
            .join(format!(
                "projects/-home-user-project/{PARENT}/subagents/agent-{SIDE_QUESTION}.jsonl"
            ))
            .is_file()
    );
    assert!(
        s.session_dirs(&ns)
            .unwrap()
            .iter()
            .all(|d| !d.contains("side_question")),
    );
}

#[test]
fn public_fixtures_new_layout_and_older_files_beside_the_parent() {
    let s = source(&public());
    // New layout (2.1.114): one of six subagents' transcripts kept.
    let ns = ns_of("-experiments/worktrees");
    let parent = dir_ending(&s, &ns, "ef958aa1-0e93-49f0-bb71-150f63befcd1");
    let child = format!("{parent}.agent-aef063ba534d73153");
    let cm = meta(&s, &ns, &child);
    assert_eq!(cm["parent"], parent.as_str());
    assert_eq!(cm["title"], "Round 2: bob comparison");
    assert_eq!(cm["subagent"]["agent_type"], "general-purpose");
    let conv = conversation(&s, &ns, &child);
    assert_eq!(conv.len(), 16, "every line of its file is its conversation");
    assert!(texts(&conv[0]).starts_with("You are **bob** (round 2)."));
    let pm = meta(&s, &ns, &parent);
    assert_eq!(pm["subagents"], json!([child]));
    let md = text(&s, &ns, &parent, ViewKind::Markdown);
    assert!(
        md.contains(&format!(
            "↳ subagent `aef063ba534d73153` ran here: [{child}](../{child}/conversation.md)"
        )),
        "{md}"
    );
    // The five whose transcripts are not there are marked where they ran all the same.
    for gone in [
        "a36efb2a1231c41e2",
        "a4ca7529859c158c2",
        "a52886dc180afb356",
        "a6aa8ad077d9ea083",
        "ab1e6e141221a29ab",
    ] {
        assert!(
            md.contains(&format!(
                "↳ subagent `{gone}` ran here: (its transcript is not shown)"
            )),
            "{gone}"
        );
    }

    // Older versions: `agent-<id>.jsonl` beside the parent, which the lines'
    // `sessionId` names.
    let ns = ns_of("/path/to/Demo");
    let parent = dir_ending(&s, &ns, "5c0375b4-57a5-4f26-b12d-d022ee4e51b7");
    for (id, prompt, answer) in [
        (
            "test-hash-123",
            "Run the test suite",
            "I'll run the test suite for you.",
        ),
        (
            "test-hash-456",
            "Build the project",
            "I'll build the project for you.",
        ),
    ] {
        let child = format!("{parent}.agent-{id}");
        let cm = meta(&s, &ns, &child);
        assert_eq!(cm["parent"], parent.as_str(), "{id}");
        assert_eq!(cm["parent_id"], "5c0375b4-57a5-4f26-b12d-d022ee4e51b7");
        let conv = conversation(&s, &ns, &child);
        assert_eq!(conv.len(), 2, "{id}");
        assert_eq!(texts(&conv[0]), prompt);
        assert_eq!(texts(&conv[1]), answer);
    }
    let pm = meta(&s, &ns, &parent);
    assert_eq!(
        pm["subagents"],
        json!([
            format!("{parent}.agent-test-hash-123"),
            format!("{parent}.agent-test-hash-456")
        ])
    );
}

/// Claude Code 1.0.x kept a subagent's lines inline, as sidechain lines of the
/// parent's file: they are its history (search finds them), never its conversation.
#[test]
fn inline_sidechains_are_the_parents_history() {
    let file = public().join("projects/-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let bytes = std::fs::read(&file).unwrap();
    let mut r = kind(Agent::Claude).reader_for_path(&file);
    let tail = feed_all(r.as_mut(), &bytes);
    let all = r.messages(tail, true);
    let out: Vec<_> = all.iter().filter(|m| !m.in_conversation).collect();
    assert!(out.len() > 100, "{} sidechain messages", out.len());
    let rendered = |m: &fen_fs::sources::foreign::MessageRef| {
        String::from_utf8(fen_fs::sources::foreign::render_message(&m.pieces, &bytes)).unwrap()
    };
    assert!(
        out.iter()
            .any(|m| rendered(m).contains("Create React components for the TODO app"))
    );
    let summary = r.summary(tail);
    assert_eq!(
        r.conversation(tail).len() as u64,
        summary.messages,
        "the conversation holds none of them"
    );
    // Each Task call is linked to the sidechain whose first text is its prompt.
    let pairs: Vec<(&str, &str)> = summary
        .spawned
        .iter()
        .map(|s| (s.call_id.as_str(), s.entry.as_deref().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [
            (
                "toolu_014i9ThHMNShCHocf9xMKasf",
                "60dade70-20bb-4edb-9dad-9f08267e0cc2"
            ),
            (
                "toolu_01EbxY94wRUAGyMLj5wh699C",
                "f4546a51-ea10-47e0-b4e0-76802974f8a9"
            ),
            (
                "toolu_01LS6tcVd796SbQKmZqeVnWY",
                "6690d10e-f521-4ac0-800d-e5eb7a2d8072"
            ),
            (
                "toolu_017rjDpjVPeNFmAEXNTkoP55",
                "0d692b0f-17cb-4fd0-94fb-215dabcef803"
            ),
            (
                "toolu_01EPom7jESzNbU8coiKjzVGS",
                "f4ab2bf6-d642-431a-85cb-66691f24c404"
            ),
        ]
    );
    let s = source(&public());
    let ns = ns_of("/path/to/Demo");
    let dir = dir_ending(&s, &ns, "fe5e1c67-53e7-4862-81ae-d0e013e3270b");
    let md = text(&s, &ns, &dir, ViewKind::Markdown);
    assert_eq!(md.matches("↳ a subagent ran here: its messages are in this session's history (transcript.jsonl, from entry `").count(), 5, "{md}");
    assert!(
        meta(&s, &ns, &dir).get("subagents").is_none(),
        "no session of their own"
    );
}

fn line(v: Value) -> String {
    v.to_string() + "\n"
}

fn user(uuid: &str, parent: Option<&str>, session: &str, agent: Option<&str>, t: &str) -> String {
    let mut v = json!({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,
        "cwd": "/w", "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {"role": "user", "content": t}
    });
    if let Some(a) = agent {
        v["isSidechain"] = json!(true);
        v["agentId"] = json!(a);
    }
    line(v)
}

fn assistant(
    uuid: &str,
    parent: &str,
    session: &str,
    agent: Option<&str>,
    content: Value,
) -> String {
    let mut v = json!({
        "type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": session,
        "cwd": "/w", "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {"role": "assistant", "id": format!("msg_{uuid}"), "content": content}
    });
    if let Some(a) = agent {
        v["isSidechain"] = json!(true);
        v["agentId"] = json!(a);
    }
    line(v)
}

const P: &str = "11111111-1111-4111-8111-111111111111";
const A: &str = "a1111111111111111";
const B: &str = "a2222222222222222";

/// A session that starts subagent A, which starts subagent B.
fn write_nested(root: &Path) {
    let project = root.join("projects/-w");
    let subs = project.join(P).join("subagents");
    std::fs::create_dir_all(&subs).unwrap();
    let call = |id: &str, prompt: &str| {
        json!([{"type": "tool_use", "id": id, "name": "Agent",
                "input": {"prompt": prompt, "subagent_type": "general-purpose"}}])
    };
    let result = |uuid: &str,
                  parent: &str,
                  session: &str,
                  agent: Option<&str>,
                  call: &str,
                  spawned: &str| {
        let mut v = json!({
            "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,
            "cwd": "/w", "timestamp": "2026-01-01T10:00:02.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "done"}]},
            "toolUseResult": {"status": "completed", "agentId": spawned}
        });
        if let Some(a) = agent {
            v["isSidechain"] = json!(true);
            v["agentId"] = json!(a);
        }
        line(v)
    };
    std::fs::write(
        project.join(format!("{P}.jsonl")),
        user("p1", None, P, None, "top request")
            + &assistant("p2", "p1", P, None, call("toolu_a", "do A"))
            + &result("p3", "p2", P, None, "toolu_a", A),
    )
    .unwrap();
    std::fs::write(
        subs.join(format!("agent-{A}.jsonl")),
        user("a1", None, P, Some(A), "do A")
            + &assistant("a2", "a1", P, Some(A), call("toolu_b", "do B"))
            + &result("a3", "a2", P, Some(A), "toolu_b", B),
    )
    .unwrap();
    std::fs::write(
        subs.join(format!("agent-{A}.meta.json")),
        r#"{"agentType":"general-purpose","description":"Step A","toolUseId":"toolu_a","spawnDepth":1}"#,
    )
    .unwrap();
    std::fs::write(
        subs.join(format!("agent-{B}.jsonl")),
        user("b1", None, P, Some(B), "do B")
            + &assistant(
                "b2",
                "b1",
                P,
                Some(B),
                json!([{"type": "text", "text": "B says wombat"}]),
            ),
    )
    .unwrap();
    std::fs::write(
        subs.join(format!("agent-{B}.meta.json")),
        format!(
            r#"{{"agentType":"Explore","description":"Step B","toolUseId":"toolu_b","spawnDepth":2,"parentAgentId":"{A}"}}"#
        ),
    )
    .unwrap();
}

#[test]
fn a_subagent_started_by_a_subagent_hangs_under_it() {
    let tmp = tempfile::tempdir().unwrap();
    write_nested(tmp.path());
    let s = source(tmp.path());
    let ns = "--w--";
    let parent = dir_ending(&s, ns, P);
    let a = format!("{parent}.agent-{A}");
    let b = format!("{a}.agent-{B}");
    let mut dirs = s.session_dirs(ns).unwrap();
    dirs.sort();
    assert_eq!(dirs, vec![parent.clone(), a.clone(), b.clone()]);
    assert_eq!(meta(&s, ns, &parent)["subagents"], json!([a]));
    let am = meta(&s, ns, &a);
    assert_eq!(am["parent"], parent.as_str());
    assert_eq!(am["subagents"], json!([b]));
    let bm = meta(&s, ns, &b);
    assert_eq!(bm["parent"], a.as_str());
    assert_eq!(bm["parent_id"], A);
    assert_eq!(bm["subagent"]["depth"], 2);
    let md = text(&s, ns, &a, ViewKind::Markdown);
    assert!(
        md.contains(&format!(
            "↳ subagent `{B}` ran here: [{b}](../{b}/conversation.md)"
        )),
        "{md}"
    );
}

/// A subagent whose transcript appears before its parent's (or without it) shows in
/// its own namespace under a name that says whose it is; once the parent shows, it
/// moves beside it. A subagent that appears later shows at the next look, and its
/// appends are read from where the reader stopped.
#[test]
fn subagents_appear_and_grow_live() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let project = root.join("projects/-w");
    let subs = project.join(P).join("subagents");
    std::fs::create_dir_all(&subs).unwrap();
    let a_file = subs.join(format!("agent-{A}.jsonl"));
    std::fs::write(&a_file, user("a1", None, P, Some(A), "do A")).unwrap();
    let s = source(root);
    let ns = "--w--";
    let orphan = s.session_dirs(ns).unwrap();
    assert_eq!(orphan.len(), 1);
    assert!(
        orphan[0].ends_with(&format!("_claude-{P}.agent-{A}")),
        "{orphan:?}"
    );
    assert!(meta(&s, ns, &orphan[0]).get("parent").is_none());
    assert_eq!(meta(&s, ns, &orphan[0])["parent_id"], P);

    std::fs::write(
        project.join(format!("{P}.jsonl")),
        user("p1", None, P, None, "top request"),
    )
    .unwrap();
    let parent = dir_ending(&s, ns, P);
    let a = format!("{parent}.agent-{A}");
    let mut dirs = s.session_dirs(ns).unwrap();
    dirs.sort();
    assert_eq!(dirs, vec![parent.clone(), a.clone()]);
    assert_eq!(meta(&s, ns, &a)["parent"], parent.as_str());

    // Another subagent's transcript appears: shown at the next look.
    let b_file = subs.join(format!("agent-{B}.jsonl"));
    std::fs::write(&b_file, user("b1", None, P, Some(B), "do B")).unwrap();
    let b = format!("{parent}.agent-{B}");
    assert!(s.session_dirs(ns).unwrap().contains(&b));
    assert_eq!(meta(&s, ns, &parent)["subagents"], json!([a, b]));

    // An append is read from where the reader stopped: a line broken in place
    // before it (same size, same first and last bytes) is never read again.
    let mut grown = String::new();
    let mut prev = "a1".to_string();
    for i in 0..40 {
        let u = format!("a-{i}");
        grown += &assistant(
            &u,
            &prev,
            P,
            Some(A),
            json!([{"type": "text", "text": format!("step {i} {}", "x".repeat(200))}]),
        );
        prev = u;
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&a_file)
        .unwrap();
    std::io::Write::write_all(&mut f, grown.as_bytes()).unwrap();
    assert_eq!(conversation(&s, ns, &a).len(), 41);
    break_middle_line(&a_file);
    std::io::Write::write_all(
        &mut f,
        assistant(
            "a-last",
            &prev,
            P,
            Some(A),
            json!([{"type": "text", "text": "the end"}]),
        )
        .as_bytes(),
    )
    .unwrap();
    let conv = conversation(&s, ns, &a);
    assert_eq!(conv.len(), 42, "only the new line was read");
    assert_eq!(texts(conv.last().unwrap()), "the end");
    assert_eq!(meta(&s, ns, &a)["malformed_lines"], 0);
}

/// Breaks one line in the middle of `path` in place (same size).
fn break_middle_line(path: &Path) {
    use std::os::unix::fs::FileExt;
    let bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    let start = mid + memchr::memchr(b'\n', &bytes[mid..]).unwrap() + 1;
    assert_eq!(bytes[start], b'{');
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(b"X", start as u64).unwrap();
}

/// A subagent reader keeps only its own agent's lines: a line of another agent (or
/// not on a sidechain) is left out of its conversation, as Claude Code's own loading
/// of an agent's transcript filters by `agentId`.
#[test]
fn a_subagent_reader_keeps_its_own_agents_lines() {
    let file = Path::new("/x/projects/-w")
        .join(P)
        .join(format!("subagents/agent-{A}.jsonl"));
    let bytes = user("a1", None, P, Some(A), "mine")
        + &assistant(
            "a2",
            "a1",
            P,
            Some(A),
            json!([{"type": "text", "text": "ok"}]),
        )
        + &assistant(
            "z1",
            "a2",
            P,
            Some(B),
            json!([{"type": "text", "text": "not mine"}]),
        );
    let mut r = kind(Agent::Claude).reader_for_path(&file);
    let tail = feed_all(r.as_mut(), bytes.as_bytes());
    let conv = r.conversation(tail);
    assert_eq!(conv.len(), 2);
    let summary = r.summary(tail);
    assert_eq!(summary.id, A);
    assert_eq!(summary.parent_id.as_deref(), Some(P));
    assert!(!summary.listed && !summary.resumable);
}
