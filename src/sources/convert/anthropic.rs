//! Anthropic Messages API content as neutral parts: a string or blocks (`text`,
//! `image`, `tool_use`, `tool_result`, `thinking`, `redacted_thinking`, and the
//! server tools' blocks as readable `Other` parts). Claude Code's messages are this
//! shape, and so are fen messages written in it; an agent that stores Anthropic
//! blocks converts them here, then applies its own rules (injected context,
//! summaries) in its `neutral.rs`.

use super::{str_field, text_of};
use crate::neutral::{Part, Role, Vendor};
use serde_json::Value;

/// An Anthropic `content`: a string, or blocks.
pub fn content_parts(content: &Value) -> Vec<Part> {
    match content {
        Value::String(s) => vec![Part::Text { text: s.clone() }],
        Value::Array(blocks) => blocks.iter().filter_map(block_part).collect(),
        Value::Null => Vec::new(),
        other => vec![Part::Text {
            text: other.to_string(),
        }],
    }
}

/// One content block.
pub fn block_part(b: &Value) -> Option<Part> {
    let ty = match b {
        Value::String(s) => return Some(Part::Text { text: s.clone() }),
        Value::Object(o) => o.get("type").and_then(Value::as_str).unwrap_or(""),
        Value::Null => return None,
        other => {
            return Some(Part::Text {
                text: other.to_string(),
            });
        }
    };
    Some(match ty {
        "text" => Part::Text {
            text: b.get("text").map(text_of).unwrap_or_default(),
        },
        "image" => image_part(b),
        "tool_use" => Part::ToolCall {
            id: b.get("id").map(text_of).unwrap_or_default(),
            name: b.get("name").map(text_of).unwrap_or_default(),
            input: b.get("input").cloned().unwrap_or(Value::Null),
        },
        "tool_result" => Part::ToolResult {
            call_id: b.get("tool_use_id").map(text_of).unwrap_or_default(),
            name: None,
            content: b.get("content").map(result_parts).unwrap_or_default(),
            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        },
        "thinking" => Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: b.get("thinking").map(text_of).unwrap_or_default(),
            opaque: Some(b.clone()),
        },
        "redacted_thinking" => Part::Reasoning {
            vendor: Vendor::Anthropic,
            text: String::new(),
            opaque: Some(b.clone()),
        },
        _ => other_part(ty, b),
    })
}

/// A tool result's `content`: a string, or blocks (text and images; anything else as
/// its readable text).
fn result_parts(content: &Value) -> Vec<Part> {
    content_parts(content)
        .into_iter()
        .map(|p| match p {
            Part::Text { .. } | Part::Image { .. } => p,
            other => Part::Text {
                text: crate::neutral::Message::new(Role::Tool, vec![other]).plain_text(),
            },
        })
        .collect()
}

fn image_part(b: &Value) -> Part {
    let source = b.get("source").unwrap_or(&Value::Null);
    let mime = str_field(source, "media_type").unwrap_or("").to_string();
    match str_field(source, "type") {
        Some("url") => Part::Image {
            mime,
            data: None,
            url: str_field(source, "url").map(str::to_string),
        },
        _ => Part::Image {
            mime,
            data: Some(str_field(source, "data").unwrap_or("").to_string()),
            url: None,
        },
    }
}

/// A block with no neutral form: what it was and its readable part (never a base64
/// payload).
fn other_part(ty: &str, b: &Value) -> Part {
    let text = match ty {
        "document" => [str_field(b, "title"), str_field(b, "context")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n"),
        "server_tool_use" | "mcp_tool_use" => format!(
            "{} {}",
            str_field(b, "name").unwrap_or(""),
            b.get("input").map(text_of).unwrap_or_default()
        )
        .trim()
        .to_string(),
        "web_search_tool_result" => match b.get("content") {
            Some(Value::Array(results)) => results
                .iter()
                .filter_map(|r| {
                    let title = str_field(r, "title")?;
                    Some(match str_field(r, "url") {
                        Some(url) => format!("{title} <{url}>"),
                        None => title.to_string(),
                    })
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Some(other) => text_of(other),
            None => String::new(),
        },
        "tool_reference" => str_field(b, "tool_name").unwrap_or("").to_string(),
        _ => b
            .get("text")
            .or_else(|| b.get("content"))
            .filter(|v| v.is_string())
            .map(text_of)
            .unwrap_or_default(),
    };
    Part::Other {
        what: if ty.is_empty() { "block" } else { ty }.to_string(),
        text,
    }
}
