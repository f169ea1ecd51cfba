//! Codex's `conversation.json` messages as neutral messages. A Codex message is a
//! response item `message` (`input_text`, `output_text`, `input_image` content); any
//! other history item sits alone in a `tool` message (outputs) or an `assistant`
//! message (calls, reasoning, web searches...), so tool results come in `Role::Tool`
//! messages of their own, as Codex has them.
//!
//! `developer` messages are instructions Codex writes (permissions, collaboration
//! mode...): `System`, flagged `injected`, as are contextual user messages
//! (`<environment_context>`, AGENTS.md, `<user_instructions>`, skills, shell-command
//! and abort notes). A user message that begins with Codex's summary prefix is the
//! compaction summary: flagged `summary`, its text without the prefix. Reasoning
//! keeps the whole item as its opaque form when it holds `encrypted_content`.

use super::{SUMMARY_PREFIX, is_contextual_user_text};
use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{
    all_texts, first_text, image_from_url, map_first_text, parse_arguments, role_of, str_field,
    text_of,
};
use serde_json::Value;

/// One message of Codex's `conversation.json` (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role_name = obj.get("role").and_then(Value::as_str).unwrap_or("user");
    let parts: Vec<Part> = match obj.get("content") {
        Some(Value::Array(items)) => items.iter().filter_map(item_parts).flatten().collect(),
        Some(Value::String(s)) => vec![Part::Text { text: s.clone() }],
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![Part::Text {
            text: other.to_string(),
        }],
    };
    let mut m = Message::new(role_of(role_name), parts);
    match role_name {
        "developer" => m.injected = true,
        "user" => {
            if all_texts(&m.parts, is_contextual) {
                m.injected = true;
            } else if first_text(&m.parts).is_some_and(|t| t.starts_with(SUMMARY_PREFIX)) {
                m.summary = true;
                map_first_text(&mut m.parts, |t| {
                    t[SUMMARY_PREFIX.len()..]
                        .trim_start_matches('\n')
                        .to_string()
                });
            }
        }
        _ => {}
    }
    Some(m)
}

/// Contextual user text as Codex recognises it, plus the older `<user_instructions>`.
fn is_contextual(text: &str) -> bool {
    is_contextual_user_text(text) || text.trim().starts_with("<user_instructions>")
}

/// One content entry: a message's content item, or a whole non-message history item.
fn item_parts(item: &Value) -> Option<Vec<Part>> {
    let ty = match item {
        Value::Object(o) => o.get("type").and_then(Value::as_str).unwrap_or(""),
        Value::String(s) => return Some(vec![Part::Text { text: s.clone() }]),
        Value::Null => return None,
        other => {
            return Some(vec![Part::Text {
                text: other.to_string(),
            }]);
        }
    };
    let s = |k: &str| item.get(k).map(text_of).unwrap_or_default();
    let call_id = || {
        str_field(item, "call_id")
            .or_else(|| str_field(item, "id"))
            .unwrap_or("")
            .to_string()
    };
    Some(vec![match ty {
        "input_text" | "output_text" | "text" => Part::Text { text: s("text") },
        "input_image" => match str_field(item, "image_url") {
            Some(url) => image_from_url(url),
            None => Part::Other {
                what: "input_image".into(),
                text: String::new(),
            },
        },
        "function_call" => Part::ToolCall {
            id: call_id(),
            name: s("name"),
            input: item
                .get("arguments")
                .map(parse_arguments)
                .unwrap_or(Value::Null),
        },
        "custom_tool_call" => Part::ToolCall {
            id: call_id(),
            name: s("name"),
            input: item.get("input").cloned().unwrap_or(Value::Null),
        },
        "local_shell_call" => Part::ToolCall {
            id: call_id(),
            name: "local_shell".into(),
            input: item.get("action").cloned().unwrap_or(Value::Null),
        },
        "tool_search_call" => Part::ToolCall {
            id: call_id(),
            name: "tool_search".into(),
            input: item
                .get("arguments")
                .map(parse_arguments)
                .unwrap_or(Value::Null),
        },
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            Part::ToolResult {
                call_id: call_id(),
                name: str_field(item, "name").map(str::to_string),
                content: item.get("output").map(output_parts).unwrap_or_default(),
                is_error: false,
            }
        }
        "tool_search_output" => Part::ToolResult {
            call_id: call_id(),
            name: Some("tool_search".into()),
            content: vec![Part::Text {
                text: item.get("tools").map(text_of).unwrap_or_default(),
            }],
            is_error: str_field(item, "status").is_some_and(|s| s != "completed"),
        },
        "reasoning" => reasoning_part(item),
        "web_search_call" => Part::Other {
            what: "web_search".into(),
            text: item
                .get("action")
                .and_then(|a| a.get("query").or_else(|| a.get("url")))
                .map(text_of)
                .unwrap_or_default(),
        },
        "image_generation_call" => match str_field(item, "result") {
            Some(data) if !data.is_empty() => Part::Image {
                mime: "image/png".into(),
                data: Some(data.to_string()),
                url: None,
            },
            _ => Part::Other {
                what: "image_generation".into(),
                text: s("revised_prompt"),
            },
        },
        "compaction" | "compaction_summary" => Part::Other {
            what: "compaction".into(),
            text: String::new(),
        },
        other => Part::Other {
            what: if other.is_empty() { "item" } else { other }.to_string(),
            text: String::new(),
        },
    }])
}

/// A tool output: a string, or `input_text`/`input_image` items.
fn output_parts(output: &Value) -> Vec<Part> {
    match output {
        Value::Array(items) => items
            .iter()
            .filter_map(item_parts)
            .flatten()
            .map(|p| match p {
                Part::Text { .. } | Part::Image { .. } => p,
                other => Part::Text {
                    text: Message::new(Role::Tool, vec![other]).plain_text(),
                },
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![Part::Text {
            text: text_of(other),
        }],
    }
}

/// `reasoning`: the summary texts (else the raw reasoning texts) for people; the item
/// itself when it carries `encrypted_content`, which only OpenAI can read back.
fn reasoning_part(item: &Value) -> Part {
    let texts = |key: &str| -> Vec<String> {
        match item.get(key) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|s| str_field(s, "text"))
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut text = texts("summary");
    if text.is_empty() {
        text = texts("content");
    }
    let encrypted = str_field(item, "encrypted_content").is_some_and(|e| !e.is_empty());
    Part::Reasoning {
        vendor: Vendor::OpenAi,
        text: text.join("\n\n"),
        opaque: encrypted.then(|| item.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conv(v: Value) -> Message {
        to_neutral(&v).unwrap()
    }

    #[test]
    fn messages() {
        let m = conv(json!({"role":"user","content":[
            {"type":"input_text","text":"hi"},
            {"type":"input_image","image_url":"data:image/jpeg;base64,/9j/"}
        ]}));
        assert_eq!(m.role, Role::User);
        assert_eq!(
            m.parts,
            vec![
                Part::Text { text: "hi".into() },
                Part::Image {
                    mime: "image/jpeg".into(),
                    data: Some("/9j/".into()),
                    url: None
                }
            ]
        );
        let m = conv(
            json!({"role":"assistant","content":[{"type":"output_text","text":"ok"}],"phase":"commentary"}),
        );
        assert_eq!(m.role, Role::Assistant);
        assert!(!m.injected);
        let d = conv(
            json!({"role":"developer","content":[{"type":"input_text","text":"<permissions instructions>x"}]}),
        );
        assert_eq!(d.role, Role::System);
        assert!(d.injected);
    }

    #[test]
    fn contextual_messages_are_injected_and_the_summary_is_flagged() {
        for t in [
            "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>",
            "# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
            "<user_instructions>\nbe nice\n</user_instructions>",
            "<turn_aborted>\nstopped\n</turn_aborted>",
        ] {
            let m = conv(json!({"role":"user","content":[{"type":"input_text","text":t}]}));
            assert!(m.injected, "{t}");
        }
        assert!(
            !conv(json!({"role":"user","content":[{"type":"input_text","text":"fix the bug"}]}))
                .injected
        );
        let s = conv(
            json!({"role":"user","content":[{"type":"input_text","text":format!("{SUMMARY_PREFIX}\nwe did X")}]}),
        );
        assert!(s.summary && !s.injected);
        assert_eq!(
            s.parts,
            vec![Part::Text {
                text: "we did X".into()
            }]
        );
    }

    #[test]
    fn items() {
        let call = conv(
            json!({"role":"assistant","content":[{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}]}),
        );
        assert_eq!(
            call.parts,
            vec![Part::ToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                input: json!({"command":["ls"]})
            }]
        );
        let bad = conv(
            json!({"role":"assistant","content":[{"type":"function_call","name":"f","arguments":"{not json","call_id":"c"}]}),
        );
        assert!(
            matches!(&bad.parts[0], Part::ToolCall { input: Value::String(s), .. } if s == "{not json")
        );
        let custom = conv(
            json!({"role":"assistant","content":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"c2"}]}),
        );
        assert!(
            matches!(&custom.parts[0], Part::ToolCall { input: Value::String(s), name, .. } if s == "*** Begin Patch" && name == "apply_patch")
        );
        let out = conv(
            json!({"role":"tool","content":[{"type":"function_call_output","call_id":"call_1","output":"a\nb"}]}),
        );
        assert_eq!(out.role, Role::Tool);
        assert_eq!(
            out.parts,
            vec![Part::ToolResult {
                call_id: "call_1".into(),
                name: None,
                content: vec![Part::Text {
                    text: "a\nb".into()
                }],
                is_error: false
            }]
        );
        let items = conv(
            json!({"role":"tool","content":[{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"done"},{"type":"input_image","image_url":"https://i"}]}]}),
        );
        let Part::ToolResult { content, .. } = &items.parts[0] else {
            panic!()
        };
        assert_eq!(content.len(), 2);
        let shell = conv(
            json!({"role":"assistant","content":[{"type":"local_shell_call","call_id":"l","status":"completed","action":{"type":"exec","command":["ls"]}}]}),
        );
        assert!(matches!(&shell.parts[0], Part::ToolCall { name, .. } if name == "local_shell"));
        let web = conv(
            json!({"role":"assistant","content":[{"type":"web_search_call","status":"completed","action":{"type":"search","query":"rust fuse"}}]}),
        );
        assert_eq!(
            web.parts,
            vec![Part::Other {
                what: "web_search".into(),
                text: "rust fuse".into()
            }]
        );
        let enc = json!({"type":"compaction","encrypted_content":"gAAA"});
        let c = conv(json!({"role":"assistant","content":[enc]}));
        assert!(matches!(&c.parts[0], Part::Other { what, .. } if what == "compaction"));
    }

    #[test]
    fn reasoning() {
        let item = json!({"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"then"}],"encrypted_content":"gAAAA"});
        let m = conv(json!({"role":"assistant","content":[item.clone()]}));
        assert_eq!(
            m.parts,
            vec![Part::Reasoning {
                vendor: Vendor::OpenAi,
                text: "**Plan**\n\nthen".into(),
                opaque: Some(item)
            }]
        );
        let plain = conv(
            json!({"role":"assistant","content":[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"raw"}],"encrypted_content":null}]}),
        );
        assert_eq!(
            plain.parts,
            vec![Part::Reasoning {
                vendor: Vendor::OpenAi,
                text: "raw".into(),
                opaque: None
            }]
        );
    }
}
