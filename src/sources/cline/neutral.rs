//! Cline's and Roo Code's stored messages as neutral messages: Anthropic-style
//! `{role, content}` (a string or blocks), plus what each adds. Cline 3.x: `ts`,
//! `modelInfo`, a compaction's summary (`metadata.kind: "compaction_summary"`), images
//! as `{type: "image", data, mediaType}`, tool results holding the tool's own JSON;
//! its stored prompts are wrapped (`<user_input mode="act">…</user_input>`) and read
//! as Cline shows them. The task folders (Cline before 3.x, Roo Code): the first
//! prompt in `<task>…</task>` (Roo Code: `<user_message>`), and `<environment_details>` blocks the agent adds to
//! user messages (context, not what anyone wrote: left out, and a message of nothing
//! else is `injected`); Roo Code's summaries (`isSummary`).

use super::format::display_user_input;
use crate::neutral::{Message, ModelRef, Part};
use crate::sources::convert::{anthropic, role_of, str_field};
use serde_json::Value;

const ENVIRONMENT: &str = "<environment_details>";

/// The first prompt in Cline's `<task>\n…\n</task>` or Roo Code's
/// `<user_message>\n…\n</user_message>`, as the text inside.
fn without_task_tag(text: &str) -> String {
    let t = text.trim();
    for (open, close) in [("<task>", "</task>"), ("<user_message>", "</user_message>")] {
        if let Some(inner) = t.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner.trim().to_string();
        }
    }
    text.to_string()
}

/// One message of `conversation.json` (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = str_field(v, "role")?;
    let content = v.get("content").unwrap_or(&Value::Null);
    let mut parts: Vec<Part> = match content {
        Value::Array(blocks) => blocks.iter().filter_map(block).collect(),
        other => anthropic::content_parts(other),
    };
    let had_text = parts.iter().any(|p| matches!(p, Part::Text { .. }));
    let mut environment = false;
    if role == "user" {
        parts.retain(|p| match p {
            Part::Text { text } if text.trim_start().starts_with(ENVIRONMENT) => {
                environment = true;
                false
            }
            _ => true,
        });
        for p in &mut parts {
            if let Part::Text { text } = p {
                *text = without_task_tag(&display_user_input(text));
            }
        }
        parts.retain(|p| !matches!(p, Part::Text { text } if text.is_empty()));
    }
    let mut m = Message::new(role_of(role), parts);
    m.entry = str_field(v, "id").map(str::to_string);
    m.timestamp = v
        .get("ts")
        .and_then(Value::as_f64)
        .and_then(|ms| chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64))
        .map(crate::store::naming::timestamp);
    let meta = v.get("metadata");
    m.summary = meta.and_then(|m| str_field(m, "kind")) == Some("compaction_summary")
        || v.get("isSummary") == Some(&Value::Bool(true));
    m.injected = role == "user" && environment && had_text && m.parts.is_empty();
    if let Some(info) = v.get("modelInfo")
        && let Some(model) = str_field(info, "id")
    {
        m.model = Some(ModelRef {
            provider: str_field(info, "provider").map(str::to_string),
            api: None,
            model: model.to_string(),
        });
    }
    Some(m)
}

/// One content block: Anthropic's, or Cline 3.x's own image and tool result shapes.
fn block(b: &Value) -> Option<Part> {
    match str_field(b, "type") {
        Some("image") if b.get("data").is_some() => Some(Part::Image {
            mime: str_field(b, "mediaType").unwrap_or("").to_string(),
            data: str_field(b, "data").map(str::to_string),
            url: None,
        }),
        Some("tool_result") => {
            let content = match b.get("content") {
                // The tool's own JSON (3.x's `[{query, result, success}]`): as text.
                Some(Value::Array(items)) if items.iter().any(|i| i.get("type").is_none()) => {
                    vec![Part::Text {
                        text: Value::Array(items.clone()).to_string(),
                    }]
                }
                Some(c) => anthropic::content_parts(c),
                None => Vec::new(),
            };
            Some(Part::ToolResult {
                call_id: str_field(b, "tool_use_id").unwrap_or("").to_string(),
                name: str_field(b, "name").map(str::to_string),
                content,
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            })
        }
        _ => anthropic::block_part(b),
    }
}
