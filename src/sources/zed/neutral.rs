//! One request message of a Zed thread's `conversation.json` (`{role, content}`, the
//! content Zed's `language_model::MessageContent` items, externally tagged: `Text`,
//! `Thinking {text, signature}`, `RedactedThinking`, `Image {source, size}` (base64
//! PNG), `ToolUse {id, name, input, …}`, `ToolResult {tool_use_id, tool_name,
//! is_error, content: Text | Image}`) as a neutral message. Tool results are in the
//! user message that follows the call, as Zed sends them.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::text_of;
use serde_json::Value;

pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = match v.get("role")?.as_str()? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        _ => return None,
    };
    let parts: Vec<Part> = v
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(item_part)
        .collect();
    Some(Message::new(role, parts))
}

fn image(img: &Value) -> Part {
    Part::Image {
        mime: "image/png".into(),
        data: img
            .get("source")
            .and_then(Value::as_str)
            .map(str::to_string),
        url: None,
    }
}

fn item_part(item: &Value) -> Option<Part> {
    let (kind, body) = item.as_object()?.iter().next()?;
    Some(match kind.as_str() {
        "Text" => Part::Text {
            text: text_of(body),
        },
        "Thinking" => {
            let text = body.get("text").map(text_of).unwrap_or_default();
            match body.get("signature").and_then(Value::as_str) {
                Some(sig) if !sig.is_empty() => Part::Reasoning {
                    vendor: Vendor::Anthropic,
                    opaque: Some(serde_json::json!({
                        "type": "thinking", "thinking": text, "signature": sig
                    })),
                    text,
                },
                _ => Part::Reasoning {
                    vendor: Vendor::Other,
                    text,
                    opaque: None,
                },
            }
        }
        "RedactedThinking" => Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: String::new(),
            opaque: Some(serde_json::json!({"type": "redacted_thinking", "data": body})),
        },
        "Image" => image(body),
        "ToolUse" => Part::ToolCall {
            id: body.get("id").map(text_of).unwrap_or_default(),
            name: body.get("name").map(text_of).unwrap_or_default(),
            input: body.get("input").cloned().unwrap_or(Value::Null),
        },
        "ToolResult" => {
            let content = match body.get("content") {
                Some(c) if c.get("Image").is_some() => vec![image(&c["Image"])],
                Some(c) => vec![Part::Text {
                    text: c.get("Text").map(text_of).unwrap_or_else(|| text_of(c)),
                }],
                None => Vec::new(),
            };
            Part::ToolResult {
                call_id: body.get("tool_use_id").map(text_of).unwrap_or_default(),
                name: body
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                content,
                is_error: body
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }
        }
        other => Part::Other {
            what: other.to_string(),
            text: text_of(body),
        },
    })
}
