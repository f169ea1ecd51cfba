//! Gemini CLI's `conversation.json` messages (`{"id", "role", "parts"}`: the Gemini
//! API's `Content` with the history item's id) as neutral messages.
//!
//! Tool results stay where Gemini puts them: `functionResponse` parts of a user turn.
//! A thought part is reasoning anyone may read; when it carries a `thoughtSignature`
//! the part itself is kept as the opaque form only Google's API takes back.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{role_of, str_field, text_of};
use serde_json::Value;

/// One `{id, role, parts}` item (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = match str_field(v, "role") {
        Some("model") => Role::Assistant,
        Some(other) => role_of(other),
        None => Role::User,
    };
    let parts = obj
        .get("parts")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(part).collect())
        .unwrap_or_default();
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "id").map(str::to_string);
    Some(m)
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(_) => true,
    }
}

/// One Gemini API `Part`.
fn part(p: &Value) -> Option<Part> {
    let o = match p {
        Value::Object(o) => o,
        Value::Null => return None,
        other => {
            return Some(Part::Text {
                text: text_of(other),
            });
        }
    };
    if let Some(call) = o.get("functionCall") {
        return Some(Part::ToolCall {
            id: call.get("id").map(text_of).unwrap_or_default(),
            name: call.get("name").map(text_of).unwrap_or_default(),
            input: call.get("args").cloned().unwrap_or(Value::Null),
        });
    }
    if let Some(resp) = o.get("functionResponse") {
        let response = resp.get("response").unwrap_or(&Value::Null);
        let (text, is_error) = match (response.get("output"), response.get("error")) {
            (Some(out), _) => (text_of(out), false),
            (None, Some(err)) => (text_of(err), true),
            _ => (text_of(response), false),
        };
        return Some(Part::ToolResult {
            call_id: resp.get("id").map(text_of).unwrap_or_default(),
            name: str_field(resp, "name").map(str::to_string),
            content: vec![Part::Text { text }],
            is_error,
        });
    }
    if let Some(data) = o.get("inlineData") {
        let mime = str_field(data, "mimeType").unwrap_or("").to_string();
        if mime.starts_with("image/") {
            return Some(Part::Image {
                mime,
                data: str_field(data, "data").map(str::to_string),
                url: None,
            });
        }
        return Some(Part::Other {
            what: "inline_data".into(),
            text: mime,
        });
    }
    if let Some(file) = o.get("fileData") {
        let mime = str_field(file, "mimeType").unwrap_or("").to_string();
        let uri = str_field(file, "fileUri").unwrap_or("").to_string();
        if mime.starts_with("image/") {
            return Some(Part::Image {
                mime,
                data: None,
                url: Some(uri),
            });
        }
        return Some(Part::Other {
            what: "file_data".into(),
            text: uri,
        });
    }
    if let Some(code) = o.get("executableCode") {
        return Some(Part::Other {
            what: "executable_code".into(),
            text: code.get("code").map(text_of).unwrap_or_default(),
        });
    }
    if let Some(result) = o.get("codeExecutionResult") {
        return Some(Part::Other {
            what: "code_execution_result".into(),
            text: result.get("output").map(text_of).unwrap_or_default(),
        });
    }
    let text = o.get("text").map(text_of);
    if truthy(o.get("thought")) {
        return Some(Part::Reasoning {
            vendor: Vendor::Google,
            text: text.unwrap_or_default(),
            opaque: o.contains_key("thoughtSignature").then(|| p.clone()),
        });
    }
    match text {
        Some(text) => Some(Part::Text { text }),
        None => Some(Part::Other {
            what: o.keys().next().cloned().unwrap_or_else(|| "part".into()),
            text: String::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_and_parts() {
        let m = to_neutral(&json!({"id":"g1","role":"model","parts":[
            {"text":"**Plan** look","thought":true},
            {"text":"Listing."},
            {"functionCall":{"id":"c1","name":"list_directory","args":{"dir_path":"."}}}
        ]}))
        .unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.entry.as_deref(), Some("g1"));
        assert_eq!(
            m.parts,
            vec![
                Part::Reasoning {
                    vendor: Vendor::Google,
                    text: "**Plan** look".into(),
                    opaque: None
                },
                Part::Text {
                    text: "Listing.".into()
                },
                Part::ToolCall {
                    id: "c1".into(),
                    name: "list_directory".into(),
                    input: json!({"dir_path":"."})
                },
            ]
        );
        let m = to_neutral(&json!({"id":"g1_response","role":"user","parts":[
            {"functionResponse":{"id":"c1","name":"list_directory","response":{"output":"a.txt"}}},
            {"functionResponse":{"name":"x","response":{"error":"denied"}}},
            {"inlineData":{"mimeType":"image/png","data":"AAAA"}}
        ]}))
        .unwrap();
        assert_eq!(m.role, Role::User);
        assert_eq!(
            m.parts[0],
            Part::ToolResult {
                call_id: "c1".into(),
                name: Some("list_directory".into()),
                content: vec![Part::Text {
                    text: "a.txt".into()
                }],
                is_error: false
            }
        );
        assert!(matches!(
            &m.parts[1],
            Part::ToolResult { is_error: true, .. }
        ));
        assert!(matches!(&m.parts[2], Part::Image { data: Some(d), .. } if d == "AAAA"));
        assert!(to_neutral(&json!("text")).is_none());
    }
}
