//! One Goose `Message` (`{id, role, created, content, metadata}`) as a neutral
//! message. Its content blocks are Goose's `MessageContent`
//! (`crates/goose/src/conversation/message/content_types.rs`), tagged by `type`:
//! `text`, `image` (`data`, `mimeType`), `toolRequest` and `frontendToolRequest`
//! (`id`, `toolCall: {status: "success", value: {name, arguments}}` or `{status:
//! "error", error}`), `toolResponse` (`id`, `toolResult: {status, value: {content,
//! isError}}`; before, `value` was the content list itself), `thinking` (`thinking`,
//! `signature`), `redactedThinking` (`data`), and what only Goose's own interface
//! shows (`toolConfirmationRequest`, `actionRequired`, `systemNotification`). Tool
//! results stay in the user message that carries them, as Goose keeps them.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{str_field, text_of};
use serde_json::Value;

pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = match str_field(v, "role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    let parts: Vec<Part> = v
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().filter_map(block_part).collect())
        .unwrap_or_default();
    let metadata = v.get("metadata");
    let flag = |key: &str| {
        metadata
            .and_then(|m| m.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    };
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "id").map(str::to_string);
    m.timestamp = v
        .get("created")
        .and_then(Value::as_i64)
        .map(super::db::message_ms)
        .and_then(crate::sources::db_units::rfc3339_ms);
    m.in_conversation = flag("agentVisible");
    // Context only the model sees (Goose's turn context, a compaction's summary).
    m.injected = m.role == Role::User && !flag("userVisible") && flag("agentVisible");
    Some(m)
}

fn call_part(b: &Value) -> Part {
    let id = b.get("id").map(text_of).unwrap_or_default();
    let call = b.get("toolCall").unwrap_or(&Value::Null);
    match str_field(call, "status") {
        Some("success") => {
            let value = call.get("value").unwrap_or(&Value::Null);
            Part::ToolCall {
                id,
                name: value.get("name").map(text_of).unwrap_or_default(),
                input: value.get("arguments").cloned().unwrap_or(Value::Null),
            }
        }
        _ => Part::Other {
            what: "tool call error".into(),
            text: call.get("error").map(text_of).unwrap_or_default(),
        },
    }
}

/// A tool result's content items (MCP `Content`: text, image, resource).
fn result_content(items: &Value) -> Vec<Part> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| match str_field(c, "type") {
            Some("text") => Some(Part::Text {
                text: c.get("text").map(text_of).unwrap_or_default(),
            }),
            Some("image") => Some(Part::Image {
                mime: str_field(c, "mimeType").unwrap_or("").to_string(),
                data: str_field(c, "data").map(str::to_string),
                url: None,
            }),
            Some("resource") => {
                let r = c.get("resource").unwrap_or(&Value::Null);
                Some(Part::Text {
                    text: str_field(r, "text")
                        .or_else(|| str_field(r, "uri"))
                        .unwrap_or("")
                        .to_string(),
                })
            }
            _ => None,
        })
        .collect()
}

fn response_part(b: &Value) -> Part {
    let call_id = b.get("id").map(text_of).unwrap_or_default();
    let result = b.get("toolResult").unwrap_or(&Value::Null);
    match str_field(result, "status") {
        Some("success") => {
            let value = result.get("value").unwrap_or(&Value::Null);
            // A `CallToolResult` (`content`, `isError`), or the older bare list.
            let (content, is_error) = match value {
                Value::Array(_) => (result_content(value), false),
                _ => (
                    value.get("content").map(result_content).unwrap_or_default(),
                    value
                        .get("isError")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                ),
            };
            Part::ToolResult {
                call_id,
                name: None,
                content,
                is_error,
            }
        }
        _ => Part::ToolResult {
            call_id,
            name: None,
            content: vec![Part::Text {
                text: result.get("error").map(text_of).unwrap_or_default(),
            }],
            is_error: true,
        },
    }
}

fn block_part(b: &Value) -> Option<Part> {
    let ty = str_field(b, "type").unwrap_or("");
    Some(match ty {
        "text" => Part::Text {
            text: b.get("text").map(text_of).unwrap_or_default(),
        },
        "image" => Part::Image {
            mime: str_field(b, "mimeType").unwrap_or("").to_string(),
            data: str_field(b, "data").map(str::to_string),
            url: None,
        },
        "toolRequest" | "frontendToolRequest" => call_part(b),
        "toolResponse" => response_part(b),
        // Goose's thinking block is Anthropic's with its own tag; a signature makes
        // it Anthropic's signed form.
        "thinking" => {
            let text = b.get("thinking").map(text_of).unwrap_or_default();
            let signature = str_field(b, "signature").unwrap_or("");
            if signature.is_empty() {
                Part::Reasoning {
                    vendor: Vendor::Other,
                    text,
                    opaque: None,
                }
            } else {
                Part::Reasoning {
                    vendor: Vendor::Anthropic,
                    opaque: Some(serde_json::json!({
                        "type": "thinking", "thinking": text, "signature": signature
                    })),
                    text,
                }
            }
        }
        "redactedThinking" => Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: String::new(),
            opaque: Some(serde_json::json!({
                "type": "redacted_thinking",
                "data": b.get("data").cloned().unwrap_or(Value::Null),
            })),
        },
        "toolConfirmationRequest" => Part::Other {
            what: ty.into(),
            text: [str_field(b, "toolName"), str_field(b, "prompt")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n"),
        },
        "systemNotification" => Part::Other {
            what: ty.into(),
            text: str_field(b, "msg").unwrap_or("").to_string(),
        },
        "actionRequired" => {
            let data = b.get("data").unwrap_or(&Value::Null);
            Part::Other {
                what: ty.into(),
                text: str_field(data, "message")
                    .or_else(|| str_field(data, "toolName"))
                    .or_else(|| str_field(data, "prompt"))
                    .unwrap_or("")
                    .to_string(),
            }
        }
        "" => return None,
        other => Part::Other {
            what: other.into(),
            text: str_field(b, "text").unwrap_or("").to_string(),
        },
    })
}
