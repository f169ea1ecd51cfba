//! Kimi's `conversation.json` messages (kosong `Message`s: OpenAI Chat Completions'
//! shape plus `think` parts) as neutral messages, by the shared OpenAI conversion;
//! `think` parts become reasoning, and the `<system>…`/`<system-reminder>` user
//! messages Kimi adds are marked injected.

use crate::neutral::{Message, Part, Vendor};
use crate::sources::convert::openai::chat_message;
use serde_json::Value;

/// One stored message (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let mut thinking = Vec::new();
    let mut plain = v.clone();
    if let Some(Value::Array(parts)) = plain.get_mut("content") {
        parts.retain(|p| {
            if p["type"] != "think" {
                return true;
            }
            thinking.push(Part::Reasoning {
                vendor: Vendor::Other,
                text: p["think"].as_str().unwrap_or("").to_string(),
                // The provider's signature, which only its API takes back.
                opaque: p.get("encrypted").filter(|e| !e.is_null()).cloned(),
            });
            false
        });
    }
    let mut m = chat_message(&plain);
    if !thinking.is_empty() {
        thinking.append(&mut m.parts);
        m.parts = thinking;
    }
    let text = match obj.get("content") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Array(parts)) => parts
            .iter()
            .find(|p| p["type"] == "text")
            .and_then(|p| p["text"].as_str()),
        _ => None,
    };
    m.injected = obj.get("role").and_then(Value::as_str) == Some("user")
        && text.is_some_and(|t| t.starts_with("<system>") || t.starts_with("<system-reminder>"));
    Some(m)
}
