//! Continue's CLI (`cn` 1.5.47) itself writes a session against a mock Chat
//! Completions model (a prompt, a `List` tool call the model asks for, its result),
//! fen-fs reads it, then `cn --resume` and `cn --fork ID` continue it: what cn sent the
//! model must be `conversation.json` (its history items as the Chat Completions
//! messages cn makes of them: a tool's result, kept in the calling item, as a `tool`
//! message after it), after cn's fresh system message.

mod support;

use fen_fs::sources::continue_cli::ContinueReader;
use fen_fs::sources::foreign::{ForeignReader, feed_all, render_message};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::mock_model::{
    ChatToolCall, MockModel, Request, Response, is_openai_chat, openai_chat_reply,
};

/// The mock model: asks for `List` when the last message is a prompt saying USE_LIST,
/// else answers "reply N".
fn model() -> MockModel {
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
        if last["role"] == "user" && last.to_string().contains("USE_LIST") {
            let id = format!("call_{i}");
            let call = ChatToolCall {
                id: &id,
                name: "List",
                arguments: json!({"dirpath": "."}),
            };
            return openai_chat_reply(None, &[call], usage, stream);
        }
        openai_chat_reply(Some(&format!("reply {i}")), &[], usage, stream)
    })
}

fn cn(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    let config = home.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "name: test\nversion: 0.0.1\nschema: v1\nmodels:\n  - name: mock\n    provider: openai\n    model: mock-model\n    apiBase: {}/v1\n    apiKey: dummy-key\n    roles: [chat, edit, apply]\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let out = Command::new(bin)
        .arg("--config")
        .arg(&config)
        .arg("--auto")
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env_remove("CONTINUE_GLOBAL_DIR")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run cn");
    assert!(
        out.status.success(),
        "cn {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap() != "sessions.json")
        .collect();
    out.sort();
    out
}

fn conversation(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = ContinueReader::new();
    let tail = feed_all(&mut r, &bytes);
    assert!(r.summary(tail).resumable);
    r.conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect()
}

/// History items as the Chat Completions messages cn sends for them.
fn as_chat(items: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items {
        let m = &item["message"];
        let calls: Vec<Value> = m["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                json!({"id": c["id"], "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"]})
            })
            .collect();
        out.push(json!({"role": m["role"], "content": m["content"], "calls": calls}));
        for s in item["toolCallStates"].as_array().into_iter().flatten() {
            let text: String = s["output"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o["content"].as_str())
                .collect();
            out.push(json!({"role": "tool", "id": s["toolCallId"], "content": text}));
        }
    }
    out
}

/// A request's messages in the same form, without the system message.
fn sent(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let content = match &m["content"] {
                Value::Null => json!(""),
                c => c.clone(),
            };
            if m["role"] == "tool" {
                return json!({"role": "tool", "id": m["tool_call_id"], "content": content});
            }
            let calls: Vec<Value> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    json!({"id": c["id"], "name": c["function"]["name"],
                                "arguments": c["function"]["arguments"]})
                })
                .collect();
            json!({"role": m["role"], "content": content, "calls": calls})
        })
        .collect()
}

fn first_chat(requests: &[Request]) -> Value {
    requests
        .iter()
        .filter(|r| is_openai_chat(r))
        .find_map(Request::json)
        .expect("the run asked the model")
}

#[test]
fn cn_resumes_with_what_conversation_json_holds() {
    let test = "cn_resumes_with_what_conversation_json_holds";
    let Some(bin) = support::agent_bin(test, "continue") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let mock = model();
    cn(
        &bin,
        &home,
        &project,
        &mock,
        &["-p", "first prompt USE_LIST"],
    );
    let sessions = home.join(".continue/sessions");
    let files = session_files(&sessions);
    assert_eq!(files.len(), 1, "{files:?}");
    let before = conversation(&files[0]);
    assert!(before[1]["message"]["toolCalls"].is_array(), "{before:?}");

    let n = mock.requests().len();
    cn(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", "-p", "second prompt"],
    );
    let mut want = as_chat(&before);
    want.push(json!({"role": "user", "content": "second prompt", "calls": []}));
    assert_eq!(sent(&first_chat(&mock.requests()[n..])), want);

    // A fork of the session by its id sends the same history, into a new session.
    let after = conversation(&files[0]);
    assert_eq!(after.len(), before.len() + 2);
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let n = mock.requests().len();
    cn(
        &bin,
        &home,
        &project,
        &mock,
        &["--fork", &id, "-p", "third prompt"],
    );
    let mut want = as_chat(&after);
    want.push(json!({"role": "user", "content": "third prompt", "calls": []}));
    assert_eq!(sent(&first_chat(&mock.requests()[n..])), want);
    assert_eq!(
        session_files(&sessions).len(),
        2,
        "the fork is a session of its own"
    );
}
