//! OpenAI Chat Completions messages as neutral messages: `content` as a string or
//! parts (`text`, `image_url`), `tool_calls` (their arguments a JSON string) and
//! `tool` messages answering `tool_call_id`. fen messages written in this shape are
//! read here; so is any agent that stores chat messages. (Codex's Responses API
//! items are Codex's own: `codex/neutral.rs`.)

use super::{image_from_url, parse_arguments, role_of, str_field, text_of};
use crate::neutral::{Message, Part, Role};
use serde_json::Value;

/// `content` as text: a string; blocks' texts (`image_url` blocks as images);
/// otherwise the whole message as JSON.
pub fn content_parts(v: &Value, content: Option<&Value>) -> Vec<Part> {
    match content {
        Some(Value::String(s)) => vec![Part::Text { text: s.clone() }],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| !b.is_null())
            .map(|b| match b {
                Value::String(s) => Part::Text { text: s.clone() },
                _ if str_field(b, "type") == Some("image_url") => {
                    let url = b
                        .get("image_url")
                        .and_then(|u| u.get("url").or(Some(u)))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    image_from_url(url)
                }
                _ => match b.get("text") {
                    Some(t) => Part::Text { text: text_of(t) },
                    None => Part::Text {
                        text: b.to_string(),
                    },
                },
            })
            .collect(),
        Some(Value::Null) => Vec::new(),
        _ => vec![Part::Text {
            text: v.to_string(),
        }],
    }
}

/// An OpenAI chat message: text content, `tool_calls` (arguments a JSON string), or a
/// `tool` message answering `tool_call_id`.
pub fn chat_message(v: &Value) -> Message {
    let role = str_field(v, "role").unwrap_or("");
    let content = v.get("content");
    if role == "tool" {
        return Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: v.get("tool_call_id").map(text_of).unwrap_or_default(),
                name: str_field(v, "name").map(str::to_string),
                content: content_parts(v, content),
                is_error: false,
            }],
        );
    }
    let mut parts = match content {
        None | Some(Value::Null) => Vec::new(),
        c => content_parts(v, c),
    };
    if let Some(Value::Array(calls)) = v.get("tool_calls") {
        for c in calls {
            let f = c.get("function").unwrap_or(&Value::Null);
            parts.push(Part::ToolCall {
                id: c.get("id").map(text_of).unwrap_or_default(),
                name: f.get("name").map(text_of).unwrap_or_default(),
                input: f
                    .get("arguments")
                    .map(parse_arguments)
                    .unwrap_or(Value::Null),
            });
        }
    }
    Message::new(role_of(role), parts)
}
