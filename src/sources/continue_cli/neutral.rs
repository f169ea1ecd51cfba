//! `cn`'s `conversation.json` messages (its history items: `{message: {role, content,
//! toolCalls}, toolCallStates, conversationSummary}`) as neutral messages. A tool's
//! result sits in the item that called it (`toolCallStates[].output`), so it stays
//! there: after the calls, as tool results.

use crate::neutral::{Message, Part, Role};
use crate::sources::convert::{image_from_url, parse_arguments, role_of, text_of};
use serde_json::Value;

/// One history item (`None`: not an item object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let message = v.get("message")?;
    let role = match message.get("role").and_then(Value::as_str) {
        Some(r) => role_of(r),
        None => Role::User,
    };
    let mut parts = Vec::new();
    match message.get("content") {
        Some(Value::String(s)) if !s.is_empty() => parts.push(Part::Text { text: s.clone() }),
        Some(Value::Array(items)) => {
            for p in items {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(Part::Text {
                        text: p.get("text").map(text_of).unwrap_or_default(),
                    }),
                    Some("imageUrl") | Some("image_url") => {
                        let url = p
                            .pointer("/imageUrl/url")
                            .or_else(|| p.pointer("/image_url/url"))
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        parts.push(image_from_url(url));
                    }
                    _ => parts.push(Part::Other {
                        what: "content".into(),
                        text: text_of(p),
                    }),
                }
            }
        }
        _ => {}
    }
    for call in message
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(Part::ToolCall {
            id: call.get("id").map(text_of).unwrap_or_default(),
            name: call
                .pointer("/function/name")
                .map(text_of)
                .unwrap_or_default(),
            input: call
                .pointer("/function/arguments")
                .map(parse_arguments)
                .unwrap_or(Value::Null),
        });
    }
    for state in v
        .get("toolCallStates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(output) = state.get("output").and_then(Value::as_array) else {
            continue;
        };
        let text = output
            .iter()
            .map(|o| o.get("content").map(text_of).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        parts.push(Part::ToolResult {
            call_id: state.get("toolCallId").map(text_of).unwrap_or_default(),
            name: state
                .pointer("/toolCall/function/name")
                .and_then(Value::as_str)
                .map(str::to_string),
            content: vec![Part::Text { text }],
            is_error: state.get("status").and_then(Value::as_str) == Some("errored"),
        });
    }
    let mut m = Message::new(role, parts);
    m.summary = v.get("conversationSummary").is_some();
    Some(m)
}
