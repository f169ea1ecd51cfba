//! Cline itself is the oracle: the real CLI (3.0.65, `cline` on npm) runs against a
//! mock model on 127.0.0.1 with a temporary home (`cline auth openai-compatible`, no
//! account): a headless prompt that calls a tool, then, in its terminal interface
//! (driven through tmux: `cline --id ID` resumes only there), a second turn and a
//! `/compact`. A fresh Cline then resumes the session with a new prompt, and what it
//! sends must be exactly what a fen-fs mount over its data folder shows as
//! `conversation.json` (prompts as Cline sends them: without the
//! `<user_input mode="act">` wrapper it stores). Cline's background hub daemon is
//! given a port of its own and stopped at the end: no process is left behind.

mod support;

use fen_fs::agent::Agent;
use fen_fs::neutral::Part;
use fen_fs::sources::registry::kind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::mock_model::{MockModel, Request, Response, openai_chat};
use support::{Mount, agent_bin};

/// A streamed chat completion calling Cline's `run_commands` (`echo hi`).
fn tool_call() -> Response {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
               "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let args = json!({"commands": ["echo hi"]}).to_string();
    let mut resp = Response::sse(&[
        (
            "",
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                       "id": "call_mock_1", "type": "function",
                       "function": {"name": "run_commands", "arguments": args}}]}),
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

fn text_of(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn last_user_text(body: &Value) -> Option<String> {
    let last = body.get("messages")?.as_array()?.last()?;
    (last.get("role")? == "user").then(|| text_of(last))
}

fn model(req: &Request) -> Response {
    let body = req.json().unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if stream && last_user_text(&body).is_some_and(|t| t.starts_with("RUNTOOL")) {
        return tool_call();
    }
    openai_chat("Mock reply", stream)
}

/// A request's messages as `role: text [tool call ids]` / `tool: id` (system out).
fn request_form(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match m["role"].as_str().unwrap_or("") {
            "tool" => format!("tool: {}", m["tool_call_id"].as_str().unwrap_or("")),
            role => {
                let calls: Vec<&str> = m["tool_calls"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|c| c["id"].as_str()).collect())
                    .unwrap_or_default();
                format!("{role}: {} {calls:?}", text_of(m))
            }
        })
        .collect()
}

/// The same form of `conversation.json`, through fen-fs's neutral messages (a user
/// message's tool results become `tool` messages, as Cline sends them).
fn conversation_form(conversation: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in conversation {
        let n = kind(Agent::Cline).to_neutral(m).expect("a message");
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for p in &n.parts {
            match p {
                Part::Text { text } => texts.push(text.clone()),
                Part::ToolCall { id, .. } => calls.push(id.clone()),
                Part::ToolResult { call_id, .. } => out.push(format!("tool: {call_id}")),
                _ => {}
            }
        }
        if !texts.is_empty() || !calls.is_empty() {
            out.push(format!(
                "{}: {} {calls:?}",
                m["role"].as_str().unwrap(),
                texts.join("\n")
            ));
        }
    }
    out
}

/// Cline in a temporary home, its hub daemon on a port of its own.
struct Cline {
    bin: PathBuf,
    home: PathBuf,
    proj: PathBuf,
    hub_port: u16,
    /// tmux's socket name (its own server, killed with it).
    tmux: String,
}

impl Cline {
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), self.home.display().to_string()),
            ("TERM".into(), "xterm-256color".into()),
            ("CLINE_HUB_PORT".into(), self.hub_port.to_string()),
            ("CLINE_NO_AUTO_UPDATE".into(), "1".into()),
        ]
    }

    fn data(&self) -> PathBuf {
        self.home.join(".cline/data")
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.bin)
            .args(args)
            .current_dir(&self.proj)
            .env_clear()
            .envs(self.env())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run cline");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "cline {args:?}: {text}");
        text
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.tmux, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `cline --id ID` in its terminal interface, ready for a prompt.
    fn open(&self, id: &str) {
        let env: Vec<String> = self
            .env()
            .into_iter()
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let cmd = format!(
            "cd '{}' && exec env -i {} '{}' --id '{id}'",
            self.proj.display(),
            env.join(" "),
            self.bin.display()
        );
        self.tmux(&[
            "new-session",
            "-d",
            "-s",
            "c",
            "-x",
            "160",
            "-y",
            "50",
            &cmd,
        ]);
        wait_for("Cline's prompt", || self.screen().contains("Ask anything"));
    }

    /// `wait_for`, showing Cline's screen and stored messages when it times out.
    fn wait(&self, what: &str, id: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !ok() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{}\nstored: {:#?}",
                self.screen(),
                stored(&self.data(), id)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "c"])
    }

    /// Whether Cline's input line (the one line starting with `❯ `; the transcript's
    /// prompts are indented) holds `text`.
    fn input_holds(&self, text: &str) -> bool {
        self.screen().lines().any(|l| {
            l.strip_prefix("❯ ")
                .is_some_and(|rest| rest.trim_end() == text)
        })
    }

    /// Types `text` into Cline's input and submits it: waits until the input shows
    /// it (keys sent while the interface starts can be lost), then presses Enter
    /// until the input no longer holds it.
    fn type_line(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.input_holds(text) {
            assert!(
                Instant::now() < deadline,
                "Cline never showed {text:?}:\n{}",
                self.screen()
            );
            if self
                .screen()
                .lines()
                .any(|l| l.starts_with("❯ Ask anything"))
            {
                self.tmux(&["send-keys", "-t", "c", "-l", text]);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let mut last_enter: Option<Instant> = None;
        while self.input_holds(text) {
            assert!(
                Instant::now() < deadline,
                "Cline never took {text:?}:\n{}",
                self.screen()
            );
            if last_enter.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
                self.tmux(&["send-keys", "-t", "c", "Enter"]);
                last_enter = Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The terminal interface and the hub gone (Cline then reads the session from
    /// its files again).
    fn close(&self) {
        self.tmux(&["kill-server"]);
        self.stop_hub();
    }

    /// Stops the hub daemons on this test's port (`--cline-hub-daemon … --port N`):
    /// looked for again until none is seen for a second, as Cline starts one in the
    /// background and may do so while its interface shuts down.
    fn stop_hub(&self) {
        let port = format!("--port {}", self.hub_port);
        let mut quiet_since = Instant::now();
        let deadline = Instant::now() + Duration::from_secs(60);
        while quiet_since.elapsed() < Duration::from_secs(1) {
            assert!(Instant::now() < deadline, "Cline's hub does not stop");
            for (pid, cmd) in processes() {
                if cmd.contains("--cline-hub-daemon") && cmd.contains(&port) {
                    // SAFETY: signalling the hub daemon of this test's Cline (its
                    // own port on its command line).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    quiet_since = Instant::now();
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Processes whose command line names this test's folders (its mount aside).
    fn leftovers(&self) -> Vec<String> {
        let mine = self.proj.parent().unwrap().display().to_string();
        processes()
            .into_iter()
            .filter(|(_, cmd)| cmd.contains(&mine) && !cmd.contains("fen-fs mount"))
            .map(|(pid, cmd)| format!("{pid}: {cmd}"))
            .collect()
    }
}

/// Every live process (zombies aside) and its command line.
fn processes() -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let zombie =
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if !zombie && !cmd.is_empty() {
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

impl Drop for Cline {
    fn drop(&mut self) {
        self.close();
    }
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The stored messages of session `id` (what Cline wrote so far).
fn stored(data: &Path, id: &str) -> Vec<Value> {
    let file = data.join(format!("sessions/{id}/{id}.messages.json"));
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["messages"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn cline_sessions_resume_as_conversation_json_says() {
    let test = "cline_sessions_resume_as_conversation_json_says";
    let Some(bin) = agent_bin(test, "cline") else {
        return;
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(
            std::env::var("FEN_FS_REQUIRE_AGENTS").as_deref() != Ok("1"),
            "{test}: tmux is required to drive Cline's terminal interface"
        );
        eprintln!("\n*** SKIPPED {test}: tmux not installed ***\n");
        return;
    }
    let mock = MockModel::start(model);
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let cline = Cline {
        bin,
        home,
        proj: proj.clone(),
        hub_port: free_port(),
        tmux: format!("fen-fs-cline-{}", std::process::id()),
    };
    let base = format!("{}/v1", mock.base_url());
    cline.run(&[
        "auth",
        "openai-compatible",
        "-k",
        "mock",
        "-m",
        "mock-model",
        "-b",
        &base,
    ]);
    let data = cline.data();
    // Mounted before the session exists: its files are followed live.
    let source = format!("cline={}", data.display());
    let Some(m) = Mount::with_args(test, &["--no-detect", "--source", &source]) else {
        return;
    };

    // Headless: a prompt whose answer calls a tool.
    cline.run(&["RUNTOOL second"]);
    let ids: Vec<String> = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids[0].clone();
    assert_eq!(stored(&data, &id).len(), 4, "prompt, call, result, answer");

    // Its terminal interface: a second turn, then /compact.
    cline.close();
    cline.open(&id);
    cline.type_line("third");
    cline.wait("the answer to the second turn", &id, || {
        stored(&data, &id).len() == 6
    });
    cline.type_line("/compact");
    let compaction = data.join(format!("sessions/{id}/{id}.compaction.json"));
    cline.wait("the compaction", &id, || compaction.exists());
    cline.close();

    // What fen-fs shows, read through the mount.
    let ns =
        fen_fs::store::naming::mount_name(&fen_fs::store::naming::slug(&proj.to_string_lossy()));
    let dir = m.mp.join(&ns);
    let folder = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", dir.display(), m.daemon_log()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&format!("_cline-{id}")))
        .unwrap_or_else(|| panic!("no folder for {id}"));
    let meta = support::meta(&folder);
    assert_eq!(meta["agent"], "cline");
    assert_eq!(meta["resumable"], true, "{meta}");
    assert_eq!(meta["source_path"], json!(data.join("sessions").join(&id)));
    assert_eq!(meta["compactions"], 1, "{meta}");
    let conversation: Vec<Value> =
        serde_json::from_slice(&std::fs::read(folder.join("conversation.json")).unwrap()).unwrap();
    let ours = conversation_form(&conversation);
    assert!(ours[0].starts_with("user: Context summary:"), "{ours:#?}");

    // A fresh Cline resumes it.
    let before = mock.requests().len();
    cline.open(&id);
    cline.type_line("resumed");
    wait_for("the resumed request", || {
        mock.requests()[before..]
            .iter()
            .filter_map(Request::json)
            .any(|b| last_user_text(&b).as_deref() == Some("resumed"))
    });
    let resumed = mock.requests()[before..]
        .iter()
        .filter_map(Request::json)
        .filter(|b| last_user_text(b).as_deref() == Some("resumed"))
        .filter_map(|b| b["messages"].as_array().cloned())
        .max_by_key(Vec::len)
        .unwrap();
    let sent = request_form(&resumed[..resumed.len() - 1]);
    assert_eq!(
        ours, sent,
        "conversation.json is not what Cline resumed with"
    );
    assert!(ours.iter().any(|m| m == "tool: call_mock_1"), "{ours:#?}");
    assert!(
        ours.iter().any(|m| m.starts_with("user: third")),
        "{ours:#?}"
    );

    // fen-fs resume names Cline's own command.
    let out = support::fen_fs()
        .args(["resume", &id, "--no-detect", "--source", &source])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("cline --id {id}")), "{text}");

    cline.close();
    let left = cline.leftovers();
    assert!(left.is_empty(), "Cline left processes behind: {left:#?}");
}
