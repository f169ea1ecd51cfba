//! OpenCode's `conversation.json` messages as neutral messages: `{info, parts}` (V1 and
//! the JSON files) and OpenCode 2's `session_message` rows (best effort).
//!
//! An assistant message keeps each tool part as a call and its result together, as
//! OpenCode stores them; bookkeeping parts (`step-start`, `step-finish`, `snapshot`,
//! `patch`, `retry`, `agent`) are not something a model or a person reads and are
//! left out. A compaction's user message is what OpenCode sends in its place ("What
//! did we do so far?"), its summary (`summary: true`) is flagged `summary`, and a user
//! message made only of synthetic text is flagged `injected`.

use crate::neutral::{Message, ModelRef, Part, Role, Vendor};
use crate::sources::convert::{image_from_url, role_of, str_field, text_of};
use serde_json::Value;

/// What OpenCode sends for a compaction part (`toModelMessages`).
const COMPACTION_PROMPT: &str = "What did we do so far?";

/// One message of OpenCode's `conversation.json` (`None`: not a message object).
pub fn to_neutral(v: &Value) -> Option<Message> {
    match (v.get("info"), v.get("parts")) {
        (Some(info), Some(Value::Array(parts))) => Some(from_v1(info, parts)),
        _ if v.get("type").is_some() && v.get("id").is_some() => Some(from_v2(v)),
        _ => None,
    }
}

fn vendor_of(provider: Option<&str>) -> Vendor {
    match provider.unwrap_or("") {
        p if p.contains("anthropic") => Vendor::Anthropic,
        p if p.contains("openai") => Vendor::OpenAi,
        p if p.contains("google") || p.contains("gemini") => Vendor::Google,
        _ => Vendor::Other,
    }
}

fn timestamp(info: &Value) -> Option<String> {
    let ms = info.get("time")?.get("created")?.as_f64()?;
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64)?;
    Some(crate::store::naming::timestamp(t))
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(_) => true,
    }
}

fn from_v1(info: &Value, parts: &[Value]) -> Message {
    let role = str_field(info, "role").unwrap_or("user");
    let provider = str_field(info, "providerID");
    let vendor = vendor_of(provider);
    let mut out = Vec::new();
    let mut texts = 0;
    let mut synthetic = 0;
    for p in parts {
        let s = |k: &str| p.get(k).map(text_of).unwrap_or_default();
        match str_field(p, "type").unwrap_or("") {
            "text" => {
                texts += 1;
                if truthy(p.get("synthetic")) {
                    synthetic += 1;
                }
                if !truthy(p.get("ignored")) {
                    out.push(Part::Text { text: s("text") });
                }
            }
            "reasoning" => out.push(Part::Reasoning {
                vendor,
                text: s("text"),
                opaque: p.get("metadata").filter(|m| !m.is_null()).cloned(),
            }),
            "file" => {
                let mime = s("mime");
                let url = s("url");
                if mime.starts_with("image/") {
                    out.push(match image_from_url(&url) {
                        Part::Image { data, url, .. } => Part::Image { mime, data, url },
                        other => other,
                    });
                } else {
                    out.push(Part::Other {
                        what: format!("file {mime}"),
                        text: p
                            .get("filename")
                            .map(text_of)
                            .filter(|f| !f.is_empty())
                            .unwrap_or(url),
                    });
                }
            }
            "tool" => {
                let state = p.get("state").cloned().unwrap_or(Value::Null);
                let call_id = s("callID");
                let name = s("tool");
                out.push(Part::ToolCall {
                    id: call_id.clone(),
                    name: name.clone(),
                    input: state.get("input").cloned().unwrap_or(Value::Null),
                });
                let status = str_field(&state, "status").unwrap_or("");
                let result = match status {
                    "completed" => Some((state.get("output").map(text_of), false)),
                    "error" => Some((state.get("error").map(text_of), true)),
                    // Pending or running: OpenCode sends an interrupted error.
                    _ => Some((Some("[Tool execution was interrupted]".into()), true)),
                };
                if let Some((text, is_error)) = result {
                    out.push(Part::ToolResult {
                        call_id,
                        name: Some(name),
                        content: vec![Part::Text {
                            text: text.unwrap_or_default(),
                        }],
                        is_error,
                    });
                }
            }
            "compaction" => out.push(Part::Text {
                text: COMPACTION_PROMPT.into(),
            }),
            "subtask" => out.push(Part::Other {
                what: "subtask".into(),
                text: [s("description"), s("prompt")]
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
            }),
            _ => {}
        }
    }
    let mut m = Message::new(role_of(role), out);
    m.timestamp = timestamp(info);
    m.entry = str_field(info, "id").map(str::to_string);
    if role == "assistant" {
        m.summary = truthy(info.get("summary"));
        m.model = str_field(info, "modelID").map(|model| ModelRef {
            provider: provider.map(str::to_string),
            api: None,
            model: model.to_string(),
        });
    } else if texts > 0 && synthetic == texts {
        m.injected = true;
    }
    m
}

/// OpenCode 2 (`session_message` rows, `{...data, id, type}`): best effort.
fn from_v2(v: &Value) -> Message {
    let kind = str_field(v, "type").unwrap_or("");
    let role = match kind {
        "user" | "synthetic" | "shell" => Role::User,
        "assistant" | "compaction" => Role::Assistant,
        "system" => Role::System,
        other => Role::Other(other.to_string()),
    };
    let mut parts = Vec::new();
    if let Some(t) = str_field(v, "text").or_else(|| str_field(v, "summary")) {
        parts.push(Part::Text { text: t.into() });
    }
    if let Some(Value::Array(items)) = v.get("content") {
        for item in items {
            let s = |k: &str| item.get(k).map(text_of).unwrap_or_default();
            match str_field(item, "type").unwrap_or("") {
                "text" => parts.push(Part::Text { text: s("text") }),
                "reasoning" => parts.push(Part::Reasoning {
                    vendor: Vendor::Other,
                    text: s("text"),
                    opaque: None,
                }),
                "tool" => {
                    let state = item.get("state").cloned().unwrap_or(Value::Null);
                    parts.push(Part::ToolCall {
                        id: s("id"),
                        name: s("name"),
                        input: state.get("input").cloned().unwrap_or(Value::Null),
                    });
                    let (out, err) = match (state.get("result"), state.get("error")) {
                        (_, Some(e)) if !e.is_null() => (text_of(e), true),
                        (Some(r), _) => (text_of(r), false),
                        _ => (state.get("content").map(text_of).unwrap_or_default(), false),
                    };
                    parts.push(Part::ToolResult {
                        call_id: s("id"),
                        name: Some(s("name")),
                        content: vec![Part::Text { text: out }],
                        is_error: err,
                    });
                }
                _ => {}
            }
        }
    }
    let mut m = Message::new(role, parts);
    m.entry = str_field(v, "id").map(str::to_string);
    m.timestamp = timestamp(v);
    m.summary = kind == "compaction";
    m.injected = kind == "synthetic" || kind == "system";
    m
}
