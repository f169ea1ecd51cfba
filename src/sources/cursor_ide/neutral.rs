//! One message of a Cursor composer's `conversation.json` (a bubble as stored, or the
//! result of the tool it ran, `reader.rs`) as a neutral message. A person's bubble is
//! its `text`; the model's is its thinking (`thinking.text`), its `text` (or, when it
//! has none, its code blocks) and the tool call of its `toolFormerData` (`name`,
//! `toolCallId`, the arguments the model gave, `rawArgs`, else Cursor's `params`); the
//! result is `toolFormerData.result` (a JSON text whose output field, when it has a
//! usual one, is what a person reads), an error when its status says so.

use crate::neutral::{Message, Part, Role, Vendor};
use crate::sources::convert::{parse_arguments, str_field, text_of};
use serde_json::Value;

/// The call id of a bubble's tool: `toolCallId`, else the bubble's id.
fn call_id(tool: &Value, bubble_id: &str) -> String {
    str_field(tool, "toolCallId")
        .filter(|s| !s.is_empty())
        .unwrap_or(bubble_id)
        .to_string()
}

fn tool_name(tool: &Value) -> String {
    match str_field(tool, "name").filter(|s| !s.is_empty()) {
        Some(n) => n.to_string(),
        None => match tool.get("tool") {
            Some(Value::Number(n)) => format!("tool {n}"),
            Some(v) => text_of(v),
            None => "tool".into(),
        },
    }
}

/// What a person reads of a tool's stored result.
fn result_text(result: &Value) -> String {
    let Value::String(s) = result else {
        return text_of(result);
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
        for k in [
            "output",
            "contents",
            "content",
            "text",
            "resultForModel",
            "stdout",
        ] {
            if let Some(Value::String(t)) = o.get(k)
                && !t.is_empty()
            {
                return t.clone();
            }
        }
    }
    s.clone()
}

fn code_blocks(v: &Value) -> String {
    let mut out = String::new();
    for b in v
        .get("codeBlocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(code) = str_field(b, "content").filter(|c| !c.is_empty()) else {
            continue;
        };
        if !out.is_empty() {
            out.push('\n');
        }
        let lang = str_field(b, "languageId").unwrap_or("");
        out.push_str(&format!("```{lang}\n{code}\n```"));
    }
    out
}

pub fn to_neutral(v: &Value) -> Option<Message> {
    if let Some(r) = v.get("cursor_tool_result") {
        let tool = r.get("toolFormerData")?;
        let id = str_field(r, "bubbleId").unwrap_or_default();
        let status = str_field(tool, "status").unwrap_or("");
        let nested = tool
            .get("additionalData")
            .and_then(|a| str_field(a, "status"))
            .unwrap_or("");
        let content = match tool.get("result") {
            Some(res) if !res.is_null() => result_text(res),
            _ => String::new(),
        };
        return Some(Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: call_id(tool, id),
                name: Some(tool_name(tool)),
                content: vec![Part::Text { text: content }],
                is_error: status == "error" || nested == "error",
            }],
        ));
    }
    let role = super::reader::role_of(v.get("type")?)?;
    let text = v.get("text").map(text_of).unwrap_or_default();
    let mut parts = Vec::new();
    if role == "user" {
        if !text.trim().is_empty() {
            parts.push(Part::Text { text });
        }
        return (!parts.is_empty()).then(|| Message::new(Role::User, parts));
    }
    if let Some(t) = v
        .get("thinking")
        .and_then(|t| str_field(t, "text"))
        .filter(|t| !t.trim().is_empty())
    {
        parts.push(Part::Reasoning {
            vendor: Vendor::Other,
            text: t.to_string(),
            opaque: None,
        });
    }
    if !text.trim().is_empty() {
        parts.push(Part::Text { text });
    } else {
        let code = code_blocks(v);
        if !code.is_empty() {
            parts.push(Part::Text { text: code });
        }
    }
    if let Some(tool) = v.get("toolFormerData").filter(|t| t.is_object()) {
        let id = str_field(v, "bubbleId").unwrap_or_default();
        let input = [tool.get("rawArgs"), tool.get("params")]
            .into_iter()
            .flatten()
            .find(|a| !a.is_null() && a.as_str() != Some(""))
            .map(parse_arguments)
            .unwrap_or(Value::Null);
        parts.push(Part::ToolCall {
            id: call_id(tool, id),
            name: tool_name(tool),
            input,
        });
    }
    (!parts.is_empty()).then(|| Message::new(Role::Assistant, parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bubbles_and_tool_results() {
        let u = to_neutral(&json!({"type": 1, "bubbleId": "b1", "text": "fix it"})).unwrap();
        assert_eq!(
            (&u.role, u.plain_text()),
            (&Role::User, "fix it".to_string())
        );
        let legacy = to_neutral(&json!({"type": "ai", "text": "done"})).unwrap();
        assert_eq!(legacy.role, Role::Assistant);
        let call = to_neutral(&json!({"type": 2, "bubbleId": "b2", "text": "",
            "thinking": {"text": "look first"},
            "toolFormerData": {"tool": 15, "toolCallId": "toolu_1", "name": "run_terminal_cmd",
                "rawArgs": "{\"command\":\"ls\"}", "result": "{\"output\":\"a.txt\"}", "status": "completed"}}))
        .unwrap();
        assert!(matches!(&call.parts[0], Part::Reasoning { text, .. } if text == "look first"));
        assert_eq!(
            call.parts[1],
            Part::ToolCall {
                id: "toolu_1".into(),
                name: "run_terminal_cmd".into(),
                input: json!({"command": "ls"})
            }
        );
        let r = to_neutral(&json!({"cursor_tool_result": {"bubbleId": "b2", "toolFormerData":
            {"toolCallId": "toolu_1", "name": "run_terminal_cmd", "result": "{\"output\":\"a.txt\"}", "status": "completed"}}}))
        .unwrap();
        assert!(
            matches!(&r.parts[0], Part::ToolResult { call_id, content, is_error: false, .. }
            if call_id == "toolu_1" && content == &vec![Part::Text { text: "a.txt".into() }])
        );
        assert!(to_neutral(&json!({"type": 2, "text": ""})).is_none());
        let code = to_neutral(&json!({"type": 2, "text": "", "codeBlocks": [{"content": "x = 1", "languageId": "python"}]})).unwrap();
        assert_eq!(code.plain_text(), "```python\nx = 1\n```");
    }
}
