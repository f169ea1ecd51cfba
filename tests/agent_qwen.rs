//! Qwen Code 0.24.4 itself writes a session against a mock Chat Completions model (a
//! prompt, a tool call the model asks for and its result, a second turn), fen-fs reads
//! it, then Qwen resumes it: what Qwen sent the model on resume must be
//! `conversation.json` (converted to Chat Completions messages as Qwen converts its
//! history, after the `<system-reminder>` context Qwen adds to each request). Then a
//! `/compress`, and a `--fork-session` resume that must send the compressed
//! conversation; the fork's copied records count their usage once.

mod support;

use fen_fs::sources::foreign::{ForeignReader, feed_all, render_message};
use fen_fs::sources::qwen::QwenReader;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::mock_model::{
    ChatToolCall, MockModel, Request, Response, is_openai_chat, openai_chat_reply,
};

/// The mock model: asks for `glob` when the last message is a prompt saying USE_TOOL,
/// writes a state snapshot when asked to summarize, else answers "reply N". Every
/// answer reports 60,000 prompt tokens (so that `/compress` finds it worth it).
fn model() -> MockModel {
    let n = AtomicUsize::new(0);
    MockModel::start(move |req: &Request| {
        if req.method == "GET" && req.path.ends_with("/models") {
            return Response::json(&json!({"object": "list", "data": [{"id": "mock-model"}]}));
        }
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
        let usage = json!({"prompt_tokens": 60000 + i, "completion_tokens": 5,
                           "total_tokens": 60005 + i,
                           "prompt_tokens_details": {"cached_tokens": 7}});
        let last_text = last.to_string();
        if last["role"] == "user" && last_text.contains("USE_TOOL") {
            let id = format!("call_{i}");
            let call = ChatToolCall {
                id: &id,
                name: "glob",
                arguments: json!({"pattern": "*.txt"}),
            };
            return openai_chat_reply(None, &[call], usage, stream);
        }
        let reply = if last_text.contains("<state_snapshot>") {
            format!("<state_snapshot>summary {i}</state_snapshot>")
        } else {
            format!("reply {i}")
        };
        openai_chat_reply(Some(&reply), &[], usage, stream)
    })
}

fn qwen(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    let base = format!("{}/v1", mock.base_url());
    let out = Command::new(bin)
        .args([
            "--auth-type",
            "openai",
            "--openai-base-url",
            &base,
            "--openai-api-key",
            "dummy-key",
            "--model",
            "mock-model",
            "--approval-mode",
            "yolo",
        ])
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env_remove("QWEN_HOME")
        .env_remove("QWEN_RUNTIME_DIR")
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run qwen");
    assert!(
        out.status.success(),
        "qwen {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `conversation.json` of the session file at `path`, as fen-fs's reader gives it.
fn conversation(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = QwenReader::new();
    let tail = feed_all(&mut r, &bytes);
    let s = r.summary(tail);
    assert!(s.resumable, "{s:?}");
    r.conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect()
}

/// Gemini-shaped history items as the Chat Completions messages Qwen sends for them,
/// each reduced to what both sides carry: user texts, assistant text and tool calls,
/// tool results.
fn as_chat(items: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items {
        let parts = item["parts"].as_array().cloned().unwrap_or_default();
        if item["role"] == "model" {
            let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            let calls: Vec<Value> = parts
                .iter()
                .filter_map(|p| p.get("functionCall"))
                .map(|c| json!({"id": c["id"], "name": c["name"], "args": c["args"]}))
                .collect();
            out.push(json!({"role": "assistant", "text": text, "calls": calls}));
            continue;
        }
        for p in &parts {
            if let Some(r) = p.get("functionResponse") {
                out.push(json!({"role": "tool", "id": r["id"], "text": r["response"]["output"]}));
            }
        }
        let texts: Vec<&Value> = parts.iter().filter_map(|p| p.get("text")).collect();
        if !texts.is_empty() {
            out.push(json!({"role": "user", "texts": texts}));
        }
    }
    out
}

/// The messages of a Chat Completions request in the same reduced form, without the
/// system prompt and the `<system-reminder>` context Qwen adds to user turns.
fn sent(body: &Value) -> Vec<Value> {
    let texts = |c: &Value| -> Vec<Value> {
        match c {
            Value::String(s) => vec![json!(s)],
            Value::Array(a) => a.iter().filter_map(|p| p.get("text")).cloned().collect(),
            _ => Vec::new(),
        }
    };
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "user" => {
                let t: Vec<Value> = texts(&m["content"])
                    .into_iter()
                    .filter(|t| !t.as_str().unwrap_or("").starts_with("<system-reminder>"))
                    .collect();
                if !t.is_empty() {
                    out.push(json!({"role": "user", "texts": t}));
                }
            }
            "assistant" => {
                let text: String = texts(&m["content"])
                    .iter()
                    .filter_map(|t| t.as_str())
                    .collect();
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
                out.push(json!({"role": "assistant", "text": text, "calls": calls}));
            }
            "tool" => {
                let text: String = texts(&m["content"])
                    .iter()
                    .filter_map(|t| t.as_str())
                    .collect();
                out.push(json!({"role": "tool", "id": m["tool_call_id"], "text": text}));
            }
            _ => {}
        }
    }
    out
}

/// The main request of a run (`requests`: its requests): the first whose system
/// prompt is Qwen's own (not a side request's).
fn main_request(requests: &[Request]) -> Value {
    requests
        .iter()
        .filter(|r| is_openai_chat(r))
        .filter_map(Request::json)
        .find(|b| {
            b["messages"][0]["content"]
                .to_string()
                .contains("You are Qwen Code")
        })
        .expect("the run asked the model")
}

fn session_files(chats: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(chats)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    out.sort();
    out
}

#[test]
fn qwen_resumes_with_what_conversation_json_holds() {
    let test = "qwen_resumes_with_what_conversation_json_holds";
    let Some(bin) = support::agent_bin(test, "qwen") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    // No memory-extraction side request after each turn (it only slows the test).
    std::fs::write(
        home.join(".qwen/settings.json"),
        json!({"memory": {"enableManagedAutoMemory": false},
               "privacy": {"usageStatisticsEnabled": false}})
        .to_string(),
    )
    .unwrap();
    let mock = model();
    qwen(
        &bin,
        &home,
        &project,
        &mock,
        &["-p", "first prompt USE_TOOL"],
    );
    let slug: String = project
        .to_str()
        .unwrap()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let chats = home.join(".qwen/projects").join(slug).join("chats");
    let files = session_files(&chats);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    qwen(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", &id, "-p", "second prompt"],
    );
    assert_eq!(
        session_files(&chats).len(),
        1,
        "a resume appends to the file"
    );

    // Resumed with conversation.json: the tool call, its result, both turns.
    let before = conversation(&file);
    assert!(
        before
            .iter()
            .any(|m| m["parts"][0].get("functionCall").is_some()),
        "{before:?}"
    );
    let n = mock.requests().len();
    qwen(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", &id, "-p", "third prompt"],
    );
    let mut want = as_chat(&before);
    want.push(json!({"role": "user", "texts": ["third prompt"]}));
    assert_eq!(sent(&main_request(&mock.requests()[n..])), want);

    // A compaction: the conversation restarts at its summary.
    qwen(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", &id, "-p", "/compress"],
    );
    let compacted = conversation(&file);
    assert!(
        compacted[0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<state_snapshot>summary"),
        "{compacted:?}"
    );
    assert!(compacted.len() < before.len() + 2, "{compacted:?}");

    // A fork resumes with the compacted conversation, into a file of its own.
    let n = mock.requests().len();
    qwen(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", &id, "--fork-session", "-p", "fork prompt"],
    );
    let mut want = as_chat(&compacted);
    want.push(json!({"role": "user", "texts": ["fork prompt"]}));
    assert_eq!(sent(&main_request(&mock.requests()[n..])), want);
    let files = session_files(&chats);
    assert_eq!(files.len(), 2, "{files:?}");
    let fork = files.into_iter().find(|f| *f != file).unwrap();
    let forked = conversation(&fork);
    assert_eq!(forked[forked.len() - 2]["parts"][0]["text"], "fork prompt");

    // Usage: every model call of both runs once, though the fork copied the records
    // of the original's.
    let calls = mock.requests().iter().filter(|r| is_openai_chat(r)).count();
    let mut keys: Vec<u64> = [&file, &fork]
        .iter()
        .flat_map(|f| {
            let mut r = fen_fs::sources::qwen::usage::QwenUsage::new(Default::default());
            fen_fs::usage_record::read_all(&mut r, &std::fs::read(f).unwrap()).records
        })
        .map(|r| r.key.unwrap())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), calls, "one usage record per model call");
}
