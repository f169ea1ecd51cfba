//! Shared by the `fen-fs resume` tests: a conversation with every kind of part, the
//! real agents run against the mock model (each in a temporary HOME and agent root),
//! and what they sent, flattened into comparable steps.
#![allow(dead_code)]

use crate::support::mock_model::MockModel;
use fen_fs::agent::Agent;
use fen_fs::neutral::{Message, ModelRef, Part, Role, SessionFacts, SessionMessages, Vendor};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

pub fn msg(role: Role, parts: Vec<Part>, ts: &str) -> Message {
    let mut m = Message::new(role, parts);
    m.timestamp = Some(ts.into());
    m
}

/// A conversation from `agent` (the source's shapes do not matter: these are neutral
/// values): a user request, an assistant turn with signed thinking, text and a tool
/// call, its result, injected context, a call whose result was never recorded, a
/// last user message; with `summary`, a compaction summary first.
pub fn sample(agent: Agent, source_path: &Path, cwd: &str, summary: bool) -> SessionMessages {
    let model = match agent {
        Agent::Codex => ModelRef {
            provider: Some("openai-codex".into()),
            api: None,
            model: "gpt-5".into(),
        },
        _ => ModelRef {
            provider: Some("anthropic".into()),
            api: Some("anthropic-messages".into()),
            model: "claude-sonnet-4-5".into(),
        },
    };
    let (vendor, opaque) = match agent {
        Agent::Codex => (
            Vendor::OpenAi,
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan: list."}], "encrypted_content": "gAAAAfake"}),
        ),
        _ => (
            Vendor::Anthropic,
            json!({"type": "thinking", "thinking": "Plan: list.", "signature": "EqQBfakesig"}),
        ),
    };
    let mut messages = Vec::new();
    if summary {
        let mut s = msg(
            Role::User,
            vec![text("Earlier we set up the project skeleton.")],
            "2026-11-20T09:00:00.000Z",
        );
        s.summary = true;
        messages.push(s);
    }
    messages.push(msg(
        Role::User,
        vec![text("Please list the files.")],
        "2026-11-20T09:00:01.000Z",
    ));
    let mut a = msg(
        Role::Assistant,
        vec![
            Part::Reasoning {
                vendor,
                text: "Plan: list.".into(),
                opaque: Some(opaque),
            },
            text("I'll list them."),
            Part::ToolCall {
                id: "call_01|fc.A".into(),
                name: "Bash".into(),
                input: json!({"command": "ls", "description": "List files"}),
            },
        ],
        "2026-11-20T09:00:02.000Z",
    );
    a.model = Some(model.clone());
    messages.push(a);
    messages.push(msg(
        Role::Tool,
        vec![Part::ToolResult {
            call_id: "call_01|fc.A".into(),
            name: Some("Bash".into()),
            content: vec![text("a.txt\nb.txt")],
            is_error: false,
        }],
        "2026-11-20T09:00:03.000Z",
    ));
    let mut a = msg(
        Role::Assistant,
        vec![text("There are two files: a.txt and b.txt.")],
        "2026-11-20T09:00:04.000Z",
    );
    a.model = Some(model.clone());
    messages.push(a);
    let mut env = msg(
        Role::User,
        vec![text(
            "<environment_context>\n  <cwd>/elsewhere</cwd>\n</environment_context>",
        )],
        "2026-11-20T09:00:05.000Z",
    );
    env.injected = true;
    messages.push(env);
    messages.push(msg(
        Role::User,
        vec![text("Thanks. Now read a.txt.")],
        "2026-11-20T09:00:06.000Z",
    ));
    let mut a = msg(
        Role::Assistant,
        vec![Part::ToolCall {
            id: "call_02".into(),
            name: "Read".into(),
            input: json!({"file_path": "a.txt"}),
        }],
        "2026-11-20T09:00:07.000Z",
    );
    a.model = Some(model);
    messages.push(a);
    messages.push(msg(
        Role::User,
        vec![text("Never mind, that is all.")],
        "2026-11-20T09:00:08.000Z",
    ));
    SessionMessages {
        facts: SessionFacts {
            agent,
            id: "src-session-1".into(),
            cwd: Some(cwd.into()),
            title: Some("List the files".into()),
            source_path: source_path.to_path_buf(),
            resumable: true,
            ..Default::default()
        },
        messages,
    }
}

/// One step of a conversation as a model API received it.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Text(&'static str, String),
    Call(String),
    Result(String),
}

impl Step {
    pub fn user(t: &str) -> Step {
        Step::Text("user", t.into())
    }
    pub fn assistant(t: &str) -> Step {
        Step::Text("assistant", t.into())
    }
}

/// The steps of an Anthropic Messages API request (`messages`).
pub fn anthropic_steps(body: &Value) -> Vec<Step> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        let role: &'static str = if m["role"] == "assistant" {
            "assistant"
        } else {
            "user"
        };
        match &m["content"] {
            Value::String(s) => out.push(Step::Text(role, s.clone())),
            Value::Array(blocks) => {
                for b in blocks {
                    match b["type"].as_str() {
                        Some("text") => {
                            out.push(Step::Text(role, b["text"].as_str().unwrap_or("").into()))
                        }
                        Some("tool_use") => {
                            out.push(Step::Call(b["name"].as_str().unwrap_or("").into()))
                        }
                        Some("tool_result") => out.push(Step::Result(match &b["content"] {
                            Value::String(s) => s.clone(),
                            Value::Array(a) => a
                                .iter()
                                .filter_map(|x| x["text"].as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                            _ => String::new(),
                        })),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The steps of an OpenAI Responses API request (`input`).
pub fn responses_steps(body: &Value) -> Vec<Step> {
    let mut out = Vec::new();
    for it in body["input"].as_array().into_iter().flatten() {
        match it["type"].as_str() {
            Some("message") => {
                let role: &'static str = match it["role"].as_str() {
                    Some("assistant") => "assistant",
                    Some("user") => "user",
                    _ => continue,
                };
                for c in it["content"].as_array().into_iter().flatten() {
                    if let Some(t) = c["text"].as_str() {
                        out.push(Step::Text(role, t.into()));
                    }
                }
            }
            Some("function_call") | Some("custom_tool_call") => {
                out.push(Step::Call(it["name"].as_str().unwrap_or("").into()))
            }
            Some("function_call_output") | Some("custom_tool_call_output") => {
                out.push(Step::Result(match &it["output"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }))
            }
            _ => {}
        }
    }
    out
}

/// Whether `want` appears in `got` in order (other steps may sit between: the agents
/// add their own context, merge turns, and so on). Text steps match when the text
/// sent contains the one written (agents join merged turns).
pub fn in_order(got: &[Step], want: &[Step]) -> Result<(), String> {
    let mut i = 0;
    for w in want {
        loop {
            let Some(g) = got.get(i) else {
                return Err(format!("{w:?} not found in order in {got:#?}"));
            };
            i += 1;
            let hit = match (g, w) {
                (Step::Text(r1, t1), Step::Text(r2, t2)) => r1 == r2 && t1.contains(t2.as_str()),
                (Step::Result(t1), Step::Result(t2)) => t1.contains(t2.as_str()),
                (a, b) => a == b,
            };
            if hit {
                break;
            }
        }
    }
    Ok(())
}

/// Runs `cmd` with its output captured, killing it after `secs`.
pub fn run_for(mut cmd: Command, secs: u64) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the agent");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "the agent did not finish in {secs} s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends every process whose command line or environment names `marker` (a test's own
/// temporary folder: Codex may leave an app-server behind), by pid.
pub fn kill_left_behind(marker: &Path) {
    let marker = marker.to_string_lossy().into_owned();
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let read = |f: &str| std::fs::read(e.path().join(f)).unwrap_or_default();
        let mentions = |b: Vec<u8>| String::from_utf8_lossy(&b).contains(marker.as_str());
        if mentions(read("cmdline")) || mentions(read("environ")) {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// A temporary HOME, project folder and agent root for one agent run.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub root: PathBuf,
}

impl Sandbox {
    pub fn new(root_name: &str) -> Sandbox {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        let root = tmp.path().join(root_name);
        for d in [&home, &project, &root] {
            std::fs::create_dir_all(d).unwrap();
        }
        Sandbox {
            tmp,
            home,
            project,
            root,
        }
    }

    pub fn cwd(&self) -> String {
        self.project.to_string_lossy().into_owned()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        kill_left_behind(self.tmp.path());
    }
}

pub fn base(bin: &Path, sb: &Sandbox) -> Command {
    let mut c = Command::new(bin);
    c.current_dir(&sb.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("XDG_CONFIG_HOME", sb.home.join(".config"))
        .env("XDG_DATA_HOME", sb.home.join(".local/share"))
        .env("XDG_STATE_HOME", sb.home.join(".local/state"))
        .env("XDG_CACHE_HOME", sb.home.join(".cache"))
        .env("NO_COLOR", "1");
    c
}

/// `claude -p --resume ID PROMPT` against `mock`, in the sandbox's project.
pub fn claude(bin: &Path, sb: &Sandbox, mock: &MockModel, id: &str, prompt: &str) -> Output {
    claude_with(bin, sb, mock, &["-p", "--resume", id, prompt])
}

/// `claude ARGS` against `mock`, in the sandbox's project (`-p --continue PROMPT`
/// looks only in the project folder of the cwd, as the picker does; `--resume ID`
/// finds a session in any project folder).
pub fn claude_with(bin: &Path, sb: &Sandbox, mock: &MockModel, args: &[&str]) -> Output {
    let mut c = base(bin, sb);
    c.args(args)
        .env("CLAUDE_CONFIG_DIR", &sb.root)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1");
    run_for(c, 60)
}

/// `codex exec resume ID PROMPT` against `mock` (a `mock` provider in config.toml),
/// logging how many rollout lines it could not parse.
pub fn codex(bin: &Path, sb: &Sandbox, mock: &MockModel, id: &str, prompt: &str) -> Output {
    let config = format!(
        "model_provider = \"mock\"\nmodel = \"gpt-5\"\n[features]\nplugins = false\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        mock.base_url()
    );
    std::fs::write(sb.root.join("config.toml"), config).unwrap();
    let mut c = base(bin, sb);
    c.args(["exec", "--skip-git-repo-check", "resume", id, prompt])
        .env("CODEX_HOME", &sb.root)
        .env("MOCK_API_KEY", "test-key")
        .env("RUST_LOG", "codex_rollout=trace");
    run_for(c, 60)
}

/// `pi -p --session ID PROMPT` against `mock` (Anthropic's API, from models.json).
pub fn pi(bin: &Path, sb: &Sandbox, mock: &MockModel, id: &str, prompt: &str) -> Output {
    std::fs::write(
        sb.root.join("models.json"),
        json!({"providers": {"anthropic": {"baseUrl": mock.base_url()}}}).to_string(),
    )
    .unwrap();
    let mut c = base(bin, sb);
    c.args(["-p", "--session", id, prompt])
        .env("PI_CODING_AGENT_DIR", &sb.root)
        .env("ANTHROPIC_API_KEY", "test-key");
    run_for(c, 60)
}

/// The JSON bodies of the model requests `mock` received that carry a conversation.
pub fn conversations(mock: &MockModel) -> Vec<Value> {
    mock.requests()
        .iter()
        .filter(|r| r.method == "POST" && !r.path.contains("count_tokens"))
        .filter_map(|r| r.json())
        .filter(|v| v.get("messages").is_some() || v.get("input").is_some())
        .collect()
}

pub fn text_of(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A pi session file under `root` (pi's own layout), for `cwd`.
pub fn pi_session(root: &Path, cwd: &str) -> String {
    let id = "019ab000-0000-7000-8000-0000000000aa";
    let folder = root.join("sessions").join(format!(
        "--{}--",
        cwd.trim_start_matches('/').replace('/', "-")
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join(format!("2026-11-23T10-00-00-000Z_{id}.jsonl"));
    let usage = r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let lines = [
        format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-11-23T10:00:00.000Z","cwd":"{cwd}"}}"#),
        r#"{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-11-23T10:00:01.000Z","message":{"role":"user","content":"Count the lines of notes.txt.","timestamp":1795428001000}}"#.to_string(),
        format!(r#"{{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-11-23T10:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"Use wc.","thinkingSignature":"EqQBpisig"}},{{"type":"text","text":"Counting."}},{{"type":"toolCall","id":"call_abc|fc_1","name":"bash","arguments":{{"command":"wc -l notes.txt"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{usage},"stopReason":"toolUse","timestamp":1795428002000}}}}"#),
        r#"{"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-11-23T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_abc|fc_1","toolName":"bash","content":[{"type":"text","text":"42 notes.txt"}],"isError":false,"timestamp":1795428003000}}"#.to_string(),
        format!(r#"{{"type":"message","id":"a0000004","parentId":"a0000003","timestamp":"2026-11-23T10:00:04.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"notes.txt has 42 lines."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{usage},"stopReason":"stop","timestamp":1795428004000}}}}"#),
        r#"{"type":"session_info","id":"a0000005","parentId":"a0000004","timestamp":"2026-11-23T10:00:05.000Z","name":"Line count"}"#.to_string(),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    id.to_string()
}
