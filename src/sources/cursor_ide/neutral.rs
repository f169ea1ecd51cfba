//! Cursor's bubbles as neutral messages: a user bubble's `text`; an assistant
//! bubble's `thinking.text` (reasoning), `text`, and `toolFormerData` (a tool call:
//! `name`, its arguments from `rawArgs` or `params`, `toolCallId`; its `result`).
//! The composer line and the workspace header are nothing a person or model reads.

use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use crate::sources::convert::{parse_arguments, str_field};
use serde_json::Value;

/// One bubble of `conversation.json` (`None`: not a bubble).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = match v.get("type")? {
        Value::Number(n) if n.as_u64() == Some(1) => Role::User,
        Value::Number(n) if n.as_u64() == Some(2) => Role::Assistant,
        Value::String(s) if s == "user" => Role::User,
        Value::String(s) if s == "ai" || s == "assistant" => Role::Assistant,
        _ => return None,
    };
    let mut parts = Vec::new();
    if let Some(t) = v
        .pointer("/thinking/text")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        parts.push(Part::Reasoning {
            vendor: Vendor::Other,
            text: t.to_string(),
            opaque: None,
        });
    }
    if let Some(t) = str_field(v, "text").filter(|t| !t.is_empty()) {
        parts.push(Part::Text {
            text: t.to_string(),
        });
    }
    if let Some(tool) = v.get("toolFormerData").filter(|t| t.is_object()) {
        let id = str_field(tool, "toolCallId").unwrap_or("").to_string();
        let name = str_field(tool, "name").unwrap_or("").to_string();
        let input = tool
            .get("rawArgs")
            .or_else(|| tool.get("params"))
            .map(parse_arguments)
            .unwrap_or(Value::Null);
        parts.push(Part::ToolCall {
            id: id.clone(),
            name: name.clone(),
            input,
        });
        if let Some(result) = tool.get("result").filter(|r| !r.is_null()) {
            let text = match parse_arguments(result) {
                Value::String(s) => s,
                other => other.to_string(),
            };
            parts.push(Part::ToolResult {
                call_id: id,
                name: Some(name),
                content: vec![Part::Text { text }],
                is_error: str_field(tool, "status") == Some("error"),
            });
        }
    }
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "bubbleId").map(str::to_string);
    m.timestamp = v
        .get("createdAt")
        .and_then(|t| match t {
            Value::Number(n) => n
                .as_f64()
                .and_then(|ms| chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64)),
            Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
                .ok()
                .map(|t| t.with_timezone(&chrono::Utc)),
            _ => None,
        })
        .map(crate::store::naming::timestamp);
    if let Some(model) = v.pointer("/modelInfo/modelName").and_then(Value::as_str) {
        m.model = Some(ModelRef {
            provider: None,
            api: None,
            model: model.to_string(),
        });
    }
    Some(m)
}
