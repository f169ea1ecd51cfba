//! OpenHands CLI 1.16.0 itself writes a conversation against a mock Chat Completions
//! model (a `terminal` call, then `finish`), fen-fs reads it, and what OpenHands sent
//! on `--resume` with a second prompt must be the conversation's `conversation.json`
//! messages, then the new prompt (except the lines OpenHands adds to a terminal result
//! as it sends it, which the stored observation does not hold).

mod support;

use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::openhands::{ConversationUnits, OpenhandsReader};
use fen_fs::sources::units::UnitSource;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use support::mock_model::{
    ChatToolCall, MockModel, Request, Response, is_openai_chat, openai_chat_reply,
};

/// The mock model: a first prompt gets a `terminal` call, a tool result or a later
/// prompt gets `finish`.
fn model() -> MockModel {
    MockModel::start(|req: &Request| {
        if !is_openai_chat(req) {
            return Response::not_found();
        }
        let body = req.json().unwrap_or(Value::Null);
        let stream = body["stream"].as_bool().unwrap_or(false);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tools = messages.iter().filter(|m| m["role"] == "tool").count();
        let second = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .is_some_and(|m| m["content"].to_string().contains("second"));
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
                           "prompt_tokens_details": {"cached_tokens": 20}});
        if tools == 0 && !second {
            let call = ChatToolCall {
                id: "call_1",
                name: "terminal",
                arguments: json!({"command": "ls", "security_risk": "LOW"}),
            };
            openai_chat_reply(Some("Listing them."), &[call], usage, stream)
        } else {
            let id = if second { "call_3" } else { "call_2" };
            let call = ChatToolCall {
                id,
                name: "finish",
                arguments: json!({"message": "done"}),
            };
            openai_chat_reply(Some("done"), &[call], usage, stream)
        }
    })
}

fn openhands(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    let out = Command::new(bin)
        .args(["--headless", "--override-with-envs"])
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env_remove("OPENHANDS_PERSISTENCE_DIR")
        .env_remove("OPENHANDS_CONVERSATIONS_DIR")
        .env("LLM_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("LLM_MODEL", "openai/mock")
        .env("LLM_API_KEY", "dummy-key")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run openhands");
    assert!(
        out.status.success(),
        "openhands {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The one conversation under `home`: its summary and conversation.json.
fn conversation(home: &Path) -> (ForeignSummary, Vec<Value>) {
    let units = ConversationUnits::new(&home.join(".openhands"));
    let list = units.list();
    assert_eq!(list.len(), 1);
    let bytes = units.dump(&list[0].key).unwrap().bytes;
    let mut r = OpenhandsReader::new();
    let tail = feed_all(&mut r, &bytes);
    let conv = r
        .conversation(tail)
        .iter()
        .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
        .collect();
    (r.summary(tail), conv)
}

/// The text of a message's content (a string or text blocks).
fn text(m: &Value) -> String {
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

#[test]
fn openhands_resumes_with_conversation_json() {
    let test = "openhands_resumes_with_conversation_json";
    let Some(bin) = support::agent_bin(test, "openhands") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    let mock = model();
    openhands(&bin, &home, &project, &mock, &["-t", "list files please"]);
    let (s, conv) = conversation(&home);
    assert!(s.resumable, "{s:?}");
    assert_eq!(s.cwd.as_deref(), project.to_str());
    let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );

    let n = mock.requests().len();
    openhands(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", &s.id, "-t", "a second question"],
    );
    let body = mock.requests()[n..]
        .iter()
        .find(|r| is_openai_chat(r))
        .and_then(Request::json)
        .unwrap();
    let sent = body["messages"].as_array().unwrap();
    assert_eq!(sent.len(), conv.len() + 1, "{body}");
    for (want, got) in conv.iter().zip(sent) {
        assert_eq!(want["role"], got["role"], "{got}");
        assert_eq!(want["tool_call_id"], got["tool_call_id"], "{got}");
        assert_eq!(want["tool_calls"], got["tool_calls"], "{got}");
        let (w, g) = (text(want), text(got));
        if got["name"] == "terminal" {
            // OpenHands adds the exit code, cwd and interpreter as it sends it.
            assert!(g.starts_with(&w), "{w:?} / {g:?}");
        } else {
            assert_eq!(w, g);
        }
    }
    assert_eq!(text(sent.last().unwrap()), "a second question");
    let (s2, conv2) = conversation(&home);
    assert_eq!(s2.id, s.id, "--resume adds to the same conversation");
    assert_eq!(&conv2[..conv.len()], &conv[..]);
    assert_eq!(conv2.len(), conv.len() + 3);
}
