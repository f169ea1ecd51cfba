//! Cursor transcript messages (`{"role", "content"}`, content blocks shaped like
//! Anthropic's) as neutral messages; the `<user_query>` wrapper Cursor puts around a
//! prompt is taken off. Blocks of other shapes seen in transcripts (`tool_call`,
//! `tool-result`) are read as the tool call and result they are.

use crate::neutral::{Message, Part, Vendor};
use crate::sources::convert::{role_of, str_field, text_of};
use serde_json::Value;

/// One transcript message (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = role_of(str_field(v, "role").unwrap_or("user"));
    let parts = match obj.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().filter_map(block).collect(),
        Some(Value::String(s)) => vec![Part::Text {
            text: super::strip_user_query(s).to_string(),
        }],
        _ => Vec::new(),
    };
    Some(Message::new(role, parts))
}

fn block(b: &Value) -> Option<Part> {
    let ty = match b {
        Value::Object(o) => o.get("type").and_then(Value::as_str).unwrap_or(""),
        Value::Null => return None,
        other => {
            return Some(Part::Text {
                text: text_of(other),
            });
        }
    };
    let content = |b: &Value| -> Vec<Part> {
        match b.get("content") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| Part::Text {
                    text: i.get("text").map(text_of).unwrap_or_else(|| text_of(i)),
                })
                .collect(),
            Some(other) => vec![Part::Text {
                text: text_of(other),
            }],
            None => Vec::new(),
        }
    };
    Some(match ty {
        "text" => Part::Text {
            text: super::strip_user_query(&b.get("text").map(text_of).unwrap_or_default())
                .to_string(),
        },
        "thinking" => Part::Reasoning {
            vendor: Vendor::Other,
            text: b.get("thinking").map(text_of).unwrap_or_default(),
            opaque: None,
        },
        "tool_use" | "tool_call" => Part::ToolCall {
            id: b.get("id").map(text_of).unwrap_or_default(),
            name: b.get("name").map(text_of).unwrap_or_default(),
            input: b.get("input").cloned().unwrap_or(Value::Null),
        },
        "tool_result" | "tool-result" => Part::ToolResult {
            call_id: b.get("tool_use_id").map(text_of).unwrap_or_default(),
            name: str_field(b, "name").map(str::to_string),
            content: content(b),
            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        },
        other => Part::Other {
            what: if other.is_empty() { "block" } else { other }.to_string(),
            text: b.get("text").map(text_of).unwrap_or_default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutral::Role;
    use serde_json::json;

    #[test]
    fn transcript_messages() {
        let m = to_neutral(&json!({"role":"user","content":[{"type":"text","text":"<user_query>\nrun ls\n</user_query>"}]})).unwrap();
        assert_eq!(m.role, Role::User);
        assert_eq!(m.plain_text(), "run ls");
        let m = to_neutral(&json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hm"},
            {"type":"tool_use","name":"Shell","input":{"command":"ls"}},
            {"type":"custom_block","text":"visible"}]}))
        .unwrap();
        assert!(matches!(&m.parts[0], Part::Reasoning { text, .. } if text == "hm"));
        assert!(matches!(&m.parts[1], Part::ToolCall { name, .. } if name == "Shell"));
        assert!(
            matches!(&m.parts[2], Part::Other { what, text } if what == "custom_block" && text == "visible")
        );
        let m = to_neutral(&json!({"role":"user","content":[{"type":"tool-result","name":"read_file","content":[{"type":"text","text":"ok"}]}]})).unwrap();
        assert!(matches!(&m.parts[0], Part::ToolResult { name: Some(n), .. } if n == "read_file"));
    }
}
