//! Crush's `conversation.json` messages (its `messages` rows: `role` user / assistant
//! / tool / system, `parts` `[{type, data}]` as `internal/message/message.go` writes
//! them) as neutral messages.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{parse_arguments, role_of, text_of};
use serde_json::Value;

/// One message row (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = match v.get("role")?.as_str()? {
        "tool" => Role::Tool,
        r => role_of(r),
    };
    let parts = v["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(part)
        .collect();
    let mut m = Message::new(role, parts);
    m.summary = v["is_summary_message"].as_i64() == Some(1);
    if let Some(model) = v["model"].as_str().filter(|m| !m.is_empty()) {
        m.model = Some(crate::neutral::ModelRef {
            provider: v["provider"].as_str().map(str::to_string),
            api: None,
            model: model.to_string(),
        });
    }
    Some(m)
}

fn part(p: &Value) -> Option<Part> {
    let d = &p["data"];
    let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
    Some(match p["type"].as_str()? {
        "text" => Part::Text { text: s("text") },
        "reasoning" => Part::Reasoning {
            vendor: Vendor::Other,
            text: s("thinking"),
            opaque: None,
        },
        "tool_call" => Part::ToolCall {
            id: s("id"),
            name: s("name"),
            input: parse_arguments(&d["input"]),
        },
        "tool_result" => Part::ToolResult {
            call_id: s("tool_call_id"),
            name: d["name"].as_str().map(str::to_string),
            content: vec![Part::Text { text: s("content") }],
            is_error: d["is_error"].as_bool().unwrap_or(false),
        },
        "image_url" => Part::Image {
            mime: String::new(),
            data: None,
            url: d["url"].as_str().map(str::to_string),
        },
        "finish" => return None,
        "shell_command" => Part::Other {
            what: "shell command".into(),
            text: format!("$ {}\n{}", s("command"), s("output")),
        },
        other => Part::Other {
            what: other.to_string(),
            text: text_of(d),
        },
    })
}
