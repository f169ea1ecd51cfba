//! Shared by the `fen-fs mcp` tests: a plain JSON-RPC client over the server's stdio
//! (newline-delimited JSON, as MCP's stdio transport is), and small Claude Code
//! histories written in Claude Code's own format.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// `fen-fs mcp ARGS` as a child, spoken to over its stdin and stdout.
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Client {
    /// Starts `cmd` (a `fen-fs mcp` command) and initializes the session.
    pub fn start(mut cmd: Command) -> (Client, Value) {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start fen-fs mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut c = Client {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fen-fs-tests", "version": "1"},
            }),
        );
        c.notify("notifications/initialized", json!({}));
        (c, init)
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method} in 60 s"),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed its stdout before answering {method}")
                }
            };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON on the server's stdout ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            if v["id"] == json!(id) {
                return v;
            }
            // A notification (logging, list changes) or another id: not ours.
        }
    }

    /// `tools/call`: (the text of its content, isError).
    pub fn call(&mut self, tool: &str, args: Value) -> (String, bool) {
        let v = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let r = &v["result"];
        assert!(r.is_object(), "tools/call {tool} {args}: no result: {v}");
        let text = r["content"]
            .as_array()
            .unwrap_or_else(|| panic!("no content: {v}"))
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("");
        (text, r["isError"].as_bool().unwrap_or(false))
    }

    /// A call that must succeed.
    pub fn ok(&mut self, tool: &str, args: Value) -> String {
        let (text, error) = self.call(tool, args.clone());
        assert!(!error, "{tool} {args} failed: {text}");
        text
    }

    /// A call that must be a tool error; its text.
    pub fn tool_error(&mut self, tool: &str, args: Value) -> String {
        let (text, error) = self.call(tool, args.clone());
        assert!(error, "{tool} {args} should be a tool error: {text}");
        text
    }

    /// Closes stdin and waits for the server to exit (it must, by itself).
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("fen-fs mcp did not exit after its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The JSON lines of a tool's answer (its `note:` lines left out).
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.starts_with("note: "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A Claude Code session file under `root/projects/<cwd slug>/<id>.jsonl`: user and
/// assistant turns, each text as given, a second apart from `start`.
pub fn claude_session(root: &Path, cwd: &str, id: &str, start: &str, texts: &[&str]) -> PathBuf {
    let folder = root.join("projects").join(cwd.replace(['/', '.'], "-"));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{id}.jsonl"));
    let t0 = chrono::DateTime::parse_from_rfc3339(start).unwrap();
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for (i, text) in texts.iter().enumerate() {
        let uuid = format!("{}-{i:04}", &id[..8]);
        let ts = (t0 + chrono::Duration::seconds(i as i64))
            .to_utc()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let mut line = json!({
            "uuid": uuid, "parentUuid": parent, "sessionId": id, "cwd": cwd,
            "timestamp": ts, "isSidechain": false, "userType": "external", "version": "2.1.0",
        });
        if i % 2 == 0 {
            line["type"] = json!("user");
            line["message"] = json!({"role": "user", "content": text});
        } else {
            line["type"] = json!("assistant");
            line["message"] = json!({
                "id": format!("msg_{i}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            });
        }
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(uuid);
    }
    std::fs::write(&path, out).unwrap();
    // As Claude Code leaves it: last written at its last entry's time.
    let last = t0 + chrono::Duration::seconds(texts.len().saturating_sub(1) as i64);
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_secs(last.timestamp() as u64);
    std::fs::File::options()
        .append(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    path
}

/// Every file under `dir` with its bytes (to show nothing was written there).
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}
