//! OpenHands' `conversation.json` messages (the SDK's `Message` in Chat Completions'
//! shape: content blocks, `tool_calls`, `tool` messages) as neutral messages, by the
//! shared OpenAI conversion; a stored `reasoning_content` is reasoning.

use crate::neutral::{Message, Part, Vendor};
use crate::sources::convert::openai::chat_message;
use serde_json::Value;

/// One message object (`None`: not one).
pub fn to_neutral(v: &Value) -> Option<Message> {
    v.as_object()?;
    let mut m = chat_message(v);
    if let Some(r) = v["reasoning_content"].as_str().filter(|r| !r.is_empty()) {
        m.parts.insert(
            0,
            Part::Reasoning {
                vendor: Vendor::Other,
                text: r.to_string(),
                opaque: None,
            },
        );
    }
    Some(m)
}
