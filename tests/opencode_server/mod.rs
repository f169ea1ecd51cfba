//! OpenCode and its forks (Kilo) driven through their own server (`<agent> serve`,
//! the code path of `<agent> run` and the TUI) against a mock model on 127.0.0.1 with
//! a temporary home: one scenario (a prompt, a tool call, a compaction, more prompts,
//! an `/undo` left pending, then a resume) that `tests/agent_opencode.rs` and
//! `tests/agent_kilo.rs` both run, each reading what fen-fs shows its own way.
#![allow(dead_code)]

use crate::support::mock_model::{MockModel, Request, Response, openai_chat};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One agent of OpenCode's family: its name (the binary, its config and data folders
/// and `<name>.json`) and the prefix of its environment variables.
pub struct Fork {
    pub name: &'static str,
    pub env: &'static str,
}

pub const OPENCODE: Fork = Fork {
    name: "opencode",
    env: "OPENCODE",
};

pub const KILO: Fork = Fork {
    name: "kilo",
    env: "KILO",
};

/// The agent's data folder in a home made by [`home`].
pub fn data_dir(fork: &Fork, home: &Path) -> PathBuf {
    home.join("data").join(fork.name)
}

/// What fen-fs shows of the scenario's session.
pub struct Shown {
    pub meta: Value,
    pub conversation: Vec<Value>,
    pub transcript: String,
}

/// A streamed chat completion that calls `bash` (`echo hi`).
pub fn tool_call() -> Response {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
               "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let args = json!({"command": "echo hi", "description": "Print hi"}).to_string();
    let mut resp = Response::sse(&[
        (
            "",
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                       "id": "call_mock_1", "type": "function",
                       "function": {"name": "bash", "arguments": ""}}]}),
                Value::Null,
            ),
        ),
        (
            "",
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}),
                Value::Null,
            ),
        ),
        ("", chunk(json!({}), json!("tool_calls"))),
        (
            "",
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                   "model": "mock", "choices": [],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
        ),
    ]);
    resp.body.extend_from_slice(b"data: [DONE]\n\n");
    resp
}

/// The text part Kilo adds to each user message in every request it sends, made anew
/// from the message's time and the session's folder (never stored: a per-request
/// rewrite, as `docs/agents.md` says of others).
const KILO_ENVIRONMENT: &str = "\n\n<environment_details>\n";

/// A chat message's text: its string content, or its text parts joined (Kilo's
/// per-request environment part left out).
pub fn text_of(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .filter(|t| !t.starts_with(KILO_ENVIRONMENT))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The model: a tool call when the newest message is a user's `RUNTOOL …`, else text.
pub fn model(req: &Request) -> Response {
    let body = req.json().unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let last = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    if last.get("role").and_then(Value::as_str) == Some("user")
        && text_of(&last).starts_with("RUNTOOL")
        && stream
    {
        return tool_call();
    }
    openai_chat("Mock reply", stream)
}

/// One HTTP/1.1 request to OpenCode's server; the JSON body of its answer.
pub fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Value {
    try_http(port, method, path, body, Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// The same, failing after `timeout` without an answer.
pub fn try_http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> std::io::Result<Value> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(timeout))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // Read until the answer is complete (the server may keep the connection open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let (head, payload) = loop {
        let n = s.read(&mut buf)?;
        raw.extend_from_slice(&buf[..n]);
        if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
            let body = &raw[split + 4..];
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if let Some(len) = length
                && body.len() >= len
            {
                break (head, body[..len].to_vec());
            }
            if head.contains("transfer-encoding: chunked") && body.ends_with(b"0\r\n\r\n") {
                break (head.clone(), dechunk(body));
            }
            if n == 0 {
                break (head, body.to_vec());
            }
        }
        if n == 0 {
            return Err(std::io::Error::other("connection closed early"));
        }
    };
    if !head.starts_with("http/1.1 2") {
        return Err(std::io::Error::other(format!(
            "{head}\n{}",
            String::from_utf8_lossy(&payload)
        )));
    }
    Ok(serde_json::from_slice(&payload).unwrap_or(Value::Null))
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") {
        let n = usize::from_str_radix(String::from_utf8_lossy(&rest[..nl]).trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < nl + 2 + n {
            break;
        }
        out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
        rest = &rest[(nl + 4 + n).min(rest.len())..];
    }
    out
}

/// `<agent> serve` in its temporary home; killed when dropped.
pub struct Opencode {
    child: Child,
    pub port: u16,
}

impl Drop for Opencode {
    fn drop(&mut self) {
        // Its own process group: 1.1's launcher is a node script that spawns the
        // binary, which must go too.
        // SAFETY: signalling the process group of a child we started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Opencode {
    pub fn start(fork: &Fork, bin: &Path, home: &Path, cwd: &Path, pure: bool) -> Opencode {
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.arg("serve").arg("--port").arg(port.to_string());
        if pure {
            cmd.arg("--pure");
        }
        use std::os::unix::process::CommandExt;
        cmd.process_group(0)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.join("home"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("XDG_STATE_HOME", home.join("state"))
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(home.join("serve.log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            );
        // No network but the mock: no model catalogue, updates, plugins or downloads.
        for flag in [
            "DISABLE_MODELS_FETCH",
            "DISABLE_AUTOUPDATE",
            "DISABLE_DEFAULT_PLUGINS",
            "DISABLE_LSP_DOWNLOAD",
            "EXPERIMENTAL_DISABLE_FILEWATCHER",
            "DISABLE_SHARE",
            "DISABLE_CLAUDE_CODE",
            "FAST_BOOT",
            "DISABLE_FFF",
            // Kilo's own: no background daemon, no upload of sessions.
            "NO_DAEMON",
            "DISABLE_SESSION_INGEST",
        ] {
            cmd.env(format!("{}_{flag}", fork.env), "1");
        }
        cmd.env(format!("{}_TELEMETRY_LEVEL", fork.env), "off");
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {} serve: {e}", fork.name));
        let oc = Opencode { child, port };
        // A request accepted while the server still starts is never answered: ready
        // is when one is.
        let deadline = Instant::now() + Duration::from_secs(90);
        while try_http(port, "GET", "/session", None, Duration::from_secs(2)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{} serve did not start",
                fork.name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        oc
    }

    pub fn prompt(&self, session: &str, text: &str) {
        http(
            self.port,
            "POST",
            &format!("/session/{session}/message"),
            Some(&json!({"parts": [{"type": "text", "text": text}]})),
        );
    }
}

/// A temporary home for the agent with the mock as its only provider.
pub fn home(fork: &Fork, tmp: &Path, mock: &MockModel, tail_turns: bool) -> PathBuf {
    let home = tmp.join("oc");
    for d in ["home", "data", "cache", "state"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::create_dir_all(home.join("config").join(fork.name)).unwrap();
    let mut config = json!({
        "provider": {"mock": {
            // The bundled OpenAI-compatible provider: nothing is fetched from npm.
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "mock"},
            "models": {"mock-model": {"name": "Mock", "limit": {"context": 100000, "output": 4096}}}
        }},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "autoupdate": false,
        "share": "disabled"
    });
    if fork.name == "opencode" {
        config["$schema"] = json!("https://opencode.ai/config.json");
    }
    if tail_turns {
        // Keep the newest turn verbatim after the summary (1.2+).
        config["compaction"] = json!({"tail_turns": 1});
    }
    std::fs::write(
        home.join("config")
            .join(fork.name)
            .join(format!("{}.json", fork.name)),
        serde_json::to_vec_pretty(&config).unwrap(),
    )
    .unwrap();
    home
}

/// What OpenCode sends for stored messages (`toModelMessages`, the parts this
/// scenario has): user text (a compaction as its prompt), assistant text and tool
/// calls, and a tool message per call.
pub fn sent_form(conversation: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in conversation {
        let role = m["info"]["role"].as_str().unwrap_or("");
        let parts = m["parts"].as_array().cloned().unwrap_or_default();
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for p in &parts {
            match p["type"].as_str().unwrap_or("") {
                "text" if p["ignored"] != json!(true) => {
                    let t = p["text"].as_str().unwrap_or("");
                    if !t.is_empty() {
                        texts.push(t.to_string());
                    }
                }
                "compaction" => texts.push("What did we do so far?".into()),
                "tool" => calls.push(p["callID"].as_str().unwrap_or("").to_string()),
                _ => {}
            }
        }
        if texts.is_empty() && calls.is_empty() {
            continue;
        }
        out.push(format!("{role}: {} {calls:?}", texts.join("\n")));
        for c in calls {
            out.push(format!("tool: {c}"));
        }
    }
    out
}

/// The same form of a chat completions request's messages (system ones left out).
pub fn request_form(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match m["role"].as_str().unwrap_or("") {
            "tool" => format!("tool: {}", m["tool_call_id"].as_str().unwrap_or("")),
            role => {
                let calls: Vec<String> = m["tool_calls"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .map(|c| c["id"].as_str().unwrap_or("").to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                format!("{role}: {} {calls:?}", text_of(m))
            }
        })
        .collect()
}

/// The scenario: with the agent started (`oc`), a session made, prompted, compacted
/// and left with an undo pending; `show` then reads what fen-fs shows of it, which
/// must be exactly what the agent sends when the session is resumed.
pub fn scenario(
    fork: &Fork,
    oc: &Opencode,
    mock: &MockModel,
    tail_turns: bool,
    show: impl Fn(&str) -> Shown,
) {
    let session = http(oc.port, "POST", "/session", Some(&json!({})))["id"]
        .as_str()
        .expect("a session id")
        .to_string();
    oc.prompt(&session, "first prompt");
    oc.prompt(&session, "RUNTOOL second");
    oc.prompt(&session, "third");
    http(
        oc.port,
        "POST",
        &format!("/session/{session}/summarize"),
        Some(&json!({"providerID": "mock", "modelID": "mock-model"})),
    );
    oc.prompt(&session, "after compaction");
    oc.prompt(&session, "to be undone");
    // `/undo`: the newest user message is reverted, pending until the next prompt.
    let messages = http(oc.port, "GET", &format!("/session/{session}/message"), None);
    let last_user = messages
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["info"]["role"] == "user")
        .map(|m| m["info"]["id"].as_str().unwrap().to_string())
        .unwrap();
    // A revert is refused while the session is still busy finishing the last
    // prompt (its answer can come back a moment before the session is idle), and
    // the session's last write of that prompt can still drop it: asked again until
    // the session says it is reverted, twice, a second apart.
    let deadline = Instant::now() + Duration::from_secs(30);
    let reverted = || {
        let info = http(oc.port, "GET", &format!("/session/{session}"), None);
        (info["revert"]["messageID"] == json!(last_user), info)
    };
    loop {
        http(
            oc.port,
            "POST",
            &format!("/session/{session}/revert"),
            Some(&json!({"messageID": last_user})),
        );
        let (now, info) = reverted();
        if now && {
            std::thread::sleep(Duration::from_secs(1));
            reverted().0
        } {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} never reverted {last_user}: {info}",
            fork.name
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let shown = show(&session);
    let meta = &shown.meta;
    assert_eq!(meta["agent"], fork.name, "{meta}");
    assert_eq!(meta["resumable"], true, "{meta}");
    // The transcript is the session's rows, one JSON object per line.
    for line in shown.transcript.lines() {
        serde_json::from_str::<Value>(line).expect("transcript.jsonl lines are JSON");
    }
    assert!(
        shown.transcript.contains("to be undone"),
        "the undone turn is still stored"
    );

    let before = mock.requests().len();
    oc.prompt(&session, "resumed");
    let resumed = mock.requests()[before..]
        .iter()
        .filter_map(Request::json)
        .filter_map(|b| b["messages"].as_array().cloned())
        .filter(|ms| ms.last().map(text_of).as_deref() == Some("resumed"))
        .max_by_key(Vec::len)
        .unwrap_or_else(|| {
            let lasts: Vec<Value> = mock.requests()[before..]
                .iter()
                .filter_map(Request::json)
                .filter_map(|b| b["messages"].as_array()?.last().cloned())
                .collect();
            panic!("no request ends with the prompt \"resumed\": {lasts:#?}")
        });
    let sent = request_form(&resumed[..resumed.len() - 1]);
    let ours = sent_form(&shown.conversation);
    assert_eq!(
        ours, sent,
        "conversation.json is not what {} resumed with",
        fork.name
    );
    // What the scenario must have exercised.
    assert_eq!(ours[0], "user: What did we do so far? []", "{ours:#?}");
    assert!(
        !ours.iter().any(|m| m.contains("to be undone")),
        "{ours:#?}"
    );
    if tail_turns {
        assert!(ours[2].contains("third"), "the kept tail turn: {ours:#?}");
    }
    let tool_turn = http(oc.port, "GET", &format!("/session/{session}/message"), None);
    assert!(
        tool_turn.to_string().contains("call_mock_1"),
        "the tool call ran"
    );
}
