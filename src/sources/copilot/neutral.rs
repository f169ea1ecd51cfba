//! Copilot CLI's `conversation.json` messages (the session's own events, as stored)
//! as neutral messages: `user.message`, `assistant.message` (its reasoning, text and
//! tool requests), `tool.execution_complete` (a tool message with the result), a
//! compaction's summary, a cleared context's first message, a system message.

use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use crate::sources::convert::{parse_arguments, str_field, text_of};
use serde_json::Value;

/// The company behind a model Copilot names (`claude-…`, `gpt-…`, `gemini-…`).
fn vendor_of_model(model: &str) -> Vendor {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude") {
        Vendor::Anthropic
    } else if m.starts_with("gpt")
        || m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        Vendor::OpenAi
    } else if m.starts_with("gemini") {
        Vendor::Google
    } else {
        Vendor::Other
    }
}

/// One event (`None`: not an event that is a message).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let data = v.get("data").unwrap_or(&Value::Null);
    let text = |key: &str| str_field(data, key).unwrap_or("").to_string();
    let mut m = match str_field(v, "type")? {
        "user.message" => {
            let mut parts = vec![Part::Text {
                text: text("content"),
            }];
            for a in data
                .get("attachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = str_field(a, "path")
                    .or_else(|| str_field(a, "displayName"))
                    .or_else(|| str_field(a, "url"))
                    .unwrap_or("");
                parts.push(Part::Other {
                    what: format!("attachment:{}", str_field(a, "type").unwrap_or("")),
                    text: name.to_string(),
                });
            }
            let mut m = Message::new(Role::User, parts);
            // A skill's hidden prompt or an autopilot continuation, not typed.
            m.injected = str_field(data, "source").is_some_and(|s| s.starts_with("skill-"))
                || data.get("isAutopilotContinuation") == Some(&Value::Bool(true));
            m
        }
        "assistant.message" => {
            let model = str_field(data, "model");
            let mut parts = Vec::new();
            if let Some(r) = str_field(data, "reasoningText").filter(|r| !r.is_empty()) {
                parts.push(Part::Reasoning {
                    vendor: model.map_or(Vendor::Other, vendor_of_model),
                    text: r.to_string(),
                    opaque: None,
                });
            }
            if let Some(c) = str_field(data, "content").filter(|c| !c.is_empty()) {
                parts.push(Part::Text { text: c.into() });
            }
            for t in data
                .get("toolRequests")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                parts.push(Part::ToolCall {
                    id: t.get("toolCallId").map(text_of).unwrap_or_default(),
                    name: t.get("name").map(text_of).unwrap_or_default(),
                    input: t
                        .get("arguments")
                        .map(parse_arguments)
                        .unwrap_or(Value::Null),
                });
            }
            let mut m = Message::new(Role::Assistant, parts);
            m.model = model.map(|model| ModelRef {
                provider: None,
                api: None,
                model: model.to_string(),
            });
            m
        }
        "tool.execution_complete" => {
            let result = data.get("result").unwrap_or(&Value::Null);
            let content = match result.get("content") {
                Some(c) => text_of(c),
                None => str_field(data.get("error").unwrap_or(&Value::Null), "message")
                    .unwrap_or("")
                    .to_string(),
            };
            Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: data.get("toolCallId").map(text_of).unwrap_or_default(),
                    name: None,
                    content: vec![Part::Text { text: content }],
                    is_error: data.get("success") == Some(&Value::Bool(false)),
                }],
            )
        }
        "session.compaction_complete" => {
            let mut m = Message::new(
                Role::User,
                vec![Part::Text {
                    text: text("summaryContent"),
                }],
            );
            m.summary = true;
            m
        }
        "session.context_cleared" => Message::new(
            Role::User,
            vec![Part::Text {
                text: text("initialMessage"),
            }],
        ),
        "system.message" => Message::new(
            Role::System,
            vec![Part::Text {
                text: text("content"),
            }],
        ),
        _ => return None,
    };
    m.entry = str_field(v, "id").map(str::to_string);
    m.timestamp = str_field(v, "timestamp").map(str::to_string);
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_as_messages() {
        let m = to_neutral(&json!({"type":"assistant.message","id":"e4","data":{
            "content":"","model":"claude-haiku-4.5","reasoningText":"think",
            "toolRequests":[{"toolCallId":"call-1","name":"shell","arguments":"{\"command\":\"ls\"}"}]}}))
        .unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.entry.as_deref(), Some("e4"));
        assert!(matches!(
            &m.parts[0],
            Part::Reasoning {
                vendor: Vendor::Anthropic,
                ..
            }
        ));
        assert_eq!(
            m.parts[1],
            Part::ToolCall {
                id: "call-1".into(),
                name: "shell".into(),
                input: json!({"command":"ls"})
            }
        );
        assert_eq!(m.model.unwrap().model, "claude-haiku-4.5");
        let m = to_neutral(&json!({"type":"tool.execution_complete","data":{
            "toolCallId":"call-1","success":false,"result":{"content":"exit 1"}}}))
        .unwrap();
        assert_eq!(m.role, Role::Tool);
        assert!(
            matches!(&m.parts[0], Part::ToolResult { is_error: true, call_id, .. } if call_id == "call-1")
        );
        let m = to_neutral(&json!({"type":"session.compaction_complete","data":{"success":true,"summaryContent":"so far"}})).unwrap();
        assert!(m.summary);
        assert_eq!(m.plain_text(), "so far");
        assert!(to_neutral(&json!({"type":"session.start","data":{}})).is_none());
        assert_eq!(vendor_of_model("gpt-5-mini"), Vendor::OpenAi);
        assert_eq!(vendor_of_model("o3"), Vendor::OpenAi);
        assert_eq!(vendor_of_model("other"), Vendor::Other);
    }
}
