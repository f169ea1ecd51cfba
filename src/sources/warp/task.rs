//! Warp's agent tasks (`agent_tasks.task`): protobuf `warp.multi_agent.v1.Task`
//! (warpdotdev/warp-proto-apis `apis/multi_agent/v1/task.proto`), decoded by field
//! number without generated code: the task's id, description, parent and messages,
//! and of each message what a person or the model reads of it.

use crate::sources::protobuf_wire::{Value as Wire, fields};
use serde_json::{Map, Value, json};

/// One decoded task.
#[derive(Debug, Clone, Default)]
pub struct Task {
    pub id: String,
    pub description: String,
    pub parent: Option<String>,
    pub summary: String,
    pub messages: Vec<Value>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bytes of each occurrence of field `n`.
fn all(fs: &[(u64, Wire)], n: u64) -> impl Iterator<Item = &[u8]> {
    fs.iter().filter_map(move |(f, v)| match v {
        Wire::Bytes(b) if *f == n => Some(b.as_slice()),
        _ => None,
    })
}

fn first(fs: &[(u64, Wire)], n: u64) -> Option<&[u8]> {
    all(fs, n).next()
}

fn string(fs: &[(u64, Wire)], n: u64) -> String {
    first(fs, n).map(text).unwrap_or_default()
}

fn varint(fs: &[(u64, Wire)], n: u64) -> Option<u64> {
    fs.iter().find_map(|(f, v)| match v {
        Wire::Varint(x) if *f == n => Some(*x),
        _ => None,
    })
}

/// Bytes that read as text a person wrote (UTF-8, no control characters but
/// whitespace), rather than a nested message.
fn looks_like_text(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|s| {
        s.chars()
            .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
    })
}

/// A message of unknown schema as JSON: each field `fN` (repeated ones as lists),
/// bytes as text when they read as text, else as a nested message, else as hex.
pub fn generic(b: &[u8], depth: usize) -> Value {
    let Some(fs) = fields(b) else {
        return Value::String(hex(b));
    };
    let mut out = Map::new();
    for (n, v) in fs {
        let value = match v {
            Wire::Varint(x) | Wire::Fixed64(x) => json!(x),
            Wire::Fixed32(x) => json!(x),
            Wire::Bytes(b) if b.is_empty() => json!(""),
            Wire::Bytes(b) if looks_like_text(&b) => Value::String(text(&b)),
            Wire::Bytes(b) if depth < 8 && fields(&b).is_some() => generic(&b, depth + 1),
            Wire::Bytes(b) => Value::String(hex(&b)),
        };
        let key = format!("f{n}");
        match out.get_mut(&key) {
            Some(Value::Array(list)) => list.push(value),
            Some(prev) => *prev = json!([prev.take(), value]),
            None => {
                out.insert(key, value);
            }
        }
    }
    Value::Object(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every text found in a message of unknown schema, in order (a tool result's
/// output, paths, messages), joined by newlines.
pub fn texts(b: &[u8], depth: usize, out: &mut Vec<String>) {
    let Some(fs) = fields(b) else { return };
    for (_, v) in fs {
        if let Wire::Bytes(b) = v {
            if b.is_empty() {
                continue;
            }
            if looks_like_text(&b) {
                out.push(text(&b));
            } else if depth < 8 {
                texts(&b, depth + 1, out);
            }
        }
    }
}

/// The names of `Message.ToolCall.tool` by field number.
fn tool_name(n: u64) -> &'static str {
    match n {
        2 => "run_shell_command",
        3 => "search_codebase",
        4 => "server",
        5 => "read_files",
        6 => "apply_file_diffs",
        7 => "suggest_plan",
        8 => "suggest_create_plan",
        9 => "grep",
        10 => "file_glob",
        11 => "read_mcp_resource",
        12 => "call_mcp_tool",
        13 => "write_to_long_running_shell_command",
        14 => "suggest_new_conversation",
        15 => "file_glob_v2",
        16 => "suggest_prompt",
        17 => "open_code_review",
        18 => "init_project",
        19 => "subagent",
        20 => "read_documents",
        21 => "edit_documents",
        22 => "create_documents",
        23 => "read_shell_command_output",
        24 => "use_computer",
        25 => "insert_review_comments",
        26 => "read_skill",
        27 => "request_computer_use",
        28 => "fetch_conversation",
        29 => "start_agent",
        30 => "send_message_to_agent",
        31 => "transfer_shell_command_control_to_user",
        _ => "tool",
    }
}

/// The names of `Message.ToolCallResult.result` by field number.
fn result_name(n: u64) -> &'static str {
    match n {
        14 => "cancel",
        15 => "read_mcp_resource",
        16 => "call_mcp_tool",
        17 => "write_to_long_running_shell_command",
        18 => "suggest_new_conversation",
        19 => "file_glob_v2",
        20 => "suggest_prompt",
        21 => "open_code_review",
        22 => "init_project",
        23 => "subagent",
        24 => "read_documents",
        25 => "edit_documents",
        26 => "create_documents",
        27 => "read_shell_command_output",
        28 => "use_computer",
        29 => "insert_review_comments",
        30 => "read_skill",
        31 => "request_computer_use",
        32 => "fetch_conversation",
        33 => "start_agent",
        34 => "send_message_to_agent",
        35 => "transfer_shell_command_control_to_user",
        n => tool_name(n),
    }
}

/// A tool call's arguments: the known fields of the common tools by name, the rest
/// by field number.
fn tool_input(tool: u64, b: &[u8]) -> Value {
    let Some(fs) = fields(b) else {
        return Value::Null;
    };
    let strings = |n: u64| -> Vec<Value> { all(&fs, n).map(|b| json!(text(b))).collect() };
    match tool {
        2 => json!({"command": string(&fs, 1)}),
        3 => {
            json!({"query": string(&fs, 1), "path_filters": strings(2), "codebase_path": string(&fs, 3)})
        }
        5 => json!({"files": all(&fs, 1).map(|f| {
            let f = fields(f).unwrap_or_default();
            json!({"name": string(&f, 1)})
        }).collect::<Vec<_>>()}),
        6 => json!({
            "summary": string(&fs, 1),
            "diffs": all(&fs, 2).map(|d| {
                let d = fields(d).unwrap_or_default();
                json!({"file_path": string(&d, 1), "search": string(&d, 2), "replace": string(&d, 3)})
            }).collect::<Vec<_>>(),
            "new_files": all(&fs, 3).map(|d| {
                let d = fields(d).unwrap_or_default();
                json!({"file_path": string(&d, 1), "content": string(&d, 2)})
            }).collect::<Vec<_>>(),
            "deleted_files": all(&fs, 4).map(|d| json!(string(&fields(d).unwrap_or_default(), 1))).collect::<Vec<_>>(),
        }),
        9 => json!({"queries": strings(1), "path": string(&fs, 2)}),
        10 | 15 => json!({"patterns": strings(1), "path": string(&fs, 2)}),
        11 => json!({"uri": string(&fs, 1), "server_id": string(&fs, 2)}),
        12 => {
            json!({"name": string(&fs, 1), "args": first(&fs, 2).map(|a| generic(a, 0)).unwrap_or(Value::Null), "server_id": string(&fs, 3)})
        }
        _ => generic(b, 0),
    }
}

fn timestamp(b: &[u8]) -> Option<i64> {
    let fs = fields(b)?;
    let secs = varint(&fs, 1)? as i64;
    let nanos = varint(&fs, 2).unwrap_or(0) as i64;
    Some(secs * 1000 + nanos / 1_000_000)
}

/// The working directory a message's input context names (`InputContext.directory
/// .pwd`).
fn pwd(context: Option<&[u8]>) -> Option<String> {
    let c = fields(context?)?;
    let dir = fields(first(&c, 1)?)?;
    Some(string(&dir, 1)).filter(|p| !p.is_empty())
}

/// One `Message` as a JSON object: its ids and time, and one key naming its kind.
fn message(b: &[u8], task: &str) -> Value {
    let Some(fs) = fields(b) else {
        return json!({"task_id": task, "undecodable": hex(b)});
    };
    let mut m = Map::new();
    m.insert("id".into(), json!(string(&fs, 1)));
    m.insert(
        "task_id".into(),
        json!(first(&fs, 11).map(text).unwrap_or_else(|| task.to_string())),
    );
    if let Some(r) = first(&fs, 13) {
        m.insert("request_id".into(), json!(text(r)));
    }
    if let Some(t) = first(&fs, 14).and_then(timestamp) {
        m.insert("timestamp_ms".into(), json!(t));
    }
    for (n, v) in &fs {
        let Wire::Bytes(body) = v else { continue };
        let inner = fields(body).unwrap_or_default();
        let (key, value) = match n {
            2 => {
                let mut q = json!({"query": string(&inner, 1)});
                if let Some(p) = pwd(first(&inner, 2)) {
                    q["pwd"] = json!(p);
                }
                ("user_query", q)
            }
            3 => ("agent_output", json!({"text": string(&inner, 1)})),
            4 => {
                let (tool, args) = inner
                    .iter()
                    .find_map(|(f, v)| match v {
                        Wire::Bytes(a) if *f != 1 => Some((*f, a.as_slice())),
                        _ => None,
                    })
                    .unwrap_or((0, &[]));
                (
                    "tool_call",
                    json!({"tool_call_id": string(&inner, 1), "tool": tool_name(tool), "input": tool_input(tool, args)}),
                )
            }
            5 => {
                let (kind, body) = inner
                    .iter()
                    .find_map(|(f, v)| match v {
                        Wire::Bytes(a) if *f != 1 && *f != 11 => Some((*f, a.as_slice())),
                        _ => None,
                    })
                    .unwrap_or((0, &[]));
                let mut out = Vec::new();
                texts(body, 0, &mut out);
                let mut r = json!({"tool_call_id": string(&inner, 1), "result": result_name(kind), "text": out.join("\n")});
                if let Some(p) = pwd(first(&inner, 11)) {
                    r["pwd"] = json!(p);
                }
                ("tool_call_result", r)
            }
            9 => {
                let (kind, body) = inner
                    .iter()
                    .find_map(|(f, v)| match v {
                        Wire::Bytes(a) if *f != 2 => Some((*f, a.as_slice())),
                        _ => None,
                    })
                    .unwrap_or((0, &[]));
                let name = match kind {
                    1 => "auto_code_diff",
                    3 => "resume_conversation",
                    4 => "generate_passive_suggestions",
                    5 => "create_new_project",
                    6 => "clone_repository",
                    7 => "summarize_conversation",
                    8 => "fetch_review_comments",
                    _ => "system_query",
                };
                let mut q =
                    json!({"type": name, "query": string(&fields(body).unwrap_or_default(), 1)});
                if let Some(p) = pwd(first(&inner, 2)) {
                    q["pwd"] = json!(p);
                }
                ("system_query", q)
            }
            15 => ("agent_reasoning", json!({"reasoning": string(&inner, 1)})),
            16 => {
                let summary = first(&inner, 1)
                    .and_then(fields)
                    .map(|s| string(&s, 1))
                    .unwrap_or_default();
                ("summarization", json!({"summary": summary}))
            }
            25 => ("model_used", generic(body, 0)),
            6 | 10 | 17 | 18 | 19 | 20 | 21 | 22 | 23 | 24 | 26 => {
                let mut out = Vec::new();
                texts(body, 0, &mut out);
                let kind = match n {
                    6 => "server_event",
                    10 => "update_todos",
                    17 => "code_review",
                    18 => "update_review_comments",
                    19 => "web_search",
                    20 => "web_fetch",
                    21 => "debug_output",
                    22 => "artifact_event",
                    23 => "invoke_skill",
                    24 => "messages_received_from_agents",
                    _ => "events_from_agents",
                };
                (kind, json!({"text": out.join("\n")}))
            }
            _ => continue,
        };
        m.insert(key.into(), value);
    }
    Value::Object(m)
}

/// A task blob, or why Warp could not decode it.
pub fn decode(blob: &[u8]) -> Result<Task, String> {
    let fs = fields(blob).ok_or("a task is not a protobuf message: Warp drops the conversation")?;
    let id = string(&fs, 1);
    let parent = first(&fs, 3)
        .and_then(fields)
        .map(|d| string(&d, 1))
        .filter(|p| !p.is_empty());
    let messages = all(&fs, 5).map(|m| message(m, &id)).collect();
    Ok(Task {
        description: string(&fs, 2),
        summary: string(&fs, 6),
        parent,
        messages,
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited field.
    fn ld(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![(n << 3 | 2) as u8];
        let mut len = b.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        out.extend_from_slice(b);
        out
    }

    #[test]
    fn a_task_decodes_by_field_number() {
        let query = [ld(1, b"list files"), ld(2, &ld(1, &ld(1, b"/home/u/w")))].concat();
        let m1 = [ld(1, b"m1"), ld(2, &query)].concat();
        let call = [ld(1, b"c1"), ld(2, &ld(1, b"ls"))].concat();
        let m2 = [ld(1, b"m2"), ld(4, &call)].concat();
        let task = [ld(1, b"t1"), ld(2, b"List"), ld(5, &m1), ld(5, &m2)].concat();
        let t = decode(&task).unwrap();
        assert_eq!((t.id.as_str(), t.description.as_str()), ("t1", "List"));
        assert_eq!(
            t.messages[0]["user_query"],
            json!({"query": "list files", "pwd": "/home/u/w"})
        );
        assert_eq!(
            t.messages[1]["tool_call"],
            json!({"tool_call_id": "c1", "tool": "run_shell_command", "input": {"command": "ls"}})
        );
        assert!(decode(b"{\"not\": \"protobuf\"}").is_err());
    }
}
