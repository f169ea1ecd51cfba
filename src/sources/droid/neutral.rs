//! Droid's `conversation.json` messages (`{role, content}` with Anthropic's content
//! blocks: text, `tool_use`, `tool_result`) as neutral messages, by the shared
//! Anthropic conversion; Droid's context messages are marked injected.

use crate::neutral::{Message, Role};
use crate::sources::convert::{anthropic::content_parts, role_of};
use serde_json::Value;

/// One stored message (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = match obj.get("role").and_then(Value::as_str) {
        Some(r) => role_of(r),
        None => Role::User,
    };
    let parts = obj.get("content").map(content_parts).unwrap_or_default();
    let mut m = Message::new(role, parts);
    m.injected = obj.get("visibility").and_then(Value::as_str) == Some("llm_only");
    Some(m)
}
