//! Kimi CLI 1.52.0 itself (the last Python release; its entry point only says it is
//! archived, so its Typer CLI is run by the venv's python) writes a session against a
//! mock Chat Completions model (a `Shell` call, then an answer), fen-fs reads it, and
//! what Kimi sent on `-S ID` with a second prompt must be the session's
//! `conversation.json` messages, then the new prompt.

mod support;

use fen_fs::sources::foreign::{ForeignSummary, feed_all, render_message};
use fen_fs::sources::kimi::kind::Kimi;
use fen_fs::sources::kind::AgentKind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::mock_model::{
    ChatToolCall, MockModel, Request, Response, is_openai_chat, openai_chat_reply,
};

/// The mock model: a first prompt gets a `Shell` call, anything else an answer.
fn model() -> MockModel {
    MockModel::start(|req: &Request| {
        if !is_openai_chat(req) {
            return Response::not_found();
        }
        let body = req.json().unwrap_or(Value::Null);
        let stream = body["stream"].as_bool().unwrap_or(false);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tools = messages.iter().filter(|m| m["role"] == "tool").count();
        let users = messages.iter().filter(|m| m["role"] == "user").count();
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
                           "prompt_tokens_details": {"cached_tokens": 20}});
        if tools == 0 && users == 1 {
            let call = ChatToolCall {
                id: "call_1",
                name: "Shell",
                arguments: json!({"command": "ls"}),
            };
            openai_chat_reply(Some("Listing them."), &[call], usage, stream)
        } else {
            openai_chat_reply(Some(&format!("answer {users}")), &[], usage, stream)
        }
    })
}

fn kimi(python: &Path, home: &Path, project: &Path, args: &[&str]) {
    let mut argv = vec!["kimi", "--yolo", "--print"];
    argv.extend_from_slice(args);
    let out = Command::new(python)
        .arg("-c")
        .arg("import sys; from kimi_cli.cli import cli; sys.argv = sys.argv[1:]; cli()")
        .args(&argv)
        .current_dir(project)
        .env("HOME", home)
        .env_remove("KIMI_SHARE_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run kimi");
    assert!(
        out.status.success(),
        "kimi {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The one session under `root`: its file, summary and conversation.json.
fn session(root: &Path) -> (PathBuf, ForeignSummary, Vec<Value>) {
    let mut files = Vec::new();
    fen_fs::sources::kind::files_below(
        &root.join("sessions"),
        &|depth, name| depth == 2 && name == "context.jsonl",
        &mut files,
    );
    assert_eq!(files.len(), 1, "{files:?}");
    let path = files.remove(0);
    let bytes = std::fs::read(&path).unwrap();
    let mut r = Kimi.reader_for_path(&path);
    let tail = feed_all(r.as_mut(), &bytes);
    let mut s = r.summary(tail);
    Kimi.complete_summary(root, &path, &mut s);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (path, s, conv)
}

#[test]
fn kimi_resumes_with_conversation_json() {
    let test = "kimi_resumes_with_conversation_json";
    let Some(python) = support::agent_bin(test, "kimi") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(home.join(".kimi")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    let mock = model();
    std::fs::write(
        home.join(".kimi/config.toml"),
        format!(
            "default_model = \"mock\"\n[providers.mock]\ntype = \"openai_legacy\"\n\
             base_url = \"{}/v1\"\napi_key = \"dummy-key\"\n[models.mock]\n\
             provider = \"mock\"\nmodel = \"mock\"\nmax_context_size = 100000\n",
            mock.base_url()
        ),
    )
    .unwrap();
    kimi(&python, &home, &project, &["-p", "list files please"]);
    let root = home.join(".kimi");
    let (_, s, conv) = session(&root);
    assert!(s.resumable, "{s:?}");
    let cwd = project.canonicalize().unwrap();
    assert_eq!(s.cwd.as_deref(), cwd.to_str(), "kimi.json names the cwd");
    assert_eq!(s.title.as_deref(), Some("list files please"));
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);

    let n = mock.requests().len();
    kimi(
        &python,
        &home,
        &project,
        &["-S", &s.id, "-p", "a second question"],
    );
    let body = mock.requests()[n..]
        .iter()
        .find(|r| is_openai_chat(r))
        .and_then(Request::json)
        .unwrap();
    let sent = body["messages"].as_array().unwrap();
    assert_eq!(&sent[..conv.len()], &conv[..], "{body}");
    assert_eq!(sent[conv.len()]["content"], "a second question");
    assert_eq!(sent.len(), conv.len() + 1);
    let (_, s2, conv2) = session(&root);
    assert_eq!(s2.id, s.id, "-S adds to the same session");
    assert_eq!(&conv2[..conv.len()], &conv[..]);
}
