//! fen's messages as neutral messages. A fen message is whatever its writer stored
//! (SPEC §1.1: a `role` and any `content`), so its shape is sniffed, in this order:
//! - §3's synthetic summary message → the summary (flagged `summary`, its bare text);
//! - a pi AgentMessage (pi's own roles, `toolCall`/`thinkingSignature` blocks, images
//!   with `mimeType`) → as pi's;
//! - OpenAI chat (`tool_calls`, or role `tool` with `tool_call_id`) → calls and results;
//! - Codex response items (`input_text`, `function_call`, ... content) → as Codex's;
//! - Anthropic blocks (`tool_use`, `tool_result`, `thinking`, `image` with a `source`,
//!   ...) → as Claude's (without Claude Code's injected-context rules);
//! - anything else: `content` as text (a string, the text of text blocks), else the
//!   message's JSON as text.

use crate::neutral::{Message, Part, Role};
use crate::sources::convert::{anthropic, openai, role_of, str_field};
use serde_json::Value;

/// The first line of §3's synthetic summary message.
const SUMMARY_PREFIX: &str = "The conversation before this point was compacted. Summary:\n\n";

const PI_ROLES: &[&str] = &[
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];
const CODEX_ITEMS: &[&str] = &[
    "input_text",
    "output_text",
    "input_image",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
];
const ANTHROPIC_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
];

/// One fen message (`None`: not a JSON object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = obj.get("role").and_then(Value::as_str).unwrap_or("");
    let content = obj.get("content");
    if role == "user"
        && let Some(Value::String(s)) = content
        && let Some(summary) = s.strip_prefix(SUMMARY_PREFIX)
    {
        let mut m = Message::new(
            Role::User,
            vec![Part::Text {
                text: summary.to_string(),
            }],
        );
        m.summary = true;
        return Some(m);
    }
    let blocks: &[Value] = match content {
        Some(Value::Array(b)) => b,
        _ => &[],
    };
    let block_types: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b.get("type").and_then(Value::as_str))
        .collect();
    let has = |set: &[&str]| block_types.iter().any(|t| set.contains(t));
    let pi_blocks = blocks.iter().any(|b| {
        let ty = str_field(b, "type");
        ty == Some("toolCall")
            || (ty == Some("thinking") && b.get("thinkingSignature").is_some())
            || (ty == Some("image") && b.get("mimeType").is_some())
    });
    if PI_ROLES.contains(&role) || pi_blocks {
        return super::super::pi::to_neutral(v);
    }
    if obj.contains_key("tool_calls") || (role == "tool" && obj.contains_key("tool_call_id")) {
        return Some(openai::chat_message(v));
    }
    if has(CODEX_ITEMS) {
        return super::super::codex::to_neutral(v).map(|mut m| {
            // Codex's own rules about injected context are not fen's.
            m.injected = false;
            m
        });
    }
    let image_source = blocks
        .iter()
        .any(|b| str_field(b, "type") == Some("image") && b.get("source").is_some());
    if has(ANTHROPIC_BLOCKS) || image_source {
        return Some(Message::new(
            role_of(role),
            anthropic::content_parts(content.unwrap_or(&Value::Null)),
        ));
    }
    Some(Message::new(
        role_of(role),
        openai::content_parts(v, content),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutral::Vendor;
    use serde_json::json;

    fn conv(v: Value) -> Message {
        to_neutral(&v).unwrap()
    }

    #[test]
    fn plain_and_summary() {
        let m = conv(json!({"role":"user","content":"hi"}));
        assert_eq!(m.parts, vec![Part::Text { text: "hi".into() }]);
        let s = conv(
            json!({"role":"user","content":"The conversation before this point was compacted. Summary:\n\nwe did X"}),
        );
        assert!(s.summary);
        assert_eq!(
            s.parts,
            vec![Part::Text {
                text: "we did X".into()
            }]
        );
        let odd = conv(json!({"role":"note","body":{"x":1}}));
        assert_eq!(odd.role, Role::Other("note".into()));
        assert_eq!(odd.plain_text(), r#"{"body":{"x":1},"role":"note"}"#);
        let texts =
            conv(json!({"role":"assistant","content":[{"type":"text","text":"a"},"b",{"k":1}]}));
        assert_eq!(texts.plain_text(), "a\nb\n{\"k\":1}");
        assert_eq!(
            conv(json!({"role":"tool","content":"out"})).role,
            Role::Tool
        );
        assert_eq!(
            conv(json!({"role":"developer","content":"x"})).role,
            Role::System
        );
    }

    #[test]
    fn anthropic_blocks() {
        let m = conv(
            json!({"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}]}),
        );
        assert!(matches!(
            &m.parts[0],
            Part::Reasoning {
                vendor: Vendor::Anthropic,
                ..
            }
        ));
        assert!(matches!(&m.parts[1], Part::ToolCall { name, .. } if name == "Read"));
        let r = conv(
            json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}),
        );
        assert!(matches!(&r.parts[0], Part::ToolResult { call_id, .. } if call_id == "t1"));
        // Claude Code's context tags are Claude Code's: not flagged for fen.
        assert!(!conv(json!({"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}},{"type":"text","text":"<system-reminder>x"}]})).injected);
    }

    #[test]
    fn openai_chat_messages() {
        let m = conv(
            json!({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]}),
        );
        assert_eq!(
            m.parts,
            vec![Part::ToolCall {
                id: "call_1".into(),
                name: "ls".into(),
                input: json!({"dir":"."})
            }]
        );
        let t = conv(json!({"role":"tool","tool_call_id":"call_1","content":"a.txt"}));
        assert_eq!(t.role, Role::Tool);
        assert_eq!(
            t.parts,
            vec![Part::ToolResult {
                call_id: "call_1".into(),
                name: None,
                content: vec![Part::Text {
                    text: "a.txt".into()
                }],
                is_error: false
            }]
        );
        let img = conv(
            json!({"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}),
        );
        assert!(matches!(&img.parts[1], Part::Image { mime, .. } if mime == "image/png"));
    }

    #[test]
    fn pi_and_codex_shapes() {
        let p = conv(
            json!({"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false}),
        );
        assert!(matches!(&p.parts[0], Part::ToolResult { name: Some(n), .. } if n == "bash"));
        let a = conv(
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"provider":"openai","model":"gpt"}),
        );
        assert_eq!(a.model.unwrap().model, "gpt");
        let c = conv(
            json!({"role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}),
        );
        assert!(!c.injected);
        assert_eq!(
            c.plain_text(),
            "<environment_context>x</environment_context>"
        );
        let f = conv(
            json!({"role":"assistant","content":[{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}]}),
        );
        assert!(matches!(&f.parts[0], Part::ToolCall { .. }));
    }
}
