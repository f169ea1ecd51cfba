//! Aider's `conversation.json` messages (`{"role", "content"}`, the chat messages
//! Aider restores: its content is Markdown text, edit blocks included) as neutral
//! messages; `tool` is Aider's own output (the command line, token counts), kept for
//! search and shown as context.

use crate::neutral::{Message, Part, Role};
use crate::sources::convert::{role_of, text_of};
use serde_json::Value;

/// One `{role, content}` message (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = match obj.get("role").and_then(Value::as_str) {
        Some("tool") => Role::Other("aider".into()),
        Some(r) => role_of(r),
        None => return None,
    };
    let text = obj.get("content").map(text_of).unwrap_or_default();
    let mut m = Message::new(role, vec![Part::Text { text }]);
    m.injected = obj.get("role").and_then(Value::as_str) == Some("tool");
    Some(m)
}
