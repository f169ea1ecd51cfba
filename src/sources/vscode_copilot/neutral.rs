//! VS Code chat turns (`conversation.json` lines) as neutral messages. A user turn is
//! its `message.text`. An assistant turn is what Copilot Chat rebuilds from it
//! (vscode-copilot-chat `conversation.ts`, `Turn.rounds`): each of
//! `result.metadata.toolCallRounds` as its text and tool calls (arguments a JSON
//! string), the tools' results from `result.metadata.toolCallResults`; without
//! rounds, the response's markdown (`{value}` parts, `inlineReference` names) and its
//! `toolInvocationSerialized` parts as calls; `thinking` parts as reasoning.

use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use crate::sources::convert::{parse_arguments, str_field};
use serde_json::Value;

/// One turn (`None`: not a turn).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let role = str_field(v, "role")?;
    let mut m = match role {
        "user" => Message::new(
            Role::User,
            v.pointer("/message/text")
                .and_then(Value::as_str)
                .map(|t| {
                    vec![Part::Text {
                        text: t.to_string(),
                    }]
                })
                .unwrap_or_default(),
        ),
        "assistant" => assistant(v),
        _ => return None,
    };
    m.entry = str_field(v, "requestId").map(str::to_string);
    m.timestamp = v
        .get("timestamp")
        .and_then(Value::as_f64)
        .and_then(|ms| chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64))
        .map(crate::store::naming::timestamp);
    if role == "assistant" {
        let model = v
            .pointer("/result/metadata/resolvedModel")
            .and_then(Value::as_str)
            .or_else(|| str_field(v, "modelId"));
        m.model = model.map(|model| ModelRef {
            provider: Some("github-copilot".into()),
            api: None,
            model: model.strip_prefix("copilot/").unwrap_or(model).to_string(),
        });
    }
    Some(m)
}

/// A tool result's readable text: its content parts' `value`s (or text).
fn result_parts(r: &Value) -> Vec<Part> {
    let items = r.get("content").and_then(Value::as_array);
    let text: Vec<String> = items
        .into_iter()
        .flatten()
        .filter_map(|c| {
            c.get("value")
                .or_else(|| c.get("text"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    if text.is_empty() {
        return Vec::new();
    }
    vec![Part::Text {
        text: text.join("\n"),
    }]
}

fn assistant(v: &Value) -> Message {
    let mut parts = Vec::new();
    let rounds = v
        .pointer("/result/metadata/toolCallRounds")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty());
    if let Some(rounds) = rounds {
        let results = v.pointer("/result/metadata/toolCallResults");
        for round in rounds {
            if let Some(text) = str_field(round, "response").filter(|t| !t.is_empty()) {
                parts.push(Part::Text {
                    text: text.to_string(),
                });
            }
            for call in round
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = str_field(call, "id").unwrap_or("").to_string();
                parts.push(Part::ToolCall {
                    id: id.clone(),
                    name: str_field(call, "name").unwrap_or("").to_string(),
                    input: call
                        .get("arguments")
                        .map(parse_arguments)
                        .unwrap_or(Value::Null),
                });
                if let Some(r) = results.and_then(|rs| rs.get(&id)) {
                    parts.push(Part::ToolResult {
                        call_id: id,
                        name: str_field(call, "name").map(str::to_string),
                        content: result_parts(r),
                        is_error: false,
                    });
                }
            }
        }
        return Message::new(Role::Assistant, parts);
    }
    let mut text = String::new();
    for p in v
        .get("response")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match str_field(p, "kind") {
            None | Some("markdownContent") => {
                if let Some(t) = p
                    .get("value")
                    .or_else(|| p.pointer("/content/value"))
                    .and_then(Value::as_str)
                {
                    text.push_str(t);
                }
            }
            Some("inlineReference") => {
                let r = p.get("inlineReference");
                if let Some(name) = r
                    .and_then(|r| str_field(r, "name").or_else(|| str_field(r, "path")))
                    .or_else(|| {
                        r.and_then(|r| r.pointer("/location/uri/path"))
                            .and_then(Value::as_str)
                    })
                {
                    text.push_str(&format!("`{name}`"));
                }
            }
            Some("thinking") => {
                if let Some(t) = p
                    .get("value")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    parts.push(Part::Reasoning {
                        vendor: Vendor::Other,
                        text: t.to_string(),
                        opaque: None,
                    });
                }
            }
            Some("toolInvocationSerialized") => {
                if !text.is_empty() {
                    parts.push(Part::Text {
                        text: std::mem::take(&mut text),
                    });
                }
                parts.push(Part::ToolCall {
                    id: str_field(p, "toolCallId").unwrap_or("").to_string(),
                    name: str_field(p, "toolId").unwrap_or("").to_string(),
                    input: p.get("toolSpecificData").cloned().unwrap_or(Value::Null),
                });
            }
            _ => {}
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text { text });
    }
    Message::new(Role::Assistant, parts)
}
