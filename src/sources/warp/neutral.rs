//! One message of a Warp conversation's `conversation.json` (a decoded task message,
//! `task.rs`) as a neutral message: a user query, the agent's output, its reasoning,
//! a tool call (`tool_call_id`, the tool's name and arguments), a tool's result (a
//! message of its own, as Warp keeps it), a conversation summary, or a query the
//! Warp client made on its own (context it injected).

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{str_field, text_of};
use serde_json::Value;

pub fn to_neutral(v: &Value) -> Option<Message> {
    let s = |obj: &Value, k: &str| obj.get(k).map(text_of).unwrap_or_default();
    let (role, parts, summary, injected) = if let Some(q) = v.get("user_query") {
        (
            Role::User,
            vec![Part::Text {
                text: s(q, "query"),
            }],
            false,
            false,
        )
    } else if let Some(o) = v.get("agent_output") {
        (
            Role::Assistant,
            vec![Part::Text { text: s(o, "text") }],
            false,
            false,
        )
    } else if let Some(r) = v.get("agent_reasoning") {
        let part = Part::Reasoning {
            vendor: Vendor::Other,
            text: s(r, "reasoning"),
            opaque: None,
        };
        (Role::Assistant, vec![part], false, false)
    } else if let Some(c) = v.get("tool_call") {
        let part = Part::ToolCall {
            id: s(c, "tool_call_id"),
            name: s(c, "tool"),
            input: c.get("input").cloned().unwrap_or(Value::Null),
        };
        (Role::Assistant, vec![part], false, false)
    } else if let Some(r) = v.get("tool_call_result") {
        let part = Part::ToolResult {
            call_id: s(r, "tool_call_id"),
            name: str_field(r, "result").map(str::to_string),
            content: vec![Part::Text { text: s(r, "text") }],
            is_error: str_field(r, "result") == Some("cancel"),
        };
        (Role::Tool, vec![part], false, false)
    } else if let Some(x) = v.get("summarization") {
        (
            Role::Assistant,
            vec![Part::Text {
                text: s(x, "summary"),
            }],
            true,
            false,
        )
    } else if let Some(q) = v.get("system_query") {
        let text = [s(q, "type"), s(q, "query")]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        (Role::User, vec![Part::Text { text }], false, true)
    } else {
        return None;
    };
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "id").map(str::to_string);
    m.timestamp = v
        .get("timestamp_ms")
        .and_then(Value::as_i64)
        .and_then(crate::sources::db_units::rfc3339_ms);
    m.summary = summary;
    m.injected = injected;
    Some(m)
}
