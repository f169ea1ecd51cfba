//! A Claude Code session with one text planted in every place, for export's tests.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const ID: &str = "7a1c0de5-0000-4000-8000-00000000e7e7";

/// A Claude Code session file whose every place holds `text`: the title
/// (customTitle), the prompt, thinking, the answer, a tool call's input (command and
/// file path), its output, and a second prompt; `cwd` its working directory.
pub fn claude_session(root: &Path, id: &str, cwd: &str, text: &str) -> PathBuf {
    let slug: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = root.join("projects").join(slug).join(format!("{id}.jsonl"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut lines = Vec::new();
    let mut parent = Value::Null;
    let mut n = 0;
    let mut push = |kind: &str, message: Value, lines: &mut Vec<Value>| {
        n += 1;
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        lines.push(json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": id, "cwd": cwd,
            "timestamp": format!("2026-03-01T10:00:{n:02}.000Z"), "message": message
        }));
        parent = Value::from(uuid);
    };
    push(
        "user",
        json!({"role": "user", "content": format!("please look at this: {text}")}),
        &mut lines,
    );
    push(
        "assistant",
        json!({"role": "assistant", "model": "claude-x", "content": [
            {"type": "thinking", "thinking": format!("the user pasted {text}"), "signature": "c2ln"},
        ]}),
        &mut lines,
    );
    push(
        "assistant",
        json!({"role": "assistant", "model": "claude-x", "content": [
            {"type": "text", "text": format!("Here is what I see:\n\n{text}\n")},
        ]}),
        &mut lines,
    );
    push(
        "assistant",
        json!({"role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": format!("echo '{text}'"), "description": text}},
        ]}),
        &mut lines,
    );
    push(
        "user",
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": format!("output:\n{text}\n")},
        ]}),
        &mut lines,
    );
    push(
        "assistant",
        json!({"role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": "toolu_02", "name": "Edit", "input": {"file_path": format!("{cwd}/notes/{}.txt", text.len()), "old_string": "before", "new_string": text}},
        ]}),
        &mut lines,
    );
    push(
        "user",
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "edited"},
        ]}),
        &mut lines,
    );
    push(
        "user",
        json!({"role": "user", "content": format!("and again: {text}")}),
        &mut lines,
    );
    lines.push(
        json!({"type": "custom-title", "customTitle": format!("title {text}"), "sessionId": id}),
    );
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}
