//! Factory Droid 0.225.2 itself writes a session against a mock Chat Completions model
//! (its "bring your own key" custom model: no login), with an `LS` tool call and its
//! result; fen-fs reads it, then `droid exec --fork ID` continues it: what Droid sent
//! the model must be `conversation.json` (as the Chat Completions messages Droid makes
//! of its Anthropic-shaped messages), then the new prompt. (`droid exec -s ID`, the
//! same session continued, asks Factory's servers for the session first: not offline.)

mod support;

use fen_fs::sources::droid::DroidReader;
use fen_fs::sources::foreign::{ForeignReader, feed_all, render_message};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::mock_model::{
    ChatToolCall, MockModel, Request, Response, is_openai_chat, openai_chat_reply,
};

fn model(project: PathBuf) -> MockModel {
    let n = AtomicUsize::new(0);
    MockModel::start(move |req: &Request| {
        if !is_openai_chat(req) {
            return Response::not_found();
        }
        let body = req.json().unwrap_or(Value::Null);
        let stream = body["stream"].as_bool().unwrap_or(false);
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or(Value::Null);
        let i = n.fetch_add(1, Ordering::SeqCst) + 1;
        let usage = json!({"prompt_tokens": 100 + i, "completion_tokens": 5,
                           "total_tokens": 105 + i,
                           "prompt_tokens_details": {"cached_tokens": 3}});
        if last["role"] == "user" && last.to_string().contains("USE_LS") {
            let id = format!("call_{i}");
            let call = ChatToolCall {
                id: &id,
                name: "LS",
                arguments: json!({"directory_path": project}),
            };
            return openai_chat_reply(None, &[call], usage, stream);
        }
        openai_chat_reply(Some(&format!("reply {i}")), &[], usage, stream)
    })
}

fn droid(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    std::fs::create_dir_all(home.join(".factory")).unwrap();
    std::fs::write(
        home.join(".factory/settings.json"),
        json!({"customModels": [{"model": "mock-model", "displayName": "Mock",
               "baseUrl": format!("{}/v1", mock.base_url()), "apiKey": "dummy-key",
               "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}]})
        .to_string(),
    )
    .unwrap();
    let out = Command::new(bin)
        .args(["exec", "-m", "custom:mock-model"])
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env_remove("FACTORY_HOME")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run droid");
    assert!(
        out.status.success(),
        "droid {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn conversation(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = DroidReader::new();
    let tail = feed_all(&mut r, &bytes);
    assert!(r.summary(tail).resumable);
    r.conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect()
}

/// Stored messages reduced to what a Chat Completions request carries of them.
fn as_chat(messages: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        if m["role"] == "assistant" {
            let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| json!({"id": b["id"], "name": b["name"], "args": b["input"]}))
                .collect();
            out.push(json!({"role": "assistant", "text": text, "calls": calls}));
            continue;
        }
        for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
            out.push(json!({"role": "tool", "id": b["tool_use_id"], "text": b["content"]}));
        }
        let texts: Vec<&Value> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .map(|b| &b["text"])
            .collect();
        if !texts.is_empty() {
            out.push(json!({"role": "user", "texts": texts}));
        }
    }
    out
}

fn sent(body: &Value) -> Vec<Value> {
    let texts = |c: &Value| -> Vec<Value> {
        match c {
            Value::String(s) => vec![json!(s)],
            Value::Array(a) => a.iter().filter_map(|p| p.get("text")).cloned().collect(),
            _ => Vec::new(),
        }
    };
    let joined = |c: &Value| -> String { texts(c).iter().filter_map(|t| t.as_str()).collect() };
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "user" => out.push(json!({"role": "user", "texts": texts(&m["content"])})),
            "assistant" => {
                let calls: Vec<Value> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let args: Value = serde_json::from_str(
                            c["function"]["arguments"].as_str().unwrap_or("null"),
                        )
                        .unwrap();
                        json!({"id": c["id"], "name": c["function"]["name"], "args": args})
                    })
                    .collect();
                out.push(
                    json!({"role": "assistant", "text": joined(&m["content"]), "calls": calls}),
                );
            }
            "tool" => out.push(json!({"role": "tool", "id": m["tool_call_id"],
                                      "text": joined(&m["content"])})),
            _ => {}
        }
    }
    out
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    out.sort();
    out
}

#[test]
fn droid_forks_with_what_conversation_json_holds() {
    let test = "droid_forks_with_what_conversation_json_holds";
    let Some(bin) = support::agent_bin(test, "droid") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let mock = model(project.clone());
    droid(&bin, &home, &project, &mock, &["first prompt USE_LS"]);
    // One folder per cwd (its path made a name).
    let folders: Vec<PathBuf> = std::fs::read_dir(home.join(".factory/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let sessions = folders[0].clone();
    let files = session_files(&sessions);
    assert_eq!(files.len(), 1, "{files:?}");
    let before = conversation(&files[0]);
    assert!(before.iter().any(|m| m.to_string().contains("tool_result")));
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let n = mock.requests().len();
    droid(
        &bin,
        &home,
        &project,
        &mock,
        &["--fork", &id, "fork prompt"],
    );
    let body = mock.requests()[n..]
        .iter()
        .filter(|r| is_openai_chat(r))
        .find_map(Request::json)
        .unwrap();
    let mut want = as_chat(&before);
    want.push(json!({"role": "user", "texts": ["fork prompt"]}));
    assert_eq!(sent(&body), want);
    assert_eq!(
        session_files(&sessions).len(),
        2,
        "the fork is a session of its own"
    );
}
