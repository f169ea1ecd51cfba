//! `fen-fs mcp` with the real MCP clients: Claude Code (`--mcp-config`) and Codex
//! (`[mcp_servers.fen]` in config.toml), each driven by the loopback mock model,
//! scripted to call `search_sessions` when the request offers it; the tool's answer
//! (a hit that only fen-fs can give: the session's id and the marked snippet) must be
//! in the agent's next request to the mock. Each run has its own HOME and agent root;
//! the history is a Claude Code session in a folder of the test's own.

mod mcp_support;
mod resume_support;
mod support;

use resume_support::{Sandbox, base, claude_with, run_for, text_of};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::agent_bin;
use support::mock_model::{MockModel, Request, Response, anthropic_message, openai_response};

const SESSION: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
const PROMPT: &str = "What did we find about zephyrine before?";

/// A history with one Claude Code session that mentions the planted word.
fn history(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let store = sb.tmp.path().join("fen-store");
    std::fs::create_dir_all(&store).unwrap();
    let claude = sb.tmp.path().join("history-claude");
    mcp_support::claude_session(
        &claude,
        "/home/u/web",
        SESSION,
        "2026-01-02T10:00:00Z",
        &[
            "Why is the login test flaky?",
            "The retry hides a race: zephyrine timing in the login handler.",
        ],
    );
    (store, claude)
}

fn server_args(store: &Path, claude: &Path) -> Vec<String> {
    vec![
        "mcp".into(),
        "--store".into(),
        store.display().to_string(),
        "--no-detect".into(),
        "--source".into(),
        format!("claude={}", claude.display()),
    ]
}

/// What fen-fs's answer holds and nothing else sent to the model could.
fn holds_the_answer(text: &str) -> bool {
    text.contains(SESSION) && text.contains("**zephyrine** timing")
}

fn body_text(r: &Request) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

// ---- Claude Code ----

/// A `tool_use` of `name` with `input`, in the Messages API's shape (streamed when asked).
fn anthropic_tool_use(name: &str, input: Value, stream: bool) -> Response {
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    let block = json!({"type": "tool_use", "id": "toolu_01", "name": name, "input": input});
    if !stream {
        return Response::json(&json!({
            "id": "msg_tool", "type": "message", "role": "assistant", "model": "claude-mock",
            "content": [block], "stop_reason": "tool_use", "stop_sequence": null, "usage": usage,
        }));
    }
    Response::sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_tool", "type": "message", "role": "assistant", "model": "claude-mock",
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "toolu_01", "name": name, "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

/// Calls the fen tool when a request offers it and holds no result yet; else text.
fn claude_mock(req: &Request) -> Response {
    let stream = req
        .json()
        .and_then(|v| v["stream"].as_bool())
        .unwrap_or(false);
    if req.method != "POST" || !req.path.contains("/messages") || req.path.contains("count_tokens")
    {
        return support::mock_model::respond_any(req, "ok");
    }
    let body = body_text(req);
    if body.contains("mcp__fen__search_sessions") && !body.contains("tool_result") {
        return anthropic_tool_use(
            "mcp__fen__search_sessions",
            json!({"query": "zephyrine"}),
            stream,
        );
    }
    anthropic_message("It was a race in the login handler.", stream)
}

/// The text of the `tool_result` blocks of a Messages API request.
fn tool_results(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push(match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(a) => a
                        .iter()
                        .filter_map(|x| x["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                });
            }
        }
    }
    out
}

#[test]
fn claude_code_calls_search_sessions_and_sends_its_answer_to_the_model() {
    let Some(bin) = agent_bin("mcp_agents::claude", "claude") else {
        return;
    };
    let sb = Sandbox::new("claude");
    let (store, history) = history(&sb);
    let config = sb.tmp.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fen": {
            "type": "stdio", "command": support::bin(), "args": server_args(&store, &history),
        }}})
        .to_string(),
    )
    .unwrap();
    let mock = MockModel::start(claude_mock);
    let out = claude_with(
        &bin,
        &sb,
        &mock,
        &[
            "-p",
            PROMPT,
            "--mcp-config",
            config.to_str().unwrap(),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__fen__search_sessions",
        ],
    );
    assert!(out.status.success(), "{}", text_of(&out));
    let requests: Vec<Request> = mock
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/messages") && !r.path.contains("count_tokens"))
        .collect();
    let asked = requests
        .iter()
        .position(|r| body_text(r).contains("mcp__fen__search_sessions"))
        .unwrap_or_else(|| panic!("no request offered the fen tool: {}", text_of(&out)));
    let next = requests[asked + 1..]
        .iter()
        .filter_map(Request::json)
        .find(|b| !tool_results(b).is_empty())
        .unwrap_or_else(|| {
            panic!(
                "no request after the call carried a tool result: {}",
                text_of(&out)
            )
        });
    let results = tool_results(&next);
    assert!(
        results.iter().any(|t| holds_the_answer(t)),
        "the tool result is not fen-fs's answer: {results:#?}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("race in the login handler"));
}

// ---- Codex ----

/// A `function_call` of MCP tool `name` in namespace `mcp__fen`, streamed as the
/// Responses API streams it.
fn openai_function_call(name: &str, arguments: Value) -> Response {
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                      "name": name, "namespace": "mcp__fen",
                      "arguments": arguments.to_string(), "status": "completed"});
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 15});
    Response::sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {
                "id": "resp_tool", "object": "response", "status": "in_progress",
                "model": "mock", "output": []}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {
                "id": "resp_tool", "object": "response", "status": "completed",
                "model": "mock", "output": [item], "usage": usage}}),
        ),
    ])
}

fn codex_mock(req: &Request) -> Response {
    if req.method != "POST" || !req.path.contains("/responses") {
        return support::mock_model::respond_any(req, "ok");
    }
    let body = body_text(req);
    if body.contains("mcp__fen") && !body.contains("function_call_output") {
        return openai_function_call("search_sessions", json!({"query": "zephyrine"}));
    }
    openai_response("It was a race in the login handler.")
}

/// The outputs of the `function_call_output` items of a Responses API request.
fn function_outputs(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| match &i["output"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn codex_calls_search_sessions_and_sends_its_answer_to_the_model() {
    let Some(bin) = agent_bin("mcp_agents::codex", "codex") else {
        return;
    };
    let sb = Sandbox::new("codex");
    let (store, history) = history(&sb);
    let args: Vec<String> = server_args(&store, &history)
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    let mock = MockModel::start(codex_mock);
    let config = format!(
        r#"model = "gpt-5.1-codex"
model_provider = "mock"
approval_policy = "never"
[features]
plugins = false
[model_providers.mock]
name = "mock"
base_url = "{}/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
[mcp_servers.fen]
command = {:?}
args = [{}]
default_tools_approval_mode = "approve"
"#,
        mock.base_url(),
        support::bin(),
        args.join(", ")
    );
    std::fs::write(sb.root.join("config.toml"), config).unwrap();
    let mut c = base(&bin, &sb);
    c.args(["exec", "--skip-git-repo-check", PROMPT])
        .env("CODEX_HOME", &sb.root)
        .env("MOCK_API_KEY", "test-key");
    let out = run_for(c, 60);
    assert!(out.status.success(), "{}", text_of(&out));
    let bodies: Vec<Value> = mock.bodies("/responses");
    let asked = bodies
        .iter()
        .position(|b| b.to_string().contains("mcp__fen"))
        .unwrap_or_else(|| panic!("no request offered the fen tools: {}", text_of(&out)));
    let tools = bodies[asked].to_string();
    for name in [
        "search_sessions",
        "list_sessions",
        "read_session",
        "resume_command",
    ] {
        assert!(tools.contains(name), "{name} not offered: {tools}");
    }
    let outputs: Vec<String> = bodies[asked + 1..]
        .iter()
        .flat_map(function_outputs)
        .collect();
    assert!(
        outputs.iter().any(|t| holds_the_answer(t)),
        "no function_call_output with fen-fs's answer: {outputs:#?}\n{}",
        text_of(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("race in the login handler"));
}
