//! The real Claude Code (2.1.330) runs a subagent against the mock model: the
//! session's request is answered with an `Agent` tool call, the subagent's own request
//! with a text, the session's next ones with a final answer. The files Claude Code
//! wrote are checked (the layout fen-fs reads: `<session>/subagents/agent-<id>.jsonl`,
//! its `.meta.json`, the Agent result naming the `agentId`), then fen-fs shows them
//! linked, and the subagent's `conversation.json` holds what the subagent sent the
//! model. (tests/fixtures/claude-subagents was recorded from this run.)

mod resume_support;
mod support;

use resume_support::{Sandbox, claude_with};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use support::mock_model::{MockModel, Response, anthropic_blocks};
use support::{agent_bin, fen_fs, out_text};

const SUBTASK: &str = "SUBTASK-PROMPT: find the secret word.";
const SUB_ANSWER: &str = "Subagent answer: the word is zanzibar.";

/// The texts of an API request's messages.
fn request_texts(body: &Value) -> String {
    body["messages"].to_string()
}

fn answer(req: &support::mock_model::Request, n: &AtomicUsize) -> Response {
    if req.method != "POST" || !req.path.contains("/messages") {
        return Response::not_found();
    }
    let Some(body) = req.json() else {
        return Response::not_found();
    };
    if req.path.contains("count_tokens") {
        return Response::json(&json!({"input_tokens": 10}));
    }
    let stream = body["stream"].as_bool().unwrap_or(false);
    let all = request_texts(&body);
    let id = format!("msg_{}", n.fetch_add(1, Ordering::SeqCst));
    let text = |t: &str| json!({"type": "text", "text": t});
    if all.contains("PARENT-REQUEST") && all.contains("\"tool_result\"") {
        anthropic_blocks(
            &id,
            &[text("Parent final answer: done.")],
            "end_turn",
            stream,
        )
    } else if all.contains("PARENT-REQUEST") {
        let call = json!({"type": "tool_use", "id": "toolu_agent_1", "name": "Agent",
            "input": {"subagent_type": "general-purpose", "description": "Find the word",
                      "prompt": SUBTASK}});
        anthropic_blocks(
            &id,
            &[text("Let me ask a subagent."), call],
            "tool_use",
            stream,
        )
    } else if all.contains("SUBTASK-PROMPT") {
        anthropic_blocks(&id, &[text(SUB_ANSWER)], "end_turn", stream)
    } else {
        anthropic_blocks(&id, &[text("ok")], "end_turn", stream)
    }
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

fn texts_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(b) => b
            .iter()
            .filter_map(|x| x["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[test]
fn claude_code_runs_a_subagent_and_fen_fs_shows_it_beside_its_parent() {
    let Some(bin) = agent_bin("agent_claude_subagents", "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let n = AtomicUsize::new(1);
    let mock = MockModel::start(move |req| answer(req, &n));
    let out = claude_with(&bin, &sb, &mock, &["-p", "PARENT-REQUEST: use a subagent"]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Parent final answer: done."),
        "{}",
        out_text(&out)
    );

    // What Claude Code wrote: the session, its subagent's transcript and sidecar.
    let files = files_under(&sb.root.join("projects"));
    let session = files
        .iter()
        .find(|p| {
            fen_fs::sources::claude::is_session_file_name(&p.file_name().unwrap().to_string_lossy())
        })
        .unwrap_or_else(|| panic!("no session file: {files:?}"))
        .clone();
    let parent_id = session.file_stem().unwrap().to_string_lossy().into_owned();
    let subs = session.with_extension("").join("subagents");
    let transcript = files
        .iter()
        .find(|p| p.parent() == Some(subs.as_path()) && p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap_or_else(|| panic!("no subagent transcript in {}: {files:?}", subs.display()))
        .clone();
    let name = transcript
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let agent_id = fen_fs::sources::claude::subagent_file_id(&name)
        .unwrap()
        .to_string();
    assert!(
        !fen_fs::sources::claude::is_forked_helper_id(&agent_id),
        "{agent_id}"
    );
    let sidecar: Value = serde_json::from_slice(
        &std::fs::read(subs.join(format!("agent-{agent_id}.meta.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(sidecar["agentType"], "general-purpose");
    assert_eq!(sidecar["description"], "Find the word");
    assert_eq!(sidecar["toolUseId"], "toolu_agent_1");
    let lines: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for l in lines
        .iter()
        .filter(|l| l["type"] == "user" || l["type"] == "assistant")
    {
        assert_eq!(l["isSidechain"], true, "{l}");
        assert_eq!(l["agentId"], agent_id.as_str(), "{l}");
        assert_eq!(l["sessionId"], parent_id.as_str(), "{l}");
    }
    let parent_lines = std::fs::read_to_string(&session).unwrap();
    let result = parent_lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["toolUseResult"]["agentId"].is_string())
        .expect("the Agent call's result names the subagent");
    assert_eq!(result["toolUseResult"]["agentId"], agent_id.as_str());
    assert_eq!(
        result["message"]["content"][0]["tool_use_id"],
        "toolu_agent_1"
    );

    // fen-fs shows both, linked.
    let store = sb.tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let source = format!("claude={}", sb.root.display());
    let fen = |args: &[&str]| {
        let out = fen_fs()
            .args(args)
            .args(["--no-detect", "--source", &source, "--store"])
            .arg(&store)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        out.stdout
    };
    let rows: Value = serde_json::from_slice(&fen(&["list", "--all", "--json"])).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let parent = rows.iter().find(|r| r["id"] == parent_id.as_str()).unwrap();
    let pdir = parent["dir"].as_str().unwrap();
    let child = rows.iter().find(|r| r["id"] == agent_id.as_str()).unwrap();
    assert_eq!(child["dir"], format!("{pdir}.agent-{agent_id}"));
    assert_eq!(child["parent"], pdir);
    let meta: Value = serde_json::from_slice(&fen(&["show", &agent_id, "--view", "meta"])).unwrap();
    assert_eq!(meta["parent"], pdir);
    assert_eq!(meta["agent_id"], agent_id.as_str());
    assert_eq!(meta["subagent"]["call_id"], "toolu_agent_1");
    assert_eq!(meta["resumable"], false);
    let pmeta: Value =
        serde_json::from_slice(&fen(&["show", &parent_id, "--view", "meta"])).unwrap();
    assert_eq!(
        pmeta["subagents"],
        json!([format!("{pdir}.agent-{agent_id}")])
    );
    let md = String::from_utf8(fen(&["show", &parent_id, "--view", "md"])).unwrap();
    assert!(
        md.contains(&format!(
            "↳ subagent `{agent_id}` ran here: [{pdir}.agent-{agent_id}]"
        )),
        "{md}"
    );

    // The subagent's conversation.json holds what it sent the model, and the answer.
    let sub_request = mock
        .bodies("/messages")
        .into_iter()
        .find(|b| {
            let t = request_texts(b);
            t.contains("SUBTASK-PROMPT") && !t.contains("PARENT-REQUEST")
        })
        .expect("the subagent's request");
    let conv: Value =
        serde_json::from_slice(&fen(&["show", &agent_id, "--view", "conversation"])).unwrap();
    let conv = conv.as_array().unwrap();
    let ours: String = conv.iter().map(texts_of).collect::<Vec<_>>().join("\n");
    for m in sub_request["messages"].as_array().unwrap() {
        let sent = texts_of(m);
        for part in sent.split("\n\n").filter(|p| !p.trim().is_empty()) {
            let part = part
                .trim()
                .trim_start_matches("<system-reminder>")
                .trim_end_matches("</system-reminder>")
                .trim();
            assert!(
                ours.contains(part),
                "the subagent sent {part:?}, not in its conversation.json"
            );
        }
    }
    assert_eq!(texts_of(&conv[0]), SUBTASK);
    assert_eq!(texts_of(conv.last().unwrap()), SUB_ANSWER);
}
