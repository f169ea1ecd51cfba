//! `fen-fs resume`'s writers in-process, for every target and from every kind of
//! source: where the file goes, what its lines hold (WRITING-FOR-RESUME §1-§3, §5),
//! the rules of the conversion (pairing, ids, reasoning per vendor, injected context,
//! summary), provenance and the ledger. The agents themselves check these files in
//! `resume_agents.rs`; fen-fs's own readers check each one before it is kept.

mod resume_support;
mod support;

use fen_fs::agent::Agent;
use fen_fs::neutral::{Part, Role, SessionMessages};
use fen_fs::resume::ledger::Ledger;
use fen_fs::resume::{Made, Target, make};
use resume_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Setup {
    tmp: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    source: PathBuf,
    cwd: String,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("agent");
    let store = tmp.path().join("store");
    let project = tmp.path().join("project");
    for d in [&root, &store, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    let source = tmp.path().join("source.jsonl");
    std::fs::write(&source, "{\"a\":1}\n").unwrap();
    let cwd = project.to_string_lossy().into_owned();
    Setup {
        tmp,
        root,
        store,
        source,
        cwd,
    }
}

impl Setup {
    fn ledger(&self) -> Ledger {
        Ledger::for_store(&self.store)
    }
    fn target(&self, agent: Agent) -> Target {
        match agent {
            Agent::Fen => Target::Fen(Arc::new(fen_fs::store::Store::open_existing(&self.store))),
            a => Target::Agent {
                agent: a,
                root: self.root.clone(),
            },
        }
    }
    fn make(&self, session: &SessionMessages, agent: Agent) -> Made {
        make(session, &self.target(agent), &self.cwd, &self.ledger()).unwrap()
    }
    fn sample(&self, agent: Agent, summary: bool) -> SessionMessages {
        sample(agent, &self.source, &self.cwd, summary)
    }
}

fn lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.ends_with(b"\n"), "the file ends without a newline");
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn valid_claude_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[test]
fn claude_code_gets_one_chain_with_provenance_normalised_ids_and_a_title() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Pi, true), Agent::Claude);
    // projects/<slug of the real cwd>/<uuid v4>.jsonl
    let real = std::fs::canonicalize(&s.cwd).unwrap();
    let slug: String = real
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    assert_eq!(
        made.path,
        s.root
            .join("projects")
            .join(&slug)
            .join(format!("{}.jsonl", made.id))
    );
    assert_eq!(
        uuid::Uuid::parse_str(&made.id).unwrap().get_version_num(),
        4
    );
    let ls = lines(&made.path);
    let (chain, rest): (Vec<&Value>, Vec<&Value>) =
        ls.iter().partition(|l| l["type"] != "custom-title");
    // One linear chain from a compact boundary, every line with the recommended fields.
    assert_eq!(chain[0]["type"], "system");
    assert_eq!(chain[0]["subtype"], "compact_boundary");
    assert_eq!(chain[0]["parentUuid"], Value::Null);
    assert_eq!(chain[1]["isCompactSummary"], true);
    assert!(
        chain[1]["message"]["content"]
            .as_str()
            .unwrap()
            .ends_with("summarized below:\nEarlier we set up the project skeleton.")
    );
    for w in chain.windows(2) {
        assert_eq!(w[1]["parentUuid"], w[0]["uuid"]);
    }
    for l in &chain {
        assert_eq!(l["sessionId"], made.id.as_str());
        assert_eq!(l["cwd"], s.cwd.as_str());
        assert_eq!(l["isSidechain"], false);
        assert_eq!(l["userType"], "external");
        assert_eq!(l["fenSource"]["agent"], "pi");
        assert_eq!(l["fenSource"]["path"], s.source.to_string_lossy().as_ref());
        assert!(l.get("entrypoint").is_none());
        assert!(l["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["customTitle"], "List the files (from pi)");
    // Tool ids valid for Anthropic and equal on both sides; pi's signed Anthropic
    // thinking goes back to Claude.
    let blocks: Vec<&Value> = chain
        .iter()
        .filter_map(|l| l["message"]["content"].as_array())
        .flatten()
        .collect();
    let uses: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(uses, ["call_01_fc_A", "call_02"]);
    assert_eq!(uses, results);
    assert!(uses.iter().all(|i| valid_claude_id(i)));
    let thinking: Vec<&&Value> = blocks.iter().filter(|b| b["type"] == "thinking").collect();
    assert_eq!(thinking.len(), 1);
    assert_eq!(thinking[0]["signature"], "EqQBfakesig");
    let synthetic = blocks
        .iter()
        .find(|b| b["tool_use_id"] == "call_02")
        .unwrap();
    assert_eq!(synthetic["is_error"], true);
    assert_eq!(synthetic["content"], "[no result recorded]");
    // The injected context is not there.
    let all = std::fs::read_to_string(&made.path).unwrap();
    assert!(!all.contains("/elsewhere"));
    assert_eq!(made.report.dropped_context, 1);
    assert_eq!(made.report.synthesized_results, 1);
}

#[test]
fn a_summary_for_claude_code_is_introduced_as_claude_code_introduces_its_own() {
    // Claude Code sends its compact summary as the first user message: without its
    // lead the model reads the summary as the user's own first request.
    let s = setup();
    let made = s.make(&s.sample(Agent::Codex, true), Agent::Claude);
    let line = &lines(&made.path)[1];
    assert_eq!(line["isCompactSummary"], true);
    let content = line["message"]["content"].as_str().unwrap();
    assert!(
        content.starts_with(
            "This session is being continued from a previous conversation that ran out of context."
        ),
        "{content}"
    );
    // fen-fs reads it back as the bare summary, so it is carried on as one.
    let m = fen_fs::sources::claude::to_neutral(&line["message"]).unwrap();
    assert!(m.summary);
    assert_eq!(
        m.parts,
        vec![text("Earlier we set up the project skeleton.")]
    );
}

#[test]
fn claude_code_gets_no_reasoning_from_codex_and_tool_calls_as_text() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Codex, false), Agent::Claude);
    let all = std::fs::read_to_string(&made.path).unwrap();
    assert!(!all.contains("gAAAAfake") && !all.contains("\"thinking\""));
    assert!(!all.contains("\"tool_use\"") && !all.contains("\"tool_result\""));
    assert!(all.contains("[external_agent_tool_call: Bash]"));
    assert_eq!(made.report.dropped_reasoning, 1);
    assert_eq!(made.report.calls_as_text, 2);
    // No summary: the chain starts at the first user line.
    assert_eq!(lines(&made.path)[0]["parentUuid"], Value::Null);
    assert_eq!(lines(&made.path)[0]["type"], "user");
}

#[test]
fn codex_gets_the_importers_pattern_and_no_provider_or_instructions() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Codex, true), Agent::Codex);
    let name = made
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("rollout-") && name.ends_with(&format!("-{}.jsonl", made.id)));
    assert!(fen_fs::sources::codex::CodexReader::is_rollout_file_name(
        &name
    ));
    assert_eq!(
        uuid::Uuid::parse_str(&made.id).unwrap().get_version_num(),
        7
    );
    // sessions/YYYY/MM/DD (local date, as the file name's time)
    let rel = made.path.strip_prefix(s.root.join("sessions")).unwrap();
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(parts.len(), 4);
    assert!(name.starts_with(&format!("rollout-{}-{}-{}T", parts[0], parts[1], parts[2])));
    let ls = lines(&made.path);
    let meta = &ls[0];
    assert_eq!(meta["type"], "session_meta");
    let p = &meta["payload"];
    assert_eq!(p["id"], made.id.as_str());
    assert_eq!(p["originator"], "fen-fs");
    assert_eq!(p["source"], "cli");
    assert_eq!(p["cwd"], s.cwd.as_str());
    assert!(p["cli_version"].is_string() && p["timestamp"].is_string());
    assert!(p.get("model_provider").is_none() && p.get("base_instructions").is_none());
    assert_eq!(p["fen_source"]["agent"], "codex");
    assert!(!ls.iter().any(|l| l["type"] == "turn_context"));
    // A user_message event per user turn, right after its response_item.
    let users: Vec<usize> = (0..ls.len())
        .filter(|&i| ls[i]["payload"]["type"] == "message" && ls[i]["payload"]["role"] == "user")
        .collect();
    let events: Vec<&str> = ls
        .iter()
        .filter(|l| l["payload"]["type"] == "user_message")
        .map(|l| l["payload"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "Please list the files.",
            "Thanks. Now read a.txt.",
            "Never mind, that is all."
        ]
    );
    assert_eq!(users.len(), 4, "the summary and three user turns");
    assert!(
        ls[users[0]]["payload"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(fen_fs::resume::codex::SUMMARY_PREFIX)
    );
    let starts = ls
        .iter()
        .filter(|l| l["payload"]["type"] == "task_started")
        .count();
    let ends = ls
        .iter()
        .filter(|l| l["payload"]["type"] == "task_complete")
        .count();
    assert_eq!((starts, ends), (3, 3));
    // Codex's own reasoning goes back to Codex; calls stay structured and paired.
    assert!(
        ls.iter().any(|l| l["payload"]["type"] == "reasoning"
            && l["payload"]["encrypted_content"] == "gAAAAfake")
    );
    let calls: Vec<&str> = ls
        .iter()
        .filter(|l| l["payload"]["type"] == "function_call")
        .map(|l| l["payload"]["call_id"].as_str().unwrap())
        .collect();
    let outputs: Vec<&str> = ls
        .iter()
        .filter(|l| l["payload"]["type"] == "function_call_output")
        .map(|l| l["payload"]["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        ["call_01", "call_02"],
        "pi-style `call|item` ids keep their call id"
    );
    assert_eq!(calls, outputs);
    let args = ls
        .iter()
        .find(|l| l["payload"]["type"] == "function_call")
        .unwrap()["payload"]["arguments"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        serde_json::json!({"command": "ls", "description": "List files"})
    );
    assert!(!s.root.join("state_5.sqlite").exists());
    assert!(!s.root.join("session_index.jsonl").exists());
}

#[test]
fn codex_gets_no_anthropic_thinking() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Claude, false), Agent::Codex);
    let all = std::fs::read_to_string(&made.path).unwrap();
    assert!(!all.contains("EqQBfakesig") && !all.contains("\"reasoning\""));
}

#[test]
fn pi_gets_a_version_3_chain_with_the_sources_model_and_its_reasoning() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Claude, true), Agent::Pi);
    let rel = made.path.strip_prefix(s.root.join("sessions")).unwrap();
    let folder = rel.iter().next().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        folder,
        format!("--{}--", s.cwd.trim_start_matches('/').replace('/', "-"))
    );
    let name = made
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.ends_with(&format!("_{}.jsonl", made.id)));
    assert!(!name.contains(':'));
    let ls = lines(&made.path);
    assert_eq!(ls[0]["type"], "session");
    assert_eq!(ls[0]["version"], 3);
    assert_eq!(ls[0]["cwd"], s.cwd.as_str());
    assert_eq!(ls[0]["parentSession"], s.source.to_string_lossy().as_ref());
    let entries = &ls[1..];
    assert_eq!(entries[0]["parentId"], Value::Null);
    for w in entries.windows(2) {
        assert_eq!(w[1]["parentId"], w[0]["id"]);
    }
    for e in entries {
        let id = e["id"].as_str().unwrap();
        assert!(id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()));
    }
    let messages: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"])
        .collect();
    for m in &messages {
        assert!(m["timestamp"].is_i64(), "timestamps in ms: {m}");
    }
    let assistants: Vec<&&Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), 3);
    for a in &assistants {
        assert_eq!(a["provider"], "anthropic");
        assert_eq!(a["api"], "anthropic-messages");
        assert_eq!(a["model"], "claude-sonnet-4-5");
        assert_eq!(a["usage"]["totalTokens"], 0);
        assert_eq!(a["usage"]["cost"]["total"], 0);
    }
    assert_eq!(assistants[0]["stopReason"], "toolUse");
    assert_eq!(assistants[1]["stopReason"], "stop");
    assert_eq!(assistants[0]["content"][0]["type"], "thinking");
    assert_eq!(
        assistants[0]["content"][0]["thinkingSignature"],
        "EqQBfakesig"
    );
    let results: Vec<&&Value> = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(results[0]["toolName"], "Bash");
    assert_eq!(results[0]["toolCallId"], "call_01|fc.A");
    assert_eq!(results[1]["isError"], true);
    // The summary is a compaction keeping every message; the title closes the file.
    let c = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["summary"], "Earlier we set up the project skeleton.");
    assert_eq!(c["firstKeptEntryId"], entries[0]["id"]);
    let last = entries.last().unwrap();
    assert_eq!(last["type"], "session_info");
    assert_eq!(last["name"], "List the files (from claude)");
}

#[test]
fn pi_keeps_codex_reasoning_as_a_signed_thinking_block() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Codex, false), Agent::Pi);
    let ls = lines(&made.path);
    let a = ls
        .iter()
        .find(|l| l["message"]["role"] == "assistant")
        .unwrap();
    let t = &a["message"]["content"][0];
    assert_eq!(t["type"], "thinking");
    assert_eq!(t["thinking"], "Plan: list.");
    let item: Value = serde_json::from_str(t["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(item["encrypted_content"], "gAAAAfake");
    assert_eq!(a["message"]["provider"], "openai-codex");
    assert_eq!(a["message"]["api"], "openai-codex-responses");
}

#[test]
fn fen_gets_a_session_starting_with_a_compaction_of_the_conversation() {
    let s = setup();
    let made = s.make(&s.sample(Agent::Claude, true), Agent::Fen);
    assert!(made.path.starts_with(&s.store));
    let ls = lines(&made.path);
    assert_eq!(ls[0]["type"], "session");
    assert_eq!(ls[0]["cwd"], s.cwd.as_str());
    assert_eq!(ls[1]["type"], "compaction");
    let messages = ls[1]["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        serde_json::json!({"role": "user", "content": "The conversation before this point was compacted. Summary:\n\nEarlier we set up the project skeleton."})
    );
    assert_eq!(
        messages[1],
        serde_json::json!({"role": "user", "content": "Please list the files."})
    );
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["content"][0]["type"], "text",
        "no thinking in fen: {}",
        messages[2]
    );
    assert_eq!(messages[2]["content"][1]["type"], "tool_use");
    assert_eq!(messages[3]["content"][0]["type"], "tool_result");
    assert_eq!(ls[2]["type"], "metadata");
    assert_eq!(ls[2]["data"]["resumed_from"]["agent"], "claude");
    assert_eq!(ls[3]["type"], "title");
    assert_eq!(ls[3]["title"], "List the files (from claude)");
    // conversation.json is exactly those messages.
    let (ns, dir) = made.fen_dir.clone().unwrap();
    let out = support::fen_on(&s.store, &["show", &dir, "--view", "conversation"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let conv: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(&conv, messages);
    assert!(ns.starts_with("--"));
}

#[test]
fn a_summary_carried_into_fen_stays_a_summary_when_carried_on() {
    // fen's compaction holds the summary as §3's synthetic message, which the model
    // reads as a summary and fen-fs reads back as one: carried on to Claude Code it
    // becomes its compact summary again, not a plain first request.
    use fen_fs::sources::SessionSource;
    let s = setup();
    let made = s.make(&s.sample(Agent::Codex, true), Agent::Fen);
    let (ns, dir) = made.fen_dir.clone().unwrap();
    let store = Arc::new(fen_fs::store::Store::open_existing(&s.store));
    let fen = fen_fs::sources::fen::FenSource::new(store);
    let again = fen.messages(&ns, &dir, false).unwrap();
    assert!(again.messages[0].summary, "{:?}", again.messages[0]);
    assert_eq!(
        again.messages[0].parts,
        vec![text("Earlier we set up the project skeleton.")]
    );
    let claude = s.make(&again, Agent::Claude);
    let first = &lines(&claude.path)[0];
    assert_eq!(first["subtype"], "compact_boundary", "{first}");
}

#[test]
fn the_same_unchanged_source_gives_the_session_already_made() {
    let s = setup();
    let session = s.sample(Agent::Claude, false);
    let first = s.make(&session, Agent::Codex);
    assert!(first.earlier.is_none());
    let again = s.make(&session, Agent::Codex);
    assert!(again.earlier.is_some());
    assert_eq!(
        (again.path.clone(), again.id.clone()),
        (first.path.clone(), first.id.clone())
    );
    assert_eq!(files_under(&s.root.join("sessions")).len(), 1);
    // Another agent, or another cwd, is another session.
    let pi = s.make(&session, Agent::Pi);
    assert!(pi.earlier.is_none());
    // The source changed: a new session.
    std::fs::write(&s.source, "{\"a\":2}\n").unwrap();
    let changed = s.make(&session, Agent::Codex);
    assert!(changed.earlier.is_none());
    assert_ne!(changed.path, first.path);
    // The session made is gone: made again.
    std::fs::remove_file(&changed.path).unwrap();
    let remade = s.make(&session, Agent::Codex);
    assert!(remade.earlier.is_none());
    assert!(remade.path.exists());
    assert!(s.store.join(".fen-cache/resume-ledger.jsonl").is_file());
}

#[test]
fn resumes_of_the_same_source_at_once_make_one_session() {
    // Two `fen-fs resume ID --in pi` started together (a script, a double click):
    // the second waits for the first and prints the session it made.
    let s = setup();
    let session = s.sample(Agent::Claude, false);
    let start = std::sync::Barrier::new(4);
    let made: Vec<Made> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    s.make(&session, Agent::Pi)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(files_under(&s.root.join("sessions")).len(), 1);
    assert_eq!(made.iter().filter(|m| m.earlier.is_none()).count(), 1);
    assert!(made.iter().all(|m| m.id == made[0].id));
}

#[test]
fn another_cwd_moves_the_new_session_and_its_cwd_fields() {
    let s = setup();
    let moved = s.tmp.path().join("renamed-project");
    std::fs::create_dir(&moved).unwrap();
    let moved = moved.to_string_lossy().into_owned();
    let session = s.sample(Agent::Claude, false);
    let made = make(&session, &s.target(Agent::Claude), &moved, &s.ledger()).unwrap();
    let slug: String = std::fs::canonicalize(&moved)
        .unwrap()
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    assert_eq!(
        made.path.parent().unwrap(),
        s.root.join("projects").join(slug)
    );
    assert!(
        lines(&made.path)
            .iter()
            .filter(|l| l["type"] != "custom-title")
            .all(|l| l["cwd"] == moved.as_str())
    );
    // A cwd that does not exist (yet) still gets its file.
    let gone = format!("{}/no-longer-here", s.cwd);
    let made = make(&session, &s.target(Agent::Pi), &gone, &s.ledger()).unwrap();
    assert_eq!(lines(&made.path)[0]["cwd"], gone.as_str());
}

#[test]
fn a_cwd_reached_through_a_link_gets_the_folder_of_its_real_path_in_pi_too() {
    // pi (like Claude Code) names the folder after process.cwd(), which is the real
    // path: run from the link, `pi --session ID` would otherwise find the session
    // only in "a different project" and offer to fork it.
    let s = setup();
    let link = s.tmp.path().join("link-to-project");
    std::os::unix::fs::symlink(&s.cwd, &link).unwrap();
    let link = link.to_string_lossy().into_owned();
    let session = s.sample(Agent::Claude, false);
    let made = make(&session, &s.target(Agent::Pi), &link, &s.ledger()).unwrap();
    let real = std::fs::canonicalize(&s.cwd).unwrap();
    let folder = format!(
        "--{}--",
        real.to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "-")
    );
    assert_eq!(
        made.path.parent().unwrap(),
        s.root.join("sessions").join(folder)
    );
}

#[test]
fn empty_or_unresumable_conversations_are_refused_and_nothing_is_written() {
    let s = setup();
    let mut session = s.sample(Agent::Claude, false);
    session.facts.resumable = false;
    session.facts.not_resumable_reason = Some("No conversation found".into());
    let err = make(&session, &s.target(Agent::Pi), &s.cwd, &s.ledger()).unwrap_err();
    assert!(
        err.reason.contains("No conversation found"),
        "{}",
        err.reason
    );
    let mut session = s.sample(Agent::Claude, false);
    session.messages.clear();
    let err = make(&session, &s.target(Agent::Pi), &s.cwd, &s.ledger()).unwrap_err();
    assert!(err.reason.contains("empty"), "{}", err.reason);
    // Only injected context: nothing left once it is dropped.
    let mut session = s.sample(Agent::Claude, false);
    session.messages.retain(|m| m.injected);
    session.messages.push({
        let mut m = msg(
            Role::System,
            vec![text("You are helpful.")],
            "2026-11-20T09:00:00Z",
        );
        m.injected = false;
        m
    });
    let err = make(&session, &s.target(Agent::Claude), &s.cwd, &s.ledger()).unwrap_err();
    assert!(err.reason.contains("nothing is left"), "{}", err.reason);
    assert!(
        files_under(&s.root).is_empty(),
        "{:?}",
        files_under(&s.root)
    );
}

#[test]
fn images_keep_their_form_in_each_target() {
    let s = setup();
    let mut session = s.sample(Agent::Claude, false);
    session.messages.insert(
        0,
        msg(
            Role::User,
            vec![
                text("What is in this picture?"),
                Part::Image {
                    mime: "image/png".into(),
                    data: Some("iVBORw0KGgo=".into()),
                    url: None,
                },
            ],
            "2026-11-20T08:59:00Z",
        ),
    );
    let claude = std::fs::read_to_string(s.make(&session, Agent::Claude).path).unwrap();
    assert!(
        claude.contains(
            r#""source":{"type":"base64","data":"iVBORw0KGgo=","media_type":"image/png"}"#
        ),
        "{claude}"
    );
    let codex = std::fs::read_to_string(s.make(&session, Agent::Codex).path).unwrap();
    assert!(codex.contains(r#""image_url":"data:image/png;base64,iVBORw0KGgo=""#));
    let pi = std::fs::read_to_string(s.make(&session, Agent::Pi).path).unwrap();
    assert!(pi.contains(r#""data":"iVBORw0KGgo=","mimeType":"image/png""#));
}

#[test]
fn every_direction_writes_a_session_that_reads_back_whole() {
    // Each make() reads its file back with fen-fs's reader of the target and keeps it
    // only if the conversation comes back as written; here every source kind goes to
    // every target, with and without a summary, and the message counts add up.
    for source in [Agent::Fen, Agent::Pi, Agent::Claude, Agent::Codex] {
        for target in [Agent::Fen, Agent::Pi, Agent::Claude, Agent::Codex] {
            for summary in [false, true] {
                let s = setup();
                let made = s.make(&s.sample(source, summary), target);
                assert!(made.path.is_file(), "{source:?} -> {target:?}");
                assert!(
                    made.messages >= 8 + usize::from(summary),
                    "{source:?} -> {target:?}: {}",
                    made.messages
                );
                assert_eq!(made.report.dropped_context, 1);
                assert_eq!(made.report.synthesized_results, 1);
            }
        }
    }
}
