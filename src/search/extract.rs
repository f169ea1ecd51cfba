//! What of a neutral message is indexed: its readable text, with very long tool
//! inputs and outputs cut, and what a hit needs to show it.

use crate::neutral::{Message, Part};
use serde::{Deserialize, Serialize};

/// A tool call's input or a tool result longer than this (bytes) is indexed by its
/// first `TOOL_HEAD` and last `TOOL_TAIL` bytes: build logs and test runs put what
/// matters at both ends, and whole outputs would make the index as big as the history.
pub const TOOL_MAX: usize = 32 * 1024;
pub const TOOL_HEAD: usize = 24 * 1024;
pub const TOOL_TAIL: usize = 8 * 1024;
/// Any message's indexed text is cut here (a pasted file of megabytes).
pub const MESSAGE_MAX: usize = 256 * 1024;

/// `s` cut to at most `max` bytes on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The last at most `max` bytes of `s`, on a character boundary.
fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Appends `s` on a line of its own, cut to its head and tail if it is long.
fn push_tool(out: &mut String, s: &str) {
    if s.is_empty() {
        return;
    }
    line(out, "");
    if s.len() <= TOOL_MAX {
        out.push_str(s);
    } else {
        out.push_str(cut(s, TOOL_HEAD));
        out.push_str(" … ");
        out.push_str(tail(s, TOOL_TAIL));
    }
}

fn line(out: &mut String, s: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(s);
}

/// A tool call's input as words: its string values (and numbers), not its keys,
/// which repeat on every call and match nothing anyone looks for.
fn input_text(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    if out.len() > TOOL_MAX * 2 {
        return;
    }
    match v {
        Value::String(s) => {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(cut(s, TOOL_MAX * 2));
        }
        Value::Number(n) => {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&n.to_string());
        }
        Value::Array(a) => a.iter().for_each(|x| input_text(x, out)),
        Value::Object(o) => o.values().for_each(|x| input_text(x, out)),
        Value::Null | Value::Bool(_) => {}
    }
}

fn push_part(out: &mut String, p: &Part) {
    match p {
        Part::Text { text } => {
            if !text.is_empty() {
                line(out, text);
            }
        }
        Part::Image { .. } => {}
        Part::ToolCall { name, input, .. } => {
            line(out, name);
            let mut words = String::new();
            input_text(input, &mut words);
            push_tool(out, &words);
        }
        Part::ToolResult { name, content, .. } => {
            if let Some(n) = name {
                line(out, n);
            }
            let mut text = String::new();
            for c in content {
                if let Part::Text { text: t } = c {
                    line(&mut text, t);
                }
                if text.len() > MESSAGE_MAX {
                    break;
                }
            }
            push_tool(out, &text);
        }
        // Readable reasoning only; the opaque (signed, encrypted) form is not text.
        Part::Reasoning { text, .. } => {
            if !text.is_empty() {
                line(out, text);
            }
        }
        Part::Other { text, .. } => push_tool(out, text),
    }
}

/// The text indexed for `m`: text parts whole, tool names, inputs and outputs (cut
/// when long), readable reasoning; no images, no opaque reasoning.
pub fn message_text(m: &Message) -> String {
    let mut out = String::new();
    for p in &m.parts {
        push_part(&mut out, p);
        if out.len() > MESSAGE_MAX {
            break;
        }
    }
    if out.len() > MESSAGE_MAX {
        let n = cut(&out, MESSAGE_MAX).len();
        out.truncate(n);
    }
    out
}

/// What a hit shows of its message (stored with it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageInfo {
    /// `user`, `assistant`, `tool`, `system`, another role's name, or `title` for a
    /// session's title.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub in_conversation: bool,
}

impl MessageInfo {
    pub fn of(m: &Message) -> MessageInfo {
        MessageInfo {
            role: m.role.name().to_string(),
            entry: m.entry.clone(),
            timestamp: m.timestamp.clone(),
            in_conversation: m.in_conversation,
        }
    }
}

/// What identifies a message for incremental indexing: a session whose first `n`
/// messages keep their identities only gained messages.
pub fn identity(m: &Message, h: u64) -> u64 {
    let mut parts: Vec<&[u8]> = vec![
        m.role.name().as_bytes(),
        m.entry.as_deref().unwrap_or("").as_bytes(),
        m.timestamp.as_deref().unwrap_or("").as_bytes(),
        if m.in_conversation { b"1" } else { b"0" },
        if m.summary { b"s" } else { b"-" },
    ];
    let len = (m.parts.len() as u64).to_le_bytes();
    let first = match m.parts.first() {
        Some(Part::Text { text }) => cut(text, 64).as_bytes(),
        _ => b"",
    };
    parts.push(&len);
    parts.push(first);
    let seed = h.to_le_bytes();
    parts.push(&seed);
    crate::store::atomic::checksum(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutral::{Role, Vendor};

    #[test]
    fn text_tools_and_reasoning_are_indexed_not_images_or_opaque_forms() {
        let m = Message::new(
            Role::Assistant,
            vec![
                Part::Text {
                    text: "Running the tests".into(),
                },
                Part::Image {
                    mime: "image/png".into(),
                    data: Some("iVBORw0KGgoAAAANSUhEUg".into()),
                    url: None,
                },
                Part::ToolCall {
                    id: "c1".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": "cargo test", "timeout": 120}),
                },
                Part::Reasoning {
                    vendor: Vendor::Anthropic,
                    text: "think about it".into(),
                    opaque: Some(serde_json::json!({"signature": "SIGNEDBLOB"})),
                },
            ],
        );
        let t = message_text(&m);
        assert!(t.contains("Running the tests"));
        assert!(t.contains("Bash"));
        assert!(t.contains("cargo test 120"));
        assert!(!t.contains("command"), "keys are not indexed: {t}");
        assert!(t.contains("think about it"));
        assert!(!t.contains("iVBOR") && !t.contains("SIGNEDBLOB"), "{t}");
    }

    #[test]
    fn long_tool_outputs_keep_head_and_tail() {
        let out = format!("HEADWORD {} TAILWORD", "x ".repeat(20_000));
        let m = Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "c1".into(),
                name: None,
                content: vec![Part::Text { text: out }],
                is_error: false,
            }],
        );
        let t = message_text(&m);
        assert!(t.len() <= TOOL_MAX + 16, "{}", t.len());
        assert!(t.contains("HEADWORD") && t.contains("TAILWORD"));
    }

    #[test]
    fn cuts_respect_characters() {
        let s = "é".repeat(10);
        assert_eq!(cut(&s, 3), "é");
        assert_eq!(tail(&s, 3), "é");
    }
}
