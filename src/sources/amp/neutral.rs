//! One Amp message (`{role, messageId, content, …}`) as a neutral message. Its
//! content is Anthropic's blocks (`text`, `thinking`, `redacted_thinking`,
//! `tool_use`, `image`, `tool_result` with `tool_use_id`: `convert::anthropic`),
//! except Amp's own tool result, `{type: "tool_result", toolUseID, run: {status,
//! result, error}}`, read as AgentsView reads it: the result's display text (a
//! command's `output`, a file's `content`, an edit's `diff`, `success`), the error's
//! message, or the status of a cancelled call.

use crate::neutral::{Message, Part, Role};
use crate::sources::convert::{str_field, text_of};
use serde_json::Value;

pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = match str_field(v, "role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    let parts = match v.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().flat_map(block_parts).collect(),
        Some(other) => crate::sources::convert::anthropic::content_parts(other),
        None => Vec::new(),
    };
    let mut m = Message::new(role, parts);
    m.entry = v.get("messageId").map(text_of);
    Some(m)
}

fn block_parts(b: &Value) -> Vec<Part> {
    if str_field(b, "type") == Some("tool_result") && b.get("toolUseID").is_some() {
        let run = b.get("run").unwrap_or(&Value::Null);
        let status = str_field(run, "status").unwrap_or("");
        let text = match run.get("result").filter(|r| !r.is_null()) {
            Some(r) => result_text(r),
            None => match status {
                "error" => run
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("[unknown error]")
                    .to_string(),
                "" => String::new(),
                other => format!("[{other}]"),
            },
        };
        return vec![Part::ToolResult {
            call_id: b.get("toolUseID").map(text_of).unwrap_or_default(),
            name: None,
            content: vec![Part::Text { text }],
            is_error: status == "error",
        }];
    }
    crate::sources::convert::anthropic::block_part(b)
        .into_iter()
        .collect()
}

/// A tool's result as text (AgentsView's `serializeAmpResult`).
pub fn result_text(r: &Value) -> String {
    match r {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let mut known = false;
            for key in ["output", "content", "diff"] {
                if let Some(v) = o.get(key) {
                    known = true;
                    let s = result_text(v);
                    if !s.is_empty() {
                        return s;
                    }
                }
            }
            if let Some(ok) = o.get("success").and_then(Value::as_bool) {
                return if ok { "success" } else { "failed" }.into();
            }
            if known {
                return String::new();
            }
            r.to_string()
        }
        Value::Array(items) => {
            if items.is_empty() {
                return String::new();
            }
            if items.iter().all(Value::is_string) {
                return items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n");
            }
            if items[0].get("type").and_then(Value::as_str) == Some("image") {
                return "[binary content]".into();
            }
            r.to_string()
        }
        other => other.to_string(),
    }
}
