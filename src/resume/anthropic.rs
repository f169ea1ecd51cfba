//! Anthropic Messages API shapes (content blocks), written by the Claude Code writer
//! and by the fen writer (fen's messages have no fixed shape; these are the ones the
//! most agents read).

use super::convert::{Item, ToolOutput};
use super::draft::Obj;
use crate::neutral::Part;
use serde_json::{Value, json};

/// An image block: base64 `data`, else a `url` source.
fn image(mime: &str, data: Option<&str>, url: Option<&str>) -> Value {
    match (data, url) {
        (Some(d), _) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": d}})
        }
        (None, Some(u)) => json!({"type": "image", "source": {"type": "url", "url": u}}),
        (None, None) => json!({"type": "text", "text": format!("[image: {mime}]")}),
    }
}

/// A user or result content block (text and images).
fn block(p: &Part) -> Option<Value> {
    match p {
        Part::Text { text } => Some(json!({"type": "text", "text": text})),
        Part::Image { mime, data, url } => Some(image(mime, data.as_deref(), url.as_deref())),
        _ => None,
    }
}

/// A user message's content: a plain string for one text, else blocks.
pub fn user_content(parts: &[Part]) -> Value {
    if let [Part::Text { text }] = parts {
        return Value::String(text.clone());
    }
    Value::Array(parts.iter().filter_map(block).collect())
}

/// Anthropic's own thinking block for a kept piece of reasoning: Claude's blocks as
/// they were; pi's `thinking` block (its signature under `thinkingSignature`) in
/// Anthropic's names.
pub fn thinking_block(text: &str, opaque: Option<&Value>) -> Option<Value> {
    let o = opaque?;
    match o.get("type").and_then(Value::as_str) {
        Some("thinking") if o.get("signature").is_some() => Some(o.clone()),
        Some("redacted_thinking") => Some(o.clone()),
        Some("thinking") => {
            let sig = o.get("thinkingSignature").and_then(Value::as_str)?;
            if o.get("redacted").and_then(Value::as_bool) == Some(true) {
                Some(json!({"type": "redacted_thinking", "data": sig}))
            } else {
                let thinking = o.get("thinking").and_then(Value::as_str).unwrap_or(text);
                Some(json!({"type": "thinking", "thinking": thinking, "signature": sig}))
            }
        }
        _ => None,
    }
}

/// A tool call's input as Anthropic takes it: an object (anything else wrapped).
pub fn tool_input(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::Null => json!({}),
        other => json!({"input": other}),
    }
}

/// An assistant message's content blocks.
pub fn assistant_content(parts: &[Part], with_thinking: bool) -> Value {
    Value::Array(
        parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(json!({"type": "text", "text": text})),
                Part::ToolCall { id, name, input } => Some(
                    json!({"type": "tool_use", "id": id, "name": name, "input": tool_input(input)}),
                ),
                Part::Reasoning { text, opaque, .. } if with_thinking => {
                    thinking_block(text, opaque.as_ref())
                }
                _ => None,
            })
            .collect(),
    )
}

/// A user message's content holding tool results.
pub fn results_content(results: &[ToolOutput]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| {
                let content = match r.content.as_slice() {
                    [Part::Text { text }] => Value::String(text.clone()),
                    parts => Value::Array(parts.iter().filter_map(block).collect()),
                };
                let mut b =
                    json!({"type": "tool_result", "tool_use_id": r.call_id, "content": content});
                if r.is_error {
                    b["is_error"] = Value::Bool(true);
                }
                b
            })
            .collect(),
    )
}

/// An item as one Anthropic message `{"role", "content"}`, as JSON text (empty
/// assistant content, when nothing it held has an Anthropic form, is `None`).
pub fn message(item: &Item, with_thinking: bool) -> Option<String> {
    let (role, content) = match item {
        Item::User { parts, .. } => ("user", user_content(parts)),
        Item::Assistant { parts, .. } => ("assistant", assistant_content(parts, with_thinking)),
        Item::Results { results, .. } => ("user", results_content(results)),
    };
    if content.as_array().is_some_and(|a| a.is_empty()) {
        return None;
    }
    Some(Obj::new().put("role", role).put("content", content).text())
}
