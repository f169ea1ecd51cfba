//! pi's `conversation.json` messages (AgentMessages, as `buildSessionContext` gives
//! them) as neutral messages.
//!
//! `toolResult` messages carry one tool result each (`Role::Tool`), as pi has them.
//! `bashExecution`, `custom` and `branchSummary` become user text, as pi's
//! `convertToLlm` sends them; `compactionSummary` is the summary (flagged `summary`,
//! its bare text). A custom message with `display: false` and a bash execution
//! excluded from the context (`!!`) are flagged `injected`. Thinking keeps the block
//! pi stored as its opaque form when it is signed (`thinkingSignature`): for
//! Anthropic the signature, for OpenAI the JSON of the reasoning item; the vendor
//! comes from the message's provider.

use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use crate::sources::convert::{role_of, str_field, text_of};
use serde_json::Value;

/// pi's `BRANCH_SUMMARY_PREFIX` / `_SUFFIX` (`dist/core/messages.js`).
const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The company behind one of pi's provider names.
pub fn vendor_of(provider: &str) -> Vendor {
    if provider == "anthropic" {
        Vendor::Anthropic
    } else if provider.starts_with("openai") {
        Vendor::OpenAi
    } else if provider.starts_with("google") {
        Vendor::Google
    } else {
        Vendor::Other
    }
}

/// One AgentMessage (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    let role = obj.get("role").and_then(Value::as_str).unwrap_or("");
    let provider = str_field(v, "provider");
    let vendor = provider.map_or(Vendor::Other, vendor_of);
    let content = || {
        obj.get("content")
            .map(|c| parts(c, vendor))
            .unwrap_or_default()
    };
    let mut m = match role {
        "user" | "assistant" => Message::new(role_of(role), content()),
        "toolResult" => Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: obj.get("toolCallId").map(text_of).unwrap_or_default(),
                name: str_field(v, "toolName").map(str::to_string),
                content: content(),
                is_error: obj.get("isError").and_then(Value::as_bool).unwrap_or(false),
            }],
        ),
        "bashExecution" => {
            let mut m = Message::new(
                Role::User,
                vec![Part::Text {
                    text: bash_execution_text(v),
                }],
            );
            m.injected = obj.get("excludeFromContext").and_then(Value::as_bool) == Some(true);
            m
        }
        "custom" => {
            let mut m = Message::new(Role::User, content());
            m.injected = obj.get("display").and_then(Value::as_bool) == Some(false);
            m
        }
        "branchSummary" => Message::new(
            Role::User,
            vec![Part::Text {
                text: format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    obj.get("summary").map(text_of).unwrap_or_default()
                ),
            }],
        ),
        "compactionSummary" => {
            let mut m = Message::new(
                Role::User,
                vec![Part::Text {
                    text: obj.get("summary").map(text_of).unwrap_or_default(),
                }],
            );
            m.summary = true;
            m
        }
        other => Message::new(role_of(other), content()),
    };
    if role == "assistant"
        && let Some(model) = str_field(v, "model")
    {
        m.model = Some(ModelRef {
            provider: provider.map(str::to_string),
            api: str_field(v, "api").map(str::to_string),
            model: model.to_string(),
        });
    }
    m.timestamp = obj.get("timestamp").and_then(Value::as_f64).and_then(iso);
    Some(m)
}

fn iso(ms: f64) -> Option<String> {
    let d = chrono::DateTime::from_timestamp_millis(ms as i64)?;
    Some(d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

/// pi's `bashExecutionToText`.
fn bash_execution_text(v: &Value) -> String {
    let mut text = format!(
        "Ran `{}`\n",
        v.get("command").map(text_of).unwrap_or_default()
    );
    match v.get("output").map(text_of).filter(|o| !o.is_empty()) {
        Some(out) => text.push_str(&format!("```\n{out}\n```")),
        None => text.push_str("(no output)"),
    }
    if v.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = v.get("exitCode").and_then(Value::as_i64)
        && code != 0
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if v.get("truncated").and_then(Value::as_bool) == Some(true)
        && let Some(path) = str_field(v, "fullOutputPath")
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// A `content`: a string, or text / image / thinking / toolCall blocks.
fn parts(content: &Value, vendor: Vendor) -> Vec<Part> {
    match content {
        Value::String(s) => vec![Part::Text { text: s.clone() }],
        Value::Array(blocks) => blocks.iter().filter_map(|b| block(b, vendor)).collect(),
        Value::Null => Vec::new(),
        other => vec![Part::Text {
            text: other.to_string(),
        }],
    }
}

fn block(b: &Value, vendor: Vendor) -> Option<Part> {
    let ty = match b {
        Value::Object(o) => o.get("type").and_then(Value::as_str).unwrap_or(""),
        Value::String(s) => return Some(Part::Text { text: s.clone() }),
        Value::Null => return None,
        other => {
            return Some(Part::Text {
                text: other.to_string(),
            });
        }
    };
    Some(match ty {
        "text" => Part::Text {
            text: b.get("text").map(text_of).unwrap_or_default(),
        },
        "image" => Part::Image {
            mime: str_field(b, "mimeType").unwrap_or("").to_string(),
            data: Some(str_field(b, "data").unwrap_or("").to_string()),
            url: None,
        },
        "toolCall" => Part::ToolCall {
            id: b.get("id").map(text_of).unwrap_or_default(),
            name: b.get("name").map(text_of).unwrap_or_default(),
            input: b.get("arguments").cloned().unwrap_or(Value::Null),
        },
        "thinking" => {
            let redacted = b.get("redacted").and_then(Value::as_bool) == Some(true);
            let signed = str_field(b, "thinkingSignature").is_some_and(|s| !s.trim().is_empty());
            Part::Reasoning {
                vendor,
                text: if redacted {
                    String::new()
                } else {
                    b.get("thinking").map(text_of).unwrap_or_default()
                },
                opaque: signed.then(|| b.clone()),
            }
        }
        other => Part::Other {
            what: if other.is_empty() { "block" } else { other }.to_string(),
            text: b.get("text").map(text_of).unwrap_or_default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conv(v: Value) -> Message {
        to_neutral(&v).unwrap()
    }

    #[test]
    fn user_assistant_and_tool_results() {
        let u = conv(
            json!({"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"iVBOR","mimeType":"image/png"}],"timestamp":1767225601500i64}),
        );
        assert_eq!(u.role, Role::User);
        assert_eq!(u.timestamp.as_deref(), Some("2026-01-01T00:00:01.500Z"));
        assert_eq!(
            u.parts[1],
            Part::Image {
                mime: "image/png".into(),
                data: Some("iVBOR".into()),
                url: None
            }
        );
        let a = conv(json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},
            {"type":"thinking","thinking":"unsigned"},
            {"type":"thinking","thinking":"[Reasoning redacted]","thinkingSignature":"data","redacted":true},
            {"type":"text","text":"hi"},
            {"type":"toolCall","id":"call_1|fc_1","name":"bash","arguments":{"command":"ls"}}
        ],"api":"anthropic-messages","provider":"anthropic","model":"claude-x","stopReason":"toolUse"}));
        assert_eq!(
            a.model,
            Some(ModelRef {
                provider: Some("anthropic".into()),
                api: Some("anthropic-messages".into()),
                model: "claude-x".into()
            })
        );
        assert!(
            matches!(&a.parts[0], Part::Reasoning { vendor: Vendor::Anthropic, text, opaque: Some(o) } if text == "hmm" && o["thinkingSignature"] == "sig")
        );
        assert!(matches!(&a.parts[1], Part::Reasoning { opaque: None, .. }));
        assert!(
            matches!(&a.parts[2], Part::Reasoning { text, opaque: Some(_), .. } if text.is_empty())
        );
        assert_eq!(
            a.parts[4],
            Part::ToolCall {
                id: "call_1|fc_1".into(),
                name: "bash".into(),
                input: json!({"command":"ls"})
            }
        );
        let r = conv(
            json!({"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"a\nb"}],"isError":true}),
        );
        assert_eq!(r.role, Role::Tool);
        assert_eq!(
            r.parts,
            vec![Part::ToolResult {
                call_id: "call_1".into(),
                name: Some("bash".into()),
                content: vec![Part::Text {
                    text: "a\nb".into()
                }],
                is_error: true
            }]
        );
    }

    #[test]
    fn vendors() {
        for (p, v) in [
            ("anthropic", Vendor::Anthropic),
            ("openai", Vendor::OpenAi),
            ("openai-codex", Vendor::OpenAi),
            ("google", Vendor::Google),
            ("google-vertex", Vendor::Google),
            ("xai", Vendor::Other),
        ] {
            assert_eq!(vendor_of(p), v, "{p}");
        }
        let a = conv(
            json!({"role":"assistant","provider":"openai-codex","content":[{"type":"thinking","thinking":"s","thinkingSignature":"{\"type\":\"reasoning\"}"}]}),
        );
        assert!(matches!(
            &a.parts[0],
            Part::Reasoning {
                vendor: Vendor::OpenAi,
                ..
            }
        ));
    }

    #[test]
    fn pi_own_roles() {
        let b = conv(
            json!({"role":"bashExecution","command":"ls","output":"a","exitCode":2,"cancelled":false,"truncated":false}),
        );
        assert_eq!(b.role, Role::User);
        assert_eq!(
            b.parts,
            vec![Part::Text {
                text: "Ran `ls`\n```\na\n```\n\nCommand exited with code 2".into()
            }]
        );
        assert!(!b.injected);
        let hidden = conv(
            json!({"role":"bashExecution","command":"ls","output":"","exitCode":0,"excludeFromContext":true}),
        );
        assert!(hidden.injected);
        assert_eq!(hidden.plain_text(), "Ran `ls`\n(no output)");
        let c = conv(json!({"role":"custom","customType":"note","content":"x","display":false}));
        assert!(c.injected && c.role == Role::User);
        assert!(!conv(json!({"role":"custom","customType":"note","content":[{"type":"text","text":"x"}],"display":true})).injected);
        let s = conv(json!({"role":"compactionSummary","summary":"we did X","tokensBefore":10}));
        assert!(s.summary);
        assert_eq!(
            s.parts,
            vec![Part::Text {
                text: "we did X".into()
            }]
        );
        let br = conv(json!({"role":"branchSummary","summary":"tried Y","fromId":"a"}));
        assert!(!br.summary);
        assert!(br.plain_text().contains("tried Y</summary>"));
        let odd = conv(json!({"role":"weird","content":5}));
        assert_eq!(odd.role, Role::Other("weird".into()));
    }
}
